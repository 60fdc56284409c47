"""Hash-Hop on a sharded MixPR corpus searched by a Ray cluster: the corpus as shards placed on
the cluster's nodes (one actor per shard), the walk across shards, every hop of 1-6 at k=100.

The generator and the scoring of ``benchmarks/bench_mixpr_hashhop.py`` (magic.dev's Hash-Hop:
chains of 6 links ``'<h_i>' = '<h_i+1>'``, lines shuffled, documents of 10,000 lines; a hop
found when the unit holding its link is among the ``k`` returned).

A cluster of several nodes on one machine, each with its own object store (the commands a user
with real machines runs, one ``ray start`` per machine)::

    ray start --head --port 6390 --num-cpus 1 --object-store-memory 1000000000
    ray start --address 127.0.0.1:6390 --num-cpus 1 --object-store-memory 1000000000
    python benchmarks/bench_mixpr_hashhop_ray.py --tokens 10 --shards 4 --address 127.0.0.1:6390
    ray stop        # on each machine (here: stop the nodes you started)

On real machines the head's address replaces ``127.0.0.1`` and ``--out`` must be a location
every node reads (a shared folder or an fsspec URL such as ``s3://bucket/hashhop``). The build
runs one Ray task per shard (``build_indexes(..., shards=N, ray_address=...)``), each saving its
shard; the search loads one actor per shard (``ShardedMixPRIndex.load(..., ray_address=...)``),
Ray spreading them over the nodes; a query's walk gathers the shards' term vectors at the
driver each step.

Prints one JSON row: tokens, shards, build seconds, the share of chains whose hop ``i`` was
found (i = 1..6), the median and 90th-percentile query times, each shard actor's process and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_mixpr_hashhop import HOPS, make_hashhop  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=float, default=10.0, help="millions of tokens")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--workers", type=int, default=None, help="concurrent build tasks")
    ap.add_argument("--address", default="auto", help="the Ray cluster (ray start's address)")
    ap.add_argument("--chains", type=int, default=100, help="chains queried")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="where the corpus is built (default: a temp dir)")
    args = ap.parse_args(argv)

    from longctx.corpus import build_indexes
    from longctx.corpus.shards.index import ShardedMixPRIndex

    out = Path(args.out or tempfile.mkdtemp(prefix="hashhop-ray-"))
    t0 = time.perf_counter()
    texts, h, line_doc, line_start, tokens = make_hashhop(args.tokens * 1e6, args.seed)
    gen_s = time.perf_counter() - t0
    docs = [(f"doc{i:06d}", t) for i, t in enumerate(texts)]
    del texts
    t0 = time.perf_counter()
    build_indexes(
        docs, "mixpr", out, shards=args.shards, workers=args.workers,
        ray_address=args.address, progress=False,
    )  # fmt: skip
    build_s = time.perf_counter() - t0
    lengths = {d: len(t) for d, t in docs}
    del docs
    t0 = time.perf_counter()
    index = ShardedMixPRIndex.load(out / "indexes", ray_address=args.address)
    open_s = time.perf_counter() - t0
    try:
        picks = np.linspace(0, len(h) - 1, min(args.chains, len(h))).astype(int)
        found = np.zeros((len(picks), HOPS))
        index.search(f"'{h[picks[0], 0]}' = ?", k=args.k)  # warm-up
        times = []
        for qi, c in enumerate(picks.tolist()):
            t = time.perf_counter()
            res = index.search(f"'{h[c, 0]}' = ?", k=args.k)
            times.append(time.perf_counter() - t)
            # a hit covers link i when it is a span of the link's document around its line
            spans = [(index.doc_ids[hit.source], hit.start, hit.end) for hit in res.hits]
            for i in range(HOPS):
                d, a = f"doc{int(line_doc[c, i]):06d}", int(line_start[c, i])
                found[qi, i] = any(s == d and x <= a < y for s, x, y in spans)
        row = {
            "tokens": tokens,
            "shards": args.shards,
            "documents": len(lengths),
            "gen_s": round(gen_s, 1),
            "build_s": round(build_s, 1),
            "open_s": round(open_s, 1),
            "found_by_hop": [round(float(x), 3) for x in found.mean(axis=0)],
            "query_ms": round(1000 * statistics.median(times), 1),
            "query_p90_ms": round(1000 * float(np.percentile(times, 90)), 1),
            "actors": _actors(index),
        }
    finally:
        index.close()
    print(json.dumps(row))


def _actors(index) -> dict:
    """Each shard actor's process and, where it runs on this machine, its peak RSS (MB)."""
    pids = getattr(index._backend, "pids", None)
    out = {}
    for k, pid in (pids() if pids is not None else {}).items():
        peak = None
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = round(int(line.split()[1]) / 1024)
        except OSError:  # on another machine
            pass
        out[str(k)] = {"pid": pid, "peak_rss_mb": peak}
    return out


if __name__ == "__main__":
    main()
