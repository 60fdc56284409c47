"""A saved MixPR index opened at an app's start: build, save, open, memory and first query, for
format 2 (read into memory), format 3 read into memory and format 3 memory-mapped.

Usage::

    python benchmarks/bench_mixpr_mmap.py [--data ../shared/data] [--sizes 1,10] [--repeat 2]
        [--ways v2,v3,v3-mmap] [--text ../shared/data/gutenberg/2600-0.txt]

Corpus: the Gutenberg haystack of ``benchmarks/bench_mixpr_growth.py`` (its ``corpus``: the books
of ``data/gutenberg/INDEX.tsv`` in file order, repeated as new documents past 6.3M words), no
needles; or, with ``--text``, that one file as one document (War and Peace: ``2600-0.txt``).
One process builds the index (build time, peak RSS over the process's base, held RSS
after the build) and saves it in both formats; then each way of opening runs in a fresh process
(``--repeat`` times, the ways interleaved): open time, resident memory after the open over the
process's base once longctx and its imports are loaded (``/proc/self/statm``: file pages
mapped and touched count too), the first query and the median of the next ones (the growth
table's 10 questions, k=10, local mode), and whether the hits equal the built index's.
Timings on a shared 2-core machine are noisy: compare the ways within one run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

#: way -> (saved folder, mmap, label)
WAYS = {
    "v2": ("v2", False, "format 2"),
    "v3": ("v3", False, "format 3"),
    "v3-mmap": ("v3", True, "format 3, mmap"),
}


def rss_mb() -> float:
    """Resident memory of this process now (MB)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hits_of(res) -> list:
    return [(h.source, h.start, h.end, round(h.score, 12)) for h in res.hits]


def questions(n: int) -> list[str]:
    from bench_mixpr_growth import QUESTIONS

    return QUESTIONS[:n]


def build(args) -> dict:
    from bench_mixpr_growth import corpus

    from longctx._rss import give_back_free_memory
    from longctx.mixpr import MixPRIndex

    if args.text:
        from longctx.io import read_text_file

        docs = [(Path(args.text).stem, read_text_file(args.text))]
    else:
        docs = corpus(args.data, int(float(args.one) * 1e6))
    give_back_free_memory()  # the corpus reader's garbage is not the index's
    base, base_peak = rss_mb(), peak_mb()
    t0 = time.perf_counter()
    index = MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs])
    build_s = time.perf_counter() - t0
    peak = peak_mb() - base_peak
    gc.collect()
    held = rss_mb() - base
    out = {
        "words": sum(len(t.split()) for _, t in docs),
        "units": index.n_units,
        "build_s": round(build_s, 2),
        "build_peak_mb": round(peak),
        "held_mb": round(held),
    }
    del docs
    for name, mappable in (("v2", False), ("v3", True)):
        if name not in {WAYS[w][0] for w in args.ways.split(",")}:
            continue
        t0 = time.perf_counter()
        index.save(Path(args.dir) / name, mappable=mappable)
        out[f"save_{name}_s"] = round(time.perf_counter() - t0, 2)
        size = sum(p.stat().st_size for p in (Path(args.dir) / name).iterdir())
        out[f"disk_{name}_mb"] = round(size / 1e6, 1)
    out["hits"] = [hits_of(index.search(q, k=10, mode="local")) for q in questions(args.queries)]
    return out


def open_one(args) -> dict:
    import longctx.mixpr.persist_mapped  # noqa: F401  (imports loaded before the base)
    from longctx.mixpr import MixPRIndex

    name, mmap, _ = WAYS[args.way]
    gc.collect()
    base = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    index = MixPRIndex.load(Path(args.dir) / name, mmap=mmap)
    open_s, open_cpu = time.perf_counter() - t0, time.process_time() - c0
    after = rss_mb() - base
    times, cpu, hits = [], [], []
    for q in questions(args.queries):
        t0, c0 = time.perf_counter(), time.process_time()
        res = index.search(q, k=10, mode="local")
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        hits.append(hits_of(res))
    return {
        "open_s": round(open_s, 3),
        "open_cpu_s": round(open_cpu, 3),
        "rss_after_open_mb": round(after, 1),
        "first_query_ms": round(1000 * times[0], 1),
        "next_query_ms": round(1000 * statistics.median(times[1:]), 1),
        "first_query_cpu_ms": round(1000 * cpu[0], 1),
        "next_query_cpu_ms": round(1000 * statistics.median(cpu[1:]), 1),
        "rss_after_queries_mb": round(rss_mb() - base, 1),
        "hits": hits,
    }


def child(args, **extra) -> dict:
    cmd = [sys.executable, __file__, "--data", str(args.data), "--dir", args.dir]
    cmd += ["--queries", str(args.queries), "--ways", args.ways]
    if args.text:
        cmd += ["--text", str(args.text)]
    for k, v in extra.items():
        cmd += [f"--{k}", str(v)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--sizes", default="1,10", help="million words, comma separated")
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--ways", default="v2,v3,v3-mmap", help="of " + ", ".join(WAYS))
    ap.add_argument("--text", type=Path, help="one text file as the corpus (--sizes ignored)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--way", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(build(args)))
        return
    if args.way:
        print(json.dumps(open_one(args)))
        return
    rows = []
    for size in ["text"] if args.text else args.sizes.split(","):
        tmp = tempfile.mkdtemp(prefix="bench-mmap-")
        args.dir = tmp
        try:
            b = child(args, one=size)
            label = f"{Path(args.text).name}" if args.text else f"{size}M words"
            print(f"{label}: {json.dumps({k: v for k, v in b.items() if k != 'hits'})}")
            for rep in range(args.repeat):
                for way in args.ways.split(","):
                    r = child(args, way=way)
                    r["same_hits"] = r.pop("hits") == b["hits"]
                    r.update(size=label, way=way, rep=rep)
                    print("  ", json.dumps(r), flush=True)
                    rows.append(r)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print("\n(wall / CPU of this process: the CPU time is what a busy machine inflates least)")
    print("| words | way | open s | resident after open MB | first query ms | then ms | "
          "same hits |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['size']} | {WAYS[r['way']][2]} (run {r['rep'] + 1}) | {r['open_s']} / "
              f"{r['open_cpu_s']} | {r['rss_after_open_mb']} | {r['first_query_ms']} / "
              f"{r['first_query_cpu_ms']} | {r['next_query_ms']} / {r['next_query_cpu_ms']} | "
              f"{r['same_hits']} |")  # fmt: skip


if __name__ == "__main__":
    main()
