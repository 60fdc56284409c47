"""BLAS thread control for the greedy loops, safe when several selections run at once.

Many small BLAS calls: a multi-threaded BLAS spends more time waking threads than computing (20x
slower on a busy 2-core machine), and the products are memory bound anyway, so a selection runs
with one BLAS thread; the large catch-up products of the lazy greedy get the threads back.

The BLAS thread count is process-wide, so concurrent selections (threads sharing one index) share
one setting: the first selection to start saves the user's count and sets 1, the last one to end
restores it, and the catch-up products ask for more threads only while a single selection runs.
Results never depend on the thread count; only speed does.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

__all__ = ["blas_thread_count", "one_blas_thread", "blas_threads"]

_SMALL = 512  # items below which BLAS threading does not matter (skip threadpoolctl's overhead)
_lock = threading.Lock()
_active = 0  # selections running with one BLAS thread
_saved: int | None = None  # the user's BLAS thread count, restored when the last one ends
_controller = None  # threadpoolctl.ThreadpoolController, made once (scanning libraries is slow)


def _blas():
    """The BLAS libraries' controller (``None`` without threadpoolctl)."""
    global _controller
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
            return None
        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


def blas_thread_count() -> int | None:
    """The BLAS thread count in effect now (``None`` without threadpoolctl or a BLAS it knows)."""
    ctrl = _blas()
    if ctrl is None:  # pragma: no cover
        return None
    counts = [m["num_threads"] for m in ctrl.info()]
    return max(counts) if counts else None


def _set(limit: int | None) -> None:
    ctrl = _blas()
    if limit is None or ctrl is None:
        return
    ctrl.limit(limits=limit)


@contextmanager
def one_blas_thread(n: int):
    """Run a selection over ``n`` items with one BLAS thread (see the module docstring)."""
    global _active, _saved
    if n < _SMALL:
        yield
        return
    with _lock:
        _active += 1
        if _active == 1:
            _saved = blas_thread_count()
            _set(1)
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _set(_saved)


@contextmanager
def blas_threads(limit: int | None):
    """Inside :func:`one_blas_thread`: use ``limit`` threads for large products, when this is the
    only selection running (otherwise keep the current setting)."""
    with _lock:
        raise_ = limit is not None and _active == 1
        if raise_:
            _set(limit)
    try:
        yield
    finally:
        if raise_:
            with _lock:
                if _active >= 1:
                    _set(1)
