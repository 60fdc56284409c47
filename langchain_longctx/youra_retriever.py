"""YOURA as a LangChain retriever over given long documents (000_ac75cd36fe64736e.txt)."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from longctx.youra import check_select_args, scorer_from


class YouraRetriever(BaseRetriever):
    """Retrieve the sentences of long documents that react most to the query (YOURA).

    Each document is one context: its sentences are scored by reaction score with a causal LM
    (000_ac75cd36fe64736e.txt, eq. 1-6; long documents in windows, sec. 3.3) and selected under
    ``token_budget`` (model tokens, greedy by score, at most ``max_fraction`` of the sentences) or
    ``top_n``, per document. Each document's KV cache stays in the scorer's LRU cache, so another
    query on the same documents costs only the query tokens.

    Returns one ``Document`` per selected sentence, document by document in document order: the
    sentence text exactly as in the source, the source's metadata plus ``youra_score``,
    ``start_index``/``end_index`` (characters in the source), ``sentence_index`` and
    ``source_id`` (the source document's ``id``, or its position when it has none); its ``id``
    is ``"{source_id}:{start}-{end}"``.

    Setup:
        .. code-block:: bash

            pip install "longctx[langchain,models]"

    Instantiate:
        .. code-block:: python

            from langchain_core.documents import Document
            from langchain_longctx import YouraRetriever

            retriever = YouraRetriever(
                documents=[Document(page_content=book_text, id="alice")], top_n=5
            )

    Usage:
        .. code-block:: python

            docs = retriever.invoke("What colour were the Rabbit's eyes?")
            for d in docs:
                print(d.metadata["start_index"], d.metadata["youra_score"], d.page_content)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[Document] = Field(description="The long documents to retrieve from.")
    token_budget: int | None = Field(default=None, description="Token budget per document.")
    top_n: int | None = Field(default=None, description="Sentences per document instead.")
    max_fraction: float = Field(default=0.8, description="Cap on the fraction of sentences.")
    scorer_kwargs: dict = Field(
        default_factory=dict, description="ReactionScorer options (layers, aggregate, ...)."
    )
    model: Any = Field(default=None, exclude=True, description="Causal LM or path (lazy).")
    tokenizer: Any = Field(default=None, exclude=True, description="Tokenizer of `model`.")
    scorer: Any = Field(default=None, exclude=True, description="A ready ReactionScorer.")
    _scorer: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self):
        if not self.documents:
            raise ValueError("documents must be a non-empty list of Document")
        check_select_args(self.token_budget, self.top_n, self.max_fraction)
        self._scorer = scorer_from(self.scorer, self.model, self.tokenizer, **self.scorer_kwargs)
        return self

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must contain some non-whitespace text")
        out = []
        for pos, doc in enumerate(self.documents):
            text = doc.page_content
            if not text.strip():
                continue
            source_id = doc.id if doc.id is not None else str(pos)
            chosen = self._scorer.select(
                text, query, self.token_budget, self.max_fraction, top_n=self.top_n
            )
            for s in chosen:
                metadata = {
                    **doc.metadata,
                    "youra_score": s.score,
                    "start_index": s.start,
                    "end_index": s.end,
                    "sentence_index": s.index,
                    "source_id": source_id,
                }
                out.append(
                    Document(
                        page_content=text[s.start : s.end],
                        metadata=metadata,
                        id=f"{source_id}:{s.start}-{s.end}",
                    )
                )
        return out
