"""Corpus builds on a local Ray: GARLIC graphs of NarrativeQA summaries and diversity indexes of
Gutenberg books with 1 and 2 workers: wall seconds, speed-up, peak memory per worker.

``longctx.corpus.build_indexes`` runs GARLIC (Wang et al. 2024, arXiv:2410.04790, sec. 3.1) and
the diversity index (sentence embeddings for MMR/FPS) in a Ray actor pool, one model per worker
(each actor asks for 1 CPU, so Ray gives its torch one thread). One local Ray with
``num_cpus=max(--workers)`` is started first and shared by the runs, so the figures hold actor
start-up and model loading but not Ray's own start-up (printed apart). Each run builds into a
fresh temporary folder.

Shared machine defaults (small on purpose): ``--max-new-tokens 32`` (the paper's cap is 1024 a
batch), ``--batch-tokens 1500`` (every summary fits one batch: one summarization a document),
books cut to their first ``--book-chars`` characters after the Gutenberg header.

Usage::

    PYTHONPATH=. python benchmarks/bench_corpus.py
    PYTHONPATH=. python benchmarks/bench_corpus.py --methods garlic --workers 1 2 4 \\
        --max-new-tokens 256 --json corpus.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def narrativeqa_summaries(n: int) -> list[tuple[str, str]]:
    docs, seen = [], set()
    with open(DATA / "narrativeqa_summaries" / "test.jsonl", encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)["passage"]
            if p not in seen:
                seen.add(p)
                docs.append((f"narrativeqa/{len(seen)}", p))
            if len(docs) >= n:
                break
    return docs


def gutenberg_books(n: int, chars: int) -> list[tuple[str, str]]:
    from longctx.io import read_text_file

    rows = (DATA / "gutenberg" / "INDEX.tsv").read_text("utf-8").splitlines()[1:]
    docs = []
    for row in rows[:n]:
        name = row.split("\t")[0]
        text = read_text_file(DATA / "gutenberg" / name)
        start = text.find("*** START OF")
        start = text.find("\n", start) + 1 if start >= 0 else 0
        docs.append((f"gutenberg/{name}", text[start : start + chars]))
    return docs


def run(method, docs, workers, options, scratch, gpus_per_worker=0.0) -> dict:
    from longctx.corpus import build_indexes, read_corpus_manifest

    out = Path(scratch) / f"{method}-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    r = build_indexes(
        docs,
        method,
        out,
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        progress=False,
        **options,
    )
    if r.failed:
        print(f"  failed: {r.errors}", file=sys.stderr)
    m = read_corpus_manifest(out)
    entries = list(m.entries.values())
    return {
        "method": method,
        "workers": r.workers,
        "backend": r.backend,
        "documents": len(docs),
        "built": len(r.built),
        "failed": len(r.failed),
        "seconds": r.seconds,
        "document_seconds": round(sum(e.seconds for e in entries), 2),
        "document_cpu_seconds": round(sum(e.extra.get("cpu_seconds", 0) for e in entries), 2),
        "tokens": int(sum(e.tokens or 0 for e in entries)),
        "tokens_generated": int(sum(e.extra.get("tokens_generated", 0) for e in entries)),
        "peak_rss_mib_per_worker": sorted(round(v) for v in r.peak_rss_mib.values()),
        "loadavg": open("/proc/loadavg").read().split()[:3],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="+", default=["garlic", "diversity"])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--narrativeqa", type=int, default=8, help="GARLIC documents")
    ap.add_argument("--books", type=int, default=8, help="diversity documents")
    ap.add_argument("--book-chars", type=int, default=30_000)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--batch-tokens", type=int, default=1500)
    ap.add_argument("--model", help="GARLIC model (default SmolLM2-135M-Instruct)")
    ap.add_argument("--device", help="torch device of the workers (cuda with --gpus-per-worker)")
    ap.add_argument("--gpus-per-worker", type=float, default=0)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args(argv)
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}", file=sys.stderr)
        return 2
    import ray

    t0 = time.perf_counter()
    ray.init(
        num_cpus=max(args.workers),
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    ray_start = time.perf_counter() - t0
    print(f"ray start-up: {ray_start:.1f} s (not in the figures below)")
    device = {"device": args.device} if args.device else {}
    plans = {
        "garlic": (
            narrativeqa_summaries(args.narrativeqa),
            {
                "model": args.model,
                "max_new_tokens": args.max_new_tokens,
                "batch_tokens": args.batch_tokens,
                **device,
            },
        ),
        "diversity": (gutenberg_books(args.books, args.book_chars), dict(device)),
    }
    rows = []
    scratch = tempfile.mkdtemp(prefix="bench-corpus-")
    try:
        for method in args.methods:
            docs, options = plans[method]
            for w in args.workers:
                row = run(method, docs, w, options, scratch, args.gpus_per_worker)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        ray.shutdown()
    print()
    print(
        "| method | docs | workers | seconds | speed-up | doc-seconds | doc CPU-seconds "
        "| peak RSS per worker (MiB) | load average |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    base = {}
    for r in rows:
        base.setdefault(r["method"], r["seconds"])
        print(
            f"| {r['method']} | {r['documents']} | {r['workers']} | {r['seconds']:.1f} | "
            f"{base[r['method']] / r['seconds']:.2f}x | {r['document_seconds']:.1f} | "
            f"{r['document_cpu_seconds']:.1f} | "
            f"{', '.join(map(str, r['peak_rss_mib_per_worker']))} | {' '.join(r['loadavg'])} |"
        )
    print(f"driver peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps({"ray_startup_s": ray_start, "runs": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
