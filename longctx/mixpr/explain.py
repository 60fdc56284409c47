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
residual; that difference is the part ``"unsettled"``. On the thresholded graph the walk's
part is the hit's row of ``S``; restarting on the query nodes (``personalization="query"``, the
bordered graph ``[[S, B], [B^T, Q]]``) the restart is replaced by what those nodes sent
(:func:`query_node_flow`). The multi-hop walk (HippoRAG,
arXiv:2405.14831; :mod:`longctx.mixpr.multihop`) is split the same way over its phrase nodes.

The parts live in four modules, all re-exported here: this one (the entry points and the
PageRank walk's inflow and composition, as a sharded index runs them block by block),
:mod:`longctx.mixpr.explain_bordered` (the bordered walk's query nodes),
:mod:`longctx.mixpr.explain_multihop` (the multi-hop walk's paths) and
:mod:`longctx.mixpr.explain_items` (the evidence items: units, term names, the top ``n``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from longctx.explain import evidence, make_explanation, with_explanations
from longctx.mixpr.explain_bordered import (
    is_bordered,
    out_weights,
    query_columns,
    query_node_flow,
)
from longctx.mixpr.explain_items import (
    TOP_PATHS,
    TOP_SEEDS,
    TOP_TERMS,
    TOP_UNITS,
    by_top,
    term_namer,
    top_positions,
    unit_fields,
    units_fields,
)
from longctx.mixpr.explain_multihop import explain_multihop
from longctx.mixpr.hits import document_units, values_at
from longctx.mixpr.push import is_count_rows, spans, take_rows
from longctx.selection import SparseScores

__all__ = [
    "explain_hits",
    "explain_documents",
    "explain_walk",
    "explain_multihop",
    "compose_walk",
    "global_explanations",
    "hit_rows",
    "join_facts",
    "merge_seeds",
    "seeds_only",
    "term_namer",
    "described",
    "unit_fields",
    "units_fields",
    "walk_hit_facts",
    "walk_inflow",
    "query_columns",
    "query_node_flow",
    "TOP_TERMS",
    "TOP_SEEDS",
    "TOP_PATHS",
    "TOP_UNITS",
]


def _restart(s: dict) -> tuple[np.ndarray, np.ndarray, float]:
    """``(seed units, their restart probabilities p, the restart's scale)`` of the walk kept in
    session ``s`` (power: ``p``, dense; push: ``push_p``, ``(units, p)``; the push on the
    thresholded graph keeps neither: ``w`` over its sum, the one block's). The scale is the
    sum the restart weights ``w`` (kept as ``(units, weights)`` over the units with a non-zero
    weight, :meth:`~longctx.mixpr.scoring.UnitBlock.restart_similarity`) were divided by."""
    if "push_p" in s:
        idx, p = s["push_p"]
    elif "p" in s:
        idx = np.flatnonzero(s["p"])
        p = s["p"][idx]
    else:  # the push on the thresholded graph: the weights divided by their sum (one block)
        idx, p = s["w"]
        p = p / p.sum() if len(p) else p
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
    ``explain=True``): the multi-hop walk's (:func:`explain_multihop`) when it scored them (the
    search ended local), the PageRank walk's (:func:`explain_walk`) for a local query, else the
    global PageRank's (the score is the unit's PageRank, the part ``"pagerank"``): a global
    query, or a fallback (``"global-fallback"``: the question reached no kept unit) that the
    multi-hop walk, which ran, did not lift to local (its scores are the fallback PageRank's).

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
    scores : (n_units,) float64 or SparseScores
        The units' scores (a push walk's are sparse: the units it reached).
    """
    hits = np.asarray(hits, np.int64)
    mh = keep.get("multihop")
    if walk.get("walk") == "multihop" and mh and used == "local":
        return explain_multihop(st, mh, hits, scores)
    if used == "local":
        return explain_walk(st, keep["session"], hits, scores, keep.get("query"))
    return global_explanations(values_at(scores, hits).tolist())


def explain_documents(st, result, keep: dict, used: str, walk: dict, scores, mask=None):
    """``result`` (:func:`~longctx.mixpr.hits.document_hits`: ``whole_documents=True``) with
    each document hit's explanation, ``timings["explain"]`` the seconds it took.

    A document scores its best unit's score (the maximum over its kept units, not a sum), so
    its explanation is that unit's (:func:`explain_hits`: ``parts`` add up to the document's
    score, with the unit's ``terms`` and ``seeds`` or ``paths``), and says which units carried
    the document: ``unit`` (the best unit, whose parts these are: ``unit``, ``doc_id``,
    ``index``, ``start``, ``end``), ``units`` (the document's units the search scored above 0,
    among those the filter keeps: the :data:`TOP_UNITS` best, best first, ties to the earlier
    unit, each with its ``score`` and its ``share`` of the document's score, 1 for the best)
    and ``units_scored`` (how many of its units scored above 0). Costs the hits' documents'
    units, not the index's.

    Parameters
    ----------
    st : the index's state
    result : SearchResult
        Document hits (``source``: the document, ``index``: its best unit's position).
    keep, used, walk :
        As :func:`explain_hits`.
    scores : (n_units,) float64 or SparseScores
        The units' scores (those the hits report).
    mask : UnitFilter, optional
        The units the filters keep.
    """
    t0 = time.perf_counter()
    starts = st.block.doc_starts()
    hits = result.hits
    best = np.asarray([starts[h.source] + h.index for h in hits], np.int64)
    out = []
    for h, b, e in zip(hits, best.tolist(), explain_hits(st, keep, used, walk, best, scores)):
        units, vals = document_units(starts, h.source, scores, mask)
        units, vals = units[vals > 0], vals[vals > 0]
        top = top_positions(vals, TOP_UNITS)
        listed = [
            evidence(h.score, vals[o], **f) for o, f in zip(top, units_fields(st, units[top]))
        ]
        out.append({**e, "unit": unit_fields(st, b), "units": listed, "units_scored": len(units)})
    timings = {**result.timings, "explain": time.perf_counter() - t0}
    return replace(result, hits=with_explanations(hits, out), timings=timings)


def explain_walk(st, s: dict, hits: np.ndarray, scores: np.ndarray, query=None) -> list[dict]:
    """Explanations of MixPR's PageRank walk for the units ``hits``: on the factored graph or
    the thresholded one (``graph="threshold"``), restarting on the units
    (``personalization="similarity"``) or on the query nodes (``personalization="query"``, the
    bordered graph ``[[S, B], [B^T, Q]]``: the ``"paper"`` preset).

    The work is split as a sharded index splits it (:mod:`longctx.corpus.shards.explain`
    runs the same steps over its shards): what the hits' own units hold
    (:func:`walk_hit_facts`), the walk's inflow through the hits' terms and the seeds'
    one-step mass (:func:`walk_inflow`, summed over the blocks), then the composition
    (:func:`compose_walk`); here over the index's one block.

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
        question reached no unit). A bordered walk has no ``w``: its ``B`` (the query edges)
        and ``p_query`` (the restart over the query nodes).
    hits : (k,) int
        The returned units.
    scores : (n_units,) float64 or SparseScores
        The units' scores (as returned; a push walk's are sparse: the units it reached).
    query : str, optional
        The query (a bordered walk: its query nodes' masses, never kept by the walk, are
        those of the walk's fixed point given the units' masses, :func:`query_node_flow`).

    Returns
    -------
    list of dict
        One :func:`longctx.explain.make_explanation` per hit: parts ``restart_lexical``,
        ``restart_dense`` (hybrid), ``dangling``, ``walk``, ``unsettled``, ``lexical``,
        ``seeds_walk`` (``seeds=``: the seeds' own walk, added to MixPR's score),
        ``dense``; ``terms`` (the hit's terms that carried the most walk mass to it; none on
        the thresholded graph, whose edges are whole cosines) and ``seeds`` (the restart
        units that sent it the most in one step). A bordered walk has the part ``question``
        (the mass its edges to the query nodes brought it; in hybrid mode the dense query
        edges too) in place of ``restart_lexical``, ``restart_dense`` and ``dangling``, and
        its ``seeds`` are the units with a query edge.

    Raises
    ------
    ValueError
        A bordered walk's explanation without its ``query``.
    """
    hits = np.asarray(hits, np.int64)
    score_of = values_at(scores, hits).tolist()
    block = st.block
    facts = walk_hit_facts(block, s, hits)
    if facts["seeds_only"]:
        return seeds_only(score_of)
    names = term_namer(st.table)
    if block.explicit:  # the thresholded graph: S's rows, no terms
        u, d, found = _explicit_inflow(block, s, hits)
        u = np.concatenate([u, query_columns(block, s)])
        terms = wt = None
    else:
        W = block.graph.term_weights if block.graph is not None else None
        terms = np.unique(facts["indices"])
        wt = W[terms] if W is not None else np.ones(len(terms))
        u, d, found = walk_inflow(block, s, terms, hit_rows(facts, terms, wt), hits)
    u = query_node_flow(st.config, st.table, query, facts, u)
    seeds = described(st, found)
    return compose_walk(st.config, facts, terms, u, d, wt, seeds, names, score_of)


def _senders(block, s: dict) -> np.ndarray:
    """``(m,) int64`` ascending: the units a hit's ``seeds`` are chosen among: the restart
    units, or in a bordered walk the units with a query edge."""
    if is_bordered(s):
        return np.flatnonzero(np.diff(s["B"].indptr)).astype(np.int64)
    return _restart(s)[0]


def _explicit_inflow(block, s: dict, hits: np.ndarray):
    """:func:`walk_inflow` on the thresholded graph (one block: it is never sharded): ``u``
    ``(k,)`` each hit's inflow ``sum_j S_hj x_j / D_j`` (its row of ``S``), the dangling mass
    and each hit's best seeds ``(mass, unit, unit)``."""
    x = s["x"]
    col = out_weights(block, s)
    S = block.graph.S
    lo, hi = S.indptr[hits], S.indptr[hits + 1]
    u = np.zeros(len(hits))
    senders = _senders(block, s)
    a = float(block.config.alpha_local)
    found: list = []
    for h, (i, j0, j1) in enumerate(zip(hits.tolist(), lo.tolist(), hi.tolist())):
        nb, w = S.indices[j0:j1], S.data[j0:j1]
        cs = col[nb]
        send = w * np.divide(values_at(x, nb), cs, out=np.zeros(len(nb)), where=cs > 0)
        u[h] = float(send.sum())
        on = np.isin(nb, senders) & (nb != i)
        nb, send = nb[on], (1.0 - a) * send[on]
        found.append(
            [
                (float(send[o]), int(nb[o]), int(nb[o]))
                for o in top_positions(send, TOP_SEEDS)
                if send[o] > 0
            ]
        )
    return u, _dangling(block, s, senders), found


def _dangling(block, s: dict, senders: np.ndarray) -> float:
    """The walk's mass on units without an out-edge: a restart unit's (nothing reaches a unit
    without an edge but its restart; a bordered walk's senders all have a query edge)."""
    col = out_weights(block, s)
    return float(values_at(s["x"], senders[col[senders] <= 0]).sum()) if len(senders) else 0.0


def _row_entries(block, units: np.ndarray):
    """``(terms (nnz,), values (nnz,) float64, lengths (len(units),))``: ``E``'s entries in the
    rows ``units`` of ``block``, row by row (costs those rows' entries)."""
    rows = block._rows()
    if is_count_rows(rows):  # a CountRows: the values made from the counts
        lens = spans(rows.indptr, units)[1]
        cols, vals = rows.gather(units, np.ones(len(units)))
        return cols, vals, lens
    return take_rows(rows.indptr, rows.indices, rows.data, units)


def walk_hit_facts(block, s: dict, hits: np.ndarray) -> dict:
    """What :func:`compose_walk` reads of the block's units ``hits`` (``(k,)`` int64, the
    block's own numbers) in session ``s``: their rows of ``E`` (``indices``, ``data``,
    ``lens``: corpus-wide term columns), walk mass ``x``, restart probability ``pi`` and its
    dense part ``pi_dense`` (hybrid), lexical and dense cosines, the seeds' walk ``seed_x``,
    and the block-wide ``tops``, ``seed_tops``, ``dense_restart`` (whether the restart had a
    dense part) and ``seeds_only`` (the question reached no unit, only ``seeds=`` scored).
    Costs the hits' entries, never a pass over the block's units."""
    hits = np.asarray(hits, np.int64)
    no_restart = np.zeros(0, np.int64), np.zeros(0), 1.0  # bordered: none on the units
    seeds, p, scale = no_restart if is_bordered(s) else _restart(s)
    at = np.minimum(np.searchsorted(seeds, hits), max(len(seeds) - 1, 0))
    on = seeds[at] == hits if len(seeds) else np.zeros(len(hits), bool)
    pi = np.where(on, p[at] if len(p) else 0.0, 0.0)
    dense_w = s.get("dense_w")
    pi_dense = np.zeros(len(hits))
    if dense_w is not None:
        pi_dense[on] = dense_w[hits[on]] / scale
    indices, data, lens = _row_entries(block, hits)
    lex, dense = s.get("lexical"), s.get("dense")
    return {
        "indices": indices,
        "data": data,
        "lens": np.asarray(lens, np.int64),
        "x": values_at(s["x"], hits) if "x" in s else np.zeros(len(hits)),
        "pi": pi,
        "pi_dense": pi_dense,
        "lexical": None if lex is None else values_at(lex, hits),
        "dense": None if dense is None else np.asarray(dense[hits], np.float64),
        "seed_x": values_at(s["seed_x"], hits) if "seed_x" in s else None,
        "tops": s.get("tops", (0.0, 0.0, 0.0)),
        "seed_tops": s.get("seed_tops"),
        "dense_restart": dense_w is not None,
        "seeds_only": "seed_tops" in s and s["seed_tops"][0] is None,
        # a bordered walk: the restart over the query nodes and the hits' query edges
        "p_query": s["p_query"] if is_bordered(s) else None,
        "brows": s["B"][hits].toarray() if is_bordered(s) else None,
    }


def described(st, found: list, keys: bool = False) -> list:
    """:func:`walk_inflow`'s seeds ``(mass, key, unit)`` per hit as ``(mass, fields)``
    (:func:`units_fields`, described at once); ``keys``: as ``(mass, key, fields)`` with
    ``fields["unit"]`` the key (a shard's seeds, numbered as the corpus numbers them)."""
    fields = iter(units_fields(st, [j for hit in found for _, _, j in hit]))
    if keys:
        return [[(v, k, {**next(fields), "unit": k}) for v, k, _ in hit] for hit in found]
    return [[(v, next(fields)) for v, _, _ in hit] for hit in found]


def join_facts(parts: list) -> dict:
    """The :func:`walk_hit_facts` of several blocks as one, their hits one after another."""
    if len(parts) == 1:
        return parts[0]
    out = dict(parts[0])
    for key in ("indices", "data", "lens", "x", "pi", "pi_dense", "lexical", "dense", "seed_x",
                "brows"):  # fmt: skip
        vals = [f[key] for f in parts]
        out[key] = None if vals[0] is None else np.concatenate(vals)
    return out


def hit_rows(facts: dict, terms: np.ndarray, wt: np.ndarray) -> tuple:
    """The hits' rows of ``E W`` over ``terms`` (the sorted union of their columns), as CSR
    ``(data, indices, indptr)`` with ``len(terms)`` columns: what :func:`walk_inflow` dots the
    restart units' rows with."""
    cols = np.searchsorted(terms, facts["indices"])
    indptr = np.concatenate([[0], np.cumsum(facts["lens"])]).astype(np.int64)
    return facts["data"] * wt[cols], cols, indptr


def walk_inflow(block, s: dict, terms: np.ndarray, rows: tuple, keys: np.ndarray):
    """The block's part of the walk's inflow into the hits: ``(u, d, seeds)``.

    Parameters
    ----------
    block : UnitBlock
    s : dict
        The session (as :func:`explain_walk`).
    terms : (t,) int64 ascending
        The hits' corpus-wide term columns.
    rows : tuple
        :func:`hit_rows` of the hits (``E W`` restricted to ``terms``).
    keys : (k,) int64
        The hits' corpus-wide unit numbers (a restart unit is no seed of itself).

    Returns
    -------
    u : (t,) float64, or (t + 2 m,) after a bordered walk
        ``sum_j E_jt x_j / D_j`` over the block's units ``j`` (``D``: the graph's column
        sums, plus each unit's query edges in a bordered walk): reads the entries of the
        terms' columns only (or, when those outnumber the block's units and ``x`` is dense,
        one vectorized pass over them); a bordered walk appends its :func:`query_columns`.
    d : float
        The walk's mass on the block's restart units without a term (the dangling mass).
    seeds : list of k lists
        Per hit, its :data:`TOP_SEEDS` best restart units of the block by the mass they sent
        it in one step, ``(1 - alpha) x_j / D_j sum_t E_jt W_t E_ht``, as ``(mass, key,
        unit)``, best first (ties: the smaller key).
    """
    x, colsum = s["x"], out_weights(block, s)
    E = block._cols()
    idx, vals, lens = take_rows(E.indptr, E.indices, E.data, terms)
    if not isinstance(x, SparseScores) and len(idx) > block.n:
        v = np.divide(x, colsum, out=np.zeros(len(x)), where=colsum > 0)[idx]
    else:
        xv, cs = values_at(x, idx), colsum[idx]
        v = np.divide(xv, cs, out=np.zeros(len(xv)), where=cs > 0)
    u = np.zeros(len(terms))
    if len(terms):  # per column, its entries summed in order (a 0 after the last: a column
        # the block lacks starts there, and adding 0 changes no sum)
        u = np.add.reduceat(np.append(vals * v, 0.0), np.cumsum(lens) - lens)
        u[lens == 0] = 0.0
    u = np.concatenate([u, query_columns(block, s)])
    seeds = _senders(block, s)
    d = _dangling(block, s, seeds)
    k = len(rows[2]) - 1
    found: list = [[] for _ in range(k)]
    if not len(seeds) or not k:
        return u, d, found
    a = float(block.config.alpha_local)
    cols, data, slen = _row_entries(block, seeds)
    # the seeds' rows over the hits' terms (their entries in order: a CSR array as it is)
    pos = np.minimum(np.searchsorted(terms, cols), max(len(terms) - 1, 0))
    keep = terms[pos] == cols if len(terms) else np.zeros(len(cols), bool)
    per_row = np.bincount(np.repeat(np.arange(len(seeds)), slen)[keep], minlength=len(seeds))
    indptr = np.concatenate([[0], np.cumsum(per_row)])
    S = sp.csr_array((data[keep], pos[keep], indptr), shape=(len(seeds), len(terms)))
    H = sp.csr_array(rows, shape=(k, len(terms)))
    C = sp.csc_array(S @ H.T)
    cs = colsum[seeds]
    coef = (1.0 - a) * np.divide(values_at(x, seeds), cs, out=np.zeros(len(cs)), where=cs > 0)
    skeys = block.keys[seeds]
    for h in range(k):
        r = C.indices[C.indptr[h] : C.indptr[h + 1]]
        col = C.data[C.indptr[h] : C.indptr[h + 1]] * coef[r]
        col[skeys[r] == keys[h]] = 0.0  # its own restart comes back to it: not a seed of it
        found[h] = [
            (float(col[o]), int(skeys[r[o]]), int(seeds[r[o]]))
            for o in top_positions(col, TOP_SEEDS)
            if col[o] > 0
        ]
    return u, d, found


def compose_walk(cfg, facts, terms, u, d, wt, seeds, names, scores) -> list[dict]:
    """The explanations of :func:`explain_walk` from its pieces, gathered over the blocks.

    Parameters
    ----------
    cfg : MixPRConfig
    facts : dict
        :func:`walk_hit_facts` of the hits, in hit order (:func:`join_facts`).
    terms : (t,) int64
        The hits' term columns; ``u`` ``(t,)`` the walk's inflow through them and ``d`` the
        dangling mass (:func:`walk_inflow`, summed over the blocks); ``wt`` ``(t,)`` their
        graph weights ``W``. ``None`` on the thresholded graph: ``u`` ``(k,)`` is then each
        hit's inflow through its row of ``S`` (and ``wt`` ``None``). ``facts["question"]``
        ``(k,)``, when present (a bordered walk), is what the query nodes sent each hit.
    seeds : list of k lists
        Per hit, its best seeds as ``(mass, unit description)``, best first.
    names : callable
        Term column -> the term.
    scores : list of k float
        The hits' scores.
    """
    a = float(cfg.alpha_local)
    flow = None if terms is None else (1.0 - a) * wt * u  # per term: mass per unit of E weight
    question = facts.get("question")  # a bordered walk: what the query nodes sent each hit
    dr = float(cfg.dense_restart) if facts["dense_restart"] else 0.0
    lex, dense = facts["lexical"], facts["dense"]
    tops = facts["tops"]
    scaled = lex is not None or (dense is not None and cfg.dense_weight)
    pi_top = tops[0] if scaled and tops[0] > 0 else 1.0
    # seeds=: the score is MixPR's divided by its maximum plus the seeds' walk divided by its
    # own (longctx.mixpr.edges.QueryEdgesBlock.scores_seeded)
    plain_top, seed_top = facts["seed_tops"] or (None, None)
    f = 1.0 / plain_top if plain_top else 1.0
    pi_top = pi_top / f
    indptr = np.concatenate([[0], np.cumsum(facts["lens"])])
    cols_all = None if terms is None else np.searchsorted(terms, facts["indices"])
    out = []
    for h, score in enumerate(scores):
        pi = float(facts["pi"][h])
        restart = a * pi
        dense_part = a * dr * float(facts["pi_dense"][h]) if dr and pi else 0.0
        dangling = (1.0 - a) * d * pi
        lo, hi = indptr[h], indptr[h + 1]
        if flow is None:  # the thresholded graph: the hit's row of S, no terms
            contrib = np.zeros(0)
            walk = (1.0 - a) * float(u[h])
        else:
            contrib = facts["data"][lo:hi] * flow[cols_all[lo:hi]]
            walk = float(contrib.sum())
        if question is not None:
            asked = float(question[h])
            parts = {"question": asked / pi_top}
        else:
            asked = restart + dangling
            parts = {
                "restart_lexical": (restart - dense_part) / pi_top,
                "restart_dense": dense_part / pi_top,
                "dangling": dangling / pi_top,
            }
        parts["walk"] = walk / pi_top
        parts["unsettled"] = (float(facts["x"][h]) - asked - walk) / pi_top
        parts["lexical"] = parts["dense"] = 0.0
        if scaled and lex is not None:
            parts["lexical"] = f * cfg.lexical_weight * by_top(float(lex[h]), tops[1])
        if scaled and dense is not None and cfg.dense_weight:
            parts["dense"] = f * cfg.dense_weight * by_top(max(float(dense[h]), 0.0), tops[2])
        if seed_top is not None:
            parts["seeds_walk"] = float(facts["seed_x"][h]) / seed_top
        top_terms = [
            evidence(score, contrib[o] / pi_top, term=names(int(facts["indices"][lo + o])))
            for o in top_positions(contrib, TOP_TERMS)
            if contrib[o] > 0
        ]
        top_seeds = [evidence(score, v / pi_top, **unit) for v, unit in seeds[h]]
        out.append(
            make_explanation("mixpr", "pagerank", score, parts, terms=top_terms, seeds=top_seeds)
        )
    return out


def merge_seeds(parts: list) -> list:
    """Per hit, the :data:`TOP_SEEDS` best of the blocks' seeds (:func:`walk_inflow`'s
    ``(mass, key, unit)``; ``parts``: one list of k lists per block), best first, ties to the
    smaller key: as :func:`walk_inflow` orders them over one block."""
    out = []
    for per_hit in zip(*parts):
        cands = [c for block in per_hit for c in block]
        cands.sort(key=lambda c: (-c[0], c[1]))
        out.append(cands[:TOP_SEEDS])
    return out


def seeds_only(scores) -> list[dict]:
    """Explanations when the question reached no unit and only the seeds' walk scored."""
    return [make_explanation("mixpr", "pagerank", v, {"seeds_walk": v}) for v in scores]


def global_explanations(scores) -> list[dict]:
    """Explanations of a global query: the score is the unit's PageRank (part ``"pagerank"``)."""
    return [make_explanation("mixpr", "global", v, {"pagerank": v}) for v in scores]
