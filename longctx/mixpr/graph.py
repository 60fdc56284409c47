"""MixPR graph maths: the thresholded TF-IDF similarity graph ``S = E E^T``, column
normalization ``A = S D^{-1}`` and personalized PageRank by power iteration (Alonso and Millidge,
2024, arXiv:2412.06078, sec. 4, eq. 2 and 3)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from longctx.checks import check_float, check_int


def personalized_pagerank(
    A: sp.spmatrix,
    p: np.ndarray,
    alpha: float,
    max_iter: int = 18,
    tol: float = 1e-6,
    *,
    x0: np.ndarray | None = None,
    dangling: np.ndarray | None = None,
) -> np.ndarray:
    """Personalized PageRank by power iteration: ``pi = (1 - alpha) A pi + alpha p``.

    Paper eq. 2 (Alonso and Millidge, 2024, arXiv:2412.06078, sec. 4). ``alpha`` weights the *personalization*
    (``alpha=0`` is plain PageRank); networkx's ``alpha`` is the damping, i.e. ``1 - alpha`` here.
    Follows networkx's ``pagerank`` otherwise (appendix A.2): start from ``x0`` (uniform by
    default), dangling nodes (zero columns) send their mass along ``dangling`` (``p`` by
    default). It stops when ``||x_t - x_{t-1}||_1 < tol``: ``x`` is a probability vector, so
    this bound means the same at every ``n`` (networkx's ``n * tol`` loosens with the graph: at
    ``n >= 2 / tol`` it stops after one step). Unlike networkx it never raises when
    ``max_iter`` is reached: it returns the last iterate (the paper uses 18 iterations).

    Parameters
    ----------
    A : (n, n) scipy sparse matrix, non-negative, column-stochastic
        ``A[i, j]`` is the probability of stepping from node ``j`` to node ``i``; each column sums
        to 1, or to 0 for a dangling node. Converted to CSR if needed.
    p : (n,) array of float, non-negative, positive sum
        Personalization (restart) distribution; normalized to sum to 1.
    alpha : float in [0, 1]
        Restart probability.
    max_iter : int >= 1
    tol : float >= 0
    x0 : (n,) array, optional
        Start vector (normalized); uniform by default.
    dangling : (n,) array, optional
        Where dangling nodes send their mass (normalized); ``p`` by default.

    Returns
    -------
    (n,) float64 array summing to 1.

    Raises
    ------
    TypeError, ValueError
        Bad shapes, negative entries, columns that sum neither to 0 nor to 1, or bad scalars.
    """
    if not sp.issparse(A):
        raise TypeError(f"A must be a scipy sparse matrix, got {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    n = A.shape[0]
    alpha = check_float(alpha, "alpha", low=0.0, high=1.0)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_float(tol, "tol", low=0.0)
    p = _distribution(p, n, "p")
    x = np.full(n, 1.0 / n) if x0 is None else _distribution(x0, n, "x0")
    d = p if dangling is None else _distribution(dangling, n, "dangling")
    A = sp.csr_array(A, dtype=np.float64)
    if A.nnz and A.data.min() < 0:
        raise ValueError("A must be non-negative")
    colsum = np.bincount(A.indices, weights=A.data, minlength=n)
    is_dangling = colsum == 0
    if not np.allclose(colsum[~is_dangling], 1.0, atol=1e-6):
        raise ValueError("A must be column-stochastic (each column sums to 1, or 0 if dangling)")
    dangling_idx = np.flatnonzero(is_dangling)
    damping = 1.0 - alpha
    restart = alpha * p
    for _ in range(max_iter):
        x_last = x
        x = A @ x_last
        if dangling_idx.size:
            x += x_last[dangling_idx].sum() * d
        x *= damping
        x += restart
        diff = np.abs(x - x_last).sum()
        if diff < tol or diff == 0.0:  # or a fixed point (tol=0 ran every step: issue 44)
            break
    return x


def _distribution(v, n: int, name: str) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {v.shape}")
    if not np.all(np.isfinite(v)) or v.min() < 0 or v.sum() <= 0:
        raise ValueError(f"{name} must be finite, non-negative, with a positive sum")
    return v / v.sum()


def similarity_graph(
    E: sp.spmatrix,
    threshold: float = 0.27,
    *,
    max_block_nnz: int = 10_000_000,
    n_jobs: int | None = None,
) -> sp.csr_array:
    """Thresholded cosine-similarity graph ``S = E E^T`` with entries ``< threshold`` dropped.

    Computed in row blocks over the upper triangle (``S`` is symmetric), so the largest
    intermediate holds at most about ``max_block_nnz`` products: memory stays bounded however
    long the text. The diagonal (self-similarity 1 for a non-empty row) is kept, as in the paper
    (appendix A.2 thresholds ``E^T E`` as a whole).

    Parameters
    ----------
    E : (n, V) scipy sparse matrix
        One L2-normalized row per chunk (the paper stores them as columns; same graph).
    threshold : float
        Entries below it are dropped (appendix A.2: .27).
    max_block_nnz : int
        Upper bound on the products computed per block (memory knob: ~12 bytes each, times
        ``n_jobs`` blocks in flight).
    n_jobs : int, optional
        Threads computing blocks (scipy's sparse product releases the GIL); all CPUs by default.

    Products are computed in float32 (values within ~1e-7 of float64), stored as float64.

    Returns
    -------
    (n, n) symmetric float64 CSR array.
    """
    threshold = check_float(threshold, "threshold", low=0.0)
    # float32 products: half the memory traffic; scipy releases the GIL, so threads help.
    # Canonical (sorted, summed) copies: ``csr_array(E, dtype=...)`` may share E's index arrays,
    # and sorting them in place would scramble the caller's matrix (its data stays unsorted).
    E32 = sp.csr_array(E, dtype=np.float32, copy=True)
    E32.sum_duplicates()
    E32.sort_indices()
    ET = sp.csc_array(E32.T, copy=True)  # column slices of E^T (= rows of E) are cheap in CSC
    ET.sum_duplicates()
    ET.sort_indices()
    n, n_features = E32.shape
    E = E32
    # Upper bound of the nnz of row i of E E^T: sum of document frequencies of its terms.
    df = np.bincount(E.indices, minlength=n_features)
    csum = np.concatenate([[0], np.cumsum(df[E.indices])])
    row_cost = csum[E.indptr[1:]] - csum[E.indptr[:-1]]
    # Row blocks [a, b) whose cost (upper-triangle half, roughly) stays under max_block_nnz.
    bounds = [0]
    acc = 0
    for i, c in enumerate(row_cost.tolist()):
        if acc and acc + c > max_block_nnz:
            bounds.append(i)
            acc = 0
        acc += c
    bounds.append(n)
    blocks = list(zip(bounds[:-1], bounds[1:]))

    def upper_block(block: tuple[int, int]):
        a, b = block
        P = sp.csr_array(E32[a:b] @ ET[:, a:])  # (b - a, n - a): columns offset by a
        pos = np.flatnonzero(P.data >= threshold)
        r = np.searchsorted(P.indptr, pos, side="right") - 1
        c = P.indices[pos].astype(np.int64)
        keep = c >= r  # upper triangle (incl. diagonal) in global indices
        return r[keep] + a, c[keep] + a, P.data[pos[keep]].astype(np.float64)

    blocks = [(a, b) for a, b in blocks if b > a]
    workers = max(1, min(n_jobs or os.cpu_count() or 1, len(blocks)))
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(upper_block, blocks))
    else:
        parts = [upper_block(blk) for blk in blocks]
    if parts:
        r = np.concatenate([x[0] for x in parts])
        c = np.concatenate([x[1] for x in parts])
        v = np.concatenate([x[2] for x in parts])
    else:
        r = c = np.empty(0, np.int64)
        v = np.empty(0, np.float64)
    off = r != c
    S = sp.coo_array(
        (np.concatenate([v, v[off]]), (np.concatenate([r, c[off]]), np.concatenate([c, r[off]]))),
        shape=(n, n),
    )
    return sp.csr_array(S)


def column_normalize(S: sp.spmatrix) -> sp.csr_array:
    """``normalize(M)`` of eq. 3: divide each column by its sum (zero columns stay zero).

    The result is column-stochastic, ``A[i, j]`` = probability of stepping from ``j`` to ``i``.
    """
    S = sp.csr_array(S, dtype=np.float64)
    colsum = np.bincount(S.indices, weights=S.data, minlength=S.shape[1])
    inv = np.divide(1.0, colsum, out=np.zeros_like(colsum), where=colsum > 0)
    A = S.copy()
    A.data = A.data * inv[A.indices]
    return A


def estimate_threshold_graph_bytes(
    E: sp.spmatrix, threshold: float, *, sample: int = 256, seed: int = 0
) -> int:
    """About how many bytes :func:`similarity_graph` (and the index's copy of it) will hold for
    ``E`` (``(n, V)``, L2-normalized rows), estimated before building it from the rows of
    ``sample`` random units: their entries at or above ``threshold``, scaled to ``n`` units
    (x 24 bytes: the CSR graph in float64 and its float32 copy for the walk, with indices).
    Exact for ``n <= sample``."""
    E = sp.csr_array(E, dtype=np.float64)
    n = E.shape[0]
    if n == 0:
        return 0
    rows = np.arange(n) if n <= sample else np.random.default_rng(seed).choice(n, sample, False)
    P = sp.csr_array(E[rows] @ E.T)
    kept = int((P.data >= threshold).sum())
    return int(kept * (n / len(rows)) * 24)


def _available_memory_bytes() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes (``None`` where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


class ThresholdGraph:
    """The paper's explicit chunk graph: ``S = E E^T`` with entries below ``threshold`` dropped
    (:func:`similarity_graph`). Its size grows with the square of the text where terms repeat
    (4M words of Gutenberg: 136M entries, 9 GB): the ``"paper"`` preset's graph, for texts
    where it fits.

    Attributes
    ----------
    S : (n, n) float64 CSR, symmetric, non-negative
    colsum : (n,) float64
        Column sums of ``S`` (the ``D`` of eq. 3).
    """

    kind = "threshold"

    def __init__(self, S: sp.spmatrix):
        S = sp.csr_array(S, dtype=np.float64)
        self.S = S
        self.shape = S.shape
        self.colsum = np.bincount(S.indices, weights=S.data, minlength=S.shape[1])

    @classmethod
    def build(cls, E: sp.spmatrix, threshold: float) -> ThresholdGraph:
        """The thresholded graph of ``E``, after checking that it fits in memory.

        Raises
        ------
        MemoryError
            Its estimated size (:func:`estimate_threshold_graph_bytes`) is over the memory this
            machine has available; the message says to use ``graph="factored"``.
        """
        need = estimate_threshold_graph_bytes(E, threshold)
        have = _available_memory_bytes()
        if have is not None and need > 0.8 * have:
            raise MemoryError(
                f"the thresholded graph (graph='threshold', the paper preset) of these "
                f"{E.shape[0]:,} units would take about {need / 2**30:.1f} GiB, more than the "
                f"{have / 2**30:.1f} GiB this machine has available: its size grows with the "
                "square of the text. Use graph='factored' (the default preset), whose size grows "
                "linearly, or a higher threshold"
            )
        return cls(similarity_graph(E, threshold))

    @property
    def nnz(self) -> int:
        return int(self.S.nnz)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``S v``: ``(n,) float64``."""
        return self.S @ v


class FactoredGraph:
    """The unit graph ``S = E W E^T`` kept as its factor, never formed: MixPR's walk only needs
    products with the graph, and ``S v = E (W (E^T v))`` costs two passes over ``E``'s non-zeros.
    So the graph's memory and a walk step grow linearly with the text, where the thresholded
    ``E E^T`` of the paper grows with its square (Alonso and Millidge, "Mixture-of-PageRanks:
    Replacing Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4
    eq. 3 and appendix A.2, where the graph is ``E^T E`` thresholded at .27).

    ``W = diag(w)`` weighs each term's links: two units sharing a term are linked by the product
    of their TF-IDF weights of it times ``w``. With ``w = 1`` this is the cosine graph without a
    threshold (a threshold cannot be applied to a product that is never formed); MixPR's default
    (:class:`~longctx.mixpr.config.MixPRConfig` ``graph_idf_power``) uses
    ``w = (idf / max idf) ** power``, so the terms that link everything (low IDF) carry little
    of the walk, as the threshold dropped their weak edges.

    Parameters
    ----------
    E : (n, V) scipy sparse, L2-normalized rows
    term_weights : (V,) float >= 0, optional
        ``w`` (all ones by default).
    colsum : (n,) float64, optional
        The column sums when they are known (a saved index's, checked by its load): not
        computed again.

    Attributes
    ----------
    colsum : (n,) float64
        Column sums of ``S``: ``E (W (E^T 1))``.
    """

    kind = "factored"

    def __init__(self, E: sp.spmatrix, term_weights: np.ndarray | None = None, *, colsum=None):
        E = sp.csc_array(E, dtype=np.float64)
        self.E = E
        self._ET = E.T  # CSR view: E^T x is a gather over each term's units
        w = None
        if term_weights is not None:
            w = np.asarray(term_weights, dtype=np.float64)
            if w.shape != (E.shape[1],):
                raise ValueError(f"term_weights must have shape ({E.shape[1]},), got {w.shape}")
            if not np.isfinite(w).all() or (w.size and w.min() < 0):
                raise ValueError("term_weights must be finite and >= 0")
        self.term_weights = w
        n = E.shape[0]
        self.shape = (n, n)
        if colsum is not None and np.shape(colsum) != (n,):
            raise ValueError(f"colsum must have shape ({n},), got {np.shape(colsum)}")
        self.colsum = self.matvec(np.ones(n)) if colsum is None else colsum

    @property
    def nnz(self) -> int:
        """Non-zeros of the factor (what a walk step reads, twice)."""
        return int(self.E.nnz)

    def matvec(self, v: np.ndarray) -> np.ndarray:
        """``S v = E (W (E^T v))``: ``(n,) float64``."""
        u = self._ET @ v
        if self.term_weights is not None:
            u = u * self.term_weights
        return self.E @ u
