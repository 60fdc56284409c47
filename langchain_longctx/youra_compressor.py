"""YOURA as a LangChain document compressor (000_ac75cd36fe64736e.txt, sec. 3.3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field, PrivateAttr, model_validator

from longctx.youra import check_select_args, join_selected, scorer_from, select_in_texts


class YouraCompressor(BaseDocumentCompressor):
    """Keep only the sentences of the retrieved documents that react most to the query (YOURA).

    The documents' ``page_content`` are read as one context, in the order received (joined with a
    blank line), split into sentences inside each document, scored by reaction score with a
    causal LM (000_ac75cd36fe64736e.txt, eq. 1-6) and selected under ``token_budget`` (model
    tokens, greedy by score, at most ``max_fraction`` of the sentences) or ``top_n``, for all
    documents together. Each document with a kept sentence comes back once, in the input order,
    with its ``id`` and ``metadata`` kept, ``page_content`` replaced by its kept sentences
    (consecutive sentences keep the original text between them; separate runs are joined by one
    space) and extra metadata ``youra_score`` (best kept reaction score), ``youra_char_spans``
    (``[start, end]`` of the kept sentences in the original ``page_content``) and
    ``youra_sentence_scores``. Documents with no kept sentence are dropped.

    Setup:
        .. code-block:: bash

            pip install "longctx[langchain,models]"

    Instantiate:
        .. code-block:: python

            from langchain_longctx import YouraCompressor

            compressor = YouraCompressor(token_budget=300)  # SmolLM2 by default, loaded lazily

    Usage:
        .. code-block:: python

            from langchain_classic.retrievers import ContextualCompressionRetriever

            retriever = ContextualCompressionRetriever(
                base_compressor=compressor, base_retriever=vector_store.as_retriever()
            )
            docs = retriever.invoke("What colour were the Rabbit's eyes?")
            # or directly:
            docs = compressor.compress_documents(documents, "What colour ...?")
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    token_budget: int | None = Field(
        default=None, description="Token budget (model tokens) for the kept sentences."
    )
    top_n: int | None = Field(default=None, description="Number of sentences to keep instead.")
    max_fraction: float = Field(
        default=0.8, description="With token_budget, keep at most this fraction of sentences."
    )
    layers: Any = Field(default="last", description="'last', 'all' or a list of layer indices.")
    aggregate: Literal["gmean", "mean"] = Field(default="gmean", description="Sentence score.")
    baseline: Literal["paper", "instruction"] = Field(
        default="paper", description="Reaction baseline (paper eq. 1 or the authors' code)."
    )
    keep_full_text: bool = Field(
        default=False, description="Keep whole documents (only filter and score)."
    )
    model: Any = Field(default=None, exclude=True, description="Causal LM or path (lazy).")
    tokenizer: Any = Field(default=None, exclude=True, description="Tokenizer of `model`.")
    scorer: Any = Field(default=None, exclude=True, description="A ready ReactionScorer.")
    _scorer: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self):
        check_select_args(self.token_budget, self.top_n, self.max_fraction)
        self._scorer = scorer_from(
            self.scorer,
            self.model,
            self.tokenizer,
            layers=self.layers,
            aggregate=self.aggregate,
            baseline=self.baseline,
        )
        return self

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """Documents reduced to their most reactive sentences (see the class docstring)."""
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must contain some non-whitespace text")
        docs = list(documents)
        texts = [d.page_content for d in docs]
        if not any(t.strip() for t in texts):
            return []
        chosen = select_in_texts(
            self._scorer,
            texts,
            query,
            token_budget=self.token_budget,
            top_n=self.top_n,
            max_fraction=self.max_fraction,
        )
        per_doc: dict[int, list] = {}
        for i, span in chosen:
            per_doc.setdefault(i, []).append(span)
        out = []
        for i, d in enumerate(docs):
            spans = per_doc.get(i)
            if not spans:
                continue
            content = d.page_content if self.keep_full_text else join_selected(texts[i], spans)
            metadata = {
                **d.metadata,
                "youra_score": max(s.score for s in spans),
                "youra_char_spans": [[s.start, s.end] for s in spans],
                "youra_sentence_scores": [s.score for s in spans],
            }
            out.append(Document(page_content=content, metadata=metadata, id=d.id))
        return out
