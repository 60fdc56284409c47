"""YOURA reaction scores: :class:`ReactionScorer` (eq. 1 and 6 from a causal LM's attention,
with its window cache) and :func:`scorer_from`. The model passes over padded batches of windows
(context, suffix and query passes, the scoring loop) are in :mod:`longctx.youra.passes`."""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from longctx._hf import cache_keyword
from longctx.attention import check_layers_spec, num_hidden_layers, resolve_layers
from longctx.checks import check_choice, check_int, check_query, check_text
from longctx.text import split_sentences
from longctx.youra import batches, memory, passes
from longctx.youra.config import (
    AGGREGATES,
    BASELINES,
    CACHE_DTYPES,
    DEFAULT_BATCH_SIZE,
    DEFAULT_CACHE_BYTES,
    DEFAULT_CPU_DTYPE,
    DEFAULT_MAX_UNIT_TOKENS,
    DEFAULT_PRESET,
    GMEAN_EPS,
    INSTRUCTION_SUFFIX,
    MAX_BATCH_SIZE,
    MAX_CACHE_BYTES,
    MAX_CACHE_SIZE,
    MAX_WINDOW,
    NORMALIZATIONS,
    PRESETS,
    QUERY_TEMPLATES,
    RATIO_EPS,
)
from longctx.youra.config import YouraOutOfMemoryError as YouraOutOfMemoryError
from longctx.youra.spans import (
    ScoredSpan,
    _align_sentences,
    _check_sentences,
    _Layout,
    _select,
    _spans,
    _window_bounds,
    check_select_args,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Entry:
    """One cached window: its KV cache (context + suffix) and baseline column sums."""

    kv: tuple  # ((keys, values), ...) per layer, as stored (maybe bfloat16)
    base_sums: np.ndarray  # (c,) float64
    base_rows: int
    nbytes: int


class ReactionScorer:
    """YOURA reaction scores of a context's sentences for a query, from a causal LM's attention.

    Parameters
    ----------
    model : transformers causal LM, str or None
        A loaded model (its tokenizer must be given too), a local path or cached name for
        ``longctx.models.load_causal_lm``, or None for the default (SmolLM2-135M-Instruct),
        loaded on first use.
    tokenizer : transformers fast tokenizer, optional
        Required with a loaded ``model``; otherwise loaded with the model.
    preset : {"default", "paper"}, default "default"
        The settings of ``layers``, ``aggregate``, ``baseline`` and ``normalize`` that are not
        given (module docstring, "Presets"): ``"paper"`` is eq. 1 as written (last layer, gmean,
        raw values), ``"default"`` the instruction baseline with ratios over all layers, mean.
    layers : {"last", "all"} or int or list of int, optional
        Layers whose attention is used (averaged): ``"last"`` as in the authors' released code,
        ``"all"`` for the mean over layers; negative ints count from the end. Default: the
        preset's (``"all"``; ``"last"`` for ``"paper"``).
    aggregate : {"gmean", "mean"}, optional
        Reaction score of a sentence: geometric mean of its values (sec. 3.3 and the authors'
        code; values floored at ``GMEAN_EPS`` = 1e-12 before the log) or arithmetic mean (eq. 6).
        Default: the preset's (``"mean"``; ``"gmean"`` for ``"paper"``).
    prior_tokens : int in [0, ``MAX_WINDOW``], optional
        Shrink each sentence's score toward the median of its window's values as if the sentence
        had ``prior_tokens`` more tokens at that median (for ``"gmean"``, in log space), so the
        score of a two-token sentence is not the noise of two values (module docstring,
        "Presets"). 0 turns it off. Default: the preset's (8; 0 for ``"paper"``).
    baseline : {"instruction", "paper"}, optional
        See the module docstring (``"instruction"`` measured better; ``"paper"`` is eq. 1 as
        written). Default: the preset's.
    normalize : {"ratio", "none"}, optional
        ``"none"``: the reaction value of eq. 1 (absolute difference of mean attentions);
        ``"ratio"``: the ratio of the query rows' mean attention to the baseline rows', comparable
        across windows (module docstring). Default: the preset's (``"ratio"``; ``"none"`` for
        ``"paper"``).
    device : str or torch.device, optional
        Where to run (default: the model's device; for a loaded default, cuda if available).
    dtype : torch dtype or str, optional
        Dtype of the model when the scorer loads it (``load_causal_lm``); a loaded model is used
        as it is. Default: ``DEFAULT_CPU_DTYPE`` (float32) on CPU, bfloat16 on CUDA.
        ``"bfloat16"`` on CPU gives the same sentence ranks as float32 (Spearman >= 0.994 on
        real text) but measured no faster on the shared 2-core CPU (``docs/notes/youra-speed.md``).
    max_window : int in [4, ``MAX_WINDOW``], optional
        Most tokens in one forward pass (context window + suffix + query; at most
        ``longctx.youra.config.MAX_WINDOW`` = 2**20); default
        ``config.max_position_embeddings``, on CUDA capped so one pass fits in the GPU memory
        left free after the cache budget (``CUDA_PASS_FRACTION`` of it, from an estimate of the
        KV cache and one layer's activations per token).
    max_query_tokens : int in [1, ``MAX_WINDOW``], optional
        Tokens reserved for the query in each window (default ``min(512, max_window // 4)``).
    cache_bytes : int in [0, ``MAX_CACHE_BYTES``], optional
        Budget of the window cache (KV caches + column sums), in bytes (at most
        ``longctx.youra.config.MAX_CACHE_BYTES`` = 1 TiB); least recently used
        windows are evicted and recomputed when a later query needs them (module docstring).
        0 disables the cache (every query runs the context passes again). Default (None):
        ``DEFAULT_CACHE_BYTES`` (1 GiB) on CPU; on CUDA ``CUDA_CACHE_FRACTION`` (half) of the
        GPU memory free once the model is loaded (``torch.cuda.mem_get_info``).
    batch_size : int in [1, ``MAX_BATCH_SIZE``], optional
        Windows scored together in one padded forward pass (default ``DEFAULT_BATCH_SIZE`` =
        16, at most ``longctx.youra.config.MAX_BATCH_SIZE`` = 1,024). Windows are grouped by
        length, right-padded with attention masks and position ids, and a batch never holds
        more than ``max_window`` padded tokens, so it needs no more memory than one full window; pad positions are left out of the reaction vector. Short
        texts (a postprocessor's retrieved nodes, one window each) then cost a few passes
        instead of one each. 1 scores one window a pass.
    cache_dtype : {None, "bfloat16"}, default None
        Store cached keys and values in this dtype (None: as the model computes them).
        ``"bfloat16"`` halves the bytes of a float32 model's cache at a small change of the scores
        (module docstring).
    cache_size : int in [0, ``MAX_CACHE_SIZE``], default 8
        Layouts (tokens, sentence and window spans; a few bytes a token) of the most recent texts
        given to :meth:`score_sentences` and friends that are kept, so they are not tokenized
        again. :class:`YouraIndex` keeps its own.
    row_block : int in [1, ``MAX_WINDOW``], optional
        Query rows per block in the attention statistics (memory/speed trade-off).
    show_progress : bool, default False
        tqdm bar on stderr over the windows of a query (total = windows, with the time left).

    Raises
    ------
    TypeError, ValueError
        For bad arguments, each named, before any model is loaded.
    YouraOutOfMemoryError
        (a ``MemoryError``) when a pass runs out of memory, at scoring time, naming the pass's
        shape and the settings to lower (``max_window``, ``batch_size``, ``cache_bytes``).

    Notes
    -----
    The scorer holds no state about a query: its caches only hold query-independent work, and
    every model pass runs under one lock (a recording of attention statistics patches the model,
    so two passes cannot overlap). It can be shared by threads.
    """

    def __init__(
        self,
        model=None,
        tokenizer=None,
        *,
        preset: str = DEFAULT_PRESET,
        layers=None,
        aggregate: str | None = None,
        prior_tokens: int | None = None,
        baseline: str | None = None,
        normalize: str | None = None,
        device=None,
        dtype=None,
        max_window: int | None = None,
        max_query_tokens: int | None = None,
        cache_bytes: int | None = None,
        cache_dtype: str | None = None,
        batch_size: int | None = None,
        cache_size: int = 8,
        row_block: int | None = None,
        show_progress: bool = False,
    ):
        check_choice(preset, "preset", tuple(PRESETS))
        settings = PRESETS[preset]
        layers = settings["layers"] if layers is None else layers
        aggregate = settings["aggregate"] if aggregate is None else aggregate
        baseline = settings["baseline"] if baseline is None else baseline
        normalize = settings["normalize"] if normalize is None else normalize
        prior_tokens = settings["prior_tokens"] if prior_tokens is None else prior_tokens
        self.prior_tokens = check_int(prior_tokens, "prior_tokens", minimum=0, maximum=MAX_WINDOW)
        check_layers_spec(layers)
        check_choice(aggregate, "aggregate", AGGREGATES)
        check_choice(baseline, "baseline", BASELINES)
        check_choice(normalize, "normalize", NORMALIZATIONS)
        if cache_dtype is not None:
            check_choice(cache_dtype, "cache_dtype", CACHE_DTYPES[1:])
        self.max_window = check_int(
            max_window, "max_window", minimum=4, maximum=MAX_WINDOW, allow_none=True
        )
        self.max_query_tokens = check_int(
            max_query_tokens, "max_query_tokens", minimum=1, maximum=MAX_WINDOW, allow_none=True
        )
        self._cache_bytes_arg = check_int(
            cache_bytes, "cache_bytes", minimum=0, maximum=MAX_CACHE_BYTES, allow_none=True
        )
        #: the cache budget in bytes (resolved from the device when ``cache_bytes=None``)
        self.cache_bytes = DEFAULT_CACHE_BYTES if cache_bytes is None else cache_bytes
        self.batch_size = check_int(
            batch_size, "batch_size", minimum=1, maximum=MAX_BATCH_SIZE, allow_none=True
        )
        self.cache_size = check_int(cache_size, "cache_size", minimum=0, maximum=MAX_CACHE_SIZE)
        self.row_block = check_int(
            row_block, "row_block", minimum=1, maximum=MAX_WINDOW, allow_none=True
        )
        if model is not None and not isinstance(model, str) and tokenizer is None:
            raise ValueError("tokenizer is required when a loaded model is given")
        if model is None and tokenizer is not None:
            raise ValueError("give a model with the tokenizer (or neither, for the default)")
        self.preset = preset
        self.layers = layers
        self.aggregate = aggregate
        self.baseline = baseline
        self.normalize = normalize
        self.cache_dtype = cache_dtype
        self.show_progress = bool(show_progress)
        self.instruction_suffix = INSTRUCTION_SUFFIX if baseline == "instruction" else ""
        self.query_template = QUERY_TEMPLATES[baseline]
        self._model_arg = model
        self._device_arg = device
        self._dtype_arg = dtype
        self.model = None if model is None or isinstance(model, str) else model
        self.tokenizer = tokenizer
        self._layouts: OrderedDict[str, _Layout] = OrderedDict()
        self._windows: OrderedDict[str, _Entry] = OrderedDict()
        self._used = 0
        self._stats = {"hits": 0, "misses": 0, "evictions": 0, "peak_bytes": 0}
        self._lock = threading.RLock()
        self._setup_done = False
        if self.model is not None:
            self._setup()

    def config(self) -> dict:
        """The scorer's options as a JSON-ready dict (what :meth:`YouraIndex.save` stores)."""
        return {
            "model": self._model_arg if isinstance(self._model_arg, str) else None,
            "preset": self.preset,
            "layers": self.layers if isinstance(self.layers, (str, int)) else list(self.layers),
            "aggregate": self.aggregate,
            "prior_tokens": self.prior_tokens,
            "baseline": self.baseline,
            "normalize": self.normalize,
            "max_window": self.max_window,
            "max_query_tokens": self.max_query_tokens,
            "cache_bytes": self._cache_bytes_arg,
            "cache_dtype": self.cache_dtype,
        }

    # -- set-up ---------------------------------------------------------------------------------
    def _setup(self) -> None:
        if self._setup_done:
            return
        with self._lock:
            if not self._setup_done:
                self._setup_locked()

    def _setup_locked(self) -> None:
        import torch

        if self.model is None:
            from longctx.models import load_causal_lm

            name = self._model_arg if isinstance(self._model_arg, str) else None
            dtype = self._dtype_arg
            if dtype is None:
                from longctx.models import default_device

                dev = default_device() if self._device_arg is None else self._device_arg
                if torch.device(dev).type == "cpu":
                    dtype = DEFAULT_CPU_DTYPE
            self.model, self.tokenizer = load_causal_lm(name, device=self._device_arg, dtype=dtype)
        elif self._device_arg is not None:
            self.model.to(self._device_arg)
        self.model.eval()
        self.device = next(self.model.parameters()).device
        self._layers = resolve_layers(self.layers, num_hidden_layers(self.model))
        cfg = self.model.config.get_text_config()
        window = self.max_window or getattr(cfg, "max_position_embeddings", None)
        if not window:
            raise ValueError(
                "max_window is required: the model config has no max_position_embeddings"
            )
        self._window = int(window)
        free = memory.free_device_memory(self.device)
        if free is not None:  # CUDA: defaults from the free GPU memory
            self.cache_bytes, self._window = memory.gpu_memory_defaults(
                free,
                cfg,
                next(self.model.parameters()).element_size(),
                self._window,
                cache_bytes=self._cache_bytes_arg,
                max_window=self.max_window,
                eager=self.model.config._attn_implementation == "eager",
            )
        self._batch_size = self.batch_size or DEFAULT_BATCH_SIZE
        self._suffix_ids = self._encode(self.instruction_suffix) if self.instruction_suffix else []
        self._max_q = self.max_query_tokens or min(512, max(1, self._window // 4))
        self._ctx_window = self._window - len(self._suffix_ids) - self._max_q
        if self._ctx_window < 1:
            raise ValueError(
                f"max_window={self._window} leaves no room for context after the suffix "
                f"({len(self._suffix_ids)} tokens) and the query ({self._max_q} tokens)"
            )
        params = inspect.signature(self.model.forward).parameters
        self._cache_arg = cache_keyword(self.model)
        self._fwd_kwargs = {"use_cache": True}
        if "logits_to_keep" in params:
            self._fwd_kwargs["logits_to_keep"] = 1  # skip (n, vocab) logits: 1.6 GB at 8k tokens
        self._store_dtype = torch.bfloat16 if self.cache_dtype == "bfloat16" else None
        self._torch = torch
        self._setup_done = True

    def _encode(self, text: str) -> list[int]:
        with self._lock:  # one tokenizer call at a time (a Rust tokenizer is not re-entrant)
            enc = self.tokenizer(text, add_special_tokens=False, verbose=False)
        return list(enc["input_ids"])

    # -- layouts (query-independent, no model pass) --------------------------------------------
    def _make_layout(
        self, context: str, sentences=None, max_unit_tokens: int | None = DEFAULT_MAX_UNIT_TOKENS
    ) -> _Layout:
        """Sentences, tokens and windows of one text (tokenizer only, no model pass). Sentences
        found by :func:`split_sentences` that are longer than ``max_unit_tokens`` model tokens
        are cut on word boundaries (:func:`longctx.text.split_long_spans`); given ``sentences``
        are used as they are."""
        self._setup()
        cut = sentences is None and max_unit_tokens is not None
        if sentences is None:
            sentences = split_sentences(context)
        if not sentences:
            raise ValueError("context has no sentences")
        with self._lock:  # one tokenizer call at a time
            ids, spans = _align_sentences(context, sentences, self.tokenizer)
            long = [i for i, (a, b) in enumerate(spans) if b - a > max_unit_tokens] if cut else []
            if long:
                from longctx.text import split_long_spans
                from longctx.tokens import hf_token_counter

                # words repeat: count each distinct word (and piece) once
                counter = functools.lru_cache(maxsize=1 << 17)(hf_token_counter(self.tokenizer))
                pieces = {i: split_long_spans(context, [sentences[i]], max_unit_tokens, counter)
                          for i in long}  # fmt: skip
                sentences = [p for i, s in enumerate(sentences) for p in pieces.get(i, [s])]
                logger.info(
                    "YOURA: %d sentences longer than %d tokens cut into %d pieces",
                    len(long),
                    max_unit_tokens,
                    sum(len(v) for v in pieces.values()),
                )
                ids, spans = _align_sentences(context, sentences, self.tokenizer)
        if not ids:
            raise ValueError("context has no tokens")
        windows = _window_bounds(spans, len(ids), self._ctx_window)
        arr = np.asarray(ids, dtype=np.int64)
        wkeys = tuple(hashlib.sha256(arr[a:b].tobytes()).hexdigest() for a, b in windows)
        return _Layout(
            tuple(int(i) for i in ids),
            tuple((int(a), int(b)) for a, b in sentences),
            tuple(spans),
            tuple(windows),
            wkeys,
        )

    def _layout(self, context: str, sentences=None) -> _Layout:
        h = hashlib.sha256(context.encode("utf-8", "surrogatepass"))
        if sentences is not None:
            h.update(repr(sentences).encode())
        key = h.hexdigest()
        with self._lock:
            lay = self._layouts.get(key)
            if lay is not None:
                self._layouts.move_to_end(key)
                return lay
            lay = self._make_layout(context, sentences)
            if self.cache_size:
                self._layouts[key] = lay
                while len(self._layouts) > self.cache_size:
                    self._layouts.popitem(last=False)
        return lay

    def encode_context(self, context: str):
        """Sentences and tokens of a context, as the scorer sees them.

        Returns
        -------
        token_ids : list of int
            ``n_tokens`` context tokens (no special tokens).
        sentences : list of (start, end)
            Character spans from :func:`longctx.text.split_sentences`.
        token_spans : list of (t_start, t_end)
            Token span of each sentence (contiguous, covering all tokens).
        """
        check_text(context, "context")
        lay = self._layout(context)
        return list(lay.ids), list(lay.sentences), list(lay.token_spans)

    # -- the window cache -----------------------------------------------------------------------
    def cache_info(self) -> dict:
        """State of the window cache: ``bytes`` used, ``budget`` (``cache_bytes``), ``windows``
        cached, and since creation (or :meth:`clear_cache`) ``hits``, ``misses``,
        ``evictions`` and ``peak_bytes`` (never above ``budget``)."""
        with self._lock:
            return {
                "bytes": self._used,
                "budget": self.cache_bytes,
                "windows": len(self._windows),
                "layouts": len(self._layouts),
                **self._stats,
            }

    def clear_cache(self) -> None:
        """Drop every cached window and layout, and reset the counters of :meth:`cache_info`."""
        with self._lock:
            self._windows.clear()
            self._layouts.clear()
            self._used = 0
            self._stats = {"hits": 0, "misses": 0, "evictions": 0, "peak_bytes": 0}

    def _store(self, key: str, kv, base_sums: np.ndarray, base_rows: int) -> bool:
        """Put a window into the cache (under the lock), evicting LRU windows to stay under
        ``cache_bytes``; a window larger than the whole budget is not cached. ``kv``: one
        ``(keys, values)`` pair a layer, each ``(1, kv_heads, tokens, head_dim)``, owned by the
        caller (not views of a larger batch). Returns whether it was stored."""
        if key in self._windows:  # the same window twice in one batch
            return True
        stored = []
        nbytes = base_sums.nbytes
        for k, v in kv:
            if self._store_dtype is not None:
                k, v = k.to(self._store_dtype), v.to(self._store_dtype)
            stored.append((k, v))
            nbytes += k.numel() * k.element_size() + v.numel() * v.element_size()
        if nbytes > self.cache_bytes:
            logger.debug("window of %d bytes exceeds cache_bytes: not cached", nbytes)
            return False
        while self._used + nbytes > self.cache_bytes and self._windows:
            _, old = self._windows.popitem(last=False)
            self._used -= old.nbytes
            self._stats["evictions"] += 1
        self._windows[key] = _Entry(tuple(stored), base_sums, base_rows, nbytes)
        self._used += nbytes
        self._stats["peak_bytes"] = max(self._stats["peak_bytes"], self._used)
        return True

    def _new_cache(self, data=None):
        from transformers import DynamicCache

        if data is None:
            return DynamicCache(config=self.model.config)
        return DynamicCache(ddp_cache_data=data, config=self.model.config)

    def _cache_from(self, entries):
        """A fresh DynamicCache holding cached windows (copies in the model's dtype, one row
        each, right-padded: :func:`longctx.youra.batches.pad_kv`); the query pass appends to the
        copy. Returns ``(cache, past_mask)``."""
        data, past_mask = batches.pad_kv(
            [e.kv for e in entries], next(self.model.parameters()).dtype
        )
        return self._new_cache(data), past_mask

    def _forward(self, ids, cache, lens=None, past_mask=None):
        """One forward pass of a batch of token rows over ``cache``
        (:func:`longctx.youra.passes.forward`)."""
        return passes.forward(self, ids, cache, lens=lens, past_mask=past_mask)

    def _context_batch(self, seqs, rec):
        """Query-independent passes of a batch of windows
        (:func:`longctx.youra.passes.context_batch`)."""
        return passes.context_batch(self, seqs, rec)

    def _store_batch(self, keys, seqs, cache, bases) -> list[bool]:
        """Store each row of a batch computed by :meth:`_context_batch`; returns which were."""
        width = max(len(s) for s in seqs)
        return [
            self._store(key, batches.unpad_row(cache, r, len(seq), width), *bases[r])
            for r, (key, seq) in enumerate(zip(keys, seqs))
        ]

    def _batches(self, items, length):
        return batches.group(items, length, self._batch_size, self._window)

    def _progress(self, total: int):
        if not (self.show_progress and total > 1):
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="YOURA", unit="window", dynamic_ncols=True)

    def _warm(self, layouts) -> int:
        """Compute and cache the windows of ``layouts`` not cached yet, while they fit in the
        budget (:func:`longctx.youra.passes.warm`); returns the number of windows computed."""
        return passes.warm(self, layouts)

    def _vectors(self, layouts, query: str, keep: dict | None = None):
        """Reaction vectors (eq. 1-5) of several layouts for one query, and the pass counts and
        times (:func:`longctx.youra.passes.vectors`; ``keep``: the attention before and after
        the query, for explanations)."""
        return passes.vectors(self, layouts, query, keep)

    def _attention(self, base_sums, base_rows: int, q_sums, q: int):
        """``(before, after)``, each ``(c,) float64``: the attention a window's tokens get
        without the query and with it, as :meth:`_window_vector` compares them (``"none"``:
        the mean column sum per row, before and after the query rows are added; ``"ratio"``:
        the share of the baseline rows' and of the query rows' attention)."""
        if self.normalize == "ratio":
            before = base_sums / max(float(base_sums.sum()), 1e-30)
            return before, q_sums / max(float(q_sums.sum()), 1e-30)
        return base_sums / base_rows, (base_sums + q_sums) / (base_rows + q)

    def _window_vector(self, base_sums, base_rows: int, q_sums, q: int) -> np.ndarray:
        """One window's slice of the reaction vector, ``(c,) float64``, from the baseline's
        column sums over ``base_rows`` rows and the query's over ``q`` rows (module docstring:
        eq. 1 with ``normalize="none"``, the ratio of attention shares with ``"ratio"``)."""
        if self.normalize == "ratio":
            eps = RATIO_EPS / len(base_sums)
            share_q = q_sums / max(float(q_sums.sum()), 1e-30)
            share_base = base_sums / max(float(base_sums.sum()), 1e-30)
            ratio = (share_q + eps) / (share_base + eps)
            return ratio / np.median(ratio)
        without = base_sums / base_rows
        return np.abs(without - (base_sums + q_sums) / (base_rows + q))

    # -- scoring --------------------------------------------------------------------------------
    def _query_ids(self, query: str) -> list[int]:
        ids = self._encode(self.query_template.replace("{query}", query))
        if len(ids) > self._max_q:
            raise ValueError(
                f"query is {len(ids)} tokens with its template, more than max_query_tokens="
                f"{self._max_q}; shorten it or raise max_query_tokens"
            )
        return ids

    def _scores(self, lay: _Layout, vec: np.ndarray) -> np.ndarray:
        """(n_sentences,) float64 reaction scores of a layout's sentences (eq. 6 / sec. 3.3)."""
        out = np.empty(len(lay.token_spans), dtype=np.float64)
        n = len(vec)
        gmean = self.aggregate == "gmean"
        m = self.prior_tokens
        if m:  # the prior: each token's window median (log of it for gmean)
            prior = np.empty(n, dtype=np.float64)
            for w0, w1 in lay.windows:
                prior[w0:w1] = np.median(vec[w0:w1])
            if gmean:
                prior = np.log(np.maximum(prior, GMEAN_EPS))
        for i, (t0, t1) in enumerate(lay.token_spans):
            if t1 <= t0:  # a sentence with no token of its own: the token before it
                t0 = min(max(t0 - 1, 0), n - 1)
                t1 = t0 + 1
            v = vec[t0:t1]
            if gmean:
                v = np.log(np.maximum(v, GMEAN_EPS))
            total, count = float(np.sum(v)), len(v)
            if m:
                total += m * float(prior[t0])
                count += m
            out[i] = np.exp(total / count) if gmean else total / count
        return out

    def _checked(self, context, query, sentences=None) -> _Layout:
        check_text(context, "context")
        check_query(query, "query")
        sentences = _check_sentences(sentences, len(context))
        self._setup()
        self._query_ids(query)  # a too long query fails before any pass
        return self._layout(context, sentences)

    def reaction_vector(self, context: str, query: str) -> np.ndarray:
        """Reaction vector of the context for the query (eq. 1-5).

        Parameters
        ----------
        context : str
            The document (never truncated: long ones are scored in windows).
        query : str
            The question, non-empty.

        Returns
        -------
        (n_context_tokens,) float32
            ``|AttnVec(C)_j - AttnVec(C + Q)_j|`` per context token ``j`` (tokens of
            ``tokenizer(context, add_special_tokens=False)``), averaged over heads and layers.

        Raises
        ------
        TypeError, ValueError
            Empty or non-str ``context``/``query``, or a query longer than ``max_query_tokens``.
        """
        lay = self._checked(context, query)
        (vec,), _ = self._vectors([lay], query)
        return vec.astype(np.float32)

    def warm(self, context: str) -> int:
        """Run the context passes of ``context``'s windows now (not on the first query), as far
        as the cache budget allows. Returns the number of windows computed."""
        check_text(context, "context")
        return self._warm([self._layout(context)])

    def score_sentences(self, context: str, query: str, *, sentences=None) -> list[ScoredSpan]:
        """Reaction score of every sentence of the context (eq. 6 / sec. 3.3).

        Sentences come from :func:`longctx.text.split_sentences`, or from ``sentences`` (sorted,
        non-overlapping ``(start, end)`` character spans of ``context``). A sentence with no
        token of its own (it lies inside a token that began in the previous sentence) takes the
        value of that token.

        Returns
        -------
        list of ScoredSpan
            One per sentence, in document order (``index`` 0, 1, ...).

        Raises
        ------
        TypeError, ValueError
            As :meth:`reaction_vector`.
        """
        lay = self._checked(context, query, sentences)
        (vec,), _ = self._vectors([lay], query)
        return _spans(lay, self._scores(lay, vec))

    def select(
        self,
        context: str,
        query: str,
        token_budget: int | None = None,
        max_fraction: float = 0.8,
        *,
        top_n: int | None = None,
        sentences=None,
    ) -> list[ScoredSpan]:
        """The most reactive sentences, in document order (sec. 3.3).

        Exactly one of ``token_budget`` and ``top_n``. With ``token_budget``: sentences are taken
        greedily by descending score while they fit in the budget (a sentence that does not fit
        is skipped, smaller ones after it may still be taken, so the budget is never exceeded),
        stopping at ``max(1, floor(max_fraction * n_sentences))`` sentences (the paper's 80%
        threshold). With ``top_n``: the ``top_n`` best sentences (``max_fraction`` not applied).
        Ties go to the earlier sentence. Same rule as :meth:`YouraIndex.search`.

        Parameters
        ----------
        token_budget : int >= 1, optional
            In model tokens; a sentence costs its token span length (at least 1).
        max_fraction : float in (0, 1], default 0.8
        top_n : int >= 1, optional
        sentences : list of (start, end), optional
            Character spans to score instead of :func:`longctx.text.split_sentences`'s.

        Raises
        ------
        TypeError, ValueError
            Bad arguments (named), before the model runs.
        """
        check_text(context, "context")
        check_query(query, "query")
        token_budget, top_n, max_fraction = check_select_args(token_budget, top_n, max_fraction)
        spans = self.score_sentences(context, query, sentences=sentences)
        scores = np.asarray([s.score for s in spans])
        counts = np.asarray([s.n_tokens for s in spans], dtype=np.int64)
        chosen = _select(scores, counts, top_n, token_budget, max_fraction)
        return [spans[i] for i in chosen.tolist()]


def scorer_from(scorer=None, model=None, tokenizer=None, **kwargs) -> ReactionScorer:
    """``scorer`` if given (must be a :class:`ReactionScorer`), else a new one from ``model``,
    ``tokenizer`` and the scorer options ``kwargs`` (used by the framework adapters)."""
    if scorer is not None:
        if not isinstance(scorer, ReactionScorer):
            raise TypeError(f"scorer must be a ReactionScorer, got {type(scorer).__name__}")
        return scorer
    return ReactionScorer(model, tokenizer, **kwargs)
