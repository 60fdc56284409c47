"""Why YOURA kept a sentence: the parts of its reaction score as the method defines them (the
window it was read in, the attention its tokens got before and after the question was appended,
their reaction, the window prior), recomputed for the returned sentences only.

Source: Soh, Huang, Tian and Zhao, "You Only Use Reactive Attention Slice For Long Context
Retrieval", 2024, arXiv:2409.13695: eq. 1-5 the per-token reaction (the change of
the attention a token gets when the question is appended), eq. 6 the sentence's reaction score
(the mean or geometric mean of its tokens'); and :class:`longctx.youra.scorer.ReactionScorer`
(the window prior ``prior_tokens``, ``normalize="ratio"``).
"""

from __future__ import annotations

import math

import numpy as np

from longctx.explain import make_explanation
from longctx.youra.config import GMEAN_EPS

__all__ = ["explain_sentence"]


def _window_of(windows, t0: int) -> int:
    """The last window holding token ``t0`` (the one whose values the scores read)."""
    found = 0
    for w, (w0, w1) in enumerate(windows):
        if w0 <= t0 < w1:
            found = w
    return found


def explain_sentence(scorer, lay, vec, before, after, i: int, score: float, scale: float) -> dict:
    """The explanation of sentence ``i`` of a layout (:func:`longctx.explain.make_explanation`).

    Parameters
    ----------
    scorer : ReactionScorer
    lay : the text's layout (``token_spans``, ``windows``)
    vec, before, after : (n_tokens,) float64
        The reaction of each token and the attention it got before / after the question.
    i : int
        The sentence.
    score : float
        Its returned score (the reaction times ``scale``).
    scale : float
        The text's score scale (``score_scale="window"``: its mean window length; else 1).

    Returns
    -------
    dict
        ``aggregate="mean"``: parts ``tokens`` (the sentence's own tokens' reactions) and
        ``prior`` (``prior_tokens`` tokens at the window's median reaction), adding up to the
        score; ``"gmean"``: the part ``reaction`` (the score) and ``log_parts``, the same split
        of the score's logarithm. Always ``window`` (``index``, ``tokens``: its token range),
        ``tokens`` (the sentence's), ``attention_before``, ``attention_after`` and
        ``reaction`` (means over the sentence's tokens).
    """
    n = len(vec)
    t0, t1 = lay.token_spans[i]
    if t1 <= t0:  # a sentence with no token of its own: the token before it (as _scores)
        t0 = min(max(t0 - 1, 0), n - 1)
        t1 = t0 + 1
    w = _window_of(lay.windows, t0)
    w0, w1 = lay.windows[w]
    m = scorer.prior_tokens
    gmean = scorer.aggregate == "gmean"
    v = vec[t0:t1]
    prior = float(np.median(vec[w0:w1])) if m else 0.0
    if gmean:
        v = np.log(np.maximum(v, GMEAN_EPS))
        prior = math.log(max(prior, GMEAN_EPS)) if m else 0.0
    count = len(v) + m
    own, pri = float(np.sum(v)) / count, m * prior / count
    details = {
        "window": {"index": int(w), "tokens": [int(w0), int(w1)]},
        "tokens": [int(t0), int(t1)],
        "attention_before": float(np.mean(before[t0:t1])),
        "attention_after": float(np.mean(after[t0:t1])),
        "reaction": float(np.mean(vec[t0:t1])),
        "aggregate": scorer.aggregate,
        "normalize": scorer.normalize,
        "scale": float(scale),
    }
    if gmean:
        parts = {"reaction": score}
        details["log_parts"] = {"tokens": own, "prior": pri}
    else:
        parts = {"tokens": own * scale, "prior": score - own * scale}
        if not math.isclose(parts["prior"], pri * scale, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(f"sentence {i}: the score {score!r} is not its tokens' mean")
    return make_explanation("youra", scorer.baseline, score, parts, **details)
