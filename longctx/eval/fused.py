"""``mixpr-fused``: MixPR fused with the ``minilm`` baseline at the baseline's grain, the recipe
of the guides' "Fusing with the app's retriever".

The ``minilm`` baseline stands for an app's vector retriever and its sentences (passages on a
corpus task) for the app's chunks. As in the recipe, MixPR is built over those same units, one
unit each (``chunk=False``), and the baseline is asked for what the fused result returns (the
units that fill the token budget; ``k`` passages on a corpus task), at most
:attr:`MixPRFusedMethod.n_seeds` (10) of them. Its list enters MixPR's walk as seeds (:mod:`longctx.mixpr.seeds`: rank weights ``1 / (rank + 1)``, no score compared), and a
unit's fused score is MixPR's own score plus the seeds' walk's, each divided by its maximum
(CombSUM of max-normalized scores, :meth:`longctx.mixpr.edges.QueryEdgesBlock.scores_seeded`);
MixPR's own best unit and the baseline's first come first (``keep_firsts=True`` of
:meth:`longctx.MixPRIndex.search`, :func:`longctx.mixpr.seeds.keep_first_units`), then the
fused scores fill the budget (the ``k``). ``benchmarks/studies/fusion_study.py`` compares it
with reciprocal-rank and min-max score fusion and other seeded rules, and chose the cap of 10
on development samples (session 19: the baseline's whole list for a large budget, dozens of
sentences on bAbI, pulled the walk off MixPR's second fact; docs/notes/mixpr-recall.md).
"""

from __future__ import annotations

import numpy as np

from longctx.eval.methods import (
    GLOBAL_QUERY,
    MixPRMethod,
    MixPRSeededMethod,
    _query_embedding,
    passage_seeds,
)
from longctx.selection import select_top


def _asked(scores: np.ndarray, counts: np.ndarray, token_budget: int) -> list[int]:
    """The units a retriever of ``scores`` returns for ``token_budget``, best first (those
    :func:`longctx.selection.select_top` takes)."""
    idx = select_top(scores, token_budget=token_budget, token_counts=counts).tolist()
    return sorted(idx, key=lambda i: (-scores[i], i))


class MixPRFusedMethod(MixPRSeededMethod):
    """MixPR over the ``minilm`` baseline's units, seeded by the baseline's list for the same
    budget (at most ``n_seeds`` of it), each one's first hit kept (the module doc). A corpus
    task is :class:`~longctx.eval.methods.MixPRSeededMethod`'s ranking with the baseline asked
    for ``min(k, n_seeds)`` passages."""

    name = "mixpr-fused"
    #: at most this many of the baseline's list seed the walk (``None``: all of it)
    n_seeds = 10
    keep_firsts = True

    def seed_count(self, k: int) -> int:
        """``min(k, n_seeds)``: the baseline asked for what the result holds, at most
        ``n_seeds``."""
        return k if self.n_seeds is None else min(k, self.n_seeds)

    def build(self, doc):
        doc.embeddings  # noqa: B018  (the app's vectors: shared with minilm)
        return MixPRMethod.build_corpus(self, doc.sentence_texts, doc.ctx), doc

    def select(self, state, query, token_budget):
        index, doc = state
        if query is None:  # no question: MixPR's global ranking of the app's units
            scores = np.asarray(index.score(GLOBAL_QUERY, "global")[0], dtype=np.float64)
            idx = select_top(scores, token_budget=token_budget, token_counts=doc.counts)
            return doc.spans(idx.tolist())
        app = _asked(doc.embeddings @ _query_embedding(doc, query), doc.counts, token_budget)
        seeds = passage_seeds(app if self.n_seeds is None else app[: self.n_seeds])
        r = index.search(
            query, token_budget=token_budget, seeds=seeds, keep_firsts=self.keep_firsts
        )
        return doc.spans(sorted(h.source for h in r.hits))
