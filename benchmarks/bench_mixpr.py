"""MixPR benchmark: stage timings at 10k / 100k / 1M tokens and BABILong-style recall at k=100.

Usage: python benchmarks/bench_mixpr.py [--data ../shared/data] [--questions 50] [--skip-recall]

Timings: chunk (chunk_words), embed (TF-IDF), graph (thresholded E E^T + column normalization),
rank (personalized PageRank, alpha=.6, 18 iterations), total; peak RSS of the process so far;
and networkx.pagerank on the same graph (same alpha mapping and tol) for the PageRank speed ratio.

Recall (paper sec. 5 / BABILong): the facts of bAbI qa1/qa2/qa3 stories are put at random
sentence boundaries inside Gutenberg text cut to 16k, 128k and 1M tokens; the bAbI question is
the query; a question counts when all its supporting facts are inside the top-100 chunks.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from longctx.eval.tasks import babi_questions as tasks_babi_questions  # noqa: E402
from longctx.eval.tasks import gutenberg_haystack, insert_facts  # noqa: E402
from longctx.mixpr import MixPR, column_normalize, personalized_pagerank, similarity_graph  # noqa: E402
from longctx.selection import select_top  # noqa: E402
from longctx.text import chunk_words, split_sentences  # noqa: E402
from longctx.tokens import count_tokens  # noqa: E402


def load_gutenberg(data: Path, n_tokens: int) -> str:
    """The harness's Gutenberg haystack (``longctx.eval.tasks.gutenberg_haystack``: Moby Dick,
    Pride and Prejudice, War and Peace, ...) cut at ``n_tokens`` ``count_tokens`` tokens."""
    text = gutenberg_haystack(data, n_tokens * 6)  # ~0.25 count_tokens a character: enough
    total = count_tokens(text)
    words = text.split(" ")
    cut = int(len(words) * min(1.0, n_tokens / max(total, 1)))
    out = " ".join(words[:cut])
    while count_tokens(out) > n_tokens and cut > 0:
        cut = int(cut * 0.99)
        out = " ".join(words[:cut])
    return out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_speed(data: Path, sizes: list[int], nx_max: int) -> None:
    import networkx as nx

    print("== speed (seconds; 2-core CPU) ==")
    print(
        f"{'tokens':>9} {'chunks':>7} {'edges':>9} {'chunk':>6} {'embed':>6} {'graph':>6} "
        f"{'rank':>6} {'total':>6} {'peakMB':>7} {'nx_s':>7} {'nx/ours':>8}"
    )
    mp = MixPR()
    mp.rank(["warm up the imports.", "scikit-learn and scipy."], "imports?")  # not timed
    for n_tok in sizes:
        text = load_gutenberg(data, n_tok)
        query = "What did the captain say about the white whale?"
        t0 = time.perf_counter()
        spans = chunk_words(text, 32)
        t1 = time.perf_counter()
        texts = [text[a:b] for a, b in spans] + mp.query_chunks(query)
        E = mp.embed(texts)
        t2 = time.perf_counter()
        A = column_normalize(similarity_graph(E, mp.threshold))
        t3 = time.perf_counter()
        p = np.zeros(A.shape[0])
        p[-1] = 1.0
        pi = personalized_pagerank(A, p, 0.6, 18, 1e-6)
        select_top(pi[: len(spans)], k=100)
        t4 = time.perf_counter()
        rank_s = t4 - t3
        nx_s = ratio = float("nan")
        if A.shape[0] <= nx_max:
            G = nx.from_scipy_sparse_array(A.T.tocsr(), create_using=nx.DiGraph)
            ts = time.perf_counter()
            nx.pagerank(
                G,
                alpha=0.4,
                personalization={A.shape[0] - 1: 1.0},
                tol=1e-6,
                max_iter=1000,
                weight="weight",
            )
            nx_s = time.perf_counter() - ts
            # time our PageRank alone (same graph, same tol) for the ratio
            ts = time.perf_counter()
            personalized_pagerank(A, p, 0.6, 1000, 1e-6)
            ours = time.perf_counter() - ts
            ratio = nx_s / ours
        print(
            f"{n_tok:>9} {len(spans):>7} {A.nnz:>9} {t1 - t0:6.2f} {t2 - t1:6.2f} {t3 - t2:6.2f} "
            f"{rank_s:6.3f} {t4 - t0:6.2f} {peak_rss_mb():7.0f} {nx_s:7.2f} {ratio:8.1f}"
        )


def babi_questions(path: Path):
    """Yield (facts: list[str], question, supporting fact indices into facts) per question
    (``longctx.eval.tasks.babi_questions`` without the answer)."""
    for facts, q, sup, _answer in tasks_babi_questions(path):
        yield facts, q, sup


#: facts put in order at random sentence boundaries: the harness's BABILong construction
build_haystack = insert_facts


def bench_recall(data: Path, lengths: list[int], n_questions: int, n_questions_1m: int) -> None:
    print("== BABILong-style recall of all supporting facts in the top-100 chunks ==")
    tasks = ["qa1_single-supporting-fact", "qa2_two-supporting-facts", "qa3_three-supporting-facts"]
    mp = MixPR()
    for n_tok in lengths:
        hay = load_gutenberg(data, n_tok)
        hay_sents = split_sentences(hay)
        nq = n_questions if n_tok < 1_000_000 else n_questions_1m
        row = []
        for task in tasks:
            rng = random.Random(0)
            qs = list(babi_questions(data / "babi" / "en" / f"{task}_test.txt"))
            qs = rng.sample(qs, nq)
            hits, t0 = 0, time.perf_counter()
            for facts, q, sup in qs:
                text, fspans = build_haystack(hay, hay_sents, facts, rng)
                passages = mp.retrieve(text, q, k=100, mode="local")
                got = [(p.start, p.end) for p in passages]
                ok = all(any(a <= fspans[s][0] and fspans[s][1] <= b for a, b in got) for s in sup)
                hits += ok
            dt = (time.perf_counter() - t0) / nq
            row.append(f"{task.split('_')[0]}={hits / nq:.2f} ({dt:.2f}s/q)")
        print(f"{n_tok:>8} tokens, {nq} questions/task: " + "  ".join(row))


WAR_AND_PEACE_QUESTIONS = [
    "Whom did Natasha marry?",
    "Why is Prince Andrew going to the war?",
    "Who is Pierre's father?",
    "What happened at the battle of Borodino?",
    "Who burned Moscow?",
    "What did Pierre inherit?",
    "Who is Anatole Kuragin?",
    "How did Prince Andrew die?",
    "What did Nicholas lose at cards?",
    "Who did Sonya love?",
]
INDEX_QUERIES = [
    "What did the captain say about the white whale?",
    "Who married the eldest daughter?",
    "Where did the soldiers march after the battle?",
    "Why was the ship late?",
    "What did the letter say?",
]


def bench_index(data: Path, sizes: list[int]) -> None:
    """Build once / query many: index build time and per-query time against the paper-literal
    pipeline (query appended, TF-IDF refitted and graph rebuilt per query). Build and literal
    seconds are medians of three interleaved runs."""
    from longctx.mixpr import MixPRIndex

    print("== build once, query many (seconds; 2-core CPU) ==")
    print(
        f"{'tokens':>9} {'setting':>8} {'chunks':>7} {'build':>7} {'query_ms':>9} "
        f"{'query_max_ms':>13} {'literal_s':>10} {'speedup':>8} {'peakMB':>7}"
    )
    literal = MixPR(preset="paper")
    settings = {"paper": {"preset": "paper", "fit_query": False}, "default": {}}
    for n_tok, name in ((n, name) for n in sizes for name in settings):
        text = load_gutenberg(data, n_tok)
        # builds and literal passes interleaved, median of 3 each: a shared 2-core machine is noisy
        builds, lits = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            index = MixPRIndex.from_texts(text, **settings[name])
            builds.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            literal.search(text, INDEX_QUERIES[0], k=100)
            lits.append(time.perf_counter() - t0)
        build, lit = float(np.median(builds)), float(np.median(lits))
        index.search("warm up?", k=100)
        times = []
        for q in INDEX_QUERIES:
            t0 = time.perf_counter()
            index.search(q, k=100)
            times.append(time.perf_counter() - t0)
        med = float(np.median(times))
        print(
            f"{n_tok:>9} {name:>8} {index.n_units:>7} {build:7.2f} {med * 1e3:9.1f} "
            f"{max(times) * 1e3:13.1f} {lit:10.2f} {lit / med:8.0f} {peak_rss_mb():7.0f}"
        )


def bench_agreement(data: Path) -> None:
    """Top-100 overlap of the index path with the paper-literal path on War and Peace."""
    from longctx.mixpr import MixPRIndex

    text = (data / "gutenberg" / "2600-0.txt").read_text(encoding="utf-8-sig")
    index = MixPRIndex.from_texts(text, preset="paper", fit_query=False)  # same graph, built once
    literal = MixPR(preset="paper")
    print("== agreement with the paper-literal path, War and Peace, top-100 ==")
    overlaps = []
    for q in WAR_AND_PEACE_QUESTIONS:
        a = index.search(q, k=100)
        b = literal.search(text, q, k=100)
        ov = len({h.start for h in a.hits} & {h.start for h in b.hits}) / 100
        overlaps.append(ov)
        print(f"  {ov:.2f}  {a.mode:>15} / {b.mode:<15} {q}")
    print(f"  min {min(overlaps):.2f}  mean {np.mean(overlaps):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--questions", type=int, default=50, help="questions per task (16k, 128k)")
    ap.add_argument("--questions-1m", type=int, default=10, help="questions per task at 1M")
    ap.add_argument(
        "--nx-max-nodes",
        type=int,
        default=20_000,
        help="run networkx only on graphs up to this many nodes",
    )
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-index", action="store_true")
    ap.add_argument("--skip-agreement", action="store_true")
    ap.add_argument("--skip-recall", action="store_true")
    args = ap.parse_args()
    if not (args.data / "gutenberg").is_dir():
        sys.exit(f"bench_mixpr: no Gutenberg data under {args.data} (use --data)")
    if not args.skip_speed:
        bench_speed(args.data, [10_000, 100_000, 1_000_000], args.nx_max_nodes)
    if not args.skip_index:
        bench_index(args.data, [10_000, 100_000, 1_000_000])
    if not args.skip_agreement:
        bench_agreement(args.data)
    if not args.skip_recall:
        bench_recall(args.data, [16_000, 128_000, 1_000_000], args.questions, args.questions_1m)


if __name__ == "__main__":
    main()
