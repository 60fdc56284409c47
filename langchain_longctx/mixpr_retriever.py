"""LangChain retriever for MixPR (003_66700b152cf6a0ed.txt, sec. 4)."""

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
from pydantic import ConfigDict, Field, PrivateAttr

from longctx._validate import check_choice, check_int, check_text
from longctx.mixpr import MODES, MixPR
from longctx.selection import select_top
from longctx.text import chunk_words
from longctx.tokens import count_many


class MixPRRetriever(BaseRetriever):
    """Mixture-of-PageRanks retriever over a fixed set of long documents.

    Each document's ``page_content`` is cut into MixPR chunks (sentences, then newlines, then
    equal word pieces of at most ``max_words`` words); all chunks, in the order of
    ``documents``, form one TF-IDF similarity graph with the query appended; personalized
    PageRank (local questions) or PageRank (global tasks) scores them and the top ``k`` chunks
    (or ``token_budget`` tokens) come back in document order.

    Setup:
        .. code-block:: bash

            pip install "longctx[langchain]"

    Instantiate:
        .. code-block:: python

            from langchain_longctx import MixPRRetriever

            retriever = MixPRRetriever.from_texts([book_text], k=100)
            # or MixPRRetriever(documents=[Document(page_content=..., id=..., metadata=...)])
            # paper's LLM router with a chat model:
            # from longctx.mixpr import LLMRouter, MixPR
            # MixPRRetriever(documents=docs, mixpr=MixPR(router=LLMRouter(
            #     lambda p: chat.invoke(p).content)))

    Usage:
        .. code-block:: python

            docs = retriever.invoke("Where is the milk?")
            docs = retriever.invoke("Summarize the book.", k=200)  # global: PageRank
            docs = retriever.invoke("Where is the milk?", token_budget=2000)

    Each returned ``Document`` is one chunk: ``page_content`` the chunk text exactly, ``id`` and
    ``metadata`` those of its source document, plus ``mixpr_score`` (PageRank probability),
    ``mixpr_start`` / ``mixpr_end`` (character offsets in the source ``page_content``) and
    ``mixpr_chunk_index`` (chunk number in the whole collection).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[Document] = Field(default_factory=list, description="Documents to search")
    k: int = Field(default=100, ge=1, description="Number of chunks returned (paper: 100)")
    token_budget: int | None = Field(
        default=None, ge=1, description="Token budget instead of k (longctx.tokens.count_tokens)"
    )
    mode: str = Field(default="auto", description="'auto' (router), 'local' or 'global'")
    max_words: int = Field(default=32, ge=1, description="Most words per chunk (paper: N=32)")
    mixpr: MixPR | None = Field(default=None, description="A configured longctx MixPR scorer")

    _units: list[tuple[int, int, int]] | None = PrivateAttr(default=None)
    _unit_token_counts: Any = PrivateAttr(default=None)

    @classmethod
    def from_documents(cls, documents: list[Document], **kwargs: Any) -> MixPRRetriever:
        """Build from LangChain documents (kept as given: ids and metadata)."""
        return cls(documents=list(documents), **kwargs)

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        metadatas: list[dict] | None = None,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> MixPRRetriever:
        """Build from raw texts with optional metadata dicts and ids (one per text)."""
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        ids = ids or [None] * len(texts)
        if not len(metadatas) == len(ids) == len(texts):
            raise ValueError("texts, metadatas and ids must have the same length")
        docs = [
            Document(page_content=t, metadata=dict(m), id=i)
            for t, m, i in zip(texts, metadatas, ids)
        ]
        return cls(documents=docs, **kwargs)

    def _scorer(self) -> MixPR:
        return self.mixpr if self.mixpr is not None else MixPR(max_words=self.max_words)

    def _chunk_units(self) -> list[tuple[int, int, int]]:
        """(document index, start, end) of every chunk, computed once."""
        if self._units is None:
            words = self._scorer().max_words
            self._units = [
                (d, a, b)
                for d, doc in enumerate(self.documents)
                for a, b in chunk_words(doc.page_content, words)
            ]
        return self._units

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
        k = check_int(k, "k", minimum=1, allow_none=True)
        token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
        if k is None and token_budget is None:
            k, token_budget = self.k, self.token_budget
            if token_budget is not None:
                k = None
        elif k is not None and token_budget is not None:
            raise ValueError("give at most one of k and token_budget")
        units = self._chunk_units()
        if not units:
            return []
        texts = [self.documents[d].page_content[a:b] for d, a, b in units]
        scores = self._scorer().rank(texts, query, mode)
        if token_budget is not None:
            if self._unit_token_counts is None:  # counted once, reused by later queries
                self._unit_token_counts = count_many(texts)
            idx = select_top(
                scores, token_budget=token_budget, token_counts=self._unit_token_counts
            )
        else:
            idx = select_top(scores, k=k)
        out = []
        for i in idx.tolist():
            d, a, b = units[i]
            src = self.documents[d]
            meta = {
                **src.metadata,
                "mixpr_score": float(scores[i]),
                "mixpr_start": a,
                "mixpr_end": b,
                "mixpr_chunk_index": i,
            }
            out.append(Document(page_content=texts[i], metadata=meta, id=src.id))
        return out

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
