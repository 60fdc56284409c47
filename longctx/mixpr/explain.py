"""Why MixPR returned a unit: each hit's score split into the question's own match (the
restart), the walk (through the terms the hit shares with the units that led to it; the seed
units one step away), the lexical and dense bonuses, and, for the multi-hop walk, the paths
``question -> passage -> phrase -> hit``.

Computed after the walk from its final vectors (kept from the scoring session) and the graph,
for the returned hits only: the cost is the hits' degree (the entries of their terms'
columns, the passages of their phrases, the rows of the walk's seeds) plus a few vectorized
passes over the units' probabilities, less than one step of the power iteration; no unit that
is not returned gets an explanation. Measured (``k=100``, interleaved, a shared 2-core
machine): a query with explanations takes about 1.5 to 1.6 times as long at 1M and 10M words
of Gutenberg and on ``hotpotqa-corpus`` (``docs/guide/why.md``), so they are off by default.
The shapes are those of :mod:`longctx.explain`.

The decomposition is the fixed point of the walk (Alonso and Millidge, arXiv:2412.06078, sec. 4
eq. 2; networkx's conventions, :mod:`longctx.mixpr.push`): with ``A = S D^{-1}``,
``S = E W E^T`` (the factored graph), ``x = alpha p + (1 - alpha) (A x + d p)``, so unit
``i``'s probability is its restart ``alpha p_i``, the dangling mass ``(1 - alpha) d p_i``, and
per term ``t`` of the unit ``(1 - alpha) E_it W_t sum_j E_jt x_j / D_j`` (``D_j``: ``S``'s
column sums). A solver that stopped at ``tol`` leaves ``x`` off the fixed point by at most its
residual; that difference is the part ``"unsettled"``. The multi-hop walk (HippoRAG,
arXiv:2405.14831; :mod:`longctx.mixpr.multihop`) is split the same way over its phrase nodes.
"""

from __future__ import annotations

import weakref

import numpy as np
import scipy.sparse as sp

from longctx.explain import evidence, make_explanation
from longctx.mixpr.hits import dense_scores
from longctx.selection import SparseScores

__all__ = [
    "explain_hits",
    "explain_walk",
    "explain_multihop",
    "TOP_TERMS",
    "TOP_SEEDS",
    "TOP_PATHS",
]

#: Evidence items kept per hit.
TOP_TERMS = 5
TOP_SEEDS = 3
TOP_PATHS = 5

_TERM_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _term_names(table) -> list[str]:
    """The terms of ``table`` by column, built once per table (a table never changes)."""
    names = _TERM_NAMES.get(table)
    if names is None:
        names = _TERM_NAMES[table] = table.terms()
    return names


def _unit(st, j: int) -> dict:
    d = int(st.unit_source[j])
    return {
        "unit": int(j),
        "doc_id": st.doc_ids[d],
        "index": int(st.unit_positions(j)),
        "start": int(st.starts[j]),
        "end": int(st.ends[j]),
    }


def _restart(s: dict) -> tuple[np.ndarray, np.ndarray, float]:
    """``(seed units, their restart probabilities p, the restart's scale)`` of the walk kept in
    session ``s`` (power: ``p``, dense; push: ``push_p``, ``(units, p)``). The scale is the
    sum the restart weights ``w`` (kept as ``(units, weights)`` over the units with a non-zero
    weight, :meth:`~longctx.mixpr.scoring.UnitBlock.restart_similarity`) were divided by."""
    if "push_p" in s:
        idx, p = s["push_p"]
    else:
        idx = np.flatnonzero(s["p"])
        p = s["p"][idx]
    idx = np.asarray(idx, np.int64)
    p = np.asarray(p, np.float64)
    w_idx, w_vals = s["w"]
    scale = 1.0
    if len(w_idx):
        # the first restart unit's weight over its probability (both hold the same units)
        at = np.searchsorted(idx, w_idx[0])
        if at < len(idx) and idx[at] == w_idx[0] and p[at] > 0:
            scale = float(w_vals[0] / p[at])
    return idx, p, scale


def explain_hits(st, keep: dict, used: str, walk: dict, hits, scores) -> list[dict]:
    """The explanations of the hits of one search (:meth:`MixPRIndex.search` with
    ``explain=True``): the multi-hop walk's (:func:`explain_multihop`) when it scored them, the
    PageRank walk's (:func:`explain_walk`) for a local query, else the global PageRank's (the
    score is the unit's PageRank, the part ``"pagerank"``).

    Parameters
    ----------
    st : the index's state
    keep : dict
        What the scoring kept (``"session"``, ``"multihop"``).
    used : str
        The mode used (``"local"``, ``"global"``, ``"global-fallback"``).
    walk : dict
        The route record (:func:`~longctx.mixpr.router.choose_walk`).
    hits : (k,) int
        The returned units.
    scores : (n_units,) float64
    """
    hits = np.asarray(hits, np.int64)
    mh = keep.get("multihop")
    if walk.get("walk") == "multihop" and mh:
        return explain_multihop(st, mh, hits, scores)
    if used == "local":
        return explain_walk(st, keep["session"], hits, scores)
    return [
        make_explanation("mixpr", "global", float(scores[i]), {"pagerank": float(scores[i])})
        for i in hits.tolist()
    ]


def explain_walk(st, s: dict, hits: np.ndarray, scores: np.ndarray) -> list[dict]:
    """Explanations of MixPR's PageRank walk (``walk="pagerank"``, factored graph,
    ``personalization="similarity"``) for the units ``hits``.

    Parameters
    ----------
    st : the index's state (``_State``): graph, table, units
    s : dict
        The scoring session's values after the walk: ``x`` (the walk's mass, ``(n,)`` or a
        :class:`~longctx.selection.SparseScores` after a push walk), ``w`` (the restart
        weights as ``(units, weights)``), ``p`` (power, ``(n,)``) or ``push_p`` (push,
        ``(units, p)``), ``lexical`` (``SparseScores`` over the units holding a query term, or
        ``None``), ``dense`` and ``dense_w`` (``(n,)`` or ``None``: the hybrid's cosines and
        dense restart), ``tops``; with ``seeds=`` also ``seed_x`` (the seeds' walk) and
        ``seed_tops`` (MixPR's and the seeds' walk's maxima, ``None`` for MixPR's when the
        question reached no unit).
    hits : (k,) int
        The returned units.
    scores : (n_units,) float64
        Their scores (as returned).

    Returns
    -------
    list of dict
        One :func:`longctx.explain.make_explanation` per hit: parts ``restart_lexical``,
        ``restart_dense`` (hybrid), ``dangling``, ``walk``, ``unsettled``, ``lexical``,
        ``seeds_walk`` (``seeds=``: the seeds' own walk, added to MixPR's score),
        ``dense``; ``terms`` (the hit's terms that carried the most walk mass to it) and
        ``seeds`` (the restart units that sent it the most in one step).

    Raises
    ------
    NotImplementedError
        The thresholded graph or ``personalization="query"`` (the paper preset).
    """
    cfg = st.config
    if cfg.graph != "factored" or cfg.personalization != "similarity":
        raise NotImplementedError(
            "explain=True covers MixPR's factored graph with personalization='similarity' "
            f"(got graph={cfg.graph!r}, personalization={cfg.personalization!r})"
        )
    hits = np.asarray(hits, np.int64)
    if "seed_tops" in s and s["seed_tops"][0] is None:
        return _seeds_only(hits, scores)
    block = st.block
    a = float(cfg.alpha_local)
    x = dense_scores(s["x"])  # explain=True only: the walk's mass over every unit
    seeds, p, scale = _restart(s)
    colsum = block.colsum
    W = block.graph.term_weights if block.graph is not None else None
    E_rows = block._rows_csr()
    E_cols = block._cols()
    hits = np.asarray(hits, np.int64)
    # the walk's inflow per term, over the hits' terms only: u_t = sum_j E_jt x_j / D_j
    sub = sp.csr_array(E_rows[hits])
    terms = np.unique(sub.indices)
    Et = sp.csc_array(E_cols[:, terms])
    # x_j / D_j over every unit (one vectorized pass: cheaper than gathering x and D per
    # entry of the hits' term columns, which hold more entries than there are units to read)
    v = np.divide(x, colsum, out=np.zeros(len(x)), where=colsum > 0)
    u = np.zeros(len(terms))
    if Et.nnz:
        u = np.add.reduceat(Et.data * v[Et.indices], Et.indptr[:-1])
        u[np.diff(Et.indptr) == 0] = 0.0
    wt = W[terms] if W is not None else np.ones(len(terms))
    flow = (1.0 - a) * wt * u  # per term: walk mass per unit of E weight
    dang_seeds = seeds[colsum[seeds] <= 0]
    d = float(x[dang_seeds].sum()) if len(dang_seeds) else 0.0
    p_of = dict(zip(seeds.tolist(), p.tolist()))
    lex, dense = s.get("lexical"), s.get("dense")
    lex = None if lex is None else lex.at(hits) if isinstance(lex, SparseScores) else lex[hits]
    dense_w = s.get("dense_w")
    dr = float(cfg.dense_restart) if dense_w is not None else 0.0
    tops = s.get("tops", (0.0, 0.0, 0.0))
    scaled = s.get("lexical") is not None or (s.get("dense") is not None and cfg.dense_weight)
    pi_top = tops[0] if scaled and tops[0] > 0 else 1.0
    # seeds=: the score is MixPR's divided by its maximum plus the seeds' walk divided by its
    # own (longctx.mixpr.edges.QueryEdgesBlock.scores_seeded)
    plain_top, seed_top = s.get("seed_tops", (None, None))
    f = 1.0 / plain_top if plain_top else 1.0
    pi_top = pi_top / f
    # one step from the seeds: C[j, h] = (1 - a) sum_t E_jt W_t E_ht x_j / D_j
    Hw = sp.csr_array(sub @ sp.diags_array(W)) if W is not None else sub
    C = sp.csc_array(sp.csr_array(E_rows[seeds]) @ Hw.T) if len(seeds) else None
    coef = (1.0 - a) * v[seeds]
    names = _term_names(st.table)
    col_of = {int(t): c for c, t in enumerate(terms.tolist())}
    out = []
    for h, i in enumerate(hits.tolist()):
        score = float(scores[i])
        pi = p_of.get(i, 0.0)
        restart = a * pi
        dense_part = a * dr * float(dense_w[i]) / scale if dr and pi else 0.0
        dangling = (1.0 - a) * d * pi
        lo, hi = sub.indptr[h], sub.indptr[h + 1]
        cols = np.fromiter((col_of[int(t)] for t in sub.indices[lo:hi]), np.int64, hi - lo)
        contrib = sub.data[lo:hi] * flow[cols]
        walk = float(contrib.sum())
        unsettled = float(x[i]) - restart - dangling - walk
        parts = {
            "restart_lexical": (restart - dense_part) / pi_top,
            "restart_dense": dense_part / pi_top,
            "dangling": dangling / pi_top,
            "walk": walk / pi_top,
            "unsettled": unsettled / pi_top,
        }
        parts["lexical"] = parts["dense"] = 0.0
        if scaled and lex is not None:
            parts["lexical"] = f * cfg.lexical_weight * _by_top(float(lex[h]), tops[1])
        if scaled and dense is not None and cfg.dense_weight:
            parts["dense"] = f * cfg.dense_weight * _by_top(max(float(dense[i]), 0.0), tops[2])
        if seed_top is not None:
            parts["seeds_walk"] = _seed_walk_at(s["seed_x"], i) / seed_top
        order = _top(contrib, TOP_TERMS)
        top_terms = [
            evidence(score, contrib[o] / pi_top, term=names[int(sub.indices[lo + o])])
            for o in order
            if contrib[o] > 0
        ]
        top_seeds = []
        if C is not None:
            rows = C.indices[C.indptr[h] : C.indptr[h + 1]]
            col = C.data[C.indptr[h] : C.indptr[h + 1]] * coef[rows]
            col[seeds[rows] == i] = 0.0  # its own restart comes back to it: not a seed of it
            for o in _top(col, TOP_SEEDS):
                if col[o] > 0:
                    j = int(seeds[rows[o]])
                    top_seeds.append(evidence(score, col[o] / pi_top, **_unit(st, j)))
        out.append(
            make_explanation("mixpr", "pagerank", score, parts, terms=top_terms, seeds=top_seeds)
        )
    return out


def _seed_walk_at(x, i: int) -> float:
    """The seeds' walk's mass at unit ``i`` (``x``: ``(n,)`` or SparseScores)."""
    if isinstance(x, SparseScores):
        return float(x.at(np.array([i]))[0])
    return float(x[i])


def _seeds_only(hits, scores) -> list[dict]:
    """Explanations when the question reached no unit and only the seeds' walk scored."""
    return [
        make_explanation("mixpr", "pagerank", float(scores[i]), {"seeds_walk": float(scores[i])})
        for i in hits.tolist()
    ]


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
    scores : (n_units,) float64
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
    for i in np.asarray(hits, np.int64).tolist():
        score = float(scores[i])
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
            for o in _top(from_u, TOP_PATHS):
                if from_u[o] > 0 and units[o] != i:
                    j = int(units[o])
                    node = {**_unit(st, j), "seed": bool(r_u[j] > 0)}
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
            parts["first_hop"] = w.lexical_weight * _by_top(max(float(first[i]), 0.0), f_top)
        if dense is not None and w.dense_weight:
            parts["dense"] = w.dense_weight * _by_top(max(float(dense[i]), 0.0), d_top)
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


def _top(values: np.ndarray, n: int) -> list[int]:
    """Positions of the ``n`` largest ``values``, largest first (ties: the earlier first);
    linear in ``len(values)`` (a partition, then a sort of ``n``)."""
    if len(values) > n:
        part = np.argpartition(-values, n - 1)[:n]
        part.sort()
        return part[np.argsort(-values[part], kind="stable")].tolist()
    return np.argsort(-values, kind="stable").tolist()


def _by_top(v: float, top: float) -> float:
    """``v / top``, as :func:`~longctx.mixpr.query.divide_by_top` scales a whole vector."""
    return v / top if top > 0 else v
