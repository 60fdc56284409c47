"""What a built MixPR index holds (issue 46, held memory): every numpy array reachable from the
index once it is built and queried (name, dtype, shape, MB; an array sharing another's memory
counted once, under the first name found), the Python containers beside them (vocabulary,
ids), and the heap the queries leave behind (glibc's ``mallinfo2``: in use and free).

Usage::

    python benchmarks/studies/mixpr_held_arrays.py [--data ../shared/data] [--words 10]
        [--questions 10] [--k 10] [--trim]

The corpus and the questions are ``bench_vs_bm25.py``'s (the growth table's books, cut at the
word budget; its first ``--questions`` questions, k = 10, one warm-up query). Resident memory
is read above the base taken once the texts are read, as ``bench_vs_bm25.py``'s *held*.
``--trim`` also calls ``malloc_trim`` after the queries and reports the resident memory then.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_vs_bm25 import rss_bytes  # noqa: E402


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost",
        )
    ]  # fmt: skip


def heap() -> dict:
    """glibc's heap now (MB): ``arena`` (main heap from ``sbrk``), ``mmap`` (blocks mapped
    apart), ``in_use`` and ``free`` (kept by the allocator, not returned)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        f = libc.mallinfo2
    except (OSError, AttributeError):
        return {}
    f.restype = _Mallinfo2
    m = f()
    return {
        "arena": m.arena / 1e6,
        "mmap": m.hblkhd / 1e6,
        "in_use": m.uordblks / 1e6,
        "free": m.fordblks / 1e6,
    }


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def arrays_of(obj, name: str = "index") -> tuple[list, list]:
    """``(arrays, containers)``: ``(name, dtype, shape, bytes, shared_with)`` of every numpy
    array reachable from ``obj`` through attributes, dicts, lists, tuples and sparse arrays,
    and ``(name, kind, length, bytes)`` of the dicts and lists met (their keys and values' own
    sizes included, for the ones of strings and numbers)."""
    seen_obj: set[int] = set()
    seen_mem: dict[tuple, str] = {}
    arrays, containers = [], []
    stack = [(name, obj)]
    while stack:
        path, o = stack.pop()
        if id(o) in seen_obj or o is None or isinstance(o, (str, bytes, int, float, bool)):
            continue
        seen_obj.add(id(o))
        if isinstance(o, np.ndarray):
            r = _root(o)
            key = (r.__array_interface__["data"][0], r.nbytes)
            shared = seen_mem.get(key)
            if shared is None:
                seen_mem[key] = path
            mapped = isinstance(r, np.memmap) or not r.flags.owndata and r.base is not None
            arrays.append((path, str(o.dtype), o.shape, 0 if shared else r.nbytes, shared, mapped))
            continue
        if isinstance(o, sp.sparray | sp.spmatrix):
            for part in ("data", "indices", "indptr", "row", "col", "offsets"):
                v = getattr(o, part, None)
                if isinstance(v, np.ndarray):
                    stack.append((f"{path}.{part}", v))
            continue
        if isinstance(o, dict):
            size = sys.getsizeof(o)
            if len(o) > 1000:
                sample = list(o.items())[:1000]
                per = sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in sample) / len(sample)
                containers.append((path, "dict", len(o), size + per * len(o)))
                continue
            for k, v in o.items():
                stack.append((f"{path}[{k!r}]", v))
            continue
        if isinstance(o, (list, tuple)):
            if len(o) > 1000:
                containers.append((path, type(o).__name__, len(o), sys.getsizeof(o)))
                if all(isinstance(x, str) for x in o[:10]):
                    continue  # texts or terms: counted by their container only
            for i, v in enumerate(o[:1000] if len(o) > 1000 else o):
                stack.append((f"{path}[{i}]", v))
            continue
        if (
            isinstance(o, (type, type(sys), type(len)))
            or callable(o)
            and not hasattr(o, "__dict__")
        ):
            continue
        d = getattr(o, "__dict__", None)
        if d is None and hasattr(o, "__slots__"):
            d = {s: getattr(o, s, None) for s in o.__slots__}
        if isinstance(d, dict):
            for k, v in d.items():
                if k in ("texts", "lock", "_lock") or k.startswith("__"):
                    continue
                stack.append((f"{path}.{k}", v))
    return arrays, containers


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--words", type=float, default=10.0)
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--trim", action="store_true")
    args = ap.parse_args(argv)

    from bench_mixpr_growth import QUESTIONS, corpus

    from longctx.mixpr import MixPRIndex

    docs = corpus(args.data, int(args.words * 1e6))
    gc.collect()
    base = rss_bytes()
    h0 = heap()
    t0 = time.perf_counter()
    index = MixPRIndex.from_texts([t for _, t in docs], ids=[i for i, _ in docs])
    build_s = time.perf_counter() - t0
    gc.collect()
    built = rss_bytes() - base
    h1 = heap()
    qs = QUESTIONS[: args.questions]
    index.search(qs[0], k=args.k)
    after_first = rss_bytes() - base
    h2 = heap()
    for q in qs:
        index.search(q, k=args.k)
    gc.collect()
    held = rss_bytes() - base
    h3 = heap()
    print(f"# {args.words:g}M words, {index.n_units:,} units, build {build_s:.2f} s")
    print(f"# resident over base: built {built / 1e6:.0f} MB, after the warm-up query "
          f"{after_first / 1e6:.0f} MB, after {len(qs)} more {held / 1e6:.0f} MB (held)")  # fmt: skip
    for label, h in (("before build", h0), ("built", h1), ("warm-up", h2), ("held", h3)):
        if h:
            print(f"# heap {label}: " + ", ".join(f"{k} {v:.0f} MB" for k, v in h.items()))
    if args.trim:
        t0 = time.perf_counter()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        trim_ms = 1000 * (time.perf_counter() - t0)
        print(f"# after malloc_trim ({trim_ms:.1f} ms): {(rss_bytes() - base) / 1e6:.0f} MB")

    arrays, containers = arrays_of(index)
    arrays.sort(key=lambda r: -r[3])
    print("\n| array | dtype | shape | MB |\n|---|---|---|---|")
    total = 0
    for path, dt, shape, nbytes, shared, mapped in arrays:
        if nbytes < 1e5 and shared is None:
            continue
        total += nbytes
        note = f" (= {shared})" if shared else (" (mapped)" if mapped else "")
        print(f"| `{path}` | {dt} | {shape} | {nbytes / 1e6:.1f}{note} |")
    small = sum(r[3] for r in arrays if r[3] < 1e5)
    print(f"| (smaller arrays) | | | {small / 1e6:.1f} |")
    print(f"| **arrays, total** | | | **{(total + small) / 1e6:.1f}** |")
    print("\n| container | kind | length | MB (estimated) |\n|---|---|---|---|")
    for path, kind, n, nbytes in sorted(containers, key=lambda r: -r[3]):
        print(f"| `{path}` | {kind} | {n:,} | {nbytes / 1e6:.1f} |")


if __name__ == "__main__":
    main()
