"""``longctx retrieve --method youra``: sentences by YOURA reaction score (000_ac75cd36fe64736e.txt).

``--model`` (path or cached name of a causal LM, default SmolLM2-135M-Instruct) and ``--device``
choose the model; ``--budget`` is in that model's tokens; ``--k`` is the number of sentences.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from longctx.types import Passage


@lru_cache(maxsize=2)
def _scorer(model, device, progress, baseline, layers, max_window):
    from longctx.youra import ReactionScorer

    return ReactionScorer(
        model,
        device=device,
        show_progress=progress,
        baseline=baseline,
        layers=layers,
        max_window=max_window,
    )


def _get_scorer(args):
    return _scorer(
        getattr(args, "model", None),
        getattr(args, "device", None),
        bool(getattr(args, "progress", False)),
        getattr(args, "baseline", "paper"),
        getattr(args, "layers", "last"),
        getattr(args, "max_window", None),
    )


def score_units(text: str, query: str, args):
    """Every sentence of ``text`` with its reaction score.

    Returns
    -------
    spans : list of (start, end)
        Character spans of the sentences.
    scores : (n,) float64
        Reaction scores (geometric mean of the reaction vector slice, sec. 3.3).
    token_counts : (n,) int64
        Model tokens of each sentence (at least 1).
    """
    scored = _get_scorer(args).score_sentences(text, query)
    spans = [(s.start, s.end) for s in scored]
    scores = np.asarray([s.score for s in scored], dtype=np.float64)
    counts = np.asarray([s.n_tokens for s in scored], dtype=np.int64)
    return spans, scores, counts


def run(text: str, query: str, args) -> list[Passage]:
    """YOURA's own selection: ``args.k`` sentences or ``args.budget`` model tokens (greedy by
    score, at most 80% of the sentences), in document order."""
    scorer = _get_scorer(args)
    if getattr(args, "budget", None) is not None:
        chosen = scorer.select(text, query, token_budget=args.budget)
    else:
        chosen = scorer.select(text, query, top_n=args.k or 100)
    return [s.to_passage(text) for s in chosen]
