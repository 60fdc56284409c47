"""The model passes of YOURA's :class:`~longctx.youra.scorer.ReactionScorer` over padded batches
of windows: one forward pass of a batch (:func:`forward`), the query-independent context and
suffix passes that fill the window cache (:func:`context_batch`, :func:`warm`), and the loop that
scores every window of some layouts for one query, cached windows first (:func:`vectors`). The
scorer's methods (``_forward``, ``_context_batch``, ``_warm``, ``_vectors``) call these; they read
the scorer's model, settings and window cache and run under its lock.

Reference: Yun Joon Soh, Hanxian Huang, Yuandong Tian, Jishen Zhao, "You Only Use Reactive
Attention Slice For Long Context Retrieval", 2024, arXiv:2409.13695, eq. 1-5 (the reaction vector
from the attention column sums of the context, suffix and query rows) and sec. 3.3 (windows of the
context window size, scored on their own and concatenated). Padding, masks and the cache are
described in the :mod:`longctx.youra` docstring ("Work done once, not twice", "Batches, dtype and
devices").
"""

from __future__ import annotations

import contextlib
import time

import numpy as np

from longctx.youra import memory
from longctx.youra.config import YouraOutOfMemoryError


@contextlib.contextmanager
def _recording(scorer):
    """No-grad inference with the attention recorder on the scorer's layers; yields it."""
    from longctx.attention import record_attention_stats

    with (
        scorer._torch.inference_mode(),
        record_attention_stats(scorer.model, scorer._layers, row_block=scorer.row_block) as rec,
    ):
        yield rec


def forward(scorer, ids, cache, lens=None, past_mask=None):
    """One forward pass of a batch of token rows over ``cache`` (a DynamicCache, appended
    to in place).

    ``ids``: one list of token ids a row. Rows of different lengths (``lens``, empty cache)
    are right-padded: the attention mask hides the pad keys and real rows keep positions
    ``0..len-1``, as in a pass of their own. With ``past_mask`` (``(batch, cache length)``
    bool, True at each row's real cached tokens; rows all of one length) the pad keys of
    the cache are masked and the new tokens of a row take the positions after its real
    tokens. A batch without padding runs exactly as an unbatched pass (no mask).
    """
    torch = scorer._torch
    b = len(ids)
    width = max(len(x) for x in ids)
    x = torch.zeros((b, width), dtype=torch.long)
    for r, row in enumerate(ids):
        x[r, : len(row)] = torch.as_tensor(row, dtype=torch.long)
    kwargs = dict(scorer._fwd_kwargs)
    kwargs[scorer._cache_arg] = cache
    if lens is not None and any(n != width for n in lens):
        mask = torch.arange(width)[None, :] < torch.as_tensor(lens)[:, None]
        kwargs["attention_mask"] = mask.long().to(scorer.device)
    elif past_mask is not None and not bool(past_mask.all()):
        mask = torch.cat([past_mask, torch.ones((b, width), dtype=torch.bool)], dim=1)
        pos = past_mask.sum(dim=1, keepdim=True) + torch.arange(width)[None, :]
        kwargs["attention_mask"] = mask.long().to(scorer.device)
        kwargs["position_ids"] = pos.to(scorer.device)
    try:
        scorer.model(input_ids=x.to(scorer.device), **kwargs)
    except memory.oom_errors() as exc:
        if scorer.device.type == "cuda":
            torch.cuda.empty_cache()
        total = width + (0 if past_mask is None else past_mask.shape[1])
        raise YouraOutOfMemoryError(
            f"YOURA ran out of {scorer.device.type} memory in a forward pass of {b} window(s) "
            f"x {total} tokens ({exc.__class__.__name__}); lower max_window (now "
            f"{scorer._window} tokens a pass), batch_size (now {scorer._batch_size} windows a "
            f"pass) or cache_bytes (now {scorer.cache_bytes} bytes kept for the window cache)"
        ) from exc


def context_batch(scorer, seqs, rec):
    """Query-independent passes of a batch of windows (token id lists): the context pass
    (recorded for ``baseline="paper"``), then the suffix pass (recorded, instruction
    baseline), rows right-padded. Returns ``(cache, past_mask, bases)``: the batch's
    DynamicCache (context, padding, suffix), its mask of real tokens (``(batch, length)``
    bool, or None without padding) and per row ``(base_sums (c,) float64, base_rows)``."""
    torch = scorer._torch
    lens = [len(s) for s in seqs]
    width = max(lens)
    cache = scorer._new_cache()
    real = torch.arange(width)[None, :] < torch.as_tensor(lens)[:, None]
    past_mask = None if bool(real.all()) else real
    if scorer.baseline == "paper":
        rec.row_mask = past_mask  # padding rows of the batch are left out of the sums
        try:
            scorer._forward(seqs, cache, lens=lens)
        finally:
            rec.row_mask = None
        sums = rec.pop()
        rows = lens
    else:
        with rec.paused():
            scorer._forward(seqs, cache, lens=lens)
        s = len(scorer._suffix_ids)
        scorer._forward([scorer._suffix_ids] * len(seqs), cache, past_mask=past_mask)
        sums = rec.pop()
        rows = [s] * len(seqs)
        if past_mask is not None:
            past_mask = torch.cat([past_mask, torch.ones((len(seqs), s), dtype=torch.bool)], 1)
    sums = sums.double().cpu().numpy()
    bases = [(sums[r, : lens[r]].copy(), rows[r]) for r in range(len(seqs))]
    return cache, past_mask, bases


def warm(scorer, layouts) -> int:
    """Compute and cache the windows of ``layouts`` that are not cached, while they fit in
    the budget. Returns the number of windows computed."""
    scorer._setup()
    if not scorer.cache_bytes:
        return 0
    done = 0
    with scorer._lock:
        todo, seen = [], set()
        for lay in layouts:
            for i, key in enumerate(lay.wkeys):
                if key not in scorer._windows and key not in seen:
                    seen.add(key)
                    todo.append((lay, i))
        bar = scorer._progress(len(todo))
        try:
            with _recording(scorer) as rec:
                for batch in scorer._batches(
                    todo, lambda t: t[0].windows[t[1]][1] - t[0].windows[t[1]][0]
                ):
                    if scorer._used >= scorer.cache_bytes:
                        break
                    seqs = [list(lay.ids[slice(*lay.windows[i])]) for lay, i in batch]
                    cache, _, bases = scorer._context_batch(seqs, rec)
                    scorer._stats["misses"] += len(batch)
                    evictions = scorer._stats["evictions"]
                    stored = scorer._store_batch(
                        [lay.wkeys[i] for lay, i in batch], seqs, cache, bases
                    )
                    del cache
                    done += len(batch)
                    if bar is not None:
                        bar.update(len(batch))
                    if scorer._stats["evictions"] > evictions or not all(stored):
                        break  # the budget is full: more would evict what was just computed
        finally:
            if bar is not None:
                bar.close()
    return done


def vectors(scorer, layouts, query: str, keep: dict | None = None):
    """Reaction vectors (eq. 1-5) of several layouts for one query.

    Windows run in padded batches (``batch_size``): cached windows first (query pass only,
    their stored caches right-padded into one batch), then the others (context and suffix
    passes, stored, then the query pass on the same batch cache). Pad positions are masked
    and never enter a vector.

    Returns ``(vectors, info)``: one ``(n_tokens,) float64`` array per layout, and a dict
    with the windows scored, cache hits and misses of this query, the forward ``passes``
    run and the seconds spent in context passes (``context_s``) and query passes
    (``query_s``). ``keep`` (a dict, for :mod:`longctx.youra.explain`) receives per layout the
    attention each token got before and after the query was appended (``"before"``,
    ``"after"``: lists of ``(n_tokens,) float64``, :meth:`ReactionScorer._attention`).
    """
    q_ids = scorer._query_ids(query)
    q = len(q_ids)
    out = [np.empty(len(lay.ids), dtype=np.float64) for lay in layouts]
    info = {
        "windows": 0,
        "cache_hits": 0,
        "cache_misses": 0,
        "passes": 0,
        "context_s": 0.0,
        "query_s": 0.0,
    }

    def length(t):
        w0, w1 = layouts[t[0]].windows[t[1]]
        return w1 - w0

    with scorer._lock:
        tasks = [(li, wi) for li, lay in enumerate(layouts) for wi in range(len(lay.windows))]
        info["windows"] = len(tasks)
        groups: dict[str, list] = {}  # windows of the same tokens are scored once
        for task in tasks:
            groups.setdefault(layouts[task[0]].wkeys[task[1]], []).append(task)
        first = [g[0] for g in groups.values()]
        info["cache_hits"] = len(tasks) - len(first)
        scorer._stats["hits"] += len(tasks) - len(first)
        # cached windows first: they are then the most recent when the misses evict
        hits = [t for t in first if layouts[t[0]].wkeys[t[1]] in scorer._windows]
        misses = [t for t in first if layouts[t[0]].wkeys[t[1]] not in scorer._windows]
        batches = [(b, True) for b in scorer._batches(hits, length)]
        batches += [(b, False) for b in scorer._batches(misses, length)]
        bar = scorer._progress(len(tasks))
        try:
            with _recording(scorer) as rec:
                for batch, cached in batches:
                    t = time.perf_counter()
                    keys = [layouts[li].wkeys[wi] for li, wi in batch]
                    cs = [length(task) for task in batch]
                    entries = [scorer._windows.get(k) for k in keys] if cached else None
                    if cached and all(e is not None for e in entries):
                        for k in keys:
                            scorer._windows.move_to_end(k)
                        scorer._stats["hits"] += len(batch)
                        info["cache_hits"] += len(batch)
                        cache, past_mask = scorer._cache_from(entries)
                        bases = [(e.base_sums, e.base_rows) for e in entries]
                    else:
                        scorer._stats["misses"] += len(batch)
                        info["cache_misses"] += len(batch)
                        seqs = [
                            list(layouts[li].ids[slice(*layouts[li].windows[wi])])
                            for li, wi in batch
                        ]
                        cache, past_mask, bases = scorer._context_batch(seqs, rec)
                        info["passes"] += 1 if scorer.baseline == "paper" else 2
                        if scorer.cache_bytes:
                            stored = scorer._store_batch(keys, seqs, cache, bases)
                            if scorer._store_dtype is not None and any(stored):
                                # score with the stored (rounded) cache, as a later hit would
                                for layer in cache.layers:
                                    for r in np.flatnonzero(stored).tolist():
                                        for x in (layer.keys, layer.values):
                                            x[r] = x[r].to(scorer._store_dtype)
                    t2 = time.perf_counter()
                    info["context_s"] += t2 - t
                    scorer._forward([q_ids] * len(batch), cache, past_mask=past_mask)
                    info["passes"] += 1
                    q_sums = rec.pop().double().cpu().numpy()
                    del cache
                    for r in range(len(batch)):
                        base_sums, base_rows = bases[r]
                        vec = scorer._window_vector(base_sums, base_rows, q_sums[r, : cs[r]], q)
                        ba = None
                        if keep is not None:  # explain=True
                            ba = scorer._attention(base_sums, base_rows, q_sums[r, : cs[r]], q)
                        for li, wi in groups[keys[r]]:
                            t0, t1 = layouts[li].windows[wi]
                            out[li][t0:t1] = vec
                            if ba is not None:
                                _kept(keep, layouts)[0][li][t0:t1] = ba[0]
                                _kept(keep, layouts)[1][li][t0:t1] = ba[1]
                    info["query_s"] += time.perf_counter() - t2
                    if bar is not None:
                        bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()
    return out, info


def _kept(keep: dict, layouts):
    """``(before, after)`` lists of per-layout arrays in ``keep``, made on first use."""
    if "before" not in keep:
        keep["before"] = [np.zeros(len(lay.ids)) for lay in layouts]
        keep["after"] = [np.zeros(len(lay.ids)) for lay in layouts]
    return keep["before"], keep["after"]
