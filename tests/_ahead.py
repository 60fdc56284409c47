"""Subprocess checks started ahead of their tests, two at a time.

The README/docs blocks (``tests/test_docs.py``) and the notebooks (``tests/test_notebooks.py``)
each run in an interpreter of their own; most of their time is that interpreter importing torch,
transformers and the frameworks and running a model, one core's work at most. A module fixture
starts every *selected* test's process at the module's first test (``WORKERS`` at a time, in the
tests' order, each in its own folder) and each test waits for its own result and asserts on it
as before: what a check runs, sees and is asserted on is unchanged, only the waiting overlaps.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

#: Processes run at once: two on a two-core machine (the suite's target), one on a single core.
WORKERS = max(1, min(2, os.cpu_count() or 1))


def selected(request: pytest.FixtureRequest, name: str) -> list[pytest.Item]:
    """The session's items (what this run selected, in run order) of test function ``name`` in
    the requesting module's file."""
    path = Path(request.module.__file__).resolve()
    return [
        item
        for item in request.session.items
        if getattr(item, "originalname", None) == name and Path(item.path).resolve() == path
    ]


class Ahead:
    """Jobs started now, ``WORKERS`` at a time in the order given; :meth:`result` waits for one.

    Parameters
    ----------
    jobs : dict of hashable -> callable
        ``{key: job}``; a job takes no argument and returns what its test asserts on.
    """

    def __init__(self, jobs: dict[Hashable, Callable[[], object]]):
        self._pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="ahead")
        self._futures: dict[Hashable, Future] = {k: self._pool.submit(f) for k, f in jobs.items()}

    def result(self, key: Hashable):
        """The value job ``key`` returned (waiting for it); re-raises the job's exception.

        Raises
        ------
        KeyError
            When no job ``key`` was started (the test was not among the selected items).
        """
        return self._futures[key].result()

    def close(self) -> None:
        """Drop the jobs not started yet and wait for the running ones."""
        self._pool.shutdown(wait=True, cancel_futures=True)
