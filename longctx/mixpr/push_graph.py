"""Personalized PageRank by forward push over an explicit unit graph: the thresholded ``S = E
E^T`` of the paper (``graph="threshold"``, the ``"paper"`` preset), a walk whose cost is set by
the mass it moves, not by a pass over every unit per step.

The walk is the one :meth:`~longctx.mixpr.scoring.Scorer.walk` computes by power iteration
(Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time, Sparse
GraphRAG", 2024, arXiv:2412.06078, sec. 4 eq. 2 and 3; networkx's conventions as
:func:`~longctx.mixpr.graph.personalized_pagerank`): ``pi = (1 - alpha) (A pi + dangling(pi) p)
+ alpha p`` over the units, bordered with the query nodes when the restart is on them
(``personalization="query"``: the graph ``[[S, B], [B^T, Q]]``, ``p`` one-hot on the query
nodes), else restarting on the units' similarity weights (``personalization="similarity"``).
Its solution is the series ``pi = alpha sum_t M^t p``; forward push (Andersen, Chung and Lang,
"Local graph partitioning using PageRank vectors", FOCS 2006, sec. 3) computes it from the
residual ``r`` (the mass not yet settled, ``r = p`` at the start), level by level (all the
nodes that pass the rule at once):

1. a node ``u`` whose residual passes the rule *settles* ``alpha r_u`` (added to ``pi_u``) and
   sends ``(1 - alpha) r_u S_vu / d_u`` to each neighbour ``v`` (``d_u``: its column sum; a
   dangling node sends it to the restart, as networkx does);
2. the rule is Andersen et al.'s ``r_u >= eps k_u`` with ``eps = push_threshold`` and ``k_u``
   the node's count of neighbours (the entries of its row): a node pushes when each neighbour
   would get about ``eps`` or more. Below it the residual stays *parked* on the node (pushed
   later if more arrives). When the walk stops, each parked unit settles ``alpha`` of its
   residual where it is (the first term of its own walk: the scores of the units holding
   parked mass, which may be near the top, lose only what they would have passed on); the
   rest is never lost from the account: the residual reported is the mass still moving plus
   the ``(1 - alpha)`` share of the parked mass, an L1 bound of what the scores lack.

The walk stops when the mass moving on is below ``tol`` (an L1 bound on a probability vector,
the same at every corpus size), when nothing moves on, or after ``max_iter`` levels: the power
iteration's rule. A
level costs the entries of the pushed nodes' rows (and the parked nodes it carries), so a query
whose walk stays near its seeds costs what it reaches; a level that would read more than half
of the graph is done as one product over it (a walk that floods the graph costs a
power-iteration step). The query nodes (at most
:data:`~longctx.mixpr.query.MAX_QUERY_CHUNKS`) are pushed whenever they hold mass.

The thresholded graph is one block (it is never split into shards), so the whole walk runs in
the block (:meth:`GraphPushBlock.graph_push_walk`); :func:`graph_push_walk` is the driver's
call.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from longctx.mixpr.push import COUNT_SHARE, gather, sum_sparse
from longctx.types import walk_record

__all__ = ["GraphPushBlock", "graph_push_walk"]

#: A level whose reads exceed ``1 / GRAPH_DENSE_SHARE`` of the graph's entries is done as one
#: product over the graph (sparse product: about 2 ns an entry; gathering rows and summing them:
#: 5-7 ns an entry read, on War and Peace + Monte Cristo's 8.5M entries).
GRAPH_DENSE_SHARE = 4


class GraphPushBlock:
    """The push walk on a block's explicit graph (mixed into
    :class:`~longctx.mixpr.scoring.UnitBlock`, which provides ``graph`` (a
    :class:`~longctx.mixpr.graph.ThresholdGraph`), ``colsum``, ``n``, ``explicit`` and
    ``_s``)."""

    def graph_push_walk(self, sid, restart: str, scale, alpha: float, tol: float,
                        max_iter: int, eps: float, p_q=None, Q=None, bcol=None):  # fmt: skip
        """Run the walk on the block's explicit graph (see the module doc).

        Parameters
        ----------
        restart : {"weights", "query"}
            ``"weights"``: restart on :meth:`restart_similarity`'s weights divided by ``scale``;
            ``"query"``: on the query nodes, ``p_q`` (``(m,)`` float64 summing to 1), bordered
            with the session's query edges ``B`` (``(n, m)``), ``Q`` (``(m, m)``) and the
            column sums of ``B`` over the units, ``bcol`` (``(m,)``).
        alpha : float in (0, 1]
            Restart probability.
        tol, max_iter, eps :
            The stopping rule and the push rule (``push_threshold``).

        Returns
        -------
        (max of the walk's scores over the units or None, the trace record)
            The scores ``(n,) float64`` are kept as the session's ``x``.

        Raises
        ------
        ValueError
            The block holds no explicit graph.
        """
        if not self.explicit:
            raise ValueError("the push walk on an explicit graph needs graph='threshold'")
        s = self._s(sid)
        n = self.n
        S = self.graph.S
        col = self.colsum
        k = np.diff(S.indptr)
        bordered = restart == "query"
        r = np.zeros(n)  # the residual (mass not yet settled) of every unit
        if bordered:
            B = self._full_B(s)
            m = B.shape[1]
            Bc = sp.csc_array(B)
            col = col + np.asarray(B.sum(axis=1)).ravel()
            k = k + np.diff(B.indptr)
            col_q = np.asarray(bcol, dtype=np.float64) + np.asarray(Q.sum(axis=0)).ravel()
            live_q = col_q > 0
            inv_q = np.divide(1.0, col_q, out=np.zeros_like(col_q), where=live_q)
            Qd = np.asarray(Q, dtype=np.float64)
            p_q = np.asarray(p_q, dtype=np.float64)
            r_q = p_q.copy()
            cand = np.empty(0, np.int64)
        else:
            w = self._restart(s)
            cand = np.flatnonzero(w != 0)
            pval = w[cand] / scale
            pidx = cand
            r[cand] = pval
            r_q = np.zeros(0)
        pi = np.zeros(n)
        thr = eps * k
        steps = read = 0
        damping = 1.0 - alpha
        while True:
            # settle: the units touched last level that pass the rule, and the query nodes (a
            # unit not touched since it was parked is still under the rule)
            if cand is None:  # most units touched: one scan
                f = np.flatnonzero((r >= thr) & (r > 0))
            else:
                f = cand[r[cand] >= thr[cand]]
            rf = r[f]
            r[f] = 0.0
            pi[f] += alpha * rf
            moving = damping * (float(rf.sum()) + float(r_q.sum()))
            if moving < tol or moving == 0.0 or steps >= max_iter:  # or nothing moves
                break
            # spread what moves on: S's rows of the pushed units (S is symmetric)
            cf = col[f]
            live = cf > 0
            fl = f[live]
            v = damping * rf[live] / cf[live]
            dang = damping * float(rf[~live].sum())
            ei = np.empty(0, np.int64)
            ev = np.empty(0)
            new_q = np.zeros(len(r_q))
            if bordered:  # units -> query nodes (B's rows), query nodes -> units and -> query
                qi, qv = gather(B.indptr, B.indices, B.data, fl, v)
                new_q += np.bincount(qi, weights=qv, minlength=m)
                vq = damping * r_q * inv_q
                dang += damping * float(r_q[~live_q].sum())
                hit = np.flatnonzero(vq != 0)
                ei, ev = gather(Bc.indptr, Bc.indices, Bc.data, hit, vq[hit])
                new_q += Qd @ vq
                if dang:  # the restart is on the query nodes
                    new_q += dang * p_q
                read += len(qi) + len(ei)
            elif dang:  # the restart is on the units
                ei, ev = pidx, dang * pval
            cost = int(k[fl].sum())
            if cost * GRAPH_DENSE_SHARE > S.nnz:  # most of the graph: one product over it
                dense = np.zeros(n)
                dense[fl] = v
                y = S @ dense
                np.add.at(y, ei, ev)
                r += y
                cand = None
                read += int(S.nnz)
            else:
                ui, uv = gather(S.indptr, S.indices, S.data, fl, v)
                read += len(ui)
                ui, uv = np.concatenate([ui, ei]), np.concatenate([uv, ev])
                if len(ui) * COUNT_SHARE > n:  # a dense count
                    r += np.bincount(ui, weights=uv, minlength=n)
                    cand = None
                else:
                    cand, add = sum_sparse(ui, uv)
                    r[cand] += add
            r_q = new_q
            steps += 1
        # the parked mass settles where it is (the series' first term of its own walk); only
        # what it would pass on is left out
        pi += alpha * r
        s["x"] = pi
        parked = damping * float(r.sum())
        record = walk_record("walk", "push", steps, moving + parked, parked=parked, read=read)
        return (float(pi.max()) if n else None), record


def graph_push_walk(scorer, sid, restart: str, scale, alpha: float, *, p_q=None, Q=None,
                    bcol=None, trace: list | None = None) -> float:  # fmt: skip
    """Personalized PageRank by forward push on the explicit (thresholded) graph of the one
    block of ``scorer`` (:class:`~longctx.mixpr.scoring.Scorer`): see
    :meth:`GraphPushBlock.graph_push_walk` for the arguments. The block keeps the result
    (``x``); returns its maximum over the units. Appends to ``trace`` the record
    ``{"stage": "walk", "solver": "push", "steps", "residual", "parked", "read"}``: the levels
    pushed, the mass not settled when it stopped (moving + parked, an L1 bound), the part of it
    parked on units below the push rule, and the entries of the graph read."""
    cfg = scorer.config
    out = scorer.backend.map(
        "graph_push_walk", sid, restart, scale, alpha, cfg.tol, cfg.max_iter,
        cfg.push_threshold, p_q, Q, bcol,
    )  # fmt: skip
    if len(out) != 1:
        raise ValueError("graph='threshold' is one block: it cannot be split into shards")
    top, record = out[0]
    if trace is not None:
        trace.append(record)
    return top if top is not None else 0.0
