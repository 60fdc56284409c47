"""Check every argument of a selection and make its rewards (before any selection work).

Used by :func:`~longctx.diversity.mmr_select`, :func:`~longctx.diversity.fps_select` and
:func:`~longctx.diversity.reference_select`; rewards as in :mod:`~longctx.diversity.objective`
(Wang et al., "Diversity Enhances an LLM's Performance in RAG and Long-context Task", 2025,
arXiv:2502.09017, sec. 2.1 and 2.2).
"""

from __future__ import annotations

import numpy as np

from longctx.checks import check_float, check_int
from longctx.diversity.inputs import as_embeddings, as_token_counts, as_vector
from longctx.diversity.objective import rescale, rewards_from

__all__ = ["prepare"]


def prepare(
    embeddings,
    rewards,
    token_counts,
    token_budget,
    *,
    query_embedding,
    ratio,
    k,
    lambda_,
    window,
    rescale_rewards,
):
    """Check every argument of a selection, then return ``(e, r, counts, budget, k, lambda_,
    window)``: unit-row float32 embeddings, float64 rewards (rescaled user rewards or cosines),
    int64 token counts (or ``None``) and the budget in tokens (``ratio`` turned into tokens)."""
    lambda_ = check_float(lambda_, "lambda_", low=0.0, high=1.0)
    window = check_int(window, "window", minimum=1, allow_none=True)
    k = check_int(k, "k", minimum=1, allow_none=True)
    token_budget = check_int(token_budget, "token_budget", minimum=0, allow_none=True)
    ratio = check_float(ratio, "ratio", low=0.0, high=1.0, allow_none=True)
    if token_budget is not None and ratio is not None:
        raise ValueError("give at most one of token_budget and ratio")
    if token_budget is None and ratio is None and k is None:
        raise ValueError("give token_budget, ratio or k (when to stop selecting)")
    e = as_embeddings(embeddings)
    n = e.shape[0]
    counts = None
    if token_counts is not None:
        counts = as_token_counts(token_counts, n)
    elif token_budget is not None or ratio is not None:
        raise ValueError("token_counts is required with token_budget or ratio")
    if rewards is None:
        r = rewards_from(e, query_embedding)
    else:
        if query_embedding is not None:
            raise ValueError("give rewards or query_embedding, not both")
        r = as_vector(rewards, "rewards", n)
        if not np.isfinite(r).all():
            raise ValueError("rewards must be finite (no NaN or inf)")
        if rescale_rewards and n:
            r = rescale(r)
    if ratio is not None:
        token_budget = int(np.floor(ratio * float(counts.sum()) + 1e-9))
    return e, r, counts, token_budget, k, lambda_, window
