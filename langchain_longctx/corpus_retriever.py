"""``CorpusRetriever``: one LangChain retriever over a corpus built by
:func:`longctx.corpus.build_indexes` (``longctx index --method ...``): a MixPR corpus (one index,
or sharded over Ray actors) or a corpus of per-document diversity indexes.

The search and the merge by score live in the core (:class:`longctx.corpus.CorpusIndex`); this
adapter only maps hits to documents. GARLIC corpora: ``GarlicRetriever.from_corpus``.
"""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from langchain_longctx._documents import (
    ask_vector_retriever,
    check_vector_retriever,
    documents_to_seeds,
    hit_document,
)
from longctx.checks import check_text
from longctx.explain import check_explain
from longctx.types import check_order

__all__ = ["CorpusRetriever"]


class CorpusRetriever(BaseRetriever):
    """Search a built corpus as one index and return its ``k`` best hits.

    **Setup**

    ```bash
    pip install "longctx-rag[langchain,ray]"
    longctx index books/ --method mixpr --out s3://bucket/books-mixpr
    longctx index books/ --method mixpr --shards 4 --out s3://bucket/books-4
    ```

    **Key init args**

    - `corpus` (`longctx.corpus.CorpusIndex`): The loaded corpus
      (``CorpusRetriever.from_corpus(out)`` loads it).
    - `k` (`int`): Hits returned (default 10).
    - `metadatas` (`dict`): ``{doc_id: metadata}`` merged into each hit's metadata.
    - `explain` (`bool`): Add ``metadata["longctx_explanation"]``: why each unit was retrieved,
      as ``CorpusIndex.search(explain=True)`` gives it (:mod:`longctx.explain`; a sharded
      MixPR corpus too). ``invoke(..., explain=...)`` overrides it.
    - `vector_retriever` (`BaseRetriever | VectorStore | None`): MixPR corpora (one index or
      sharded): the app's own retriever (``vector_k`` documents from a store), whose hits seed
      the walk as in ``MixPRRetriever`` (``CorpusIndex.search(seeds=...)``): a hit names its
      corpus document by ``id`` or ``metadata[seed_source_key]`` (``"source"``), its span by
      ``metadata["start_index"]`` or its text. ``invoke(..., seeds=...)`` gives seeds directly.
    - `keep_firsts` (`bool`): With `vector_retriever`: MixPR's own best unit and the app's
      first hit chosen first, then the seeded order (``MixPRIndex.search(keep_firsts=True)``,
      over shards too).
    - `filter` (`dict | callable | None`): MixPR corpora (one index or sharded): a metadata
      filter as ``MixPRRetriever`` takes it (``{"lang": "en"}``, ``{"year": {"$gte": 1800}}``,
      a callable ``metadata -> bool``); ``invoke(..., filter=...)`` (or ``filters=``) replaces
      it. It sees the metadata the corpus's index holds for each document, not ``metadatas``:
      a corpus built by ``longctx index`` / ``build_indexes`` holds none, so the filter sees
      ``{}`` for every document and keeps all of them or none (a condition on a key keeps
      none; one that an empty dict meets, such as ``$ne``, ``$nin`` or ``$not`` of a key's
      condition, keeps all). A corpus of one MixPR index per document filters each on its
      own; a diversity corpus cannot filter (``ValueError`` naming ``filter``).

    **Usage**

    ```python
    retriever = CorpusRetriever.from_corpus("s3://bucket/books-mixpr", k=20)
    docs = retriever.invoke("Who painted the roses red?")
    # a sharded corpus: in this process, or one Ray actor per shard on a cluster
    sharded = CorpusRetriever.from_corpus("s3://bucket/books-4", ray_address="auto")
    ```

    Each returned ``Document`` is one unit of one corpus document: ``page_content`` its text
    exactly, ``id`` ``"{doc_id}#{start}-{end}"``, ``metadata`` the document's plus the shared
    ``longctx_*`` keys (offsets into that document's text, ``longctx_source_id`` = ``doc_id``).
    Scores are each method's own (see :class:`longctx.corpus.CorpusIndex` for how MixPR's
    per-document PageRank probabilities compare).
    """

    # an unknown argument (a typo, LangChain's ``search_kwargs``) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    corpus: Any = Field(description="longctx.corpus.CorpusIndex")
    k: int = Field(default=10, ge=1, description="Number of hits returned")
    metadatas: dict = Field(default_factory=dict, description="doc_id -> metadata")
    order: str = Field(
        default="score",
        description="'score': best first (LangChain's retrievers' order); 'document': corpus "
        "order (document, then position), for the LLM's reading; invoke(..., order=...) "
        "overrides it",
    )

    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: why each unit was retrieved; "
        "invoke(..., explain=...) overrides it",
    )
    vector_retriever: Any = Field(
        default=None, repr=False, description="The app's BaseRetriever or VectorStore: seeds"
    )
    vector_k: int = Field(default=5, ge=1, description="Documents asked of a vector store")
    keep_firsts: bool = Field(
        default=False,
        strict=True,
        description="With vector_retriever: MixPR's best unit and the app's first hit first",
    )
    seed_source_key: str = Field(
        default="source", description="Metadata key naming a vector hit's corpus document"
    )
    filter: Any = Field(
        default=None,
        repr=False,
        description="MixPR corpora: metadata filter, a dict ({'lang': 'en'}) or a callable "
        "metadata -> bool, on the corpus index's metadata; invoke(..., filter=...) replaces it",
    )

    _holds: Any = PrivateAttr(default=None)  # the corpus's ids (set at construction)

    def model_post_init(self, context: Any) -> None:
        from longctx.corpus.load import check_corpus

        check_corpus(self.corpus, "CorpusRetriever")
        self.corpus.check_filters(self.filter, "filter")  # before any search
        vr = self.vector_retriever
        check_vector_retriever(vr)
        if vr is not None and self.corpus.index is None:
            raise ValueError("vector_retriever needs a MixPR corpus of one index or shards")
        self._holds = frozenset(self.corpus.doc_ids).__contains__  # the corpus's ids, for seeds

    @field_validator("order")
    @classmethod
    def _check_order(cls, value):
        return check_order(value)

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
        **kw,
    ) -> CorpusRetriever:
        """Load the corpus at ``out`` (folder or fsspec URL; see
        :meth:`longctx.corpus.CorpusIndex.from_corpus`). A sharded MixPR corpus is searched in this
        process by default (no Ray started), its shards in Ray actors on the cluster at
        ``ray_address`` or with ``use_ray=True`` (a local Ray); :meth:`close` stops the actors.

        Raises
        ------
        pydantic.ValidationError
            A keyword argument the retriever does not take (named, as the constructor names
            it), before the corpus loads; a bad value of a field (the corpus, loaded, is
            closed again).
        longctx.persist.PersistError
            No corpus, a damaged file, a shard that cannot be loaded (named).
        """
        from pydantic_core import ValidationError

        from longctx.corpus import CorpusIndex

        unknown = sorted(set(kw) - (set(cls.model_fields) - {"corpus"}))
        if unknown:  # before the load (minutes for a large corpus; actors started on Ray)
            raise ValidationError.from_exception_data(
                cls.__name__,
                [{"type": "extra_forbidden", "loc": (k,), "input": kw[k]} for k in unknown],
            )
        corpus = CorpusIndex.from_corpus(
            out,
            storage_options=storage_options,
            ray_address=ray_address,
            use_ray=use_ray,
            workers=workers,
            **dict(load_kwargs or {}),
        )
        try:
            return cls(corpus=corpus, **kw)
        except BaseException:  # a bad value: stop the shard actors the load started
            corpus.close()
            raise

    def close(self) -> None:
        """Stop a sharded corpus's shard actors."""
        self.corpus.close()

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        check_text(query, "query")
        order = check_order(kwargs.pop("order", None) or self.order)
        flt, name = kwargs.pop("filter", None), "filter"  # MixPRRetriever's; the core's: filters
        if kwargs.get("filters") is not None:  # per call: replaces the retriever's, as filter=
            if flt is not None:
                raise TypeError("give filter= (the retriever's name) or filters=, not both")
            flt, name = kwargs.pop("filters"), "filters"
        # the retriever's own filter was checked when it was built; a per-call one is here
        flt = self.filter if flt is None else self.corpus.check_filters(flt, name)
        if flt is not None:
            kwargs["filters"] = flt
        kwargs.setdefault("unique_texts", None)  # one slot per text where the corpus can
        explain = kwargs.pop("explain", None)
        kwargs["explain"] = check_explain(self.explain if explain is None else explain)
        vr = self.vector_retriever
        if vr is not None and "seeds" not in kwargs:  # local queries only (unless keep_firsts)
            held = SimpleNamespace(holds=self._holds)

            def seeds():
                found = ask_vector_retriever(vr, query, self.vector_k)
                return documents_to_seeds(found, held, {}, self.seed_source_key)

            kwargs["seeds"] = seeds
            kwargs.setdefault("keep_firsts", self.keep_firsts)
        result = self.corpus.search(query, k=k or self.k, **kwargs)
        metas, out = {}, []  # each document's metadata, read once (its text is not needed)
        for hit in (result.hits[j] for j in result.positions(order)):
            doc_id = self.corpus.doc_ids[hit.source]
            if doc_id not in metas:
                metas[doc_id] = {**self.corpus.metadata(doc_id), **self.metadatas.get(doc_id, {})}
            out.append(hit_document(hit, doc_id, metas[doc_id], result.method))
        return out

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        # CPU-bound: run in a worker thread, keep the event loop free
        return await run_in_executor(None, partial(self._get_relevant_documents, query, **kwargs))
