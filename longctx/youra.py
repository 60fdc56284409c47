"""YOURA: sentence retrieval by reaction score.

Reference: Yun Joon Soh, Hanxian Huang, Yuandong Tian, Jishen Zhao, "You Only Use Reactive
Attention Slice For Long Context Retrieval", 2024, arXiv:2409.13695
(https://arxiv.org/abs/2409.13695), eq. 1-6 and sec. 3.3.

The reaction vector measures how much the attention each context token receives changes when the
query is appended (eq. 1):

    reaction_j = | AttnVec(C)_j - AttnVec(concat(C, Q))_j |,   j < c,

where ``AttnVec`` is the per-column mean of the attention matrix ``softmax(Q K^T / sqrt(d))``
(eq. 2-3), averaged over heads (eq. 4-5) and over the selected layers. A sentence's reaction score
is the mean of its slice of the reaction vector (eq. 6), or its geometric mean (sec. 3.3 and the
authors' released code, the default here). Sentences are then taken greedily by score until the
token budget or 80% of the sentences is reached and returned in document order (sec. 3.3).

Presets
-------
``preset="paper"`` is the paper's setting: eq. 1 as written (``baseline="paper"``), the last
layer, geometric mean, raw reaction values (``normalize="none"``); its scores are exactly those of
longctx before presets existed. ``preset="default"`` (the default everywhere: core, adapters,
CLI) changes five things, chosen by measurement (``benchmarks/youra_dump.py`` and
``benchmarks/youra_study.py`` on questions not used for the reported table):

- ``baseline="instruction"``: the authors' released code (below, "Baselines");
- ``normalize="ratio"``: a token's value is the **ratio** of the share of the query rows'
  attention to the window's context that it gets, over the share of the baseline rows' attention
  that it gets: ``(Q_j + e) / (S_j + e)`` with ``Q = colsum_Q / sum(colsum_Q)`` and
  ``S = colsum_S / sum(colsum_S)`` over the window's ``c`` context tokens and
  ``e = RATIO_EPS / c`` (a tenth of a uniform share), divided by its median over the window's
  tokens, instead of the absolute difference of eq. 1. Raw reactions are not comparable across
  windows: attention is spread over a window's ``c`` tokens, so a shorter window (the last one)
  has larger values, and the suffix and query rows attend most to the tokens just before them, so
  each window's last sentences win whatever the question. A ratio of shares is dimensionless and
  the suffix rows share the query rows' recency, so both cancel; the window's first token (an
  attention sink) takes a different share of the query's and of the suffix's attention in each
  window, which moves all of that window's ratios by one factor: dividing by the median (1 in
  every window and text) removes it (on 16,000 characters of Pride and Prejudice in 1024-token
  windows, one window's mean ratio was 1.19 and the others' 0.95-1.03, and it took every pick);
- ``layers="all"``: the mean over all layers (the last layer alone is the worst layer set with
  ratios on SmolLM2-135M);
- ``aggregate="mean"``: a sentence's score is the mean of its ratios;
- ``prior_tokens=8``: that mean is shrunk toward the window's median (1 with ratios) as if the
  sentence had 8 more tokens at the median, ``(sum + 8 * median) / (n + 8)`` (a Bayesian
  average). A mean over two or three tokens is noisy, and with many windows the noise alone puts
  one-word lines at the top: on all of War and Peace (114 windows of 8k tokens) the plain mean's
  top 20 for "Why is Prince Andrew going to the war?" held seven lines of one to three words
  ("Prince Andrew's?" first at 13.0, "To Kiev?" second at 12.7, "Why?" twice, "Andrew!"; the
  best full sentence third at 12.0); with ``prior_tokens=8`` three, and the full sentence ("You
  are going to the war and have no pity for me.") first, "Prince Andrew's?" second. On the
  study questions below it changed no selection at 10% or 20%; on five marked questions of the
  first 100,000 characters of War and Peace (``youra_dump.py`` / ``youra_study.py``) the answer
  sentences' ranks went from 90, 11, 4, 8, 1 to 87, 7, 2, 5, 1 (2048-token windows) and from
  387, 5, 16, 9, 1 to 380, 1, 17, 6, 1 (8k).

Measured on SmolLM2-135M-Instruct, 2048-token windows, answer recall at 10% / 20% of the tokens
on the study questions (SQuAD seed 1, 15 questions; NarrativeQA summaries seed 1, 12; HotpotQA
rows 50-59, mean share of supporting sentences): old default (instruction, last layer, gmean,
raw) 0.33 / 0.47, 0.25 / 0.42, 0.33 / 0.46; new default 1.00 / 1.00, 0.50 / 0.83, 0.46 / 0.58;
BM25 1.00 / 1.00, 0.58 / 0.83, 0.39 / 0.62. On 40,000 characters of Pride and Prejudice (7
windows) the share of picks that start in the last 10% of their window fell from 0.47 to 0.07.
The reported table (other questions) is in ``benchmarks/bench_youra_recall.py``'s output and the
README.

Build once, query many
----------------------
:class:`YouraIndex` does the query-independent work once per corpus (sentence split, sentence to
token alignment, window layout) and answers many queries; the model work that does not depend on
the query (each window's KV cache and baseline column sums) lives in the
:class:`ReactionScorer`'s window cache, computed on the first query that needs it (or by
:meth:`YouraIndex.warm`). Neither object keeps anything about a query: one index can serve threads
and asyncio tasks at once (model passes run one at a time, under the scorer's lock).

Work done once, not twice
-------------------------
In a causal LM the attention rows of the context tokens do not depend on what follows them. With
``c`` context and ``q`` query tokens,

    AttnVec(C)_j     = colsum_C(j) / c
    AttnVec(C + Q)_j = (colsum_C(j) + colsum_Q(j)) / (c + q),

where ``colsum_C`` sums the context rows (query-independent) and ``colsum_Q`` sums the query rows
over the context keys. So one pass over the context (with the column sums recorded by
:mod:`longctx.attention`, without any attention map) plus one pass of the query tokens over the KV
cache give eq. 1 exactly. Another query on a cached window costs only its own tokens.

Memory budget of the window cache
---------------------------------
The cache holds, per window, its KV cache (``2 * layers * kv_heads * head_dim`` values a token:
about 46 kB a token for SmolLM2-135M in float32, 23 kB in bfloat16) and its baseline column sums (8
bytes a token). Its total stays under ``cache_bytes`` (default 1 GiB): when a new window does not
fit, the least recently used windows are evicted; a window larger than the whole budget is not
cached. Windows are keyed by their tokens, so identical windows (a text given twice, or the same
text in two indexes on one scorer) share one entry. **An evicted window is recomputed (one context
pass) when a later query needs it**, so the results never depend on the budget, only the time does.
Windows already cached are scored first in each query, so with a corpus larger than the budget
every query reuses a full budget of windows instead of evicting them before their turn (plain LRU
over a sequential scan would reuse none). ``cache_dtype="bfloat16"`` stores keys and values in
bfloat16 (half the bytes, twice the windows for the same budget) and casts them back to the model's
dtype for the query pass; this rounds the cached keys and values (8 bits of mantissa), so scores
move slightly. Measured with ``benchmarks/bench_youra.py --bf16-effect`` on SmolLM2-135M-Instruct
(float32) and 2,186 tokens of War and Peace (``max_window=1024``, instruction baseline, two
questions): the reaction vector moved by 0.4-0.7% (relative L2 norm), the sentence ranking not at
all (Spearman 1.000, the same top-10 sentences). A window is scored from its stored (rounded) cache
from its first query on, so the results do not depend on whether a window was cached or recomputed.
The memory the model needs for the pass being run (activations, one window's cache before it is
stored) is not part of the budget. With a model on CUDA the cache lives on the GPU and the budget
is GPU memory.

Baselines
---------
``baseline="instruction"`` (default preset): what the authors' released code does. The context is
followed by an instruction suffix ``S`` (``INSTRUCTION_SUFFIX``: "\\n\\nAnswer the question based
on the text above.\\n\\nQuestion:"); the vector without the query is the mean attention of the
suffix rows over the context, ``colsum_S / s``; the vector with the query is the mean attention of
the suffix and query rows, ``(colsum_S + colsum_Q) / (s + q)``, with the query appended as
``" " + query + "\\n\\nAnswer:"``. Context rows do not count. It measured better
(``benchmarks/bench_youra_recall.py``). With ``normalize="ratio"`` the value is the ratio of the
shares of ``colsum_Q`` and ``colsum_S`` (above, "Presets").

``baseline="paper"``: eq. 1 as written; every context row counts in both vectors. The query is
appended as the tokens of ``"\\n" + query``. With a causal LM this vector carries a strong
position bias: ``reaction_j = |q * colsum_C(j) / c - colsum_Q(j)| / (c + q)`` and
``colsum_C(j)`` grows towards the start of the context (early tokens are seen by every later row),
so early sentences score high whatever the query. On SmolLM2-135M-Instruct its answer recall
equals the "first sentences" baseline. With ``normalize="ratio"`` the value is the ratio of the
shares of ``colsum_Q`` and ``colsum_C``, still position-biased (``colsum_C`` is).

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

Several texts
-------------
:class:`YouraIndex` ranks the sentences of all its texts in **one global greedy pass**. Ratios
(``normalize="ratio"``, the default preset) are on one scale already and are ranked as they are
(``score_scale="none"``). Raw reaction values (``normalize="none"``) are not: a window's attention
is spread over its ``c`` tokens, so the mean reaction value of a text shrinks like ``1 / c`` and a
short text's sentences would outscore a long text's whatever the query; their scores are then
multiplied by their text's mean window length in tokens (``n_tokens / n_windows``), i.e. reaction
measured in units of a uniform attention share (``score_scale="window"``). Within one text this
is a constant factor, so the order of its sentences is the paper's.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from longctx.attention import check_layers_spec, num_hidden_layers, resolve_layers
from longctx.checks import check_choice, check_float, check_int, check_text
from longctx.index import RetrievalIndex, check_texts
from longctx.selection import check_budget_fits, check_size, select_top
from longctx.text import split_sentences
from longctx.types import Passage, SearchResult

logger = logging.getLogger(__name__)

__all__ = [
    "check_max_fraction",
    "ReactionScorer",
    "YouraIndex",
    "ScoredSpan",
    "INSTRUCTION_SUFFIX",
    "GMEAN_EPS",
    "DEFAULT_BASELINE",
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_K",
    "DEFAULT_MAX_UNIT_TOKENS",
    "join_selected",
    "check_select_args",
    "scorer_from",
]

BASELINES = ("paper", "instruction")
AGGREGATES = ("gmean", "mean")
NORMALIZATIONS = ("none", "ratio")
CACHE_DTYPES = (None, "bfloat16")
SCORE_SCALES = ("window", "none")

#: Scorer settings of each preset (``ReactionScorer(preset=...)``; see the module docstring,
#: "Presets"). ``"paper"`` is eq. 1 as written, on the last layer, geometric mean, raw reaction
#: values: the exact scores of longctx before the ``"default"`` preset existed.
PRESETS = {
    "paper": {
        "baseline": "paper",
        "layers": "last",
        "aggregate": "gmean",
        "normalize": "none",
        "prior_tokens": 0,
    },
    "default": {
        "baseline": "instruction",
        "layers": "all",
        "aggregate": "mean",
        "normalize": "ratio",
        "prior_tokens": 8,
    },
}

#: The preset used when none is given.
DEFAULT_PRESET = "default"

#: The baseline of the default preset (what the CLI and the adapters use when none is given).
DEFAULT_BASELINE = PRESETS[DEFAULT_PRESET]["baseline"]

#: ``normalize="ratio"`` adds this fraction of a uniform attention share (``RATIO_EPS / c`` in a
#: window of ``c`` tokens) to both attention shares before dividing, so tokens that almost no row
#: attends to do not get huge ratios from rounding noise.
RATIO_EPS = 0.1

#: Default budget of a scorer's window cache (KV caches and column sums), in bytes: 1 GiB. With
#: SmolLM2 and its 8,192-token window a pass needs about 1.4 GB more (model, activations, one
#: window's cache before it is stored: 1.8 GB peak RSS measured with no cache at all on three
#: windows of War and Peace), so a whole book stays under 4 GB (War and Peace, 114 windows of 8k
#: tokens, ``longctx retrieve --method youra``: 3.49 GB peak RSS); a 2 GiB cache reached 4.5 GB.
DEFAULT_CACHE_BYTES = 2**30

#: Sentences longer than this many model tokens are cut on word boundaries before scoring (a
#: text without punctuation is otherwise one "sentence", returned whole); ``YouraIndex`` takes
#: ``max_unit_tokens``, one-off callers with a token budget cap it at the budget
#: (:func:`longctx.selection.unit_token_cap`).
DEFAULT_MAX_UNIT_TOKENS = 256

#: Sentences returned by :meth:`YouraIndex.search` (and the adapters) when no size is given.
DEFAULT_K = 10

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

    def to_passage(self, context: str, source: int = 0) -> Passage:
        return Passage(
            self.start, self.end, context[self.start : self.end], self.score, self.index, source
        )


def _align_sentences(text: str, sentences, tokenizer):
    """Tokenize ``text`` (no special tokens) and give each sentence its token span: exact spans
    from the fast tokenizer's offsets, EASY (Algorithm 1) for tokenizers without offsets
    (``longctx.align.sentence_token_spans``). Returns ``(token_ids, token_spans)``."""
    from longctx.align import sentence_token_spans

    ids, spans = sentence_token_spans(text, sentences, tokenizer)
    return list(ids), [(int(a), int(b)) for a, b in spans]


def check_select_args(token_budget, top_n, max_fraction):
    """Check the size arguments of :meth:`ReactionScorer.select`: exactly one of
    ``token_budget`` and ``top_n`` (ints >= 1) and ``max_fraction`` in (0, 1]; returns them.

    Raises
    ------
    TypeError, ValueError
        Naming the argument.
    """
    if (token_budget is None) == (top_n is None):
        raise ValueError("give exactly one of token_budget and top_n")
    token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
    top_n = check_int(top_n, "top_n", minimum=1, allow_none=True)
    return token_budget, top_n, check_max_fraction(max_fraction)


def check_max_fraction(max_fraction) -> float:
    """``max_fraction`` as a float in (0, 1] (the paper's 80% cap on the share of sentences taken,
    sec. 3.3); ``TypeError`` / ``ValueError`` naming it otherwise."""
    max_fraction = check_float(max_fraction, "max_fraction", low=0.0, high=1.0)
    if max_fraction <= 0:
        raise ValueError(f"max_fraction must be in (0, 1], got {max_fraction}")
    return max_fraction


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


def _select(scores, counts, k, token_budget, max_fraction) -> np.ndarray:
    """The one selection rule of YOURA (sec. 3.3), for :meth:`ReactionScorer.select` and
    :meth:`YouraIndex.search`: with ``k`` the ``k`` best; with ``token_budget`` greedy by score
    under the budget (``longctx.selection.select_top``), then at most
    ``max(1, floor(max_fraction * n))`` of them (the best). Indices sorted ascending."""
    scores = np.asarray(scores, dtype=np.float64)
    if k is not None:
        return select_top(scores, k=k)
    chosen = select_top(scores, token_budget=token_budget, token_counts=counts)
    cap = max(1, math.floor(max_fraction * len(scores)))
    if len(chosen) > cap:
        # the first `cap` taken by the greedy pass = the `cap` best of those chosen
        order = chosen[np.argsort(-scores[chosen], kind="stable")]
        chosen = np.sort(order[:cap])
    return chosen


@dataclass(frozen=True)
class _Layout:
    """Query-independent layout of one text: its tokens, sentences and windows."""

    ids: tuple[int, ...]
    sentences: tuple[tuple[int, int], ...]
    token_spans: tuple[tuple[int, int], ...]
    windows: tuple[tuple[int, int], ...]
    #: content hash of each window's token ids (the window cache key)
    wkeys: tuple[str, ...]

    @property
    def token_counts(self) -> np.ndarray:
        return np.asarray([max(1, b - a) for a, b in self.token_spans], dtype=np.int64)


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
    prior_tokens : int >= 0, optional
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
        Passed to ``load_causal_lm`` when the scorer loads the model.
    max_window : int, optional
        Most tokens in one forward pass (context window + suffix + query); default
        ``config.max_position_embeddings``.
    max_query_tokens : int, optional
        Tokens reserved for the query in each window (default ``min(512, max_window // 4)``).
    cache_bytes : int >= 0, default ``DEFAULT_CACHE_BYTES`` (1 GiB)
        Budget of the window cache (KV caches + column sums), in bytes; least recently used
        windows are evicted and recomputed when a later query needs them (module docstring).
        0 disables the cache (every query runs the context passes again).
    cache_dtype : {None, "bfloat16"}, default None
        Store cached keys and values in this dtype (None: as the model computes them).
        ``"bfloat16"`` halves the bytes of a float32 model's cache at a small change of the scores
        (module docstring).
    cache_size : int >= 0, default 8
        Layouts (tokens, sentence and window spans; a few bytes a token) of the most recent texts
        given to :meth:`score_sentences` and friends that are kept, so they are not tokenized
        again. :class:`YouraIndex` keeps its own.
    row_block : int, optional
        Query rows per block in the attention statistics (memory/speed trade-off).
    show_progress : bool, default False
        tqdm bar on stderr over the windows of a query (total = windows, with the time left).

    Raises
    ------
    TypeError, ValueError
        For bad arguments, each named, before any model is loaded.

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
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        cache_dtype: str | None = None,
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
        self.prior_tokens = check_int(prior_tokens, "prior_tokens", minimum=0)
        check_layers_spec(layers)
        check_choice(aggregate, "aggregate", AGGREGATES)
        check_choice(baseline, "baseline", BASELINES)
        check_choice(normalize, "normalize", NORMALIZATIONS)
        if cache_dtype is not None:
            check_choice(cache_dtype, "cache_dtype", CACHE_DTYPES[1:])
        self.max_window = check_int(max_window, "max_window", minimum=4, allow_none=True)
        self.max_query_tokens = check_int(
            max_query_tokens, "max_query_tokens", minimum=1, allow_none=True
        )
        self.cache_bytes = check_int(cache_bytes, "cache_bytes", minimum=0)
        self.cache_size = check_int(cache_size, "cache_size", minimum=0)
        self.row_block = check_int(row_block, "row_block", minimum=1, allow_none=True)
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
            "cache_bytes": self.cache_bytes,
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

    def _store(self, key: str, cache, base_sums: np.ndarray, base_rows: int) -> None:
        """Put a window into the cache (under the lock), evicting LRU windows to stay under
        ``cache_bytes``; a window larger than the whole budget is not cached."""
        kv = []
        nbytes = base_sums.nbytes
        for layer in cache.layers:
            k, v = layer.keys, layer.values
            if self._store_dtype is not None:
                k, v = k.to(self._store_dtype), v.to(self._store_dtype)
            kv.append((k, v))
            nbytes += k.numel() * k.element_size() + v.numel() * v.element_size()
        if nbytes > self.cache_bytes:
            logger.debug("window of %d bytes exceeds cache_bytes: not cached", nbytes)
            return
        while self._used + nbytes > self.cache_bytes and self._windows:
            _, old = self._windows.popitem(last=False)
            self._used -= old.nbytes
            self._stats["evictions"] += 1
        self._windows[key] = _Entry(tuple(kv), base_sums, base_rows, nbytes)
        self._used += nbytes
        self._stats["peak_bytes"] = max(self._stats["peak_bytes"], self._used)

    def _cache_from(self, entry: _Entry):
        """A fresh DynamicCache holding a cached window (copies, in the model's dtype): the
        query pass appends to the copy, the stored tensors are never changed."""
        from transformers import DynamicCache

        dtype = next(self.model.parameters()).dtype
        data = [(k.to(dtype), v.to(dtype)) for k, v in entry.kv]
        return DynamicCache(ddp_cache_data=data, config=self.model.config)

    def _forward(self, ids, cache=None):
        torch = self._torch
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        out = self.model(input_ids=x, past_key_values=cache, **self._fwd_kwargs)
        return out.past_key_values

    def _context_pass(self, ids, rec):
        """Query-independent pass of one window: ``(cache, base_sums (c,) float64, rows)``."""
        c = len(ids)
        if self.baseline == "paper":
            cache = self._forward(ids)
            sums = rec.pop()[0]
            rows = c
        else:
            with rec.paused():
                cache = self._forward(ids)
            cache = self._forward(self._suffix_ids, cache)
            sums = rec.pop()[0]
            rows = len(self._suffix_ids)
        return cache, sums[:c].double().cpu().numpy(), rows

    def _progress(self, total: int):
        if not (self.show_progress and total > 1):
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="YOURA", unit="window", dynamic_ncols=True)

    def _warm(self, layouts) -> int:
        """Compute and cache the windows of ``layouts`` that are not cached, while they fit in
        the budget. Returns the number of windows computed."""
        from longctx.attention import record_attention_stats

        self._setup()
        if not self.cache_bytes:
            return 0
        torch = self._torch
        done = 0
        with self._lock:
            todo = [
                (lay, i)
                for lay in layouts
                for i, key in enumerate(lay.wkeys)
                if key not in self._windows
            ]
            bar = self._progress(len(todo))
            try:
                with (
                    torch.inference_mode(),
                    record_attention_stats(
                        self.model, self._layers, row_block=self.row_block
                    ) as rec,
                ):
                    for lay, i in todo:
                        if self._used >= self.cache_bytes or lay.wkeys[i] in self._windows:
                            break
                        t0, t1 = lay.windows[i]
                        cache, sums, rows = self._context_pass(list(lay.ids[t0:t1]), rec)
                        self._stats["misses"] += 1
                        before = len(self._windows)
                        evictions = self._stats["evictions"]
                        self._store(lay.wkeys[i], cache, sums, rows)
                        done += 1
                        if bar is not None:
                            bar.update(1)
                        if self._stats["evictions"] > evictions or len(self._windows) == before:
                            break  # the budget is full: more would evict what was just computed
            finally:
                if bar is not None:
                    bar.close()
        return done

    def _vectors(self, layouts, query: str):
        """Reaction vectors (eq. 1-5) of several layouts for one query.

        Returns ``(vectors, info)``: one ``(n_tokens,) float64`` array per layout, and a dict
        with the windows scored, cache hits and misses of this query and the seconds spent in
        context passes (``context_s``) and query passes (``query_s``).
        """
        from longctx.attention import record_attention_stats

        torch = self._torch
        q_ids = self._query_ids(query)
        q = len(q_ids)
        out = [np.empty(len(lay.ids), dtype=np.float64) for lay in layouts]
        info = {"windows": 0, "cache_hits": 0, "cache_misses": 0, "context_s": 0.0, "query_s": 0.0}
        with self._lock:
            tasks = [(li, wi) for li, lay in enumerate(layouts) for wi in range(len(lay.windows))]
            # cached windows first: they are then the most recent when the misses evict
            tasks.sort(key=lambda t: layouts[t[0]].wkeys[t[1]] not in self._windows)
            info["windows"] = len(tasks)
            bar = self._progress(len(tasks))
            try:
                with (
                    torch.inference_mode(),
                    record_attention_stats(
                        self.model, self._layers, row_block=self.row_block
                    ) as rec,
                ):
                    for li, wi in tasks:
                        lay = layouts[li]
                        t0, t1 = lay.windows[wi]
                        c = t1 - t0
                        key = lay.wkeys[wi]
                        t = time.perf_counter()
                        entry = self._windows.get(key)
                        if entry is not None:
                            self._windows.move_to_end(key)
                            self._stats["hits"] += 1
                            info["cache_hits"] += 1
                            cache = self._cache_from(entry)
                            base_sums, base_rows = entry.base_sums, entry.base_rows
                        else:
                            self._stats["misses"] += 1
                            info["cache_misses"] += 1
                            cache, base_sums, base_rows = self._context_pass(
                                list(lay.ids[t0:t1]), rec
                            )
                            if self.cache_bytes:
                                self._store(key, cache, base_sums, base_rows)
                                if self._store_dtype is not None and key in self._windows:
                                    # score with the stored (rounded) cache, as a later hit would
                                    cache = self._cache_from(self._windows[key])
                        t2 = time.perf_counter()
                        info["context_s"] += t2 - t
                        self._forward(q_ids, cache)
                        q_sums = rec.pop()[0][:c].double().cpu().numpy()
                        del cache
                        out[li][t0:t1] = self._window_vector(base_sums, base_rows, q_sums, q)
                        info["query_s"] += time.perf_counter() - t2
                        if bar is not None:
                            bar.update(1)
            finally:
                if bar is not None:
                    bar.close()
        return out, info

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
        check_text(query, "query")
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
        check_text(query, "query")
        token_budget, top_n, max_fraction = check_select_args(token_budget, top_n, max_fraction)
        spans = self.score_sentences(context, query, sentences=sentences)
        scores = np.asarray([s.score for s in spans])
        counts = np.asarray([s.n_tokens for s in spans], dtype=np.int64)
        chosen = _select(scores, counts, top_n, token_budget, max_fraction)
        return [spans[i] for i in chosen.tolist()]


def _spans(lay: _Layout, scores) -> list[ScoredSpan]:
    return [
        ScoredSpan(a, b, t0, t1, float(s), i)
        for i, ((a, b), (t0, t1), s) in enumerate(zip(lay.sentences, lay.token_spans, scores))
    ]


class YouraIndex(RetrievalIndex):
    """YOURA over a fixed corpus: build once, query many.

    :meth:`from_texts` does the query-independent work once (sentence split with
    :func:`longctx.text.split_sentences`, sentence to token alignment, window layout). The model
    work that does not depend on the query (each window's KV cache and baseline column sums) is
    kept in the scorer's window cache under its memory budget (``cache_bytes``): computed on the
    first query that needs it, or now with :meth:`warm`, and recomputed after an eviction.
    :meth:`search` scores every sentence of every text for the query and selects in one global
    greedy pass (module docstring, "Several texts").

    Parameters
    ----------
    texts : str or sequence of str
        The corpus (``Passage.source`` indexes it).
    scorer : ReactionScorer, optional
        The scorer (and model) to use; shared scorers share their window cache. Otherwise one is
        built from ``scorer_kwargs`` (see :class:`ReactionScorer`: ``model``, ``tokenizer``,
        ``baseline`` (default ``"instruction"``), ``layers``, ``max_window``, ``cache_bytes``...).
    max_fraction : float in (0, 1], default 0.8
        With ``token_budget``, at most this fraction of all sentences is selected (sec. 3.3).
    score_scale : {"window", "none"}, optional
        How scores of different texts are put on one scale (module docstring); default
        ``"window"`` with ``normalize="none"`` (raw reactions) and ``"none"`` with
        ``normalize="ratio"`` (ratios are on one scale already).
    sentences : sequence of sequences of (start, end), optional
        Character spans to score, per text, instead of ``split_sentences``'s.
    max_unit_tokens : int >= 1 or None, default ``DEFAULT_MAX_UNIT_TOKENS`` (256)
        ``split_sentences``'s sentences longer than this many model tokens are cut on word
        boundaries into near-equal pieces (:func:`longctx.text.split_long_spans`), so no unit is
        a whole unpunctuated file; ``None`` keeps them whole (they are still cut at window
        edges for scoring). Given ``sentences`` are never cut.

    Raises
    ------
    TypeError, ValueError
        Bad arguments, each named, before any model pass.

    Notes
    -----
    ``search`` changes nothing on the index; the scorer runs model passes one at a time under its
    lock, so concurrent searches (threads, or asyncio tasks through a worker thread) give the
    sequential results.
    """

    method = "youra"
    FORMAT_VERSION = 1

    def __init__(self, texts, scorer: ReactionScorer, layouts, *, max_fraction, score_scale):
        self._texts = tuple(texts)
        self.scorer = scorer
        self._layouts = tuple(layouts)
        self.max_fraction = max_fraction
        self.score_scale = score_scale
        counts = [lay.token_counts for lay in self._layouts]
        self._counts = np.concatenate(counts)
        self._offsets = np.cumsum([0] + [len(c) for c in counts])
        self._scale = np.concatenate(
            [
                np.full(len(c), len(lay.ids) / len(lay.windows) if score_scale == "window" else 1.0)
                for c, lay in zip(counts, self._layouts)
            ]
        )

    @property
    def texts(self) -> tuple[str, ...]:
        return self._texts

    @property
    def n_sentences(self) -> int:
        """Sentences of all texts together."""
        return int(self._offsets[-1])

    @classmethod
    def from_texts(
        cls,
        texts,
        scorer: ReactionScorer | None = None,
        *,
        max_fraction: float = 0.8,
        score_scale: str | None = None,
        sentences=None,
        max_unit_tokens: int | None = DEFAULT_MAX_UNIT_TOKENS,
        **scorer_kwargs,
    ) -> YouraIndex:
        """Build the index (tokenizer work only; see the class docstring)."""
        texts = check_texts(texts)
        max_fraction = check_max_fraction(max_fraction)
        max_unit_tokens = check_int(max_unit_tokens, "max_unit_tokens", minimum=1, allow_none=True)
        if score_scale is not None:
            check_choice(score_scale, "score_scale", SCORE_SCALES)
        if sentences is not None:
            if isinstance(sentences, (str, bytes)) or len(sentences) != len(texts):
                raise ValueError("sentences must hold one list of (start, end) spans per text")
            sentences = [_check_sentences(s, len(t)) for s, t in zip(sentences, texts)]
        if scorer is not None and scorer_kwargs:
            raise ValueError(
                f"give either scorer or scorer options, not both (got {sorted(scorer_kwargs)})"
            )
        scorer = scorer_from(scorer, **scorer_kwargs)
        if score_scale is None:  # ratios are on one scale already; raw reactions are not
            score_scale = "window" if scorer.normalize == "none" else "none"
        layouts = [
            scorer._make_layout(t, None if sentences is None else sentences[i], max_unit_tokens)
            for i, t in enumerate(texts)
        ]
        return cls(texts, scorer, layouts, max_fraction=max_fraction, score_scale=score_scale)

    def warm(self) -> int:
        """Run the context passes of the corpus now, as far as the cache budget allows (the rest
        runs on queries). Returns the number of windows computed."""
        return self.scorer._warm(self._layouts)

    def score_units(self, query: str):
        """Every sentence of every text with its score for ``query``.

        Returns
        -------
        scores : (n_sentences,) float64
            Reaction scores of all texts' sentences, text after text, multiplied by the text's
            mean window length with ``score_scale="window"``.
        info : dict
            Windows, cache hits/misses and seconds of this query (see ``search``'s ``info``).
        """
        check_text(query, "query")
        self.scorer._query_ids(query)  # a too long query fails before any pass
        vecs, info = self.scorer._vectors(self._layouts, query)
        raw = np.concatenate([self.scorer._scores(lay, v) for lay, v in zip(self._layouts, vecs)])
        return raw * self._scale, info

    def units(self, source: int = 0):
        """``(spans, token_counts)`` of one text's sentences: ``[(start, end), ...]`` characters
        and ``(n,) int64`` model tokens (at least 1)."""
        lay = self._layouts[source]
        return list(lay.sentences), lay.token_counts

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        max_fraction: float | None = None,
    ) -> SearchResult:
        """The most reactive sentences of the corpus for ``query`` (sec. 3.3).

        Parameters
        ----------
        query : str
        k : int >= 1, optional
            Sentences to return (default ``DEFAULT_K`` = 10 when no size is given).
        token_budget : int >= 1, optional
            Instead of ``k``: model tokens for all returned sentences together, greedy by score
            (a sentence that does not fit is skipped), at most ``max_fraction`` of the sentences.
        max_fraction : float in (0, 1], optional
            Overrides the index's ``max_fraction`` for this query.

        Returns
        -------
        SearchResult
            ``hits`` in document order (by ``source`` then ``start``), each a sentence with its
            (scaled) score, sentence ``index`` in its text and ``source``; ``mode`` = the
            baseline; ``timings``: ``score`` (all model work), ``context`` / ``query`` (its
            context and query passes), ``select``; ``info``: ``windows``, ``cache_hits``,
            ``cache_misses`` of this query, ``baseline``, ``score_scale``.

        Raises
        ------
        TypeError, ValueError
            Bad ``query`` or size (named), a query longer than ``max_query_tokens``, before any
            model pass.
        """
        check_text(query, "query")
        k, token_budget = check_size(k, token_budget, default_k=DEFAULT_K)
        frac = self.max_fraction if max_fraction is None else check_max_fraction(max_fraction)
        if token_budget is not None:  # before any model pass: no sentence would fit
            check_budget_fits(token_budget, np.maximum(self._counts, 1))
        t = time.perf_counter()
        scores, info = self.score_units(query)
        t_score = time.perf_counter() - t
        t = time.perf_counter()
        chosen = _select(scores, self._counts, k, token_budget, frac)
        hits = []
        for g in chosen.tolist():
            src = int(np.searchsorted(self._offsets, g, side="right")) - 1
            i = g - int(self._offsets[src])
            a, b = self._layouts[src].sentences[i]
            hits.append(Passage(a, b, self._texts[src][a:b], float(scores[g]), i, src))
        t_select = time.perf_counter() - t
        budget = {"k": k} if k is not None else {"token_budget": token_budget, "unit": "model"}
        return SearchResult(
            hits=tuple(hits),
            method=self.method,
            mode=self.scorer.baseline,
            timings={
                "score": t_score,
                "context": info["context_s"],
                "query": info["query_s"],
                "select": t_select,
            },
            budget=budget,
            info={
                "windows": info["windows"],
                "cache_hits": info["cache_hits"],
                "cache_misses": info["cache_misses"],
                "baseline": self.scorer.baseline,
                "score_scale": self.score_scale,
                "max_fraction": frac,
            },
        )

    # -- persistence ----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write ``path/``: ``manifest.json``, ``config.json`` (index and scorer options),
        ``texts.json`` and ``sentences.npz`` (``spans (n, 2) int64`` characters, ``offsets
        (n_texts + 1,) int64``, ``token_counts (n,) int64``). The model and the caches are not
        saved."""
        from longctx.persist import write_dir

        spans = np.asarray(
            [s for lay in self._layouts for s in lay.sentences], dtype=np.int64
        ).reshape(-1, 2)
        write_dir(
            path,
            kind="youra",
            version=self.FORMAT_VERSION,
            json_files={
                "config": {
                    "max_fraction": self.max_fraction,
                    "score_scale": self.score_scale,
                    "scorer": self.scorer.config(),
                },
                "texts": list(self._texts),
            },
            arrays={
                "sentences": {
                    "spans": spans,
                    "offsets": self._offsets.astype(np.int64),
                    "token_counts": self._counts,
                }
            },
        )

    @classmethod
    def load(
        cls, path: str | os.PathLike, scorer: ReactionScorer | None = None, **scorer_kwargs
    ) -> YouraIndex:
        """Read an index written by :meth:`save`. The model is given as to :meth:`from_texts`
        (``scorer``, or scorer options that override the saved ones); the tokens and windows are
        recomputed with its tokenizer and the caches on the first queries.

        Raises
        ------
        PersistError
            A file is missing, truncated or damaged, written by another format version, or its
            contents do not fit together (the message names the file).
        """
        from pathlib import Path

        from longctx.persist import PersistError, read_arrays, read_json, read_manifest

        d = Path(path)
        read_manifest(d, kind="youra", versions=(cls.FORMAT_VERSION,))
        config = read_json(d / "config.json")
        texts = read_json(d / "texts.json")
        arrs = read_arrays(d / "sentences.npz", ["spans", "offsets", "token_counts"])
        if (
            not isinstance(config, dict)
            or not isinstance(config.get("scorer"), dict)
            or "max_fraction" not in config
            or "score_scale" not in config
        ):
            raise PersistError(f"{str(d / 'config.json')!r} lacks the index options")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise PersistError(f"{str(d / 'texts.json')!r} does not hold a list of texts")
        spans, offsets = arrs["spans"], arrs["offsets"]
        if (
            spans.ndim != 2
            or spans.shape[1:] != (2,)
            or offsets.shape != (len(texts) + 1,)
            or offsets[0] != 0
            or offsets[-1] != len(spans)
            or np.any(np.diff(offsets) < 1)
        ):
            raise PersistError(
                f"{str(d / 'sentences.npz')!r} does not fit {len(texts)} texts: spans "
                f"{spans.shape}, offsets {offsets.shape}"
            )
        sentences = [
            [tuple(map(int, s)) for s in spans[offsets[i] : offsets[i + 1]]]
            for i in range(len(texts))
        ]
        try:
            sentences = [_check_sentences(s, len(t)) for s, t in zip(sentences, texts)]
        except (TypeError, ValueError) as exc:
            raise PersistError(f"{str(d / 'sentences.npz')!r}: {exc}") from None
        if scorer is None:
            kwargs = {**config["scorer"], **scorer_kwargs}
            scorer = ReactionScorer(kwargs.pop("model", None), **kwargs)
        elif scorer_kwargs:
            raise ValueError("give either scorer or scorer options, not both")
        index = cls.from_texts(
            texts,
            scorer,
            max_fraction=config["max_fraction"],
            score_scale=config["score_scale"],
            sentences=sentences,
        )
        if index._counts.shape != arrs["token_counts"].shape or not np.array_equal(
            index._counts, arrs["token_counts"]
        ):
            logger.warning(
                "the tokenizer given to load %s counts other sentence lengths than the one it "
                "was saved with: token budgets will differ",
                d,
            )
        return index


def join_selected(text: str, spans) -> str:
    """The kept sentences of ``text`` as one string, in document order.

    ``spans`` are :class:`ScoredSpan` or :class:`longctx.types.Passage` objects of ``text``.
    Runs of consecutive sentences (``index`` values that follow each other) keep the original
    text between them (``text[first.start:last.end]``, whitespace and newlines included);
    separate runs are joined with a single space. Nothing else is added or changed.
    """
    spans = sorted(spans, key=lambda s: s.start)
    runs: list[list] = []
    for s in spans:
        if runs and s.index == runs[-1][-1].index + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return " ".join(text[r[0].start : r[-1].end] for r in runs)
