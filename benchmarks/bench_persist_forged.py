"""Cost of refusing crafted files and of counting tokens on a long text (issue 35).

Each case runs in its own process (peak RSS is per process): a MixPR index of format 2 whose
``terms.npz`` is a 1.3 KB CSC matrix claiming 400M rows; its format-3 twins, whose
``E_indptr.npy`` is a 136-byte file whose header claims 400M entries, read and mapped (issue
46); and ``count_tokens`` on 20 MB of ``"a "``.

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
    mixpr_index().save(d, mappable=False)
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


def _forged_indptr(mmap: bool) -> str:
    import numpy as np

    from longctx.mixpr import MixPRIndex
    from tests._persist_helpers import mixpr_index, restamp

    d = Path(tempfile.mkdtemp()) / "idx"
    mixpr_index().save(d, mappable=True)
    with open(d / "E_indptr.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<i4", "fortran_order": False, "shape": (ROWS,)}
        )
        fh.write(b"\0" * 8)
    restamp(d)
    size = (d / "E_indptr.npy").stat().st_size
    r0, t0 = _rss_mb(), time.perf_counter()
    try:
        MixPRIndex.load(d, mmap=mmap)
        what = "loaded"
    except Exception as exc:  # noqa: BLE001 - reported
        what = type(exc).__name__
    dt = time.perf_counter() - t0
    way = "mapped" if mmap else "read"
    return (
        f"format 3 ({way}) E_indptr.npy {size} B, {ROWS} entries: {dt * 1e3:.1f} ms, "
        f"+{_rss_mb() - r0:.0f} MB, {what}"
    )


def forged_indptr_read() -> str:
    return _forged_indptr(False)


def forged_indptr_mapped() -> str:
    return _forged_indptr(True)


def long_count() -> str:
    from longctx.tokens import count_tokens

    count_tokens("a b")
    text = "a " * 10_000_000
    r0, t0 = _rss_mb(), time.perf_counter()
    n = count_tokens(text)
    dt = time.perf_counter() - t0
    return f"count_tokens 20 MB of 'a ': {n} tokens, {dt:.2f} s, +{_rss_mb() - r0:.0f} MB"


CASES = {
    "forged_terms": forged_terms,
    "forged_indptr_read": forged_indptr_read,
    "forged_indptr_mapped": forged_indptr_mapped,
    "long_count": long_count,
}

if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(CASES[sys.argv[1]]())
    else:
        for name in CASES:
            subprocess.run([sys.executable, __file__, name], check=True)
