"""Hash-Hop for MixPR with the defaults (no preset, no flags), k=100, at 0.1M to 100M tokens.

Usage::

    python benchmarks/bench_mixpr_hashhop.py [--sizes 0.1,1,10,100] [--chains 100] [--k 100]
        [--seed 0] [--set solver=power ...]

Generator (after magic.dev's Hash-Hop, https://github.com/magicproduct/hash-hop, written here from
its description): random 16-character hashes (letters and digits); chains of 6 links
``h0 -> h1 -> ... -> h6``; each link is one line ``'<h_i>' = '<h_i+1>'``; the lines of all chains
are shuffled together (seeded) and written as documents of 10,000 lines. Enough chains are made
to reach the token budget: tokens are SmolLM2's (:func:`longctx.tokens.count_tokens`) counted on
a sample of 2,000 lines and scaled to the number of lines (the lines are all alike, so the
estimate is within a fraction of a percent). The query names a chain's first hash
(``"'<h0>' = ?"``); hop ``i`` (1..6) counts as found when the unit holding link ``i`` is among
the ``k`` units returned. ``--chains`` chains (evenly spread over all of them) are queried.

Each size runs in its own process: peak RSS (``ru_maxrss``) is the build plus the queries. Query
time is the median over the queried chains after one warm-up query.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

HOPS = 6
ALPHABET = np.frombuffer(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", np.uint8
)
LINES_PER_DOC = 10_000
TARGETS = {"found": 0.95, "query_ms": {10.0: 50.0, 100.0: 500.0}, "build_s_100M": 600.0}


def _hashes(rng, n: int) -> np.ndarray:
    """``n`` distinct random 16-character hashes, ``(n,) <U16``."""
    raw = ALPHABET[rng.integers(0, len(ALPHABET), size=(n, 16))]
    h = raw.view("S16").ravel().astype("U16")
    if len(np.unique(h)) != n:  # 62^16: a collision is (practically) impossible
        raise RuntimeError("hash collision; use another seed")
    return h


def tokens_per_line(rng) -> float:
    from longctx.tokens import count_tokens

    h = _hashes(rng, 4000)
    sample = "".join(f"'{a}' = '{b}'\n" for a, b in zip(h[:2000], h[2000:]))
    return count_tokens(sample) / 2000


def make_hashhop(n_tokens: float, seed: int = 0):
    """``(texts, chains (n_chains, 7) <U16, line_doc (n_chains, 6), line_start (n_chains, 6),
    tokens)``: the documents, the chains' hashes, and where each link's line is (document,
    character offset)."""
    rng = np.random.default_rng(seed)
    tpl = tokens_per_line(np.random.default_rng(seed + 1))
    n_chains = max(1, int(round(n_tokens / tpl / HOPS)))
    h = _hashes(rng, n_chains * (HOPS + 1)).reshape(n_chains, HOPS + 1)
    n_lines = n_chains * HOPS
    order = rng.permutation(n_lines)  # position of line (chain c, link i) = order[c * 6 + i]
    lines = np.empty(n_lines, dtype=object)
    left = h[:, :-1].ravel()
    right = h[:, 1:].ravel()
    lines[order] = [f"'{a}' = '{b}'\n" for a, b in zip(left.tolist(), right.tolist())]
    line_len = 16 + 16 + 8  # every line has the same length
    pos = order.reshape(n_chains, HOPS)
    line_doc = pos // LINES_PER_DOC
    line_start = (pos % LINES_PER_DOC) * line_len
    texts = [
        "".join(lines[i : i + LINES_PER_DOC].tolist()) for i in range(0, n_lines, LINES_PER_DOC)
    ]
    return texts, h, line_doc, line_start, tpl * n_lines


def run_size(size_m: float, n_queries: int, k: int, seed: int, overrides: dict) -> dict:
    from longctx.mixpr import MixPRIndex

    t0 = time.perf_counter()
    texts, h, line_doc, line_start, tokens = make_hashhop(size_m * 1e6, seed)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    index = MixPRIndex.from_texts(texts, **overrides)
    build_s = time.perf_counter() - t0
    del texts
    st = index._state
    src, starts = np.asarray(st.unit_source), np.asarray(st.starts)
    n_chains = len(h)
    picks = np.linspace(0, n_chains - 1, min(n_queries, n_chains)).astype(int)
    found = np.zeros((len(picks), HOPS))
    times, steps, resid = [], [], []
    index.search(f"'{h[picks[0], 0]}' = ?", k=k)  # warm-up
    for qi, c in enumerate(picks.tolist()):
        q = f"'{h[c, 0]}' = ?"
        t = time.perf_counter()
        res = index.search(q, k=k)
        times.append(time.perf_counter() - t)
        for tr in res.trace:
            steps.append(tr.get("steps", 0))
            resid.append(tr.get("residual", 0.0))
        got = {(hit.source, hit.start) for hit in res.hits}
        for i in range(HOPS):
            d, a = int(line_doc[c, i]), int(line_start[c, i])
            # the unit holding the link: the last unit of document d starting at or before a.
            # The keys in the arrays' own dtype: a Python int against an int32 array made numpy
            # copy the whole array (0.7 ms at 100M tokens), which emptied the CPU caches before
            # the next timed query (1.6-1.8 ms measured at 100M tokens instead of 0.9)
            lo = np.searchsorted(src, src.dtype.type(d), side="left")
            hi = np.searchsorted(src, src.dtype.type(d), side="right")
            u = lo + np.searchsorted(starts[lo:hi], starts.dtype.type(a), side="right") - 1
            found[qi, i] = (d, int(starts[u])) in got
    return {
        "size_m": size_m,
        "tokens": tokens,
        "units": index.n_units,
        "chains": int(n_chains),
        "queried": len(picks),
        "found": found.mean(axis=0).tolist(),
        "gen_s": gen_s,
        "build_s": build_s,
        "query_ms": 1000 * statistics.median(times),
        "query_p90_ms": 1000 * float(np.percentile(times, 90)),
        "steps": statistics.median(steps) if steps else None,
        "residual_max": max(resid) if resid else None,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def _parse_set(items) -> dict:
    out = {}
    for item in items or []:
        key, _, val = item.partition("=")
        try:
            out[key] = json.loads(val)
        except json.JSONDecodeError:
            out[key] = val
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="0.1,1,10", help="millions of tokens, comma-separated")
    ap.add_argument("--chains", type=int, default=100, help="chains queried per size")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", help="a MixPR setting, name=json value")
    ap.add_argument("--one", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--json", help="write the rows to this file")
    args = ap.parse_args(argv)
    overrides = _parse_set(args.set)
    if args.one is not None:
        print(json.dumps(run_size(args.one, args.chains, args.k, args.seed, overrides)))
        return
    rows = []
    for size in [float(s) for s in args.sizes.split(",")]:
        cmd = [sys.executable, __file__, "--one", str(size), "--chains", str(args.chains)]
        cmd += ["--k", str(args.k), "--seed", str(args.seed)]
        for item in args.set or []:
            cmd += ["--set", item]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-3000:], file=sys.stderr)
            rows.append({"size_m": size, "error": out.stderr.strip().splitlines()[-1:]})
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"# {size}M tokens: {row['units']:,} units, build {row['build_s']:.1f} s, "
            f"query {row['query_ms']:.1f} ms, {row['peak_rss_gb']:.2f} GB",
            file=sys.stderr,
            flush=True,
        )
    ok = [r for r in rows if "error" not in r]
    print("\n| hop | " + " | ".join(f"{r['size_m']:g}M tokens" for r in ok) + " |")
    print("|---|" + "---|" * len(ok))
    for i in range(HOPS):
        print(f"| {i + 1} | " + " | ".join(f"{r['found'][i]:.2f}" for r in ok) + " |")
    for name, key, fmt in [
        ("tokens (SmolLM2, estimated)", "tokens", "{:,.0f}"),
        ("units", "units", "{:,}"),
        ("build s", "build_s", "{:.1f}"),
        ("query ms (median)", "query_ms", "{:.1f}"),
        ("query ms (p90)", "query_p90_ms", "{:.1f}"),
        ("walk steps (median)", "steps", "{}"),
        ("residual (max)", "residual_max", "{:.1e}"),
        ("peak RSS GB", "peak_rss_gb", "{:.2f}"),
    ]:
        print(f"| {name} | " + " | ".join(fmt.format(r[key]) for r in ok) + " |")
    for r in rows:
        if "error" in r:
            print(f"{r['size_m']}M tokens: failed: {r['error']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
