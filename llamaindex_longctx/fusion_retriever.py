"""``RankFusionRetriever``: the app's retriever and MixPR fused by reciprocal rank, a node
returned by both counted once (by its id).

The rule is the core's (:func:`longctx.fusion.reciprocal_rank_fusion`); this adapter only asks
the retrievers and maps node ids. LlamaIndex's own ``QueryFusionRetriever`` keys nodes by
``node.hash`` (text and metadata), so a chunk MixPR returns with its ``longctx_*`` keys and the
same chunk from the app's vector index are two different nodes there: both take a slot of the
top ``k`` and neither rises (docs/guide/llamaindex.md, "Fusing with the app's retriever").
The guide's recipe fuses inside MixPR's walk instead (``MixPRRetriever.from_defaults(index=...,
chunk_nodes=False, vector_retriever=...)``): rank fusion gives each list half of the slots, and
fell under MixPR alone on a multi-hop passage pool (docs/notes/mixpr-recall.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle

from longctx.checks import check_int
from longctx.fusion import DEFAULT_C, reciprocal_rank_fusion

__all__ = ["RankFusionRetriever"]


class RankFusionRetriever(BaseRetriever):
    """Fuse several retrievers' nodes by weighted reciprocal rank; keep the ``similarity_top_k``.

    Each query asks every retriever (each returns its own top k, best first, as LlamaIndex's
    retrievers do; a ``MixPRRetriever`` with ``order="score"``, its default). A node at 1-based
    rank ``r`` of retriever ``i`` scores ``weights[i] / (c + r)``, summed over the retrievers
    that return it, nodes being the same when their ``node_id`` is: a chunk of the app's
    ``VectorStoreIndex`` and the same chunk from ``MixPRRetriever.from_defaults(index=...,
    chunk_nodes=False)`` (which keeps the node ids) count once, and rise above the nodes only
    one retriever returns. Ties go to the earlier retriever's node. The returned
    ``NodeWithScore`` holds the node as the first retriever that returned it gave it, with the
    fused score.

    Parameters
    ----------
    retrievers : sequence of llama_index BaseRetriever
        At least one; MixPR first keeps its node ahead on a tie.
    weights : sequence of float, optional
        One per retriever (default 1.0 each; :func:`longctx.fusion.reciprocal_rank_fusion`).
    c : float >= 0, default 60
        The rank constant (Cormack, Clarke and Buettcher, SIGIR 2009).
    similarity_top_k : int >= 1, default 5
        Nodes returned.

    Raises
    ------
    TypeError, ValueError
        No retriever, a non-retriever, bad weights, ``c`` or ``similarity_top_k`` (named),
        at construction.

    Examples
    --------
    >>> mixpr = MixPRRetriever.from_defaults(index=vector_index, chunk_nodes=False,
    ...                                      similarity_top_k=5)  # doctest: +SKIP
    >>> fused = RankFusionRetriever([mixpr, vector_index.as_retriever(similarity_top_k=5)],
    ...                             similarity_top_k=5)  # doctest: +SKIP
    """

    def __init__(
        self,
        retrievers: Sequence[BaseRetriever],
        weights: Sequence[float] | None = None,
        c: float = DEFAULT_C,
        similarity_top_k: int = 5,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        retrievers = list(retrievers)
        if not retrievers:
            raise ValueError("retrievers must hold at least one retriever")
        for i, r in enumerate(retrievers):
            if not isinstance(r, BaseRetriever):
                raise TypeError(
                    f"retrievers[{i}] must be a llama_index BaseRetriever, got {type(r).__name__}"
                )
        self.retrievers = retrievers
        self.similarity_top_k = check_int(similarity_top_k, "similarity_top_k", minimum=1)
        self.weights = None if weights is None else list(weights)
        self.c = c
        self._fuse([[] for _ in retrievers])  # bad weights or c raise now
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        return "RankFusionRetriever"

    def _fuse(self, results: list[list[NodeWithScore]]) -> list[NodeWithScore]:
        first: dict[str, NodeWithScore] = {}
        for found in results:
            for nws in found:
                first.setdefault(nws.node.node_id, nws)
        fused = reciprocal_rank_fusion(
            [[nws.node.node_id for nws in found] for found in results],
            weights=self.weights,
            c=self.c,
            k=self.similarity_top_k,
        )
        return [NodeWithScore(node=first[key].node, score=score) for key, score in fused]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._fuse([r.retrieve(query_bundle) for r in self.retrievers])

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        results = await asyncio.gather(*(r.aretrieve(query_bundle) for r in self.retrievers))
        return self._fuse(list(results))
