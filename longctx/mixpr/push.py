"""Personalized PageRank by forward push over the factored unit graph ``S = E W E^T``: a walk
whose cost is set by the mass it moves, not by the number of units.

The walk of a local query restarts on the few units that match the query
(:class:`~longctx.mixpr.scoring.Scorer`, ``personalization="similarity"``). Its solution is the
series ``pi = alpha sum_t M^t p`` with ``M x = (1 - alpha) (A x + dangling(x) p)`` and
``A = S D^{-1}`` (networkx's conventions, as
:func:`~longctx.mixpr.graph.personalized_pagerank`). The power iteration computes each step
over every unit; here each level of the series is kept sparse, as in forward push (Andersen,
Chung and Lang, "Local graph partitioning using PageRank vectors", FOCS 2006, sec. 3; Lofgren,
Banerjee and Goel, "Personalized PageRank Estimation and Search: A Bidirectional Approach"
(BiPPR), WSDM 2016, sec. 2), pushed level by level (synchronously) through the bipartite
graph units -> terms -> units without forming ``S``:

1. each unit ``i`` of the frontier keeps ``alpha r_i`` (it *settles*) and sends
   ``(1 - alpha) r_i`` to its terms, ``E_ij (1 - alpha) r_i / D_i`` to term ``j`` (a unit
   with no term sends it to the restart, as networkx does with dangling nodes);
2. a term ``j`` holding ``t_j`` passes ``w_j t_j E_kj`` to each of its units ``k``: the mass
   ``m_j = w_j t_j s_j`` in all (``s_j``: the column sum of ``E``). A term is pushed only when
   ``m_j >= push_threshold * df_j``, i.e. when each of its ``df_j`` units would get about
   ``push_threshold`` or more (Andersen et al.'s rule ``r(u) >= eps d(u)``): terms so common
   that they link everything carry ``w_j = (idf_j / max idf) ** 4``, tiny, so their mass
   stays *parked* on the term (it is pushed later if more arrives) and never costs a pass over
   their units. Parked mass is never lost from the account: the residual reported is the mass
   still moving plus the mass parked. Except for the query's own terms at the first level, the
   rule is ``m_j >= push_threshold * df_j ** push_df_power`` (1.5 by default): the restart
   units' other terms and the mass left after a level spread over tens of thousands of units
   through common terms, which moves no unit of a prose query's top 100 but read most of ``E``;
   a term held by a few units (Hash-Hop's links) is pushed about as before.

The walk stops when the mass still moving is below ``tol`` (an L1 bound on a probability
vector: the same at every corpus size), when nothing moves any more, or after ``max_iter``
levels. ``tol`` bounds the moving mass only, not the mass parked: that is bounded by
``push_threshold`` (each parked term holds less than ``push_threshold * df_j``) and reported in
the trace (``parked``; with the defaults about 0.009 on War and Peace, whose top 100 is the
exact walk's all the same, issue 44). ``push_threshold=0`` parks nothing, and ``tol`` then
bounds all the mass not settled. A level costs the
non-zeros of ``E`` in the frontier's rows and in the pushed terms' columns, so a query that
reaches a handful of units costs a handful of reads however large the corpus.

Blocks (shards) each hold their own units: a block settles and sends its units' term mass,
the driver sums the term vectors of all blocks, decides which terms are pushed and sends
them back, each block spreads them over its own units. So the push works through the same
block structure as the power iteration (:mod:`longctx.mixpr.scoring`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from longctx.selection import SparseScores, _find
from longctx.types import walk_record

try:  # scipy's compiled row gather (what ``csr_array[rows]`` runs), without building a matrix
    from scipy.sparse._sparsetools import csr_row_index
except ImportError:  # a scipy that moved it: the same gather in numpy
    csr_row_index = None

__all__ = ["PushBlock", "gather", "push_walk", "sum_sparse", "take_rows"]

#: A level whose reads exceed ``1 / DENSE_SHARE`` of ``E``'s non-zeros is done as one product
#: over ``E``: a walk that reaches most of a small corpus costs no more than the power
#: iteration's step. Gathering an entry costs about four times its share of the product
#: (Gutenberg, 20 questions: 2 -> 4 took the 10M-word query from 23.3 to 18.3 ms CPU, 1M words
#: 4.2 -> 3.8 ms); both add each unit's and each term's entries in the same order, so the
#: scores are the same bit for bit.
DENSE_SHARE = 4
#: Sums of more than ``1 / COUNT_SHARE`` of the vector's size are made by a dense count.
COUNT_SHARE = 16


def take_rows(indptr, indices, data, sel: np.ndarray):
    """The non-zeros of the compressed rows (or columns) ``sel`` of a CSR (CSC) matrix:
    ``(indices (nnz,), values (nnz,) data's dtype, each row's length (k,))``, in the rows'
    order. Costs the selected rows' non-zeros, not the matrix's."""
    starts = indptr[sel]
    lens = indptr[sel + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, indices.dtype), np.empty(0, data.dtype), lens
    if csr_row_index is None:
        offsets = np.cumsum(lens) - lens
        pos = np.repeat(starts - offsets, lens) + np.arange(total)
        return indices[pos], data[pos], lens
    out_i = np.empty(total, indices.dtype)
    out_d = np.empty(total, data.dtype)
    csr_row_index(len(sel), sel.astype(indptr.dtype, copy=False), indptr, indices, data,
                  out_i, out_d)  # fmt: skip
    return out_i, out_d, lens


def gather(indptr, indices, data, sel: np.ndarray, weights: np.ndarray):
    """The non-zeros of the compressed rows (or columns) ``sel`` of a CSR (CSC) matrix, each
    multiplied by its row's weight: ``(indices (nnz,) int, values (nnz,) float64)``. Costs the
    selected rows' non-zeros, not the matrix's (:func:`take_rows`)."""
    out_i, out_d, lens = take_rows(indptr, indices, data, sel)
    if not len(out_i):
        return out_i, np.empty(0)
    if csr_row_index is None:  # numpy's gather: a float64 product, as before
        return out_i, out_d * np.repeat(weights, lens)
    out_d *= np.repeat(weights, lens)
    return out_i, out_d


def sum_sparse(idx: np.ndarray, val: np.ndarray, size: int | None = None):
    """Sum duplicate indices: ``(unique indices ascending (k,) int64, their summed values (k,)
    float64)``; each index's entries are added in their order. The one way the walks (this
    module, :mod:`~longctx.mixpr.push_graph`, :mod:`~longctx.mixpr.multihop_push`) sum a
    sparse vector's duplicates: no state kept between calls.

    With ``size`` (the indices' bound) and more than ``size / COUNT_SHARE`` entries, by a dense
    count (``O(size)``, i.e. at most ``COUNT_SHARE`` times the entries; no sort; indices whose
    sum is 0 are left out); otherwise by a sort of the entries (``np.unique``). On the walks'
    own sums this was faster than a position table (one ``(size,)`` array a query, filled at
    ``O(size)``: 6 ms at ``size = 1e7``), whose sums it replaced in the multi-hop push."""
    if not len(idx):
        return np.empty(0, np.int64), np.empty(0)
    if size is not None and len(idx) * COUNT_SHARE > size:
        total = np.bincount(idx, weights=val, minlength=size)
        u = np.flatnonzero(total)
        return u, total[u]
    u, inv = np.unique(idx, return_inverse=True)
    return u.astype(np.int64, copy=False), np.bincount(inv, weights=val, minlength=len(u))


class PushBlock:
    """The block's part of the push walk (mixed into :class:`~longctx.mixpr.scoring.UnitBlock`,
    which provides ``E`` (CSC), ``colsum``, ``n``, ``_s`` and ``_lock``)."""

    _E_rows = None

    def set_rows(self, rows) -> None:
        """Give the block ``E`` by rows (``(n, n_terms)`` CSR holding ``E``'s entries: a saved
        index's, mapped, or the CSR form its term table made ``E`` from; or a
        :class:`~longctx.mixpr.counts.CountRows` making them from the counts), so that
        :meth:`_rows` never builds a copy. ``ValueError`` when its shape or entry count is not
        ``E``'s."""
        if not hasattr(rows, "gather"):  # a CountRows is kept as it is
            rows = sp.csr_array(rows)  # no copy of a CSR array
        if rows.shape != self.E.shape or rows.nnz != self.E.nnz:
            raise ValueError(
                f"rows: shape {rows.shape} with {rows.nnz} entries, E has {self.E.shape} "
                f"with {self.E.nnz}"
            )
        self._E_rows = rows

    def _rows(self):
        """``E`` by rows (a unit's terms): ``(n, n_terms)`` CSR, or the
        :class:`~longctx.mixpr.counts.CountRows` given by :meth:`set_rows` (``indptr``,
        ``indices``, ``nnz``, ``shape`` and ``gather``); built on first use."""
        if self._E_rows is None:
            with self._lock:
                if self._E_rows is None:
                    self._E_rows = sp.csr_array(self.E)
        return self._E_rows

    def _rows_csr(self) -> sp.csr_array:
        """``E`` by rows as a CSR array (made from the counts, a copy, when the block holds a
        ``CountRows``): for ``explain=True``."""
        rows = self._rows()
        return rows.csr() if hasattr(rows, "gather") else rows

    def _cols(self) -> sp.csc_array:
        """``E`` by columns (a term's units): ``(n, n_terms)`` CSC."""
        E = self.E
        return E if E.format == "csc" else sp.csc_array(E)

    def term_df_partial(self) -> np.ndarray:
        """``(n_terms,) int64``: how many of the block's units hold each term."""
        return np.diff(self._cols().indptr).astype(np.int64)

    def push_begin(self, sid, scale: float, alpha: float):
        """Start the push walk from the restart weights of :meth:`restart_similarity`
        (divided by ``scale``); settles the first level and returns its term partial
        (:meth:`_push_emit`)."""
        s = self._s(sid)
        idx, w = s["w"]
        r = w / scale
        s.update(push_p=(idx, r), push_alpha=alpha, pi=([], []))
        return self._push_emit(s, idx, r)

    def _push_emit(self, s, idx, r):
        """Settle ``alpha r`` on the frontier ``idx`` and send the rest on: returns
        ``(terms, term mass t, dangling mass, mass moving, entries read)``."""
        alpha = s["push_alpha"]
        s["pi"][0].append(idx)  # settled, summed by unit at the end (push_finish)
        s["pi"][1].append(alpha * r)
        moving = (1.0 - alpha) * r
        col = self.colsum[idx]
        live = col > 0
        dang = float(moving[~live].sum())
        E = self._rows()
        rows, v = idx[live], moving[live] / col[live]
        n_terms = E.shape[1]
        read = int((E.indptr[rows + 1] - E.indptr[rows]).sum())
        if read * DENSE_SHARE > E.nnz:  # most of the block: one product over E
            dense = np.zeros(self.n)
            dense[rows] = v
            t = self._ET @ dense
            terms = np.flatnonzero(t)
            return terms, t[terms], dang, float(moving.sum()), int(E.nnz)
        if hasattr(E, "gather"):  # values made from the counts (CountRows): the same
            terms, vals = E.gather(rows, v)
        else:
            terms, vals = gather(E.indptr, E.indices, E.data, rows, v)
        terms, vals = sum_sparse(terms, vals, n_terms)
        return terms, vals, dang, float(moving.sum()), read

    def _push_emit_dense(self, s, y: np.ndarray):
        """:meth:`_push_emit` of a level held as the ``(n,)`` vector ``y`` (a level spread by
        one product over ``E``): when its frontier's rows are most of ``E`` too, it settles
        and sends on by vector operations over the block (no gather of the frontier's
        entries, the same values); otherwise it takes the frontier's units and
        :meth:`_push_emit`."""
        E = self._rows()
        live = self.colsum > 0
        reached = y != 0
        read = int(np.diff(E.indptr)[reached & live].sum())
        if read * DENSE_SHARE <= E.nnz:
            idx = np.flatnonzero(reached)
            return self._push_emit(s, idx, y[idx])
        alpha = s["push_alpha"]
        s["pi"][0].append(None)  # a level over the block: summed as a vector (push_finish)
        s["pi"][1].append(alpha * y)
        moving = (1.0 - alpha) * y
        dang = float(moving[~live].sum())
        v = np.divide(moving, self.colsum, out=np.zeros(self.n), where=live)
        t = self._ET @ v
        terms = np.flatnonzero(t)
        return terms, t[terms], dang, float(moving.sum()), int(E.nnz)

    def push_step(self, sid, terms: np.ndarray, u: np.ndarray, dangling: float):
        """One level: spread the pushed terms' mass ``u`` (``w_j t_j``) over the block's units
        holding them, and the dangling mass over the restart; then settle and emit the next
        level (:meth:`_push_emit`)."""
        s = self._s(sid)
        E = self._cols()
        read = int((E.indptr[terms + 1] - E.indptr[terms]).sum())
        pidx, pval = s["push_p"]
        if read * DENSE_SHARE > E.nnz:  # most of the block: one product over E
            dense = np.zeros(E.shape[1])
            dense[terms] = u
            y = E @ dense
            if dangling:
                y[pidx] += dangling * pval
            out = self._push_emit_dense(s, y)
            return (*out[:4], out[4] + int(E.nnz))
        else:
            units, vals = gather(E.indptr, E.indices, E.data, terms, u)
            if dangling:
                units = np.concatenate([units, pidx])
                vals = np.concatenate([vals, dangling * pval])
            idx, r = sum_sparse(units, vals, self.n)
        out = self._push_emit(s, idx, r)
        return (*out[:4], out[4] + read)

    def push_finish(self, sid):
        """The walk's scores are the settled mass: ``x`` of the session (each unit's levels
        summed in order, as a dense accumulation would): a
        :class:`~longctx.selection.SparseScores` over the units the walk reached, or the
        ``(n,)`` vector when it settled on more than ``1 / COUNT_SHARE`` of the units (sorting
        that many would cost more than one pass). Returns its maximum over the block (or None
        for an empty block)."""
        s = self._s(sid)
        idx, vals = s.pop("pi")
        if any(i is None for i in idx):  # a level over the block: add the levels in order
            x = np.zeros(self.n)
            for i, v in zip(idx, vals):
                if i is None:
                    x += v
                else:
                    x[i] += v  # a level's units are distinct
            nz = np.flatnonzero(x)
            s["x"] = x if len(nz) * COUNT_SHARE > self.n else SparseScores(self.n, nz, x[nz])
            return float(x.max()) if self.n else None
        idx = np.concatenate(idx) if idx else np.zeros(0, np.int64)
        vals = np.concatenate(vals) if vals else np.zeros(0)
        if len(idx) * COUNT_SHARE > self.n:
            s["x"] = np.bincount(idx, weights=vals, minlength=self.n)
            return float(s["x"].max()) if self.n else None
        idx, vals = sum_sparse(idx, vals)
        s["x"] = SparseScores(self.n, idx, vals)
        # settled mass is >= 0: the units not reached add 0 to the maximum
        return max(float(vals.max()) if len(vals) else 0.0, 0.0) if self.n else None


def _members(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """``(len(values),) bool``: whether each of ``values`` is in ``sorted_keys`` (ascending)."""
    return _find(sorted_keys, values)[1]


def push_walk(
    scorer, sid, scale: float, alpha: float, trace: list | None = None, query_terms=None
) -> float:
    """Personalized PageRank by forward push on the blocks of ``scorer``
    (:class:`~longctx.mixpr.scoring.Scorer`), restarting on the weights each block holds from
    ``restart_similarity`` (their sum over the corpus: ``scale``). The blocks keep the result
    (``x``); returns its maximum over the units. Appends to ``trace`` the record
    ``{"stage": "walk", "solver": "push", "steps", "residual", "parked", "read"}``: the levels
    pushed, the mass not settled when it stopped (moving + parked, an L1 bound), the part of
    it parked on terms too common to push, and the entries of ``E`` read.

    ``query_terms`` (``(q,) int64`` ascending, the query's own terms' columns): at the first
    level they alone keep the rule ``m_j >= push_threshold * df_j``, and every other term
    needs ``push_threshold * df_j ** push_df_power`` as at the later levels; ``None``: every
    term of the first level keeps the plain rule."""
    cfg = scorer.config
    backend = scorer.backend
    s_j, df_j = scorer.term_sizes()
    w = scorer.weights
    eps = cfg.push_threshold
    power = cfg.push_df_power
    parts = backend.map("push_begin", sid, scale, alpha)
    park_t = np.empty(0, np.int64)
    park_v = np.empty(0)
    steps = 0
    read = sum(p[4] for p in parts)
    moving = sum(p[3] for p in parts)
    # stop below tol, or when nothing moves (tol=0 ran max_iter empty levels: issue 44)
    while moving >= cfg.tol and moving > 0 and steps < cfg.max_iter:
        terms, t = sum_sparse(
            np.concatenate([park_t, *(p[0] for p in parts)]),
            np.concatenate([park_v, *(p[1] for p in parts)]),
            len(s_j),
        )
        dangling = sum(p[2] for p in parts)
        u = t if w is None else t * w[terms]
        df = df_j[terms]
        if power != 1.0 and (steps or query_terms is not None):
            strict = df.astype(np.float64) ** power
            if not steps:  # the first level: the query's own terms keep the plain rule
                own = _members(terms, query_terms)
                strict[own] = df[own]
            df = strict
        push = u * s_j[terms] >= eps * df
        park_t, park_v = terms[~push], t[~push]
        parts = backend.map("push_step", sid, terms[push], u[push], dangling)
        steps += 1
        read += sum(p[4] for p in parts)
        moving = sum(p[3] for p in parts)
    parked = 0.0
    if len(park_t):
        parked = float(((park_v if w is None else park_v * w[park_t]) * s_j[park_t]).sum())
    tops = [m for m in backend.map("push_finish", sid) if m is not None]
    if trace is not None:
        trace.append(walk_record("walk", "push", steps, moving + parked, parked=parked, read=read))
    return max(tops) if tops else 0.0
