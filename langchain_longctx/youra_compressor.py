"""YOURA as a LangChain document compressor (Soh, Huang, Tian and Zhao, "You Only Use Reactive
Attention Slice For Long Context Retrieval", 2024, arXiv:2409.13695, sec. 3.3)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_longctx._documents import (
    document_keys,
    hit_to_document,
    with_unique_ids,
)
from longctx.checks import check_size_field, check_text
from longctx.explain import check_explain
from longctx.selection import check_size
from longctx.youra import DEFAULT_K, DEFAULT_PRESET, YouraIndex, check_max_fraction, scorer_from


class YouraCompressor(BaseDocumentCompressor):
    """Keep only the sentences of the retrieved documents that react most to the query (YOURA).

    Per call, the documents' ``page_content`` become a :class:`longctx.YouraIndex` (one text per
    document, scored on its own and ranked together: :mod:`longctx.youra`, "Several texts") and
    its hits come back as documents. A document set cannot be prebuilt, but the scorer's window
    cache is keyed by tokens, so a document seen by an earlier query costs only the query pass.

    **Setup**

    ```bash
    pip install "longctx-rag[langchain,models]"
    ```

    **Key init args**

    - `k` (`int | None`): Sentences kept (default ``longctx.youra.DEFAULT_K`` = 10 when no
      token_budget).
    - `token_budget` (`int | None`): Model tokens for all kept sentences instead (greedy by score,
      at most ``max_fraction`` of the sentences).
    - `preset` (`str`): ``"default"`` (instruction baseline, ratios comparable across windows, all
      layers) or ``"paper"`` (eq. 1 as written); ``layers``, ``aggregate``, ``baseline`` and
      ``normalize`` override single settings (None: the preset's).
    - `scorer` (`longctx.youra.ReactionScorer | None`): A ready scorer (model, options, window
      cache), shared with other components.

    **Instantiate**

    ```python
    from langchain_longctx import YouraCompressor

    compressor = YouraCompressor(token_budget=300)  # SmolLM2 by default, loaded lazily
    ```

    **Usage**

    ```python
    from langchain_classic.retrievers import ContextualCompressionRetriever

    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=vector_store.as_retriever()
    )
    docs = retriever.invoke("What colour were the Rabbit's eyes?")
    # or directly:
    docs = compressor.compress_documents(documents, "What colour ...?")
    ```

    Each returned ``Document`` is one kept sentence, in document order: ``page_content`` the
    sentence exactly, ``id`` ``"{source id}#{start}-{end}"`` (the source's own id when the
    sentence is the whole document), ``metadata`` the source's plus ``longctx_start_char_idx`` /
    ``longctx_end_char_idx`` (characters in the source ``page_content``), ``longctx_unit_index``,
    ``longctx_score``, ``longctx_method`` and ``longctx_source_id``. No id appears twice. With
    ``explain=True`` the metadata also holds ``longctx_explanation`` (JSON-ready): the sentence's
    window, the attention its tokens got before and after the question and the parts of its
    reaction score (:func:`longctx.youra.explain.explain_sentence`), as the core
    ``YouraIndex.search(explain=True)`` gives them.
    """

    # an unknown argument (a typo, LangChain's ``search_kwargs``) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    k: int | None = Field(
        default=None, description=f"Sentences kept (default {DEFAULT_K} without token_budget)."
    )
    token_budget: int | None = Field(
        default=None, description="Model tokens for the kept sentences instead of k."
    )
    top_n: int | None = Field(
        default=None, description="Deprecated name of k (deprecated in 0.2, removed in 0.3)."
    )
    max_fraction: float = Field(
        default=0.8, description="With token_budget, keep at most this fraction of sentences."
    )
    preset: Literal["default", "paper"] = Field(
        default=DEFAULT_PRESET,
        description="Scorer settings not given: 'default' (ratios, all layers) or 'paper' (eq. 1).",
    )
    layers: Any = Field(
        default=None, description="'last', 'all' or a list of layer indices (None: the preset's)."
    )
    aggregate: Literal["gmean", "mean"] | None = Field(
        default=None, description="Sentence score: geometric or arithmetic mean (None: preset's)."
    )
    baseline: Literal["instruction", "paper"] | None = Field(
        default=None, description="Reaction baseline (authors' code or paper eq. 1)."
    )
    normalize: Literal["ratio", "none"] | None = Field(
        default=None,
        description="'ratio' (comparable across windows) or 'none' (eq. 1); None: the preset's.",
    )
    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: each sentence's window, the attention "
        "its tokens got before and after the question and the parts of its reaction score.",
    )
    model: Any = Field(
        default=None, exclude=True, repr=False, description="Causal LM or path (lazy)."
    )
    tokenizer: Any = Field(
        default=None, exclude=True, repr=False, description="Tokenizer of `model`."
    )
    scorer: Any = Field(
        default=None, exclude=True, repr=False, description="A ready ReactionScorer."
    )
    _scorer: Any = PrivateAttr(default=None)
    _check_sizes = field_validator("k", "token_budget", "top_n", mode="before")(check_size_field)

    @model_validator(mode="after")
    def _check(self):
        if self.top_n is not None:
            warnings.warn(
                "YouraCompressor(top_n=...): deprecated in longctx 0.2, removed in 0.3; use k",
                DeprecationWarning,
                stacklevel=2,
            )
            if self.k is not None:
                raise ValueError("give k, not both k and top_n")
            self.k, self.top_n = self.top_n, None
        check_size(self.k, self.token_budget, default_k=DEFAULT_K)
        check_max_fraction(self.max_fraction)
        check_explain(self.explain)
        if self.scorer is not None:
            self._scorer = scorer_from(self.scorer)
        else:
            self._scorer = scorer_from(
                None,
                self.model,
                self.tokenizer,
                preset=self.preset,
                layers=self.layers,
                aggregate=self.aggregate,
                baseline=self.baseline,
                normalize=self.normalize,
            )
        return self

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """The most reactive sentences of ``documents`` (see the class docstring)."""
        check_text(query, "query")
        docs = list(documents)
        sources = [i for i, d in enumerate(docs) if d.page_content.strip()]
        if not sources:
            return []
        k, budget = check_size(self.k, self.token_budget, default_k=DEFAULT_K)
        index = YouraIndex.from_texts(
            [docs[i].page_content for i in sources], self._scorer, max_fraction=self.max_fraction
        )
        result = index.search(query, k=k, token_budget=budget, explain=self.explain)
        keys = document_keys(docs)
        out = []
        for h in result.hits:
            i = sources[h.source]
            whole = h.start == 0 and h.end == len(docs[i].page_content)
            if keys[i] is not None:  # not a document given twice
                out.append(hit_to_document(h, docs[i], "youra", whole=whole, key=keys[i]))
        return with_unique_ids(out)

    async def acompress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        # model work: in a worker thread, so the event loop stays free
        return await run_in_executor(None, self.compress_documents, documents, query, callbacks)
