"""Which rule fuses MixPR with the app's retriever so that the fused result finds at least what
the better of the two finds (issue 45): rank fusion against score fusion and the seeded walk,
all at the app's grain (MixPR over the ``minilm`` baseline's sentences, passages on a pool, one
unit each, as ``mixpr-fused``), on ``longctx bench``'s tasks.

``mixpr units`` is MixPR over the app's units alone (no fusion: what the grain costs). Each
retriever is asked for what the fused result returns (the token budget's units, ``k``
passages; ``x2``: MixPR for twice that), then:

- ``rrf``: reciprocal rank, equal weights, ``c=60`` (``mixpr-fused`` before this study, and
  the guides' recipe until 2026-11-29);
- ``rrf mixpr x2``: the same with MixPR's list twice as long;
- ``max``: CombSUM of each list's scores divided by that list's maximum (Fox and Shaw, TREC-2,
  1994; a unit absent from a list adds 0);
- ``minmax``: CombSUM of min-max scaled scores over each list, weights 1/2 (LlamaIndex's
  ``QueryFusionRetriever(mode="relative_score")``);
- ``dist``: the same scaled by mean -/+ 3 std (``mode="dist_based_score"``);
- ``seeded`` (the recipe until session 17): MixPR's walk seeded by the app's list
  (:mod:`longctx.mixpr.seeds`, rank weights), MixPR's score plus the seeds' walk, each divided
  by its maximum, the units filling the budget (``seeded 5``: seeded by the app's 5 best only,
  as ``mixpr-seeded``; ``seeded k/2`` / ``seeded 2k``: the app asked for half / twice what the
  fused result returns);
- ``firsts``: ``seeded`` with MixPR's own best unit and the app's first unit kept first (MixPR's
  best from a plain :meth:`longctx.MixPRIndex.score`); ``mixpr first``: MixPR's only;
- ``alt plain``: plain MixPR's ranking and the seeded one taken in turn; ``alt app``: the seeded
  ranking and the app's list taken in turn;
- ``mixpr-fused`` (the recipe now, :class:`longctx.eval.fused.MixPRFusedMethod`): ``firsts`` as
  the core does it (``MixPRIndex.search(keep_firsts=True)``); equal to ``firsts`` to the digit
  on the development runs.

- ``firsts plain``, ``firsts reached``, ``firsts majority`` (session 21,
  :data:`FIRSTS_RULES`): the shipped ``mixpr-fused`` with its order changed (``firsts 21``:
  the shipped order by the same code, a check that it equals ``mixpr-fused``).

The earlier version of this study (grain variants of ``rrf``: MixPR's own units, whole rankings,
``c=10``) is at commit 7fdadca.

Choose on one sample, check on another: ``--seed 1`` draws other SQuAD / NarrativeQA questions;
HotpotQA always takes its first examples, so ``--questions 50`` there is the first half.

Run: ``PYTHONPATH=. python benchmarks/studies/fusion_study.py --data ../shared/data
[--questions 100] [--seed 1] [--tasks ...] [--cache /tmp/fusion_bench_cache]``; prints one
markdown table.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

RULES = ("mixpr units", "rrf", "rrf mixpr x2", "max", "minmax", "dist", "seeded 5")
#: The rules of session 17 (issue 45's fusion item): the seeded walk with the app asked for
#: half / twice as much; each list's first unit kept (MixPR's own and the app's, or MixPR's
#: only), then the seeded order; plain MixPR's ranking and the seeded one taken in turn; the
#: seeded ranking and the app's list taken in turn.
SEEDED_RULES = (
    "seeded",
    "seeded k/2",
    "seeded 2k",
    "firsts",
    "mixpr first",
    "alt plain",
    "alt app",
)


#: The rules of session 19 (issue 45): ``kf N``: ``mixpr-fused`` (each retriever's first hit
#: kept) with at most the app's ``N`` best of its list for the budget or ``k`` as seeds
#: (``all``: the whole list, the method until session 19; ``kf 10``: the method since); ``nk
#: N``: the same seeds, ``keep_firsts=False`` (the seeded walk at the app's grain). The
#: development runs of session 19 asked the pool's app for ``N`` whatever ``k`` (the figures
#: of ``N`` = 3 ... all were equal there).
SEED_COUNTS = {"3": 3, "5": 5, "10": 10, "all": None}
SEED_COUNT_RULES = tuple(f"{p} {n}" for p in ("kf", "nk") for n in SEED_COUNTS)


def seed_count_variant(rule: str):
    """A :class:`~longctx.eval.fused.MixPRFusedMethod` by a rule of :data:`SEED_COUNT_RULES`
    (the method's own code, its two settings changed)."""
    from longctx.eval.fused import MixPRFusedMethod

    keep, n = rule.split()
    m = MixPRFusedMethod()
    m.name, m.n_seeds, m.keep_firsts = rule, SEED_COUNTS[n], keep == "kf"
    return m


#: The rules of session 21 (issue 45, the four cells of ``docs/bench.json`` still under the
#: better single retriever): each a change of the shipped ``mixpr-fused`` (each retriever's
#: first hit kept, at most 10 seeds) in one sentence:
#:
#: - ``firsts plain``: MixPR's own best and the app's first come first, then plain MixPR's
#:   order (the app's list changes nothing else: the loss against MixPR is bounded to the
#:   last slot);
#: - ``firsts reached``: the app's first is kept only where MixPR's own walk reaches it (its
#:   plain score above 0: lexical evidence), then the seeded order;
#: - ``firsts majority``: the app's first is kept, but never in the first two places (in
#:   every prefix of the result the app's kept hit is under half: MixPR's best, then the
#:   seeded order's next unit, then the app's first, then the seeded order). On a budget of
#:   two units or a ranking cut at 2 (the pool's R@2: the harness ranks once for the largest
#:   ``k``) the app's first is then not kept.
FIRSTS_RULES = ("firsts plain", "firsts reached", "firsts majority")


def firsts_order(rule, plain, seeded, app) -> np.ndarray:
    """``(n,)`` scores ordering the units by a rule of :data:`FIRSTS_RULES` (``"firsts 21"``:
    the shipped ``keep_firsts``): ``plain`` / ``seeded``: MixPR's scores without / with the
    seeds, ``app``: the app's list best first (its first is the unit the seeds weigh
    most)."""
    from longctx.eval.methods import top_k
    from longctx.mixpr.seeds import best_unit

    best = best_unit(plain)
    own = [] if best is None else [best[1]]
    first = app[:1]
    if rule == "firsts reached":
        first = [i for i in first if plain[i] > 0]
    elif rule == "firsts majority" and first:  # the seeded order's next units before it
        rest = (i for i in top_k(seeded, len(seeded)) if i not in (*own, *first))
        own += [i for i, _ in zip(rest, range(2 - len(own)))]
    return kept_first(plain if rule == "firsts plain" else seeded, [*own, *first])


#: Per ``(rule, what)``: how often a rule of :data:`FIRSTS_RULES` changed the shipped order
#: (``"first 2"`` / ``"first 10"``: its first units differ from ``"firsts 21"``'s), and how
#: often the app's first scored 0 in plain MixPR (``"app first unreached"``), over its calls.
CHANGES: Counter = Counter()


def count_change(rule, plain, seeded, app, order) -> None:
    """Add one call of ``rule`` to :data:`CHANGES` (``order``: its :func:`firsts_order`)."""
    from longctx.eval.methods import top_k

    ship = top_k(firsts_order("firsts 21", plain, seeded, app), 10)
    got = top_k(order, 10)
    CHANGES[(rule, "calls")] += 1
    CHANGES[(rule, "app first unreached")] += bool(app) and not plain[app[0]] > 0
    CHANGES[(rule, "first 2")] += set(ship[:2]) != set(got[:2])
    CHANGES[(rule, "first 10")] += ship != got


def firsts_variant(rule: str):
    """The shipped ``mixpr-fused`` (:class:`~longctx.eval.fused.MixPRFusedMethod`: the app
    asked for what the result holds, at most 10 as seeds) ordered by ``rule`` of
    :data:`FIRSTS_RULES` (``"firsts 21"``: as the core's ``keep_firsts``, a check)."""
    from longctx.eval.fused import MixPRFusedMethod, _asked
    from longctx.eval.methods import _query_embedding, passage_seeds, top_k
    from longctx.selection import select_top

    def walks(index, query, app):
        plain = np.asarray(index.score(query, "auto")[0], dtype=np.float64)
        seeds = passage_seeds(app[:10])
        return plain, np.asarray(index.score(query, "auto", seeds=seeds)[0], dtype=np.float64)

    class Firsts(MixPRFusedMethod):
        def select(self, state, query, token_budget):
            index, doc = state
            if query is None:
                return super().select(state, query, token_budget)
            dense = doc.embeddings @ _query_embedding(doc, query)
            app = _asked(dense, doc.counts, token_budget)
            plain, seeded = walks(index, query, app)
            order = firsts_order(rule, plain, seeded, app)
            count_change(rule, plain, seeded, app, order)
            idx = select_top(order, token_budget=token_budget, token_counts=doc.counts)
            return doc.spans(idx.tolist())

        def rank(self, state, query, k):
            index, ctx, vectors = state
            dense = vectors @ np.asarray(ctx.encoder.embed_query(query), dtype=np.float32)
            app = top_k(dense, min(k, 10))
            plain, seeded = walks(index, query, app)
            order = firsts_order(rule, plain, seeded, app)
            count_change(rule, plain, seeded, app, order)
            return top_k(order, k)

    m = Firsts()
    m.name = rule
    return m


def under_best(results: list[dict], rules) -> list[dict]:
    """Per rule: the cells (task, budget) where its recall is under ``max(mixpr, minilm)``
    (by more than 1e-9), of how many, and the mean of rule minus that max over the cells."""
    at = {(r["task"], r["budget"], r["method"]): r["recall"] for r in results}
    cells = sorted({(t, b) for t, b, m in at if m == "mixpr"}, key=str)
    out = []
    for rule in rules:
        diffs = [
            at[(t, b, rule)] - max(at[(t, b, "mixpr")], at[(t, b, "minilm")])
            for t, b in cells
            if (t, b, rule) in at and (t, b, "minilm") in at
        ]
        out.append(
            {
                "rule": rule,
                "under": sum(d < -1e-9 for d in diffs),
                "cells": len(diffs),
                "mean": float(np.mean(diffs)) if diffs else float("nan"),
                "worst": float(min(diffs)) if diffs else float("nan"),
            }
        )
    return out


def kept_first(scores: np.ndarray, firsts: list[int]) -> np.ndarray:
    """``scores`` (>= 0) with the units of ``firsts`` raised above every other unit, in the
    order given."""
    out = np.asarray(scores, dtype=np.float64).copy()
    top = float(out.max()) if len(out) else 0.0
    for r, i in enumerate(dict.fromkeys(firsts)):
        out[i] = top + 1.0 + len(firsts) - r
    return out


def in_turn(rankings: list[list[int]], n: int) -> np.ndarray:
    """``(n,)`` scores ordering the units by taking the rankings' next new unit in turn."""
    out, seen, pos = np.zeros(n), set(), [0] * len(rankings)
    while len(seen) < n and any(p < len(r) for p, r in zip(pos, rankings)):
        for j, r in enumerate(rankings):
            while pos[j] < len(r) and r[pos[j]] in seen:
                pos[j] += 1
            if pos[j] < len(r):
                seen.add(r[pos[j]])
                out[r[pos[j]]] = n + 1 - len(seen)
                pos[j] += 1
    return out


def scaled(scores: np.ndarray, items: list[int], how: str) -> dict[int, float]:
    """``items``' scores scaled over ``items`` (``max``, ``minmax`` or ``dist``)."""
    s = np.asarray([scores[i] for i in items], dtype=np.float64)
    if not len(s):
        return {}
    if how == "max":
        lo, hi = 0.0, float(s.max())
    elif how == "minmax":
        lo, hi = float(s.min()), float(s.max())
    else:
        mean, std = float(s.mean()), float(s.std())
        lo, hi = mean - 3 * std, mean + 3 * std
    if hi <= lo:
        return dict.fromkeys(items, 1.0 if hi > 0 else 0.0)
    return {i: (float(scores[i]) - lo) / (hi - lo) for i in items}


def fused_scores(rule, mixpr, dense, lists, n) -> np.ndarray:
    """``(n,)`` fused scores (0: in no list) of the two asked ``lists`` by ``rule``."""
    from longctx.fusion import reciprocal_rank_fusion

    out = np.zeros(n)
    if rule.startswith("rrf"):
        order = [key for key, _ in reciprocal_rank_fusion(lists)]
        out[order] = np.arange(len(order), 0, -1)
        return out
    for scores, items in zip((mixpr, dense), lists):
        for i, v in scaled(scores, items, rule).items():
            out[i] += v + 1e-12  # a listed unit stays above the unlisted ones
    return out


def variant(rule):
    from longctx.eval.fused import MixPRFusedMethod, _asked
    from longctx.eval.methods import GLOBAL_QUERY, _query_embedding, passage_seeds, top_k
    from longctx.selection import select_top

    class Variant(MixPRFusedMethod):
        def _seeded(self, index, query, dense_list):
            seeds = passage_seeds(dense_list[:5])
            return np.asarray(index.score(query, "auto", seeds=seeds)[0], dtype=np.float64)

        def select(self, state, query, token_budget):
            index, doc = state
            if query is None:
                return super().select(state, query, token_budget)
            mixpr = np.asarray(index.score(query or GLOBAL_QUERY, "auto")[0], dtype=np.float64)
            dense = doc.embeddings @ _query_embedding(doc, query)
            d_list = _asked(dense, doc.counts, token_budget)
            if rule in SEEDED_RULES:
                return doc.spans(self._rule_budget(index, query, mixpr, dense, doc, token_budget))
            if rule in ("seeded 5", "mixpr units"):
                s = self._seeded(index, query, d_list) if rule == "seeded 5" else mixpr
                idx = select_top(s, token_budget=token_budget, token_counts=doc.counts)
                return doc.spans(idx.tolist())
            m_budget = token_budget * (2 if rule.endswith("x2") else 1)
            lists = [_asked(mixpr, doc.counts, m_budget), d_list]
            fused = fused_scores(rule, mixpr, dense, lists, len(doc.sentences))
            idx = select_top(fused, token_budget=token_budget, token_counts=doc.counts)
            return doc.spans([i for i in idx.tolist() if fused[i] > 0])

        def _rule(self, index, query, mixpr, app, asked, n):
            """``(n,)`` scores of a rule of ``SEEDED_RULES``; ``app(size)``: the app's list
            for a size (``asked``: the fused result's)."""
            a = app(asked if rule not in ("seeded k/2", "seeded 2k") else None)
            seeds = passage_seeds(a)
            seeded = np.asarray(index.score(query, "auto", seeds=seeds)[0], dtype=np.float64)
            if rule in ("seeded", "seeded k/2", "seeded 2k"):
                return seeded
            if rule == "firsts":
                return kept_first(seeded, [int(np.argmax(mixpr)), *a[:1]])
            if rule == "mixpr first":
                return kept_first(seeded, [int(np.argmax(mixpr))])
            other = top_k(mixpr, n) if rule == "alt plain" else a
            return in_turn([top_k(seeded, n), other], n)

        def _rule_budget(self, index, query, mixpr, dense, doc, token_budget):
            def app(size):
                if size is None:
                    size = max(1, token_budget // 2) if rule == "seeded k/2" else 2 * token_budget
                return _asked(dense, doc.counts, size)

            s = self._rule(index, query, mixpr, app, token_budget, len(doc.sentences))
            return select_top(s, token_budget=token_budget, token_counts=doc.counts).tolist()

        def rank(self, state, query, k):
            index, ctx, vectors = state
            dense = vectors @ np.asarray(ctx.encoder.embed_query(query), dtype=np.float32)
            d_list = top_k(dense, k)
            if rule in SEEDED_RULES:
                mixpr = np.asarray(index.score(query, "auto")[0], dtype=np.float64)

                def app(size):
                    if size is None:
                        size = max(1, k // 2) if rule == "seeded k/2" else 2 * k
                    return top_k(dense, size)

                return top_k(self._rule(index, query, mixpr, app, k, len(vectors)), k)
            if rule == "seeded 5":
                return top_k(self._seeded(index, query, d_list), k)
            mixpr = np.asarray(index.score(query, "auto")[0], dtype=np.float64)
            if rule == "mixpr units":
                return top_k(mixpr, k)
            lists = [top_k(mixpr, k * (2 if rule.endswith("x2") else 1)), d_list]
            return top_k(fused_scores(rule, mixpr, dense, lists, len(vectors)), k)

    m = Variant()
    m.name = rule
    return m


def study_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments of this study and of ``fusion_paired.py``: data, questions, seed, cache,
    tasks."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache", type=Path, default=Path("/tmp/fusion_bench_cache"))
    p.add_argument(
        "--tasks", nargs="+", default=["squad", "narrativeqa", "hotpotqa", "hotpotqa-corpus"]
    )
    return p


def main(argv=None):
    from longctx.eval import markdown, registry, run, tasks

    p = study_arguments(" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument(
        "--rules",
        nargs="+",
        default=list(RULES + SEEDED_RULES + SEED_COUNT_RULES + FIRSTS_RULES),
        help="also 'firsts 21': the shipped mixpr-fused by firsts_variant's code (a check)",
    )
    p.add_argument(
        "--hotpot-offset",
        type=int,
        default=0,
        help="the first HotpotQA example asked (both HotpotQA tasks; 60: past the table's)",
    )
    p.add_argument("--babilong-tokens", type=int, nargs="+", default=[16000])
    args = p.parse_args(argv)
    if args.hotpot_offset:  # the development half: the loaders ask from there on
        tasks.hotpotqa = partial(tasks.hotpotqa, offset=args.hotpot_offset)
        tasks.hotpotqa_corpus = partial(tasks.hotpotqa_corpus, offset=args.hotpot_offset)

    # the rules join the fused methods of the registry, for this process only
    def maker(r):
        if r in SEED_COUNT_RULES:
            return seed_count_variant
        return firsts_variant if r in FIRSTS_RULES or r == "firsts 21" else variant

    made = {r: partial(maker(r), r) for r in args.rules}
    registry._FUSED.update(made)
    registry._OWN.update(made)  # get_methods' table (since garlic's module, 578b3bf)
    names = ["mixpr", "minilm", "mixpr-fused", *args.rules]
    kw = {
        "n_questions": args.questions,
        "seed": args.seed,
        "cache_dir": args.cache,
        "isolate": False,
        "babilong_tokens": args.babilong_tokens,
        "babilong_questions": [args.questions],
    }
    result = run(args.data, tasks=args.tasks, methods=names, **kw)
    print(markdown(result), flush=True)
    print("\n| rule | cells under max(mixpr, minilm) | mean (rule - max) | worst |")
    print("|---|---|---|---|")
    for r in under_best(result["results"], ["mixpr-fused", *args.rules]):
        print(
            f"| {r['rule']} | {r['under']} / {r['cells']} | {r['mean']:+.4f} | {r['worst']:+.3f} |"
        )
    if CHANGES:
        print("\n| rule | calls | app's first unreached | first 2 changed | first 10 changed |")
        print("|---|---|---|---|---|")
        for r in dict.fromkeys(rule for rule, _ in CHANGES):
            n = [CHANGES[(r, w)] for w in ("calls", "app first unreached", "first 2", "first 10")]
            print("| " + " | ".join([r, *map(str, n)]) + " |")


if __name__ == "__main__":
    main()
