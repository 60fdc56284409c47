"""Padded batches of YOURA windows: grouping windows into batches, right-padding cached KV
caches into one batch, and taking one row of a batch cache back without its padding (see the
:mod:`longctx.youra` docstring, "Batches, dtype and devices")."""

from __future__ import annotations


def group(items, length, batch_size: int, max_tokens: int) -> list[list]:
    """``items`` sorted by ``length(item)`` descending, cut into batches of at most
    ``batch_size`` items and at most ``max_tokens`` padded tokens (``len(batch) * longest``; an
    item longer than ``max_tokens`` is a batch of its own)."""
    items = sorted(items, key=length, reverse=True)
    out, cur = [], []
    for it in items:
        if cur and (len(cur) >= batch_size or (len(cur) + 1) * length(cur[0]) > max_tokens):
            out.append(cur)
            cur = []
        cur.append(it)
    if cur:
        out.append(cur)
    return out


def pad_kv(kvs, dtype):
    """One batch of KV caches from several windows' stored caches.

    ``kvs``: per window, one ``(keys, values)`` pair a layer, each ``(1, kv_heads, n_i,
    head_dim)``. Returns ``(data, past_mask)``: per layer ``(keys, values)`` of shape ``(batch,
    kv_heads, max n_i, head_dim)`` in ``dtype`` (copies, zero after each row's tokens), and
    ``past_mask`` ``(batch, max n_i)`` bool, True at real tokens (None for a single window).
    """
    import torch

    if len(kvs) == 1:
        return [(k.to(dtype), v.to(dtype)) for k, v in kvs[0]], None
    lens = [kv[0][0].shape[2] for kv in kvs]
    n = max(lens)
    data = []
    for layer in range(len(kvs[0])):
        k0, v0 = kvs[0][layer]
        ks = k0.new_zeros((len(kvs), k0.shape[1], n, k0.shape[3]), dtype=dtype)
        vs = v0.new_zeros((len(kvs), v0.shape[1], n, v0.shape[3]), dtype=dtype)
        for r, kv in enumerate(kvs):
            k, v = kv[layer]
            ks[r, :, : lens[r]] = k[0]
            vs[r, :, : lens[r]] = v[0]
        data.append((ks, vs))
    return data, torch.arange(n)[None, :] < torch.as_tensor(lens)[:, None]


def unpad_row(cache, r: int, c: int, width: int):
    """Row ``r`` of a batch cache (a DynamicCache) without its padding: the context ``[0, c)``
    and what follows the padded context of ``width`` tokens (the suffix), as tensors of its own
    (not views of the batch), one ``(keys, values)`` pair a layer, each ``(1, kv_heads, tokens,
    head_dim)``. A batch of one unpadded row is returned as it is (no copy)."""
    import torch

    single = cache.layers[0].keys.shape[0] == 1 and c == width
    out = []
    for layer in cache.layers:
        k, v = layer.keys[r : r + 1], layer.values[r : r + 1]
        if not single:
            if c < width:
                k = torch.cat([k[:, :, :c], k[:, :, width:]], dim=2)
                v = torch.cat([v[:, :, :c], v[:, :, width:]], dim=2)
            else:
                k, v = k.clone(), v.clone()
        out.append((k, v))
    return out
