"""Why MMR or FPS kept a unit: its relevance, the redundancy penalty (MMR) or diversity bonus
(FPS) it had when it was picked, and the already-kept unit that penalty was measured against.

Wang et al., "Diversity Enhances an LLM's Performance in RAG and Long-context Task", 2025,
arXiv:2502.09017, sec. 2.1 eq. 1 (MMR: ``lambda r_i - (1 - lambda) p_i``) and eq. 2 (FPS:
``lambda r_i + (1 - lambda) sqrt(2 - 2 p_i)``), with ``p_i = max_{j in W} cos(i, j)`` over the
window ``W`` of the picks before ``i`` (:mod:`longctx.diversity.objective`). Recomputed after the
selection for the picks only: ``k * min(k, window)`` dot products of the embeddings.
"""

from __future__ import annotations

import numpy as np

from longctx.diversity.objective import objective
from longctx.explain import make_explanation

__all__ = ["explain_picks"]


def explain_picks(emb, r, shown, picks, lambda_: float, window, metric: str, unit) -> dict:
    """Explanations of the picks of one selection, by unit.

    Parameters
    ----------
    emb : (n, d) float32
        The L2-normalized unit embeddings the selection read.
    r : (n,) float
        The rewards the selection used (``lambda * r`` is the relevance term).
    shown : (n,) float
        The hits' scores (the reward as reported: the cosine, or a given reward before
        rescaling).
    picks : list of int
        The selected units, in selection order.
    lambda_ : float in [0, 1]
    window : int or None
        The diversity window (``None``: every earlier pick).
    metric : {"mmr", "fps"}
    unit : callable ``j -> dict``
        Names unit ``j`` (source, index, offsets).

    Returns
    -------
    dict int -> dict
        For each pick: :func:`longctx.explain.make_explanation` with the part ``relevance`` (the
        score), ``pick`` (its rank in selection order, 0 first), ``objective`` (``relevance``:
        ``lambda r_i``; ``redundancy``: ``-(1 - lambda) p_i`` for MMR, ``diversity``: ``(1 -
        lambda) sqrt(2 - 2 p_i)`` for FPS; ``value``: their sum, what the greedy maximized) and
        ``against``: the earlier pick of the window nearest to it, with its ``cosine`` ``p_i``
        (``None`` for the first pick).
    """
    out = {}
    for t, i in enumerate(picks):
        lo = 0 if window is None else max(0, t - window)
        prior = picks[lo:t]
        rel = float(lambda_ * r[i])
        against = None
        term = {"redundancy" if metric == "mmr" else "diversity": 0.0}
        value = rel
        if prior and lambda_ < 1.0:
            cos = emb[prior] @ emb[i]
            o = int(np.argmax(cos))
            p = float(cos[o])
            value = float(objective(np.float64(rel), np.float64(p), lambda_, metric))
            term = {"redundancy" if metric == "mmr" else "diversity": value - rel}
            against = {**unit(int(prior[o])), "cosine": p}
        score = float(shown[i])
        out[i] = make_explanation(
            metric,
            None,
            score,
            {"relevance": score},
            pick=t,
            objective={"relevance": rel, **term, "value": value},
            against=against,
        )
    return out
