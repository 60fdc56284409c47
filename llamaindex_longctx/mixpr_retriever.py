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

from llamaindex_longctx._embed import app_embed_model
from llamaindex_longctx._nodes import (
    documents_from_texts,
    hit_to_node,
    node_keys,
    nodes_from_defaults,
    with_unique_ids,
)
from longctx.checks import check_choice, check_int, check_text
from longctx.mixpr import MODES, MixPR, MixPRIndex
from longctx.persist import PersistError, check_json_metadata, write_dir
from longctx.persist_reader import open_index_dir, retry_on_concurrent_save
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

    Hybrid mode (opt-in, since it embeds every chunk): with ``embed_model`` (for the app's own
    model, ``embed_model=Settings.embed_model``) every chunk is embedded once at construction and saved by :meth:`persist`; each query is embedded
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
        The app's embedding model for hybrid mode. ``None``: plain MixPR (no dense vectors;
        ``Settings.embed_model`` is not used implicitly, so no chunk is embedded unasked).

    Raises
    ------
    TypeError, ValueError
        Bad nodes or arguments, before the index is built.

    Examples
    --------
    >>> retriever = MixPRRetriever.from_documents(docs, similarity_top_k=50)  # doctest: +SKIP
    >>> retriever = MixPRRetriever.from_defaults(nodes=nodes)  # or index= / docstore=  # doctest: +SKIP
    >>> retriever = MixPRRetriever.from_texts(book_text, ids=["book"])  # doctest: +SKIP
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
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in self._nodes]
        # nodes with text, in order: index source s is node self._sources[s]
        self._sources = [i for i, t in enumerate(texts) if t.strip()]
        self._keys = node_keys(self._nodes)  # unique even when two nodes share an id
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

    @classmethod
    def from_defaults(
        cls,
        index=None,
        nodes: Sequence[BaseNode] | None = None,
        docstore=None,
        similarity_top_k: int = 100,
        **kwargs,
    ) -> MixPRRetriever:
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
        **kwargs,
    ) -> MixPRRetriever:
        """Build from raw texts: a single ``str`` is one text (one ``Document``), a sequence one
        ``Document`` per text, with optional metadata dicts and ids (default ``"text0"``...).

        Raises
        ------
        TypeError, ValueError
            A non-``str`` text; ``metadatas`` / ``ids`` of another length than ``texts``.
        """
        return cls(nodes=documents_from_texts(texts, metadatas, ids), **kwargs)

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
        return with_unique_ids(
            [
                hit_to_node(
                    h,
                    self._nodes[self._sources[h.source]],
                    "mixpr",
                    whole=not self.chunk_nodes,
                    key=self._keys[self._sources[h.source]],
                )
                for h in result.hits
                if self._keys[self._sources[h.source]] is not None  # not a node given twice
            ]
        )

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # CPU-bound sparse work: run it in a thread so the event loop stays free
        return await asyncio.to_thread(self._retrieve, query_bundle)

    # -- persistence --------------------------------------------------------------------------
    def persist(self, persist_dir: str | os.PathLike) -> None:
        """Save the nodes, the settings and the built index into ``persist_dir/longctx_mixpr/``
        (JSON and ``.npz``, no pickle), beside whatever else is in ``persist_dir`` (a
        ``StorageContext``'s ``docstore.json``, ``index_store.json``... stay untouched). The
        router is not saved: pass it again to :meth:`from_persist_dir`.

        Raises
        ------
        longctx.persist.SaveTargetError
            ``persist_dir/longctx_mixpr`` exists and is not a saved MixPR retriever (nothing is
            changed then).
        TypeError, ValueError
            A node's metadata would not come back from JSON as it is (a ``datetime``, ``set``,
            ``bytes``, ``NaN``, a key that is not a ``str``...): the message names the node
            (position and id) and the key. Nothing is written then.
        """
        from llama_index.core.storage.docstore.utils import doc_to_json

        from longctx.persist import text_digest

        for j, n in enumerate(self._nodes):
            check_json_metadata(n.metadata, f"nodes[{j}] (id {n.node_id!r})")

        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in self._nodes]
        index = self._index
        write_dir(
            Path(persist_dir) / PERSIST_SUBDIR,
            kind=_PERSIST_KIND,
            version=1,
            json_files={
                "retriever": {
                    "similarity_top_k": self.similarity_top_k,
                    "token_budget": self.token_budget,
                    "mode": self.mode,
                    "chunk_nodes": self.chunk_nodes,
                    "node_ids": [n.node_id for n in self._nodes],
                    "text_sha256": [text_digest(t) for t in texts],
                },
                "nodes": [doc_to_json(n) for n in self._nodes],
            },
            subdirs={"index": index.save} if index is not None else {},
        )

    @classmethod
    @retry_on_concurrent_save("persist_dir")
    def from_persist_dir(
        cls, persist_dir: str | os.PathLike, *, router=None, embed_model=None, **kwargs
    ) -> MixPRRetriever:
        """Load a retriever saved with :meth:`persist` (nothing is rebuilt). Reads
        ``persist_dir/longctx_mixpr/`` (or ``persist_dir`` itself, the layout of longctx 0.1).
        Every node is checked against the saved ids and text digests and against the index's
        texts, so a reordered or edited ``nodes.json`` cannot attribute a text to another node.
        A hybrid index embeds queries with ``embed_model``, or ``Settings.embed_model`` when the
        app set one.

        Raises
        ------
        PersistError
            A missing, damaged, foreign or inconsistent file, named.
        """
        from llama_index.core.storage.docstore.utils import json_to_doc

        from longctx.persist import text_digest

        d = Path(persist_dir)
        if (d / PERSIST_SUBDIR).is_dir():
            d = d / PERSIST_SUBDIR
        r = open_index_dir(d, kind=_PERSIST_KIND, versions=(1,))
        rpath, npath = d / "retriever.json", d / "nodes.json"
        settings = r.json("retriever.json")
        if not isinstance(settings, dict):
            raise PersistError(f"{str(rpath)!r} must hold an object")
        settings = dict(settings)
        ids, digests = settings.pop("node_ids", None), settings.pop("text_sha256", None)
        unknown = set(settings) - {"similarity_top_k", "token_budget", "mode", "chunk_nodes"}
        if unknown:
            raise PersistError(f"{str(rpath)!r}: unknown field(s) {sorted(unknown)[:5]}")
        types = {"similarity_top_k": int, "token_budget": (int, type(None)), "mode": str}
        for key, kind in {**types, "chunk_nodes": bool}.items():
            v = settings.get(key)
            bad = not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool)
            if key in settings and bad:
                raise PersistError(f"{str(rpath)!r}: field {key!r} has a bad type")
        raw = r.json("nodes.json")
        if not isinstance(raw, list):
            raise PersistError(f"{str(npath)!r} must hold a list of nodes")
        try:
            nodes = [json_to_doc(x) for x in raw]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PersistError(f"{str(npath)!r} is damaged: {str(exc)[:200]}") from None
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        if ids is not None or digests is not None:
            if ids != [n.node_id for n in nodes]:
                raise PersistError(
                    f"{str(npath)!r}: field 'id_': the node ids differ from those saved in "
                    "retriever.json (reordered or edited)"
                )
            if digests != [text_digest(t) for t in texts]:
                raise PersistError(
                    f"{str(npath)!r}: field 'text': a node text differs from the one saved "
                    "(edited or forged)"
                )
        index = None
        if r.has("index") or r.has_unlisted_subdir("index"):  # unlisted: longctx 0.1
            index = MixPRIndex.load(
                r.subdir("index", unlisted=True),
                router=router,
                encoder=app_embed_model(embed_model),
            )
        with_text = [t for t in texts if t.strip()]
        if (list(index.texts) if index is not None else []) != with_text:
            raise PersistError(
                f"{str(npath)!r}: the nodes' texts are not the texts of the saved index "
                f"{str(d / 'index')!r} (reordered or edited)"
            )
        if index is not None and not settings.get("chunk_nodes", True):
            whole = (
                index.n_units == len(with_text)
                and not index.starts.any()
                and [int(e) for e in index.ends] == [len(t) for t in with_text]
            )
            if not whole:
                raise PersistError(
                    f"{str(rpath)!r}: field 'chunk_nodes' is false but the saved index is chunked"
                )
        try:
            return cls(nodes=nodes, **{**settings, **kwargs}, _index=index)
        except (TypeError, ValueError) as exc:
            if kwargs:
                raise
            raise PersistError(f"{str(rpath)!r}: {str(exc)[:200]}") from None


#: Sub-folder of a persist folder that holds the retriever (the framework's files stay beside it).
PERSIST_SUBDIR = "longctx_mixpr"
_PERSIST_KIND = "llamaindex.mixpr_retriever"
