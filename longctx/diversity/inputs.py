"""Input checks and preparation shared by every selection path (before any selection work)."""

from __future__ import annotations

import numpy as np

from longctx.checks import check_float, check_int

__all__ = ["as_embeddings", "as_vector", "as_token_counts", "prepare", "max_picks"]


def as_embeddings(embeddings, name: str = "embeddings") -> np.ndarray:
    """``(n, d)`` float32, finite, rows L2-normalized (zero rows stay zero); never modified (it
    may be the caller's own array when its rows are already unit). Errors name ``name``."""
    try:
        e = np.asarray(embeddings, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 2-D array of numbers: {exc}") from None
    if e.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_items, dim), got shape {e.shape}")
    if e.shape[0] and e.shape[1] == 0:
        raise ValueError(f"{name} must have at least one dimension (dim >= 1)")
    sq = np.einsum("ij,ij->i", e, e)  # no (n, d) temporaries: this is on the 100k-row hot path
    if not np.isfinite(sq).all():
        if not np.isfinite(e).all():
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        sq = np.einsum("ij,ij->i", e.astype(np.float64), e.astype(np.float64))  # float32 overflow
    if np.abs(sq - 1.0).max(initial=0.0) <= 2e-5 and e.flags.c_contiguous:
        return e  # already unit rows (|norm - 1| <= 1e-5): no 4 * n * d-byte copy (read only)
    norms = np.sqrt(sq, dtype=np.float64)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(e / norms[:, None].astype(np.float32), dtype=np.float32)


def as_vector(values, name: str, n: int, dtype=np.float64) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of numbers: {exc}") from None
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match embeddings, got {v.shape}")
    return v


def as_token_counts(token_counts, n: int) -> np.ndarray:
    raw = as_vector(token_counts, "token_counts", n, dtype=np.float64)
    if not np.isfinite(raw).all() or (raw < 0).any() or (raw != np.round(raw)).any():
        raise ValueError("token_counts must be non-negative integers")
    return raw.astype(np.int64)


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
    from longctx.diversity.objective import rescale, rewards_from  # objective imports this module

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


def max_picks(counts, budget, k, n) -> int:
    """Upper bound on how many items can be picked (for sizing the window buffers)."""
    bound = n
    if k is not None:
        bound = min(bound, k)
    if counts is not None and budget is not None:
        csum = np.cumsum(np.sort(counts))
        bound = min(bound, int(np.searchsorted(csum, budget, side="right")))
    return bound
