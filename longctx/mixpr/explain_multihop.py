"""Why MixPR's multi-hop walk returned a unit (HippoRAG, Gutierrez et al., "HippoRAG:
Neurobiologically Inspired Long-Term Memory for Large Language Models", 2024, arXiv:2405.14831;
:mod:`longctx.mixpr.multihop`): its score split over its phrase nodes, with the paths
``question -> passage -> phrase -> hit`` that carried the most mass. Called by
:func:`longctx.mixpr.explain.explain_hits` when the multi-hop walk scored the hits.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from longctx.explain import evidence, make_explanation
from longctx.mixpr.explain_items import TOP_PATHS, by_top, top_positions, unit_fields
from longctx.mixpr.hits import values_at

__all__ = ["explain_multihop"]


def explain_multihop(st, mh: dict, hits: np.ndarray, scores: np.ndarray) -> list[dict]:
    """Explanations of the multi-hop walk (:class:`~longctx.mixpr.multihop.MultiHopRanker`)
    for the units ``hits``.

    Parameters
    ----------
    st : the index's state (``_State``)
    mh : dict
        The ranker's values kept by :meth:`MultiHopRanker.scores` (``keep=``): ``mass``,
        ``arrived``, ``r_u``, ``r_p``, ``d_u``, ``phrase_weights``, ``first_hop``, ``dense``.
    hits : (k,) int
    scores : (n_units,) float64 or SparseScores
        The returned scores.

    Returns
    -------
    list of dict
        Parts ``walk_phrases`` (mass that arrived through phrases shared with other
        passages), ``walk_question_phrases`` (through a phrase of the question that only this
        passage holds), ``unsettled`` (the rest of the arrived mass: the walk's residual, and
        the index terms with ``term_share``), ``restart`` (``score="mass"`` only),
        ``first_hop`` (``lexical_weight`` times the first hop's score), ``dense``; ``paths``:
        ``["question", passage, {"phrase"}, "hit"]`` (the passage's ``"seed"``: whether the
        question's restart reached it, else the walk did; in hybrid mode its
        ``"seed_dense_share"``: the part of that restart from the dense cosines) or ``["question", {"phrase"},
        "hit"]`` (a phrase of the question), with their score and share (best first): the
        mass the last step carried along that path.
    """
    ranker = st.ranker()
    w = ranker.walk
    a = float(w.alpha)
    fwd, back = ranker._phr[0].rows, ranker._phr[1].rows  # (n, n_link), (n_link, n)
    back_c = sp.csc_array(back)
    fwd_c = sp.csc_array(fwd)
    x, arrived = mh["mass"], mh["arrived"]
    r_u, r_p, d_u = mh["r_u"], mh["r_p"], mh["d_u"]
    r_dense = mh.get("r_u_dense")
    restart_total = a + (1.0 - a) * float((x * ranker._stuck).sum())
    top = float((arrived if w.score == "propagated" else x).max()) if len(x) else 0.0
    top = top if top > 0 else 1.0
    vocab = ranker.graph.vocabulary
    pw = mh.get("phrase_weights")
    first, dense = mh.get("first_hop"), mh.get("dense")
    f_top = float(first.max()) if first is not None and len(first) else 0.0
    d_top = float(dense.max()) if dense is not None and len(dense) else 0.0
    out = []
    hits = np.asarray(hits, np.int64)
    for i, score in zip(hits.tolist(), values_at(scores, hits).tolist()):
        lo, hi = back_c.indptr[i], back_c.indptr[i + 1]
        phrases, b = back_c.indices[lo:hi], back_c.data[lo:hi]
        paths = []
        via_total = 0.0
        for p, bp in zip(phrases.tolist(), b.tolist()):
            plo, phi = fwd_c.indptr[p], fwd_c.indptr[p + 1]
            units, f = fwd_c.indices[plo:phi], fwd_c.data[plo:phi]
            from_u = (1.0 - a) * bp * (1.0 - a) * f * ranker._to_p[units] * x[units]
            from_q = (1.0 - a) * bp * restart_total * float(r_p[p])
            via_total += float(from_u.sum()) + from_q
            name = {"phrase": vocab[int(ranker._cols[p])]}
            if from_q > 0:
                paths.append((from_q, ["question", name, "hit"]))
            for o in top_positions(from_u, TOP_PATHS):
                if from_u[o] > 0 and units[o] != i:
                    j = int(units[o])
                    node = {**unit_fields(st, j), "seed": bool(r_u[j] > 0)}
                    if r_dense is not None and r_u[j] > 0:  # hybrid: how much of it dense
                        node["seed_dense_share"] = float(r_dense[j] / r_u[j])
                    paths.append((float(from_u[o]), ["question", node, name, "hit"]))
        single = (1.0 - a) * restart_total * float(d_u[i])
        if single > 0 and pw is not None:
            mine = np.flatnonzero((ranker._single_unit == i) & (pw > 0))
            for c in mine.tolist():
                paths.append(
                    (single * pw[c] / pw[mine].sum(), ["question", {"phrase": vocab[c]}, "hit"])
                )
        parts = {
            "walk_phrases": via_total / top,
            "walk_question_phrases": single / top,
            "unsettled": (float(arrived[i]) - via_total - single) / top,
        }
        if w.score != "propagated":
            parts["restart"] = (float(x[i]) - float(arrived[i])) / top
        parts["first_hop"] = parts["dense"] = 0.0
        if first is not None and w.lexical_weight:
            parts["first_hop"] = w.lexical_weight * by_top(max(float(first[i]), 0.0), f_top)
        if dense is not None and w.dense_weight:
            parts["dense"] = w.dense_weight * by_top(max(float(dense[i]), 0.0), d_top)
        paths.sort(key=lambda t: -t[0])
        out.append(
            make_explanation(
                "mixpr",
                "multihop",
                score,
                parts,
                paths=[evidence(score, v / top, path=pth) for v, pth in paths[:TOP_PATHS]],
            )
        )
    return out
