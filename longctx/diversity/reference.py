"""The naive reference of the selection: a Python loop over candidates (tests and benchmarks)."""

from __future__ import annotations

import numpy as np

from longctx.checks import check_choice
from longctx.diversity.objective import METHODS, objective
from longctx.diversity.prepare import prepare

__all__ = ["reference_select"]


def reference_select(
    embeddings,
    rewards=None,
    token_counts=None,
    token_budget: int | None = None,
    *,
    method: str = "mmr",
    query_embedding=None,
    ratio: float | None = None,
    k: int | None = None,
    lambda_: float = 0.5,
    window: int | None = None,
    rescale_rewards: bool = True,
) -> list[int]:
    """Naive reference of :func:`mmr_select` / :func:`fps_select`: a Python loop over candidates.

    Computes each candidate's largest cosine to the window item by item in float64 and scores it
    with the same :func:`~longctx.diversity.objective.objective` as the fast paths, for testing and
    benchmarking only (``O(picks * n * w * d)``). Same arguments and result.
    """
    check_choice(method, "method", METHODS)
    e, r, counts, budget, k, lambda_, window = prepare(
        embeddings,
        rewards,
        token_counts,
        token_budget,
        query_embedding=query_embedding,
        ratio=ratio,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=rescale_rewards,
    )
    e = e.astype(np.float64)
    n = e.shape[0]
    picks: list[int] = []
    remaining = budget
    while k is None or len(picks) < k:
        win = picks if window is None else picks[-window:]
        best, best_val = -1, -np.inf
        for i in range(n):
            if i in picks or (remaining is not None and counts[i] > remaining):
                continue
            p = max(float(e[i] @ e[j]) for j in win) if win else None  # None: W is empty
            val = float(objective(lambda_ * r[i], p, lambda_, method))
            if val > best_val:
                best, best_val = i, val
        if best < 0:
            break
        picks.append(best)
        if remaining is not None:
            remaining -= int(counts[best])
    return picks
