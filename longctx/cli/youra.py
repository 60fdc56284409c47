"""``longctx retrieve --method youra``: sentences by YOURA reaction score (Soh, Huang, Tian and
Zhao, "You Only Use Reactive Attention Slice For Long Context Retrieval", 2024, arXiv:2409.13695),
through the same :class:`longctx.YouraIndex` as the Python API and the adapters.

``--model`` (path or cached name of a causal LM, default SmolLM2-135M-Instruct) and ``--device``
choose the model; ``--budget`` is in that model's tokens; ``--k`` is the number of sentences;
``--preset`` (``default``, or ``paper`` for the paper's exact setting), ``--baseline`` and
``--layers`` (default: the preset's), ``--max-window`` and ``--dtype`` (model dtype, default
float32 on CPU, bfloat16 on CUDA) are scorer options. ``args.cache_bytes`` (when the parser
defines it) sets the window cache budget (default: the scorer's, ``DEFAULT_CACHE_BYTES`` = 1 GiB
on CPU, half the free GPU memory on CUDA).
"""

from __future__ import annotations

import argparse
from functools import lru_cache

import numpy as np

from longctx.selection import unit_token_cap
from longctx.types import SearchResult
from longctx.youra import (
    DEFAULT_MAX_UNIT_TOKENS,
    DEFAULT_PRESET,
    ReactionScorer,
    YouraIndex,
)


@lru_cache(maxsize=2)
def _scorer(
    model, device, progress, preset, baseline, layers, max_window, cache_bytes, dtype=None
) -> ReactionScorer:
    return ReactionScorer(
        model,
        device=device,
        dtype=dtype,
        show_progress=progress,
        preset=preset,
        baseline=baseline,
        layers=layers,
        max_window=max_window,
        cache_bytes=cache_bytes,
    )


def _get_scorer(args: argparse.Namespace) -> ReactionScorer:
    cache_bytes = getattr(args, "cache_bytes", None)
    return _scorer(
        getattr(args, "model", None),
        getattr(args, "device", None),
        bool(getattr(args, "progress", False)),
        getattr(args, "preset", None) or DEFAULT_PRESET,
        getattr(args, "baseline", None),
        getattr(args, "layers", None),
        getattr(args, "max_window", None),
        cache_bytes,
        getattr(args, "dtype", None),
    )


def _index(text: str, args: argparse.Namespace) -> YouraIndex:
    # a sentence longer than the budget could never be selected: cut it to fit
    cap = unit_token_cap(DEFAULT_MAX_UNIT_TOKENS, getattr(args, "budget", None))
    return YouraIndex.from_texts(text, _get_scorer(args), max_unit_tokens=cap)


def score_units(
    text: str, query: str, args: argparse.Namespace
) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Every sentence of ``text`` with its reaction score (for ``--diversify``).

    Returns
    -------
    spans : list of (start, end)
        Character spans of the sentences.
    scores : (n,) float64
        Sentence scores of :class:`longctx.YouraIndex` (with the default preset the mean ratio of
        the query's attention to the baseline's; with ``--preset paper`` the geometric mean of the
        reaction vector slice, sec. 3.3, times the text's mean window length).
    token_counts : (n,) int64
        Model tokens of each sentence (at least 1).
    """
    index = _index(text, args)
    scores, _ = index.score_units(query)
    spans, counts = index.units(0)
    return spans, scores, counts


def run(text: str, query: str, args: argparse.Namespace) -> SearchResult:
    """YOURA's own selection: ``args.k`` sentences or ``args.budget`` model tokens (greedy by
    score, at most 80% of the sentences), in document order."""
    k, budget = getattr(args, "k", None), getattr(args, "budget", None)
    if k is None and budget is None:
        k = 100
    explain = bool(getattr(args, "explain", False))
    return _index(text, args).search(query, k=k, token_budget=budget, explain=explain)
