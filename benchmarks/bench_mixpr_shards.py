"""A sharded MixPR corpus against one in-process index: build, query time, the per-step cost of
the walk's reduction, per-shard figures, and the estimate they give for 100M and 1B tokens.

Usage::

    python benchmarks/bench_mixpr_shards.py [--words 10] [--shards 4] [--workers 2]
        [--queries 10] [--data ../shared/data]

Corpus: the generator of ``benchmarks/bench_mixpr_growth.py`` (Gutenberg books of
``data/gutenberg/INDEX.tsv`` taken whole, repeated as new documents past the 6.3M words of the 37
books), ``--words`` million words. Three processes, so each peak RSS is its own:

1. one index: ``MixPRIndex.from_texts`` (build), ``--queries`` local questions at k=100 (median
   after a warm-up), the time of one walk step ``E (W (E^T v))`` on the whole index;
2. sharded on Ray: ``build_indexes(..., shards=N, workers=W)`` (a local Ray of W CPUs started
   for the build: one task per shard, W at a time, each saving its shard), then
   ``ShardedMixPRIndex.load`` on a local Ray of W CPUs (one actor per shard, N/W shards a CPU),
   the same questions (hits compared with process 1's), the time of each pipeline call
   (round trips to every actor), the actors' peak RSS;
3. the shards in one process (no Ray): per shard its units, terms, non-zeros of ``E_s`` and the
   time of its part of a step (``E_s^T v`` and ``E_s u``), and the driver's reduction (summing
   the shards' term vectors and multiplying by ``W``).

Figures taken on a shared machine are noisy: read them as ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_mixpr_growth import QUESTIONS, corpus  # noqa: E402


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def proc_peak_gb(pid: int) -> float | None:
    """Peak RSS (VmHWM) of a local process, in GB (Linux)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        return None
    return None


def _median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def run_one(args) -> dict:
    import numpy as np

    from longctx.mixpr import MixPRIndex
    from longctx.tokens import count_tokens

    docs = corpus(args.data, int(args.words * 1e6))
    t0 = time.perf_counter()
    index = MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs])
    build = time.perf_counter() - t0
    index.search(QUESTIONS[0], k=100, mode="local")
    times, hits = [], []
    for q in QUESTIONS[: args.queries]:
        t0 = time.perf_counter()
        r = index.search(q, k=100, mode="local")
        times.append(time.perf_counter() - t0)
        hits.append([[h.source, h.start, h.score] for h in r.hits])
    g = index.graph
    v = np.random.default_rng(0).random(index.n_units)
    step = _median_ms(lambda: g.matvec(v), 5)
    sample = "".join(t for _, t in docs[:3])
    return {
        "documents": len(docs),
        "words": sum(len(t.split()) for _, t in docs),
        "tokens_per_word": count_tokens(sample) / max(1, len(sample.split())),
        "units": index.n_units,
        "terms": index.terms.n_terms,
        "nnz": g.nnz,
        "build_s": round(build, 2),
        "query_ms": round(1000 * statistics.median(times), 1),
        "step_ms": round(step, 2),
        "peak_rss_gb": round(peak_gb(), 2),
        "hits": hits,
    }


def run_ray(args) -> dict:
    import ray

    from longctx.corpus import build_indexes
    from longctx.corpus.shards.index import ShardedMixPRIndex
    from longctx.mixpr import shard_backends

    docs = corpus(args.data, int(args.words * 1e6))
    out = Path(args.out)
    t0 = time.perf_counter()
    r = build_indexes(docs, "mixpr", out, shards=args.shards, workers=args.workers, progress=False)
    build = time.perf_counter() - t0
    # time every pipeline call (one round trip to every actor)
    calls: dict = {}
    real_map = shard_backends._RayView.map

    def timed(self, method, *a):
        t = time.perf_counter()
        try:
            return real_map(self, method, *a)
        finally:
            c = calls.setdefault(method, [0, 0.0])
            c[0] += 1
            c[1] += time.perf_counter() - t

    shard_backends._RayView.map = timed
    t0 = time.perf_counter()
    index = ShardedMixPRIndex.load(out / "indexes", use_ray=True, workers=args.workers)
    load = time.perf_counter() - t0
    try:
        index.search(QUESTIONS[0], k=100, mode="local")
        calls.clear()
        times, hits = [], []
        for q in QUESTIONS[: args.queries]:
            t0 = time.perf_counter()
            res = index.search(q, k=100, mode="local")
            times.append(time.perf_counter() - t0)
            hits.append([[h.source, h.start, h.score] for h in res.hits])
        pids = index._backend.pids()
        actor_rss = {i: proc_peak_gb(p) for i, p in pids.items()}
    finally:
        index.close()
        if ray.is_initialized():
            ray.shutdown()
    n = len(times)
    return {
        "build_s": round(build, 2),
        "build_backend": f"{r.backend}, {r.workers} workers",
        "load_s": round(load, 2),
        "query_ms": round(1000 * statistics.median(times), 1),
        "calls_per_query": {m: round(c[0] / n, 1) for m, c in calls.items()},
        "ms_per_call": {m: round(1000 * c[1] / c[0], 2) for m, c in calls.items()},
        "actor_peak_rss_gb": {i: round(g, 2) if g else None for i, g in actor_rss.items()},
        "driver_peak_rss_gb": round(peak_gb(), 2),
        "hits": hits,
    }


def run_local(args) -> dict:
    import numpy as np

    from longctx.corpus.shards.index import ShardedMixPRIndex

    import_gb = peak_gb()  # the process with longctx imported, nothing loaded
    t0 = time.perf_counter()
    index = ShardedMixPRIndex.load(Path(args.out) / "indexes", use_ray=False)
    load = time.perf_counter() - t0
    g = index._global
    V = g["stats"].n_terms
    rng = np.random.default_rng(0)
    shards = []
    parts = []
    for i in g["live"]:
        b = index._backend.shards[i].block
        v = rng.random(b.n)
        u = rng.random(V)
        t_left = _median_ms(lambda b=b, v=v: b._ET @ v, 5)
        t_right = _median_ms(lambda b=b, u=u: b.E @ u, 5)
        parts.append(b._ET @ v)
        s = index._stats[i]
        st = index._backend.shards[i].index._state
        arrays = [b.E.data, b.E.indices, b.E.indptr, st.table.counts.data, st.table.counts.indices,
                  st.table.counts.indptr, st.unit_source, st.unit_index, st.starts, st.ends,
                  b.keys]  # fmt: skip
        index_bytes = sum(a.nbytes for a in arrays) + sum(sys.getsizeof(t) for t in st.texts)
        shards.append(
            {
                "shard": i,
                "documents": len(s["doc_ids"]),
                "units": int(s["n_units"]),
                "terms": len(s["terms"]),
                "nnz": int(b.E.nnz),
                "index_mb": round(index_bytes / 1e6, 1),
                "Et_v_ms": round(t_left, 2),
                "E_u_ms": round(t_right, 2),
            }
        )
    w = g["weights"]

    def reduce():
        t = parts[0].copy()
        for p in parts[1:]:
            t += p
        return t * w

    index.search(QUESTIONS[0], k=100, mode="local")
    times = []
    for q in QUESTIONS[: args.queries]:
        t0 = time.perf_counter()
        index.search(q, k=100, mode="local")
        times.append(time.perf_counter() - t0)
    return {
        "load_s": round(load, 2),
        "import_rss_gb": round(import_gb, 3),
        "terms": V,
        "reduce_ms": round(_median_ms(reduce, 20), 3),
        "term_vector_mb": round(V * 8 / 1e6, 2),
        "query_ms": round(1000 * statistics.median(times), 1),
        "shards": shards,
        "peak_rss_gb": round(peak_gb(), 2),
    }


def estimate(one: dict, ray_run: dict, local: dict) -> list[str]:
    """Query latency and memory at 100M and 1B tokens on N machines (one shard each), from the
    measured figures: a step's shard work grows with the shard's non-zeros (measured ms per
    non-zero, one core), the reduction with the vocabulary (Heaps' law, exponent 0.5, from the
    measured vocabulary: V(T) = V_m (T / T_m) ** 0.5; every machine sends its term vector to
    the driver and gets ``u`` back, so the driver's link carries 2 N vectors a step, at
    10 Gb/s), the steps and round trips a query takes as measured (and with the paper's 18
    steps: ``tol * n_units`` stops the walk after a step or two on large corpora) plus the rest of
    a query in proportion to a shard's units (measured on one index), each round trip at least
    ``rt`` (1 ms on a cluster network is assumed where the measured one is lower), and memory
    per machine the measured index bytes per token (texts, term counts, TF-IDF rows, unit
    arrays) times the measured ratio of an actor's peak RSS (less a process's base with longctx
    imported) to its index, plus that base and four term vectors."""
    tokens = one["words"] * one["tokens_per_word"]
    nnz_per_token = one["nnz"] / tokens
    sh = local["shards"]
    ms_per_nnz = sum(s["Et_v_ms"] + s["E_u_ms"] for s in sh) / sum(s["nnz"] for s in sh)
    bytes_per_token = sum(s["index_mb"] for s in sh) * 1e6 / tokens
    rss = [g for g in ray_run["actor_peak_rss_gb"].values() if g]
    base_gb = local["import_rss_gb"]
    index_gb = sum(s["index_mb"] for s in sh) / 1e3
    # peak RSS over the index it holds, once loaded (parsing, copies while building E)
    factor = (sum(rss) - len(rss) * base_gb) / index_gb if rss and index_gb else 3.0
    V_m = local["terms"]
    per = ray_run["calls_per_query"]
    steps = per.get("walk_step", 18.0)
    others = sum(c for m, c in per.items() if m != "walk_step") + 1  # + fetching the hits
    rt = max(1.0, min(ray_run["ms_per_call"].values()) if ray_run["ms_per_call"] else 1.0)
    # the rest of a query (edges, restart, scores, selection) grows with the units: measured on
    # one index as its query time less its walk steps
    units_per_token = one["units"] / tokens
    rest_ms_per_unit = max(0.0, one["query_ms"] - steps * one["step_ms"]) / one["units"]
    out = [
        f"measured: {tokens / 1e6:.1f}M tokens (count_tokens), {one['nnz'] / 1e6:.1f}M "
        f"non-zeros of E ({nnz_per_token:.2f} a token), {ms_per_nnz * 1e6:.1f} ms per million "
        f"non-zeros for E^T v + E u (one core), index {bytes_per_token:.0f} bytes a token, "
        f"actor peak RSS {factor:.1f}x its index over a process base of {base_gb:.2f} GB, "
        f"vocabulary {V_m:,} terms, {steps:.1f} walk steps and "
        f"{others:.0f} other round trips a query, round trip {rt:.1f} ms, the rest of a query "
        f"{rest_ms_per_unit * 1e6:.0f} ms per million units of a shard",
        "| tokens | machines | non-zeros a shard | step compute ms | term vector MB | "
        f"reduction ms a step (2N vectors at 10 Gb/s) | query s ({steps:g} steps) | "
        "query s (18 steps) | memory a machine GB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for T in (100e6, 1e9):
        V = V_m * (T / tokens) ** 0.5
        for N in (4, 16, 64):
            nnz = nnz_per_token * T / N
            step = ms_per_nnz * nnz
            net = 2 * N * V * 8 * 8 / 10e9 * 1000
            rest = rest_ms_per_unit * units_per_token * T / N
            query = (steps * (step + net + rt) + others * rt + rest) / 1000
            query18 = (18 * (step + net + rt) + others * rt + rest) / 1000
            mem = base_gb + factor * bytes_per_token * T / N / 1e9 + 4 * V * 8 / 1e9
            out.append(
                f"| {T / 1e6:,.0f}M | {N} | {nnz / 1e6:,.1f}M | {step:,.1f} | {V * 8 / 1e6:,.1f} "
                f"| {net:,.1f} | {query:,.2f} | {query18:,.2f} | {mem:,.1f} |"
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--words", type=float, default=10.0, help="million words")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--part", choices=("one", "ray", "local"), help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.part:
        fn = {"one": run_one, "ray": run_ray, "local": run_local}[args.part]
        print(json.dumps(fn(args)))
        return
    res = {}
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        base = [sys.executable, __file__, "--data", str(args.data), "--words", str(args.words)]
        base += ["--shards", str(args.shards), "--workers", str(args.workers)]
        base += ["--queries", str(args.queries), "--out", str(Path(tmp) / "corpus")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get(
            "PYTHONPATH", "")])}  # fmt: skip
        for part in ("one", "ray", "local"):
            t0 = time.perf_counter()
            p = subprocess.run([*base, "--part", part], capture_output=True, text=True, env=env)
            if p.returncode:
                sys.exit(f"part {part} failed:\n{p.stderr[-3000:]}")
            res[part] = json.loads(p.stdout.strip().splitlines()[-1])
            print(f"  {part}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    one, rr, loc = res["one"], res["ray"], res["local"]
    same = all([h[:2] for h in a] == [h[:2] for h in b] for a, b in zip(one["hits"], rr["hits"]))
    diff = max(
        (abs(x[2] - y[2]) for a, b in zip(one["hits"], rr["hits"]) for x, y in zip(a, b)),
        default=0.0,
    )
    print(
        f"\n== MixPR: {args.words:g}M words, {args.shards} shards on {args.workers} local Ray "
        "workers against one index (noisy: shared machine) ==\n"
    )
    print(f"corpus: {one['documents']} documents, {one['words']:,} words, {one['units']:,} units, "
          f"{one['terms']:,} terms, {one['nnz']:,} non-zeros of E")  # fmt: skip
    print("| | build s | load s | query ms (median, k=100) | peak RSS GB |")
    print("|---|---|---|---|---|")
    print(f"| one index, in-process | {one['build_s']} | - | {one['query_ms']} | "
          f"{one['peak_rss_gb']} |")  # fmt: skip
    actors = ", ".join(f"{g}" for g in rr["actor_peak_rss_gb"].values())
    print(f"| {args.shards} shards, Ray actors ({rr['build_backend']}) | {rr['build_s']} | "
          f"{rr['load_s']} | {rr['query_ms']} | driver {rr['driver_peak_rss_gb']}, actors "
          f"{actors} |")  # fmt: skip
    print(f"| {args.shards} shards, one process | - | {loc['load_s']} | {loc['query_ms']} | "
          f"{loc['peak_rss_gb']} |")  # fmt: skip
    print(f"\nsame hits as one index: {same}; largest score difference {diff:.1e}")
    print(f"walk step on one index (E (W (E^T v))): {one['step_ms']} ms")
    print(
        f"reduction per step on the driver: {loc['reduce_ms']} ms (sum of {args.shards} term "
        f"vectors of {loc['terms']:,} terms, {loc['term_vector_mb']} MB each, times W)"
    )
    print("pipeline calls per query and ms per call (one round trip to every actor):")
    for m, c in rr["calls_per_query"].items():
        print(f"  {m}: {c} x {rr['ms_per_call'][m]} ms")
    print("\n| shard | documents | units | terms | non-zeros | index MB | E_s^T v ms | E_s u ms |")
    print("|---|---|---|---|---|---|---|---|")
    for s in loc["shards"]:
        print(f"| {s['shard']} | {s['documents']} | {s['units']:,} | {s['terms']:,} | "
              f"{s['nnz']:,} | {s['index_mb']} | {s['Et_v_ms']} | {s['E_u_ms']} |")  # fmt: skip
    print("\nestimate (see estimate() for the model):")
    for line in estimate(one, rr, loc):
        print(line)


if __name__ == "__main__":
    main()
