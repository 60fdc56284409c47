"""LangChain document compressor: keep a diverse, relevant subset of documents (MMR/FPS).

Source: ``../shared/papers/002_1b3ce547c3231824.txt``, eq. 1 (MMR) and eq. 2 (FPS), with the
recent-selection window ``w`` and the orderings of sec. 3.1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from longctx.checks import check_choice
from longctx.diversity import METHODS, _parse_order, fps_select, mmr_select, order_selection
from longctx.embeddings import get_encoder
from longctx.tokens import count_many


class DiversityCompressor(BaseDocumentCompressor):
    """Keep the documents that are relevant to the query and not redundant with each other.

    MMR (eq. 1 of the diversity paper) or FPS (eq. 2) over the documents' embeddings, with an
    optional recent-selection window, stopping at ``top_n`` documents and/or ``token_budget``
    tokens. Works after any retriever or another compressor (for example as the last step of a
    ``DocumentCompressorPipeline``).

    Setup:
        .. code-block:: bash

            pip install "longctx[langchain,models]"

    Instantiate:
        .. code-block:: python

            from langchain_longctx import DiversityCompressor

            compressor = DiversityCompressor(
                method="mmr", lambda_=0.6, window=5, token_budget=2000, order="document"
            )
            # any LangChain Embeddings works: DiversityCompressor(embeddings=my_embeddings, ...)

    Usage:
        .. code-block:: python

            docs = retriever.invoke("Who won the game?")
            kept = compressor.compress_documents(docs, "Who won the game?")
            # rewards from an earlier step's scores instead of query similarity:
            DiversityCompressor(reward_key="score", top_n=5).compress_documents(docs, query)

    Returned documents are the input ``Document`` objects (same ``id``, ``page_content`` and
    ``metadata``), in the ``order`` asked for; nothing is written into their metadata.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    method: str = Field(default="mmr", description="'mmr' (cosine, eq. 1) or 'fps' (eq. 2).")
    lambda_: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of relevance vs diversity; 1 = top-n."
    )
    window: int | None = Field(
        default=None, ge=1, description="Diversity against the last `window` picks; None = all."
    )
    top_n: int | None = Field(default=None, ge=1, description="Most documents to keep.")
    token_budget: int | None = Field(
        default=None, ge=0, description="Most tokens to keep (counted by `token_counter`)."
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
    embeddings: Any = Field(
        default=None,
        exclude=True,
        description="LangChain Embeddings (or any encoder); default all-MiniLM-L6-v2.",
    )
    token_counter: Any = Field(
        default=None, exclude=True, description="str -> int; default longctx.tokens.count_tokens."
    )
    _encoder: Any = PrivateAttr(default=None)

    @field_validator("method")
    @classmethod
    def _check_method(cls, v):
        return check_choice(v, "method", METHODS)

    @field_validator("order")
    @classmethod
    def _check_order(cls, v):
        _parse_order(v)
        return v

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
        docs = list(documents)
        if not docs or (self.top_n is None and self.token_budget is None):
            return docs
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
        enc = self._get_encoder()
        emb = enc.embed_documents([d.page_content for d in docs])
        query_emb = enc.embed_query(query) if rewards is None and query else None
        counts = None
        if self.token_budget is not None:
            counts = count_many([d.page_content for d in docs], self.token_counter)
        select = mmr_select if self.method == "mmr" else fps_select
        picks = select(
            emb,
            rewards,
            counts,
            self.token_budget,
            query_embedding=query_emb,
            k=self.top_n,
            lambda_=self.lambda_,
            window=self.window,
        )
        return [docs[i] for i in order_selection(picks, None, self.order)]
