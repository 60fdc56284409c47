"""LangChain retriever for MixPR (Alonso and Millidge, "Mixture-of-PageRanks: Replacing
Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
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
    document_keys,
    documents_from_texts,
    hit_to_document,
    with_unique_ids,
)
from langchain_longctx._persist import (
    check_index_texts,
    load_retriever,
    loaded_parts,
    loading,
    save_retriever,
)
from longctx.checks import check_choice, check_size_field, check_text
from longctx.mixpr import MODES, MixPR, MixPRIndex
from longctx.persist_reader import retry_on_concurrent_save
from longctx.selection import check_size


class MixPRRetriever(BaseRetriever):
    """Mixture-of-PageRanks retriever over a fixed set of long documents, indexed once.

    The documents' ``page_content`` are indexed at construction (:class:`longctx.MixPRIndex`:
    MixPR chunks of at most ``max_words`` words, TF-IDF, the similarity graph); every
    ``invoke`` only adds the query to the graph and runs personalized PageRank (local
    questions) or uses the PageRank (global tasks). The top ``k`` chunks (or ``token_budget``
    tokens) come back in document order.

    Setup:
        .. code-block:: bash

            pip install "longctx[langchain]"

    Key init args:
        documents: list[Document]
            The long documents (indexed once).
        k: int
            Chunks returned (default 100, the paper's).
        token_budget: int | None
            Token budget instead of ``k`` (``longctx.tokens.count_tokens``).
        mode: str
            ``"auto"`` (router), ``"local"`` or ``"global"``.
        mixpr: longctx.MixPR | None
            Settings and router, e.g. ``MixPR(preset="paper")`` or
            ``MixPR(router=LLMRouter(chat_model))``.
        embeddings: langchain_core.embeddings.Embeddings | None
            The app's embedding model: hybrid mode (every chunk embedded once at construction,
            each query embedded with it; its nearest chunks join the walk).

    Instantiate:
        .. code-block:: python

            from langchain_longctx import MixPRRetriever

            retriever = MixPRRetriever.from_texts(book_text, ids=["book"], k=100)
            # or MixPRRetriever(documents=[Document(page_content=..., id=..., metadata=...)])

    Save and load (JSON and ``.npz``, nothing rebuilt on load):
        .. code-block:: python

            retriever.save("./mixpr")
            retriever = MixPRRetriever.load("./mixpr")

    Usage:
        .. code-block:: python

            docs = retriever.invoke("Where is the milk?")
            docs = retriever.invoke("Summarize the book.", k=200)  # global: PageRank
            docs = retriever.invoke("Where is the milk?", token_budget=2000)

    Each returned ``Document`` is one chunk: ``page_content`` the chunk text exactly, ``id``
    ``"{source id}#{start}-{end}"``, ``metadata`` its source's plus ``longctx_start_char_idx`` /
    ``longctx_end_char_idx`` (character offsets in the source ``page_content``),
    ``longctx_unit_index``, ``longctx_score`` (MixPR's score), ``longctx_method`` and
    ``longctx_source_id``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[Document] = Field(
        default_factory=list, repr=False, description="Documents to search"
    )
    k: int = Field(default=100, ge=1, description="Number of chunks returned (paper: 100)")
    token_budget: int | None = Field(
        default=None, ge=1, description="Token budget instead of k (longctx.tokens.count_tokens)"
    )
    mode: str = Field(default="auto", description="'auto' (router), 'local' or 'global'")
    max_words: int | None = Field(
        default=None, ge=1, description="Most words per chunk (default the preset's 64; paper 32)"
    )
    mixpr: MixPR | None = Field(default=None, repr=False, description="MixPR settings and router")
    embeddings: Any = Field(
        default=None,
        repr=False,
        description="The app's LangChain Embeddings for hybrid mode (chunks embedded once)",
    )

    _index: MixPRIndex | None = PrivateAttr(default=None)
    _sources: list[int] = PrivateAttr(default_factory=list)
    _check_sizes = field_validator("k", "token_budget", mode="before")(check_size_field)

    def model_post_init(self, context: Any) -> None:
        check_choice(self.mode, "mode", MODES)
        mixpr = self.mixpr
        if mixpr is None:
            mixpr = MixPR() if self.max_words is None else MixPR(max_words=self.max_words)
        self._sources = [i for i, d in enumerate(self.documents) if d.page_content.strip()]
        loaded = loaded_parts()
        if "mixpr_index" in loaded:  # from load(): built
            self._index = loaded["mixpr_index"]
        elif self._sources:
            texts = [self.documents[i].page_content for i in self._sources]
            self._index = mixpr.index(texts, encoder=self.embeddings)

    @property
    def index(self) -> MixPRIndex | None:
        """The core :class:`longctx.MixPRIndex` (``None`` when no document has text)."""
        return self._index

    @classmethod
    def from_documents(cls, documents: list[Document], **kwargs: Any) -> MixPRRetriever:
        """Build from LangChain documents (kept as given: ids and metadata)."""
        return cls(documents=list(documents), **kwargs)

    @classmethod
    def from_texts(
        cls,
        texts: str | Sequence[str],
        metadatas: Sequence[dict] | None = None,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> MixPRRetriever:
        """Build from raw texts (a single ``str`` is one text) with optional metadata dicts and
        ids (one per text).

        Raises
        ------
        TypeError, ValueError
            A non-``str`` text; ``metadatas`` / ``ids`` of another length than ``texts``.
        """
        return cls(documents=documents_from_texts(texts, metadatas, ids), **kwargs)

    # -- persistence --------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Save the documents, the settings and the built index in folder ``path`` (JSON and
        ``.npz``, no pickle; the folder is replaced). The router is not saved: pass it again to
        :meth:`load`.

        Raises
        ------
        TypeError
            A document's metadata is not JSON-serializable.
        """
        save_retriever(
            path,
            "langchain.mixpr_retriever",
            {"k": self.k, "token_budget": self.token_budget, "mode": self.mode,
             "max_words": self.max_words},
            self.documents,
            subdirs={"index": self._index.save} if self._index is not None else None,
        )  # fmt: skip

    @classmethod
    @retry_on_concurrent_save("path")
    def load(cls, path: str | os.PathLike, *, router=None, **kwargs: Any) -> MixPRRetriever:
        """Load a retriever written by :meth:`save` (nothing is rebuilt); ``kwargs`` override the
        saved settings (``k``, ``token_budget``, ``mode``).

        Raises
        ------
        PersistError
            A missing, damaged or foreign file, named.
        """
        d, settings, docs = load_retriever(path, "langchain.mixpr_retriever")
        index = MixPRIndex.load(d.subdir("index"), router=router) if d.has("index") else None
        data = {**settings, **kwargs, "documents": docs}
        with loading(mixpr_index=index):
            retriever = cls(**data)
        check_index_texts(
            index.texts if index is not None else [], docs, retriever._sources, str(d.file("index"))
        )
        return retriever

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str | None = None,
    ) -> list[Document]:
        check_text(query, "query")
        mode = check_choice(mode or self.mode, "mode", MODES)
        if k is None and token_budget is None:
            k, token_budget = (None, self.token_budget) if self.token_budget else (self.k, None)
        k, token_budget = check_size(k, token_budget)
        if self._index is None:
            return []
        result = self._index.search(query, k=k, token_budget=token_budget, mode=mode)
        keys = document_keys(self.documents)
        return with_unique_ids(
            [
                hit_to_document(
                    h,
                    self.documents[self._sources[h.source]],
                    "mixpr",
                    key=keys[self._sources[h.source]],
                )
                for h in result.hits
                if keys[self._sources[h.source]] is not None  # not a document given twice
            ]
        )

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str | None = None,
    ) -> list[Document]:
        # CPU-bound (sparse products): run in a worker thread, keep the event loop free
        return await run_in_executor(
            None,
            partial(self._get_relevant_documents, query, k=k, token_budget=token_budget, mode=mode),
        )
