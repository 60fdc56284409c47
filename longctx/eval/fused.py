"""``mixpr-fused``: MixPR fused with the ``minilm`` baseline by reciprocal rank, the recipe of
the guides' "Fusing with the app's retriever" (:mod:`longctx.fusion`).

The ``minilm`` baseline stands for an app's vector retriever and its sentences (passages on a
corpus task) for the app's chunks. As in the recipe, MixPR is built over those same units, one
unit each (``chunk=False``), so both rank the same items at the same grain; each is asked for
what the fused result returns (the token budget; ``k`` passages on a corpus task), MixPR's list
first, at equal weights and ``c=60``; the fused order then fills the budget (the ``k`` best).
"""

from __future__ import annotations

import numpy as np

from longctx.eval.methods import GLOBAL_QUERY, MixPRMethod, _query_embedding, top_k
from longctx.fusion import DEFAULT_C, reciprocal_rank_fusion
from longctx.selection import select_top


def _asked(scores: np.ndarray, counts: np.ndarray, token_budget: int) -> list[int]:
    """The units a retriever of ``scores`` returns for ``token_budget``, best first (those
    :func:`longctx.selection.select_top` takes)."""
    idx = select_top(scores, token_budget=token_budget, token_counts=counts).tolist()
    return sorted(idx, key=lambda i: (-scores[i], i))


class MixPRFusedMethod(MixPRMethod):
    """MixPR over the ``minilm`` baseline's units fused with it by reciprocal rank (the module
    doc). ``weights`` (MixPR's, MiniLM's) and ``c`` are those of
    :func:`longctx.fusion.reciprocal_rank_fusion`."""

    name = "mixpr-fused"
    needs_encoder = True

    def __init__(self, weights=(1.0, 1.0), c: float = DEFAULT_C, **params):
        super().__init__(**params)
        self.weights = tuple(weights)
        self.c = c

    def _fuse(self, lists, k=None) -> list[int]:
        fused = reciprocal_rank_fusion(lists, weights=self.weights, c=self.c, k=k)
        return [key for key, _ in fused]

    def build(self, doc):
        doc.embeddings  # noqa: B018  (the app's vectors: shared with minilm)
        return super().build_corpus(doc.sentence_texts, doc.ctx), doc

    def select(self, state, query, token_budget):
        index, doc = state
        mode = "global" if query is None else "auto"
        mixpr = np.asarray(index.score(query or GLOBAL_QUERY, mode)[0], dtype=np.float64)
        dense = doc.embeddings @ _query_embedding(doc, query)
        lists = [_asked(s, doc.counts, token_budget) for s in (mixpr, dense)]
        fused = np.zeros(len(doc.sentences))
        order = self._fuse(lists)
        fused[order] = np.arange(len(order), 0, -1)  # best first
        idx = select_top(fused, token_budget=token_budget, token_counts=doc.counts)
        return doc.spans([i for i in idx.tolist() if fused[i] > 0])

    def build_corpus(self, passages, ctx):
        return super().build_corpus(passages, ctx), ctx, ctx.embed(list(passages))

    def rank(self, state, query, k):
        index, ctx, vectors = state
        mixpr = super().rank(index, query, k)
        dense = top_k(vectors @ np.asarray(ctx.encoder.embed_query(query), dtype=np.float32), k)
        return self._fuse([mixpr, dense], k)
