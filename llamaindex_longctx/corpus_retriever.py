"""``CorpusRetriever``: one LlamaIndex retriever over a corpus built by
:func:`longctx.corpus.build_indexes` (``longctx index DIR --method mixpr|diversity``): a MixPR
corpus, one index or sharded over Ray actors, or a diversity corpus.

The search lives in the core (:class:`longctx.corpus.CorpusIndex`); this adapter only maps hits
to nodes. GARLIC corpora: ``GarlicIndex.from_corpus``.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import Document, NodeWithScore, QueryBundle

from llamaindex_longctx._nodes import hit_to_node, nodes_to_seeds
from longctx.checks import check_choice, check_int, check_text
from longctx.explain import check_explain
from longctx.mixpr import MODES
from longctx.mixpr.seeds import check_keep_firsts
from longctx.selection import check_size
from longctx.types import check_order

__all__ = ["CorpusRetriever"]


class CorpusRetriever(BaseRetriever):
    """Search a built corpus as one index and return its best chunks as nodes.

    Each returned node is one unit of one corpus document: a ``TextNode`` holding the unit's
    text exactly, id ``"{doc_id}#{start}-{end}"``, the document's metadata plus the shared
    ``longctx_*`` keys (offsets into that document's text, ``longctx_source_id`` = ``doc_id``)
    and a SOURCE relationship to the document. Results come best first (``order="score"``), or
    in corpus order (document, then position) with ``order="document"``. On a one-index MixPR
    corpus units with the same text take one slot (``CorpusIndex.search(unique_texts=None)``).

    Parameters
    ----------
    corpus : longctx.corpus.CorpusIndex
        The loaded corpus (:meth:`from_corpus` loads it).
    similarity_top_k : int, default 10
        Units returned, unless ``token_budget`` is given.
    token_budget : int, optional
        MixPR corpora: most tokens returned (``longctx.tokens.count_tokens``).
    mode : {"auto", "local", "global"}
        MixPR corpora: ``"auto"`` asks the router.
    filters : optional
        MixPR corpora (one index, sharded, or one MixPR index per document): metadata filters
        as :class:`~llamaindex_longctx.MixPRRetriever` takes them (LlamaIndex
        ``MetadataFilters``, a dict or a callable ``metadata -> bool``), on the metadata the
        corpus's index holds for each document: a corpus built by ``longctx index`` /
        ``build_indexes`` holds none, so the filter sees ``{}`` for every document and keeps
        all of them or none (a condition on a key keeps none; one that an empty dict meets,
        such as ``!=``, ``nin``, ``IS_EMPTY`` or a ``NOT`` group of a key's condition, keeps
        all). A diversity corpus cannot filter: ``ValueError`` naming ``filters``.
    order : {"score", "document"}, default "score"
        Best first, or corpus order (:meth:`longctx.types.SearchResult.positions`).
    explain : bool, default False
        Add ``metadata["longctx_explanation"]`` (JSON-ready, hidden from the LLM and the
        embedder): why each unit was retrieved, as ``CorpusIndex.search(explain=True)`` gives it
        (:mod:`longctx.explain`): a one-index, sharded or per-document MixPR corpus and a
        diversity corpus.
    vector_retriever : llama_index BaseRetriever, optional
        MixPR corpora (one index or sharded): the app's own retriever, whose hits seed the walk
        as in :class:`~llamaindex_longctx.MixPRRetriever` (``CorpusIndex.search(seeds=...)``,
        :mod:`longctx.mixpr.seeds`): a hit names its corpus document by ``ref_doc_id`` (or is
        one, by ``node_id``), its span by ``start_char_idx`` / ``end_char_idx`` or its text.
        Asked for local questions only (and global ones too with ``keep_firsts``).
    keep_firsts : bool, default False
        With ``vector_retriever``: MixPR's own best unit and the app's first hit chosen first,
        then the seeded order (``MixPRIndex.search(keep_firsts=True)``; a sharded corpus as
        ``ShardedMixPRIndex.search(keep_firsts=True)``).

    Examples
    --------
    >>> retriever = CorpusRetriever.from_corpus("s3://bucket/books", similarity_top_k=20)  # doctest: +SKIP
    >>> retriever = CorpusRetriever.from_corpus("books", ray_address="auto")  # sharded, cluster  # doctest: +SKIP
    >>> retriever.retrieve("Who painted the roses red?")  # doctest: +SKIP
    """

    def __init__(
        self,
        corpus,
        similarity_top_k: int = 10,
        token_budget: int | None = None,
        mode: str = "auto",
        filters=None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        order: str = "score",
        explain: bool = False,
        vector_retriever: BaseRetriever | None = None,
        keep_firsts: bool = False,
    ) -> None:
        from longctx.corpus.load import check_corpus

        self.corpus = check_corpus(corpus, "CorpusRetriever")
        self.similarity_top_k = check_int(similarity_top_k, "similarity_top_k", minimum=1)
        self.token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
        self.mode = check_choice(mode, "mode", MODES)
        self.filters = self.corpus.check_filters(filters, "filters")  # before any search
        self.order = check_order(order)
        self.explain = check_explain(explain)
        if vector_retriever is not None and not isinstance(vector_retriever, BaseRetriever):
            raise TypeError(
                "vector_retriever must be a llama_index BaseRetriever, got "
                f"{type(vector_retriever).__name__}"
            )
        if vector_retriever is not None and corpus.index is None:
            raise ValueError("vector_retriever needs a MixPR corpus of one index or shards")
        self.vector_retriever = vector_retriever
        self.keep_firsts = check_keep_firsts(keep_firsts)
        self._holds = frozenset(corpus.doc_ids).__contains__  # the corpus's ids, for seeds
        # the documents' hashes (SOURCE relationships) by doc id, with their metadata and a
        # fingerprint of their texts, never the texts (read afresh from the corpus)
        self._hashes: dict = {}
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def class_name(cls) -> str:
        return "CorpusRetriever"

    @classmethod
    def from_corpus(
        cls,
        out,
        *,
        storage_options: dict | None = None,
        ray_address: str | None = None,
        use_ray: bool | None = None,
        workers: int | None = None,
        load_kwargs: dict | None = None,
        **kwargs,
    ) -> CorpusRetriever:
        """Load the corpus at ``out`` (a folder or an fsspec URL) and retrieve from it; the
        other keyword arguments are the constructor's. A sharded MixPR corpus is searched in this
        process by default (no Ray started), its shards in Ray actors on the cluster at
        ``ray_address`` or with ``use_ray=True`` (a local Ray) (:meth:`longctx.corpus.CorpusIndex.from_corpus`). :meth:`close`
        stops the actors.

        Raises
        ------
        TypeError
            A keyword argument the constructor does not take (named), before the corpus loads.
        longctx.persist.PersistError
            No corpus, a damaged file, a shard that cannot be loaded (named).
        ValueError
            A bad value of a constructor argument (``TypeError`` for a bad type); the corpus,
            loaded, is closed again.
        """
        import inspect

        from longctx.corpus import CorpusIndex

        params = inspect.signature(cls.__init__).parameters.values()
        takes = {p.name for p in params} - {"self", "corpus"}
        open_ended = any(p.kind is p.VAR_KEYWORD for p in params)  # a subclass's **kwargs
        unknown = [] if open_ended else sorted(set(kwargs) - takes)
        if unknown:  # before the load (minutes for a large corpus; actors started on Ray)
            raise TypeError(f"from_corpus() got unexpected keyword arguments {unknown}")
        corpus = CorpusIndex.from_corpus(
            out,
            storage_options=storage_options,
            ray_address=ray_address,
            use_ray=use_ray,
            workers=workers,
            **dict(load_kwargs or {}),
        )
        try:
            return cls(corpus, **kwargs)
        except BaseException:  # a bad value: stop the shard actors the load started
            corpus.close()
            raise

    def close(self) -> None:
        """Stop a sharded corpus's shard actors."""
        self.corpus.close()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = check_text(query_bundle.query_str, "query")
        k, budget = check_size(
            None if self.token_budget else self.similarity_top_k,
            self.token_budget,
            k_name="similarity_top_k",
        )
        kw = {}
        if budget is not None:
            kw["token_budget"] = budget
        if self.mode != "auto":
            kw["mode"] = self.mode
        if self.filters is not None:
            kw["filters"] = self.filters
        if self.explain:
            kw["explain"] = True
        vr = self.vector_retriever
        if vr is not None:  # asked by the index for a local query only (unless keep_firsts)
            held = SimpleNamespace(holds=self._holds)
            kw["seeds"] = lambda: nodes_to_seeds(vr.retrieve(query_bundle), held)
            kw["keep_firsts"] = self.keep_firsts
        result = self.corpus.search(query, k=k or self.similarity_top_k, unique_texts=None, **kw)
        sources = {}
        out = []
        for hit in (result.hits[j] for j in result.positions(self.order)):
            doc_id = self.corpus.doc_ids[hit.source]
            if doc_id not in sources:
                sources[doc_id] = Document(
                    text=self.corpus.text(doc_id),
                    id_=doc_id,
                    metadata=self.corpus.metadata(doc_id),
                )
            out.append(
                hit_to_node(hit, sources[doc_id], result.method, memo=self._hashes, fixed_text=True)
            )
        return out

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # CPU-bound (or waiting on the shards): run it in a thread, keep the event loop free
        return await asyncio.to_thread(self._retrieve, query_bundle)
