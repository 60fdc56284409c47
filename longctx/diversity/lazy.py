"""Exact lazy greedy for ``window=None`` (every pick in the window).

An item's objective only decreases as picks are added (:func:`longctx.diversity.objective.objective`
is non-increasing in the largest cosine, which only grows), so stale values are upper bounds;
only a pool of the (2048) items with the highest bounds is kept exact, with one
``(pool, d) @ (d,)`` product per pick, and the pool is rebuilt when the best bound outside it
could win. An item entering the pool is first *probed*: its nearest missed pick by a 32-dimension
PCA projection is checked exactly, and that one cosine often lowers its bound enough to keep it
out. The items that stay catch up on the picks they missed with matrix-matrix products (compute
bound, all BLAS threads) instead of the memory-bound matrix-vector products of the dense loop.
Measured on this project's 2-core CPU, 100k MiniLM sentence embeddings, 5% token budget (~5,000
picks): 1.6 s at lambda 0.5, 0.9-1.0 s at 0.7, 0.5 s at 0.9, 2.2-2.4 s at 0.3 and 0
(``benchmarks/bench_diversity.py``). The picks are the dense loop's, up to float32 rounding
(see :mod:`longctx.diversity`).
"""

from __future__ import annotations

import numpy as np

from longctx.diversity.blas import blas_threads as use_blas_threads
from longctx.diversity.objective import objective

__all__ = ["lazy_greedy", "probe_projection"]

_POOL_SIZE = 2048  # items kept exact by the lazy greedy (window=None)
_CATCH_UP_ROWS = 512  # rows per matrix-matrix product when items catch up on missed picks
_PROBE_DIM = 32  # dimensions of the projection that finds a close pick before a full catch-up


def probe_projection(e: np.ndarray) -> np.ndarray:
    """The ``(n, _PROBE_DIM)`` float32 PCA projection of ``e`` the probes use (query-independent,
    so an index computes it once). It only decides which exact cosine is checked first: the picks
    do not depend on it."""
    n = e.shape[0]
    sample = e[np.random.default_rng(0).choice(n, min(n, 4096), replace=False)]
    basis = np.linalg.eigh(sample.T @ sample)[1][:, -_PROBE_DIM:]  # top principal axes
    return np.ascontiguousarray(e @ basis, dtype=np.float32)


def lazy_greedy(
    e, r, counts, budget, k, lambda_, metric, max_picks, blas_threads=None, projection=None
) -> list[int]:
    """Exact greedy for a window holding every pick (``window=None``), with a candidate pool.

    With all picks in ``W`` an item's largest cosine to the picks only grows, so its objective only
    shrinks: a value computed earlier is an upper bound. Only a *pool* of the items with the
    highest bounds is kept exact (one ``(pool, d) @ (d,)`` product per pick, on arrays local to
    the pool); ``thr``, the largest bound outside the pool, certifies the pool's best item as the
    exact argmax while it is above ``thr`` (ties to the lowest index, as in the dense loop). When
    the certificate fails the pool is rebuilt from the bounds: the items coming in catch up on the
    picks they missed (matrix-matrix products over row chunks sorted by staleness, with
    ``blas_threads`` threads). Each failed rebuild makes at least one more item exact, so
    rebuilding terminates; after 4 failures in a row right after a rebuild the pool doubles (in
    the worst case to every item: the dense loop). ``projection``: :func:`probe_projection` of
    ``e``, when the caller keeps it (otherwise computed here).
    """
    n, d = e.shape
    if n == 0:
        return []
    limit = n if k is None else k
    remaining = None if budget is None else int(budget)
    neg_inf = -np.inf
    base = (lambda_ * r).astype(np.float64)
    ub = base.copy()
    if remaining is not None:
        ub[counts > remaining] = neg_inf
    i = int(np.argmax(ub))
    if ub[i] == neg_inf:
        return []
    picks = [i]
    no_div = lambda_ == 1.0
    if remaining is not None:
        remaining -= int(counts[i])
    if no_div:
        p = np.zeros(n)
    else:
        p = (e @ e[i]).astype(np.float64)  # exact for every item after the first pick
        ub = objective(base, p, lambda_, metric)
    ub[i] = neg_inf
    if remaining is not None:
        ub[counts > remaining] = neg_inf
    stamp = np.ones(n, dtype=np.int64)  # picks accounted for in p[j]
    picked_emb = np.empty((max(1, max_picks), d), np.float32)
    picked_emb[0] = e[i]
    sorted_counts = np.sort(counts) if counts is not None else None
    size = min(n, _POOL_SIZE)
    fails = 0  # failed certificates in a row right after a rebuild
    pool = pool_e = None
    thr = neg_inf
    fresh = False  # the pool was (re)built for the current pick
    # Probes: before a full catch-up, an item's closest missed pick by a PCA projection of the
    # embeddings is checked exactly; that cosine alone often shows the item cannot win (its bound
    # drops), sparing the catch-up. Any exact cosine to a pick is a valid lower bound of p.
    probing = not no_div and n > size and d > 2 * _PROBE_DIM
    if probing:
        if projection is not None and projection.shape == (n, _PROBE_DIM):
            low = projection  # computed once by the caller (an index)
        else:
            low = probe_projection(e)  # (n, _PROBE_DIM)
        picked_low = np.empty((max(1, max_picks), _PROBE_DIM), np.float32)
        picked_low[0] = low[i]
        probed = np.zeros(n, dtype=np.int64)  # pick count at the last probe

    band, band_thr = None, neg_inf  # the 8 * size best bounds, and the best bound outside them

    def top(size):
        """The ``size`` items with the highest bounds, and the highest bound of the others."""
        nonlocal band, band_thr
        if band is not None:
            band = band[ub[band] > neg_inf]
        if band is None or band.size < 2 * size or float(ub[band].max()) <= band_thr:
            alive = np.flatnonzero(ub > neg_inf)  # (re)choose the band from every item
            m = 8 * size
            if m >= alive.size:
                band, band_thr = alive, neg_inf
            else:
                part = np.argpartition(-ub[alive], m)
                band, band_thr = alive[part[:m]], float(ub[alive[part[m:]]].max())
        if size >= band.size:
            return np.sort(band), band_thr
        part = np.argpartition(-ub[band], size)
        rest = float(ub[band[part[size:]]].max())
        return np.sort(band[part[:size]]), max(rest, band_thr)

    def stale_chunks(rows, t):
        """``rows`` by stamp, most recent first, in chunks of at most ``_CATCH_UP_ROWS`` rows (and
        4M similarities), each with its stalest stamp: the chunk is compared with the picks from
        there on (rows that had seen some of them just see them again: max is idempotent)."""
        rows = rows[np.argsort(-stamp[rows], kind="stable")]
        step = max(1, min(_CATCH_UP_ROWS, (1 << 22) // max(1, t - int(stamp[rows[-1]]))))
        for a in range(0, rows.size, step):
            chunk = rows[a : a + step]
            yield chunk, int(stamp[chunk[-1]])

    def probe(rows, t):
        for chunk, s0 in stale_chunks(rows, t):
            near = np.argmax(low[chunk] @ picked_low[s0:t].T, axis=1) + s0
            cos = np.einsum("ij,ij->i", e[chunk], picked_emb[near]).astype(np.float64)
            p[chunk] = np.maximum(p[chunk], cos)
        probed[rows] = t
        ub[rows] = objective(base[rows], p[rows], lambda_, metric)

    def build(size):
        t = len(picks)
        pool, thr = top(size)
        if probing:  # probe the stale items of the pool, then choose the pool again (<= 4 times)
            for _ in range(4):
                todo = pool[(stamp[pool] < t) & (probed[pool] < t)]
                if todo.size == 0 or todo.size * 8 < pool.size:
                    break
                probe(todo, t)
                pool, thr = top(size)
        if not no_div:
            stale = pool[stamp[pool] < t]
            if stale.size:
                with use_blas_threads(blas_threads):
                    for rows, s0 in stale_chunks(stale, t):
                        sims = (e[rows] @ picked_emb[s0:t].T).max(axis=1).astype(np.float64)
                        p[rows] = np.maximum(p[rows], sims)
                stamp[stale] = t
                ub[stale] = objective(base[stale], p[stale], lambda_, metric)
        return pool, (None if no_div else e[pool]), thr

    while len(picks) < limit:
        if pool is None:
            pool, pool_e, thr = build(size)
            pool_ub, pool_p, pool_base = ub[pool], p[pool], base[pool]
            pool_counts = None if remaining is None else counts[pool]
            fresh = True
        j = int(np.argmax(pool_ub)) if pool_ub.size else -1
        v = pool_ub[j] if j >= 0 else neg_inf
        if v == neg_inf and thr == neg_inf:
            break  # nothing left that fits
        if not (v > thr):  # the certificate fails: rebuild (larger after repeated fresh failures)
            fails = fails + 1 if fresh else 0
            if fails >= 4:
                size, fails = min(n, 2 * size), 0
            p[pool], ub[pool], stamp[pool] = pool_p, pool_ub, len(picks)
            pool = None
            continue
        i = int(pool[j])
        t = len(picks)
        picks.append(i)
        picked_emb[t] = e[i]
        if probing:
            picked_low[t] = low[i]
        ub[i] = pool_ub[j] = neg_inf
        fresh = False
        if remaining is not None:
            before = remaining
            remaining -= int(counts[i])
            # kill the items that no longer fit, only when some count lies in (remaining, before]
            if np.searchsorted(sorted_counts, before, "right") > np.searchsorted(
                sorted_counts, remaining, "right"
            ):
                ub[counts > remaining] = neg_inf
                pool_ub[pool_counts > remaining] = neg_inf
        if no_div or len(picks) >= limit:
            continue
        np.maximum(pool_p, pool_e @ e[i], out=pool_p)
        live = pool_ub > neg_inf
        pool_ub = np.where(live, objective(pool_base, pool_p, lambda_, metric), neg_inf)
    return picks
