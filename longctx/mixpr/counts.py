"""The dtypes a MixPR index holds its term counts in (:class:`~longctx.mixpr.tfidf.TermTable`):
6 bytes a stored entry (int32 column, uint16 count) instead of 16 (int64, float64) wherever the
values fit, the same whole numbers (issue 46: held memory)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["compact_counts", "count_dtype", "index_dtype"]


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
