"""``GarlicIndex``: GARLIC's hierarchical weighted summary graph (HWDAG) as a LlamaIndex index type.

Wang, Xiang, Gui, He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790: the graph (sec. 3.1) is built once per
document by :func:`longctx.garlic.build_hwdag`; queries run Dynamic Graph Search (sec. 3.2,
:class:`longctx.garlic.search.GarlicSearcher`).

- Every document becomes one index node (the whole text, never split: the graph does its own
  chunking) and one graph; documents never share a summarization batch, so ``insert`` builds only
  the new document's graph and ``delete_ref_doc`` drops that document's whole subgraph.
- The graphs live in the index's own :class:`GarlicIndexStruct` (JSON in the index store), so
  ``StorageContext.persist`` / ``load_index_from_storage`` round-trip them. llama-index-core only
  reloads struct types listed in ``data_structs.registry.INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS``
  and ``indices.registry.INDEX_STRUCT_TYPE_TO_INDEX_CLASS`` (and one unknown struct breaks loading
  of every index in the store): importing this module (or ``llamaindex_longctx``) registers the
  GARLIC struct type there. llama-index-core has no entry-point hook for index types, so in a
  process that never imported it ``load_index_from_storage`` cannot know GARLIC; the persisted
  type name is therefore the instruction itself (:data:`GARLIC_STRUCT_TYPE`), and the error reads
  ``KeyError: 'longctx_garlic: run `import llamaindex_longctx` before load_index_from_storage'``.
  :func:`load_garlic_index` loads without the registries.
- The embedding model is the app's (``embed_model=``, else ``Settings.embed_model`` when the app
  set one, else all-MiniLM-L6-v2); its name is saved in the struct and a different one at search
  time is refused.
- ``as_retriever()`` returns the visited nodes in visit order: level-1 chunks with exact offsets and
  a SOURCE link to their document (the shared ``longctx_*`` metadata keys), information points
  (IPs) as their own nodes with ``longctx_level`` and CHILD links to their children carrying the
  edge weight. ``as_query_engine()`` answers with the search's second turn, from the search's KV
  cache (no second read of the context); ``as_query_engine(llm=...)`` has that LLM write the
  answer from the visited nodes (a ``RetrieverQueryEngine``), as any LlamaIndex index does.
- ``explain=True`` (the index's default, or per retriever / query engine): every returned node,
  chunk or IP, gets ``metadata["longctx_explanation"]`` (JSON-ready, hidden from the LLM and the
  embedder): the path of nodes from the top level that led to it, the parts of the score that
  chose it and where the search stopped, as ``GarlicSearcher.search(explain=True)`` gives it
  (:func:`longctx.garlic.explain.explain_nodes`).
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import Response
from llama_index.core.data_structs.data_structs import IndexStruct
from llama_index.core.indices.base import BaseIndex
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import (
    BaseNode,
    Document,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)
from llama_index.core.storage.docstore.types import RefDocInfo
from llama_index.core.storage.storage_context import StorageContext
from pydantic import ConfigDict

from llamaindex_longctx._garlic_keywords import (
    FRAMEWORK_KEYWORDS,
    checked_search_kwargs,
    refuse_unknown,
)
from llamaindex_longctx._nodes import hit_to_node, with_unique_ids
from longctx.explain import check_explain
from longctx.garlic.options import SEARCH_DEFAULTS, SEARCH_SETTINGS_MAX, check_search_settings
from longctx.index import source_keys
from longctx.types import (
    META_EXPLANATION,
    META_METHOD,
    META_SCORE,
    META_SOURCE_ID,
    METADATA_KEYS,
    Passage,
    SearchResult,
    hit_id,
)

logger = logging.getLogger(__name__)

#: Struct type name in the llama-index registries and in persisted index stores. It spells out the
#: import to add because it is all llama-index-core shows (``KeyError``) when loading a store in a
#: process where this module was never imported (llama-index-core has no registry hook).
GARLIC_STRUCT_TYPE = (
    "longctx_garlic: run `import llamaindex_longctx` before load_index_from_storage"
)
#: The struct type of stores persisted before the name above (still loaded).
GARLIC_STRUCT_TYPE_V0 = "longctx_garlic"
#: Version of the struct's ``search_settings`` object (a store persisted before it has none).
SEARCH_SETTINGS_VERSION = 1
#: The search settings' defaults and caps, once this module's names (session 20): aliases of the
#: core's :data:`longctx.garlic.options.SEARCH_DEFAULTS` and
#: :data:`~longctx.garlic.options.SEARCH_SETTINGS_MAX` (the same objects).
SETTINGS_MAX = SEARCH_SETTINGS_MAX


class _SavedOrDefault:
    """The type of :data:`SAVED_OR_DEFAULT` (one instance)."""

    def __repr__(self) -> str:
        return "<saved or default>"


SAVED_OR_DEFAULT = _SavedOrDefault()
"""The default of :class:`GarlicIndex`'s search settings (``alpha``, ``stop_patience``,
``max_context_tokens``, ``max_new_tokens``): the value saved with a loaded index, else the
setting's default in :data:`longctx.garlic.options.SEARCH_DEFAULTS`. Not meant to be passed:
leave the argument out."""
META_LEVEL = "longctx_level"
META_POSITION = "longctx_visit_position"
META_EDGE_WEIGHT = "longctx_edge_weight"

__all__ = [
    "GARLIC_STRUCT_TYPE",
    "SAVED_OR_DEFAULT",
    "GarlicIndex",
    "GarlicIndexStruct",
    "GarlicGraphRetriever",
    "GarlicQueryEngine",
    "load_garlic_index",
    "register_garlic_index",
]


@dataclass
class GarlicIndexStruct(IndexStruct):
    """The graphs of a :class:`GarlicIndex`: index node id -> ``SearchGraph.to_dict()``."""

    graphs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: name of the embedding model the graphs' node embeddings were made with (``Encoder.name``)
    encoder: str | None = None
    #: ``{"format_version": 1, "alpha", "stop_patience", "max_context_tokens",
    #: "max_new_tokens"}``: the index's search settings (``None`` in stores persisted before).
    #: Typed ``Any`` so that a damaged value reaches the index's check (a ``PersistError``), not
    #: the struct's decoding (an ``AttributeError``).
    search_settings: Any = None

    @classmethod
    def get_type(cls):  # a str key works in the registries (IndexStructType is a str enum)
        return GARLIC_STRUCT_TYPE


class _WholeDocuments(TransformComponent):
    """Each document -> one ``TextNode`` with its whole text (the graph chunks it itself)."""

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[BaseNode]:
        out = []
        for d in nodes:
            if not isinstance(d, Document):
                out.append(d)
                continue
            out.append(
                TextNode(
                    id_=f"{d.id_}#garlic",
                    text=d.get_content(),
                    metadata=dict(d.metadata),
                    excluded_llm_metadata_keys=list(d.excluded_llm_metadata_keys),
                    excluded_embed_metadata_keys=list(d.excluded_embed_metadata_keys),
                    relationships={NodeRelationship.SOURCE: d.as_related_node_info()},
                )
            )
        return out


class GarlicIndex(BaseIndex[GarlicIndexStruct]):
    """GARLIC's HWDAG as a LlamaIndex index (one graph per document, searched as one).

    Parameters
    ----------
    nodes, index_struct, storage_context, ... :
        As for every ``BaseIndex``; use :meth:`from_documents` to build.
    model, tokenizer : optional
        Causal LM (with a chat template) and tokenizer for building and searching; default
        SmolLM2-135M-Instruct. Must be the model the graphs were built with.
    embed_model : optional
        Embedding model for node and question embeddings (a LlamaIndex ``BaseEmbedding`` or
        anything :func:`longctx.embeddings.get_encoder` takes); default ``Settings.embed_model``
        when the app set one, else all-MiniLM-L6-v2. Its name is saved with the graphs; searching
        with another model raises ``ValueError``.
    encoder : optional
        The same as ``embed_model`` (its older name); give at most one.
    graph_builder : callable, optional
        ``(texts, model, tokenizer, **build_kwargs) -> HWDAG``, called once per document; default
        :func:`longctx.garlic.build_hwdag`, and several documents ingested at once are built
        together by :func:`longctx.garlic.build_hwdags` (shared decoding passes, the same graphs).
    build_kwargs : dict, optional
        Passed to the builder (``batch_tokens``, ``max_levels``, ``batch_size``,
        ``force_bullets``...).
    alpha : float in [0, 1], default :data:`SAVED_OR_DEFAULT`
        Weight of the embedding similarity in a node's score (``1 - alpha`` for the attention
        score), see :class:`longctx.garlic.search.GarlicSearcher`; default: the saved value of
        a loaded index, else 0.5.
    stop_patience : int in [1, 1_000_000], default :data:`SAVED_OR_DEFAULT`
        Number of "Yes" decisions before the search stops; default: the saved value, else 1.
    max_context_tokens : int in [1, 2**31 - 1] or None, default :data:`SAVED_OR_DEFAULT`
        Largest first-turn prompt, in model tokens (``None``: the model window minus the answer
        and second-turn tokens); default: the saved value, else ``None``.
    max_new_tokens : int in [1, 2**20], default :data:`SAVED_OR_DEFAULT`
        Answer length cap, in tokens; default: the saved value, else 64.

        The four are persisted with the index (its struct's ``search_settings``): a loaded
        index (``load_index_from_storage``, :func:`load_garlic_index`) takes the saved ones,
        except those given again, which win (their saved values are not read); a store
        persisted before they were saved loads with the defaults. The bounds
        (:data:`longctx.garlic.options.SEARCH_SETTINGS_MAX`, LangChain's ``GarlicRetriever``'s
        too) are the same at construction and at load, so a store persisted by longctx always
        loads.
    explain : bool, default False
        The default of :meth:`as_retriever` and :meth:`as_query_engine`: give every returned
        node ``metadata["longctx_explanation"]`` (see the module doc).
    """

    index_struct_cls = GarlicIndexStruct

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        index_struct: GarlicIndexStruct | None = None,
        *,
        model=None,
        tokenizer=None,
        encoder=None,
        embed_model=None,
        graph_builder=None,
        build_kwargs: dict | None = None,
        alpha: float = SAVED_OR_DEFAULT,
        stop_patience: int = SAVED_OR_DEFAULT,
        max_context_tokens: int | None = SAVED_OR_DEFAULT,
        max_new_tokens: int = SAVED_OR_DEFAULT,
        explain: bool = False,
        **kwargs: Any,
    ) -> None:
        from llamaindex_longctx._embed import app_encoder

        refuse_unknown(kwargs, _CONSTRUCTOR_KEYWORDS, "GarlicIndex")
        given = {"alpha": alpha, "stop_patience": stop_patience,
                 "max_context_tokens": max_context_tokens, "max_new_tokens": max_new_tokens}  # fmt: skip
        given = check_search_settings({k: v for k, v in given.items() if v is not SAVED_OR_DEFAULT})
        if encoder is not None and embed_model is not None:
            raise ValueError("give embed_model or encoder (its older name), not both")
        self._model = model
        self._tokenizer = tokenizer
        self._encoder = app_encoder(embed_model if embed_model is not None else encoder)
        self._graph_builder = graph_builder  # None: longctx.garlic.build.build_each's default
        self._build_kwargs = dict(build_kwargs or {})
        self._search_kwargs = {**SEARCH_DEFAULTS, **given}  # the saved ones join at load
        self.explain = check_explain(explain)
        self._searcher = None
        self._searcher_lock = threading.Lock()
        #: index node id -> its graph as a SearchGraph, checked against the node's text
        self._graphs: dict[str, Any] = {}
        kwargs.setdefault("transformations", [_WholeDocuments()])
        if index_struct is not None:  # checked, and its settings set, before BaseIndex stores it
            storage_context = kwargs.get("storage_context") or StorageContext.from_defaults()
            kwargs["storage_context"] = storage_context
            self._check_loaded_struct(index_struct, storage_context.docstore)
            saved = self._saved_settings(index_struct, skip=given)
            self._search_kwargs = {**SEARCH_DEFAULTS, **saved, **given}
            index_struct.search_settings = self._settings_to_save()
        # BaseIndex stores the struct in the index store once (a serialization of every graph):
        # a built one carries its settings from _build_index_from_nodes
        super().__init__(nodes=nodes, index_struct=index_struct, **kwargs)

    def _settings_to_save(self) -> dict:
        """The search settings in force, as the struct persists them (so a persist keeps them)."""
        return {"format_version": SEARCH_SETTINGS_VERSION, **self._search_kwargs}

    def _saved_settings(self, struct: GarlicIndexStruct, skip=()) -> dict:
        """The loaded ``struct``'s search settings (``{}`` for a store persisted before they
        were saved), each checked as the constructor checks it, except those in ``skip`` (given
        again: their saved values are never used, so never checked).

        Raises
        ------
        longctx.persist.PersistError
            Naming the index store entry and the field: not an object, another format version,
            an unknown setting or a value out of range.
        """
        from longctx.persist import PersistError

        raw = struct.search_settings
        if raw is None:  # a store persisted before they were saved, or from_corpus
            logger.info("GarlicIndex %s: no saved search settings: the defaults", struct.index_id)
            return {}
        where = (
            f"the GARLIC index {str(struct.index_id)[:80]!r} of the index store "
            "(index_store.json): field 'search_settings'"
        )
        if not isinstance(raw, dict):
            raise PersistError(f"{where} must be an object")
        version = raw.get("format_version")
        if isinstance(version, bool) or version != SEARCH_SETTINGS_VERSION:
            raise PersistError(
                f"{where} has format version {str(version)[:40]!r}; this longctx reads "
                f"{SEARCH_SETTINGS_VERSION}: upgrade longctx, or build the index again"
            )
        settings = {k: v for k, v in raw.items() if k != "format_version"}
        unknown = sorted(str(k)[:40] for k in set(settings) - set(SEARCH_DEFAULTS))
        if unknown:
            raise PersistError(f"{where} holds unknown settings {unknown[:5]}")
        try:  # read from disk: bounded (SEARCH_SETTINGS_MAX)
            return check_search_settings({k: v for k, v in settings.items() if k not in skip})
        except (TypeError, ValueError) as exc:
            raise PersistError(f"{where}: {exc}") from None

    @classmethod
    def from_documents(cls, documents: Sequence[Document], **kwargs: Any) -> GarlicIndex:
        """Build one graph per document (the documents are never split beforehand).

        Raises
        ------
        TypeError
            A keyword neither the constructor's nor LlamaIndex's ``BaseIndex.from_documents``'s
            (:data:`FRAMEWORK_KEYWORDS`), naming it, before any document is read or model
            loaded.
        """
        refuse_unknown(kwargs, _CONSTRUCTOR_KEYWORDS, "GarlicIndex.from_documents")
        kwargs.setdefault("transformations", [_WholeDocuments()])
        return super().from_documents(documents, **kwargs)

    @classmethod
    def from_corpus(
        cls, out, *, storage_options: dict | None = None, metadata: dict | None = None, **kwargs
    ) -> GarlicIndex:
        """Load a GARLIC corpus built by :func:`longctx.corpus.build_indexes` (or ``longctx index
        --method garlic``) from a folder or fsspec URL: every finished document's graph, searched
        as one (documents are never mixed in a batch, so the graphs are disjoint).

        Each document becomes one index node with id = its corpus ``doc_id`` and its whole text
        (``metadata``: optional ``{doc_id: dict}``); nothing is rebuilt. ``**kwargs`` as for the
        constructor: pass the ``model``/``tokenizer`` the corpus was built with and the same
        ``encoder``.

        Raises
        ------
        longctx.persist.PersistError
            No corpus at ``out``, a damaged one (a graph whose chunks are not its text, a text
            that is not the one the corpus manifest records), or one holding no GARLIC graph.
        ValueError
            A graph without node embeddings (built with ``encoder=False``).
        """
        from longctx.corpus import load_corpus
        from longctx.garlic import HWDAG
        from longctx.garlic.search import as_search_graph
        from longctx.persist import PersistError

        graphs = load_corpus(out, storage_options=storage_options)
        if not graphs or not all(isinstance(g, HWDAG) for g in graphs.values()):
            raise PersistError(f"{str(out)!r} holds no finished GARLIC graph")
        metadata = dict(metadata or {})
        struct = GarlicIndexStruct()
        nodes = []
        for doc_id, g in graphs.items():
            struct.graphs[doc_id] = as_search_graph(g).to_dict()
            nodes.append(
                TextNode(
                    id_=doc_id,
                    text=g.texts[0],
                    metadata=dict(metadata.get(doc_id, {})),
                    relationships={
                        NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id),
                    },
                )
            )
        # the document nodes first: the index checks every graph against its node's text
        storage_context = kwargs.pop("storage_context", None) or StorageContext.from_defaults()
        storage_context.docstore.add_documents(nodes, allow_update=True)
        for node in nodes:
            storage_context.docstore.set_document_hash(node.node_id, node.hash)
        return cls(index_struct=struct, storage_context=storage_context, **kwargs)

    # -- building -------------------------------------------------------------------------------
    def _search_graphs(self, nodes: Sequence[BaseNode]) -> list:
        """One graph per node (a ``SearchGraph``, its level-1 chunks checked against the node's
        text). With the default builder the nodes' graphs are built together
        (:func:`longctx.garlic.build_hwdags`: their summarization prompts share decoding passes,
        ``batch_size`` rows each; each graph equals the one built alone)."""
        from longctx.garlic.build import build_each
        from longctx.garlic.search import as_search_graph, check_chunk_texts

        texts = []
        for node in nodes:
            text = node.get_content()
            if not text.strip():
                raise ValueError(f"node {node.node_id!r} has no text to build a GARLIC graph from")
            texts.append(text)
        if not texts:
            return []
        self._resolve_model()
        kw = dict(self._build_kwargs)
        builder = self._graph_builder
        if builder is None:
            kw.setdefault("encoder", self._encoder)  # the search embeds the question with it
        graphs = [
            as_search_graph(g)
            for g in build_each(texts, self._model, self._tokenizer, builder=builder, **kw)
        ]
        for node, text, g in zip(nodes, texts, graphs):
            try:  # a chunk is returned as the node's text: it must be that text
                check_chunk_texts(g, text)
            except ValueError as exc:
                raise ValueError(
                    f"the graph built for node {node.node_id!r} is not a graph of its text: {exc}"
                ) from None
        return graphs

    def _resolve_model(self) -> None:
        """Load the default model once (SmolLM2) when none was given; shared by build and search."""
        if self._model is None and self._tokenizer is None:
            from longctx.models import load_causal_lm

            self._model, self._tokenizer = load_causal_lm()

    def _build_index_from_nodes(self, nodes: Sequence[BaseNode], **kw: Any) -> GarlicIndexStruct:
        struct = GarlicIndexStruct(
            encoder=self._encoder.name, search_settings=self._settings_to_save()
        )
        for node, graph in zip(nodes, self._search_graphs(nodes)):
            struct.graphs[node.node_id] = graph.to_dict()
            self._graphs[node.node_id] = graph
        return struct

    def _check_loaded_struct(self, struct: GarlicIndexStruct, docstore) -> None:
        """Check a struct given to the constructor (``load_index_from_storage``,
        :func:`load_garlic_index`, :meth:`from_corpus`): every graph parsed field by field and
        its level-1 chunks compared with its document node's text in ``docstore``, so a forged
        chunk is a ``PersistError`` here, at load, never a retrieved node.

        Raises
        ------
        longctx.persist.PersistError
            Naming the index store entry and the field: a damaged graph, a document node the
            docstore lacks (nothing to check the graph's texts against), or a level-1 text that
            differs from its document.
        """
        from longctx.garlic.search import SearchGraph
        from longctx.persist import PersistError

        where = (
            f"the GARLIC index {str(struct.index_id)[:80]!r} of the index store (index_store.json)"
        )
        if not isinstance(struct.graphs, dict):
            raise PersistError(f"{where}: field 'graphs' must be an object")
        if struct.encoder is not None and not isinstance(struct.encoder, str):
            raise PersistError(f"{where}: field 'encoder' must be a str or null")
        for node_id, d in struct.graphs.items():
            field = f"graphs[{str(node_id)[:80]!r}]"
            node = docstore.get_node(node_id, raise_error=False)
            if node is None:
                raise PersistError(
                    f"{where}: field {field!r}: the docstore (docstore.json) lacks its document "
                    f"node {str(node_id)[:80]!r}, so the graph's texts cannot be checked against "
                    "the document: persist and load the docstore with the index"
                )
            try:
                self._graphs[node_id] = SearchGraph.from_dict(d, source_text=node.get_content())
            except (TypeError, ValueError) as exc:
                raise PersistError(f"{where}: field {field!r}: {exc}") from None

    def _check_encoder(self) -> None:
        saved = self._index_struct.encoder
        if saved is not None and self._index_struct.graphs and saved != self._encoder.name:
            raise ValueError(
                f"this GarlicIndex was built with the embedding model {saved!r} but is used with "
                f"{self._encoder.name!r}: pass the model it was built with as embed_model= "
                "(or set it as Settings.embed_model)"
            )

    def _insert(self, nodes: Sequence[BaseNode], **kw: Any) -> None:
        self._check_encoder()
        if self._index_struct.encoder is None and not self._index_struct.graphs:
            self._index_struct.encoder = self._encoder.name
        for node, graph in zip(nodes, self._search_graphs(nodes)):
            self._index_struct.graphs[node.node_id] = graph.to_dict()
            self._graphs[node.node_id] = graph
        self._searcher = None

    def _delete_node(self, node_id: str, **kw: Any) -> None:
        self._index_struct.graphs.pop(node_id, None)
        self._graphs.pop(node_id, None)
        self._searcher = None

    @property
    def ref_doc_info(self) -> dict[str, RefDocInfo]:
        """Ingested documents -> their index nodes (one per document)."""
        out = {}
        for node in self.docstore.get_nodes(list(self._index_struct.graphs), raise_error=False):
            if node is None or node.ref_doc_id is None:
                continue
            info = self.docstore.get_ref_doc_info(node.ref_doc_id)
            if info is not None:
                out[node.ref_doc_id] = info
        return out

    # -- searching ------------------------------------------------------------------------------
    def searcher(self):
        """The :class:`~longctx.garlic.search.GarlicSearcher` over every document's graph
        (built on first use, rebuilt after ``insert`` / ``delete``)."""
        from longctx.garlic.search import GarlicSearcher, merge_graphs

        with self._searcher_lock:
            s = self._searcher
            if s is None:
                ids = list(self._index_struct.graphs)
                if not ids:
                    raise ValueError("GarlicIndex holds no documents")
                self._check_encoder()
                graphs = [self._graph(i) for i in ids]
                self._resolve_model()
                s = GarlicSearcher(
                    merge_graphs(graphs, ids),
                    self._model,
                    self._tokenizer,
                    encoder=self._encoder,
                    **self._search_kwargs,
                )
                s.node_ids = ids
                self._searcher = s
            return s

    def _graph(self, node_id: str):
        """The graph of index node ``node_id`` as a ``SearchGraph``: the one built or loaded,
        else (a struct changed in place since) parsed and checked against the node's text.

        Raises
        ------
        ValueError
            The docstore lacks the node, or the graph does not fit its text.
        """
        from longctx.garlic.search import SearchGraph

        g = self._graphs.get(node_id)
        if g is None:
            node = self.docstore.get_node(node_id, raise_error=False)
            if node is None:
                raise ValueError(
                    f"the docstore lacks node {node_id!r}: its GARLIC graph's texts cannot be "
                    "checked against the document"
                )
            g = SearchGraph.from_dict(
                self._index_struct.graphs[node_id], source_text=node.get_content()
            )
            self._graphs[node_id] = g
        return g

    def search(self, query: str, **kwargs: Any) -> SearchResult:
        """One Dynamic Graph Search (see ``GarlicSearcher.search``)."""
        return self.searcher().search(query, **kwargs)

    def result_to_nodes(self, result: SearchResult, searcher=None) -> list[NodeWithScore]:
        """Visited nodes of ``result`` as ``NodeWithScore``, in visit order; with their
        ``longctx_explanation`` when ``result`` was searched with ``explain=True``."""
        s = searcher or self.searcher()
        g = s.graph
        pos = {nid: p for p, nid in enumerate(g.ids)}
        sources = {}
        for k, nid in enumerate(s.node_ids):
            node = self.docstore.get_node(nid, raise_error=False)
            ref = node.ref_doc_id if node is not None and node.ref_doc_id else nid
            meta = dict(node.metadata) if node is not None else {}
            sources[k] = TextNode(id_=ref, text="", metadata=meta)
        by_pos = {(h.source, h.start, h.end): h for h in result.hits}
        why = result.info.get("explanations") or {}
        # two nodes of one document share their ref_doc_id: key them apart (source_keys)
        keys = source_keys([sources[k].node_id for k in range(len(sources))], "node ids")
        chunk_ids = {}
        for p in range(len(g)):
            if g.levels[p] == 1 and g.starts[p] >= 0:
                chunk_ids[p] = hit_id(keys[g.sources[p]], _span(g, p))
        out = []
        for v in result.info["visited_nodes"]:
            p = pos[v["id"]]
            src = sources[g.sources[p]]
            if g.levels[p] == 1 and g.starts[p] >= 0:
                hit = by_pos[(g.sources[p], int(g.starts[p]), int(g.ends[p]))]
                nws = hit_to_node(hit, src, "garlic", key=keys[g.sources[p]])
                nws.node.metadata[META_LEVEL] = 1
                nws.node.metadata[META_POSITION] = v["position"]
                out.append(nws)
                continue
            row = g.edges[[p], :].tocoo()
            children = [
                RelatedNodeInfo(
                    node_id=chunk_ids.get(int(c), g.ids[int(c)]),
                    metadata={META_EDGE_WEIGHT: float(w), META_LEVEL: int(g.levels[int(c)])},
                )
                for c, w in zip(row.col, row.data)
            ]
            meta = {
                **src.metadata,
                META_LEVEL: int(g.levels[p]),
                META_POSITION: v["position"],
                META_SCORE: float(v["score"]),
                META_METHOD: "garlic",
                META_SOURCE_ID: src.node_id,
            }
            if v["id"] in why:
                meta[META_EXPLANATION] = why[v["id"]]
            hidden = [*METADATA_KEYS, META_EXPLANATION, META_LEVEL, META_POSITION]
            node = TextNode(
                id_=g.ids[p],
                text=v["text"],
                metadata=meta,
                excluded_llm_metadata_keys=hidden,
                excluded_embed_metadata_keys=hidden,
                relationships={
                    NodeRelationship.SOURCE: src.as_related_node_info(),
                    NodeRelationship.CHILD: children,
                },
            )
            out.append(NodeWithScore(node=node, score=float(v["score"])))
        return with_unique_ids(out)

    def as_retriever(self, **kwargs: Any) -> GarlicGraphRetriever:
        """A retriever returning the visited nodes (kwargs: search settings per query,
        :data:`SEARCH_KEYWORDS`; ``explain``: default the index's; ``callback_manager``).

        Raises
        ------
        TypeError
            An unknown keyword (a misspelt setting), naming it and listing the accepted ones.
        ValueError
            A search setting out of its bounds.
        """
        return GarlicGraphRetriever(self, **kwargs)

    def as_query_engine(self, llm=None, **kwargs: Any):
        """A query engine over the index.

        ``llm=None`` (default): a :class:`GarlicQueryEngine`, answering with the search's second
        turn (GARLIC sec. 3.2: the search model answers from its KV cache, no second read of the
        context); ``kwargs`` are search settings (``stop_patience``, ``max_context_tokens``...).

        ``llm`` given: a LlamaIndex ``RetrieverQueryEngine`` over :meth:`as_retriever`, in which
        that LLM writes the answer from the visited nodes; ``kwargs`` naming arguments of
        ``RetrieverQueryEngine.from_args`` (``response_mode``, ``node_postprocessors``,
        ``text_qa_template``, ``streaming``...) go there, the others are search settings.

        ``explain`` (default the index's): the source nodes carry ``longctx_explanation``.
        An unknown keyword (a misspelt setting) raises ``TypeError`` naming it.
        """
        if llm is None:
            kwargs = checked_search_kwargs(kwargs, "GarlicIndex.as_query_engine")
            return GarlicQueryEngine(index=self, search_kwargs=kwargs)
        from llama_index.core.query_engine import RetrieverQueryEngine

        engine_args = set(inspect.signature(RetrieverQueryEngine.from_args).parameters) - {
            "retriever",
            "llm",
            "kwargs",
        }
        engine_kw = {k: v for k, v in kwargs.items() if k in engine_args}
        search_kw = {k: v for k, v in kwargs.items() if k not in engine_args}
        # named as the caller's method, with the engine's own arguments in the list
        checked_search_kwargs(search_kw, "GarlicIndex.as_query_engine", also=engine_args)
        return RetrieverQueryEngine.from_args(self.as_retriever(**search_kw), llm=llm, **engine_kw)


#: every keyword GarlicIndex's constructor and from_documents take
_CONSTRUCTOR_KEYWORDS = FRAMEWORK_KEYWORDS | (
    set(inspect.signature(GarlicIndex.__init__).parameters) - {"self", "kwargs"}
)


def _span(g, p) -> Passage:
    return Passage(int(g.starts[p]), int(g.ends[p]), g.texts[p], 0.0, 0, int(g.sources[p]))


class GarlicGraphRetriever(BaseRetriever):
    """Retriever over a :class:`GarlicIndex`: one Dynamic Graph Search per query, the visited
    nodes in visit order (the answer is not generated: ``answer=False``). ``explain`` (default
    the index's): each node gets ``metadata["longctx_explanation"]`` (see the module doc)."""

    def __init__(
        self,
        index: GarlicIndex,
        callback_manager=None,
        explain: bool | None = None,
        **search_kwargs: Any,
    ):
        self._search_kwargs = checked_search_kwargs(
            search_kwargs, "GarlicIndex.as_retriever", also=("callback_manager",)
        )
        self._index = index
        self.explain = index.explain if explain is None else check_explain(explain)
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        kw = {"answer": False, **self._search_kwargs, "explain": self.explain}
        s = self._index.searcher()
        return self._index.result_to_nodes(s.search(query_bundle.query_str, **kw), s)


class GarlicQueryEngine(CustomQueryEngine):
    """Answers with GARLIC's second turn; ``source_nodes`` are the visited nodes (with their
    ``longctx_explanation`` when ``search_kwargs["explain"]``, default the index's ``explain``,
    is true) and ``metadata`` the search's ``info`` (stop reason, tokens run...) plus its
    ``trace``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    index: Any
    search_kwargs: dict = {}

    def custom_query(self, query_str: str) -> Response:
        s = self.index.searcher()
        kw = {"explain": self.index.explain, **self.search_kwargs}
        result = s.search(query_str, answer=True, **kw)
        info = {k: v for k, v in result.info.items() if k != "visited_nodes"}
        return Response(
            response=result.info["answer"],
            source_nodes=self.index.result_to_nodes(result, s),
            metadata={**info, "trace": [dict(t) for t in result.trace]},
        )


def register_garlic_index() -> None:
    """Add :data:`GARLIC_STRUCT_TYPE` (and the older ``"longctx_garlic"``) to llama-index-core's
    struct and index registries (idempotent;
    done on import of this module) so ``load_index_from_storage`` reloads GarlicIndex."""
    from llama_index.core.data_structs.registry import INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS
    from llama_index.core.indices.registry import INDEX_STRUCT_TYPE_TO_INDEX_CLASS

    for name in (GARLIC_STRUCT_TYPE, GARLIC_STRUCT_TYPE_V0):
        INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS[name] = GarlicIndexStruct
        INDEX_STRUCT_TYPE_TO_INDEX_CLASS[name] = GarlicIndex


def load_garlic_index(storage_context, index_id: str | None = None, **kwargs: Any) -> GarlicIndex:
    """Load a persisted :class:`GarlicIndex` without llama-index's registries.

    Reads the raw struct JSON from the storage context's key-value index store.

    Raises
    ------
    ValueError
        No GARLIC index in the store, several and no ``index_id``, or ``index_id`` not GARLIC.
    """
    from llama_index.core.constants import DATA_KEY, TYPE_KEY

    store = storage_context.index_store
    kv, collection = getattr(store, "_kvstore", None), getattr(store, "_collection", None)
    if kv is None or collection is None:
        raise ValueError("load_garlic_index needs a key-value index store (KVIndexStore)")
    found = {
        k: v
        for k, v in kv.get_all(collection=collection).items()
        if v.get(TYPE_KEY) in (GARLIC_STRUCT_TYPE, GARLIC_STRUCT_TYPE_V0)
    }
    if index_id is None:
        if len(found) != 1:
            raise ValueError(f"index_id is required: {len(found)} GARLIC indices in the store")
        index_id = next(iter(found))
    if index_id not in found:
        raise ValueError(f"index_id {index_id!r} is not a GARLIC index of this store")
    data = found[index_id][DATA_KEY]
    struct = (
        GarlicIndexStruct.from_json(data)
        if isinstance(data, str)
        else GarlicIndexStruct.from_dict(data)
    )
    return GarlicIndex(index_struct=struct, storage_context=storage_context, **kwargs)


register_garlic_index()
