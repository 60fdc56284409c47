"""``CorpusRetriever``: one LangChain retriever over a corpus of per-document MixPR or diversity
indexes built by :func:`longctx.corpus.build_indexes` (``longctx index --method ...``).

The search and the merge by score live in the core (:class:`longctx.corpus.CorpusIndex`); this
adapter only maps hits to documents. GARLIC corpora: ``GarlicRetriever.from_corpus``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field

from langchain_longctx._documents import hit_to_document
from longctx.checks import check_text

__all__ = ["CorpusRetriever"]


class CorpusRetriever(BaseRetriever):
    """Search every document index of a built corpus and keep the ``k`` best hits by score.

    Setup:
        .. code-block:: bash

            pip install "longctx[langchain,ray]"
            longctx index books/ --method mixpr --out s3://bucket/books-mixpr

    Key init args:
        corpus: longctx.corpus.CorpusIndex
            The loaded corpus (``CorpusRetriever.from_corpus(out)`` loads it).
        k: int
            Hits returned (default 10).
        metadatas: dict
            ``{doc_id: metadata}`` merged into each hit's metadata.

    Usage:
        .. code-block:: python

            retriever = CorpusRetriever.from_corpus("s3://bucket/books-mixpr", k=20)
            docs = retriever.invoke("Who painted the roses red?")

    Each returned ``Document`` is one unit of one corpus document: ``page_content`` its text
    exactly, ``id`` ``"{doc_id}#{start}-{end}"``, ``metadata`` the document's plus the shared
    ``longctx_*`` keys (offsets into that document's text, ``longctx_source_id`` = ``doc_id``).
    Scores are each method's own (see :class:`longctx.corpus.CorpusIndex` for how MixPR's
    per-document PageRank probabilities compare).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    corpus: Any = Field(description="longctx.corpus.CorpusIndex")
    k: int = Field(default=10, ge=1, description="Number of hits returned")
    metadatas: dict = Field(default_factory=dict, description="doc_id -> metadata")

    @classmethod
    def from_corpus(
        cls, out, *, storage_options: dict | None = None, load_kwargs: dict | None = None, **kw
    ) -> CorpusRetriever:
        """Load the corpus at ``out`` (folder or fsspec URL; see
        :meth:`longctx.corpus.CorpusIndex.from_corpus`)."""
        from longctx.corpus import CorpusIndex

        corpus = CorpusIndex.from_corpus(
            out, storage_options=storage_options, **dict(load_kwargs or {})
        )
        return cls(corpus=corpus, **kw)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        **kwargs: Any,
    ) -> list[Document]:
        check_text(query, "query")
        result = self.corpus.search(query, k=k or self.k, **kwargs)
        out = []
        for hit in result.hits:
            doc_id = self.corpus.doc_ids[hit.source]
            source = Document(
                page_content=self.corpus.text(doc_id),
                id=doc_id,
                metadata=dict(self.metadatas.get(doc_id, {})),
            )
            out.append(hit_to_document(hit, source, result.method))
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
