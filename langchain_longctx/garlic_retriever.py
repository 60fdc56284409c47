"""LangChain retriever for GARLIC (Wang, Xiang, Gui, He, "GARLIC: LLM-Guided Dynamic Progress
Control with Hierarchical Weighted Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.2):
Dynamic Graph Search over graphs built once (or loaded)."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from langchain_longctx._documents import (
    hit_to_document,
    with_unique_ids,
)
from langchain_longctx._persist import load_retriever, loaded_parts, loading, save_retriever
from longctx.checks import check_size_field, check_text
from longctx.explain import check_explain
from longctx.index import source_keys
from longctx.persist import PersistError
from longctx.persist.reader import retry_on_concurrent_save
from longctx.types import (
    META_EXPLANATION,
    META_METHOD,
    META_SCORE,
    META_SOURCE_ID,
    SearchResult,
)

META_LEVEL = "longctx_level"
META_POSITION = "longctx_visit_position"
META_CHILDREN = "longctx_children"


class GarlicRetriever(BaseRetriever):
    """GARLIC Dynamic Graph Search: the LLM decides how many nodes to read.

    Each document gets one HWDAG (built at construction with ``graph_builder``, default
    :func:`longctx.garlic.build_hwdag`, or given as ``graphs``: one built or loaded HWDAG per
    document); every ``invoke`` runs one search over all of them and returns the visited nodes in
    visit order, at most ``k`` when ``k`` is set.

    **Key init args**

    - `documents` (`list[Document]`): The long documents.
    - `graphs` (`list | None`): One HWDAG per document (``longctx.garlic.HWDAG.load(dir)``), instead
      of building. Every level-1 chunk must have a span and be its document's text there
      (``ValueError`` otherwise), as must the chunks of the graphs ``graph_builder`` builds.
    - `model, tokenizer`: The causal LM the graphs were built with and its tokenizer (default
      SmolLM2-135M-Instruct).
    - `embeddings` (`Embeddings | None`): The app's LangChain ``Embeddings`` for node and question
      embeddings (one model for both; default all-MiniLM-L6-v2). ``encoder`` is its older name (any
      encoder :func:`longctx.embeddings.get_encoder` takes); give at most one.
    - `k` (`int | None`): Cap on the documents returned (``None``: every visited node).
    - `stop_patience, alpha, max_context_tokens`: Search settings (see
      ``longctx.garlic.search.GarlicSearcher``), within the bounds of LlamaIndex's
      ``GarlicIndex`` (``longctx.garlic.options.SEARCH_SETTINGS_MAX``: ``stop_patience`` up to
      1,000,000, ``max_context_tokens`` up to 2**31 - 1).

    **Usage**

    ```python
    from langchain_longctx import GarlicRetriever

    retriever = GarlicRetriever(documents=[Document(page_content=book, id="book")])
    docs = retriever.invoke("Where does the mother send her kittens?")
    retriever.save("./garlic")  # graphs as JSON; the model is given again on load
    retriever = GarlicRetriever.load("./garlic", model=model, tokenizer=tokenizer)
    ```

    Level-1 chunks come back as ``Document`` with the chunk text exactly, id
    ``"{source id}#{start}-{end}"`` and the shared ``longctx_*`` keys (offsets into the source);
    information points (IPs) with ``longctx_level`` >= 2, no offsets, id ``"{source id}#{node}"``
    and ``longctx_children``: ``[[child id, edge weight], ...]``. With ``explain=True`` (a field;
    ``invoke(..., explain=...)`` overrides it) every document, chunk or IP, also holds
    ``longctx_explanation`` (JSON-ready): the path of nodes from the top level that led to it,
    the parts of the score that chose it and where the search stopped, as
    ``GarlicSearcher.search(explain=True)`` gives it (:func:`longctx.garlic.explain.explain_nodes`).
    """

    # an unknown argument (a typo, LangChain's ``search_kwargs``) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    documents: list[Document] = Field(default_factory=list, repr=False)
    graphs: list | None = Field(default=None, repr=False, description="One HWDAG per document")
    model: Any = Field(default=None, repr=False)
    tokenizer: Any = Field(default=None, repr=False)
    embeddings: Any = Field(
        default=None, repr=False, description="LangChain Embeddings; default all-MiniLM-L6-v2"
    )
    encoder: Any = Field(default=None, repr=False, description="Older name of embeddings")
    graph_builder: Any = Field(default=None, repr=False)
    build_kwargs: dict = Field(default_factory=dict)
    k: int | None = Field(default=None, ge=1, description="Cap on the documents returned")
    stop_patience: int = Field(default=1, ge=1)
    alpha: float = Field(default=0.5, ge=0.0, le=1.0)
    max_context_tokens: int | None = Field(default=None, ge=1)
    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: the path from the top level, the parts "
        "of the score and the stop reason; invoke(..., explain=...) overrides it",
    )

    _searcher: Any = PrivateAttr(default=None)
    _encoder: Any = PrivateAttr(default=None)
    _sources: list[int] = PrivateAttr(default_factory=list)
    _check_sizes = field_validator("k", mode="before")(check_size_field)

    @field_validator("stop_patience", "alpha", "max_context_tokens", mode="before")
    @classmethod
    def _check_search_setting(cls, value: Any, info: ValidationInfo) -> Any:
        """The core's bounds (:func:`longctx.garlic.options.check_search_settings`), the ones
        LlamaIndex's ``GarlicIndex`` applies, with its message naming the setting; ``True`` and
        ``"3"`` refused where pydantic would coerce them."""
        from longctx.garlic.options import check_search_settings

        return check_search_settings({info.field_name: value})[info.field_name]

    def model_post_init(self, context: Any) -> None:
        from longctx.embeddings import get_encoder
        from longctx.garlic.search import as_search_graph, check_chunk_texts, merge_graphs

        if self.embeddings is not None and self.encoder is not None:
            raise ValueError("give embeddings or encoder (its older name), not both")
        self._encoder = get_encoder(
            self.embeddings if self.embeddings is not None else self.encoder
        )
        self._sources = [i for i, d in enumerate(self.documents) if d.page_content.strip()]
        if self._sources and self.model is None and self.tokenizer is None:
            from longctx.models import load_causal_lm  # once, shared by build and search

            self.model, self.tokenizer = load_causal_lm()
        loaded = loaded_parts().get("garlic_graph")
        if loaded is not None:  # from load(): the merged graph as saved
            graph, saved_encoder = loaded
            if saved_encoder is not None and saved_encoder != self._encoder.name:
                raise ValueError(
                    f"the saved graphs were built with the embedding model {saved_encoder!r}, "
                    f"not {self._encoder.name!r}: pass that model as embeddings="
                )
            self._searcher = self._make_searcher(graph)
            return
        if self.graphs is not None:
            if len(self.graphs) != len(self.documents):
                raise ValueError("graphs must hold one graph per document")
            graphs = [as_search_graph(self.graphs[i]) for i in self._sources]
            what = "graphs[{i}]"
        else:
            from longctx.garlic.build import build_each

            kw = dict(self.build_kwargs)
            if self.graph_builder is None:
                kw.setdefault("encoder", self._encoder)  # the search embeds the question with it
            built = build_each(
                [self.documents[i].page_content for i in self._sources],
                self.model,
                self.tokenizer,
                builder=self.graph_builder,
                **kw,
            )
            graphs = [as_search_graph(g) for g in built]
            what = "the graph_builder's graph of documents[{i}]"
        for i, g in zip(self._sources, graphs):
            try:  # a chunk is returned as the document's text: it must be that text
                check_chunk_texts(g, self.documents[i].page_content)
            except ValueError as exc:
                raise ValueError(
                    f"{what.format(i=i)} is not a graph of documents[{i}]: {exc}"
                ) from None
        if graphs:
            self._searcher = self._make_searcher(
                merge_graphs(graphs, [str(i) for i in self._sources])
            )

    def _make_searcher(self, graph):
        from longctx.garlic.search import GarlicSearcher

        return GarlicSearcher(
            graph,
            self.model,
            self.tokenizer,
            encoder=self._encoder,
            alpha=self.alpha,
            stop_patience=self.stop_patience,
            max_context_tokens=self.max_context_tokens,
        )

    # -- persistence --------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Save the documents, the settings and the searched graph (all documents' HWDAGs
        merged, node embeddings included) in folder ``path`` (JSON; the folder is replaced),
        with the embedding model's name. The model, tokenizer and embeddings are not saved:
        give them again to :meth:`load`.

        Raises
        ------
        TypeError
            A document's metadata is not JSON-serializable.
        """
        settings = {
            "k": self.k,
            "stop_patience": self.stop_patience,
            "alpha": self.alpha,
            "max_context_tokens": self.max_context_tokens,
            "encoder": self._encoder.name,
        }
        graph = {"graph": self._searcher.graph.to_dict()} if self._searcher is not None else None
        save_retriever(
            path, "langchain.garlic_retriever", settings, self.documents, json_files=graph
        )

    @classmethod
    @retry_on_concurrent_save("path")
    def load(cls, path: str | os.PathLike, **kwargs: Any) -> GarlicRetriever:
        """Load a retriever written by :meth:`save` (no graph is rebuilt); ``kwargs`` give the
        model as to the constructor (``model``, ``tokenizer``, ``embeddings``) and may override
        the saved search settings.

        Raises
        ------
        PersistError
            A missing, damaged or foreign file, named; a level-1 text of ``graph.json`` that is
            not its saved document's text at its offsets (field ``texts[p]``).
        ValueError
            ``embeddings`` is not the model the graphs were built with (by name).
        """
        from longctx.garlic.search import SearchGraph

        d, settings, docs = load_retriever(path, "langchain.garlic_retriever")
        saved_encoder = settings.pop("encoder", None)
        sources = [doc.page_content for doc in docs if doc.page_content.strip()]
        graph = None
        gpath = str(d.file("graph.json"))
        if sources:
            try:
                graph = SearchGraph.from_dict(d.json("graph.json"), source_texts=sources)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                if isinstance(exc, PersistError):
                    raise
                raise PersistError(
                    f"{gpath!r} is damaged or does not fit the saved documents: {exc}"
                ) from None
            if any(
                isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(sources)
                for x in graph.sources
            ):
                raise PersistError(f"{gpath!r}: field 'sources' does not fit the saved documents")
        data = {**settings, **kwargs, "documents": docs}
        with loading(garlic_graph=(graph, saved_encoder) if graph is not None else None):
            return cls(**data)

    @classmethod
    def from_corpus(
        cls, out, *, storage_options: dict | None = None, metadatas: dict | None = None, **kwargs
    ) -> GarlicRetriever:
        """A retriever over a GARLIC corpus built by :func:`longctx.corpus.build_indexes`
        (``longctx index --method garlic``), from a folder or fsspec URL: one document per
        finished graph (``id`` = its ``doc_id``, ``page_content`` its whole text,
        ``metadatas``: optional ``{doc_id: dict}``). ``**kwargs`` as for the constructor (pass
        the ``model``/``tokenizer``/``encoder`` the corpus was built with).

        Raises
        ------
        longctx.persist.PersistError
            No corpus at ``out``, a damaged one, or one holding no GARLIC graph.
        """
        from longctx.corpus import load_corpus
        from longctx.garlic import HWDAG
        from longctx.persist import PersistError

        graphs = load_corpus(out, storage_options=storage_options)
        if not graphs or not all(isinstance(g, HWDAG) for g in graphs.values()):
            raise PersistError(f"{str(out)!r} holds no finished GARLIC graph")
        metadatas = dict(metadatas or {})
        documents = [
            Document(page_content=g.texts[0], id=d, metadata=dict(metadatas.get(d, {})))
            for d, g in graphs.items()
        ]
        return cls(documents=documents, graphs=list(graphs.values()), **kwargs)

    @property
    def searcher(self):
        """The core :class:`longctx.garlic.search.GarlicSearcher` (None without documents)."""
        return self._searcher

    def search(self, query: str, **kwargs: Any) -> SearchResult:
        """The full :class:`~longctx.types.SearchResult` (answer, trace, tokens run...)."""
        check_text(query, "query")
        if self._searcher is None:
            raise ValueError("GarlicRetriever holds no document with text")
        return self._searcher.search(query, **kwargs)

    def to_documents(self, result: SearchResult) -> list[Document]:
        """Visited nodes of ``result`` as documents, in visit order; with their
        ``longctx_explanation`` when ``result`` was searched with ``explain=True``."""
        g = self._searcher.graph
        pos = {nid: p for p, nid in enumerate(g.ids)}
        hits = {(h.source, h.start, h.end): h for h in result.hits}
        why = result.info.get("explanations") or {}
        keys = source_keys([d.id for d in self.documents], "document ids")
        out = []
        for v in result.info["visited_nodes"]:
            p = pos[v["id"]]
            src = self.documents[self._sources[g.sources[p]]]
            if g.levels[p] == 1 and g.starts[p] >= 0:
                hit = hits[(g.sources[p], int(g.starts[p]), int(g.ends[p]))]
                doc = hit_to_document(hit, src, "garlic", key=keys[self._sources[g.sources[p]]])
                doc.metadata[META_LEVEL] = 1
                doc.metadata[META_POSITION] = v["position"]
                out.append(doc)
                continue
            sid = keys[self._sources[g.sources[p]]]
            row = g.edges[[p], :].tocoo()
            children = []
            for c, w in zip(row.col.tolist(), row.data.tolist()):
                if g.levels[c] == 1 and g.starts[c] >= 0:
                    cid = f"{sid}#{int(g.starts[c])}-{int(g.ends[c])}"
                else:
                    cid = f"{sid}#{g.ids[c].split('/', 1)[1]}"
                children.append([cid, float(w)])
            meta = {
                **src.metadata,
                META_LEVEL: int(g.levels[p]),
                META_POSITION: v["position"],
                META_SCORE: float(v["score"]),
                META_METHOD: "garlic",
            }
            if src.id is not None:  # as hit_metadata: a source without id, no key
                meta[META_SOURCE_ID] = src.id
            meta[META_CHILDREN] = children
            if v["id"] in why:
                meta[META_EXPLANATION] = why[v["id"]]
            out.append(
                Document(
                    page_content=v["text"], metadata=meta, id=f"{sid}#{g.ids[p].split('/', 1)[1]}"
                )
            )
        return with_unique_ids(out)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        **search_kwargs: Any,
    ) -> list[Document]:
        check_text(query, "query")
        if self._searcher is None:
            return []
        k = self.k if k is None else k
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"k must be an int >= 1, got {k!r}")
        explain = search_kwargs.pop("explain", None)
        explain = check_explain(self.explain if explain is None else explain)
        result = self._searcher.search(query, answer=False, explain=explain, **search_kwargs)
        docs = self.to_documents(result)
        return docs if k is None else docs[:k]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        **search_kwargs: Any,
    ) -> list[Document]:
        # model-bound: run in a worker thread, keep the event loop free
        return await run_in_executor(
            None, partial(self._get_relevant_documents, query, k=k, **search_kwargs)
        )
