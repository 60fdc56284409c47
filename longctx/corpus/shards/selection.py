"""Picking a sharded search's hits from the shards' best units: the one selection rule of
:func:`longctx.selection.select_top` applied to the merged candidates, as one index over the whole
corpus would apply it (:class:`~longctx.corpus.shards.index.ShardedMixPRIndex`)."""

from __future__ import annotations

import numpy as np

from longctx.selection import select_top

__all__ = ["FIRST_CANDIDATES", "select_over_shards"]

#: Candidates each shard sends first for a token-budget selection (then 4x while needed).
FIRST_CANDIDATES = 256


def select_over_shards(blocks, sid, n_allowed, k, token_budget, closed, keep_open=False) -> list:
    """The units a search over the shards picks, as ``(block, local index, key, score)`` in
    corpus order: the shared selection rule (:func:`longctx.selection.select_top`) over the
    shards' best units. With ``k``: one round of ``k`` candidates per shard (the session is
    closed by it, and ``closed[0]`` set). With ``token_budget``: :data:`FIRST_CANDIDATES` per
    shard, then 4x as many while a shard's missing units could still change the greedy choice,
    so the choice is provably that of one index over the whole corpus.

    Parameters
    ----------
    blocks : backend
        The shards (``blocks.map("candidates", sid, size, last, with_counts)`` per shard:
        local indices, corpus keys, scores, token counts (a token budget only: a ``k``
        selection never counts tokens, as one index does not), the smallest token count not
        sent).
    sid : session id
    n_allowed : list of int
        Units each shard may return (after the filters).
    k, token_budget : int or None
        One of them (checked by the caller).
    closed : list of one bool
        Set to ``True`` once the shards closed the session.
    keep_open : bool, default False
        Leave the session open on the shards (the caller reads it again and closes it:
        ``explain=True``).
    """
    size = k if token_budget is None else FIRST_CANDIDATES
    sizes = [size] * len(n_allowed)
    while True:
        last = token_budget is None
        parts = blocks.map("candidates", sid, max(sizes), last and not keep_open, not last)
        closed[0] = last and not keep_open
        owner = np.concatenate([np.full(len(p[0]), b) for b, p in enumerate(parts)])
        local = np.concatenate([p[0] for p in parts]).astype(np.int64)
        keys = np.concatenate([p[1] for p in parts]).astype(np.int64)
        scores = np.concatenate([p[2] for p in parts]).astype(np.float64)
        by_key = np.argsort(keys, kind="stable")
        if token_budget is None:
            sel = by_key[select_top(scores[by_key], k=k)]
            return [(int(owner[j]), int(local[j]), int(keys[j]), scores[j]) for j in sel]
        counts = np.concatenate([p[3] for p in parts]).astype(np.int64)
        truncated = [b for b, p in enumerate(parts) if len(p[0]) < n_allowed[b]]
        order = np.lexsort((keys, -scores))  # (score desc, corpus order): the greedy order
        valid = len(order)
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        for b in truncated:  # units after a shard's worst candidate may be missing
            valid = min(valid, int(rank[owner == b].max()) + 1)
        pre = order[:valid]
        pre = pre[np.argsort(keys[pre], kind="stable")]
        sel = pre[select_top(scores[pre], token_budget=token_budget, token_counts=counts[pre])]
        used = int(counts[sel].sum())
        rest = [int(c) for c in counts[order[valid:]]]
        rest += [parts[b][4] for b in truncated if parts[b][4] is not None]
        if not truncated or used >= token_budget or token_budget - used < min(rest or [1 << 62]):
            return [(int(owner[j]), int(local[j]), int(keys[j]), scores[j]) for j in sel]
        sizes = [s * 4 for s in sizes]
