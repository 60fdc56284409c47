"""YOURA settings: baselines, aggregates, presets, defaults, templates and constants
(see the :mod:`longctx.youra` docstring, "Presets" and "Baselines")."""

from __future__ import annotations

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

#: Model dtype the scorer loads on CPU when none is given (``ReactionScorer(dtype=None)``).
#: bfloat16 gives the same sentence ranks as float32 on real text (Spearman >= 0.994, top-10
#: overlap 10/10, ``benchmarks/studies/youra_bf16.py``) but was not faster on the shared 2-core CPU
#: (about 1.25x the CPU seconds of float32 a pass; figures in ``docs/notes/youra-speed.md``), so
#: float32 stays the CPU default; ``dtype="bfloat16"`` (``--dtype bfloat16``) selects it. Set this
#: to ``"bfloat16"`` where it measures faster. On CUDA the default is bfloat16
#: (``longctx.models.load_causal_lm``).
DEFAULT_CPU_DTYPE = "float32"

#: Windows scored together in one padded forward pass (``ReactionScorer(batch_size=None)``). A
#: batch also never holds more padded tokens than ``max_window`` (the tokens of one full pass),
#: so batching short windows (a postprocessor's retrieved nodes) needs no more memory than one
#: long window.
DEFAULT_BATCH_SIZE = 16

# Upper bounds of the scorer's size options (``ReactionScorer`` raises ``ValueError`` naming the
# argument above them; a saved YOURA index holding more is a ``PersistError``). They bound what a
# setting, or a file, may ask for; they are not recommendations.

#: Most tokens of one forward pass (``max_window``), and of ``max_query_tokens``, ``row_block``
#: and ``prior_tokens``: 2**20 = 1,048,576 tokens, above any model window longctx runs.
MAX_WINDOW = 2**20
#: Largest window cache budget (``cache_bytes``): 2**40 bytes (1 TiB).
MAX_CACHE_BYTES = 2**40
#: Most windows scored in one padded pass (``batch_size``): 1,024.
MAX_BATCH_SIZE = 1024
#: Most text layouts kept (``cache_size``): 65,536.
MAX_CACHE_SIZE = 2**16

#: On CUDA, with ``cache_bytes=None``, the window cache may use this fraction of the GPU memory
#: that is free once the model is loaded (``torch.cuda.mem_get_info``).
CUDA_CACHE_FRACTION = 0.5

#: On CUDA, with ``max_window=None``, one pass may use this fraction of the free GPU memory left
#: after the cache budget; ``max_window`` is capped (at most the model's window) so an estimate
#: of a pass's memory (KV cache, one layer's activations, the attention statistics) fits in it.
CUDA_PASS_FRACTION = 0.8


class YouraOutOfMemoryError(MemoryError):
    """A YOURA forward pass ran out of (GPU) memory. The message names the pass's shape and the
    settings to lower: ``max_window`` (tokens of one pass), ``batch_size`` (windows of one pass)
    and ``cache_bytes`` (memory the window cache keeps). Chained from torch's error."""
