"""Many small inserts into a large MixPR index: each should cost time in proportion to the
inserted text, not to the index (issue 35: 1,000 one-sentence inserts into a 1M-word index took
21.6 ms each when each added a new word, ten times a full build).

Usage::

    python benchmarks/bench_mixpr_insert.py [--data ../shared/data] [--words 1.0] [--n 1000]
        [--check]

The corpus is bench_mixpr_growth's (Gutenberg books in INDEX.tsv order, ``--words`` million
words). Times: the full build; ``--n`` inserts of one sentence each, every one holding a word
the index has never seen (``"The traveller zqxa<i> reached the castle at dawn."``), then ``--n``
of known words only; the same ``--n`` sentences as one batched insert into a fresh copy; one
search after the inserts (it pays for the IDF and the TF-IDF rows once). ``--check``: the
searches after the inserts equal those of a fresh build of the same documents (hits and scores
to the last bit).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_mixpr_growth import QUESTIONS, corpus  # noqa: E402


def _word(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(97 + r) + s
    return "zqx" + s


def main() -> None:
    from longctx.mixpr import MixPRIndex

    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--words", type=float, default=1.0)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    docs = corpus(args.data, int(args.words * 1e6))
    texts, ids = [t for _, t in docs], [d for d, _ in docs]
    t0 = time.perf_counter()
    index = MixPRIndex.from_texts(texts, ids=ids)
    build = time.perf_counter() - t0
    index.search(QUESTIONS[0], k=100, mode="local")
    print(f"build {args.words}M words: {build:.2f} s, {index.n_units} units, "
          f"{index.terms.n_terms} terms")  # fmt: skip
    new = [f"The traveller {_word(i)} reached the castle at dawn." for i in range(args.n)]
    known = [f"The traveller reached the castle at dawn, day {i % 7 + 1}." for i in range(args.n)]
    t0 = time.perf_counter()
    for i, s in enumerate(new):
        index.insert([s], ids=[f"new{i}"])
    t_new = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i, s in enumerate(known):
        index.insert([s], ids=[f"known{i}"])
    t_known = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = index.search(QUESTIONS[1], k=100, mode="local")
    t_search = time.perf_counter() - t0
    print(f"{args.n} one-sentence inserts, each a new word: {t_new:.2f} s "
          f"({1000 * t_new / args.n:.2f} ms each, {t_new / build:.2f}x the build)")  # fmt: skip
    print(f"{args.n} one-sentence inserts, known words: {t_known:.2f} s "
          f"({1000 * t_known / args.n:.2f} ms each)")  # fmt: skip
    print(f"first search after them: {1000 * t_search:.0f} ms")
    batch = MixPRIndex.from_texts(texts, ids=ids)
    t0 = time.perf_counter()
    batch.insert(new, ids=[f"new{i}" for i in range(args.n)])
    print(f"the {args.n} new-word sentences as one insert: {time.perf_counter() - t0:.3f} s")
    if args.check:
        fresh = MixPRIndex.from_texts(
            texts + new + known,
            ids=ids + [f"new{i}" for i in range(args.n)] + [f"known{i}" for i in range(args.n)],
        )
        for q in QUESTIONS[:5]:
            a, b = index.search(q, k=100, mode="local"), fresh.search(q, k=100, mode="local")
            assert [(h.source, h.start, h.score) for h in a.hits] == [
                (h.source, h.start, h.score) for h in b.hits
            ], q
        assert r.hits == fresh.search(QUESTIONS[1], k=100, mode="local").hits
        print("searches after the inserts equal a fresh build's, bit for bit")


if __name__ == "__main__":
    main()
