"""MixPR's scoring pipeline, written once over blocks of units: one whole index is one block
(:class:`~longctx.mixpr.index.MixPRIndex`), a sharded index one block per shard
(:class:`~longctx.corpus.shards.index.ShardedMixPRIndex`), and both rank with the same code.

The pipeline (Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time,
Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4 eq. 2 and 3) splits into what each block
computes over its own units (:class:`UnitBlock`: the query's edges ``B``, the lexical cosine, the
coverage weights, the filter mask, the dense cosines, its part of every walk step, the final
scores) and what the driver (:class:`Scorer`) computes from the blocks' partial results: the
query's TF-IDF rows over the corpus-wide vocabulary, every global sum and maximum (the restart
normalization, the ``by_max`` normalizations, the dense top-k, the L1 convergence test) and, at
each step of the walk on the factored graph ``S = E W E^T``
(:class:`~longctx.mixpr.graph.FactoredGraph`), the one reduction of a term vector: each block
sends ``E_b^T v_b``, the driver sums them, multiplies by ``W`` and sends ``u`` back, each block
computes ``E_b u``. So a link between units of two blocks counts as one within a block, and the
scores equal those of one index over every unit up to float rounding (~1e-15).

A backend runs one method on every block and returns the results in block order
(:class:`LocalBlocks` in this process; :mod:`longctx.corpus.shards.index` adds Ray actors). Per-query
state lives on the blocks under a session id, so concurrent queries never mix. A block's query
edges and restart weights are computed in :mod:`longctx.mixpr.edges`, its push walks in
:mod:`longctx.mixpr.push` and :mod:`longctx.mixpr.push_graph` (the mixins of :class:`UnitBlock`).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time

import numpy as np
import scipy.sparse as sp

from longctx.filters import compile_filter, filter_digest
from longctx.mixpr.edges import QueryEdgesBlock
from longctx.mixpr.push import RESULT_SHARE, PushBlock, push_walk
from longctx.mixpr.push_graph import GraphPushBlock, graph_push_walk
from longctx.mixpr.query import (
    MAX_QUERY_CHUNKS,
    divide_by_top,
    personalization,
    query_weights,
    restart_reaching_units,
)
from longctx.mixpr.unit_filter import UnitFilter, document_starts
from longctx.selection import SparseScores, fewest_left, union_positions
from longctx.types import walk_record

logger = logging.getLogger(__name__)

__all__ = ["LocalBlocks", "Scorer", "UnitBlock", "normalized_query_vector", "term_weights"]

#: Most sessions a block keeps (a driver that died mid-query leaves one behind).
MAX_SESSIONS = 256
#: Most bytes of filters a block keeps (each a :class:`~longctx.mixpr.unit_filter.UnitFilter`,
#: counted with room for its ``(n,) bool`` mask, keyed by a 32-byte digest of its filter): the
#: oldest go first; a filter larger than this is not kept.
MAX_MASK_CACHE_BYTES = 64 << 20
_MASK_OVERHEAD = 256  # bytes of a cache entry besides the mask's data (key, array header)


def term_weights(idf: np.ndarray, power: float) -> np.ndarray | None:
    """``(n_terms,) float64``: how much each term links units in the factored graph,
    ``(idf / max idf) ** power`` (``None``: power 0, every term alike)."""
    if not power:
        return None
    top = float(idf.max()) if idf.size else 0.0
    return (idf / top) ** power if top > 0 else np.zeros_like(idf)


def normalized_query_vector(encoder, identity: dict, dim: int, query: str, query_vector=None):
    """The query's dense vector for hybrid mode, ``(dim,) float32`` with unit L2 norm (zeros for
    a zero vector): ``query_vector`` as given, else ``encoder.embed_query(query)``.

    Raises
    ------
    ValueError
        No vector and no encoder, a vector of another dimension, or non-finite values.
    """
    if query_vector is None:
        if encoder is None:
            raise ValueError(
                "this MixPR index holds unit vectors but no encoder to embed the query "
                f"(encoder {identity.get('name')!r}): pass query_vector= "
                "to search / score, or encoder= to from_texts / load"
            )
        query_vector = encoder.embed_query(query)
    q = np.asarray(query_vector, dtype=np.float32)
    if q.shape != (dim,):
        raise ValueError(f"query_vector must have shape ({dim},), got {q.shape}")
    if not np.isfinite(q).all():
        raise ValueError("query_vector must be finite")
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 0 else np.zeros(dim, np.float32)


def _sum(parts):
    """Sum of arrays (``None`` when they are ``None``); one part is returned as is, so a single
    block gives the very values of an unsplit computation."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    out = parts[0]
    if len(parts) > 1:
        out = out.copy()
        for p in parts[1:]:
            out += p
    return out


def _is_sparse(v) -> bool:
    return isinstance(v, SparseScores)


def _max(values) -> float:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else 0.0


class UnitBlock(QueryEdgesBlock, PushBlock, GraphPushBlock):
    """The units of one block as the scoring pipeline reads them (see the module doc).

    Parameters
    ----------
    config : MixPRConfig
    stats : TermStats or TermTable
        Corpus-wide statistics (``settings``, ``n_units``, ``df``, ``idf()``) over the columns of
        ``E``: the block's own table for a whole index, the gathered ones for a shard.
    E : (n, n_terms) float64 CSC
        The block's TF-IDF rows over the corpus-wide columns.
    unit_doc : (n,) int32 or int64
        Each unit's document (its position in ``metadata``).
    metadata : sequence of Mapping
        The block's documents' metadata, for filters.
    keys : (n,) int64, ascending, optional
        Each unit's position in the whole corpus (ties go to the smaller); ``0 .. n - 1`` by
        default.
    graph : FactoredGraph or ThresholdGraph, optional
        A whole index's graph (its ``colsum`` is used; a thresholded graph multiplies here, and
        cannot be split into blocks). Without it the column sums come from the driver
        (:meth:`colsum_partial`, :meth:`set_colsum`).
    unit_vectors : (n, dim) float32, optional
        Hybrid mode.
    counts : callable ``() -> (n,) int64``, optional
        The units' token counts (for token budgets), computed on first use.
    """

    def __init__(
        self,
        *,
        config,
        stats,
        E,
        unit_doc,
        metadata,
        keys=None,
        graph=None,
        unit_vectors=None,
        counts=None,
    ):
        self.config = config
        self.stats = stats
        self.E = E
        self._ET = E.T  # CSR view: E^T v is a gather over each term's units
        self.n = E.shape[0]
        self.unit_doc = unit_doc
        self.metadata = metadata
        self._keys = keys
        self.explicit = graph is not None and getattr(graph, "kind", "") == "threshold"
        self.graph = graph
        self.colsum = graph.colsum if graph is not None else None
        self.unit_vectors = unit_vectors
        self._counts = counts
        self.global_pr = None
        self._sessions: dict = {}
        self._masks: dict = {}
        self._mask_bytes = 0  # held by _masks, with _MASK_OVERHEAD an entry
        self._lock = threading.Lock()

    @property
    def keys(self) -> np.ndarray:
        if self._keys is None:
            self._keys = np.arange(self.n, dtype=np.int64)
        return self._keys

    def counts(self) -> np.ndarray:
        return self._counts() if callable(self._counts) else self._counts

    # -- query-independent --------------------------------------------------------------------
    def colsum_partial(self) -> np.ndarray:
        """``E_b^T 1``: ``(n_terms,)``, the block's part of the graph's column sums."""
        return self._ET @ np.ones(self.n)

    def set_colsum(self, u: np.ndarray) -> None:
        """Keep the block's column sums ``E_b (W E^T 1)`` (``u``: the reduced term vector)."""
        self.colsum = self.E @ u

    _starts = None

    def doc_starts(self) -> np.ndarray | None:
        """``(n_docs + 1,) int64``: each document's first unit in the block
        (:func:`~longctx.mixpr.unit_filter.document_starts`, once a block), or ``None`` when
        the units are not in document order."""
        if self._starts is None:
            self._starts = (document_starts(self.unit_doc, len(self.metadata)),)
        return self._starts[0]

    def mask(self, filters) -> UnitFilter | None:
        """The units of the documents ``filters`` keeps (``None``: no filter), as a
        :class:`~longctx.mixpr.unit_filter.UnitFilter`: the filter is asked once per document
        and the kept units are the kept documents' ranges, so this costs the documents and the
        units kept, not a pass over every unit; cached by the filter's digest
        (:func:`longctx.filters.filter_digest`; not for plain callables), at most
        :data:`MAX_MASK_CACHE_BYTES` of them."""
        pred = compile_filter(filters)
        if pred is None:
            return None
        key = filter_digest(filters)
        if key is not None:
            mask = self._masks.get(key)
            if mask is not None:
                return mask
        md = self.metadata
        docs = np.fromiter((bool(pred(m)) for m in md), bool, len(md))
        mask = UnitFilter(docs, self.unit_doc, self.doc_starts())
        size = mask.nbytes + _MASK_OVERHEAD
        if key is not None and size <= MAX_MASK_CACHE_BYTES:
            with self._lock:
                masks = self._masks
                while masks and self._mask_bytes + size > MAX_MASK_CACHE_BYTES:
                    self._mask_bytes -= masks.pop(next(iter(masks))).nbytes + _MASK_OVERHEAD
                if key not in masks:
                    masks[key] = mask
                    self._mask_bytes += size
        return mask

    def allowed(self, filters, with_counts: bool) -> tuple[int, int | None]:
        """``(units kept by filters, fewest tokens among them or None)``."""
        mask = self.mask(filters)
        n = self.n if mask is None else len(mask)
        low = None
        if with_counts and n:
            c = self.counts()
            low = int((c if mask is None else c[mask.units]).min())
        return n, low

    # -- sessions -----------------------------------------------------------------------------
    def open(self, sid, filters, with_counts: bool = False) -> tuple[int, int | None]:
        """Start session ``sid`` with the units ``filters`` keeps; returns :meth:`allowed`."""
        mask = self.mask(filters)
        with self._lock:
            while len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
            self._sessions[sid] = {"mask": mask}
        return self.allowed(filters, with_counts)

    def close(self, sid) -> None:
        with self._lock:
            self._sessions.pop(sid, None)

    def _s(self, sid) -> dict:
        try:
            return self._sessions[sid]
        except KeyError:
            raise RuntimeError(f"scoring session {sid!r} is unknown to this block") from None

    # -- the walk -----------------------------------------------------------------------------
    def walk_begin(self, sid, restart: str, scale, N: int, alpha: float, bordered: bool, fuse):
        """Start a walk of ``N`` nodes: the restart over the block's units (``"uniform"``:
        ``scale`` each; ``"weights"``: :meth:`restart_similarity`'s weights divided by
        ``scale``; ``"query"``: none, the restart is on the query nodes). Returns ``(whether
        the block has dangling units, the first step's partial when fuse else None)``."""
        s = self._s(sid)
        n = self.n
        if restart == "uniform":
            p = np.full(n, scale)
        elif restart == "weights":
            p = self._restart(s) / scale
        else:
            p = np.zeros(n)
        B = self._full_B(s) if bordered else None
        m = B.shape[1] if bordered else 0
        Bsum_rows = np.asarray(B.sum(axis=1)).ravel() if m else np.zeros(n)
        col = self.colsum + Bsum_rows
        inv = np.divide(1.0, col, out=np.zeros_like(col), where=col > 0)
        dangling = col == 0
        s.update(
            p=p, restart=alpha * p, damping=1.0 - alpha, inv=inv, dangling=dangling, m=m,
            x=np.full(n, 1.0 / N),
        )  # fmt: skip
        return bool(dangling.any()), (self.walk_partial(sid) if fuse else None)

    def walk_partial(self, sid):
        """The block's part of a walk step: ``(E_b^T v_b, B_b^T v_b, dangling mass)`` with
        ``v = x / column sums`` (a thresholded graph multiplies ``S v`` here and sends no term
        vector)."""
        s = self._s(sid)
        x = s["x"]
        v = x * s["inv"]
        if self.explicit:
            s["y"] = self.graph.matvec(v)
            t = None
        else:
            t = self._ET @ v
        b = s["B"].T @ v if s["m"] else None
        return t, b, float(x[s["dangling"]].sum())

    def walk_step(self, sid, u, vq, d, fuse: bool):
        """Finish a step: ``y = E_b u (+ B_b v_q) (+ d p)``, ``x = (1 - alpha) y + alpha p``;
        returns ``(||x - x_last||_1 over the block, max x over the block or None, the next
        step's partial or None)``."""
        s = self._s(sid)
        y = s.pop("y") if self.explicit else self.E @ u
        if s["m"]:
            y += s["B"] @ vq
        if d is not None:
            y += d * s["p"]
        x = s["damping"] * y + s["restart"]
        diff = float(np.abs(x - s["x"]).sum())
        s["x"] = x
        top = float(x.max()) if self.n else None
        return diff, top, (self.walk_partial(sid) if fuse else None)

    # -- scores -------------------------------------------------------------------------------
    def keep_global_pr(self, sid) -> None:
        """Keep the finished walk as the block's part of the global PageRank."""
        pr = self._s(sid)["x"]
        pr.setflags(write=False)
        self.global_pr = pr

    _global_order = None

    def global_order(self) -> np.ndarray:
        """``(n,) int64``, read-only: the units by global PageRank, best first, ties to the
        earlier unit (the order of :func:`~longctx.selection.select_top`); sorted once per
        block, on the first global query that asks for a top k."""
        if self._global_order is None:
            with self._lock:
                if self._global_order is None:
                    order = np.argsort(-self.global_pr, kind="stable").astype(np.int64)
                    order.setflags(write=False)
                    self._global_order = order
        return self._global_order

    def scores_global(self, sid, top: int | None = None) -> None:
        """The session's scores are the global PageRank (the units a filter leaves out score
        0). ``top``: only the best ``top`` kept units are wanted (a ``k`` selection), so the
        scores are a :class:`~longctx.selection.SparseScores` over them, read from
        :meth:`global_order` (``O(top)`` without a filter; with one, the order is read until
        ``top`` kept units are found); ``None``: the ``(n,)`` vector."""
        s = self._s(sid)
        mask, pr = s["mask"], self.global_pr
        if top is None:
            s["scores"] = self._masked(pr.copy(), mask)
            return
        order = self.global_order()
        if mask is None:
            pick = order[:top]
        else:
            parts, found, at, step = [], 0, 0, max(4 * top, 1024)
            while found < top and at < self.n:
                chunk = order[at : at + step]
                chunk = chunk[mask.at(chunk)]
                parts.append(chunk)
                found += len(chunk)
                at += step
                step *= 2
            pick = np.concatenate(parts)[:top] if parts else np.zeros(0, np.int64)
        pick = np.sort(pick)
        s["scores"] = SparseScores(self.n, pick, pr[pick])

    def scores_local(self, sid, pi_top: float, lex_top: float, dense_top: float) -> None:
        """The walk's scores divided by their corpus-wide maximum, plus ``lexical_weight`` times
        the lexical cosine and ``dense_weight`` times the dense one (each divided by its
        corpus-wide maximum); with both weights 0, the walk's probabilities. A push walk's
        scores stay sparse (:class:`~longctx.selection.SparseScores` over the units it reached
        and those holding a query term) while those are at most ``1 / RESULT_SHARE`` of the
        units; more of them, or the dense cosines (``dense_weight``), make them dense."""
        s = self._s(sid)
        cfg = self.config
        x, lexical, dense = s["x"], s["lexical"], s["dense"]
        s["tops"] = (pi_top, lex_top, dense_top)  # for explain=True (longctx.mixpr.explain)
        dense_w = dense is not None and cfg.dense_weight
        size = len(x.idx) + (0 if lexical is None else len(lexical.idx)) if _is_sparse(x) else 0
        if _is_sparse(x) and not dense_w and size * RESULT_SHARE <= self.n:
            if lexical is None:
                idx, scores = x.idx, x.vals.copy()
            else:
                # the dense sum's values: 0 / pi_top = 0 where the walk did not reach, and
                # adding 0 where no query term is leaves a score as it is
                idx, at_x, at_lex = union_positions(x.idx, lexical.idx)
                scores = np.zeros(len(idx))
                scores[at_x] = divide_by_top(x.vals, pi_top)
                scores[at_lex] += cfg.lexical_weight * divide_by_top(lexical.vals, lex_top)
            mask = s["mask"]
            if mask is not None:
                scores[~mask.at(idx)] = 0.0
            s["scores"] = SparseScores(self.n, idx, scores)
            return
        if _is_sparse(x):
            x = x.dense()
        scores = np.ascontiguousarray(x)
        if lexical is not None or dense_w:
            scores = divide_by_top(scores, pi_top)
            if _is_sparse(lexical):  # the units without a query term add 0
                scores[lexical.idx] += cfg.lexical_weight * divide_by_top(lexical.vals, lex_top)
            elif lexical is not None:
                scores += cfg.lexical_weight * divide_by_top(lexical, lex_top)
            if dense_w:
                scores += cfg.dense_weight * divide_by_top(np.maximum(dense, 0.0), dense_top)
        s["scores"] = self._masked(scores, s["mask"])

    @staticmethod
    def _masked(scores: np.ndarray, mask: UnitFilter | None) -> np.ndarray:
        """``scores`` (``(n,)``, changed in place) with the units ``mask`` leaves out at 0."""
        if mask is not None:
            scores[~mask.dense()] = 0.0
        return scores

    def take_scores(self, sid) -> np.ndarray:
        """``(n,) float64``: the session's scores of every unit."""
        scores = self._s(sid)["scores"]
        return scores.dense() if isinstance(scores, SparseScores) else scores

    def take_result(self, sid) -> np.ndarray | SparseScores:
        """The session's scores as they were computed: ``(n,) float64``, or
        :class:`~longctx.selection.SparseScores` after a push walk (no pass over the units)."""
        return self._s(sid)["scores"]

    def keys_of(self, sid=None) -> np.ndarray:
        return self.keys

    def candidates(self, sid, size: int, close: bool = False, with_counts: bool = True):
        """The block's best ``size`` units among those the filters keep (ties to the earlier
        unit): ``(local indices, keys, scores, token counts or None, fewest tokens among the
        kept units left out or None)``, by position; ``close``: end the session too;
        ``with_counts=False`` (a ``k`` selection): no token counts (``None``, ``None``), so a
        block whose units were never counted does not count them all for nothing. Sparse
        scores are picked from without a pass over the units (with a filter, over the units it
        keeps)."""
        from longctx.selection import select_top

        s = self._s(sid)
        if close:
            self.close(sid)
        scores, mask = s["scores"], s["mask"]
        allowed = None if mask is None else mask.units
        n_allowed = self.n if allowed is None else len(allowed)
        sub = scores
        if allowed is not None:
            sub = scores.restrict(allowed) if _is_sparse(scores) else scores[allowed]
        if size >= n_allowed:
            sel = np.arange(n_allowed)
        else:
            sel = select_top(sub, k=size)
        idx = sel if allowed is None else allowed[sel]
        counts = rest = None
        if with_counts and self._counts is not None:
            c = self.counts()
            counts = c[idx]
            if len(sel) < n_allowed:
                rest = self._fewest_left(c, allowed, idx)
        vals = scores.at(idx) if _is_sparse(scores) else scores[idx]
        return idx, self.keys[idx], vals, counts, rest

    _by_count = None

    def _fewest_left(self, c: np.ndarray, allowed, taken: np.ndarray) -> int:
        """The fewest tokens among the kept units not ``taken`` (:func:`fewest_left` over the
        units ordered by token count, kept once a block)."""
        if self._by_count is None:
            self._by_count = np.argsort(c, kind="stable")
        return fewest_left(c, self._by_count, allowed, taken)


class LocalBlocks:
    """Blocks in this process: ``map(method, *args)`` calls ``block.method(*args)`` on each."""

    fuse = False

    def __init__(self, blocks):
        self.blocks = list(blocks)

    def map(self, method: str, *args) -> list:
        return [getattr(b, method)(*args) for b in self.blocks]


_SESSION_IDS = itertools.count()


class Scorer:
    """The driver of the pipeline over a backend's blocks (see the module doc).

    Parameters
    ----------
    backend : LocalBlocks or a backend with the same ``map`` and ``fuse``
    config : MixPRConfig
    stats : TermStats or TermTable
        The corpus-wide statistics (the query's TF-IDF rows are computed over them).
    weights : (n_terms,) float64 or None
        ``W`` of the factored graph (:func:`term_weights`).
    n_units : int
        Units over all blocks.
    colsum_ready : bool
        Whether the blocks hold their column sums (a whole index's graph has them); else they
        are reduced on first use.
    term_sizes : ((n_terms,) float64, (n_terms,) int64), optional
        :meth:`term_sizes` when known (a saved index's, read at its load); else reduced on
        first use.
    """

    def __init__(
        self, backend, config, stats, weights, n_units: int, *, colsum_ready: bool, term_sizes=None
    ):
        self.backend = backend
        self.config = config
        self.stats = stats
        self.weights = weights
        self.n_units = int(n_units)
        self._colsum_ready = colsum_ready
        self._global_ready = False
        self._term_sizes = term_sizes
        self._lock = threading.Lock()

    def new_session(self) -> str:
        return f"q{next(_SESSION_IDS)}-{id(self):x}"

    # -- query-independent --------------------------------------------------------------------
    def _ensure_colsum(self) -> None:
        if self._colsum_ready:
            return
        t = _sum(self.backend.map("colsum_partial"))
        u = t * self.weights if self.weights is not None else t
        self.backend.map("set_colsum", u)
        self._colsum_ready = True

    def ensure_global_pagerank(self) -> None:
        """Have every block hold its part of the unit graph's PageRank (``alpha=0``, uniform
        restart), computed once."""
        if self._global_ready:
            return
        with self._lock:
            if self._global_ready:
                return
            self._ensure_colsum()
            sid = self.new_session()
            self.open(sid, None)
            try:
                if self.n_units:
                    self.walk(sid, "uniform", 1.0 / self.n_units, alpha=0.0)
                    self.backend.map("keep_global_pr", sid)
            finally:
                self.backend.map("close", sid)
            self._global_ready = True

    def term_sizes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(s, df)``, each ``(n_terms,)``: the column sums of ``E`` over every block
        (float64) and how many units hold each term (int64), reduced once (the push walk's
        rule, :mod:`longctx.mixpr.push`)."""
        if self._term_sizes is None:
            with self._lock:
                if self._term_sizes is None:
                    s = _sum(self.backend.map("colsum_partial"))
                    df = _sum(self.backend.map("term_df_partial"))
                    self._term_sizes = (s, df)
        return self._term_sizes

    def open(self, sid, filters, with_counts: bool = False) -> list:
        """Open session ``sid`` on every block (the units ``filters`` keeps); returns each
        block's ``(units kept, fewest tokens among them or None)``."""
        return self.backend.map("open", sid, filters, with_counts)

    # -- the walk -----------------------------------------------------------------------------
    def walk(self, sid, restart, scale, *, alpha, p_q=None, Q=None, bcol=None, trace=None) -> float:
        """Personalized PageRank by power iteration (eq. 2, networkx's conventions as
        :func:`longctx.mixpr.graph.personalized_pagerank`) on the unit graph, bordered with
        the query nodes when ``p_q`` is given (``[[S, B], [B^T, Q]]``), matrix-free: each step
        reduces the blocks' term vectors once. It stops when ``||x_t - x_{t-1}||_1 < tol``
        (the same bound at every corpus size) or after ``max_iter`` steps. The blocks keep the
        result (``x``); returns its maximum over the units. Appends to ``trace`` (a list) the
        record ``{"stage": "walk", "solver": "power", "steps", "residual"}`` (the last step's
        L1 change).

        Each step is a product over every unit's row of ``E`` (and of ``B``): the power
        iteration reads the whole graph per step by nature. It serves the global PageRank
        (once per version of the index), the bordered walk (``personalization="query"``) and
        ``solver="power"``; local queries take the push walk (:mod:`longctx.mixpr.push`)."""
        cfg = self.config
        backend = self.backend
        m = 0 if p_q is None else len(p_q)
        N = self.n_units + m
        fuse = backend.fuse
        begun = backend.map("walk_begin", sid, restart, scale, N, alpha, bool(m), fuse)
        any_d = any(b[0] for b in begun)
        if m:
            col_q = bcol + Q.sum(axis=0)
            inv_q = np.divide(1.0, col_q, out=np.zeros_like(col_q), where=col_q > 0)
            dang_q = col_q == 0
            any_d = any_d or bool(dang_q.any())
            x_q = np.full(m, 1.0 / N)
        parts = [b[1] for b in begun] if fuse else backend.map("walk_partial", sid)
        damping = 1.0 - alpha
        for it in range(cfg.max_iter):
            t = _sum([p[0] for p in parts])
            u = None if t is None else (t * self.weights if self.weights is not None else t)
            d = sum(p[2] for p in parts)
            vq = None
            diff_q = 0.0
            if m:
                d += float(x_q[dang_q].sum())
                vq = x_q * inv_q
                y_q = _sum([p[1] for p in parts]) + Q @ vq
                if any_d:
                    y_q += d * p_q
                x_q_new = damping * y_q + alpha * p_q
                diff_q = float(np.abs(x_q_new - x_q).sum())
                x_q = x_q_new
            last = it == cfg.max_iter - 1
            res = backend.map("walk_step", sid, u, vq, d if any_d else None, fuse and not last)
            diff = sum(r[0] for r in res) + diff_q
            if diff < cfg.tol or diff == 0.0 or last:  # or a fixed point (tol=0)
                if trace is not None:
                    trace.append(walk_record("walk", "power", it + 1, diff))
                return _max(r[1] for r in res)
            parts = [r[2] for r in res] if fuse else backend.map("walk_partial", sid)
        return 0.0  # max_iter >= 1: not reached

    # -- a query ------------------------------------------------------------------------------
    def score(
        self, sid, query: str, mode: str, qvec, filters, trace=None, seeds=None, top=None
    ) -> tuple[str, dict]:
        """Score every unit for ``query`` (``mode`` ``"local"`` or ``"global"``): the blocks
        keep their scores in session ``sid`` (opened with :meth:`open` with the same
        ``filters``; the caller closes it). ``qvec``: the
        query's normalized dense vector (hybrid mode) or ``None``. Returns ``(mode used,
        timings)``; the mode used is ``"global-fallback"`` when a local query reaches no unit.
        ``trace``: a list to which the walk appends its record (steps, residual).
        ``seeds``: ``(keys, weights)`` of another retriever's hits (:mod:`longctx.mixpr.seeds`),
        in place of ``qvec``: they restart a walk of their own, added to MixPR's, each divided
        by its maximum
        (:meth:`~longctx.mixpr.edges.QueryEdgesBlock.scores_seeded`).
        ``top``: the caller selects the best ``top`` units (a ``k`` selection over one block),
        so a global query keeps only those (:meth:`UnitBlock.scores_global`: it costs its top
        ``k``, not a pass over the units); ``None``: every unit's score.
        """
        backend = self.backend
        cfg = self.config
        timings: dict = {}
        if mode == "global":
            t0 = time.perf_counter()
            self.ensure_global_pagerank()
            backend.map("scores_global", sid, top)
            timings["rank"] = time.perf_counter() - t0
            return mode, timings
        t0 = time.perf_counter()
        qchunks = [query[a:b] for a, b in cfg.chunk(query)] or [query]
        if len(qchunks) > MAX_QUERY_CHUNKS:
            logger.info(
                "MixPR: the query splits into %d chunks; its last %d are the query nodes",
                len(qchunks),
                MAX_QUERY_CHUNKS,
            )
            qchunks = qchunks[-MAX_QUERY_CHUNKS:]
        bordered = cfg.personalization == "query"
        Eq, Q = query_weights(self.stats, qchunks, with_q=bordered)
        thr = cfg.effective_query_threshold
        # (n, m) query-chunk similarities: only the columns of the query's terms are read.
        terms = np.unique(Eq.indices)
        # Eq[:, terms] without scipy's pass over every column
        Eqt = sp.csr_array(
            (Eq.data, np.searchsorted(terms, Eq.indices), Eq.indptr),
            shape=(len(qchunks), len(terms)),
        )
        p_query = personalization(len(qchunks), qchunks)
        edges = backend.map("query_edges", sid, terms, Eqt, p_query, thr, bordered, qvec, seeds)
        nnz = sum(e["nnz"] for e in edges)
        # the query's TF-IDF rows and its edges to the units: no model runs here (a hybrid
        # query's dense vector, embedded by the caller, is its "embed_query")
        timings["query_edges"] = time.perf_counter() - t0
        dense_w = False
        # (walk="multihop": the dense cosines and the seeds seed the multi-hop walk, not this
        # first hop)
        seed_max = _max(e["seed_max"] for e in edges) if seeds is not None else None
        if cfg.walk == "multihop" or not seed_max:
            seed_max = None
        if qvec is not None and cfg.dense_restart and cfg.walk != "multihop":
            dense_w = self._dense_restart(sid, [e["dense_cand"] for e in edges])
        if bordered and nnz and not dense_w:  # a restart that reaches no unit: moved
            p_reach = restart_reaching_units(p_query, Q, _sum([e["bcol"] for e in edges]), thr)
            if p_reach is not p_query:  # the blocks keep the restart (their edges, explain)
                logger.info("MixPR: restart moved to the query nodes with edges (%.80r)", query)
                p_query = p_reach
                args = (terms, Eqt, p_query, thr, bordered, qvec, seeds)
                edges = backend.map("query_edges", sid, *args)
        seed_top = None
        if seed_max is not None:  # the seeds' own walk first, kept apart (scores_seeded)
            total = sum(backend.map("restart_seeds", sid))
            self._ensure_colsum()
            seed_top = self._walk_weights(sid, total, trace)
            backend.map("keep_seed_walk", sid)
        if nnz == 0 and not dense_w and seed_top is not None:
            backend.map("scores_seeded", sid, None, seed_top)
            return "local", timings
        if nnz == 0 and not dense_w:
            logger.info(
                "MixPR: no unit reaches query_threshold=%.3g for query %.80r; "
                "using PageRank (global mode)",
                thr,
                query,
            )
            self.ensure_global_pagerank()
            backend.map("scores_global", sid, top)
            return "global-fallback", timings
        t0 = time.perf_counter()
        self._ensure_colsum()
        if not bordered or nnz == 0:
            # restart over the units by their similarity to the query; the query is no node
            # of the walk (it would be a hub joining every unit that shares a query term)
            wsum = sum(e["wsum"] for e in edges)
            use_rowsum = bool(nnz) and wsum <= 0  # the restart query chunk links nowhere
            if use_rowsum:
                wsum = sum(e["bsum"] for e in edges)
            dr = cfg.dense_restart if dense_w else 0.0
            total = sum(backend.map("restart_similarity", sid, use_rowsum, wsum, dr))
            pi_top = self._walk_weights(sid, total, trace, terms)
        else:
            Q = np.where(Q >= thr, Q, 0.0)
            if dense_w:  # dense query edges next to the lexical ones
                bsum = sum(e["bsum"] for e in edges)
                bcol = _sum(backend.map("add_dense_edges", sid, bsum))
            else:
                bcol = _sum([e["bcol"] for e in edges])
            if cfg.solver == "push" and cfg.graph == "threshold":  # mass-bounded walk
                pi_top = graph_push_walk(
                    self, sid, "query", None, cfg.alpha_local, p_q=p_query, Q=Q, bcol=bcol,
                    trace=trace,
                )  # fmt: skip
            else:
                pi_top = self.walk(
                    sid, "query", None, alpha=cfg.alpha_local, p_q=p_query, Q=Q, bcol=bcol,
                    trace=trace,
                )  # fmt: skip
        lex_top = _max(e["lex_max"] for e in edges)
        dense_top = _max(e["dense_max"] for e in edges)
        backend.map("scores_local", sid, pi_top, lex_top, dense_top)
        if seed_top is not None:
            plain_top = _max(backend.map("scores_max", sid))
            backend.map("scores_seeded", sid, plain_top, seed_top)
        timings["rank"] = time.perf_counter() - t0
        return "local", timings

    def _walk_weights(self, sid, total: float, trace, query_terms=None) -> float:
        """The walk from the restart weights the blocks hold (``w``, summing to ``total``) by
        the configured solver; returns its maximum over the units. ``query_terms``: the
        query's own term columns, which keep the push's plain first-level rule
        (:func:`~longctx.mixpr.push.push_walk`; ``None``: every term of the first level)."""
        cfg = self.config
        if cfg.solver == "push" and cfg.graph == "factored":  # mass-bounded walk
            return push_walk(self, sid, total, cfg.alpha_local, trace, query_terms)
        if cfg.solver == "push":  # the same on the explicit (thresholded) graph
            return graph_push_walk(self, sid, "weights", total, cfg.alpha_local, trace=trace)
        return self.walk(sid, "weights", total, alpha=cfg.alpha_local, trace=trace)

    def _dense_restart(self, sid, cands) -> bool:
        """The ``dense_top_k`` nearest units of the corpus (positive cosine, among the kept
        units; ties to the earlier unit) from each block's own best; tells the blocks which.
        Returns whether any unit is near."""
        top = self.config.dense_top_k
        cands = [c for c in cands if c is not None and len(c[0])]
        if not cands:
            return False
        vals = np.concatenate([c[0] for c in cands])
        keys = np.concatenate([c[1] for c in cands])
        order = np.lexsort((keys, -vals))[:top]
        total = float(vals[order[np.argsort(keys[order])]].sum())  # summed in unit order
        last = order[-1]
        self.backend.map("dense_select", sid, float(vals[last]), int(keys[last]), total)
        return True
