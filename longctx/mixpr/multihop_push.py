"""The multi-hop walk by forward push over the bipartite unit <-> phrase graph: a walk whose
cost is set by the mass it moves, not by the number of units (issue 36).

:class:`~longctx.mixpr.multihop.MultiHopRanker` walks a personalized PageRank over unit nodes
and phrase nodes (and, with ``term_share``, index-term nodes). Its power iteration
(``MultiHopWalk(solver="power")``) passes over every unit and phrase at each step. Its fixed
point is ``s = rho h`` with

- ``h = sum_t M^t R``: the visits of a walk from the restart ``R`` (the seeds on units ``r_u``,
  on linking phrases ``r_p``, on phrases of one unit ``d_u``), ``M = (1 - alpha) P`` the move
  (unit -> its phrases / terms, phrase / term -> its units; a unit with no edge absorbs);
- ``rho = alpha / (1 - sigma)``, ``sigma = (1 - alpha) sum_i stuck_i h_i``: the mass that
  reaches a unit with no edge restarts, as the iteration sends it back to ``R``.

``h`` is computed here level by level, each level kept sparse, as forward push (Andersen, Chung
and Lang, "Local graph partitioning using PageRank vectors", FOCS 2006, sec. 3; Lofgren,
Banerjee and Goel, "Personalized PageRank Estimation and Search: A Bidirectional Approach"
(BiPPR), WSDM 2016, sec. 2), like the MixPR walk's push (:mod:`longctx.mixpr.push`):

1. each unit of the frontier settles its residual ``r_i`` (``h_i += r_i``) and sends
   ``(1 - alpha) r_i`` to its phrases (and terms) along its row of the walk's matrix;
2. a phrase (or term) ``j`` holding residual ``r_j`` is pushed to its units only when
   ``r_j >= push_threshold * deg_j`` (each of its ``deg_j`` units would get about
   ``push_threshold`` or more: Andersen et al.'s ``r(u) >= eps d(u)``); otherwise its mass
   stays *parked* on it (pushed later if more arrives) and is counted in the residual. A unit
   after the first level is pushed by the same rule (``deg``: its phrases and terms); the
   residual of a parked unit settles on it when the walk stops (its own visit), and what it
   would have moved on is counted in the residual.

The walk stops when the residual still to move is below ``tol`` (an L1 bound on a probability
vector: the same at every corpus size) or after ``max_iter`` levels. A level reads the
frontier's rows and the pushed phrases' rows: the total read is bounded by the mass pushed
over the threshold (each push of a node of degree ``d`` moves at least ``push_threshold * d``,
so at most ``2 / (alpha push_threshold)`` entries in all), whatever the corpus size;
a level that would read more than half of a matrix is one product over it (a walk that floods
a small corpus costs what a power-iteration step costs).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from longctx.mixpr.push import gather, sum_sparse
from longctx.types import walk_record

__all__ = ["Bipartite", "push_multihop"]

#: A spread whose reads exceed ``1 / DENSE_SHARE`` of the matrix's non-zeros is one product.
DENSE_SHARE = 2


class Bipartite:
    """One direction of the walk's bipartite graph, by rows: ``rows`` ``(n_from, n_to)`` CSR,
    each row a distribution (or empty); :meth:`spread` sends a sparse vector along it."""

    __slots__ = ("rows", "deg", "_T")

    def __init__(self, rows: sp.csr_array):
        self.rows = sp.csr_array(rows)
        self.rows.sort_indices()
        self.deg = np.diff(self.rows.indptr)
        self._T = self.rows.T  # CSC view of the transpose (no copy): the dense product

    def spread(self, idx: np.ndarray, w: np.ndarray):
        """``sum_i w_i rows[idx_i]`` as ``(indices ascending, values, entries read)``, the
        duplicates summed by :func:`~longctx.mixpr.push.sum_sparse`. Costs the non-zeros of
        the selected rows (one product over the matrix when that is more than half of them)."""
        M = self.rows
        if not len(idx):
            return np.empty(0, np.int64), np.empty(0), 0
        read = int(self.deg[idx].sum())
        if read * DENSE_SHARE > M.nnz:
            dense = np.zeros(M.shape[0])
            dense[idx] = w
            y = self._T @ dense
            out = np.flatnonzero(y != 0)
            return out, y[out], int(M.nnz)
        cols, vals = gather(M.indptr, M.indices, M.data, idx, w)
        cols, vals = sum_sparse(cols, vals, M.shape[1])
        return cols, vals, read


def _side(moves, u_idx, mv, park, eps, alpha):
    """One side (phrases or terms) of a level: the units' mass ``mv`` (already times the
    side's share) sent along ``moves[0]`` (unit -> node), added to the parked residual ``park``;
    the nodes over the threshold are pushed along ``moves[1]`` (node -> unit). Returns ``(unit
    indices, unit values, new park, entries read)``."""
    up, down = moves
    nodes, vals, read = up.spread(u_idx, mv)
    if len(park[0]):
        nodes, vals = sum_sparse(
            np.concatenate([park[0], nodes]), np.concatenate([park[1], vals]), len(down.deg)
        )
    go = vals >= eps * down.deg[nodes]
    units, uvals, read2 = down.spread(nodes[go], (1.0 - alpha) * vals[go])
    return units, uvals, (nodes[~go], vals[~go]), read + read2


def push_multihop(
    n: int,
    phrases: tuple[Bipartite, Bipartite],
    terms: tuple[Bipartite, Bipartite] | None,
    to_p: np.ndarray,
    to_t: np.ndarray,
    stuck: np.ndarray,
    r_u: np.ndarray,
    r_p: np.ndarray,
    d_u: np.ndarray,
    *,
    alpha: float,
    tol: float,
    max_iter: int,
    push_threshold: float,
    trace: list | None = None,
):
    """The multi-hop walk's fixed point by forward push (see the module doc).

    Parameters
    ----------
    n : int
        Number of units.
    phrases : (unit -> phrase, phrase -> unit) :class:`Bipartite`
        Row-stochastic ``(n, n_link)`` and ``(n_link, n)`` matrices.
    terms : (unit -> term, term -> unit) :class:`Bipartite`, optional
    to_p, to_t, stuck : (n,) float64
        Share of a unit's moving mass that goes to its phrases, to its terms, and that restarts
        (``to_p + to_t + stuck == 1``).
    r_u : (n,) float64
        Restart on units.
    r_p : (n_link,) float64
        Restart on linking phrases.
    d_u : (n,) float64
        Restart on phrases of one unit each, filed under that unit: it reaches the unit one
        step later (``(1 - alpha) d_u``).
    alpha, tol, max_iter, push_threshold
        The restart probability, the residual to stop at, the most levels, and the threshold
        of a phrase (term) push (0: every node is pushed, the exact series).
    trace : list, optional
        Receives ``{"stage": "multihop", "solver": "push", "steps", "residual", "parked",
        "read"}``: the levels pushed, the mass not settled when it stopped (still moving plus
        parked; an L1 bound), the parked part, and the matrix entries read.

    Returns
    -------
    mass, arrived : (n,) float64
        The walk's mass on each unit at the fixed point, and the part of it that arrived
        through edges (``mass - rho r_u``), as :meth:`MultiHopRanker._iterate` returns them.
    """
    a = float(alpha)
    h = np.zeros(n)
    arrived = np.zeros(n)
    u_deg = phrases[0].deg if terms is None else phrases[0].deg + terms[0].deg
    u_idx = np.flatnonzero(r_u != 0)
    u_val = r_u[u_idx]
    park_u = (np.empty(0, np.int64), np.empty(0))
    # the restart on linking phrases starts parked on them: pushed with the first level
    p_idx = np.flatnonzero(r_p != 0)
    park_p = (p_idx, r_p[p_idx])
    park_t = None if terms is None else (np.empty(0, np.int64), np.empty(0))
    # phrases of one unit: their mass reaches the unit after one move
    d_idx = np.flatnonzero(d_u != 0)
    d_val = (1.0 - a) * d_u[d_idx]
    sigma = 0.0
    read = 0
    steps = 0
    first = True  # the restart's units are all pushed (none is parked, none has arrived)
    while True:
        h[u_idx] += u_val
        if not first:
            arrived[u_idx] += u_val
        mv = (1.0 - a) * u_val
        sigma += float((mv * stuck[u_idx]).sum())
        parts_i, parts_v = [park_u[0]], [park_u[1]]
        units, vals, park_p, r = _side(phrases, u_idx, mv * to_p[u_idx], park_p, push_threshold, a)
        parts_i.append(units)
        parts_v.append(vals)
        read += r
        if terms is not None:
            units, vals, park_t, r = _side(
                terms, u_idx, mv * to_t[u_idx], park_t, push_threshold, a
            )
            parts_i.append(units)
            parts_v.append(vals)
            read += r
        if first:
            parts_i.append(d_idx)
            parts_v.append(d_val)
            first = False
        idx, val = sum_sparse(np.concatenate(parts_i), np.concatenate(parts_v), n)
        # a unit too is pushed only when each of its edges would carry push_threshold
        go = val >= push_threshold * u_deg[idx]
        u_idx, u_val = idx[go], val[go]
        park_u = (idx[~go], val[~go])
        steps += 1
        moving_now = float(u_val.sum())
        if moving_now < tol or moving_now == 0.0 or steps >= max_iter:  # or nothing moves
            break
    # the residual left on units settles where it stands (its own visit), without moving on
    for idx, val in ((u_idx, u_val), park_u):
        h[idx] += val
        arrived[idx] += val
    moving = float(u_val.sum() + park_u[1].sum())
    parked = float(park_u[1].sum() + park_p[1].sum())
    parked += 0.0 if park_t is None else float(park_t[1].sum())
    residual = (1.0 - a) * moving + float(park_p[1].sum())
    residual += 0.0 if park_t is None else float(park_t[1].sum())
    rho = a / (1.0 - sigma) if sigma < 1.0 else a
    if trace is not None:
        trace.append(walk_record("multihop", "push", steps, residual, parked=parked, read=read))
    return rho * h, rho * arrived
