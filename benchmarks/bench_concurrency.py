"""Searches beside writes on one MixPR index, as an app with background ingestion runs it (issue
48): ``--threads`` search threads call ``search(q, k=10)`` in a loop over ten questions while one
writer inserts and deletes documents of ``--doc-words`` words (from another book: new terms) every
``--pause`` seconds, for ``--seconds``; then the index is compared with a fresh build of the
documents it holds.

Usage::

    python benchmarks/bench_concurrency.py [--data ../shared/data] [--books 2600 2701]
        [--threads 1 2 4] [--seconds 30] [--doc-words 3000] [--pause 0.01] [--seed 0]

Prints, for each number of search threads: searches per second, p50 / p99 latency (ms), the
writes done, and the equality check (``equal``: the same documents, term table, global PageRank
and scores, bit for bit, as a fresh build; the top 10 of the ten questions). Before the fix of
issue 48 the check failed with 4 threads (an insert stacked rows counted over the term table's
appended-rows columns onto its canonical columns, when a search gave the table its canonical
form in between). Timings are noisy on a shared machine: compare the rows of one run.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUESTIONS = [
    "Who fought a duel with Pierre?",
    "Who did Natasha love?",
    "What happened at the battle of Borodino?",
    "Who was Prince Andrew's father?",
    "What did Napoleon do in Moscow?",
    "Who is Captain Ahab?",
    "What is the white whale?",
    "Who was Queequeg?",
    "Where did the Pequod sail from?",
    "Who married Pierre at the end?",
]


def _book(data: Path, number: str) -> str:
    return (data / "gutenberg" / f"{number}-0.txt").read_text("utf-8")


def run(index, extra_words, n_threads, seconds, doc_words, pause, seed) -> dict:
    """One run: ``n_threads`` searchers beside one writer; latencies (s) and counts."""
    from longctx.mixpr import MixPRIndex  # noqa: F401 (the index's class, for the reader)

    stop = threading.Event()
    lat: list[float] = []
    errors: list = []
    writes = [0]

    def searcher(i):
        rng = random.Random(seed * 100 + i)
        try:
            while not stop.is_set():
                q = rng.choice(QUESTIONS)
                t0 = time.perf_counter()
                index.search(q, k=10)
                lat.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 (reported)
            errors.append(exc)

    def writer():
        rng = random.Random(seed)
        live: list[str] = []
        n = 0
        try:
            while not stop.is_set():
                if live and rng.random() < 0.5:
                    index.delete([live.pop(rng.randrange(len(live)))])
                else:
                    a = rng.randrange(len(extra_words) - doc_words)
                    n += 1
                    doc_id = f"w{seed}-{n}"
                    index.insert([" ".join(extra_words[a : a + doc_words])], ids=[doc_id])
                    live.append(doc_id)
                writes[0] += 1
                time.sleep(pause)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(n_threads + 1) as pool:
        jobs = [pool.submit(searcher, i) for i in range(n_threads)] + [pool.submit(writer)]
        stop.wait(seconds)
        stop.set()
        wait(jobs)
    wall = time.perf_counter() - t0
    return {"lat": np.asarray(lat), "wall": wall, "writes": writes[0], "errors": errors}


def check(index) -> tuple[bool, str]:
    """``(equal, detail)``: the index against a fresh build of its documents."""
    from longctx.mixpr import MixPRIndex

    fresh = MixPRIndex.from_texts(list(index.texts), ids=list(index.doc_ids))
    a, b = index.terms, fresh.terms
    table = a.terms() == b.terms() and (a.counts != b.counts).nnz == 0
    pr = float(np.abs(index.global_pagerank() - fresh.global_pagerank()).max())
    top_diff = sum(
        [(h.source, h.start) for h in index.search(q, k=10).hits]
        != [(h.source, h.start) for h in fresh.search(q, k=10).hits]
        for q in QUESTIONS
    )
    scores = all(np.array_equal(index.score(q)[0], fresh.score(q)[0]) for q in QUESTIONS)
    equal = table and pr == 0.0 and top_diff == 0 and scores
    detail = (
        f"term table {'equal' if table else 'DIFFERS'}, PageRank max diff {pr:.2g}, "
        f"top 10 differs for {top_diff}/{len(QUESTIONS)} questions, scores "
        f"{'bit-identical' if scores else 'DIFFER'}"
    )
    return equal, detail


def main() -> None:
    from longctx.mixpr import MixPRIndex

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--books", nargs="+", default=["2600", "2701"], help="Gutenberg numbers")
    ap.add_argument("--extra", default="145", help="the book the writer's documents come from")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--doc-words", type=int, default=3000)
    ap.add_argument("--pause", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    texts = [_book(args.data, b) for b in args.books]
    extra = args.data / "gutenberg" / f"{args.extra}-0.txt"
    if not extra.is_file():  # any book not in the index
        extra = next(p for p in sorted((args.data / "gutenberg").glob("*-0.txt"))
                     if p.name.split("-")[0] not in args.books)  # fmt: skip
    extra_words = extra.read_text("utf-8").split()
    print(f"index: books {args.books} ({sum(len(t.split()) for t in texts):,} words); writer: "
          f"{args.doc_words}-word documents of {extra.name}, pause {args.pause} s")  # fmt: skip
    ok_all = True
    for n in args.threads:
        index = MixPRIndex.from_texts(texts, ids=[f"b{b}" for b in args.books])
        index.search(QUESTIONS[0], k=10)  # warm: the IDF, rows, global PageRank
        r = run(index, extra_words, n, args.seconds, args.doc_words, args.pause, args.seed)
        lat = r["lat"] * 1e3
        p50, p99 = np.percentile(lat, [50, 99]) if len(lat) else (float("nan"),) * 2
        equal, detail = check(index)
        ok_all &= equal and not r["errors"]
        print(f"{n} search threads: {len(lat) / r['wall']:.1f} searches/s, p50 {p50:.0f} ms, "
              f"p99 {p99:.0f} ms, {len(lat)} searches, {r['writes']} writes, "
              f"{len(r['errors'])} errors; {'EQUAL' if equal else 'NOT EQUAL'} to a fresh "
              f"build: {detail}", flush=True)  # fmt: skip
    sys.exit(0 if ok_all else 1)


if __name__ == "__main__":
    main()
