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
CLI) changes five things, chosen by measurement (``benchmarks/studies/youra_dump.py`` and
``benchmarks/studies/youra_study.py`` on questions not used for the reported table):

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

Batches, dtype and devices
--------------------------
Windows are scored in **padded batches** (``batch_size``, default 16 windows, and never more
than ``max_window`` padded tokens a pass): windows of similar length are grouped, right-padded,
and run with an attention mask and position ids, so each row sees exactly what its own pass
would; pad keys are masked and padding rows are left out of the column sums
(``AttentionStatsRecorder.row_mask``), so the reaction vector never includes a pad position
(``tests/test_youra_batch.py``: batched scores equal single passes to 1e-5 in float32). Short
texts that fit one window each (a postprocessor's retrieved nodes) cost a few passes instead of
one each (10 nodes of ~1,000 tokens: 6 passes instead of 30); windows with the same tokens are
scored once. The passes run the same tokens, so on an idle CPU a batch costs what its windows
cost one by one (about 16 s for those 10 nodes with SmolLM2-135M on 2 cores); the batches pay
where a pass has a fixed cost, as on a GPU. The scorer loads its model in float32
on CPU (``DEFAULT_CPU_DTYPE``) and bfloat16 on CUDA; ``dtype="bfloat16"`` on CPU gives the same
sentence ranks (Spearman >= 0.994, top-10 overlap 10/10 on real text,
``benchmarks/studies/youra_bf16.py``) but was not faster on the shared 2-core CPU. On CUDA, ``cache_bytes=None`` gives the window cache half of the GPU memory free once
the model is loaded (``CUDA_CACHE_FRACTION``) and ``max_window=None`` is capped so one pass
fits in 80% of the rest (``CUDA_PASS_FRACTION``, :func:`longctx.youra.memory.gpu_memory_defaults`);
a pass that still runs out of memory raises :class:`YouraOutOfMemoryError` naming
``max_window``, ``batch_size`` and ``cache_bytes``.

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
    "YouraOutOfMemoryError",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_CPU_DTYPE",
]

# Re-exports: the public names in __all__, and the settings and helpers that tests and
# benchmarks import from ``longctx.youra`` (as when it was one module).
# ruff: noqa: F401
from longctx.youra.config import (
    AGGREGATES,
    BASELINES,
    CACHE_DTYPES,
    CUDA_CACHE_FRACTION,
    CUDA_PASS_FRACTION,
    DEFAULT_BASELINE,
    DEFAULT_BATCH_SIZE,
    DEFAULT_CACHE_BYTES,
    DEFAULT_CPU_DTYPE,
    DEFAULT_K,
    DEFAULT_MAX_UNIT_TOKENS,
    DEFAULT_PRESET,
    GMEAN_EPS,
    INSTRUCTION_SUFFIX,
    NORMALIZATIONS,
    PRESETS,
    QUERY_TEMPLATES,
    RATIO_EPS,
    SCORE_SCALES,
    YouraOutOfMemoryError,
)
from longctx.youra.index import YouraIndex
from longctx.youra.scorer import ReactionScorer, _Entry, scorer_from
from longctx.youra.spans import (
    ScoredSpan,
    _align_sentences,
    _check_sentences,
    _Layout,
    _select,
    _spans,
    _window_bounds,
    check_max_fraction,
    check_select_args,
    join_selected,
)
