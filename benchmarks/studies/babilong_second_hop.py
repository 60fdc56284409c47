"""Study: what the second (and third) supporting fact of a BABILong question needs at scale
(issue 36, ``docs/notes/mixpr-scale.md`` sec. 5.3).

The haystack, the stories and the hit rule are those of ``benchmarks/bench_mixpr_babilong.py``
(same seed, same 20 stories a task, k = 100 units). Two second hops are measured beside MixPR's
defaults:

- ``--bridge BETA``: a *bridge-entity* hop after the question's own search. The names in the
  first hop's ``--top-m`` best units that the question does not hold (a word counts as a name
  when at least 9 of 10 of its mid-sentence occurrences in the haystack are capitalised, or it
  never occurs mid-sentence and is capitalised) are each asked alone, and their scores, each
  divided by its maximum, are added to the question's (divided by its maximum) with weight
  ``BETA / number of names``. This is the best a lexical retriever can do with the bridge
  (the second fact, "Mary journeyed to the kitchen.", holds the name and no word of the
  question): the second fact then ranks as a one-fact question on the name alone ranks it
  (bAbI qa1, "Where is Mary?").
- ``--hybrid``: MixPR's hybrid mode (``dense_weight``, ``dense_restart``, ``dense_top_k``; set them
  with ``--set``) with all-MiniLM-L6-v2 unit vectors read from the bench's ``--cache`` (the
  ``minilm-{words}-{units}.npy`` files ``bench_mixpr_babilong.py --minilm --cache`` writes; a
  missing file is an error, not a two-hour embedding run).

Usage::

    python benchmarks/studies/babilong_second_hop.py --size 1 --tasks qa2,qa3 --bridge 1
    python benchmarks/studies/babilong_second_hop.py --size 1 --tasks qa1 --hybrid \\
        --cache /tmp/babi/cache --set dense_weight=1.0 --set dense_top_k=50

Prints each question's supporting-fact ranks (1-based, among all units; ``None``: past rank
5,000) and the share of questions with every fact in the top 20 / 50 / 100, for the defaults and
for the second hop.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_mixpr_babilong as bench  # noqa: E402

from longctx.eval.tasks import babi_questions  # noqa: E402

WORD = re.compile(r"[A-Za-z]+")
MID = re.compile(r"[a-z,;] +([A-Za-z]+)")
RANK_LIMIT = 5000


class Names:
    """Capitalisation counts of the haystack's mid-sentence words (after a lowercase word,
    comma or semicolon): a word (not an English stop word) is a name when 9 of 10 of those occurrences are capitalised,
    or when it has none and is capitalised where it stands."""

    def __init__(self, docs):
        self.cap, self.low = Counter(), Counter()
        for d in docs:
            for w in MID.findall(d):
                (self.cap if w[0].isupper() else self.low)[w.lower()] += 1

    def __call__(self, text: str, exclude: set[str]) -> set[str]:
        out = set()
        for w in WORD.findall(text):
            lw = w.lower()
            if not w[0].isupper() or lw in exclude or lw in ENGLISH_STOP_WORDS:
                continue
            c, lo = self.cap[lw], self.low[lw]
            if c + lo == 0 or c >= 9 * lo:
                out.add(w)
        return out


def _hits(st, scores, k):
    order = np.argsort(-scores, kind="stable")[:k]
    return [(int(st.unit_source[i]), int(st.starts[i]), int(st.ends[i])) for i in order]


def _ranks(st, scores, gold):
    order = np.argsort(-scores, kind="stable")[:RANK_LIMIT]
    rank = {int(i): r + 1 for r, i in enumerate(order)}
    src, starts, ends = map(np.asarray, (st.unit_source, st.starts, st.ends))
    out = []
    for d, a, b in gold:
        units = np.flatnonzero((src == d) & (starts < b) & (ends > a))
        found = [rank[int(u)] for u in units if int(u) in rank]
        out.append(min(found) if found else None)
    return out


def build(args, docs, ids):
    from longctx.mixpr import MixPRIndex

    overrides = {}
    for item in args.set or []:
        key, _, val = item.partition("=")
        overrides[key] = json.loads(val)
    if not args.hybrid:
        return MixPRIndex.from_texts(docs, ids=ids, **overrides)
    from longctx.embeddings import SentenceTransformerEncoder

    n_units = MixPRIndex.from_texts(docs, ids=ids).n_units
    path = args.cache / f"minilm-{int(args.size * 1e6)}-{n_units}.npy"
    if not path.exists():
        raise SystemExit(f"--hybrid needs {path} (bench_mixpr_babilong.py --minilm --cache)")
    vectors = np.load(path, allow_pickle=False)
    encoder = SentenceTransformerEncoder(batch_size=128)
    return MixPRIndex.from_texts(docs, ids=ids, encoder=encoder, unit_vectors=vectors, **overrides)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--size", type=float, default=1.0, help="millions of words")
    ap.add_argument("--tasks", default="qa1,qa2,qa3")
    ap.add_argument("--stories", type=int, default=20)
    ap.add_argument("--bridge", type=float, help="weight of the bridge-entity hop")
    ap.add_argument("--top-m", type=int, default=2, help="first-hop units the names come from")
    ap.add_argument("--hybrid", action="store_true", help="MixPR hybrid mode with MiniLM")
    ap.add_argument("--cache", type=Path, help="folder of the bench's MiniLM unit vectors")
    ap.add_argument("--set", action="append", help="a MixPR setting, name=json value")
    args = ap.parse_args(argv)
    if args.hybrid and args.cache is None:
        ap.error("--hybrid needs --cache")

    docs = bench.haystack(args.data, int(args.size * 1e6))
    ids = [f"d{i}" for i in range(len(docs))]
    t0 = time.perf_counter()
    index = build(args, docs, ids)
    print(f"# {index.n_units:,} units, built in {time.perf_counter() - t0:.1f} s", flush=True)
    names = Names(docs)
    qtimes = []
    for sub in args.tasks.split(","):
        rng = random.Random(0)
        qs = list(babi_questions(args.data / "babi" / "en" / f"{bench.TASKS[sub]}_test.txt"))
        picks = rng.sample(qs, min(args.stories, len(qs)))
        first_label = "MixPR hybrid" if args.hybrid else "MixPR"
        got = {first_label: dict.fromkeys(bench.KS, 0), "+ bridge hop": dict.fromkeys(bench.KS, 0)}
        for facts, q, sup, _answer in picks:
            placed = bench.place(rng, docs, facts)
            changed = sorted(placed)
            index.update([placed[d][0] for d in changed], ids=[ids[d] for d in changed])
            span_of = {j: (d, a, b) for d in changed for j, (a, b) in placed[d][1]}
            gold = [span_of[s] for s in sup]
            st = index._state
            t = time.perf_counter()
            first, _, _ = index.score(q, mode="local")
            scores = first / first.max()
            bridges: set[str] = set()
            if args.bridge:
                asked = {w.lower() for w in WORD.findall(q)}
                for i in np.argsort(-first, kind="stable")[: args.top_m]:
                    bridges |= names(st.unit_text(int(i)), asked)
                for name in sorted(bridges):
                    hop, _, _ = index.score(name, mode="local")
                    if hop.max() > 0:
                        scores = scores + args.bridge * hop / hop.max() / len(bridges)
            qtimes.append(time.perf_counter() - t)
            for label, s in ((first_label, first), ("+ bridge hop", scores)):
                for k, ok in bench.found_at(_hits(st, s, max(bench.KS)), gold).items():
                    got[label][k] += ok
            print(
                f"#   {sub} {q!r}: names {sorted(bridges)} ranks {_ranks(st, first, gold)}"
                f" -> {_ranks(st, scores, gold)}",
                flush=True,
            )
            index.update([docs[d] for d in changed], ids=[ids[d] for d in changed])
        for label, row in got.items():
            cells = " / ".join(f"{row[k] / len(picks):.2f}" for k in bench.KS)
            print(f"| {sub} top 20/50/100 | {label} | {cells} |", flush=True)
    print(f"# query ms (median, both hops): {1000 * float(np.median(qtimes)):.1f}")


if __name__ == "__main__":
    main()
