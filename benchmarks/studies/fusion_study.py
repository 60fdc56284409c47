"""Which reciprocal-rank fusion of MixPR and the app's retriever keeps both retrievers' finds
(issue 45): ``mixpr-fused`` (:class:`longctx.eval.fused.MixPRFusedMethod`) and variants of its
grain, the lists it fuses and ``c``, against ``mixpr`` and ``minilm``, on
``longctx bench``'s document tasks and the passage pool.

Variants: ``units``: MixPR built over MiniLM's sentences, one unit each (the recipe's, as
``mixpr-fused``, which runs beside them);
``grouped``: MixPR's own units (up to 64 words), each sentence scoring its best unit;
``all``: the whole rankings fused (not only what fills the budget); ``cN``: the rank constant.
Every variant weighs both lists equally.

Run: ``PYTHONPATH=. python benchmarks/studies/fusion_study.py --data ../shared/data
[--questions 20] [--cache /tmp/fusion_bench_cache]``; prints one markdown table.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VARIANTS = {  # name -> (grain, fused lists, weights, c); "mixpr-fused" is "units c60"
    "grouped c60": ("grouped", "budget", (1.0, 1.0), 60.0),
    "units all c60": ("units", "all", (1.0, 1.0), 60.0),
    "grouped all c60": ("grouped", "all", (1.0, 1.0), 60.0),
    "units c10": ("units", "budget", (1.0, 1.0), 10.0),
}


def variant(name, grain, lists, weights, c):
    from longctx.eval.fused import MixPRFusedMethod, _asked
    from longctx.eval.methods import GLOBAL_QUERY, MixPRMethod, _query_embedding
    from longctx.selection import select_top

    class Variant(MixPRFusedMethod):
        def build(self, doc):
            if grain == "units":
                return super().build(doc)
            doc.embeddings  # noqa: B018
            return MixPRMethod.build(self, doc), doc

        def _mixpr_scores(self, index, doc, query):
            mode = "global" if query is None else "auto"
            s = np.asarray(index.score(query or GLOBAL_QUERY, mode)[0], dtype=np.float64)
            if grain == "units":
                return s
            starts = np.asarray([a for a, _ in doc.sentences])
            at = np.clip(np.searchsorted(starts, index.starts, side="right") - 1, 0, None)
            out = np.zeros(len(doc.sentences))
            np.maximum.at(out, at, s)
            return out

        def select(self, state, query, token_budget):
            index, doc = state
            mixpr = self._mixpr_scores(index, doc, query)
            dense = doc.embeddings @ _query_embedding(doc, query)
            if lists == "budget":
                ranked = [_asked(s, doc.counts, token_budget) for s in (mixpr, dense)]
            else:
                ranked = [np.argsort(-s, kind="stable").tolist() for s in (mixpr, dense)]
            fused = np.zeros(len(doc.sentences))
            order = self._fuse(ranked)
            fused[order] = np.arange(len(order), 0, -1)
            idx = select_top(fused, token_budget=token_budget, token_counts=doc.counts)
            return doc.spans([i for i in idx.tolist() if fused[i] > 0])

    m = Variant(weights=weights, c=c)
    m.name = name
    return m


#: the command line: (flag, argparse keywords)
OPTIONS = (
    ("--data", {"type": Path, "required": True}),
    ("--questions", {"type": int, "default": 20}),
    ("--cache", {"type": Path, "default": Path("/tmp/fusion_bench_cache")}),
    ("--tasks", {"nargs": "+", "default": ["squad", "narrativeqa", "hotpotqa"]}),
    ("--variants", {"nargs": "+", "default": list(VARIANTS)}),
)


def main(argv=None):
    from functools import partial

    from longctx.eval import markdown, registry, run

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for flag, kw in OPTIONS:
        p.add_argument(flag, **kw)
    args = p.parse_args(argv)
    # the variants join the fused methods of the registry, for this process only
    registry._FUSED.update({n: partial(variant, n, *VARIANTS[n]) for n in args.variants})
    names = ["minilm", "mixpr", "mixpr-fused", *args.variants]
    kw = {"n_questions": args.questions, "cache_dir": args.cache, "isolate": False}
    print(markdown(run(args.data, tasks=args.tasks, methods=names, **kw)))


if __name__ == "__main__":
    main()
