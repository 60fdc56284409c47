"""Which part of ``mixpr-fused`` costs on bAbI at 16k tokens (issue 45, session 18): the seeds
(MiniLM's list for the whole budget, which restarts a walk of its own) or the kept first hits
(``keep_firsts``)? A diagnosis of the 2026-11-29 ``longctx bench`` run, not a rule change: the
variants run on that run's own questions (seed 0), so nothing here may be adopted without a
check on development samples.

Variants (each reported as ``mixpr-fused``; ``longctx.eval.harness.run`` in this process):

- ``fused``: the method as ``longctx bench`` runs it (since session 19 MiniLM's list for the
  budget, at most 10 sentences: the rule chosen on development samples with
  ``fusion_study.py``; until then its whole list, which ``nokeep`` still seeds);
- ``nokeep``: the same seeds, ``keep_firsts=False``;
- ``five``: only MiniLM's 5 best sentences as seeds, ``keep_firsts=True``.

Run::

    PYTHONPATH=. nice -n 5 python benchmarks/studies/fused_babi_parts.py fused --data ../shared/data
    # then nokeep, five; --cache keeps MiniLM's sentence vectors between runs

Prints one line per task and budget: the variant, the task, the budget and the recall.
"""

from __future__ import annotations

import argparse

from longctx.eval import harness, registry
from longctx.eval.fused import MixPRFusedMethod, _asked
from longctx.eval.methods import _query_embedding, passage_seeds


class _Variant(MixPRFusedMethod):
    #: MiniLM's hits that seed the walk (``None``: the whole budget's list, as the method)
    seeds_kept: int | None = None
    kept_firsts = True

    def select(self, state, query, token_budget):
        if query is None:  # no question: the method's own global ranking
            return super().select(state, query, token_budget)
        index, doc = state
        app = _asked(doc.embeddings @ _query_embedding(doc, query), doc.counts, token_budget)
        app = app if self.seeds_kept is None else app[: self.seeds_kept]
        r = index.search(
            query,
            token_budget=token_budget,
            seeds=passage_seeds(app),
            keep_firsts=self.kept_firsts,
        )
        return doc.spans(sorted(h.source for h in r.hits))


class _NoKeep(_Variant):
    kept_firsts = False


class _Five(_Variant):
    seeds_kept = 5


VARIANTS = {"fused": MixPRFusedMethod, "nokeep": _NoKeep, "five": _Five}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variant", choices=sorted(VARIANTS))
    ap.add_argument("--data", required=True)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--questions", type=int, default=60)
    args = ap.parse_args()
    registry._FUSED["mixpr-fused"] = VARIANTS[args.variant]
    res = harness.run(
        args.data,
        tasks=("babilong",),
        methods=("mixpr-fused",),
        seed=0,
        cache_dir=args.cache,
        babilong_tokens=[16000],
        babilong_questions=[args.questions],
        isolate=False,
    )
    for r in res["results"]:
        print(args.variant, r["task"], r["budget"], f"{r['recall']:.3f}")


if __name__ == "__main__":
    main()
