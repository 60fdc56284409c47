"""LlamaIndex retriever for MixPR (Alonso and Millidge, "Mixture-of-PageRanks: Replacing
Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import warnings
from collections.abc import Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle

from llamaindex_longctx._mixpr_persist import (  # noqa: F401  (PERSIST_SUBDIR: a public name here)
    PERSIST_SUBDIR,
    check_persist_dir,
    read_saved,
    write_saved,
)
from llamaindex_longctx._nodes import (
    QueryMemo,
    docstore_collections,
    docstore_hashes,
    docstore_state,
    documents_from_texts,
    hit_to_node,
    node_keys,
    nodes_from_defaults,
    nodes_to_seeds,
    with_unique_ids,
)
from longctx.checks import check_choice, check_int, check_text
from longctx.explain import check_explain
from longctx.filters import compile_filter
from longctx.filters_persist import filter_to_json
from longctx.mixpr import MODES, MixPR, MixPRIndex
from longctx.persist import PersistError
from longctx.persist.reader import retry_on_concurrent_save
from longctx.selection import check_size
from longctx.types import check_order

logger = logging.getLogger(__name__)


def _following_refusal(what: str, through: str) -> ValueError:
    """The error of a change (insert, delete, update) made to a retriever following an index:
    the index's docstore is its source of truth, so the change goes through the index
    (``through``: the index's own call), and the retriever follows it. A change to the
    retriever alone was never reconciled: a deleted node stayed hidden while the index
    returned it, an inserted one stayed while the index lacked it, until a reload."""
    return ValueError(
        f"{what}: this retriever follows an index (from_defaults(index=...)), whose docstore "
        "is its source of truth and which it does not own; change it through the index: "
        f"{through} (the retriever follows it on its next query)"
    )


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

    Scores are MixPR's (:meth:`longctx.MixPRIndex.score`); results come best first, as
    LlamaIndex's own retrievers return them (``order="score"``), or in document (chronological)
    order with ``order="document"``, the paper's order for the LLM's reading. Units with the same
    text (a title page repeated, a chapter heading) take one slot
    (``MixPRIndex.search(unique_texts=True)``).

    Hybrid over the app's vector index (no embedding by longctx): with ``vector_retriever``
    (any LlamaIndex retriever, e.g. ``vector_index.as_retriever(similarity_top_k=5)``) each
    local query first asks it (a question the router sends to global mode does not: it uses no
    seeds), and the chunks it returns seed a walk of their own on the MixPR units
    they overlap, added to MixPR's score, each divided by its maximum, so MixPR's best units keep
    their place (:mod:`longctx.mixpr.seeds`; found by ``ref_doc_id`` and ``start_char_idx`` /
    ``end_char_idx``, or by text when the offsets are missing). The only embedding is the
    app's retriever's own query embedding; build and insert cost what plain MixPR's do.

    Hybrid mode with its own vectors (opt-in, since it embeds every chunk): with ``embed_model`` every chunk is
    embedded once at construction (through the model's batch API, 64 texts per request unless the
    model's ``embed_batch_size`` says otherwise; a progress bar on a terminal) and saved by
    :meth:`persist`; each query is embedded with it and its nearest chunks join the walk
    (:meth:`longctx.MixPRIndex.from_texts`). ``Settings.embed_model`` is not used at
    construction (pass ``embed_model=Settings.embed_model`` for the app's own model), so no chunk
    is embedded unasked; :meth:`from_persist_dir` does use it to embed the queries of a saved
    hybrid retriever when no ``embed_model`` is given.

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
    vector_retriever : llama_index BaseRetriever, optional
        The app's own retriever (``VectorStoreIndex.as_retriever(similarity_top_k=5)``, any
        vector store): its hits seed the walk (see above). Not saved by :meth:`persist`: pass
        it again to :meth:`from_persist_dir`.
    keep_firsts : bool, default False
        With ``vector_retriever``: MixPR's own best unit and the app's first hit (when the
        filters keep it) are chosen first, then the seeded order fills the rest
        (``MixPRIndex.search(keep_firsts=True)``, :func:`longctx.mixpr.seeds.keep_first_units`):
        the guide's fusion recipe, over the app's own chunks (``chunk_nodes=False``). With
        ``similarity_top_k=1`` or a budget that holds one unit only MixPR's own best is kept.
        Each node keeps its own fused score; ``order="score"`` puts those two first. Not
        saved by :meth:`persist`.
    filters : optional
        Metadata filters (LlamaIndex ``MetadataFilters``, a dict or a callable); saved by
        :meth:`persist` (all but a callable).
    order : {"score", "document"}, default "score"
        Best first, or document order (:meth:`longctx.types.SearchResult.positions`).
    explain : bool, default False
        Add ``metadata["longctx_explanation"]`` to every returned node: why it was retrieved
        (the restart, the walk's terms and seed chunks, the multi-hop paths;
        :mod:`longctx.explain`), hidden from the LLM and the embedder unless put in the prompt.
    docstore : optional
        A docstore to follow (:meth:`from_defaults`).

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
        filters=None,
        *,
        order: str = "score",
        docstore=None,
        vector_retriever: BaseRetriever | None = None,
        keep_firsts: bool = False,
        explain: bool = False,
        _index: MixPRIndex | None = None,
        _follows_index: bool = False,
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
        self.order = check_order(order)
        self.explain = check_explain(explain)
        self.filters = filters
        compile_filter(filters)  # a bad filter raises now, before the build
        if mixpr is not None and not isinstance(mixpr, MixPR):
            raise TypeError(f"mixpr must be a longctx MixPR, got {type(mixpr).__name__}")
        if mixpr is None:
            mixpr = MixPR() if max_words is None else MixPR(max_words=max_words)
        self._mixpr = mixpr
        if vector_retriever is not None and not isinstance(vector_retriever, BaseRetriever):
            raise TypeError(
                "vector_retriever must be a llama_index BaseRetriever (e.g. "
                f"VectorStoreIndex.as_retriever()), got {type(vector_retriever).__name__}"
            )
        self.vector_retriever = vector_retriever
        if not isinstance(keep_firsts, bool):
            raise TypeError(f"keep_firsts must be a bool, got {keep_firsts!r}")
        self.keep_firsts = keep_firsts
        self._embed_model = embed_model
        self._docstore = docstore
        self._follows_index = bool(_follows_index) and docstore is not None  # not its docstore
        self._seen: dict[str, str | None] = {}  # docstore node id -> hash, when following one
        self._pending_warned = False  # the search warned of nodes waiting for refresh()
        # the SOURCE relationships' hashes of the nodes, kept while a node is unchanged
        # (_nodes.related_info): a hit no longer hashes its whole document on every query
        self._hashes: dict = {}
        # (docstore_state, _seen) of the last follow that found nothing to do: a search that
        # finds the docstore as it was skips the per-node comparison (_sync_docstore)
        self._synced: tuple | None = None
        self._lock = threading.RLock()
        self._keys = node_keys(self._nodes)  # unique even when two nodes share an id
        self._by_key = {k: n for k, n in zip(self._keys, self._nodes) if k is not None}
        if _index is not None:
            self._index = _index
        else:
            self._index = self._build(self._nodes, self._keys)
        if docstore is not None:
            self._seen = {n.node_id: n.hash for n in self._nodes}
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    def _indexed(self, nodes, keys):
        """``(texts, ids, metadatas)`` of the nodes that go into the index: those with text,
        not given twice."""
        texts, ids, metas = [], [], []
        for n, k in zip(nodes, keys):
            t = n.get_content(metadata_mode=MetadataMode.NONE)
            if k is not None and t.strip():
                texts.append(t)
                ids.append(k)
                metas.append(n.metadata)
        return texts, ids, metas

    def _build(self, nodes, keys) -> MixPRIndex | None:
        texts, ids, metas = self._indexed(nodes, keys)
        if not texts:
            return None
        return self._mixpr.index(
            texts, ids=ids, metadatas=metas, chunk=self.chunk_nodes, encoder=self._embed_model
        )

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

        Built from an ``index`` or a ``docstore``, the retriever follows it: before each query
        it compares the docstore's node ids and hashes with its own and inserts, updates or
        deletes the nodes that changed (``index.insert(doc)``,
        ``index.delete_ref_doc(id, delete_from_docstore=True)``), so no rebuild is needed.
        Following an ``index``, its docstore is the source of truth: the retriever's own
        :meth:`delete_ref_doc` is refused (delete through the index). With ``embed_model=`` a
        search never embeds: it drops the deleted nodes and the new or changed ones wait for
        :meth:`refresh` (which embeds them, with a progress bar on a terminal).

        Raises
        ------
        ValueError
            None or several of ``index``, ``nodes`` and ``docstore``; bad arguments.
        """
        store = index.docstore if index is not None else docstore
        return cls(
            nodes=nodes_from_defaults(index, nodes, docstore),
            similarity_top_k=similarity_top_k,
            docstore=store if nodes is None else None,
            _follows_index=index is not None,
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

    @property
    def nodes(self) -> list[BaseNode]:
        """The nodes the retriever searches, in order (a copy of the list)."""
        return list(self._nodes)

    # -- insert and delete --------------------------------------------------------------------
    def insert_nodes(self, nodes: Sequence[BaseNode]) -> None:
        """Add nodes (LlamaIndex's name; a ``Document`` is a node too): their texts are chunked
        and indexed, the rest of the index is not rebuilt (:meth:`longctx.MixPRIndex.insert`).

        Raises
        ------
        TypeError, ValueError
            A non-node; a node whose id the retriever already holds (use
            :meth:`update_ref_doc`); a retriever following an index (``from_defaults(index=
            ...)``): insert through the index (``index.insert_nodes(nodes)``), which the
            retriever follows.
        """
        if self._follows_index:
            raise _following_refusal("insert_nodes", "index.insert_nodes(nodes)")
        self._insert_nodes(nodes)

    def _insert_nodes(self, nodes) -> None:
        nodes = list(nodes)
        for i, node in enumerate(nodes):
            if not isinstance(node, BaseNode):
                raise TypeError(
                    f"nodes[{i}] must be a llama_index BaseNode, got {type(node).__name__}"
                )
        with self._lock:
            held = {n.node_id for n in self._nodes}
            dup = [n.node_id for n in nodes if n.node_id in held]
            if dup:
                raise ValueError(
                    f"node ids {dup[:5]} are already in the retriever: use update_ref_doc()"
                )
            keys = node_keys(self._nodes + nodes)[len(self._nodes) :]
            texts, ids, metas = self._indexed(nodes, keys)
            if texts:
                if self._index is None:
                    self._index = self._build(nodes, keys)
                else:
                    self._index.insert(texts, ids=ids, metadatas=metas)
            self._nodes.extend(nodes)
            self._keys.extend(keys)
            # copy on write: a retrieval takes the map by reference under the lock
            self._by_key = {**self._by_key, **{k: n for k, n in zip(keys, nodes) if k is not None}}

    def insert(self, document: BaseNode) -> None:
        """Add one document (see :meth:`insert_nodes`; refused on a retriever following an
        index: ``index.insert(document)``)."""
        if self._follows_index:
            raise _following_refusal("insert", "index.insert(document)")
        self._insert_nodes([document])

    def delete_ref_doc(
        self, ref_doc_id: str, delete_from_docstore: bool = False, *, raise_error: bool = False
    ) -> None:
        """Remove every node of document ``ref_doc_id`` (nodes whose ``ref_doc_id`` or own id it
        is), as LlamaIndex's ``BaseIndex.delete_ref_doc(ref_doc_id, delete_from_docstore=False)``
        (its signature: the second positional argument is ``delete_from_docstore``; before
        longctx 0.2 it was ``raise_error``): a document found neither in the retriever nor (with
        ``delete_from_docstore=True``) in its docstore is logged (a ``logging`` warning,
        LlamaIndex's own words) and nothing is deleted.

        Parameters
        ----------
        ref_doc_id : str
            The document.
        delete_from_docstore : bool, default False
            Also delete the document and its nodes from the docstore the retriever was given
            (:meth:`from_defaults` with ``docstore=``), as LlamaIndex does: the document is
            looked up in the docstore, so one deleted from the retriever alone before goes from
            the docstore now. Without a docstore the retriever's nodes are its only store and
            this changes nothing.
        raise_error : bool, default False
            Keyword only: raise ``KeyError`` for a document not found (the default before
            longctx 0.2, when it was the second positional argument).

        Raises
        ------
        KeyError
            ``raise_error=True`` and the document is not found.
        TypeError
            ``delete_from_docstore`` or ``raise_error`` is not a bool.
        ValueError
            On a retriever following an index (``from_defaults(index=...)`` or
            ``from_persist_dir(..., index=...)``), with either value of
            ``delete_from_docstore``: the index's docstore is its source of truth. Deleting
            from the retriever alone hid the document from it for good (even after
            ``index.insert``) while the index still returned it, and a reload brought it
            back; deleting from the index's docstore left the index's vector store and struct
            holding the nodes. Delete through the index
            (``index.delete_ref_doc(ref_doc_id, delete_from_docstore=True)``): the retriever
            follows it on its next query.
        """
        for name, flag in (("delete_from_docstore", delete_from_docstore),
                           ("raise_error", raise_error)):  # fmt: skip
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be True or False, got {flag!r}")
        if self._follows_index:
            raise _following_refusal(
                "delete_from_docstore=True" if delete_from_docstore else "delete_ref_doc",
                f"index.delete_ref_doc({ref_doc_id!r}, delete_from_docstore=True)",
            )
        store = self._docstore if delete_from_docstore else None
        with self._lock:
            gone = self._doc_positions(ref_doc_id)
            ids = [self._nodes[j].node_id for j in gone]
            info = store.get_ref_doc_info(ref_doc_id) if store is not None else None
            if store is not None and store.document_exists(ref_doc_id):
                ids.append(ref_doc_id)  # the document stored as a node (no ref_doc_info)
            ids += list(info.node_ids) if info is not None else []
            if not ids:
                if raise_error:
                    raise KeyError(f"no node of document {ref_doc_id!r} in the retriever")
                logger.warning("ref_doc_id %s not found, nothing deleted.", ref_doc_id)
                return
            self._remove(gone)
            if store is not None:
                for node_id in dict.fromkeys(ids):
                    store.delete_document(node_id, raise_error=False)
                store.delete_ref_doc(ref_doc_id, raise_error=False)
                drop = set(ids)
                self._seen = {i: h for i, h in self._seen.items() if i not in drop}

    def _doc_positions(self, ref_doc_id: str) -> list[int]:
        """Positions of the nodes of document ``ref_doc_id`` (its own or its nodes')."""
        return [
            j
            for j, n in enumerate(self._nodes)
            if n.ref_doc_id == ref_doc_id or n.node_id == ref_doc_id
        ]

    def delete_nodes(self, node_ids: Sequence[str]) -> None:
        """Remove nodes by their own id (unknown ids are ignored).

        Raises
        ------
        ValueError
            A retriever following an index (``from_defaults(index=...)``): delete through the
            index (``index.delete_nodes(node_ids, delete_from_docstore=True)``), which the
            retriever follows.
        """
        if self._follows_index:
            raise _following_refusal(
                "delete_nodes", "index.delete_nodes(node_ids, delete_from_docstore=True)"
            )
        self._delete_nodes(node_ids)

    def _delete_nodes(self, node_ids) -> None:
        with self._lock:
            ids = set(node_ids)
            self._remove([j for j, n in enumerate(self._nodes) if n.node_id in ids])

    def _remove(self, positions) -> None:
        if not positions:
            return
        drop = set(positions)
        keys = [self._keys[j] for j in positions]
        in_index = self._index_ids()  # once, not once per key
        held = [k for k in keys if k is not None and k in in_index]
        if held:
            self._index.delete(held)
        gone = set(keys)
        self._by_key = {k: n for k, n in self._by_key.items() if k not in gone}
        for k in keys:  # the removed nodes' hashes go (the memo holds their texts)
            self._hashes.pop(k, None)
        self._nodes = [n for j, n in enumerate(self._nodes) if j not in drop]
        self._keys = [k for j, k in enumerate(self._keys) if j not in drop]

    def _index_ids(self) -> set:
        return set(self._index.doc_ids) if self._index is not None else set()

    def update_ref_doc(self, document: BaseNode) -> None:
        """Replace document ``document.node_id``: its nodes are deleted and ``document`` is
        inserted (LlamaIndex's ``BaseIndex.update_ref_doc``).

        Raises
        ------
        ValueError
            A retriever following an index (``from_defaults(index=...)``): update through the
            index (``index.update_ref_doc(document)``), which the retriever follows.
        """
        if self._follows_index:
            raise _following_refusal("update_ref_doc", "index.update_ref_doc(document)")
        with self._lock:
            self._remove(self._doc_positions(document.node_id))  # a new one: nothing, no log
            self._insert_nodes([document])

    def refresh(self) -> None:
        """Follow the docstore now (:meth:`from_defaults` with ``index=`` / ``docstore=``):
        insert, update and delete what changed in it.

        A plain retriever's search does it too. One that embeds its chunks (``embed_model=``)
        never embeds inside a search: its search drops the nodes deleted from the docstore and
        searches the nodes it has, and the new or changed ones are embedded (a progress bar on a
        terminal) and searched only after this call; until then each search that finds them
        pending logs it, and the first says so in a warning."""
        self._sync_docstore()

    def _embeds(self) -> bool:
        """Whether inserting a node embeds it (hybrid mode with the retriever's own vectors)."""
        if self._index is None:
            return self._embed_model is not None
        return self._index.unit_vectors is not None

    def _sync_docstore(self, in_search: bool = False) -> None:
        """Follow the docstore given to :meth:`from_defaults`: insert its new nodes, delete the
        ones it lost, and replace those whose hash changed. ``in_search`` with a retriever that
        embeds (:meth:`_embeds`): only the deletions, the rest waits for :meth:`refresh`."""
        store = self._docstore
        if store is None:
            return
        raw = docstore_collections(store)
        state = docstore_state(raw)
        with self._lock:
            synced = self._synced
            if state is not None and synced is not None and synced[1] is self._seen:
                if synced[0] == state:  # the docstore as the last follow found it, unchanged
                    return
        now = docstore_hashes(store, raw)
        with self._lock:
            seen = self._seen
            gone = [i for i in seen if i not in now]
            changed = [i for i, h in now.items() if i in seen and h is not None and h != seen[i]]
            new = [i for i in now if i not in seen]
            if not (gone or changed or new):
                self._synced = None if state is None else (state, seen)
                return
            if in_search and self._embeds():
                self._defer(gone, changed, new)
                return
            if gone or changed:
                self._delete_nodes(gone + changed)
            fresh = store.get_nodes(changed + new, raise_error=False)
            fresh = [n for n in fresh if n is not None]
            if fresh:
                self._insert_nodes(fresh)
            self._seen = {n.node_id: n.hash for n in self._nodes}
            self._pending_warned = False

    def _defer(self, gone, changed, new) -> None:
        """A search of a retriever that embeds: delete the ``gone`` nodes (no embedding) and
        leave ``changed`` and ``new`` to :meth:`refresh`, logged (the first time, warned)."""
        if gone:
            self._delete_nodes(gone)
            drop = set(gone)
            self._seen = {i: h for i, h in self._seen.items() if i not in drop}
        if not (changed or new):
            return
        msg = (
            "MixPRRetriever: %d new and %d changed docstore nodes are not searched yet: this "
            "retriever embeds its chunks (embed_model=) and never inside a search; call "
            "retriever.refresh() after inserting into the index to embed and add them"
        )
        logger.info(msg, len(new), len(changed))
        if not self._pending_warned:
            self._pending_warned = True
            warnings.warn(msg % (len(new), len(changed)), UserWarning, stacklevel=4)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_text(query_bundle.query_str, "query")
        self._sync_docstore(in_search=True)
        with self._lock:  # the index and the nodes of one version (writes hold the lock)
            index = self._index.snapshot() if self._index is not None else None
            by_key = self._by_key  # replaced, never changed, by writes
        if index is None:
            return []
        k, budget = check_size(
            None if self.token_budget else self.similarity_top_k, self.token_budget
        )
        seeds = vr = self.vector_retriever
        if vr is not None:  # asked by the index for a local query only (a global one has no use)
            seeds = lambda: nodes_to_seeds(vr.retrieve(query_bundle), index)  # noqa: E731
        result = index.search(
            query,
            k=k,
            token_budget=budget,
            mode=self.mode,
            filters=self.filters,
            unique_texts=True,
            seeds=seeds,
            explain=self.explain,
            keep_firsts=self.keep_firsts,
        )
        hits, keys = result.hits, result.info["doc_ids"]
        # hashes read from the retriever's memo, new ones written into this call's own dict and
        # merged under the lock for the nodes still held: a delete meanwhile (which drops its
        # nodes' entries under the lock) leaves no entry, and no text, behind
        memo = QueryMemo(self._hashes)
        whole = not self.chunk_nodes
        out = [
            hit_to_node(hits[j], by_key[keys[j]], "mixpr", whole=whole, key=keys[j], memo=memo)
            for j in result.positions(self.order)
            if keys[j] in by_key
        ]
        if memo.fresh:
            with self._lock:
                now = self._by_key
                self._hashes.update(
                    {k: v for k, v in memo.fresh.items() if now.get(k) is by_key[k]}
                )
        return with_unique_ids(out)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # CPU-bound sparse work: run it in a thread so the event loop stays free
        return await asyncio.to_thread(self._retrieve, query_bundle)

    # -- persistence --------------------------------------------------------------------------
    def persist(self, persist_dir: str | os.PathLike) -> None:
        """Save the nodes, the settings and the built index into ``persist_dir/longctx_mixpr/``
        (JSON and ``.npy``, no pickle), beside whatever else is in ``persist_dir`` (a
        ``StorageContext``'s ``docstore.json``, ``index_store.json``... stay untouched). The
        settings saved include ``order`` and ``filters`` (a callable filter cannot be saved: a
        warning says to pass it again to :meth:`from_persist_dir`). The router is not saved:
        pass it again to :meth:`from_persist_dir`.

        Beside inserts and deletes in other threads, the nodes and the index are taken together
        under the retriever's lock (:meth:`longctx.MixPRIndex.snapshot`, constant time) and
        written after it is released: the folder holds one version of the retriever, and
        replaces the one there only once it is whole (issue 44).

        A ``persist_dir`` inside a corpus's index folder (``<corpus>/indexes/...``, links
        resolved) is refused: a later ``longctx index`` that changes the corpus's documents
        replaces that folder whole, and the retriever saved there with it.

        Raises
        ------
        longctx.persist.SaveTargetError
            ``persist_dir/longctx_mixpr`` exists and is not a saved MixPR retriever, or
            ``persist_dir`` is inside a corpus's ``indexes/`` folder (nothing is changed then).
        TypeError, ValueError
            A node's metadata would not come back from JSON as it is (a ``datetime``, ``set``,
            ``bytes``, ``NaN``, a key that is not a ``str``...): the message names the node
            (position and id) and the key. Nothing is written then.
        """
        check_persist_dir(persist_dir)
        self._sync_docstore()
        saved_filters = filter_to_json(self.filters)
        if saved_filters is None and self.filters is not None:
            warnings.warn(
                "MixPRRetriever.persist: a callable filter cannot be saved; pass filters= again "
                "to from_persist_dir()",
                stacklevel=2,
            )
        with self._lock:  # one version: the nodes and the index as they are now, together
            nodes = list(self._nodes)
            index = self._index.snapshot() if self._index is not None else None
        settings = {
            "similarity_top_k": self.similarity_top_k,
            "token_budget": self.token_budget,
            "mode": self.mode,
            "chunk_nodes": self.chunk_nodes,
            "order": self.order,
            "filters": saved_filters,
        }
        write_saved(persist_dir, settings, nodes, index)

    @classmethod
    @retry_on_concurrent_save("persist_dir")
    def from_persist_dir(
        cls,
        persist_dir: str | os.PathLike,
        *,
        router=None,
        embed_model=None,
        index=None,
        docstore=None,
        **kwargs,
    ) -> MixPRRetriever:
        """Load a retriever saved with :meth:`persist` (nothing is rebuilt), with its settings
        and filters. Reads
        ``persist_dir/longctx_mixpr/`` (or ``persist_dir`` itself, the layout of longctx 0.1).
        A retriever built with ``from_defaults(index=...)`` follows its index again when the
        reloaded index is given (``index=load_index_from_storage(storage_context)``, or its
        ``docstore=``): changes made to the index since the save are applied before the first
        query. The other keyword arguments override the saved settings (``filters=None``
        drops saved filters).
        Every node is checked against the saved ids and text digests and against the index's
        texts, so a reordered or edited ``nodes.json`` cannot attribute a text to another node.
        A hybrid index embeds queries with ``embed_model``, or ``Settings.embed_model`` when the
        app set one (the model that embedded its chunks; the packaged all-MiniLM-L6-v2, e.g.
        :class:`~llamaindex_longctx.LongctxEmbedding`, is reloaded by name).

        Raises
        ------
        PersistError
            A missing, damaged, foreign or inconsistent file, named; a ``longctx_mixpr``
            sub-folder that is a symbolic link.
        ValueError
            A hybrid index and no model to embed queries (neither ``embed_model`` nor
            ``Settings.embed_model``, and not the packaged default), or a model of another
            dimension.
        """
        if index is not None and docstore is not None:  # before any file is read
            raise ValueError("give at most one of index and docstore")
        settings, nodes, mixpr_index, rpath = read_saved(
            persist_dir, router=router, embed_model=embed_model
        )
        follow = index.docstore if index is not None else docstore
        if follow is not None:
            kwargs["docstore"] = follow
            kwargs["_follows_index"] = index is not None
        try:
            return cls(nodes=nodes, **{**settings, **kwargs}, _index=mixpr_index)
        except (TypeError, ValueError) as exc:
            if kwargs:
                raise
            raise PersistError(f"{str(rpath)!r}: {str(exc)[:200]}") from None
