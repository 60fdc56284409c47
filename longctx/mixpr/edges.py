"""The query's side of MixPR's scoring on one block of units (:class:`QueryEdgesBlock`, a part
of :class:`~longctx.mixpr.scoring.UnitBlock`): the query's edges ``B`` (the units' cosines to
the query chunks, thresholded, weighted by coverage, masked by the filters), the lexical and
dense cosines, the dense restart (the nearest units, or another retriever's hits given as
``seeds=``, :mod:`longctx.mixpr.seeds`) and the walk's restart weights.

Only the units holding a query term can have an edge or a lexical cosine, so ``B`` is kept
over those rows (session keys ``Brows``, ascending, and ``Bsub``), the lexical cosines as a
:class:`~longctx.selection.SparseScores` and the restart weights as ``(units, weights)``; the
``(n, m)`` matrix is built only for the walks that read it whole (:meth:`_full_B`).

Source: Alonso and Millidge, "Mixture-of-PageRanks" (arXiv:2412.06078), sec. 4 eq. 2 and 3
(the restart on the query's TF-IDF neighbours).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import scipy.sparse as sp

from longctx.mixpr.query import divide_by_top, query_edge_rows, reweight_query_terms
from longctx.selection import SparseScores, union_positions

__all__ = ["QueryEdgesBlock", "block_seeds"]


class QueryEdgesBlock:
    """The query's edges and the restart of one block (a mixin of
    :class:`~longctx.mixpr.scoring.UnitBlock`, which holds ``config``, ``stats``, ``E``, ``n``,
    ``keys``, ``unit_vectors`` and the sessions, ``_s(sid) -> dict``)."""

    def query_edges(self, sid, terms, Eqt, p_query, thr, bordered, qvec, seeds=None) -> dict:
        """The block's query edges ``B`` (``(n, m)``: cosines to the query chunks, thresholded,
        weighted by coverage, masked), its lexical cosines and dense cosines; returns the
        partial reductions the driver needs. ``seeds``: ``(keys (m,) int64, weights (m,))``,
        another retriever's hits mapped to units (:mod:`longctx.mixpr.seeds`): the block keeps
        those it holds (and the filter keeps) as ``seed`` (:func:`block_seeds`, sparse), the
        restart of the seeds' walk (:meth:`restart_seeds`); no dense cosines then.

        Only the units holding a query term can have an edge or a lexical cosine: ``B`` and the
        cosines are kept over those rows (``Brows``, ascending), so this costs the query terms'
        columns of ``E``, not a pass over the units (:meth:`_full_B` makes the ``(n, m)``
        matrix for the walks that need it)."""
        s = self._s(sid)
        cfg = self.config
        mask = s["mask"]
        rows, B, lexical, w = query_edge_rows(
            self._cols(), terms, Eqt, p_query, thr, cfg.coverage_power,
            keep=None if mask is None else mask.at,
            reweight=partial(reweight_query_terms, self.stats) if cfg.literal_query_weights else None,
            lexical=bool(cfg.lexical_weight),
        )  # fmt: skip
        dense = seed = None
        if seeds is not None:
            seed = block_seeds(self.keys, *seeds, mask)
        elif qvec is not None and self.unit_vectors is not None:
            dense = (self.unit_vectors @ qvec).astype(np.float64)
        lex = None if lexical is None else SparseScores(self.n, rows, lexical)
        s.update(Brows=rows, Bsub=B, Bw=w, lexical=lex, dense=dense, p_query=p_query, seed=seed)
        s.pop("B", None)
        # every cosine is >= 0: the units without a query term add 0 to the maxima
        lex_max = None
        if lexical is not None and self.n:
            lex_max = max(float(lexical.max()) if len(lexical) else 0.0, 0.0)
        out = {
            "nnz": int(B.nnz),
            "lex_max": lex_max,
            "dense_max": float(np.maximum(dense, 0.0).max())
            if dense is not None and self.n
            else None,
            "dense_cand": None,
            "wsum": float(w.sum()) if B.nnz else 0.0,  # (B @ p_query).sum()
            "bsum": float(B.data.sum()) if B.nnz else 0.0,  # B.sum()
            "seed_max": float(seed[1].max()) if seed is not None and len(seed[1]) else 0.0,
            "bcol": np.asarray(B.sum(axis=0)).ravel() if bordered else None,
        }
        if dense is not None and cfg.dense_restart:
            d = dense if mask is None else np.where(mask.dense(), dense, -np.inf)
            idx = np.flatnonzero(d > 0)
            top = idx[np.argsort(-d[idx], kind="stable")][: cfg.dense_top_k]
            out["dense_cand"] = (dense[top], self.keys[top])
        return out

    def _full_B(self, s) -> sp.csr_array:
        """The session's query edges as the ``(n, m)`` CSR matrix (built once a session from
        the rows :meth:`query_edges` kept; the power iteration and the bordered walks read it
        whole)."""
        B = s.get("B")
        if B is None:
            Bsub, rows = s["Bsub"], s["Brows"]
            counts = np.zeros(self.n, dtype=np.int64)
            counts[rows] = np.diff(Bsub.indptr)
            indptr = np.concatenate([[0], np.cumsum(counts)])
            B = sp.csr_array((Bsub.data, Bsub.indices, indptr), shape=(self.n, Bsub.shape[1]))
            s["B"] = B
        return B

    def _restart(self, s) -> np.ndarray:
        """``(n,)``: the restart weights of :meth:`restart_similarity` as a dense vector."""
        idx, vals = s["w"]
        w = np.zeros(self.n)
        w[idx] = vals
        return w

    def dense_select(self, sid, cut_value: float, cut_key: int, total: float) -> None:
        """The block's part of the dense restart: its units among the corpus's ``dense_top_k``
        nearest (those before ``(cut_value, cut_key)`` in the order by cosine, then position),
        in proportion to their cosine (``total``: the chosen cosines' sum)."""
        s = self._s(sid)
        dense, mask = s["dense"], s["mask"]
        keys = self.keys
        chosen = (dense > 0) & ((dense > cut_value) | ((dense == cut_value) & (keys <= cut_key)))
        if mask is not None:
            chosen &= mask.dense()
        w = np.zeros(self.n)
        w[chosen] = dense[chosen]
        s["dense_w"] = w / total

    def restart_similarity(self, sid, use_rowsum: bool, wsum: float, dense_restart: float):
        """The restart weights over the block's units (``personalization="similarity"``):
        ``B p_query`` (or ``B``'s row sums when the restart chunk links nowhere), divided by
        their corpus-wide sum ``wsum``, plus ``dense_restart`` times the dense restart. Kept as
        ``(units, weights)`` over the units with a non-zero weight; returns their sum (the
        driver normalizes)."""
        s = self._s(sid)
        # the edges are read once a session here (the walks from these weights never read B
        # again: only the bordered walk, which has no such restart, does): freed before the
        # walk's peak (issue 46, the first query after an open)
        B, rows = s.pop("Bsub"), s.pop("Brows")
        if use_rowsum:
            w = np.asarray(B.sum(axis=1)).ravel()
        else:
            w = s.pop("Bw") if B.nnz else np.zeros(len(rows))  # B @ p_query, read once
        w = w / wsum if wsum > 0 else w
        if dense_restart:  # hybrid mode: the dense restart spans the block
            full = np.zeros(self.n)
            full[rows] = w
            w, rows = full + dense_restart * s["dense_w"], None
        nz = np.flatnonzero(w != 0)
        s["w"] = (nz if rows is None else rows[nz], w[nz])
        return float(w.sum())

    def restart_seeds(self, sid) -> float:
        """The seeds' walk (``seeds=``): its restart weights are the seeds' own (``seed``,
        sparse); returns their sum (the driver normalizes). The walk's result is kept apart by
        :meth:`keep_seed_walk` before the question's walk runs."""
        s = self._s(sid)
        idx, w = s["seed"]
        s["w"] = (idx, w)
        return float(w.sum())

    def keep_seed_walk(self, sid) -> None:
        """Keep the seeds' walk (``x``) as ``seed_x``."""
        s = self._s(sid)
        s["seed_x"] = s.pop("x")

    def scores_max(self, sid) -> float:
        """The block's largest score (0 for an empty block)."""
        v = self._s(sid).get("scores")
        v = v.vals if isinstance(v, SparseScores) else v
        return float(v.max()) if v is not None and len(v) else 0.0

    def scores_seeded(self, sid, plain_top: float | None, seed_top: float) -> None:
        """The hybrid's score of each unit: MixPR's own score divided by its corpus-wide
        maximum ``plain_top`` (``None``: the question reached no unit, no such part) plus the
        seeds' walk divided by its maximum ``seed_top``. Sparse while both parts are (a
        push walk's), over the units either reached.

        Why two walks: the walk is linear in its restart, so one walk on the question's restart
        plus a share of the seeds' is that share of the seeds' walk added to MixPR's. The
        seeds' mass sits on the few units of the app's hits while the question's spreads over
        every unit it matches, so any fixed share (the embedding hybrid's ``dense_restart``,
        75% by default) let the seeds take the top ranks and pushed MixPR's own best units out
        of a small budget (``longctx bench`` HotpotQA, issue 45). Each walk divided by its own
        maximum (CombSUM over max-normalized scores: Fox and Shaw, "Combination of multiple
        searches", TREC-2, 1994) puts the best of each at 1 whatever either reaches, and a unit
        both find adds the two. On the multi-hop walk (a corpus of passages) the seeds are that
        walk's passage weights instead (HippoRAG 2's), and its first hop is MixPR's own score
        (kept as ``plain_scores``): adding the seeds' walk there too lost the bridge passages
        (``longctx bench`` hotpotqa-corpus, issue 45)."""
        s = self._s(sid)
        s["seed_tops"] = (plain_top, seed_top)  # for explain=True (longctx.mixpr.explain)
        sx, plain = s["seed_x"], s.get("scores") if plain_top is not None else None
        s["plain_scores"] = plain  # the multi-hop walk's first hop (MixPRIndex._multihop)
        parts = [(sx, seed_top)] + ([] if plain is None else [(plain, plain_top)])
        if all(isinstance(v, SparseScores) for v, _ in parts):
            if len(parts) == 2:
                idx, *where = union_positions(sx.idx, plain.idx)
            else:
                idx, where = sx.idx, [np.arange(len(sx.idx))]
            out = np.zeros(len(idx))
            for (v, top), at in zip(parts, where):
                out[at] += divide_by_top(v.vals, top)
            if s["mask"] is not None:
                out[~s["mask"].at(idx)] = 0.0
            s["scores"] = SparseScores(self.n, idx, out)
            return
        out = np.zeros(self.n)
        for v, top in parts:
            out += divide_by_top(v.dense() if isinstance(v, SparseScores) else v, top)
        if s["mask"] is not None:
            out[~s["mask"].dense()] = 0.0
        s["scores"] = out

    def add_dense_edges(self, sid, bsum: float) -> np.ndarray:
        """Bordered graph in hybrid mode: dense query edges beside the lexical ones (scaled by
        the corpus-wide sum ``bsum`` of ``B``); returns the block's new column sums of ``B``."""
        s = self._s(sid)
        B = self._full_B(s)
        s["B"] = sp.csr_array(B + sp.csr_array(np.outer(s["dense_w"], s["p_query"])) * bsum)
        return np.asarray(s["B"].sum(axis=0)).ravel()


def block_seeds(
    keys: np.ndarray, seed_keys: np.ndarray, weights: np.ndarray, mask=None
) -> tuple[np.ndarray, np.ndarray]:
    """``(positions (m,) int64 ascending, weights (m,) float64)``: the block's units whose keys
    are in ``seed_keys`` (ascending; binary search in the block's ascending ``keys``), with a
    positive weight and kept by the filter ``mask`` (a :class:`~longctx.mixpr.unit_filter.
    UnitFilter` or ``None``). Costs the
    seeds, not the block's units."""
    if not len(seed_keys) or not len(keys):
        return np.zeros(0, np.int64), np.zeros(0)
    pos = np.searchsorted(keys, seed_keys)
    ok = pos < len(keys)
    ok[ok] = keys[pos[ok]] == seed_keys[ok]
    ok &= np.asarray(weights) > 0
    pos, w = pos[ok].astype(np.int64), np.asarray(weights, np.float64)[ok]
    if mask is not None:
        keep = mask.at(pos)
        pos, w = pos[keep], w[keep]
    return pos, w
