"""The peak resident memory of this process (corpus builds report it per worker), and
:func:`give_back_free_memory` (what a build freed, returned to the system)."""

from __future__ import annotations

import logging
import sys

__all__ = ["give_back_free_memory", "peak_rss_mib"]

logger = logging.getLogger(__name__)
_LIBC = []


def peak_rss_mib() -> float:
    """Peak resident memory of this process in MiB (``ru_maxrss``; 0 where unavailable)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0.0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def give_back_free_memory() -> bool:
    """Return the heap memory this process has freed to the system (glibc's ``malloc_trim``).

    After a large build glibc keeps the freed blocks of its temporaries (its ``mmap``
    threshold grows after large frees, so later arrays come from the heap and stay there when
    freed): 10M words of Gutenberg held ~250 MB more than the index's arrays. One call costs
    a few milliseconds. ``False`` where there is no glibc (macOS, Windows, musl): nothing done.
    """
    if not _LIBC:
        lib = None
        if sys.platform.startswith("linux"):
            import ctypes

            try:
                lib = ctypes.CDLL("libc.so.6")
                lib.malloc_trim  # noqa: B018  (glibc only)
            except (OSError, AttributeError):
                lib = None
        _LIBC.append(lib)
    lib = _LIBC[0]
    if lib is None:
        return False
    lib.malloc_trim(0)
    logger.debug("freed heap memory returned to the system (malloc_trim)")
    return True
