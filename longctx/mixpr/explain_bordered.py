"""The explanation's pieces proper to MixPR's bordered walk (``personalization="query"``,
the ``"paper"`` preset): the walk restarts on the query nodes of the graph
``[[S, B], [B^T, Q]]`` (Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with
Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4 eq. 2), so a hit's restart is
replaced by what those nodes sent it.

:func:`query_columns` is a block's part of the reductions at the query nodes (summed over the
blocks as a sharded index sums them, :mod:`longctx.corpus.shards.explain`);
:func:`query_node_flow` solves the query nodes' masses from them and gives each hit its part
``"question"``. Used by :func:`longctx.mixpr.explain.explain_walk`.
"""

from __future__ import annotations

import numpy as np

from longctx.mixpr.query import MAX_QUERY_CHUNKS, query_weights
from longctx.selection import SparseScores

__all__ = ["is_bordered", "out_weights", "query_columns", "query_node_flow"]


def is_bordered(s: dict) -> bool:
    """Whether session ``s`` walked the bordered graph (``personalization="query"``: the
    restart on the query nodes): only that walk makes the full query edges ``B``
    (:meth:`~longctx.mixpr.edges.QueryEdgesBlock._full_B`; a new query's edges drop them)."""
    return "B" in s


def out_weights(block, s: dict) -> np.ndarray:
    """``(n,)``: each unit's out-weight in the walk of session ``s``, the ``D`` its mass is
    divided by: ``S``'s column sum, plus its query edges in a bordered walk (once a session)."""
    col = s.get("explain_out")
    if col is None:
        col = block.colsum
        if is_bordered(s):
            col = col + np.asarray(s["B"].sum(axis=1)).ravel()
        s["explain_out"] = col
    return col


def query_columns(block, s: dict) -> np.ndarray:
    """``(2 m,)``: the block's part of a bordered walk's reductions at its query nodes (session
    ``s``; ``(0,)`` for another walk): ``B^T (x / D)`` (the units' mass sent to each query node)
    and ``B^T 1`` (the query nodes' column sums over the units), summed over the blocks as the
    term columns are (:func:`~longctx.mixpr.explain.walk_inflow` appends them to its ``u``)."""
    if not is_bordered(s):
        return np.zeros(0)
    B = s["B"]
    col = out_weights(block, s)
    x = s["x"].dense() if isinstance(s["x"], SparseScores) else np.asarray(s["x"], np.float64)
    v = np.divide(x, col, out=np.zeros(len(x)), where=col > 0)
    return np.concatenate([B.T @ v, np.asarray(B.sum(axis=0)).ravel()])


def query_node_flow(cfg, table, query, facts: dict, u: np.ndarray) -> np.ndarray:
    """``u`` (the walk's inflow, summed over the blocks) without its query columns
    (:func:`query_columns`); for a bordered walk (``personalization="query"``), sets
    ``facts["question"]`` ``(k,)``: the mass the query nodes sent each hit,
    ``(1 - alpha) sum_q B_hq x_q / D_q``.

    The walk never keeps the query nodes' masses ``x_q``; they are those of its fixed point
    given the units' masses ``x`` (Alonso and Millidge, arXiv:2412.06078, sec. 4 eq. 2 on the
    bordered graph ``[[S, B], [B^T, Q]]``): ``x_q = (1 - alpha) (B^T (x / D) + Q (x_q / D_q)
    + d p_q) + alpha p_q``, ``d`` the mass of the query nodes without an edge (a unit without
    one holds none: the restart is on the query nodes), a linear system of the ``m <=``
    :data:`~longctx.mixpr.query.MAX_QUERY_CHUNKS` query nodes; ``Q`` (the query chunks'
    cosines) is made again from ``query`` as :meth:`~longctx.mixpr.scoring.Scorer.score`
    made it, with ``table``'s statistics. A walk stopped at its tolerance leaves ``x`` off the
    fixed point; the difference is the part ``"unsettled"``.

    Raises
    ------
    ValueError
        A bordered walk without its ``query``.
    """
    if facts.get("p_query") is None:
        return u
    if query is None:
        raise ValueError("a bordered walk (personalization='query') is explained with its query")
    a = float(cfg.alpha_local)
    p_q = np.asarray(facts["p_query"], np.float64)
    m = len(p_q)
    u, c, bcol = u[: len(u) - 2 * m], u[len(u) - 2 * m : len(u) - m], u[len(u) - m :]
    chunks = [query[i:j] for i, j in cfg.chunk(query)] or [query]
    Q = query_weights(table, chunks[-MAX_QUERY_CHUNKS:], with_q=True)[1]
    Q = np.where(Q >= cfg.effective_query_threshold, Q, 0.0)
    col_q = bcol + Q.sum(axis=0)
    inv_q = np.divide(1.0, col_q, out=np.zeros(m), where=col_q > 0)
    M = np.eye(m) - (1.0 - a) * (Q * inv_q) - (1.0 - a) * np.outer(p_q, col_q <= 0)
    x_q = np.linalg.solve(M, (1.0 - a) * c + a * p_q)
    facts["question"] = (1.0 - a) * (facts["brows"] @ (x_q * inv_q))
    return u
