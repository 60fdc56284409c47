"""YOURA as a LlamaIndex retriever over long documents (Soh, Huang, Tian and Zhao, "You Only Use
Reactive Attention Slice For Long Context Retrieval", 2024, arXiv:2409.13695, sec. 3.3)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, Document, MetadataMode, NodeWithScore, QueryBundle

from llamaindex_longctx._nodes import (
    documents_from_texts,
    hit_to_node,
    node_keys,
    nodes_from_defaults,
    with_unique_ids,
)
from longctx.checks import check_int, check_text
from longctx.explain import check_explain
from longctx.selection import check_size
from longctx.types import check_order
from longctx.youra import DEFAULT_K, ReactionScorer, YouraIndex, scorer_from


class YouraRetriever(BaseRetriever):
    """Retrieve the sentences of long documents that react most to the query (YOURA), built once.

    At construction the nodes' texts (``get_content(MetadataMode.NONE)``) become a
    :class:`longctx.YouraIndex` (sentences, token alignment, window layout); the model's
    query-independent work (each window's KV cache) is kept in the scorer's window cache under
    its memory budget, on the first query or at once with ``retriever.index.warm()``. Sentences
    of all documents are ranked together (:mod:`longctx.youra`, "Several texts").

    Returns, best first (``order="score"``; ``"document"``: in document order, the paper's for
    the LLM's reading), one ``NodeWithScore`` per selected sentence: a ``TextNode``
    holding the sentence exactly, id ``"{source id}#{start}-{end}"``,
    ``start_char_idx``/``end_char_idx`` (characters in the source text), the source's metadata
    plus the ``longctx_*`` keys (``longctx_start_char_idx``, ``longctx_end_char_idx``,
    ``longctx_unit_index``, ``longctx_score``, ``longctx_method``, ``longctx_source_id``; hidden
    from the LLM and the embedder) and a SOURCE relationship to the source node. A sentence that
    is the whole source text returns (a copy of) the source node itself.

    Parameters
    ----------
    nodes : sequence of BaseNode, optional
        The long documents (``Document`` objects are nodes too).
    text : str, optional
        Instead of ``nodes``: one text (wrapped as a Document with id ``"text"``).
    similarity_top_k : int, default ``longctx.youra.DEFAULT_K`` (10)
        Sentences returned, unless ``token_budget`` is given.
    token_budget : int, optional
        Model tokens for all returned sentences (greedy by score, at most ``max_fraction`` of
        the sentences).
    max_fraction : float, default 0.8
    scorer : longctx.youra.ReactionScorer, optional
        Otherwise one is built from ``model``, ``tokenizer`` and ``scorer_kwargs`` (``preset``
        ``"default"`` or ``"paper"``, ``baseline``, ``cache_bytes``, ``max_window``...).
    order : {"score", "document"}, default "score"
        Best first, or document order (:meth:`longctx.types.SearchResult.positions`).
    explain : bool, default False
        Add ``metadata["longctx_explanation"]``: each sentence's window, the attention its
        tokens got before and after the question and the parts of its reaction score
        (:func:`longctx.youra.explain.explain_sentence`).

    Raises
    ------
    TypeError, ValueError
        Bad arguments, at construction.
    """

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        *,
        documents: Sequence[BaseNode] | None = None,
        text: str | None = None,
        similarity_top_k: int = DEFAULT_K,
        token_budget: int | None = None,
        max_fraction: float = 0.8,
        scorer: ReactionScorer | None = None,
        model: Any = None,
        tokenizer: Any = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        order: str = "score",
        explain: bool = False,
        **scorer_kwargs: Any,
    ) -> None:
        if sum(x is not None for x in (nodes, documents, text)) != 1:
            raise ValueError("give exactly one of nodes (documents) and text")
        if text is not None:
            check_text(text, "text")
            nodes = [Document(text=text, id_="text")]
        nodes = list(nodes if nodes is not None else documents)
        for i, node in enumerate(nodes):
            if not isinstance(node, BaseNode):
                raise TypeError(
                    f"nodes[{i}] must be a llama_index BaseNode, got {type(node).__name__}"
                )
        self.similarity_top_k = check_int(similarity_top_k, "similarity_top_k", minimum=1)
        self.token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
        self.order = check_order(order)
        self.explain = check_explain(explain)
        self._nodes = nodes
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        # nodes with text, in order: index source s is node self._sources[s]
        self._sources = [i for i, t in enumerate(texts) if t.strip()]
        if not self._sources:
            raise ValueError("nodes must hold some text")
        self._index = YouraIndex.from_texts(
            [texts[i] for i in self._sources],
            scorer_from(scorer, model, tokenizer, **scorer_kwargs),
            max_fraction=max_fraction,
        )
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        return "YouraRetriever"

    @classmethod
    def from_documents(cls, documents: Sequence[BaseNode], **kwargs: Any) -> YouraRetriever:
        return cls(nodes=documents, **kwargs)

    @classmethod
    def from_defaults(
        cls,
        index=None,
        nodes: Sequence[BaseNode] | None = None,
        docstore=None,
        similarity_top_k: int = DEFAULT_K,
        **kwargs: Any,
    ) -> YouraRetriever:
        """Build as LlamaIndex's ``BM25Retriever.from_defaults``: from exactly one of ``index``
        (its docstore's nodes), ``nodes`` or ``docstore`` (every node, in insertion order); the
        other keyword arguments are the constructor's.

        Raises
        ------
        ValueError
            None or several of ``index``, ``nodes`` and ``docstore``; bad arguments.
        """
        return cls(
            nodes=nodes_from_defaults(index, nodes, docstore),
            similarity_top_k=similarity_top_k,
            **kwargs,
        )

    @classmethod
    def from_texts(
        cls,
        texts: str | Sequence[str],
        metadatas: Sequence[dict] | None = None,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> YouraRetriever:
        """Build from raw texts: a single ``str`` is one text (one ``Document``), a sequence one
        ``Document`` per text, with optional metadata dicts and ids (default ``"text0"``...)."""
        return cls(nodes=documents_from_texts(texts, metadatas, ids), **kwargs)

    @property
    def index(self) -> YouraIndex:
        """The core :class:`longctx.YouraIndex`."""
        return self._index

    @property
    def scorer(self) -> ReactionScorer:
        return self._index.scorer

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_text(query_bundle.query_str, "query")
        k, budget = check_size(
            None if self.token_budget else self.similarity_top_k, self.token_budget
        )
        result = self._index.search(query, k=k, token_budget=budget, explain=self.explain)
        keys = node_keys(self._nodes)  # unique even when two nodes share an id
        out = []
        for h in (result.hits[j] for j in result.positions(self.order)):
            i = self._sources[h.source]
            whole = h.start == 0 and h.end == len(self._index.texts[h.source])
            if keys[i] is not None:  # not a node given twice
                out.append(hit_to_node(h, self._nodes[i], "youra", whole=whole, key=keys[i]))
        return with_unique_ids(out)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # model work: in a worker thread, so the event loop stays free
        return await asyncio.to_thread(self._retrieve, query_bundle)
