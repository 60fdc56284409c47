"""LlamaIndex retriever for MixPR (003_66700b152cf6a0ed.txt, sec. 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import (
    BaseNode,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    TextNode,
)

from longctx._validate import check_choice, check_int, check_text
from longctx.mixpr import MODES, MixPR
from longctx.selection import select_top
from longctx.text import chunk_words
from longctx.tokens import count_many

_META_KEYS = [
    "mixpr_start_char_idx",
    "mixpr_end_char_idx",
    "mixpr_chunk_index",
    "mixpr_source_node_id",
]


class MixPRRetriever(BaseRetriever):
    """Mixture-of-PageRanks retriever over given nodes or documents.

    By default (``chunk_nodes=True``) each node's text (``get_content(MetadataMode.NONE)``) is cut
    into MixPR chunks (sentences, newlines, then equal pieces of at most ``max_words`` words)
    and every chunk of every node, in the given order, is a graph node. Each returned node is a
    new ``TextNode`` holding the chunk text exactly, with the source's metadata plus
    ``mixpr_start_char_idx`` / ``mixpr_end_char_idx`` (character offsets in the source text,
    also set as ``start_char_idx`` / ``end_char_idx``), ``mixpr_chunk_index`` and
    ``mixpr_source_node_id``; its SOURCE relationship (hence ``ref_doc_id``) points to the
    source node, and the MixPR keys are hidden from the LLM and embedder. With
    ``chunk_nodes=False`` the given nodes are the units and come back unchanged.

    Scores are PageRank probabilities; results are in document (chronological) order.

    Parameters
    ----------
    nodes : sequence of BaseNode
        The long context, in order (``Document`` objects are nodes too).
    similarity_top_k : int, default 100
        Chunks returned (paper: k=100), unless ``token_budget`` is given.
    token_budget : int, optional
        Most tokens returned (``longctx.tokens.count_tokens``).
    mode : {"auto", "local", "global"}
        ``"auto"``: the MixPR router decides (keyword router unless ``mixpr`` has another, e.g.
        ``MixPR(router=LLMRouter(lambda p: llm.complete(p).text))``).
    max_words : int, default 32
    chunk_nodes : bool, default True
    mixpr : longctx.mixpr.MixPR, optional

    Examples
    --------
    >>> retriever = MixPRRetriever.from_documents(docs, similarity_top_k=50)  # doctest: +SKIP
    >>> retriever.retrieve("Where is the milk?")  # doctest: +SKIP
    """

    def __init__(
        self,
        nodes: Sequence[BaseNode],
        similarity_top_k: int = 100,
        token_budget: int | None = None,
        mode: str = "auto",
        max_words: int = 32,
        chunk_nodes: bool = True,
        mixpr: MixPR | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self._nodes = list(nodes)
        for i, node in enumerate(self._nodes):
            if not isinstance(node, BaseNode):
                raise TypeError(
                    f"nodes[{i}] must be a llama_index BaseNode, got {type(node).__name__}"
                )
        self.similarity_top_k = check_int(similarity_top_k, "similarity_top_k", minimum=1)
        self.token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
        self.mode = check_choice(mode, "mode", MODES)
        self.chunk_nodes = bool(chunk_nodes)
        self._mixpr = mixpr if mixpr is not None else MixPR(max_words=max_words)
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in self._nodes]
        if self.chunk_nodes:
            self._units = [
                (d, a, b)
                for d, t in enumerate(texts)
                for a, b in chunk_words(t, self._mixpr.max_words)
            ]
        else:
            self._units = [(d, 0, len(t)) for d, t in enumerate(texts) if t.strip()]
        self._unit_texts = [texts[d][a:b] for d, a, b in self._units]
        self._unit_token_counts = None  # counted on the first token-budget query, then reused
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        return "MixPRRetriever"

    @classmethod
    def from_documents(cls, documents: Sequence[BaseNode], **kwargs) -> MixPRRetriever:
        """Build from LlamaIndex ``Document`` objects (each one chunked, see the class doc)."""
        return cls(nodes=documents, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_text(query_bundle.query_str, "query")
        if not self._units:
            return []
        scores = self._mixpr.rank(self._unit_texts, query, self.mode)
        if self.token_budget is not None:
            if self._unit_token_counts is None:
                self._unit_token_counts = count_many(self._unit_texts)
            idx = select_top(
                scores, token_budget=self.token_budget, token_counts=self._unit_token_counts
            )
        else:
            idx = select_top(scores, k=self.similarity_top_k)
        return [
            NodeWithScore(node=self._make_node(i), score=float(scores[i])) for i in idx.tolist()
        ]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # CPU-bound sparse work: run it in a thread so the event loop stays free
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def _make_node(self, i: int) -> BaseNode:
        d, a, b = self._units[i]
        src = self._nodes[d]
        if not self.chunk_nodes:
            return src
        meta = {
            **src.metadata,
            "mixpr_start_char_idx": a,
            "mixpr_end_char_idx": b,
            "mixpr_chunk_index": i,
            "mixpr_source_node_id": src.node_id,
        }
        return TextNode(
            id_=f"{src.node_id}:mixpr:{a}-{b}",
            text=self._unit_texts[i],
            metadata=meta,
            start_char_idx=a,
            end_char_idx=b,
            excluded_llm_metadata_keys=list(src.excluded_llm_metadata_keys) + _META_KEYS,
            excluded_embed_metadata_keys=list(src.excluded_embed_metadata_keys) + _META_KEYS,
            relationships={NodeRelationship.SOURCE: src.as_related_node_info()},
        )
