"""YOURA memory settings on a device: the defaults that fit a GPU (window cache budget and
pass size from the free GPU memory) and the errors that mean a pass ran out of memory (see the
:mod:`longctx.youra` docstring, "Batches, dtype and devices")."""

from __future__ import annotations

import logging

from longctx.youra.config import CUDA_CACHE_FRACTION, CUDA_PASS_FRACTION, YouraOutOfMemoryError

logger = logging.getLogger(__name__)


def free_device_memory(device) -> int | None:
    """Free bytes on a CUDA ``device`` (``torch.cuda.mem_get_info``); None elsewhere (CPU: no
    memory-based defaults). Tests replace it to check the GPU defaults on CPU."""
    if getattr(device, "type", None) != "cuda":
        return None
    import torch

    return int(torch.cuda.mem_get_info(device)[0])


def oom_errors() -> tuple:
    """The exceptions that mean a pass ran out of memory."""
    import torch

    oom = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
    return (oom, MemoryError)


def pass_bytes(config, elem_bytes: int, n_tokens: int, *, eager: bool = False) -> int:
    """Estimated peak memory (bytes) of one YOURA pass of ``n_tokens`` tokens beyond the model's
    weights: the KV cache of all layers, one layer's activations (hidden states, q/k/v, the MLP's
    gate/up/product) and the float32 keys of the attention statistics; with eager attention the
    ``(heads, n, n)`` scores and their float32 softmax. ``config``: the model's text config;
    ``elem_bytes``: bytes per value of the model's dtype."""
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    hidden = config.hidden_size
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    inter = getattr(config, "intermediate_size", None) or 4 * hidden
    kv = 2 * config.num_hidden_layers * kv_heads * head_dim * elem_bytes
    act = (4 * hidden + (heads + 2 * kv_heads) * head_dim + 3 * inter) * elem_bytes
    stats = kv_heads * head_dim * 4
    quad = heads * n_tokens * (elem_bytes + 4) if eager else 0
    return int(n_tokens * (kv + act + stats + quad))


def gpu_memory_defaults(
    free_bytes: int,
    config,
    elem_bytes: int,
    model_window: int,
    *,
    cache_bytes: int | None = None,
    max_window: int | None = None,
    eager: bool = False,
) -> tuple[int, int]:
    """``(cache_bytes, window)`` of a scorer on a GPU with ``free_bytes`` free once the model is
    loaded.

    ``cache_bytes=None``: ``CUDA_CACHE_FRACTION`` (0.5) of the free memory. ``max_window=None``:
    the model's window (``model_window``), capped at the most tokens whose pass
    (:func:`pass_bytes`) fits in ``CUDA_PASS_FRACTION`` (0.8) of the memory left after the cache
    budget, rounded down to a multiple of 256. Given values are kept.

    Raises
    ------
    YouraOutOfMemoryError
        When not even 256 tokens a pass fit (the message names ``cache_bytes`` and
        ``max_window``).
    """
    free_bytes = max(0, int(free_bytes))
    if cache_bytes is None:
        cache_bytes = int(CUDA_CACHE_FRACTION * free_bytes)
    if max_window is not None:
        return cache_bytes, int(max_window)
    budget = CUDA_PASS_FRACTION * max(0, free_bytes - cache_bytes)
    lo, hi = 0, int(model_window)
    while lo < hi:  # the largest n with pass_bytes(n) <= budget (it grows with n)
        mid = (lo + hi + 1) // 2
        if pass_bytes(config, elem_bytes, mid, eager=eager) <= budget:
            lo = mid
        else:
            hi = mid - 1
    if lo >= model_window:
        return cache_bytes, int(model_window)
    window = lo // 256 * 256
    if window < 256:
        raise YouraOutOfMemoryError(
            f"{free_bytes / 2**30:.2f} GiB of GPU memory are free once the model is loaded and "
            f"the window cache may keep {cache_bytes / 2**30:.2f} GiB (cache_bytes): not even "
            "256 tokens a pass fit; lower cache_bytes, or give max_window (tokens a pass)"
        )
    logger.info(
        "YOURA on GPU: max_window capped at %d tokens (model window %d) so one pass fits in "
        "%.1f GiB; window cache budget %.1f GiB",
        window,
        model_window,
        budget / 2**30,
        cache_bytes / 2**30,
    )
    return cache_bytes, window
