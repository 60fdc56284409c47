"""Input checks shared by every selection path (before any selection work).

The lowest module of :mod:`longctx.diversity`: it imports no other module of the package
(:mod:`~longctx.diversity.prepare` checks a whole selection's arguments with it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_embeddings", "as_vector", "as_token_counts", "max_picks"]


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


def max_picks(counts, budget, k, n) -> int:
    """Upper bound on how many items can be picked (for sizing the window buffers)."""
    bound = n
    if k is not None:
        bound = min(bound, k)
    if counts is not None and budget is not None:
        csum = np.cumsum(np.sort(counts))
        bound = min(bound, int(np.searchsorted(csum, budget, side="right")))
    return bound
