"""Are MixPR's explanations useful on real multi-hop questions? On ``longctx bench``'s
``hotpotqa-corpus`` task (991 HotpotQA passages, 100 questions, two gold passages each), how
often does the explanation of a *second-hop* gold passage name the *first* gold passage, or a
phrase of it, as the bridge that carried the walk there?

For each bridge question (HotpotQA ``type == "bridge"``) the second-hop gold passage is the
gold passage whose title the other gold passage mentions (the bridge entity; when neither or
both do, the one the question's words match less: the lower first-hop part of its score).
Searched like the bench's ``mixpr`` method (``MixPRIndex.from_texts(passages, chunk=False)``,
``walk="auto"``: the multi-hop walk when the question names a phrase of the corpus) with
``explain=True`` at ``k`` (default 10). Of the second-hop gold passages returned, it counts

- ``via first gold``: a path of the explanation (its five best) is ``question -> first gold
  passage -> phrase -> hit``;
- ``phrase of first gold``: the best path's phrase is one of the first gold passage's phrases
  (:class:`longctx.mixpr.phrases.PhraseExtractor` over its text), whichever passage it came
  from;

and prints three worked examples (question, hit, explanation), those of ``docs/guide/why.md``.
It also times the same searches with ``explain=False`` and ``explain=True`` interleaved (the
explanation's cost; noisy on a shared machine: ratios of one run).

Usage::

    python benchmarks/bench_explain_bridges.py [--data ../shared/data] [--k 10] [--examples 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from longctx.eval.tasks import hotpotqa_corpus
from longctx.explain import explanation_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.phrases import PhraseExtractor

REPO = Path(__file__).resolve().parents[1]


def second_hop(question, corpus, first_part: dict) -> tuple[int, int] | None:
    """``(first, second)`` gold passages of a bridge question, or None for another kind."""
    if question.kind != "bridge" or len(question.gold) != 2:
        return None
    a, b = question.gold
    title = {p: corpus.titles[p].lower() for p in (a, b)}
    text = {p: corpus.passages[p].lower() for p in (a, b)}
    a_names_b = title[b] in text[a]
    b_names_a = title[a] in text[b]
    if a_names_b != b_names_a:
        return (a, b) if a_names_b else (b, a)
    fa, fb = first_part.get(a, 0.0), first_part.get(b, 0.0)
    return (a, b) if fa >= fb else (b, a)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--examples", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="timing rounds (interleaved)")
    args = ap.parse_args()

    corpus = hotpotqa_corpus(args.data, 100)
    index = MixPRIndex.from_texts(list(corpus.passages), ids=list(corpus.titles), chunk=False)
    extractor = PhraseExtractor()
    n_bridge = found = via_first = phrase_first = multihop = 0
    examples = []
    other: dict = {}
    for q in corpus.questions:
        r = index.search(q.query, k=args.k, explain=True)
        by_pos = {h.source: h for h in r.hits}  # chunk=False: a hit is a passage
        first_part = {
            p: h.explanation["parts"].get(
                "first_hop", h.explanation["parts"].get("restart_lexical", 0.0)
            )
            for p, h in by_pos.items()
        }
        pair = second_hop(q, corpus, first_part)
        if pair is None:
            continue
        n_bridge += 1
        first, second = pair
        hit = by_pos.get(second)
        if hit is None:
            continue
        found += 1
        e = hit.explanation
        multihop += e["walk"] == "multihop"
        paths = e.get("paths") or []
        through = [
            p
            for p in paths
            if len(p["path"]) == 4 and p["path"][1]["doc_id"] == corpus.titles[first]
        ]
        via_first += bool(through)
        if not through:  # what the explanation names instead
            top = paths[0]["path"] if paths else None
            kind = ("no path" if top is None else "a phrase of the question" if len(top) == 3
                    else "another passage")  # fmt: skip
            other[kind] = other.get(kind, 0) + 1
        if paths:
            phrase = paths[0]["path"][-2]["phrase"]
            phrase_first += phrase in set(extractor.phrases(corpus.passages[first]))
        if through and paths[0] is through[0] and len(examples) < args.examples:
            examples.append((q.query, corpus.titles[second], corpus.titles[first], e))
    print(f"hotpotqa-corpus: {len(corpus.passages)} passages, {len(corpus.questions)} questions, "
          f"{n_bridge} bridge questions; k={args.k}")  # fmt: skip
    print(f"second-hop gold passage returned: {found}/{n_bridge} "
          f"({multihop} of them scored by the multi-hop walk)")  # fmt: skip
    if found:
        print(f"  explanation's paths go through the first gold passage: {via_first}/{found} "
              f"= {via_first / found:.0%}")  # fmt: skip
        print(f"  the others' best path: {other}")
        print(f"  the best path's phrase is a phrase of the first gold passage: "
              f"{phrase_first}/{found} = {phrase_first / found:.0%}")  # fmt: skip
    for question, hit, first, e in examples:
        print()
        print(f"Q: {question}")
        print(f"hit: {hit}   (first gold: {first})")
        print(f"why: {explanation_text(e)}")
    # the explanation's cost: the same searches off and on, interleaved
    off, on = [], []
    for _ in range(args.repeats):
        for q in corpus.questions:
            t0 = time.perf_counter()
            index.search(q.query, k=args.k)
            t1 = time.perf_counter()
            index.search(q.query, k=args.k, explain=True)
            t2 = time.perf_counter()
            off.append(t1 - t0)
            on.append(t2 - t1)
    mo, mn = statistics.median(off), statistics.median(on)
    print()
    print(f"query time, median of {len(off)}: explain=False {mo * 1e3:.2f} ms, explain=True "
          f"{mn * 1e3:.2f} ms (x{mn / mo:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
