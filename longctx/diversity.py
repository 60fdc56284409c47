"""Diversity-aware selection: MMR and FPS with a recent-selection window.

Source: ``../shared/papers/002_1b3ce547c3231824.txt`` ("Diversity Enhances an LLM's Performance in
RAG and Long-context Task"), sec. 2.1 eq. 1 (MMR), eq. 2 (FPS), sec. 2.2 (summarization mode: the
mean chunk embedding stands in for the query) and sec. 3.1 (compression ratio, ordering of the
selected sentences: "index sort", "sort" and "m:n").

Definitions used everywhere in this module
------------------------------------------
* Embeddings are L2-normalized row by row first (an all-zero row stays zero), so
  ``cos(i, j) = e_i . e_j`` and the Euclidean distance is ``sqrt(2 - 2 cos(i, j))`` in ``[0, 2]``.
* ``W`` is the window: the last ``window`` selected items (``window=None``: all selected items,
  ``window=1``: only the last one).
* MMR (eq. 1) picks ``argmax_i  lambda * r_i - (1 - lambda) * max_{j in W} cos(i, j)``.
* FPS (eq. 2 with the reward and window hooks the paper describes in sec. 2.1) picks
  ``argmax_i  lambda * r_i + (1 - lambda) * min_{j in W} dist(i, j)``. The paper prints
  ``max_{j in S}`` in eq. 2; farthest point sampling (its ref. [12]) maximizes the distance to the
  *nearest* selected point, which is what is implemented (with ``max`` the term would not reward
  diversity).
* While nothing is selected yet, ``W`` is empty and the diversity term is 0, so the first pick is the
  item with the highest reward.
* Rewards: by default cosine similarity to the query embedding (``[-1, 1]``); with no query, the
  cosine similarity to the mean of all embeddings (summarization mode, sec. 2.2). User rewards
  (a retriever's scores, YOURA reaction scores, PageRank probabilities, ...) are min-max rescaled to
  ``[0, 1]`` (``rescale_rewards=True``, constant rewards become all 0) so that they sit in a range
  comparable to the cosine terms; ``rescale_rewards=False`` uses them as given.
* Budget: an item that does not fit in the tokens left is skipped and never reconsidered (the budget
  only shrinks); selection goes on while some remaining item fits, so the budget is never exceeded.
  Selection also stops after ``k`` items when ``k`` is given.
* Ties: the lowest index wins (``numpy.argmax``), so results are deterministic. Only values equal
  in floating point tie: two copies of one sentence get float32 cosines that can differ in the
  last bit depending on the code path, so which copy is picked first is not guaranteed.

Cost
----
``window=None`` (or a window at least as long as the most items that can be picked): exact lazy
greedy. An item's objective only decreases as picks are added, so stale values are upper bounds;
only a pool of the (2048) items with the highest bounds is kept exact, with one
``(pool, d) @ (d,)`` product per pick, and the pool is rebuilt when the best bound outside it
could win. An item entering the pool is first *probed*: its nearest missed pick by a 32-dimension
PCA projection is checked exactly, and that one cosine often lowers its bound enough to keep it
out. The items that stay catch up on the picks they missed with matrix-matrix products (compute
bound, all BLAS threads) instead of the memory-bound matrix-vector products of the dense loop.
Measured on this project's 2-core CPU, 100k MiniLM sentence embeddings, 5% token budget (~5,000
picks): 1.6 s at lambda 0.5, 0.9-1.0 s at 0.7, 0.5 s at 0.9, 2.2-2.4 s at 0.3 and 0
(``benchmarks/bench_diversity.py``). The picks are the dense loop's, up to the float32 rounding
described below.

Finite window (``window < picks``): the maximum over the last ``w`` picks can go *down* when an old
pick leaves the window, so stale values are no bounds and every pick costs one matrix-vector
product ``(n, d) @ (d,)`` (memory bound: ~10-25 ms for 100k x 384 float32 on one core of this
machine) plus ``O(n)`` vector work. ``window=1`` is the last pick's similarities; other windows
keep an exact sliding-window maximum over vectors with two stacks (amortized ``O(n)`` per pick,
``2 * min(window, picks) * n`` float32 of memory) rather than a ring buffer (``O(w n)`` per pick).

Similarities are float32: candidates whose objectives differ by less than ~1e-7 may be ordered
differently by the code paths (the result is the same within float32 precision). FPS distances of
near-duplicates (cosine near 1) magnify that rounding through ``sqrt(2 - 2 cos)``, to ~1e-5 for
distances ~1e-3.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence

import numpy as np

from longctx.checks import check_choice, check_float, check_int

__all__ = [
    "mmr_select",
    "fps_select",
    "reference_select",
    "compute_rewards",
    "order_selection",
    "diversify",
    "METHODS",
]

METHODS = ("mmr", "fps")
_POOL_SIZE = 2048  # items kept exact by the lazy greedy (window=None)
_CATCH_UP_ROWS = 512  # rows per matrix-matrix product when items catch up on missed picks
_PROBE_DIM = 32  # dimensions of the projection that finds a close pick before a full catch-up
_ORDER_RE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")


# ----------------------------------------------------------------------------------------------
# validation


def _as_embeddings(embeddings) -> np.ndarray:
    """``(n, d)`` float32, finite, rows L2-normalized (zero rows stay zero); never modified."""
    try:
        e = np.asarray(embeddings, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"embeddings must be a 2-D array of numbers: {exc}") from None
    if e.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (n_items, dim), got shape {e.shape}")
    if e.shape[0] and e.shape[1] == 0:
        raise ValueError("embeddings must have at least one dimension (dim >= 1)")
    sq = np.einsum("ij,ij->i", e, e)  # no (n, d) temporaries: this is on the 100k-row hot path
    if not np.isfinite(sq).all():
        if not np.isfinite(e).all():
            raise ValueError("embeddings must be finite (no NaN or inf)")
        sq = np.einsum("ij,ij->i", e.astype(np.float64), e.astype(np.float64))  # float32 overflow
    if np.abs(sq - 1.0).max(initial=0.0) <= 2e-5 and e.flags.c_contiguous:
        return e  # already unit rows (|norm - 1| <= 1e-5): no 4 * n * d-byte copy (read only)
    norms = np.sqrt(sq, dtype=np.float64)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(e / norms[:, None].astype(np.float32), dtype=np.float32)


def _as_vector(values, name: str, n: int, dtype=np.float64) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of numbers: {exc}") from None
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) to match embeddings, got {v.shape}")
    return v


def _as_token_counts(token_counts, n: int) -> np.ndarray:
    raw = _as_vector(token_counts, "token_counts", n, dtype=np.float64)
    if not np.isfinite(raw).all() or (raw < 0).any() or (raw != np.round(raw)).any():
        raise ValueError("token_counts must be non-negative integers")
    return raw.astype(np.int64)


def compute_rewards(embeddings, query_embedding=None) -> np.ndarray:
    """Cosine similarity of every item to the query (or to the mean item in summarization mode).

    Parameters
    ----------
    embeddings : (n, d) array
        Item embeddings (normalized here).
    query_embedding : (d,) array, optional
        The query. When ``None``, the mean of the normalized item embeddings is used
        (summarization mode, paper sec. 2.2).

    Returns
    -------
    (n,) float64 array in ``[-1, 1]``.

    Raises
    ------
    ValueError
        If ``query_embedding`` does not have shape ``(d,)``.
    """
    e = _as_embeddings(embeddings)
    return _rewards_from(e, query_embedding)


def _rewards_from(e: np.ndarray, query_embedding) -> np.ndarray:
    n, d = e.shape
    if query_embedding is None:
        q = e.mean(axis=0) if n else np.zeros(d, np.float32)
    else:
        q = _as_vector(query_embedding, "query_embedding", d, dtype=np.float32)
        if not np.isfinite(q).all():
            raise ValueError("query_embedding must be finite")
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        return np.zeros(n)
    return (e @ (q / norm).astype(np.float32)).astype(np.float64)


def _rescale(r: np.ndarray) -> np.ndarray:
    lo, hi = float(r.min()), float(r.max())
    if hi - lo <= 0.0:
        return np.zeros_like(r)
    return (r - lo) / (hi - lo)


def _prepare(
    embeddings,
    rewards,
    token_counts,
    token_budget,
    *,
    query_embedding,
    ratio,
    k,
    lambda_,
    window,
    rescale_rewards,
):
    lambda_ = check_float(lambda_, "lambda_", low=0.0, high=1.0)
    window = check_int(window, "window", minimum=1, allow_none=True)
    k = check_int(k, "k", minimum=1, allow_none=True)
    token_budget = check_int(token_budget, "token_budget", minimum=0, allow_none=True)
    ratio = check_float(ratio, "ratio", low=0.0, high=1.0, allow_none=True)
    if token_budget is not None and ratio is not None:
        raise ValueError("give at most one of token_budget and ratio")
    if token_budget is None and ratio is None and k is None:
        raise ValueError("give token_budget, ratio or k (when to stop selecting)")
    e = _as_embeddings(embeddings)
    n = e.shape[0]
    counts = None
    if token_counts is not None:
        counts = _as_token_counts(token_counts, n)
    elif token_budget is not None or ratio is not None:
        raise ValueError("token_counts is required with token_budget or ratio")
    if rewards is None:
        r = _rewards_from(e, query_embedding)
    else:
        if query_embedding is not None:
            raise ValueError("give rewards or query_embedding, not both")
        r = _as_vector(rewards, "rewards", n)
        if not np.isfinite(r).all():
            raise ValueError("rewards must be finite (no NaN or inf)")
        if rescale_rewards and n:
            r = _rescale(r)
    if ratio is not None:
        token_budget = int(np.floor(ratio * float(counts.sum()) + 1e-9))
    return e, r, counts, token_budget, k, lambda_, window


def _max_picks(counts, budget, k, n) -> int:
    """Upper bound on how many items can be picked (for sizing the window buffers)."""
    bound = n
    if k is not None:
        bound = min(bound, k)
    if counts is not None and budget is not None:
        csum = np.cumsum(np.sort(counts))
        bound = min(bound, int(np.searchsorted(csum, budget, side="right")))
    return bound


# ----------------------------------------------------------------------------------------------
# the greedy loop


class _WindowMax:
    """Exact elementwise maximum of the last ``window`` pushed ``(n,)`` vectors.

    ``window=None``: running maximum. ``window=1``: the last vector. Otherwise a two-stack sliding
    window: new vectors go on the back stack (with its running maximum); when the oldest must leave
    and the front stack is empty, the back stack is turned into suffix maxima (one pass), so each
    vector is touched a constant number of times: amortized ``O(n)`` per push.
    """

    def __init__(self, n: int, window: int | None, max_picks: int):
        self.window = None if window is None or window >= max_picks else window
        self.n = n
        self.size = 0
        if self.window is None:
            self.running = np.full(n, -np.inf, np.float32)
        elif self.window > 1:
            w = self.window
            self.back = np.empty((w, n), np.float32)
            self.front = np.empty((w, n), np.float32)
            self.nb = 0
            self.f_start = 0
            self.nf = 0
            self.back_max = np.full(n, -np.inf, np.float32)
        self.last = None

    def push(self, v: np.ndarray) -> None:
        self.size += 1
        if self.window is None:
            np.maximum(self.running, v, out=self.running)
            return
        if self.window == 1:
            self.last = v
            return
        w = self.window
        if self.size > w:  # the oldest leaves before the new one comes in
            if self.f_start == self.nf:  # front empty: move the back stack over as suffix maxima
                nb = self.nb  # >= 1 here: the window holds size - 1 >= w >= 2 vectors
                rev = slice(nb - 1, None, -1)
                np.maximum.accumulate(self.back[rev], axis=0, out=self.front[rev])
                self.nf, self.f_start, self.nb = nb, 0, 0
                self.back_max.fill(-np.inf)
            self.f_start += 1
            self.size -= 1
        self.back[self.nb] = v
        self.nb += 1
        np.maximum(self.back_max, v, out=self.back_max)

    def value(self) -> np.ndarray:
        if self.window is None:
            return self.running
        if self.window == 1:
            return self.last
        if self.f_start < self.nf:
            return np.maximum(self.front[self.f_start], self.back_max)
        return self.back_max


def _objective(base, p, lambda_: float, metric: str):
    """Eq. 1 / eq. 2 from the reward part ``base = lambda_ * r`` and the window's largest cosine."""
    if metric == "mmr":
        return base - (1.0 - lambda_) * p
    # fps: the distance to the nearest item of W, from the largest cosine (normalized rows)
    return base + (1.0 - lambda_) * np.sqrt(np.maximum(2.0 - 2.0 * p, 0.0))


def _dense_greedy(e, r, counts, budget, k, lambda_, window, metric) -> list[int]:
    """One matrix-vector product per pick; any window."""
    n = e.shape[0]
    if n == 0:
        return []
    alive = np.ones(n, dtype=bool)
    remaining = None
    if budget is not None:
        remaining = int(budget)
        alive &= counts <= remaining
    limit = n if k is None else k
    wmax = _WindowMax(n, window, max(1, _max_picks(counts, budget, k, n)))
    base = (lambda_ * r).astype(np.float64)
    neg_inf = -np.inf
    picks: list[int] = []
    obj = base.copy()  # W empty: the diversity term is 0
    while len(picks) < limit:
        obj[~alive] = neg_inf
        i = int(np.argmax(obj))
        if not alive[i]:
            break
        picks.append(i)
        alive[i] = False
        if remaining is not None:
            remaining -= int(counts[i])
            alive &= counts <= remaining
        if len(picks) >= limit or not alive.any():
            break
        if lambda_ == 1.0:  # no diversity term: plain top-by-reward
            obj = base.copy()
            continue
        wmax.push(e @ e[i])
        obj = _objective(base, wmax.value().astype(np.float64), lambda_, metric)
    return picks


def _lazy_greedy(
    e, r, counts, budget, k, lambda_, metric, max_picks, blas_threads=None
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
    the worst case to every item: the dense loop).
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
        ub = _objective(base, p, lambda_, metric)
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
        sample = e[np.random.default_rng(0).choice(n, min(n, 4096), replace=False)]
        basis = np.linalg.eigh(sample.T @ sample)[1][:, -_PROBE_DIM:]  # top principal axes
        low = np.ascontiguousarray(e @ basis, dtype=np.float32)  # (n, _PROBE_DIM)
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
        ub[rows] = _objective(base[rows], p[rows], lambda_, metric)

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
                with _blas_threads(blas_threads):
                    for rows, s0 in stale_chunks(stale, t):
                        sims = (e[rows] @ picked_emb[s0:t].T).max(axis=1).astype(np.float64)
                        p[rows] = np.maximum(p[rows], sims)
                stamp[stale] = t
                ub[stale] = _objective(base[stale], p[stale], lambda_, metric)
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
        pool_ub = np.where(live, _objective(pool_base, pool_p, lambda_, metric), neg_inf)
    return picks


def _greedy(e, r, counts, budget, k, lambda_, window, metric) -> list[int]:
    max_picks = _max_picks(counts, budget, k, e.shape[0])
    # Many small BLAS calls: a multi-threaded BLAS spends more time waking threads than computing
    # (20x slower on a busy 2-core machine), and the products are memory bound anyway.
    # The catch-up products of the lazy greedy are large: they get the threads back.
    if window is not None and window < max_picks:
        with _one_blas_thread(e.shape[0]):
            return _dense_greedy(e, r, counts, budget, k, lambda_, window, metric)
    threads = _blas_thread_count() if e.shape[0] >= 512 else None
    with _one_blas_thread(e.shape[0]):
        return _lazy_greedy(e, r, counts, budget, k, lambda_, metric, max_picks, threads)


def _one_blas_thread(n: int):
    if n < 512:  # too small for BLAS threading to matter; skip threadpoolctl's overhead
        return contextlib.nullcontext()
    return _blas_threads(1)


def _blas_thread_count() -> int | None:
    """The BLAS thread count in effect now (``None`` without threadpoolctl or a BLAS it knows)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return None
    counts = [m["num_threads"] for m in threadpool_info() if m.get("user_api") == "blas"]
    return max(counts) if counts else None


def _blas_threads(limit: int | None):
    if limit is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return contextlib.nullcontext()
    return threadpool_limits(limits=limit, user_api="blas")


def _select(metric, embeddings, rewards, token_counts, token_budget, **kw) -> list[int]:
    e, r, counts, budget, k, lambda_, window = _prepare(
        embeddings, rewards, token_counts, token_budget, **kw
    )
    return _greedy(e, r, counts, budget, k, lambda_, window, metric)


_PARAMS_DOC = """
    Parameters
    ----------
    embeddings : (n, d) array of float
        One embedding per item (sentence or chunk), any encoder; rows are L2-normalized here.
    rewards : (n,) array of float, optional
        The relevance of each item (``r_i``). ``None``: cosine similarity to ``query_embedding``,
        or, without a query, to the mean embedding (summarization mode, sec. 2.2). Given rewards
        are min-max rescaled to ``[0, 1]`` unless ``rescale_rewards=False``.
    token_counts : (n,) array of int >= 0, optional
        Tokens of each item; required with ``token_budget`` or ``ratio``.
    token_budget : int >= 0, optional
        Most tokens the selection may hold (never exceeded).
    query_embedding : (d,) array, optional
        The query, when ``rewards`` is ``None``.
    ratio : float in [0, 1], optional
        Compression ratio ``c_r`` (sec. 3.1): the budget is ``floor(ratio * sum(token_counts))``.
        Alternative to ``token_budget``.
    k : int >= 1, optional
        Most items to select (alone or together with a budget).
    lambda_ : float in [0, 1], default 0.5
        The paper's alpha: weight of the reward against diversity. ``1`` is plain top-by-reward
        selection; ``0`` is pure diversity after a first pick by reward.
    window : int >= 1, optional
        ``w``: diversity is measured against the last ``window`` selected items only; ``None``
        means all selected items.
    rescale_rewards : bool, default True
        Min-max rescale user ``rewards`` to ``[0, 1]`` (cosine rewards are never rescaled).

    Returns
    -------
    list of int
        Indices of the selected items **in selection order** (best first); see
        :func:`order_selection` to reorder them (e.g. back to document order).

    Raises
    ------
    TypeError, ValueError
        On bad shapes or values, naming the argument (``embeddings``, ``rewards``,
        ``token_counts``, ``query_embedding``, ``lambda_``, ``window``, ...), before any work; when
        none of ``token_budget``, ``ratio``, ``k`` is given, or both ``token_budget`` and ``ratio``.
"""


def mmr_select(
    embeddings,
    rewards=None,
    token_counts=None,
    token_budget: int | None = None,
    *,
    query_embedding=None,
    ratio: float | None = None,
    k: int | None = None,
    lambda_: float = 0.5,
    window: int | None = None,
    rescale_rewards: bool = True,
) -> list[int]:
    return _select(
        "mmr",
        embeddings,
        rewards,
        token_counts,
        token_budget,
        query_embedding=query_embedding,
        ratio=ratio,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=rescale_rewards,
    )


def fps_select(
    embeddings,
    rewards=None,
    token_counts=None,
    token_budget: int | None = None,
    *,
    query_embedding=None,
    ratio: float | None = None,
    k: int | None = None,
    lambda_: float = 0.5,
    window: int | None = None,
    rescale_rewards: bool = True,
) -> list[int]:
    return _select(
        "fps",
        embeddings,
        rewards,
        token_counts,
        token_budget,
        query_embedding=query_embedding,
        ratio=ratio,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=rescale_rewards,
    )


mmr_select.__doc__ = (
    "Maximal Marginal Relevance selection with a recent-selection window (paper eq. 1).\n\n"
    "    Picks ``argmax_i lambda_ * r_i - (1 - lambda_) * max_{j in W} cos(i, j)`` until the budget\n"
    "    or ``k`` is reached (module docstring: budget, ties and window rules).\n" + _PARAMS_DOC
)
fps_select.__doc__ = (
    "Farthest Point Sampling with reward and window (paper eq. 2, sec. 2.1).\n\n"
    "    Picks ``argmax_i lambda_ * r_i + (1 - lambda_) * min_{j in W} ||e_i - e_j||`` (normalized\n"
    "    embeddings, distances in [0, 2]); same budget, reward, tie and window rules as\n"
    "    :func:`mmr_select`.\n" + _PARAMS_DOC
)


def reference_select(
    embeddings,
    rewards=None,
    token_counts=None,
    token_budget: int | None = None,
    *,
    method: str = "mmr",
    query_embedding=None,
    ratio: float | None = None,
    k: int | None = None,
    lambda_: float = 0.5,
    window: int | None = None,
    rescale_rewards: bool = True,
) -> list[int]:
    """Naive reference of :func:`mmr_select` / :func:`fps_select`: a Python loop over candidates.

    Evaluates eq. 1 (or eq. 2 with explicit Euclidean distances) item by item in float64, for
    testing and benchmarking only (``O(picks * n * w * d)``). Same arguments and result.
    """
    check_choice(method, "method", METHODS)
    e, r, counts, budget, k, lambda_, window = _prepare(
        embeddings,
        rewards,
        token_counts,
        token_budget,
        query_embedding=query_embedding,
        ratio=ratio,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=rescale_rewards,
    )
    e = e.astype(np.float64)
    n = e.shape[0]
    picks: list[int] = []
    remaining = budget
    while k is None or len(picks) < k:
        win = picks if window is None else picks[-window:]
        best, best_val = -1, -np.inf
        for i in range(n):
            if i in picks or (remaining is not None and counts[i] > remaining):
                continue
            if not win:
                div = 0.0
            elif method == "mmr":
                div = -max(float(e[i] @ e[j]) for j in win)
            else:
                div = min(float(np.linalg.norm(e[i] - e[j])) for j in win)
            val = lambda_ * r[i] + (1.0 - lambda_) * div
            if val > best_val:
                best, best_val = i, val
        if best < 0:
            break
        picks.append(best)
        if remaining is not None:
            remaining -= int(counts[best])
    return picks


# ----------------------------------------------------------------------------------------------
# ordering


def _parse_order(strategy) -> tuple[int, int] | None:
    if not isinstance(strategy, str):
        raise TypeError(f"strategy must be a str, got {type(strategy).__name__}")
    if strategy == "document":
        return None
    if strategy == "score":
        return (1, 0)
    m = _ORDER_RE.match(strategy)
    if m is None or int(m.group(1)) < 1:
        raise ValueError(
            f"strategy must be 'document', 'score' or 'm:n' with m >= 1, n >= 0, got {strategy!r}"
        )
    return int(m.group(1)), int(m.group(2))


def order_selection(indices: Sequence[int], scores=None, strategy: str = "document") -> list[int]:
    """Order selected items for the prompt (paper sec. 3.1, Tables 2 and 4-8).

    Parameters
    ----------
    indices : sequence of int
        Selected item indices. When ``scores`` is ``None`` their order is taken as the rank
        (best first), e.g. the selection order that :func:`mmr_select` returns.
    scores : array of float, optional
        Indexed by item (``scores[i]`` for ``i`` in ``indices``; length > ``max(indices)``). When
        given, the rank is by descending score, ties kept in the order of ``indices``.
    strategy : str
        ``"document"``: ascending index, the original order (the paper's "index sort").
        ``"score"``: by rank, best first (the paper's "sort", i.e. ``"1:0"``).
        ``"m:n"``: the best ``m`` go to the front, the next ``n`` to the back, the next ``m`` to the
        front after the first ones, the next ``n`` to the back before the earlier back ones, and so
        on, so the best items sit at both ends and the weakest in the middle ("lost in the
        middle"); on each side rank decreases towards the middle (the best back item is last).

    Returns
    -------
    list of int
        The same indices, reordered.

    Raises
    ------
    TypeError, ValueError
        On an unknown ``strategy``, ``indices`` with duplicates, or ``scores`` too short.
    """
    mn = _parse_order(strategy)
    idx = [int(i) for i in indices]
    if len(set(idx)) != len(idx):
        raise ValueError("indices must not contain duplicates")
    if mn is None:
        return sorted(idx)
    if scores is not None and idx:
        s = np.asarray(scores, dtype=np.float64)
        if s.ndim != 1 or s.shape[0] <= max(idx) or min(idx) < 0:
            raise ValueError(
                f"scores must be a 1-D array indexed by item (length > {max(idx)}), "
                f"got shape {s.shape}"
            )
        order = np.argsort(-s[idx], kind="stable")
        idx = [idx[j] for j in order]
    m, n = mn
    front: list[int] = []
    back: list[int] = []
    pos = 0
    while pos < len(idx):
        front.extend(idx[pos : pos + m])
        pos += m
        if n:
            back.extend(idx[pos : pos + n])
            pos += n
    return front + back[::-1]


# ----------------------------------------------------------------------------------------------
# high-level convenience


def diversify(
    text: str | Sequence[str],
    query: str | None = None,
    *,
    token_budget: int | None = None,
    ratio: float | None = None,
    k: int | None = None,
    method: str = "mmr",
    lambda_: float = 0.5,
    window: int | None = None,
    order: str = "document",
    encoder=None,
    token_counter: Callable[[str], int] | None = None,
    rewards=None,
    rescale_rewards: bool = True,
    sentence_backend: str = "auto",
):
    """Select diverse, relevant sentences of a text for a query (or a summary without one).

    Parameters
    ----------
    text : str or sequence of str
        A raw text (split with :func:`longctx.text.split_sentences`) or ready units (sentences or
        chunks). For units, passage offsets refer to ``" ".join(units)``.
    query : str, optional
        The question; ``None`` selects for a summary (reward = similarity to the mean embedding).
    token_budget, ratio, k :
        When to stop, as in :func:`mmr_select` (tokens counted with ``token_counter``).
    method : {"mmr", "fps"}
    lambda_, window, rewards, rescale_rewards :
        As in :func:`mmr_select` (``rewards``: ``(n_units,)``, replaces query similarity).
    order : str
        :func:`order_selection` strategy for the result (default document order).
    encoder : optional
        Anything :func:`longctx.embeddings.get_encoder` accepts (default: all-MiniLM-L6-v2).
    token_counter : callable str -> int, optional
        Default :func:`longctx.tokens.count_tokens`.
    sentence_backend : str
        Backend of :func:`longctx.text.split_sentences`.

    Returns
    -------
    list of :class:`longctx.types.Passage`
        ``score`` is the unit's reward before rescaling (cosine similarity or the given reward);
        ``index`` the unit's position; ``text == source[start:end]``.

    Raises
    ------
    TypeError, ValueError
        On bad arguments, before any embedding work.
    """
    from longctx.embeddings import get_encoder
    from longctx.text import split_sentences
    from longctx.tokens import count_many
    from longctx.types import Passage

    check_choice(method, "method", METHODS)
    _parse_order(order)
    check_float(lambda_, "lambda_", low=0.0, high=1.0)
    check_int(window, "window", minimum=1, allow_none=True)
    if query is not None and not isinstance(query, str):
        raise TypeError(f"query must be a str or None, got {type(query).__name__}")
    if token_budget is None and ratio is None and k is None:
        raise ValueError("give token_budget, ratio or k (when to stop selecting)")
    if isinstance(text, str):
        source = text
        spans = split_sentences(text, backend=sentence_backend)
    else:
        units = list(text)
        for j, u in enumerate(units):
            if not isinstance(u, str):
                raise TypeError(f"text[{j}] must be a str, got {type(u).__name__}")
        source = " ".join(units)
        spans, pos = [], 0
        for u in units:
            spans.append((pos, pos + len(u)))
            pos += len(u) + 1
    if rewards is not None:
        rewards = _as_vector(rewards, "rewards", len(spans))
    if not spans:
        return []
    texts = [source[a:b] for a, b in spans]
    enc = get_encoder(encoder)
    emb = enc.embed_documents(texts)
    q = enc.embed_query(query) if (query is not None and rewards is None) else None
    counts = count_many(texts, token_counter)
    select = mmr_select if method == "mmr" else fps_select
    picks = select(
        emb,
        rewards,
        counts,
        token_budget,
        query_embedding=q,
        ratio=ratio,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=rescale_rewards,
    )
    shown = rewards if rewards is not None else compute_rewards(emb, q)
    return [
        Passage(spans[i][0], spans[i][1], texts[i], float(shown[i]), i)
        for i in order_selection(picks, None, order)
    ]
