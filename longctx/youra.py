"""YOURA: sentence retrieval by reaction score (000_ac75cd36fe64736e.txt, eq. 1-6 and sec. 3.3).

The reaction vector measures how much the attention each context token receives changes when the
query is appended (eq. 1):

    reaction_j = | AttnVec(C)_j - AttnVec(concat(C, Q))_j |,   j < c,

where ``AttnVec`` is the per-column mean of the attention matrix ``softmax(Q K^T / sqrt(d))``
(eq. 2-3), averaged over heads (eq. 4-5) and over the selected layers. A sentence's reaction score
is the mean of its slice of the reaction vector (eq. 6), or its geometric mean (sec. 3.3 and the
authors' released code, the default here). Sentences are then taken greedily by score until the
token budget or 80% of the sentences is reached and returned in document order (sec. 3.3).

Work done once, not twice
-------------------------
In a causal LM the attention rows of the context tokens do not depend on what follows them. With
``c`` context and ``q`` query tokens,

    AttnVec(C)_j     = colsum_C(j) / c
    AttnVec(C + Q)_j = (colsum_C(j) + colsum_Q(j)) / (c + q),

where ``colsum_C`` sums the context rows (query-independent) and ``colsum_Q`` sums the query rows
over the context keys. So one pass over the context (with the column sums recorded by
:mod:`longctx.attention`, without any attention map) plus one pass of the query tokens over the KV
cache give eq. 1 exactly. The context's KV cache and column sums are kept per document (an LRU
keyed by the SHA-256 of the text), so another query on the same document costs only its own
tokens; the cache is cropped back after each query pass so that it stays reusable.

Baselines
---------
``baseline="paper"`` (default): eq. 1 as written; every context row counts in both vectors. The
query is appended as the tokens of ``"\\n" + query``.

With a causal LM this vector carries a strong position bias: ``reaction_j = |q * colsum_C(j) / c
- colsum_Q(j)| / (c + q)`` and ``colsum_C(j)`` grows towards the start of the context (early
tokens are seen by every later row), so early sentences score high whatever the query. On
SmolLM2-135M-Instruct its answer recall equals the "first sentences" baseline
(benchmarks/bench_youra_recall.py); prefer ``baseline="instruction"``.

``baseline="instruction"``: what the authors' released code does. The context is followed by an
instruction suffix ``S`` (``INSTRUCTION_SUFFIX``: "\\n\\nAnswer the question based on the text
above.\\n\\nQuestion:"); the vector without the query is the mean attention of the suffix rows
over the context, ``colsum_S / s``; the vector with the query is the mean attention of the suffix
and query rows, ``(colsum_S + colsum_Q) / (s + q)``, with the query appended as
``" " + query + "\\n\\nAnswer:"``. Context rows do not count.

Long contexts
-------------
A pass holds at most ``max_window`` tokens (default ``config.max_position_embeddings``). Context
windows hold ``max_window - suffix tokens - max_query_tokens`` tokens, cut at sentence starts
(sec. 3.3: "we calculate the attention vector for each chunk of context window size and
concatenate them"); each window is scored on its own, with the query appended, and the vectors are
concatenated, so the reaction vector always has one value per context token. A sentence longer than
a window is split at token level (at the window size) and its score then spans both windows. The
window layout does not depend on the query (so caches are reusable); a query longer than
``max_query_tokens`` raises ``ValueError``.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from longctx.attention import check_layers_spec, num_hidden_layers, resolve_layers
from longctx.checks import check_choice, check_float, check_int, check_text
from longctx.selection import select_top
from longctx.text import split_sentences
from longctx.types import Passage

__all__ = [
    "ReactionScorer",
    "ScoredSpan",
    "INSTRUCTION_SUFFIX",
    "GMEAN_EPS",
    "select_in_texts",
    "join_selected",
    "check_select_args",
    "scorer_from",
]

BASELINES = ("paper", "instruction")
AGGREGATES = ("gmean", "mean")

#: Instruction suffix of ``baseline="instruction"`` (appended after the context, before the query).
INSTRUCTION_SUFFIX = "\n\nAnswer the question based on the text above.\n\nQuestion:"

#: Query templates: the query is appended to the context as the tokens of this text.
QUERY_TEMPLATES = {"paper": "\n{query}", "instruction": " {query}\n\nAnswer:"}

#: Reaction values are floored at this value before the log of the geometric mean, so a token
#: whose attention did not change at all (reaction exactly 0) does not send the score to 0.
GMEAN_EPS = 1e-12


@dataclass(frozen=True)
class ScoredSpan:
    """One sentence of the context with its reaction score.

    Attributes
    ----------
    start, end : int
        Character offsets into the context (end exclusive).
    token_start, token_end : int
        Token offsets into the context's tokens (``add_special_tokens=False``), end exclusive.
        The sentence's slice of the reaction vector is ``vector[token_start:token_end]``.
    score : float
        Reaction score (eq. 6; geometric or arithmetic mean of the slice).
    index : int
        Position of the sentence among all sentences of the context, 0-based.
    """

    start: int
    end: int
    token_start: int
    token_end: int
    score: float
    index: int

    @property
    def n_tokens(self) -> int:
        """Tokens this sentence costs in a budget (at least 1, see :meth:`ReactionScorer.select`)."""
        return max(1, self.token_end - self.token_start)

    def text(self, context: str) -> str:
        """The sentence, sliced from the context it was scored in."""
        return context[self.start : self.end]

    def to_passage(self, context: str) -> Passage:
        return Passage(self.start, self.end, context[self.start : self.end], self.score, self.index)


def _align_sentences(text: str, sentences, tokenizer):
    """Tokenize ``text`` (no special tokens) and give each sentence its token span: exact spans
    from the fast tokenizer's offsets, EASY (Algorithm 1) for tokenizers without offsets
    (``longctx.align.sentence_token_spans``). Returns ``(token_ids, token_spans)``."""
    from longctx.align import sentence_token_spans

    ids, spans = sentence_token_spans(text, sentences, tokenizer)
    return list(ids), [(int(a), int(b)) for a, b in spans]


def check_select_args(token_budget, top_n, max_fraction):
    """Check the size arguments of a selection: exactly one of ``token_budget`` and ``top_n``
    (ints >= 1) and ``max_fraction`` in (0, 1]; returns them normalized.

    Raises
    ------
    TypeError, ValueError
        Naming the argument.
    """
    if (token_budget is None) == (top_n is None):
        raise ValueError("give exactly one of token_budget and top_n")
    token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
    top_n = check_int(top_n, "top_n", minimum=1, allow_none=True)
    max_fraction = check_float(max_fraction, "max_fraction", low=0.0, high=1.0)
    if max_fraction <= 0:
        raise ValueError(f"max_fraction must be in (0, 1], got {max_fraction}")
    return token_budget, top_n, max_fraction


def scorer_from(scorer=None, model=None, tokenizer=None, **kwargs) -> ReactionScorer:
    """``scorer`` if given (must be a :class:`ReactionScorer`), else a new one from ``model``,
    ``tokenizer`` and the scorer options ``kwargs`` (used by the framework adapters)."""
    if scorer is not None:
        if not isinstance(scorer, ReactionScorer):
            raise TypeError(f"scorer must be a ReactionScorer, got {type(scorer).__name__}")
        return scorer
    return ReactionScorer(model, tokenizer, **kwargs)


def _check_sentences(sentences, text_len: int):
    """Validate optional user sentence spans: sorted, non-overlapping, inside the text."""
    if sentences is None:
        return None
    out = []
    prev_end = 0
    for i, span in enumerate(sentences):
        try:
            a, b = (int(x) for x in span)
        except (TypeError, ValueError):
            raise TypeError(f"sentences[{i}] must be a (start, end) pair, got {span!r}") from None
        if not 0 <= a < b <= text_len or a < prev_end:
            raise ValueError(
                f"sentences[{i}] = {(a, b)} must be non-empty, sorted, non-overlapping and "
                f"inside the context (length {text_len})"
            )
        out.append((a, b))
        prev_end = b
    if not out:
        raise ValueError("sentences must not be empty")
    return out


def _window_bounds(token_spans, n_tokens: int, size: int) -> list[tuple[int, int]]:
    """Cut ``[0, n_tokens)`` into windows of at most ``size`` tokens, at sentence starts when
    possible, else (a sentence longer than ``size``) at ``size`` tokens."""
    cuts = np.unique(np.asarray([s for s, _ in token_spans] + [n_tokens], dtype=np.int64))
    out = []
    p = 0
    while p < n_tokens:
        hi = int(np.searchsorted(cuts, p + size, side="right")) - 1
        q = int(cuts[hi]) if hi >= 0 and cuts[hi] > p else min(n_tokens, p + size)
        out.append((p, q))
        p = q
    return out


def _crop_cache(cache, length: int) -> None:
    """Crop a transformers ``DynamicCache`` back to ``length`` tokens (in place)."""
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)  # negative = tokens to remove (all transformers versions)
    if cache.get_seq_length() != length:
        raise RuntimeError("could not crop the KV cache back to the context length")


@dataclass
class _Window:
    t0: int
    t1: int
    cache: object = None  # DynamicCache over the window (+ suffix)
    base_sums: np.ndarray | None = None  # (t1 - t0,) float64 column sums of the baseline rows
    base_rows: int = 0
    cache_len: int = 0


@dataclass
class _Doc:
    ids: list[int]
    sentences: list[tuple[int, int]]
    token_spans: list[tuple[int, int]]
    windows: list[_Window] = field(default_factory=list)
    ready: bool = False


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
    layers : {"last", "all"} or int or list of int, default "last"
        Layers whose attention is used (averaged): ``"last"`` as in the authors' released code,
        ``"all"`` for the mean over layers; negative ints count from the end.
    aggregate : {"gmean", "mean"}, default "gmean"
        Reaction score of a sentence: geometric mean of its reaction values (sec. 3.3 and the
        authors' code; values floored at ``GMEAN_EPS`` = 1e-12 before the log) or arithmetic mean
        (eq. 6).
    baseline : {"paper", "instruction"}, default "paper"
        See the module docstring.
    device : str or torch.device, optional
        Where to run (default: the model's device; for a loaded default, cuda if available).
    dtype : torch dtype or str, optional
        Passed to ``load_causal_lm`` when the scorer loads the model.
    max_window : int, optional
        Most tokens in one forward pass (context window + suffix + query); default
        ``config.max_position_embeddings``.
    max_query_tokens : int, optional
        Tokens reserved for the query in each window (default ``min(512, max_window // 4)``).
    cache_size : int, default 2
        Documents whose KV caches and column sums are kept (LRU; 0 disables). A cached document
        holds its KV cache: ``2 * layers * kv_heads * head_dim * n_tokens`` values (about
        46 kB a token for SmolLM2 in float32).
    row_block : int, optional
        Query rows per block in the attention statistics (memory/speed trade-off).
    show_progress : bool, default False
        tqdm bar over windows on stderr.

    Raises
    ------
    TypeError, ValueError
        For bad arguments, each named, before any model is loaded.
    """

    def __init__(
        self,
        model=None,
        tokenizer=None,
        *,
        layers="last",
        aggregate: str = "gmean",
        baseline: str = "paper",
        device=None,
        dtype=None,
        max_window: int | None = None,
        max_query_tokens: int | None = None,
        cache_size: int = 2,
        row_block: int | None = None,
        show_progress: bool = False,
    ):
        check_layers_spec(layers)
        check_choice(aggregate, "aggregate", AGGREGATES)
        check_choice(baseline, "baseline", BASELINES)
        self.max_window = check_int(max_window, "max_window", minimum=4, allow_none=True)
        self.max_query_tokens = check_int(
            max_query_tokens, "max_query_tokens", minimum=1, allow_none=True
        )
        self.cache_size = check_int(cache_size, "cache_size", minimum=0)
        self.row_block = check_int(row_block, "row_block", minimum=1, allow_none=True)
        if model is not None and not isinstance(model, str) and tokenizer is None:
            raise ValueError("tokenizer is required when a loaded model is given")
        if model is None and tokenizer is not None:
            raise ValueError("give a model with the tokenizer (or neither, for the default)")
        self.layers = layers
        self.aggregate = aggregate
        self.baseline = baseline
        self.show_progress = bool(show_progress)
        self.instruction_suffix = INSTRUCTION_SUFFIX if baseline == "instruction" else ""
        self.query_template = QUERY_TEMPLATES[baseline]
        self._model_arg = model
        self._device_arg = device
        self._dtype_arg = dtype
        self.model = None if model is None or isinstance(model, str) else model
        self.tokenizer = tokenizer
        self._docs: OrderedDict[str, _Doc] = OrderedDict()
        self._lock = threading.RLock()
        self._setup_done = False
        if self.model is not None:
            self._setup()

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
            self.model, self.tokenizer = load_causal_lm(
                name, device=self._device_arg, dtype=self._dtype_arg
            )
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
        self._suffix_ids = self._encode(self.instruction_suffix) if self.instruction_suffix else []
        self._max_q = self.max_query_tokens or min(512, max(1, self._window // 4))
        self._ctx_window = self._window - len(self._suffix_ids) - self._max_q
        if self._ctx_window < 1:
            raise ValueError(
                f"max_window={self._window} leaves no room for context after the suffix "
                f"({len(self._suffix_ids)} tokens) and the query ({self._max_q} tokens)"
            )
        params = inspect.signature(self.model.forward).parameters
        self._fwd_kwargs = {"use_cache": True}
        if "logits_to_keep" in params:
            self._fwd_kwargs["logits_to_keep"] = 1  # skip (n, vocab) logits: 1.6 GB at 8k tokens
        self._torch = torch
        self._setup_done = True

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    # -- documents ------------------------------------------------------------------------------
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
        self._setup()
        doc = self._get_doc(context, build=False)
        return list(doc.ids), list(doc.sentences), list(doc.token_spans)

    def clear_cache(self) -> None:
        """Drop every cached document (KV caches and column sums)."""
        with self._lock:
            self._docs.clear()

    def _get_doc(self, context: str, build: bool, sentences=None) -> _Doc:
        h = hashlib.sha256(context.encode("utf-8", "surrogatepass"))
        if sentences is not None:
            h.update(repr(sentences).encode())
        key = h.hexdigest()
        with self._lock:
            doc = self._docs.get(key)
            if doc is None:
                if sentences is None:
                    sentences = split_sentences(context)
                ids, spans = _align_sentences(context, sentences, self.tokenizer)
                if not ids:
                    raise ValueError("context has no tokens")
                doc = _Doc(ids, sentences, spans)
                doc.windows = [
                    _Window(a, b) for a, b in _window_bounds(spans, len(ids), self._ctx_window)
                ]
            if build and not doc.ready:
                self._build(doc)
            if self.cache_size:
                self._docs[key] = doc
                self._docs.move_to_end(key)
                while len(self._docs) > self.cache_size:
                    self._docs.popitem(last=False)
            return doc

    def _forward(self, ids, cache=None):
        torch = self._torch
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        out = self.model(input_ids=x, past_key_values=cache, **self._fwd_kwargs)
        return out.past_key_values

    def _build(self, doc: _Doc) -> None:
        """Query-independent part: per window the KV cache and the baseline column sums."""
        from longctx.attention import record_attention_stats

        torch = self._torch
        windows = doc.windows
        if self.show_progress and len(windows) > 1:
            from tqdm.auto import tqdm

            windows = tqdm(windows, desc="YOURA context", unit="window")
        with (
            torch.inference_mode(),
            record_attention_stats(self.model, self._layers, row_block=self.row_block) as rec,
        ):
            for w in windows:
                ids = doc.ids[w.t0 : w.t1]
                c = len(ids)
                if self.baseline == "paper":
                    cache = self._forward(ids)
                    sums = rec.pop()[0]
                    w.base_rows = c
                else:
                    with rec.paused():
                        cache = self._forward(ids)
                    cache = self._forward(self._suffix_ids, cache)
                    sums = rec.pop()[0]
                    w.base_rows = len(self._suffix_ids)
                w.base_sums = sums[:c].double().cpu().numpy()
                w.cache = cache
                w.cache_len = cache.get_seq_length()
        doc.ready = True

    # -- scoring --------------------------------------------------------------------------------
    def _query_ids(self, query: str) -> list[int]:
        ids = self._encode(self.query_template.replace("{query}", query))
        if len(ids) > self._max_q:
            raise ValueError(
                f"query is {len(ids)} tokens with its template, more than max_query_tokens="
                f"{self._max_q}; shorten it or raise max_query_tokens"
            )
        return ids

    def _reaction(self, context: str, query: str, sentences=None):
        check_text(context, "context")
        check_text(query, "query")
        sentences = _check_sentences(sentences, len(context))
        self._setup()
        from longctx.attention import record_attention_stats

        torch = self._torch
        q_ids = self._query_ids(query)
        q = len(q_ids)
        with self._lock:
            doc = self._get_doc(context, build=True, sentences=sentences)
            out = np.empty(len(doc.ids), dtype=np.float64)
            with (
                torch.inference_mode(),
                record_attention_stats(self.model, self._layers, row_block=self.row_block) as rec,
            ):
                for w in doc.windows:
                    c = w.t1 - w.t0
                    try:
                        self._forward(q_ids, w.cache)
                        q_sums = rec.pop()[0][:c].double().cpu().numpy()
                    finally:
                        _crop_cache(w.cache, w.cache_len)
                    without = w.base_sums / w.base_rows
                    with_q = (w.base_sums + q_sums) / (w.base_rows + q)
                    out[w.t0 : w.t1] = np.abs(without - with_q)
            if not self.cache_size:
                doc.ready = False
                for w in doc.windows:
                    w.cache = None
        return doc, out

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
        _, vec = self._reaction(context, query)
        return vec.astype(np.float32)

    def _scores(self, doc: _Doc, vec: np.ndarray) -> list[float]:
        out = []
        n = len(vec)
        for t0, t1 in doc.token_spans:
            v = vec[t0:t1] if t1 > t0 else vec[min(max(t0 - 1, 0), n - 1)][None]
            if self.aggregate == "gmean":
                out.append(float(np.exp(np.mean(np.log(np.maximum(v, GMEAN_EPS))))))
            else:
                out.append(float(np.mean(v)))
        return out

    def score_sentences(self, context: str, query: str, *, sentences=None) -> list[ScoredSpan]:
        """Reaction score of every sentence of the context (eq. 6 / sec. 3.3).

        Sentences come from :func:`longctx.text.split_sentences`, or from ``sentences`` (sorted,
        non-overlapping ``(start, end)`` character spans of ``context``). A sentence with no token of its
        own (it lies inside a token that began in the previous sentence) takes the value of that
        token.

        Returns
        -------
        list of ScoredSpan
            One per sentence, in document order (``index`` 0, 1, ...).

        Raises
        ------
        TypeError, ValueError
            As :meth:`reaction_vector`.
        """
        doc, vec = self._reaction(context, query, sentences)
        scores = self._scores(doc, vec)
        return [
            ScoredSpan(a, b, t0, t1, s, i)
            for i, ((a, b), (t0, t1), s) in enumerate(zip(doc.sentences, doc.token_spans, scores))
        ]

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
        Ties go to the earlier sentence.

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
        check_text(query, "query")
        token_budget, top_n, max_fraction = check_select_args(token_budget, top_n, max_fraction)
        spans = self.score_sentences(context, query, sentences=sentences)
        scores = np.asarray([s.score for s in spans])
        if top_n is not None:
            chosen = select_top(scores, k=top_n)
        else:
            counts = np.asarray([s.n_tokens for s in spans], dtype=np.int64)
            chosen = select_top(scores, token_budget=token_budget, token_counts=counts)
            cap = max(1, math.floor(max_fraction * len(spans)))
            if len(chosen) > cap:
                # the first `cap` taken by the greedy pass = the `cap` best of those chosen
                order = chosen[np.argsort(-scores[chosen], kind="stable")]
                chosen = np.sort(order[:cap])
        return [spans[i] for i in chosen.tolist()]


def select_in_texts(
    scorer: ReactionScorer,
    texts: list[str],
    query: str,
    *,
    token_budget: int | None = None,
    top_n: int | None = None,
    max_fraction: float = 0.8,
    separator: str = "\n\n",
) -> list[tuple[int, ScoredSpan]]:
    """YOURA over several texts read as one context (for retrieved nodes / documents).

    The texts are joined with ``separator`` into one context, in the given order; sentences are
    split inside each text (never across two), scored and selected together (one budget for all).

    Returns
    -------
    list of (text_index, ScoredSpan)
        In document order. ``ScoredSpan.start/end`` are character offsets into
        ``texts[text_index]``; ``token_start/end`` and ``index`` refer to the joined context.

    Raises
    ------
    TypeError, ValueError
        Bad ``texts`` (not a list of str, or no text with non-space characters) or arguments
        of :meth:`ReactionScorer.select`.
    """
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts must be a list of str")
    check_text(query, "query")
    sentences, owner, bases = [], [], []
    parts, pos = [], 0
    for i, t in enumerate(texts):
        if i:
            parts.append(separator)
            pos += len(separator)
        bases.append(pos)
        for a, b in split_sentences(t):
            sentences.append((pos + a, pos + b))
            owner.append(i)
        parts.append(t)
        pos += len(t)
    if not sentences:
        raise ValueError("texts must contain some non-whitespace text")
    context = "".join(parts)
    chosen = scorer.select(
        context,
        query,
        token_budget,
        max_fraction,
        top_n=top_n,
        sentences=sentences,
    )
    out = []
    for s in chosen:
        i = owner[s.index]
        base = bases[i]
        out.append(
            (
                i,
                ScoredSpan(
                    s.start - base, s.end - base, s.token_start, s.token_end, s.score, s.index
                ),
            )
        )
    return out


def join_selected(text: str, spans) -> str:
    """The kept sentences of ``text`` as one string, in document order.

    Runs of consecutive sentences (``index`` values that follow each other) keep the original text
    between them (``text[first.start:last.end]``, whitespace and newlines included); separate runs
    are joined with a single space. Nothing else is added or changed.
    """
    spans = sorted(spans, key=lambda s: s.start)
    runs: list[list] = []
    for s in spans:
        if runs and s.index == runs[-1][-1].index + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return " ".join(text[r[0].start : r[-1].end] for r in runs)
