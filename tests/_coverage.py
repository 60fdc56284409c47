"""The coverage weighting of MixPR's query edges as sparse products: the oracle the tests hold
:func:`longctx.mixpr.query.query_edge_rows` (which computes it entry by entry) to. Not part of
the package (formerly ``longctx.mixpr.query.weigh_by_coverage``, used by the tests only)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def weigh_by_coverage(B: sp.csr_array, Et, Eqt, power: float) -> sp.csr_array:
    """``B[i, j] * coverage[i, j] ** power``: ``coverage[i, j]`` is the share of query chunk
    ``j``'s TF-IDF weight (L1) on the terms that unit ``i`` holds (Alonso and Millidge, 2024,
    arXiv:2412.06078, sec. 4)."""
    hits = sp.csc_array(Et, copy=True)
    hits.data[:] = 1.0
    matched = sp.csr_array(hits @ sp.csr_array(Eqt).T, dtype=np.float64)
    total = np.asarray(Eqt.sum(axis=1), dtype=np.float64).ravel()
    cov = matched.multiply(1.0 / np.where(total > 0, total, 1.0)[None, :])
    cov = sp.csr_array(cov)
    cov.data = np.clip(cov.data, 0.0, 1.0) ** power
    return sp.csr_array(B.multiply(cov))
