"""LlamaIndex retriever for MixPR (Alonso and Millidge, "Mixture-of-PageRanks: Replacing
Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

from llamaindex_longctx._nodes import hit_to_node
from longctx.checks import check_choice, check_int, check_text
from longctx.mixpr import MODES, MixPR, MixPRIndex
from longctx.persist import PersistError, read_json, write_dir
from longctx.selection import check_size


class MixPRRetriever(BaseRetriever):
    """Mixture-of-PageRanks retriever over given nodes or documents, built once.

    At construction the nodes' texts (``get_content(MetadataMode.NONE)``) are indexed once
    (:class:`longctx.MixPRIndex`: chunks, TF-IDF, similarity graph); each query only adds its
    own node to the graph. By default (``chunk_nodes=True``) every node is cut into MixPR chunks
    (sentences, newlines, then equal pieces of at most ``max_words`` words) and each returned node
    is a new ``TextNode`` holding the chunk text exactly, with id ``"{source id}#{start}-{end}"``,
    the source's metadata plus ``longctx_start_char_idx`` / ``longctx_end_char_idx`` (character
    offsets in the source text, also set as ``start_char_idx`` / ``end_char_idx``),
    ``longctx_unit_index``, ``longctx_score``, ``longctx_method`` and ``longctx_source_id``
    (hidden from the LLM and the embedder), and a SOURCE relationship (hence ``ref_doc_id``) to
    the source node. With ``chunk_nodes=False`` every node is one unit and comes back as a copy of
    itself (same id) with those keys added.

    Scores are MixPR's (:meth:`longctx.MixPRIndex.score`); results are in document
    (chronological) order.

    Hybrid mode: with ``embed_model`` (or ``Settings.embed_model`` when the app set it) every
    chunk is embedded once at construction and saved by :meth:`persist`; each query is embedded
    with it and its nearest chunks join the walk (:meth:`longctx.MixPRIndex.from_texts`).

    Parameters
    ----------
    nodes : sequence of BaseNode
        The long context, in order (``Document`` objects are nodes too).
    similarity_top_k : int, default 100
        Chunks returned (paper: k=100), unless ``token_budget`` is given.
    token_budget : int, optional
        Most tokens returned (``longctx.tokens.count_tokens``, counted once at construction).
    mode : {"auto", "local", "global"}
        ``"auto"``: the router decides (keyword router unless ``mixpr`` has another, e.g.
        ``MixPR(router=LLMRouter(llm))``).
    max_words : int, optional
        Chunk size when no ``mixpr`` is given (default: the preset's, 64 words).
    chunk_nodes : bool, default True
    mixpr : longctx.MixPR, optional
        Settings and router (``MixPR(preset="paper")`` for the paper's exact setting).
    embed_model : llama_index BaseEmbedding, optional
        The app's embedding model for hybrid mode. ``None``: ``Settings.embed_model`` if the app
        set it, else plain MixPR (no dense vectors).

    Raises
    ------
    TypeError, ValueError
        Bad nodes or arguments, before the index is built.

    Examples
    --------
    >>> retriever = MixPRRetriever.from_documents(docs, similarity_top_k=50)  # doctest: +SKIP
    >>> retriever.retrieve("Where is the milk?")  # doctest: +SKIP
    >>> retriever.persist("./mixpr"); MixPRRetriever.from_persist_dir("./mixpr")  # doctest: +SKIP
    """

    def __init__(
        self,
        nodes: Sequence[BaseNode],
        similarity_top_k: int = 100,
        token_budget: int | None = None,
        mode: str = "auto",
        max_words: int | None = None,
        chunk_nodes: bool = True,
        mixpr: MixPR | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        embed_model=None,
        *,
        _index: MixPRIndex | None = None,
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
        if mixpr is not None and not isinstance(mixpr, MixPR):
            raise TypeError(f"mixpr must be a longctx MixPR, got {type(mixpr).__name__}")
        if mixpr is None:
            mixpr = MixPR() if max_words is None else MixPR(max_words=max_words)
        embed_model = _app_embed_model(embed_model)
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in self._nodes]
        # nodes with text, in order: index source s is node self._sources[s]
        self._sources = [i for i, t in enumerate(texts) if t.strip()]
        if _index is not None:
            self._index = _index
        elif self._sources:
            self._index = mixpr.index(
                [texts[i] for i in self._sources], chunk=self.chunk_nodes, encoder=embed_model
            )
        else:
            self._index = None
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        return "MixPRRetriever"

    @classmethod
    def from_documents(cls, documents: Sequence[BaseNode], **kwargs) -> MixPRRetriever:
        """Build from LlamaIndex ``Document`` objects (each one chunked, see the class doc)."""
        return cls(nodes=documents, **kwargs)

    @property
    def index(self) -> MixPRIndex | None:
        """The core :class:`longctx.MixPRIndex` (``None`` when no node has text)."""
        return self._index

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_text(query_bundle.query_str, "query")
        if self._index is None:
            return []
        k, budget = check_size(
            None if self.token_budget else self.similarity_top_k, self.token_budget
        )
        result = self._index.search(query, k=k, token_budget=budget, mode=self.mode)
        return [
            hit_to_node(
                h, self._nodes[self._sources[h.source]], "mixpr", whole=not self.chunk_nodes
            )
            for h in result.hits
        ]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # CPU-bound sparse work: run it in a thread so the event loop stays free
        return await asyncio.to_thread(self._retrieve, query_bundle)

    # -- persistence --------------------------------------------------------------------------
    def persist(self, persist_dir: str | os.PathLike) -> None:
        """Save the nodes, the settings and the built index under ``persist_dir`` (JSON and
        ``.npz``, no pickle). The router is not saved: pass it again to :meth:`from_persist_dir`."""
        from llama_index.core.storage.docstore.utils import doc_to_json

        d = Path(persist_dir)
        write_dir(
            d,
            kind="llamaindex.mixpr_retriever",
            version=1,
            json_files={
                "retriever": {
                    "similarity_top_k": self.similarity_top_k,
                    "token_budget": self.token_budget,
                    "mode": self.mode,
                    "chunk_nodes": self.chunk_nodes,
                },
                "nodes": [doc_to_json(n) for n in self._nodes],
            },
        )
        if self._index is not None:
            self._index.save(d / "index")

    @classmethod
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike, *, router=None, embed_model=None, **kwargs
    ) -> MixPRRetriever:
        """Load a retriever saved with :meth:`persist` (nothing is rebuilt; a hybrid index
        embeds queries with ``embed_model``, or ``Settings.embed_model`` when set).

        Raises
        ------
        PersistError
            A missing, damaged or foreign file, named.
        """
        from llama_index.core.storage.docstore.utils import json_to_doc

        from longctx.persist import read_manifest

        d = Path(persist_dir)
        read_manifest(d, kind="llamaindex.mixpr_retriever", versions=(1,))
        settings = read_json(d / "retriever.json")
        try:
            nodes = [json_to_doc(x) for x in read_json(d / "nodes.json")]
        except (KeyError, TypeError, ValueError) as exc:
            raise PersistError(f"{str(d / 'nodes.json')!r} is damaged: {exc}") from None
        index = None
        if (d / "index").exists():
            index = MixPRIndex.load(
                d / "index", router=router, encoder=_app_embed_model(embed_model)
            )
        return cls(nodes=nodes, **{**settings, **kwargs}, _index=index)


def _app_embed_model(embed_model):
    """``embed_model``, else ``Settings.embed_model`` when the app set one (never LlamaIndex's
    lazily resolved default, which would reach for OpenAI)."""
    if embed_model is not None:
        return embed_model
    from llama_index.core import Settings

    return getattr(Settings, "_embed_model", None)
