"""Hash-Hop on a sharded MixPR corpus searched by a Ray cluster: the corpus as shards placed on
the cluster's nodes (one actor per shard), the walk across shards, every hop of 1-6 at k=100.

The Hash-Hop of ``benchmarks/bench_mixpr_hashhop.py`` (magic.dev's Hash-Hop: chains of 6 links
``'<h_i>' = '<h_i+1>'``, lines shuffled, documents of 10,000 lines; a hop found when the unit
holding its link is among the ``k`` returned), the same texts for the same seed, made here
document by document from byte arrays (:func:`hashhop_docs`: ~0.8 GB for 500M tokens where
``make_hashhop`` holds ~4 GB of Python strings).

A cluster of several nodes on one machine, each with its own object store (the commands a user
with real machines runs, one ``ray start`` per machine; ``docs/notes/mixpr-shards.md`` has the
500M-token run)::

    ray start --head --port 6390 --num-cpus 1 --object-store-memory 500000000
    ray start --address 127.0.0.1:6390 --num-cpus 1 --object-store-memory 500000000
    python benchmarks/bench_mixpr_hashhop_ray.py --tokens 10 --shards 4 --address 127.0.0.1:6390
    ray stop        # on each machine (here: stop the nodes you started)

On real machines the head's address replaces ``127.0.0.1`` and ``--out`` must be a location
every node reads (a shared folder or an fsspec URL such as ``s3://bucket/hashhop``). The build
runs one Ray task per shard (``build_indexes(..., shards=N, ray_address=..., mappable=True)``,
``--workers`` at a time), each saving its shard in format 3; the search loads one actor per
shard (``ShardedMixPRIndex.load(..., ray_address=...)``), Ray spreading them over the nodes,
each mapping its shard's files; a query's walk gathers the shards' term vectors at the driver
each step.

``--node-pids`` (the pids of ``ray start --block`` processes, one a node, on this machine):
their processes' memory (RSS and PSS: shared pages such as the object store counted once) is
sampled every ``--every`` seconds, per node and in total, with the driver's.

Prints one JSON row: tokens, shards, build seconds, the share of chains whose hop ``i`` was
found (i = 1..6), the median, 90th and 95th-percentile query times, each shard actor's process
and peak RSS, and with ``--node-pids`` the memory per phase (build, load, held).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_mixpr_hashhop import (  # noqa: E402
    ALPHABET,
    HOPS,
    LINES_PER_DOC,
    tokens_per_line,
)

LINE = 40  # bytes of a line: quote, 16, "' = '", 16, quote, newline


def hashhop_docs(n_tokens: float, seed: int = 0, texts: bool = True):
    """The texts of ``make_hashhop(n_tokens, seed)`` (equal, document by document), from byte
    arrays (``texts=False``: the chains and where their links are, no text).

    Returns
    -------
    (docs, chains, line_doc, line_start, tokens)
        ``docs``: ``[(id, text)]`` (``"doc000000"``...); ``chains``: ``(n_chains, 7) S16``
        hashes; ``line_doc``, ``line_start``: ``(n_chains, 6) int64`` document and character
        offset of each link's line; ``tokens``: SmolLM2 tokens (estimated, as there).
    """
    rng = np.random.default_rng(seed)
    tpl = tokens_per_line(np.random.default_rng(seed + 1))
    n_chains = max(1, int(round(n_tokens / tpl / HOPS)))
    raw = ALPHABET[rng.integers(0, len(ALPHABET), size=(n_chains * (HOPS + 1), 16))]
    h = raw.view("S16").reshape(n_chains, HOPS + 1)
    del raw
    if len(np.unique(h.ravel())) != h.size:
        raise RuntimeError("hash collision; use another seed")
    n_lines = n_chains * HOPS
    order = rng.permutation(n_lines)  # position of line j = order[j], j = chain * 6 + link
    pos = order.reshape(n_chains, HOPS)
    where = (pos // LINES_PER_DOC, (pos % LINES_PER_DOC) * LINE, tpl * n_lines)
    if not texts:
        return None, h, *where
    at = np.empty(n_lines, np.int64)  # the line at each position
    at[order] = np.arange(n_lines)
    del order, pos
    hb = h.view(np.uint8).reshape(n_chains, HOPS + 1, 16)
    docs = []
    for d, p0 in enumerate(range(0, n_lines, LINES_PER_DOC)):
        j = at[p0 : p0 + LINES_PER_DOC]
        c, i = j // HOPS, j % HOPS
        buf = np.empty((len(j), LINE), np.uint8)
        buf[:, 0] = buf[:, 21] = buf[:, 38] = ord("'")
        buf[:, 17:21] = np.frombuffer(b"' = ", np.uint8)
        buf[:, 1:17] = hb[c, i]
        buf[:, 22:38] = hb[c, i + 1]
        buf[:, 39] = ord("\n")
        docs.append((f"doc{d:06d}", buf.tobytes().decode("ascii")))
    return docs, h, *where


# -- memory of the nodes' processes (Linux /proc) --------------------------------------------------
def _children() -> dict:
    kids: dict = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(p))
    return kids


def _tree(root: int, kids: dict) -> list:
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


#: The fields of ``/proc/PID/smaps_rollup`` sampled: resident, proportional (shared pages
#: divided among the processes mapping them), and the proportional split into the heap
#: (anonymous), mapped files (the shards' files, libraries) and shared memory (object store).
FIELDS = ("Rss", "Pss", "Pss_Anon", "Pss_File", "Pss_Shmem")


def _mem_mb(pid: int) -> np.ndarray:
    """:data:`FIELDS` of a process in MB (zeros when it is gone)."""
    out = np.zeros(len(FIELDS))
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for ln in f:
                key = ln.split(":")[0]
                if key in FIELDS:
                    out[FIELDS.index(key)] = int(ln.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


class MemoryWatch(threading.Thread):
    """Samples the memory of each node (a ``ray start --block`` process and its descendants)
    and of this process every ``every`` seconds; :meth:`phase` starts a named phase, whose
    peaks (per node and total, RSS and PSS, MB) :meth:`report` gives."""

    def __init__(self, node_pids, every: float = 2.0):
        super().__init__(daemon=True)
        self.nodes, self.every = list(node_pids), every
        self.name_, self.peaks, self.last = "start", {}, {}
        self._stop_ev = threading.Event()

    def phase(self, name: str) -> None:
        self.sample()
        self.name_ = name
        self.sample()

    def sample(self) -> dict:
        kids = _children()
        row = {}
        for k, root in enumerate(self.nodes):
            row[f"node{k}"] = sum((_mem_mb(p) for p in _tree(root, kids)), np.zeros(len(FIELDS)))
        row["driver"] = _mem_mb(os.getpid())
        row["total"] = sum(row.values(), np.zeros(len(FIELDS)))
        peaks = self.peaks.setdefault(self.name_, {})
        for key, v in row.items():  # each field's own peak
            peaks[key] = np.maximum(peaks.get(key, 0.0), v)
        self.last = row
        return row

    def run(self) -> None:
        while not self._stop_ev.wait(self.every):
            self.sample()

    def stop(self) -> None:
        self._stop_ev.set()

    def report(self) -> dict:
        def gb(v):
            return {f.lower() + "_gb": round(float(x) / 1024, 2) for f, x in zip(FIELDS, v)}

        out = {name: {k: gb(v) for k, v in p.items()} for name, p in self.peaks.items()}
        out["held"] = {k: gb(v) for k, v in self.sample().items()}
        return out


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
    ap.add_argument("--node-pids", default="", help="pids of this machine's `ray start --block`")
    ap.add_argument("--every", type=float, default=2.0, help="seconds between memory samples")
    ap.add_argument("--log", default=None, help="append progress lines to this file")
    ap.add_argument("--build-only", action="store_true", help="build (or resume) and stop")
    ap.add_argument("--search-only", action="store_true", help="search the corpus at --out")
    args = ap.parse_args(argv)

    def say(msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, file=sys.stderr, flush=True)
        if args.log:
            with open(args.log, "a") as f:
                f.write(line + "\n")

    from longctx._rss import give_back_free_memory
    from longctx.corpus import build_indexes
    from longctx.corpus.shards.index import ShardedMixPRIndex

    watch = MemoryWatch([int(p) for p in args.node_pids.split(",") if p], args.every)
    watch.start()
    out = Path(args.out or tempfile.mkdtemp(prefix="hashhop-ray-"))
    t0 = time.perf_counter()
    docs, h, line_doc, line_start, tokens = hashhop_docs(
        args.tokens * 1e6, args.seed, texts=not args.search_only
    )
    gen_s = time.perf_counter() - t0
    picks = np.linspace(0, len(h) - 1, min(args.chains, len(h))).astype(int)
    h, line_doc, line_start = h[picks], line_doc[picks], line_start[picks]  # the queried chains
    give_back_free_memory()
    say(f"generated {tokens / 1e6:.1f}M tokens in {gen_s:.1f} s")
    build_s, built = None, None
    if not args.search_only:
        watch.phase("build")
        t0 = time.perf_counter()
        built = build_indexes(
            docs, "mixpr", out, shards=args.shards, workers=args.workers,
            ray_address=args.address, progress=False, mappable=True,
        )  # fmt: skip
        build_s = round(time.perf_counter() - t0, 1)
        del docs
        say(f"built {args.shards} shards in {build_s} s ({built.backend}, {built.workers} workers)")
    if args.build_only:
        row = {"tokens": tokens, "shards": args.shards, "build_s": build_s}
        row["build_peaks_mb"] = {str(k): round(v) for k, v in built.peak_rss_mib.items()}
        if watch.nodes:
            row["memory"] = watch.report()
        print(json.dumps(row))
        return
    watch.phase("load")
    t0 = time.perf_counter()
    index = ShardedMixPRIndex.load(out / "indexes", ray_address=args.address)
    open_s = time.perf_counter() - t0
    say(f"loaded in {open_s:.1f} s: {index.n_units:,} units")
    watch.phase("query")
    try:
        found = np.zeros((len(h), HOPS))
        index.search(f"'{h[0, 0].decode()}' = ?", k=args.k)  # warm-up
        times = []
        for qi, c in enumerate(range(len(h))):
            t = time.perf_counter()
            res = index.search(f"'{h[c, 0].decode()}' = ?", k=args.k)
            times.append(time.perf_counter() - t)
            # a hit covers link i when it is a span of the link's document around its line
            spans = [(index.doc_ids[hit.source], hit.start, hit.end) for hit in res.hits]
            for i in range(HOPS):
                d, a = f"doc{int(line_doc[c, i]):06d}", int(line_start[c, i])
                found[qi, i] = any(s == d and x <= a < y for s, x, y in spans)
        say(f"{len(h)} queries: median {1000 * statistics.median(times):.1f} ms")
        row = {
            "tokens": tokens,
            "shards": args.shards,
            "documents": len(index.doc_ids),
            "units": index.n_units,
            "gen_s": round(gen_s, 1),
            "build_s": build_s,
            "open_s": round(open_s, 1),
            "found_by_hop": [round(float(x), 3) for x in found.mean(axis=0)],
            "query_ms": round(1000 * statistics.median(times), 1),
            "query_p90_ms": round(1000 * float(np.percentile(times, 90)), 1),
            "query_p95_ms": round(1000 * float(np.percentile(times, 95)), 1),
            "cpus_per_shard": getattr(index._backend, "cpus_per_shard", None),
            "actors": _actors(index),
        }
        if built is not None:
            row["build_peaks_mb"] = {str(k): round(v) for k, v in built.peak_rss_mib.items()}
        if watch.nodes:
            row["memory"] = watch.report()
    finally:
        index.close()
        watch.stop()
    print(json.dumps(row))


def _actors(index) -> dict:
    """Each shard actor's process, node and, where it runs on this machine, its RSS now and its
    peak (MB)."""
    backend = index._backend
    pids = getattr(backend, "pids", None)
    nodes = {}
    if pids is not None:
        nodes = backend._get({i: a.node.remote() for i, a in backend.actors.items()})
    out = {}
    for k, pid in (pids() if pids is not None else {}).items():
        rss = peak = None
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = round(int(line.split()[1]) / 1024)
                if line.startswith("VmRSS:"):
                    rss = round(int(line.split()[1]) / 1024)
        except OSError:  # on another machine
            pass
        node = nodes.get(k)
        out[str(k)] = {"pid": pid, "node": node and node[:8], "rss_mb": rss, "peak_rss_mb": peak}
    return out


if __name__ == "__main__":
    main()
