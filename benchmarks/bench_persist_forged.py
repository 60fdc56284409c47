"""Cost of refusing crafted files and of counting tokens on a long text (issue 35).

Each case runs in its own process (peak RSS is per process): a MixPR index whose ``terms.npz``
is a 1.3 KB CSC matrix claiming 400M rows, and ``count_tokens`` on 20 MB of ``"a "``.

Run: ``python benchmarks/bench_persist_forged.py`` (with ``PYTHONPATH`` at the checkout).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 4 * 10**8


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def forged_terms() -> str:
    import numpy as np

    from longctx.mixpr import MixPRIndex
    from tests._persist_helpers import mixpr_index, restamp

    d = Path(tempfile.mkdtemp()) / "idx"
    mixpr_index().save(d)
    v = len(json.loads((d / "vocabulary.json").read_text()))
    np.savez(
        d / "terms.npz", format=np.array(b"csc"), shape=np.array([ROWS, v]), data=np.zeros(0),
        indices=np.zeros(0, np.int32), indptr=np.zeros(v + 1, np.int32),
    )  # fmt: skip
    restamp(d)
    size = (d / "terms.npz").stat().st_size
    r0, t0 = _rss_mb(), time.perf_counter()
    try:
        MixPRIndex.load(d)
        what = "loaded"
    except Exception as exc:  # noqa: BLE001 - reported
        what = type(exc).__name__
    dt = time.perf_counter() - t0
    return (
        f"terms.npz CSC {size} B, {ROWS} rows: {dt * 1e3:.1f} ms, +{_rss_mb() - r0:.0f} MB, {what}"
    )


def long_count() -> str:
    from longctx.tokens import count_tokens

    count_tokens("a b")
    text = "a " * 10_000_000
    r0, t0 = _rss_mb(), time.perf_counter()
    n = count_tokens(text)
    dt = time.perf_counter() - t0
    return f"count_tokens 20 MB of 'a ': {n} tokens, {dt:.2f} s, +{_rss_mb() - r0:.0f} MB"


CASES = {"forged_terms": forged_terms, "long_count": long_count}

if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(CASES[sys.argv[1]]())
    else:
        for name in CASES:
            subprocess.run([sys.executable, __file__, name], check=True)
