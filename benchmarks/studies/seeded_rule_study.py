"""Why the app's seeds pull MixPR's walk off its own hits, and which rule keeps both (issue 45).

The walk is linear in its restart: with the seeds' share ``s`` of the restart, the seeded walk's
scores are ``(1 - s) * plain + s * walk_from_seeds``. The plain walk spreads its restart over
every unit sharing a term with the question; the seeds' walk puts its share on the few units of
the app's 5 hits, so at 75% those units take the top ranks and push MixPR's own best units past
a small budget. The rules compared here, each built from the two walks computed apart:

- ``mixpr-seeded``: the shipped method (before issue 45's change: one walk on the restart
  ``lexical + 3 * seeds``);
- ``interleave``: the two rankings taken in turn (MixPR's first, then the seeds' walk's first,
  ...): the score of a unit is ``1 / rank`` in the ranking where it ranks best;
- ``max-norm w``: each walk's score divided by its maximum, the seeds' times ``w``, added;
- ``rrf``: reciprocal-rank fusion (``1 / (60 + rank)`` summed, Cormack et al., 2009);
- ``restart-max c``: one walk on the question's restart and the seeds', each divided by its own
  maximum (``c`` times the seeds'), from the two walks by linearity.

``max-norm 1`` is the shipped rule (:meth:`longctx.mixpr.edges.QueryEdgesBlock.scores_seeded`);
its column equals ``mixpr-seeded``'s own ``longctx bench`` run. Results:
``docs/notes/mixpr-recall.md`` ("Hybrid over the app's retriever").

Run: ``PYTHONPATH=. python benchmarks/studies/seeded_rule_study.py --data ../shared/data
[--questions 100] [--cache DIR]``; prints one markdown table (recall per cell).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np


def _ranks(scores: np.ndarray) -> np.ndarray:
    """``(n,)`` 1-based rank of each unit by descending score (ties to the earlier unit); units
    scoring <= 0 get ``inf``."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    r = np.empty(len(scores))
    r[order] = np.arange(1, len(scores) + 1)
    r[scores <= 0] = np.inf
    return r


def _by_max(x):
    m = float(x.max()) if len(x) else 0.0
    return x / m if m > 0 else x


def combine(rule: str, plain: np.ndarray, seeded: np.ndarray) -> np.ndarray:
    """The hybrid's unit scores under ``rule`` from the plain walk's and the seeds' walk's."""
    if rule == "interleave":
        ra, rb = _ranks(plain), _ranks(seeded)
        # MixPR's rank r before the seeds' rank r: 1/r against 1/(r + 0.5)
        return np.maximum(1.0 / ra, 1.0 / (rb + 0.5))
    if rule.startswith("max-norm"):
        w = float(rule.split()[1])
        return _by_max(plain) + w * _by_max(seeded)
    if rule == "rrf":
        ra, rb = _ranks(plain), _ranks(seeded)
        return 1.0 / (60 + ra) + 1.0 / (60 + rb)
    raise ValueError(rule)


RULES = ["interleave", "max-norm 1", "max-norm 0.5", "rrf", "restart-max 1", "restart-max 0.5"]


def walk_parts(index, query, seeds=None):
    """``(x, peak)`` of ``index``'s walk for ``query``: the walk's mass ``(n,)`` and the largest
    weight of its restart distribution (summing to 1); with ``seeds``, those of the seeds' own
    walk (``seed_x``, restart ``seed``); ``None`` when the query is not local or no seed was
    found."""
    from longctx.mixpr.hits import dense_scores
    from longctx.mixpr.seeds import check_seeds

    keep = {}
    seeds = None if seeds is None else check_seeds(seeds)
    _, used, _, _ = index._score(index._state, query, "auto", None, None, None, seeds, keep)
    s = keep.get("session", {})
    x, w = ("seed_x", "seed") if seeds is not None else ("x", "w")
    if used != "local" or x not in s:
        return None
    vals = s[w][1]
    return dense_scores(s[x]), float(vals.max() / vals.sum())


def main(argv=None):
    import longctx.eval.harness as harness
    from longctx.eval import markdown, run
    from longctx.eval.methods import MixPRSeededMethod, _query_embedding, get_methods
    from longctx.mixpr import MixPRIndex
    from longctx.mixpr.seeds import Seed, rank_weight
    from longctx.selection import select_top

    class Rule(MixPRSeededMethod):
        def __init__(self, rule):
            super().__init__()
            self.rule = self.name = rule

        def build(self, doc):
            doc.embeddings  # noqa: B018
            kw = dict(token_counter=doc.ctx.token_counter)
            plain = MixPRIndex.from_texts(doc.text, **kw)
            bare = MixPRIndex.from_texts(doc.text, lexical_weight=0.0, **kw)
            return plain, bare, doc

        def restart_max(self, plain, bare, query, seeds):
            """One walk on ``u / max(u) + c * v / max(v)`` (``u`` the lexical restart, ``v``
            the seeds', each summing to 1), by linearity from the two walks; plus the lexical
            bonus as the plain score has it."""
            c = float(self.rule.split()[1])
            a = plain.score(query, "auto")[0]
            pu = walk_parts(bare, query)
            pv = walk_parts(plain, query, seeds)
            if pu is None or pv is None:
                return a
            xu = pu[0]
            lex = a - xu / xu.max()  # the plain score's lexical bonus
            pi = xu / pu[1] + c * pv[0] / pv[1]
            return pi / pi.max() + lex

        def select(self, state, query, token_budget):
            plain, bare, doc = state
            if query is None:
                r = plain.search("", token_budget=token_budget, mode="global")
                return [(h.start, h.end) for h in r.hits]
            top = self._top(doc.embeddings, _query_embedding(doc, query))
            seeds = [Seed("0", *doc.sentences[i], rank_weight(r)) for r, i in enumerate(top)]
            if self.rule.startswith("restart-max"):
                s = self.restart_max(plain, bare, query, seeds)
            else:
                a = plain.score(query, "auto")[0]
                pv = walk_parts(plain, query, seeds)  # the seeds' own walk
                s = a if pv is None else combine(self.rule, a, pv[0])
            idx = select_top(s, token_budget=token_budget, token_counts=plain.token_counts)
            st, en = plain.starts, plain.ends
            return [(int(st[i]), int(en[i])) for i in idx]

    p = argparse.ArgumentParser()
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--cache", type=Path, default=None, help="longctx bench --cache folder")
    p.add_argument("--tasks", nargs="+", default=["squad", "narrativeqa", "hotpotqa"])
    p.add_argument("--rules", nargs="+", default=RULES)
    args = p.parse_args(argv)

    def methods(names):
        return [Rule(n) if n in RULES else get_methods([n])[0] for n in names]

    harness.get_methods = methods
    result = run(
        args.data, tasks=args.tasks, methods=["minilm", "mixpr", "mixpr-seeded", *args.rules],
        n_questions=args.questions, cache_dir=args.cache, isolate=False,
    )  # fmt: skip
    print(markdown(result))


if __name__ == "__main__":
    main()
