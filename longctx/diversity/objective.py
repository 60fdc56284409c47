"""The rules of MMR and FPS, written once: rewards and the objective every selection path uses.

Source: Wang et al., "Diversity Enhances an LLM's Performance in RAG and Long-context Task", 2025,
arXiv:2502.09017 (https://arxiv.org/abs/2502.09017), sec. 2.1 eq. 1 (MMR), eq. 2 (FPS) and sec. 2.2
(summarization mode).

Definitions
-----------
* Embeddings are L2-normalized row by row first (an all-zero row stays zero), so
  ``cos(i, j) = e_i . e_j`` and the Euclidean distance is ``sqrt(2 - 2 cos(i, j))`` in ``[0, 2]``.
* ``W`` is the window: the last ``window`` selected items (``window=None``: all selected items,
  ``window=1``: only the last one). ``p_i = max_{j in W} cos(i, j)``.
* MMR (eq. 1) picks ``argmax_i  lambda * r_i - (1 - lambda) * p_i``.
* FPS (eq. 2 with the reward and window hooks the paper describes in sec. 2.1) picks
  ``argmax_i  lambda * r_i + (1 - lambda) * min_{j in W} dist(i, j)
  = lambda * r_i + (1 - lambda) * sqrt(2 - 2 p_i)``. The paper prints ``max_{j in S}`` in eq. 2;
  farthest point sampling (its ref. [12]) maximizes the distance to the *nearest* selected point,
  which is what is implemented (with ``max`` the term would not reward diversity).
* While nothing is selected yet, ``W`` is empty and the diversity term is 0, so the first pick is
  the item with the highest reward.
* Rewards: by default cosine similarity to the query embedding (``[-1, 1]``); with no query, the
  cosine similarity to the mean of all embeddings (summarization mode, sec. 2.2). User rewards
  (a retriever's scores, YOURA reaction scores, PageRank probabilities, ...) are min-max rescaled
  to ``[0, 1]`` (``rescale_rewards=True``, constant rewards become all 0) so that they sit in a
  range comparable to the cosine terms; ``rescale_rewards=False`` uses them as given.

Both objectives are functions of ``p_i`` alone, so every path (the dense loop, the exact lazy
greedy and the naive reference) keeps ``p`` and calls :func:`objective`; the lazy greedy relies on
the objective decreasing in ``p`` (true for both rules).
"""

from __future__ import annotations

import numpy as np

from longctx.diversity.inputs import as_embeddings, as_vector

METHODS = ("mmr", "fps")

__all__ = ["METHODS", "objective", "compute_rewards", "rewards_from", "rescale"]


def objective(base, max_cos, lambda_: float, metric: str):
    """Eq. 1 (``"mmr"``) or eq. 2 (``"fps"``) from ``base = lambda_ * r`` and ``p = max_{j in W}
    cos``.

    Parameters
    ----------
    base : float or (m,) float64 array
        ``lambda_ * r_i``.
    max_cos : float or (m,) float64 array, or None
        ``p_i``, the largest cosine of the item to the window; ``None`` when ``W`` is empty (the
        diversity term is 0, a new array or float equal to ``base`` is returned).
    lambda_ : float in [0, 1]
    metric : {"mmr", "fps"}

    Returns
    -------
    float64 array (or scalar) like ``base``. Non-increasing in ``max_cos`` for both rules.
    """
    if max_cos is None:
        return np.array(base, dtype=np.float64, copy=True)
    if metric == "mmr":
        return base - (1.0 - lambda_) * max_cos
    # fps: the distance to the nearest item of W, from the largest cosine (normalized rows)
    return base + (1.0 - lambda_) * np.sqrt(np.maximum(2.0 - 2.0 * max_cos, 0.0))


def compute_rewards(embeddings, query_embedding=None) -> np.ndarray:
    """Cosine similarity of every item to the query (or to the mean item in summarization mode).

    Parameters
    ----------
    embeddings : (n, d) array
        Item embeddings (normalized here).
    query_embedding : (d,) array, optional
        The query. When ``None``, the mean of the normalized item embeddings is used
        (summarization mode, paper sec. 2.2).

    Returns
    -------
    (n,) float64 array in ``[-1, 1]``.

    Raises
    ------
    ValueError
        If ``query_embedding`` does not have shape ``(d,)``.
    """
    e = as_embeddings(embeddings)
    return rewards_from(e, query_embedding)


def rewards_from(e: np.ndarray, query_embedding) -> np.ndarray:
    """:func:`compute_rewards` on embeddings already normalized by ``as_embeddings``."""
    n, d = e.shape
    if query_embedding is None:
        q = e.mean(axis=0) if n else np.zeros(d, np.float32)
    else:
        q = as_vector(query_embedding, "query_embedding", d, dtype=np.float32)
        if not np.isfinite(q).all():
            raise ValueError("query_embedding must be finite")
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        return np.zeros(n)
    return (e @ (q / norm).astype(np.float32)).astype(np.float64)


def rescale(r: np.ndarray) -> np.ndarray:
    """Min-max rescaling of user rewards to ``[0, 1]`` (constant rewards -> all 0)."""
    lo, hi = float(r.min()), float(r.max())
    if hi - lo <= 0.0:
        return np.zeros_like(r)
    return (r - lo) / (hi - lo)
