"""The dense greedy loop: one matrix-vector product per pick, any window.

Finite window (``window < picks``): the maximum over the last ``w`` picks can go *down* when an old
pick leaves the window, so stale values are no bounds (the lazy greedy of
:mod:`longctx.diversity.lazy` does not apply) and every pick costs one matrix-vector product
``(n, d) @ (d,)`` (memory bound: ~10-25 ms for 100k x 384 float32 on one core of this project's
machine) plus ``O(n)`` vector work. ``window=1`` is the last pick's similarities; other windows
keep an exact sliding-window maximum over vectors with two stacks (amortized ``O(n)`` per pick,
``2 * min(window, picks) * n`` float32 of memory) rather than a ring buffer (``O(w n)`` per pick).
"""

from __future__ import annotations

import numpy as np

from longctx.diversity.inputs import max_picks
from longctx.diversity.objective import objective

__all__ = ["WindowMax", "dense_greedy"]


class WindowMax:
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


def dense_greedy(e, r, counts, budget, k, lambda_, window, metric) -> list[int]:
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
    wmax = WindowMax(n, window, max(1, max_picks(counts, budget, k, n)))
    base = (lambda_ * r).astype(np.float64)
    neg_inf = -np.inf
    picks: list[int] = []
    obj = objective(base, None, lambda_, metric)  # W empty: the diversity term is 0
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
        obj = objective(base, wmax.value().astype(np.float64), lambda_, metric)
    return picks
