"""The dtypes a MixPR index holds its term counts in (:class:`~longctx.mixpr.tfidf.TermTable`):
6 bytes a stored entry (int32 column, uint16 count) instead of 16 (int64, float64) wherever the
values fit, the same whole numbers; and ``E`` by rows made from those counts when it is read
(:class:`CountRows`) instead of a second float64 copy of ``E``'s values (issue 46: held
memory)."""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from longctx.mixpr import push
from longctx.mixpr.push import is_count_rows  # there: push reads rows too, imports no counts

__all__ = [
    "ROWS_HELD_MAX",
    "CountRows",
    "compact_counts",
    "count_dtype",
    "index_dtype",
    "is_count_rows",
    "tf_values",
]

logger = logging.getLogger(__name__)

#: ``E`` by rows holds its own float64 values up to this many entries (16 MB), and makes them
#: from the counts when read past it (:class:`CountRows`: 8 bytes an entry less, at about
#: twice the cost of a row gather; 10M words of Gutenberg, 4.03M entries: 32 MB less held,
#: about +1.2 ms CPU a query of 7-8 ms, the same process alternating both, 10 questions).
ROWS_HELD_MAX = 2**21


def index_dtype(*sizes: int):
    """int32 when every size (entries, columns) fits in it, else int64."""
    return np.int32 if max(sizes, default=0) < np.iinfo(np.int32).max else np.int64


def count_dtype(counts: np.ndarray):
    """uint16 when every count (whole numbers >= 0) is below ``2**16``, else float64."""
    return np.uint16 if not counts.size or counts.max() < 2**16 else np.float64


def compact_counts(counts: sp.csr_array, *, copy: bool = False) -> sp.csr_array:
    """``counts`` (whole term counts, CSR) with int32 indices and uint16 counts where they fit
    (:func:`index_dtype`, :func:`count_dtype`). Itself if it is so already (``copy=True``: a
    copy, whose arrays may be sorted in place)."""
    it = index_dtype(counts.nnz, counts.shape[1])
    dt = count_dtype(counts.data)
    same = (counts.indices.dtype, counts.indptr.dtype, counts.data.dtype) == (it, it, dt)
    if same and not copy:
        return counts
    a = (counts.data.astype(dt), counts.indices.astype(it), counts.indptr.astype(it))
    return sp.csr_array(a, shape=counts.shape)


def _tf(settings, counts: np.ndarray) -> np.ndarray:
    tf = counts.astype(np.float64)  # a copy (the counts may be held compact)
    if settings.binary:
        tf[:] = 1.0
    elif settings.sublinear_tf:
        with np.errstate(divide="ignore"):  # a count of 0 (a table's unused first entry)
            tf = 1.0 + np.log(tf)
    return tf


def _tf_table(settings, top: int) -> np.ndarray:
    """``(top + 1,) float64``: the term frequency of each count ``0 .. top``."""
    return _tf(settings, np.arange(top + 1, dtype=np.float64))


def tf_values(settings, counts: np.ndarray) -> np.ndarray:
    """``(nnz,) float64``: scikit-learn's term frequency of each count (``binary``: 1;
    ``sublinear_tf``: ``1 + ln c``; else ``c``). uint16 counts are looked up in a table of
    their values (:func:`_tf_table`), the table :class:`CountRows` reads, so that both give
    the same values to the last bit."""
    if counts.dtype == np.uint16:
        return np.take(_tf_table(settings, int(counts.max(initial=0))), counts)
    return _tf(settings, counts)


class CountRows:
    """``E`` by rows, ``(n_units, n_terms)``, whose values are made from the term counts when
    read: ``E_ij = (tf(c_ij) idf_j) / norm_i``, the operations of
    :func:`~longctx.mixpr.tfidf.tfidf_rows` in its order, so the same float64 values to the
    last bit. Holds no array of its own but the ``(n_units,)`` norms: the counts' index arrays
    (shared) and uint16 counts (6 bytes an entry, held anyway) stand for the 12 bytes an entry
    of a CSR copy of ``E`` (issue 46).

    Parameters
    ----------
    counts : (n_units, n_terms) CSR, uint16 data
        The table's compact counts (:func:`compact_counts`), every entry one of ``E``'s (no
        pruned term: the caller checks).
    settings : TfidfSettings
        ``binary`` / ``sublinear_tf``, as ``E`` was made with.
    idf : (n_terms,) float64
    norms : (n_units,) float64
        Each row's L2 norm before the division (1 for an empty row), as ``tfidf_rows`` divided
        by.
    """

    def __init__(self, counts: sp.csr_array, settings, idf: np.ndarray, norms: np.ndarray):
        if counts.data.dtype != np.uint16 or norms.shape != (counts.shape[0],):
            raise ValueError("CountRows needs uint16 counts and one norm per row")
        self.indptr, self.indices, self._counts = counts.indptr, counts.indices, counts.data
        self.shape, self.nnz = counts.shape, int(counts.nnz)
        self._tf = _tf_table(settings, int(counts.data.max(initial=0)))
        self._tf_one = len(self._tf) > 1 and self._tf[1] == 1.0  # :meth:`block_values`
        self._idf, self._norms = idf, norms

    def gather(self, sel: np.ndarray, weights: np.ndarray, where=None):
        """:func:`longctx.mixpr.push.gather` of the rows ``sel`` (``(k,)`` int), each multiplied
        by its weight: ``(terms (nnz,) int, values (nnz,) float64)``, equal to the gather of a
        CSR copy of ``E``. ``where``: the rows' :func:`~longctx.mixpr.push.spans` when known."""
        terms, counts, lens = push.take_rows(self.indptr, self.indices, self._counts, sel, where)
        if not len(terms):
            return terms, np.empty(0)
        v = np.take(self._tf, counts)  # np.take: 2-3x faster than indexing by an array here
        v *= np.take(self._idf, terms)
        v /= np.repeat(np.take(self._norms, sel), lens)
        v *= np.repeat(weights, lens)
        return terms, v

    @property
    def counts(self) -> np.ndarray:
        """``(nnz,) uint16``: the stored counts, entry by entry (``indices``'s order)."""
        return self._counts

    def block_values(self, sel, lens, terms, counts, out) -> None:
        """Write into ``out`` (``(m,) float64``) the values of ``E`` for the entries ``terms``
        / ``counts`` (``(m,)``: the rows ``sel``, of lengths ``lens``, gathered from
        ``indices`` and :attr:`counts`), the operations of :meth:`gather` in its order (the
        same values to the last bit; where a count is 1 and ``tf(1) = 1``, ``tf idf`` is
        ``idf`` itself, so only the other counts, about 3% of prose's entries, are looked up
        and multiplied) without the rows' weights: for
        :func:`~longctx.mixpr.push.gather_summed`, which makes them a block of rows at a time
        (its temporaries in the CPU's caches: issue 46)."""
        if self._tf_one:  # tf(1) = 1 and tf(1) idf = idf: only the other counts multiply
            self._idf.take(terms, out=out, mode="clip")  # terms < n_terms (the table's)
            more = np.flatnonzero(counts != 1)  # about 3% of Gutenberg's entries
            out[more] *= self._tf.take(counts[more])  # idf tf: the same product as tf idf
        else:
            self._tf.take(counts, out=out, mode="clip")  # counts <= the table's top
            out *= self._idf.take(terms)
        out /= self._norms.take(sel).repeat(lens)  # methods: no np.* wrapper (15 blocks a query)

    def csr(self) -> sp.csr_array:
        """``E`` by rows as a CSR array (a copy of the values, sharing the index arrays): for
        what needs a matrix (a save, ``explain=True``)."""
        v = np.take(self._tf, self._counts)
        v *= np.take(self._idf, self.indices)
        v /= np.repeat(self._norms, np.diff(self.indptr))
        return sp.csr_array((v, self.indices, self.indptr), shape=self.shape)


def held_rows(counts: sp.csr_array, rows: sp.csr_array, settings, idf, norms) -> dict:
    """What a table keeps of ``E`` by rows (``rows``, the CSR form ``tfidf_rows`` made):
    ``{"_row_values": CountRows}`` past :data:`ROWS_HELD_MAX` entries when the rows share the
    counts' index arrays (no pruned term) and the counts are uint16, else ``{"_E_rows": rows}``."""
    if rows.nnz > ROWS_HELD_MAX and np.may_share_memory(rows.indices, counts.indices):
        if counts.data.dtype == np.uint16:
            logger.debug("E by rows made from the counts when read (%d entries)", rows.nnz)
            return {"_row_values": CountRows(counts, settings, idf, norms)}
    return {"_E_rows": rows}
