"""LangChain document compressor: keep a diverse, relevant subset of documents (MMR/FPS).

Source: Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an LLM's Performance in RAG and
Long-context Task", 2025, arXiv:2502.09017 (https://arxiv.org/abs/2502.09017), eq. 1 (MMR) and
eq. 2 (FPS), with the recent-selection window ``w`` and the orderings of sec. 3.1. The selection is
:class:`longctx.DiversityIndex`; this class only translates documents to it and hits back.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field, PrivateAttr, field_validator, model_validator

from langchain_longctx._documents import (
    document_keys,
    hit_to_document,
    with_unique_ids,
)
from longctx.checks import check_choice, check_size_field
from longctx.diversity import METHODS, DiversityIndex
from longctx.diversity.ordering import check_order
from longctx.embeddings import default_cache, embed_texts, get_encoder
from longctx.explain import check_explain, name_pick_sources
from longctx.selection import check_size

#: documents kept when neither ``k`` nor ``token_budget`` is given
DEFAULT_K = 5


class DiversityCompressor(BaseDocumentCompressor):
    """Keep the documents that are relevant to the query and not redundant with each other.

    MMR (eq. 1 of the diversity paper) or FPS (eq. 2) over the documents' embeddings, with an
    optional recent-selection window, stopping at ``k`` documents or ``token_budget`` tokens
    (``k=5`` when neither is given). Works after any retriever or another compressor (for example
    as the last step of a ``DocumentCompressorPipeline``). Each document is one unit (no
    chunking); embeddings of texts seen before are reused from a bounded cache keyed by the
    text's SHA-256 (:func:`longctx.embeddings.default_cache`). Documents without text are left
    out.

    **Setup**

    ```bash
    pip install "longctx-rag[langchain,models]"
    ```

    **Key init args**

    - `method` (`str`): ``"mmr"`` (default) or ``"fps"``.
    - `lambda_` (`float`): Weight of relevance against diversity, in [0, 1] (``1``: plain top-k by
      similarity).
    - `window` (`int | None`): Diversity against the last ``window`` picks only (``None``: all
      picks).
    - `k` (`int | None`): Most documents to keep (default 5 when no ``token_budget``).
    - `token_budget` (`int | None`): Most tokens to keep (counted by ``token_counter``), instead of
      ``k``.
    - `order` (`str`): ``"score"`` (selection order, default), ``"document"`` (input order) or
      ``"m:n"``.
    - `reward_key` (`str | None`): Metadata key holding the reward instead of the query similarity.
    - `embeddings` (`Embeddings | None`): Any LangChain ``Embeddings`` (default all-MiniLM-L6-v2).

    **Instantiate**

    ```python
    from langchain_longctx import DiversityCompressor

    compressor = DiversityCompressor(
        method="mmr", lambda_=0.6, window=5, token_budget=2000, order="document"
    )
    # any LangChain Embeddings works: DiversityCompressor(embeddings=my_embeddings, ...)
    ```

    **Usage**

    ```python
    docs = retriever.invoke("Who won the game?")
    kept = compressor.compress_documents(docs, "Who won the game?")
    kept[0].metadata["longctx_score"]  # the cosine similarity to the query
    # rewards from an earlier step's scores instead of query similarity:
    DiversityCompressor(reward_key="score", k=5).compress_documents(docs, query)
    ```

    Returned documents keep the input documents' ``id``, ``page_content`` and ``metadata``, plus
    the keys of ``longctx.types.METADATA_KEYS`` (``longctx_score`` is the reward used: cosine
    similarity, or the ``reward_key`` value), in the ``order`` asked for.
    """

    # an unknown argument (a typo, LangChain's ``search_kwargs``) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    method: str = Field(default="mmr", description="'mmr' (cosine, eq. 1) or 'fps' (eq. 2).")
    lambda_: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of relevance vs diversity; 1 = top-k."
    )
    window: int | None = Field(
        default=None, ge=1, description="Diversity against the last `window` picks; None = all."
    )
    k: int | None = Field(
        default=None, description=f"Most documents to keep (int >= 1); {DEFAULT_K} by default."
    )
    token_budget: int | None = Field(
        default=None,
        description="Most tokens to keep (int >= 1, counted by `token_counter`), instead of k.",
    )
    order: str = Field(
        default="score",
        description="'score' (selection order), 'document' (input order) or 'm:n' interleaving.",
    )
    reward_key: str | None = Field(
        default=None,
        description="metadata key holding the reward (e.g. 'score', 'reaction_score'), min-max "
        "rescaled to [0, 1]; None = cosine similarity to the query.",
    )
    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: each kept item's relevance, the "
        "redundancy penalty it had when picked and the kept item it was measured against "
        "(its 'doc_id').",
    )
    cache: bool = Field(
        default=True,
        description="Reuse embeddings of texts seen before (bounded LRU by content hash).",
    )
    embeddings: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="LangChain Embeddings (or any encoder); default all-MiniLM-L6-v2.",
    )
    token_counter: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="str -> int; default longctx.tokens.count_tokens.",
    )
    _encoder: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _top_n_is_k(cls, data):
        if isinstance(data, dict) and "top_n" in data:
            if data.get("k") is not None:
                raise ValueError("give k (top_n is its old name), not both")
            warnings.warn(
                "DiversityCompressor(top_n=...) is now k=... (LangChain's name); top_n is "
                "deprecated in longctx 0.2, removed in 0.3",
                DeprecationWarning,
                stacklevel=4,
            )
            data = {**data, "k": data["top_n"]}
            del data["top_n"]
        return data

    _check_sizes = field_validator("k", "token_budget", mode="before")(check_size_field)

    @field_validator("method")
    @classmethod
    def _check_method(cls, v):
        return check_choice(v, "method", METHODS)

    @field_validator("order")
    @classmethod
    def _check_order(cls, v):
        return check_order(v, "order")

    @model_validator(mode="after")
    def _check_size(self):
        check_size(self.k, self.token_budget, default_k=DEFAULT_K)
        return self

    def _get_encoder(self):
        if self._encoder is None:
            self._encoder = get_encoder(self.embeddings)
        return self._encoder

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Select documents (see the class docstring).

        Raises
        ------
        ValueError
            If ``reward_key`` is set and a document lacks it or holds a non-number.
        """
        k, budget = check_size(self.k, self.token_budget, default_k=DEFAULT_K)
        docs = list(documents)
        rewards = None
        if self.reward_key is not None:
            vals = []
            for j, d in enumerate(docs):
                v = d.metadata.get(self.reward_key)
                if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
                    raise ValueError(
                        f"documents[{j}].metadata[{self.reward_key!r}] must be a number "
                        f"(reward_key), got {v!r}"
                    )
                vals.append(float(v))
            rewards = np.asarray(vals)
        keep = [j for j, d in enumerate(docs) if d.page_content.strip()]
        if not keep:
            return []
        enc = self._get_encoder()
        texts = [docs[j].page_content for j in keep]
        emb = embed_texts(enc, texts, cache=default_cache() if self.cache else None)
        query_emb = enc.embed_query(query) if rewards is None and query and query.strip() else None
        index = DiversityIndex.from_texts(
            texts, enc, token_counter=self.token_counter, unit="text", embeddings=emb
        )
        result = index.search(
            k=k,
            token_budget=budget,
            method=self.method,
            lambda_=self.lambda_,
            window=self.window,
            order=self.order,
            explain=check_explain(self.explain),
            query_embedding=query_emb,
            rewards=None if rewards is None else rewards[keep],
        )
        keys = document_keys(docs)
        name_pick_sources(result.hits, [keys[j] for j in keep])
        return with_unique_ids(
            [
                hit_to_document(
                    h, docs[keep[h.source]], result.method, whole=True, key=keys[keep[h.source]]
                )
                for h in result.hits
                if keys[keep[h.source]] is not None  # not a document given twice
            ]
        )
