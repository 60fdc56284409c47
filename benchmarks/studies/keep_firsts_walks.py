"""Query time of ``MixPRIndex.search(seeds=..., keep_firsts=True)`` with one walk (MixPR's own
scores taken from the seeded walk, :func:`longctx.mixpr.seeds.own_scores`, since session 18)
against two walks (the plain walk run again for MixPR's best unit, as before), on Gutenberg books
of about ``--words`` words in all (issue 45).

Both in one process on one index, alternated query by query (which goes first alternates too),
``--rounds`` times over the questions; the two-walk search is the code before with
``own_scores`` patched to always ask for the plain walk (the results are equal, checked here
for every search). Prints the median milliseconds a query of each and their ratio per round.

Run: ``PYTHONPATH=. nice -n 5 python benchmarks/studies/keep_firsts_walks.py --data
../shared/data [--words 1000000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUESTIONS = [
    "Who opened the door of the old house at night?",
    "What did the captain say to the crew before the storm?",
    "Where was the letter hidden?",
    "Why did the young woman leave the town?",
    "What did the doctor find in the garden?",
    "Who was waiting by the river at dawn?",
    "How did they cross the mountains in winter?",
    "What gift did the king give his daughter?",
    "Which ship sailed for the island?",
    "What happened at the dinner party?",
    "Who rang the bell in the church tower?",
    "Where did the children hide from the rain?",
]


def two_walks(session, scores, used, walk, hybrid):
    return scores if used != "local" else None


def main(argv=None):
    import longctx.mixpr.index as index_module
    from longctx.mixpr import MixPRIndex
    from longctx.mixpr.seeds import Seed, rank_weight

    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--words", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args(argv)
    texts, words = [], 0
    for f in sorted((args.data / "gutenberg").glob("*.txt")):
        t = f.read_text(encoding="utf-8", errors="replace")
        w = t.split()
        if words + len(w) > args.words:  # the last book cut at the word count
            t = " ".join(w[: args.words - words])
            w = w[: args.words - words]
        texts.append(t)
        words += len(w)
        if words >= args.words:
            break
    t0 = time.perf_counter()
    ix = MixPRIndex.from_texts(texts)
    print(
        f"{len(texts)} books, {words:,} words, {ix.n_units:,} units, "
        f"build {time.perf_counter() - t0:.1f} s"
    )
    rng = np.random.default_rng(0)
    seeds = []
    for _ in QUESTIONS:  # the app's 5 hits: spans of random units
        units = rng.integers(ix.n_units, size=5)
        seeds.append(
            [
                Seed(
                    ix.doc_ids[int(ix.unit_source[u])],
                    int(ix.starts[u]),
                    int(ix.ends[u]),
                    rank_weight(r),
                )
                for r, u in enumerate(units.tolist())
            ]
        )
    real = index_module.own_scores

    def timed(which, q, s):
        index_module.own_scores = real if which == "one" else two_walks
        try:
            t = time.perf_counter()
            r = ix.search(q, k=args.k, mode="local", seeds=s, keep_firsts=True)
            return time.perf_counter() - t, r
        finally:
            index_module.own_scores = real

    for q, s in zip(QUESTIONS, seeds):  # warm-up (first-query caches), and equal results
        a, b = timed("one", q, s)[1], timed("two", q, s)[1]
        assert a.hits == b.hits and a.info == b.info, q
    ratios = []
    for r in range(args.rounds):
        got = {"one": [], "two": []}
        for i, (q, s) in enumerate(zip(QUESTIONS, seeds)):
            order = ("one", "two") if (i + r) % 2 == 0 else ("two", "one")
            for which in order:
                got[which].append(timed(which, q, s)[0])
        one, two = np.median(got["one"]) * 1e3, np.median(got["two"]) * 1e3
        ratios.append(two / one)
        print(f"round {r}: one walk {one:.1f} ms, two walks {two:.1f} ms, ratio {two / one:.2f}")
    print(
        f"ratio two / one walk over rounds: median {np.median(ratios):.2f}, "
        f"{min(ratios):.2f}-{max(ratios):.2f}"
    )


if __name__ == "__main__":
    main()
