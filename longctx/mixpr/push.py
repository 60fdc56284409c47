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
    from scipy.sparse._sparsetools import csc_matvec, csr_row_index
except ImportError:  # a scipy that moved them: the same gather in numpy
    csc_matvec = csr_row_index = None


def _fuses_multiply_add(matvec) -> bool:
    """Whether ``matvec`` (scipy's ``csc_matvec``) computes ``y += a * x`` with one rounding
    (a fused multiply-add, as compilers may emit on arm64), which would make
    :func:`gather_summed`'s sums differ in the last bit from numpy's product then sum: with
    ``a = x = 1 + 2**-30`` and ``y = -(1 + 2**-29)``, two roundings give 0, one gives 2**-60."""
    a = np.array([1.0 + 2.0**-30])
    y = np.array([-(1.0 + 2.0**-29)])
    ptr, idx = np.array([0, 1], np.int32), np.array([0], np.int32)
    matvec(1, 1, ptr, idx, a, a.copy(), y)
    return bool(y[0] != float(np.float64(a[0] * a[0]) + -(1.0 + 2.0**-29)))


if csc_matvec is not None and _fuses_multiply_add(csc_matvec):
    # the blocked gather would change sums in the last bit: gather then sum_sparse instead
    csc_matvec = None

__all__ = [
    "PushBlock",
    "finish_walk",
    "gather",
    "gather_summed",
    "is_count_rows",
    "push_walk",
    "sort_order",
    "spans",
    "strict_limits",
    "sum_sparse",
    "take_rows",
    "unique_positions",
]

#: A level whose reads exceed ``1 / DENSE_SHARE`` of ``E``'s non-zeros is done as one product
#: over ``E``: a walk that reaches most of a small corpus costs no more than the power
#: iteration's step. Gathering an entry costs about four times its share of the product
#: (Gutenberg, 20 questions: 2 -> 4 took the 10M-word query from 23.3 to 18.3 ms CPU, 1M words
#: 4.2 -> 3.8 ms); both add each unit's and each term's entries in the same order, so the
#: scores are the same bit for bit.
DENSE_SHARE = 4
#: Sums of more than ``1 / COUNT_SHARE`` of the vector's size are made by a dense count.
COUNT_SHARE = 16
#: The walk's result (its settled mass summed by unit in :meth:`PushBlock.push_finish`, then
#: the scores, :meth:`~longctx.mixpr.scoring.UnitBlock.scores_local`) stays sparse, summed by a
#: sort, while its entries are at most ``1 / RESULT_SHARE`` of the units; a level's units
#: (:meth:`PushBlock.push_step`) likewise up to ``1 / STEP_SHARE``. Both sums add each unit's
#: entries in their order from 0, so the scores are the same bit for bit either way. At 16
#: (``COUNT_SHARE``) the growth table's heavy questions at 10M words (537,133 units) made
#: three ``(n_units,)`` float64 vectors a query (4.3 MB each: the count, the scores, their
#: division) and chose over all units: question 3's arrays peaked at 10.5 MB, 7.5 with the
#: result sparse and 4.7 with the level's units too; questions 3, 8 and 17 took 9.6 / 6.6 /
#: 5.5 ms warm (k = 10) and 27 / 25 / 22 ms with a 3,000-token budget, then 8.8 / 6.4 / 5.2
#: and 13-14 / 11 / 8-8.5 ms (issue 46, session 20). At 1M words (51,262 units) the same.
RESULT_SHARE = 4
STEP_SHARE = 4
#: A level's gather of its units' terms, when summed by a dense count, is done in blocks of
#: rows holding about this many entries on average (:func:`gather_summed`; 94 KB of float64),
#: so that its temporaries stay below glibc's first ``mmap`` threshold (128 KiB) and are reused
#: from the heap instead of each being a fresh mapping touched page by page (issue 46: the
#: first query after an open).
GATHER_BLOCK = 12_000

# The non-zeros of a float vector are found as ``np.flatnonzero(x != 0)``: numpy finds those of
# a bool array without a branch per element, 5-8x faster than ``np.flatnonzero(x)`` on float64
# (51,262 units, a third of them reached: 22 against 188 us); the same indices (-0.0 and 0.0
# are zeros both ways, NaN is not).
#
# A gather by an index array is ``a.take(idx)``, the same values as ``a[idx]``: numpy's
# fancy indexing casts int32 indices (the walk's units, ``E``'s index dtype) a buffer at a
# time, ``take`` does not, and skips the indexing machinery (20,000 of 51,262 float64: 10.6
# against 23.2 us with int32 indices, 8.2 against 11.6 with int64; 100: 0.4 against 0.7 and
# 0.22 against 0.15, issue 46, session 20). A scatter is the other way round: ``a[idx] = v``
# with int64 indices is 2x faster than with int32 ones (13 against 28 us for 20,000) and than
# ``a.put`` (48 us), so int32 units are cast before a large scatter.


def spans(indptr, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``(starts, lengths, their sum)`` of the compressed rows (or columns) ``sel``."""
    starts = indptr.take(sel)
    lens = indptr[1:].take(sel)
    lens -= starts  # in place: one (k,) temporary less (a view's take is a new array)
    return starts, lens, int(lens.sum())


def is_count_rows(rows) -> bool:
    """Whether ``rows`` (``E`` by rows, as a block or a term table holds it) is a
    :class:`~longctx.mixpr.counts.CountRows`, whose values are made from the counts when read
    (its ``gather``, ``block_values``, ``counts`` and ``csr``), rather than a scipy sparse
    matrix holding them (``data``): the one test of it, for every reader of ``E`` by rows.

    Told by its ``gather`` method, which no scipy sparse matrix has: :mod:`~longctx.mixpr.counts`
    imports this module (``CountRows`` reads its rows with :func:`take_rows`), so an
    ``isinstance`` check here would be an import cycle (``tests/test_import_layers.py``).
    ``longctx.mixpr.counts.is_count_rows`` is this function."""
    return hasattr(rows, "gather")


def take_rows(indptr, indices, data, sel: np.ndarray, where=None):
    """The non-zeros of the compressed rows (or columns) ``sel`` of a CSR (CSC) matrix:
    ``(indices (nnz,), values (nnz,) data's dtype, each row's length (k,))``, row by row in the
    order of ``sel``. Costs the selected rows' non-zeros, not the matrix's. ``where``: their
    :func:`spans` when already known."""
    starts, lens, total = spans(indptr, sel) if where is None else where
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


def gather(indptr, indices, data, sel: np.ndarray, weights: np.ndarray | None, where=None):
    """The non-zeros of the compressed rows (or columns) ``sel`` of a CSR (CSC) matrix, each
    multiplied by its row's weight (``None``: as stored): ``(indices (nnz,) int, values (nnz,)
    float64)``, row by row in the order of ``sel``. Costs the selected rows' non-zeros, not the
    matrix's (:func:`take_rows`). ``where``: their :func:`spans` when already known."""
    out_i, out_d, lens = take_rows(indptr, indices, data, sel, where)
    if not len(out_i):
        return out_i, np.empty(0)
    if weights is not None:
        out_d *= np.repeat(weights, lens)  # take_rows's values are a copy
    return out_i, out_d


def unique_positions(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(unique indices ascending (k,) int64, each entry's position among them (len(idx),))``:
    ``np.unique(idx, return_inverse=True)`` by :func:`sort_order`, which merges the few
    ascending runs of the query terms' postings (their concatenation). Costs the entries, not
    their bound (the ``(n_units,)`` mark it replaced, with ``np.unique`` for fewer entries:
    0.22 against 0.09 ms a query at 20M words, the growth table's 20 questions)."""
    return _unique_sorted(idx, sort_order(idx))


#: Past this many entries, entries whose ascending runs hold more than :data:`MERGE_BITS` bits
#: of entropy (``-sum p log2 p`` over the runs' shares) are sorted by numpy's quicksort; the
#: others by its stable sort (timsort, which merges the runs). The query terms' postings and a
#: walk's levels are a few runs of very unequal lengths, merged 4-10x faster than the quicksort
#: sorts them (30,000 entries in 3 runs: 0.03 against 0.27 ms); 10 or more equal runs of
#: 30,000 entries are sorted faster by the quicksort (0.26 against 0.39-0.70 ms), as are random
#: entries (1.6 against 0.27 ms); below 4,096 entries the stable sort was never the slower.
MERGE_BITS = 3.0
SMALL_SORT = 4096


def sort_order(idx: np.ndarray) -> np.ndarray | None:
    """An order that sorts ``idx`` (``None``: fewer than 2 entries, or more than
    :data:`SMALL_SORT` entries ascending already): numpy's stable sort (a merge of its ascending runs) unless the entries are more
    than :data:`SMALL_SORT` and their runs hold more than :data:`MERGE_BITS` bits, then its
    quicksort. Any order that sorts serves :func:`_unique_sorted`, whose sums follow the
    entries' own order."""
    n = len(idx)
    if n < 2:
        return None
    if n <= SMALL_SORT:  # the stable sort, without a pass to find the runs (2 us a call)
        return np.argsort(idx, kind="stable")
    ends = np.flatnonzero(idx[1:] < idx[:-1])
    if not len(ends):
        return None
    # each run's share of the entries (a concatenation: np.diff's prepend / append broadcast,
    # 6 against 2 us a call)
    share = np.diff(np.concatenate(([-1], ends, [n - 1]))) / n
    if float(-(share * np.log2(share)).sum()) > MERGE_BITS:
        return np.argsort(idx)
    return np.argsort(idx, kind="stable")


def _unique_sorted(idx: np.ndarray, order, wide: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(idx, return_inverse=True)`` from a sorting ``order`` of ``idx`` (``None``:
    ``idx`` is ascending already), the unique indices as int64 (``wide=False``: in ``idx``'s
    own dtype)."""
    s = idx if order is None else idx.take(order)
    if not len(s):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    first = np.empty(len(s), bool)
    first[0] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    u = s[first]
    if wide:
        u = u.astype(np.int64, copy=False)
    del s  # each temporary freed once read: a smaller peak (issue 46)
    # int64: an int32 rank scattered into the int64 inverse below halves its bytes but numpy
    # casts it a buffer at a time, 2.3x slower (40,000 entries: 62 against 27 us)
    rank = np.cumsum(first)
    del first
    rank -= 1  # in place: one (entries,) int64 temporary less
    if order is None:
        return u, rank
    inv = np.empty(len(rank), np.int64)
    inv[order] = rank
    return u, inv


def gather_summed(rows, sel: np.ndarray, weights: np.ndarray, where, size: int, total=None):
    """``sum_sparse(*gather(rows.indptr, rows.indices, rows.data, sel, weights, where), size)``
    when it counts densely (more than ``size / COUNT_SHARE`` entries), in blocks:
    ``(indices ascending (k,) int64, sums (k,) float64)``, indices whose sum is 0 left out.

    The rows ``sel`` (``(r,)`` int) of the float64 CSR ``rows`` (or of a
    :class:`~longctx.mixpr.counts.CountRows`, whose values its ``block_values`` makes from the
    gathered counts a block at a time, :meth:`~longctx.mixpr.counts.CountRows.gather`'s
    operations in its order: a built index past ``ROWS_HELD_MAX`` entries; issue 46, the
    20M-word query) are gathered by blocks of rows
    holding :data:`GATHER_BLOCK` entries on average into two buffers of a block's size, and
    each block is added into one ``(size,)`` vector by scipy's ``csc_matvec`` (the block read
    as the columns of ``E^T``): each entry times its row's weight (the product :func:`gather`
    makes), added one by one in their order from 0 (as ``np.bincount`` adds them): the same
    sums, bit for bit (scipy's loops compiled without fused multiply-adds, checked at import:
    where they fuse, :func:`_fuses_multiply_add`, the walk gathers then sums instead). Its
    temporaries are a block's (about 128 KiB each at most on average rows: a block holding
    long rows is larger; reused from the heap) instead of
    the level's (20 bytes an entry: 2.2 MB for the 110k entries of a 10M-word query's level,
    each a fresh ``mmap`` touched page by page in a fresh process; issue 46), and it adds
    about 20% faster (no repeated weights, one pass). ``where``: the rows' :func:`spans`.
    ``total``: a ``(size,)`` float64 count of zeros to add into (the query's levels share one,
    kept in the query's session: one ``(size,)`` array a query instead of one a level; issue
    46), left zeros again (the non-zero sums are set back to 0; a sum of exactly -0.0 left
    behind adds as 0.0 does); ``None``: a new one.
    Needs scipy's ``csr_row_index`` and ``csc_matvec``."""
    lens = where[1]
    step = max(1, GATHER_BLOCK * len(sel) // max(where[2], 1))  # rows a block
    firsts = np.arange(0, len(sel), step)
    sizes = np.add.reduceat(lens, firsts).tolist() if len(sel) else []
    values = rows.block_values if is_count_rows(rows) else None  # values made from the counts
    indptr, indices = rows.indptr, rows.indices
    data = rows.data if values is None else rows.counts
    sel = sel.astype(indptr.dtype, copy=False)
    buf_i = np.empty(max(sizes, default=0), indices.dtype)
    buf_r = np.empty(len(buf_i), data.dtype)  # the stored values (a CountRows: its counts)
    buf_d = buf_r if values is None else np.empty(len(buf_i))
    ptr = np.zeros(step + 1, indices.dtype)  # a block's rows as columns
    if total is None:
        total = np.zeros(size)
    for a, m in zip(firsts.tolist(), sizes):
        block = sel[a : a + step]
        k = len(block)
        csr_row_index(k, block, indptr, indices, data, buf_i[:m], buf_r[:m])
        lens[a : a + k].cumsum(out=ptr[1 : k + 1])
        if values is not None:
            values(block, lens[a : a + k], buf_i[:m], buf_r[:m], buf_d[:m])
        csc_matvec(size, k, ptr[: k + 1], buf_i[:m], buf_d[:m], weights[a : a + k], total)
    del buf_i, buf_r, buf_d, ptr  # freed before the sums' indices (the level's peak, issue 46)
    u = np.flatnonzero(total != 0)
    sums = total.take(u)
    total[u] = 0.0  # zeros again for the query's next level
    return u, sums


def sum_sparse(idx: np.ndarray, val: np.ndarray, size: int | None = None, *, wide: bool = True):
    """Sum duplicate indices: ``(unique indices ascending (k,) int64, their summed values (k,)
    float64)``; each index's entries are added in their order. The one way the walks (this
    module, :mod:`~longctx.mixpr.push_graph`, :mod:`~longctx.mixpr.multihop_push`) sum a
    sparse vector's duplicates: no state kept between calls. ``wide=False``: the indices
    summed by a sort keep ``idx``'s dtype (the walk's units: int32 when ``E``'s indices are,
    half the bytes of the level's frontier and no int32 copy of it for the next gather; issue
    46, the first query after an open); those of a dense count are int64 either way.

    With ``size`` (the indices' bound) and more than ``size / COUNT_SHARE`` entries, by a dense
    count (``O(size)``, i.e. at most ``COUNT_SHARE`` times the entries; no sort; indices whose
    sum is 0 are left out); otherwise by a sort of the entries (:func:`sort_order`: a merge
    when they are a few ascending runs, as a walk's levels are; each index's entries then
    added in their order by ``np.bincount``, as with ``np.unique``'s inverse). On the walks'
    own sums this was faster than a position table (one ``(size,)`` array a query, filled at
    ``O(size)``: 6 ms at ``size = 1e7``), whose sums it replaced in the multi-hop push."""
    if not len(idx):
        return np.empty(0, np.int64), np.empty(0)
    if size is not None and len(idx) * COUNT_SHARE > size:
        total = np.bincount(idx, weights=val, minlength=size)
        u = np.flatnonzero(total != 0)
        return u, total.take(u)
    u, inv = _unique_sorted(idx, sort_order(idx), wide)
    return u, np.bincount(inv, weights=val, minlength=len(u))


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
        if not is_count_rows(rows):  # a CountRows is kept as it is
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
        return rows.csr() if is_count_rows(rows) else rows

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

    def _push_emit(self, s, idx, r, own: bool = False):
        """Settle ``alpha r`` on the frontier ``idx`` and send the rest on: returns
        ``(terms, term mass t, dangling mass, mass moving, entries read)``. ``own``: ``r`` is
        the caller's own temporary, overwritten (the moving mass made in it: one frontier
        vector less at the level's gather, the first query's peak; issue 46); otherwise it is
        the restart ``push_p`` holds (:meth:`push_begin`), left as it is, and its settled
        mass ``alpha r`` is made by :meth:`push_finish` (not held through the levels)."""
        alpha = s["push_alpha"]
        s["pi"][0].append(idx)  # settled, summed by unit at the end (push_finish)
        # the first level's (the restart's, r not own) made there from push_p: not held
        # through the walk's levels (issue 46: the first query's peak)
        s["pi"][1].append(alpha * r if own else None)
        # r (1 - alpha) is (1 - alpha) r bit for bit (a product commutes)
        moving = np.multiply(r, 1.0 - alpha, out=r) if own else (1.0 - alpha) * r
        del r
        mass = float(moving.sum())
        col = self.colsum.take(idx)
        live = col > 0
        if live.all():  # no unit without terms (the common case): no masks
            dang, rows = 0.0, idx
            v = np.divide(moving, col, out=moving if own else col)  # in place
        else:
            dang = float(moving[~live].sum())
            rows, v = idx[live], moving[live] / col[live]
        del moving, col, live  # freed before the level's gather (its peak): issue 46
        E = self._rows()
        n_terms = E.shape[1]
        starts, lens, read = spans(E.indptr, rows)
        nnz = int(E.indptr[-1])  # E.nnz without scipy's checks (a call a level)
        if read * DENSE_SHARE > nnz:  # most of the block: one product over E
            dense = np.zeros(self.n)
            dense[rows.astype(np.intp, copy=False)] = v  # an int64 scatter (see take above)
            t = self._ET @ dense
            terms = np.flatnonzero(t != 0)
            return terms, t.take(terms), dang, mass, nnz
        counted = is_count_rows(E)  # values made from the counts (CountRows): the same
        if read * COUNT_SHARE > n_terms and (read > GATHER_BLOCK or counted) and csc_matvec:
            if s.get("term_sums") is None:  # one count for the query's levels (issue 46)
                s["term_sums"] = np.zeros(n_terms)
            del starts  # the blocked gather reads the lengths only (issue 46: its peak)
            terms, vals = gather_summed(E, rows, v, (None, lens, read), n_terms, s["term_sums"])
        elif counted:
            terms, vals = sum_sparse(*E.gather(rows, v, (starts, lens, read)), n_terms)
        else:
            terms, vals = gather(E.indptr, E.indices, E.data, rows, v, (starts, lens, read))
            terms, vals = sum_sparse(terms, vals, n_terms)
        return terms, vals, dang, mass, read

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
        nnz = int(E.indptr[-1])
        if read * DENSE_SHARE <= nnz:
            idx = np.flatnonzero(reached)
            return self._push_emit(s, idx, y[idx], own=True)
        alpha = s["push_alpha"]
        s["pi"][0].append(None)  # a level over the block: summed as a vector (push_finish)
        s["pi"][1].append(alpha * y)
        moving = (1.0 - alpha) * y
        dang = float(moving[~live].sum())
        v = np.divide(moving, self.colsum, out=np.zeros(self.n), where=live)
        t = self._ET @ v
        terms = np.flatnonzero(t != 0)
        return terms, t[terms], dang, float(moving.sum()), nnz

    def push_step(self, sid, terms: np.ndarray, u: np.ndarray, dangling: float):
        """One level: spread the pushed terms' mass ``u`` (``w_j t_j``) over the block's units
        holding them, and the dangling mass over the restart; then settle and emit the next
        level (:meth:`_push_emit`)."""
        s = self._s(sid)
        E = self._cols()
        where = spans(E.indptr, terms)
        read = where[2]
        pidx, pval = s["push_p"]
        nnz = int(E.indptr[-1])  # E.nnz without scipy's checks (a call a level)
        if read * DENSE_SHARE > nnz:  # most of the block: one product over E
            dense = np.zeros(E.shape[1])
            dense[terms] = u
            y = E @ dense
            if dangling:
                y[pidx] += dangling * pval
            out = self._push_emit_dense(s, y)
            return (*out[:4], out[4] + nnz)
        else:
            units, vals = gather(E.indptr, E.indices, E.data, terms, u, where)
            if dangling:
                units = np.concatenate([units, pidx])
                vals = np.concatenate([vals, dangling * pval])
            # the units in E's index dtype (int32): half the frontier's bytes (issue 46)
            size = self.n if len(units) * STEP_SHARE > self.n else None
            idx, r = sum_sparse(units, vals, size, wide=False)
            del units, vals  # freed before the next level's gather (its peak): issue 46
        out = self._push_emit(s, idx, r, own=True)
        return (*out[:4], out[4] + read)

    def push_finish(self, sid):
        """The walk's scores are the settled mass: ``x`` of the session (each unit's levels
        summed in order, as a dense accumulation would): a
        :class:`~longctx.selection.SparseScores` over the units the walk reached, or the
        ``(n,)`` vector when its levels hold more than ``1 / RESULT_SHARE`` of the units (sorting
        that many would cost more than one pass). Returns its maximum over the block (or None
        for an empty block)."""
        s = self._s(sid)
        s.pop("term_sums", None)  # the levels' count: freed before the sum below (issue 46)
        idx, vals = s.pop("pi")
        # the first level's settled mass, alpha r of the restart r (push_begin, _push_emit)
        vals = [s["push_alpha"] * s["push_p"][1] if v is None else v for v in vals]
        if any(i is None for i in idx):  # a level over the block: add the levels in order
            x = np.zeros(self.n)
            for i, v in zip(idx, vals):
                if i is None:
                    x += v
                else:
                    x[i] += v  # a level's units are distinct
            nz = np.flatnonzero(x != 0)
            s["x"] = x if len(nz) * COUNT_SHARE > self.n else SparseScores(self.n, nz, x[nz])
            return float(x.max()) if self.n else None
        idx = np.concatenate(idx) if idx else np.zeros(0, np.int64)
        vals = np.concatenate(vals) if vals else np.zeros(0)
        if len(idx) * RESULT_SHARE > self.n:
            s["x"] = np.bincount(idx, weights=vals, minlength=self.n)
            return float(s["x"].max()) if self.n else None
        idx, vals = sum_sparse(idx, vals)
        s["x"] = SparseScores(self.n, idx, vals)
        # settled mass is >= 0: the units not reached add 0 to the maximum
        return max(float(vals.max()) if len(vals) else 0.0, 0.0) if self.n else None


def _members(values: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """``(len(values),) bool``: whether each of ``values`` is in ``sorted_keys`` (ascending)."""
    return _find(sorted_keys, values)[1]


def strict_limits(scorer) -> np.ndarray | None:
    """``(n_terms,) float64``: ``push_threshold * df_j ** push_df_power``, the mass a term needs
    to be pushed under the strict rule (:func:`push_walk`), computed once per scorer (numpy's
    power gives each element the same value in a subset as in the whole array, so a level
    reads the same limits as it computed before); ``None`` when ``push_df_power`` is 1."""
    cfg = scorer.config
    if cfg.push_df_power == 1.0:
        return None
    key = (cfg.push_threshold, cfg.push_df_power)
    cached = scorer.__dict__.get("_push_limits")
    if cached is None or cached[0] != key:
        df = scorer.term_sizes()[1]
        cached = (key, cfg.push_threshold * (df.astype(np.float64) ** cfg.push_df_power))
        scorer._push_limits = cached
    return cached[1]


def _add_parts(park: np.ndarray, parts) -> tuple[np.ndarray, np.ndarray]:
    """Add the blocks' term mass (``parts``: each ``(terms ascending, mass)``) to the dense
    ``park`` in block order (each term's values added in the order a sum of the concatenation
    adds them); returns the terms that got mass, ascending, and their sums (a copy)."""
    if len(parts) == 1:  # park[terms] += mass, then park[terms]: one gather less
        terms = parts[0][0]
        t = park.take(terms)
        t += parts[0][1]
        park[terms] = t
        return terms, t
    for p in parts:
        park[p[0]] += p[1]
    terms = np.unique(np.concatenate([p[0] for p in parts]))
    return terms, park.take(terms)


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
    term of the first level keeps the plain rule.

    The parked mass is kept as ``(terms, mass)`` and summed with each level's (the old rule, a
    sort) until a level's terms are more than ``1 / COUNT_SHARE`` of the vocabulary (where that
    sum would take a dense count): from then on it is an ``(n_terms,)`` vector, each level adds
    its terms' mass to it and decides for those terms only (a parked term that got none keeps
    its mass, so it stays below the rule, which only rises after the first level:
    ``push_df_power >= 1``). A level that pushes nothing and has no dangling mass ends the
    walk (it would move nothing)."""
    cfg = scorer.config
    backend = scorer.backend
    s_j, df_j = scorer.term_sizes()
    w = scorer.weights
    eps = cfg.push_threshold
    strict = strict_limits(scorer)
    parts = backend.map("push_begin", sid, scale, alpha)
    park = None  # the parked mass as an (n_terms,) vector, once a level is large
    park_t = np.empty(0, np.int64)
    park_v = np.empty(0)
    steps = 0
    read = sum(p[4] for p in parts)
    moving = sum(p[3] for p in parts)
    # stop below tol, or when nothing moves (tol=0 ran max_iter empty levels: issue 44)
    while moving >= cfg.tol and moving > 0 and steps < cfg.max_iter:
        size = len(park_t) + sum(len(p[0]) for p in parts)
        if park is None and size * COUNT_SHARE > len(s_j):
            park = np.zeros(len(s_j))
            park[park_t] = park_v
        if park is None:
            terms, t = sum_sparse(
                np.concatenate([park_t, *(p[0] for p in parts)]),
                np.concatenate([park_v, *(p[1] for p in parts)]),
                len(s_j),
            )
        else:
            terms, t = _add_parts(park, parts)
        dangling = sum(p[2] for p in parts)
        parts = None  # read: its sums freed before the level's rule (issue 46: the peak)
        if w is None:
            u = t
        elif park is None:  # t is parked below
            u = t * w.take(terms)
        else:  # t is read no more: w_j t_j made in it (t_j w_j, a product commutes)
            u = t
            u *= w.take(terms)
        if strict is not None and (steps or query_terms is not None):
            limit = strict.take(terms)
            if not steps:  # the first level: the query's own terms keep the plain rule
                own = _members(terms, query_terms)
                limit[own] = eps * df_j[terms[own]]
        else:
            limit = eps * df_j.take(terms)
        mass = s_j.take(terms)
        mass *= u  # u_j s_j in place (a temporary less at the level's peak, issue 46)
        push = mass >= limit
        del mass
        pushed = terms[push]
        if park is None:
            park_t, park_v = terms[~push], t[~push]
        else:
            park[pushed] = 0.0
        steps += 1
        if not len(pushed) and not dangling:  # the level moves nothing: the walk ends
            moving = 0.0
            break
        step = (pushed, u[push], dangling)
        del parts, terms, t, u, limit, push  # freed before the next level's peak (issue 46)
        parts = backend.map("push_step", sid, *step)
        read += sum(p[4] for p in parts)
        moving = sum(p[3] for p in parts)
    if park is not None:
        park_t = np.flatnonzero(park != 0)
        park_v = park[park_t]
        del park  # freed before the blocks' last sums (issue 46)
    return finish_walk(scorer, sid, park_t, park_v, (steps, moving, read), trace)


def finish_walk(scorer, sid, park_t, park_v, counts, trace) -> float:
    """The end of :func:`push_walk`: the blocks settle their result (``push_finish``) and the
    walk's record goes to ``trace`` with the mass parked on the terms ``park_t`` (ascending,
    holding ``park_v``); ``counts``: ``(levels, mass still moving, entries read)``. Returns the
    result's maximum over the units."""
    steps, moving, read = counts
    s_j = scorer.term_sizes()[0]
    w = scorer.weights
    parked = 0.0
    if len(park_t):
        parked = float(((park_v if w is None else park_v * w[park_t]) * s_j[park_t]).sum())
    tops = [m for m in scorer.backend.map("push_finish", sid) if m is not None]
    if trace is not None:
        trace.append(walk_record("walk", "push", steps, moving + parked, parked=parked, read=read))
    return max(tops) if tops else 0.0
