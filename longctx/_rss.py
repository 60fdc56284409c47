"""The peak resident memory of this process (corpus builds report it per worker)."""

from __future__ import annotations

import sys

__all__ = ["peak_rss_mib"]


def peak_rss_mib() -> float:
    """Peak resident memory of this process in MiB (``ru_maxrss``; 0 where unavailable)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return 0.0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024
