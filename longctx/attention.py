"""Attention statistics without materializing attention maps.

A forward pass normally throws attention probabilities away (SDPA never forms them); asking for
``output_attentions=True`` returns every layer's full ``(batch, heads, q_len, k_len)`` map, which
grows with the square of the length (about 4.5 GB for 2048 tokens of SmolLM2). This module computes
the statistics retrieval methods need on the fly instead:

- per key token ``j``, the **column sum** ``sum_i a_ij`` of the attention probabilities over the
  query rows ``i`` of one forward pass, kept per selected layer and head, in float32.

For a pass over a whole context this is the column sum of the context's causal attention matrix
(YOURA, Soh et al., 2024, arXiv:2409.13695 eq. 2 before dividing by the row count). For a pass of new tokens
over a KV cache (``past_key_values``) it is the attention of those new tokens to every cached (past)
token and to themselves: keys ``[0, past)`` are the cached ones.

How: :func:`record_attention_stats` temporarily switches the model to an attention function
registered with ``transformers.AttentionInterface``. That function computes the layer output
exactly as the model's own implementation did (SDPA, eager, ...), and for the selected layers it
also computes ``softmax(Q K^T * scaling + mask)`` in blocks of query rows (GQA heads grouped,
the model's own scaling, mask and soft-cap), adds each block's column sums to float32 accumulators
and drops the block. Peak extra memory is ``row_block * heads * k_len * 4`` bytes, so memory grows
linearly with the length. The original implementation is restored on exit.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

__all__ = [
    "AttentionStatsRecorder",
    "record_attention_stats",
    "resolve_layers",
    "num_hidden_layers",
]

_PREFIX = "longctx_stats_"

# id(attention module) -> recorder; filled while a ``record_attention_stats`` block is active.
_ACTIVE: dict[int, AttentionStatsRecorder] = {}
_ACTIVE_LOCK = threading.Lock()

# Extra memory one block of probabilities may take (bytes); sets the number of query rows a block.
_BLOCK_BYTES = 64 * 2**20

#: Most new tokens a pass may have for ``AttentionStatsRecorder.fuse_steps`` to fuse it.
FUSED_MAX_QUERY = 64


def num_hidden_layers(model) -> int:
    """Number of decoder layers of a transformers causal LM (``config.num_hidden_layers``)."""
    config = getattr(model, "config", None)
    if config is None:
        raise TypeError(
            f"model must be a transformers model with a config, got {type(model).__name__}"
        )
    text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = getattr(text_config, "num_hidden_layers", None)
    if not isinstance(n, int) or n < 1:
        raise ValueError("model.config has no positive num_hidden_layers")
    return n


def check_layers_spec(layers) -> None:
    """Check the type of a ``layers`` argument without a model ("last", "all" or ints).

    Raises
    ------
    TypeError, ValueError
        Naming ``layers``.
    """
    if isinstance(layers, str):
        if layers not in ("last", "all"):
            raise ValueError(f"layers must be 'last', 'all' or a list of ints, got {layers!r}")
        return
    if isinstance(layers, bool) or not isinstance(layers, (Sequence, int)):
        raise TypeError(
            f"layers must be 'last', 'all' or a list of ints, got {type(layers).__name__}"
        )
    items = [layers] if isinstance(layers, int) else list(layers)
    if not items:
        raise ValueError("layers must not be empty")
    for x in items:
        if isinstance(x, bool) or not isinstance(x, int):
            raise TypeError(f"layers must hold ints, got {type(x).__name__} ({x!r})")


def resolve_layers(layers, n_layers: int) -> tuple[int, ...]:
    """Turn a ``layers`` spec into sorted, distinct layer indices in ``[0, n_layers)``.

    Parameters
    ----------
    layers : {"last", "all"} or int or sequence of int
        ``"last"``: the last decoder layer only (what the YOURA authors' released code uses);
        ``"all"``: every layer; ints may be negative (Python style, ``-1`` is the last layer).
    n_layers : int
        Number of decoder layers of the model.

    Raises
    ------
    TypeError, ValueError
        If ``layers`` is malformed or an index is out of range (the message names ``layers``).
    """
    check_layers_spec(layers)
    if layers == "last":
        return (n_layers - 1,)
    if layers == "all":
        return tuple(range(n_layers))
    items = [layers] if isinstance(layers, int) else list(layers)
    out = set()
    for x in items:
        if not -n_layers <= x < n_layers:
            raise ValueError(f"layers: index {x} out of range for a model with {n_layers} layers")
        out.add(x % n_layers)
    return tuple(sorted(out))


class AttentionStatsRecorder:
    """Accumulates attention column sums for selected layers during forward passes.

    Created by :func:`record_attention_stats`; read it after each forward pass and call
    :meth:`reset` (or :meth:`pop`) before the next one.

    Attributes
    ----------
    layers : tuple of int
        The decoder layers recorded (0-based).
    row_block : int or None
        Query rows per block (None: chosen so one block takes about 64 MB).
    enabled : bool
        When False, forward passes run as usual and record nothing (see :meth:`paused`).
    row_mask : torch.Tensor or None
        Optional ``(batch, q_len)`` mask of the query rows of the next passes: rows where it is
        0/False are left out of the column sums (the padding rows of a padded batch). None (the
        default): every row counts. Set it before a pass and back to None after it.
    fuse_steps : bool
        False (default): every layer output comes from the model's own attention function, and
        every pass records column sums. True: a pass of at most :data:`FUSED_MAX_QUERY` new
        tokens (a decoding step, with or without draft tokens) computes a recorded layer's
        attention once (as eager attention does: products in the model's dtype, softmax in
        float32): its output is ``p @ V`` with the probabilities ``p``, and it
        records each query row's ``p`` (mean over heads; read with :meth:`pop_rows`) instead of
        column sums. The output equals the model's own to float rounding, not bit for bit.
        Soft-capped or sink attention, a ``row_mask`` and training mode are never fused.
    """

    def __init__(self, layers: tuple[int, ...], row_block: int | None = None):
        self.layers = tuple(layers)
        self.row_block = row_block
        self.enabled = True
        self.row_mask: torch.Tensor | None = None
        self.fuse_steps = False
        self._sums: dict[int, torch.Tensor] = {}
        self._rows: dict[int, int] = {}
        self._row_probs: dict[int, torch.Tensor] = {}

    def reset(self) -> None:
        """Forget what was recorded."""
        self._sums = {}
        self._rows = {}
        self._row_probs = {}

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Run forward passes inside this block without recording (no extra cost)."""
        old = self.enabled
        self.enabled = False
        try:
            yield
        finally:
            self.enabled = old

    # -- results -----------------------------------------------------------------------------
    def column_sums(self, layer: int) -> torch.Tensor:
        """Column sums of one layer, ``(batch, heads, k_len)`` float32, summed over query rows.

        Raises
        ------
        KeyError
            If nothing was recorded for ``layer``.
        """
        if layer not in self._sums:
            raise KeyError(f"no attention statistics recorded for layer {layer}")
        return self._sums[layer]

    def n_rows(self, layer: int | None = None) -> int:
        """Number of query rows summed (the new tokens of the pass)."""
        layer = self.layers[0] if layer is None else layer
        return self._rows.get(layer, 0)

    def mean_column_sums(self) -> torch.Tensor:
        """Column sums averaged over heads and over the recorded layers, ``(batch, k_len)`` float32.

        Raises
        ------
        RuntimeError
            If a selected layer recorded nothing (no forward pass ran in the block).
        """
        missing = [layer for layer in self.layers if layer not in self._sums]
        if missing:
            raise RuntimeError(f"no attention statistics recorded for layers {missing}")
        total = None
        for layer in self.layers:
            m = self._sums[layer].mean(dim=1)
            total = m if total is None else total + m
        return total / len(self.layers)

    def pop(self) -> torch.Tensor:
        """:meth:`mean_column_sums`, then :meth:`reset`."""
        out = self.mean_column_sums()
        self.reset()
        return out

    def pop_rows(self) -> torch.Tensor:
        """Attention rows of the last fused pass (``fuse_steps``), averaged over heads and the
        recorded layers, ``(batch, q_len, k_len)`` float32 (row ``i``: query token ``i``'s
        attention to every key); then :meth:`reset`.

        Raises
        ------
        RuntimeError
            If a selected layer recorded no fused pass.
        """
        missing = [layer for layer in self.layers if layer not in self._row_probs]
        if missing:
            raise RuntimeError(f"no fused attention rows recorded for layers {missing}")
        total = None
        for layer in self.layers:
            m = self._row_probs[layer]
            total = m if total is None else total + m
        self.reset()
        return total / len(self.layers)

    # -- accumulation (called from the attention function) -----------------------------------
    def _add(self, layer: int, sums: torch.Tensor, rows: int) -> None:
        prev = self._sums.get(layer)
        if prev is None or prev.shape != sums.shape:
            # a new pass (or a pass of a different key length) replaces older results
            self._sums[layer] = sums
            self._rows[layer] = rows
        else:
            self._sums[layer] = prev + sums
            self._rows[layer] += rows


def _eager_fallback(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    n_rep = query.shape[1] // key.shape[1]
    k = key.repeat_interleave(n_rep, dim=1)
    v = value.repeat_interleave(n_rep, dim=1)
    w = torch.matmul(query, k.transpose(2, 3)) * scaling
    if attention_mask is not None:
        w = w + attention_mask
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(w, v).transpose(1, 2).contiguous()
    return out, w


def _original_function(module, original: str):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    if original != "eager" and original in ALL_ATTENTION_FUNCTIONS:
        return ALL_ATTENTION_FUNCTIONS[original]
    import sys

    mod = sys.modules.get(type(module).__module__)
    return getattr(mod, "eager_attention_forward", _eager_fallback)


def _column_sums(
    query: torch.Tensor,
    key: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    softcap: float | None,
    row_block: int | None,
    row_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Column sums of softmax(Q K^T * scaling + mask), ``(batch, heads, k_len)`` float32.

    ``query``: ``(b, H, q, d)``; ``key``: ``(b, Hkv, k, d)`` with ``H % Hkv == 0`` (GQA: query head
    ``h`` uses key head ``h // (H // Hkv)``, as ``repeat_kv`` does). ``attention_mask``: ``None``
    (causal, aligned bottom-right: query row ``i`` sees keys ``<= k - q + i``), a boolean mask
    (True = attend) or an additive float mask, broadcastable to ``(b, H, q, k)``. ``row_mask``:
    ``None`` or ``(b, q)``; rows where it is 0 are not summed.
    """
    weights = None if row_mask is None else row_mask.to(device=query.device, dtype=torch.float32)
    b, h, q_len, d = query.shape
    h_kv, k_len = key.shape[1], key.shape[2]
    n_rep = h // h_kv
    if q_len == 1 and softcap is None:
        # one decoding step: the column sums are the new token's attention row (few small ops,
        # since this runs once per layer and generated token)
        p = _short_pass_probs(query, key, attention_mask, scaling, upcast=True)[:, :, 0]
        return p if weights is None else p * weights[:, -1, None, None]
    qf = query.float().reshape(b, h_kv, n_rep, q_len, d)
    kf = key.float().transpose(-1, -2).unsqueeze(2)  # (b, Hkv, 1, d, k)
    if row_block is None:
        row_block = max(1, _BLOCK_BYTES // max(1, 4 * b * h * k_len))
    sums = torch.zeros(b, h, k_len, dtype=torch.float32, device=query.device)
    offset = k_len - q_len
    cols = torch.arange(k_len, device=query.device)
    for r0 in range(0, q_len, row_block):
        r1 = min(q_len, r0 + row_block)
        # causal (mask None): rows r0..r1-1 see keys < r1 + offset only; skip the rest
        k_hi = min(k_len, r1 + offset) if attention_mask is None else k_len
        s = torch.matmul(qf[:, :, :, r0:r1], kf[..., :k_hi])  # (b, Hkv, n_rep, r, k_hi)
        s = s.reshape(b, h, r1 - r0, k_hi).mul_(scaling)
        if softcap is not None:
            s = torch.tanh(s / softcap) * softcap
        if attention_mask is None:
            rows = torch.arange(r0, r1, device=query.device)[:, None] + offset
            s.masked_fill_(cols[None, :k_hi] > rows, float("-inf"))
        else:
            m = attention_mask[..., r0:r1, :k_len]
            if m.dtype == torch.bool:
                s.masked_fill_(~m, float("-inf"))
            else:
                s.add_(m.float())
        p = torch.softmax(s, dim=-1)
        del s
        p = torch.nan_to_num_(p, nan=0.0)  # rows with every key masked (padding) contribute 0
        if weights is not None:
            p.mul_(weights[:, None, r0:r1, None])
        sums[..., :k_hi] += p.sum(dim=2)
        del p
    return sums


def _stats_attention(module, query, key, value, attention_mask, *args, **kwargs):
    """Attention function registered as ``longctx_stats_<original>``: the original output, plus
    column statistics for the recorder's layers."""
    recorder = _ACTIVE.get(id(module))
    original = getattr(module, "_longctx_original_attn", "sdpa")
    layer = getattr(module, "layer_idx", None)
    if (
        recorder is not None
        and recorder.enabled
        and recorder.fuse_steps
        and layer in recorder.layers
        and query.shape[2] <= FUSED_MAX_QUERY
        and recorder.row_mask is None
        and not getattr(module, "training", False)
        and not kwargs.get("dropout")
        and kwargs.get("softcap") is None
        and kwargs.get("s_aux") is None
        and kwargs.get("sinks") is None
        and (attention_mask is None or attention_mask.dim() == 4)
    ):
        return _fused_step(recorder, layer, module, query, key, value, attention_mask, kwargs)
    out = _original_function(module, original)(
        module, query, key, value, attention_mask, *args, **kwargs
    )
    if recorder is not None and recorder.enabled and layer in recorder.layers:
        if kwargs.get("s_aux") is not None or kwargs.get("sinks") is not None:
            raise NotImplementedError("attention sinks (s_aux) are not supported by longctx stats")
        scaling = _scaling(module, query, kwargs)
        mask = attention_mask
        if mask is not None and mask.dim() != 4:
            raise NotImplementedError(
                f"longctx stats need a 4D attention mask or None, got shape {tuple(mask.shape)}"
            )
        with torch.no_grad():
            sums = _column_sums(
                query,
                key,
                mask,
                scaling,
                kwargs.get("softcap"),
                recorder.row_block,
                recorder.row_mask,
            )
        recorder._add(layer, sums, query.shape[2])
    return out


def _scaling(module, query, kwargs) -> float:
    """The scaling the attention function was given, else the module's, else 1/sqrt(d)."""
    scaling = kwargs.get("scaling")
    if scaling is None:
        scaling = getattr(module, "scaling", None) or 1.0 / math.sqrt(query.shape[-1])
    return float(scaling)


def _short_pass_probs(query, key, attention_mask, scaling: float, *, upcast: bool):
    """``softmax(Q K^T * scaling + mask)`` of a pass of few new tokens, ``(b, H, q, k)`` float32.

    Shapes and mask as :func:`_column_sums` (GQA heads grouped; ``None``: causal, bottom-right
    aligned). ``upcast``: the products in float32 (else in the inputs' dtype, as eager
    attention; the same for float32 inputs). Rows with every key masked are 0.
    """
    b, h, q_len, d = query.shape
    h_kv, k_len = key.shape[1], key.shape[2]
    q, k = (query.float(), key.float()) if upcast else (query, key)
    s = torch.matmul(q.reshape(b, h_kv, (h // h_kv) * q_len, d), k.transpose(-1, -2))
    s = s.view(b, h, q_len, k_len).float().mul_(scaling)
    if attention_mask is None:
        rows = torch.arange(q_len, device=query.device)[:, None] + (k_len - q_len)
        s.masked_fill_(torch.arange(k_len, device=query.device)[None, :] > rows, float("-inf"))
    else:
        m = attention_mask[..., -q_len:, :k_len]
        if m.dtype == torch.bool:
            s.masked_fill_(~m, float("-inf"))
        else:
            s.add_(m.float())
    return torch.nan_to_num_(torch.softmax(s, dim=-1), nan=0.0)


def _fused_step(recorder, layer, module, query, key, value, attention_mask, kwargs):
    """A short pass (decoding step) of a recorded layer: probabilities once, ``p @ V``, and each
    query row's ``p`` (mean over heads) recorded.

    ``query`` ``(b, H, q, d)``, ``key``/``value`` ``(b, Hkv, k, d)`` (GQA: query head ``h`` uses
    key head ``h // (H // Hkv)``); ``attention_mask`` ``None`` (causal, bottom-right aligned) or
    4-D boolean/additive, broadcastable to ``(b, H, q, k)``. Returns the attention function's
    ``(output (b, q, H, d) in query's dtype, None)``.
    """
    scaling = _scaling(module, query, kwargs)
    b, h, q_len, _ = query.shape
    h_kv, k_len = key.shape[1], key.shape[2]
    rep = h // h_kv
    with torch.no_grad():
        # float32 models: all in float32. Others (bf16/fp16): the products in the model's dtype
        # (accumulated in float32 by the kernels) as eager attention does, without a float32
        # copy of the whole KV cache at every step; softmax and the recorded rows in float32.
        p = _short_pass_probs(query, key, attention_mask, scaling, upcast=False)
        out = torch.matmul(p.view(b, h_kv, rep * q_len, k_len).to(value.dtype), value)
        out = out.view(b, h, q_len, -1).transpose(1, 2).contiguous()
    recorder._row_probs[layer] = p.mean(dim=1)
    return out.to(query.dtype), None


def _register(original: str) -> str:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    name = _PREFIX + re.sub(r"[^0-9A-Za-z_]", "_", original)
    AttentionInterface.register(name, _stats_attention)
    mask_fn = ALL_MASK_ATTENTION_FUNCTIONS._global_mapping.get(
        original, ALL_MASK_ATTENTION_FUNCTIONS._global_mapping["sdpa"]
    )
    AttentionMaskInterface.register(name, mask_fn)
    return name


def _attention_modules(model) -> list:
    mods = [
        m
        for m in model.modules()
        if isinstance(getattr(m, "layer_idx", None), int)
        and any(hasattr(m, a) for a in ("q_proj", "qkv_proj", "query", "c_attn", "Wqkv"))
    ]
    return mods


@contextmanager
def record_attention_stats(
    model, layers="last", *, row_block: int | None = None
) -> Iterator[AttentionStatsRecorder]:
    """Record attention column sums of ``layers`` during the forward passes run inside the block.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A decoder model using ``transformers.AttentionInterface`` (Llama, Mistral, Qwen2, ...).
    layers : {"last", "all"} or int or sequence of int, default "last"
        Layers to record, see :func:`resolve_layers`.
    row_block : int, optional
        Query rows per block (default: about 64 MB of float32 probabilities per block).

    Yields
    ------
    AttentionStatsRecorder
        Read ``recorder.mean_column_sums()`` (``(batch, k_len)`` float32: mean over heads and the
        recorded layers of ``sum_i a_ij``) or ``recorder.column_sums(layer)`` after each pass.

    Raises
    ------
    TypeError, ValueError
        Bad ``layers`` or ``row_block``.
    RuntimeError
        If the model has no attention modules with a ``layer_idx`` (not an AttentionInterface
        model), or another recording block is already active on it.

    Notes
    -----
    Works on CPU and CUDA, float32/bfloat16/float16 (statistics always in float32). Do not ask
    for ``output_attentions=True`` inside the block. The model's attention implementation
    (``model.config._attn_implementation``) is restored on exit, even after an error.
    """
    n_layers = num_hidden_layers(model)
    sel = resolve_layers(layers, n_layers)
    if row_block is not None and (
        isinstance(row_block, bool) or not isinstance(row_block, int) or row_block < 1
    ):
        raise ValueError(f"row_block must be an int >= 1, got {row_block!r}")
    modules = _attention_modules(model)
    if not modules:
        raise RuntimeError(
            f"{type(model).__name__} has no attention modules with a layer_idx: "
            "attention statistics need a transformers model built on AttentionInterface"
        )
    original = model.config._attn_implementation or "sdpa"
    if original.startswith(_PREFIX):
        raise RuntimeError("record_attention_stats is already active on this model")
    name = _register(original)
    recorder = AttentionStatsRecorder(sel, row_block)
    with _ACTIVE_LOCK:
        for m in modules:
            _ACTIVE[id(m)] = recorder
            m._longctx_original_attn = original
    try:
        model.set_attn_implementation(name)
        yield recorder
    finally:
        try:
            model.set_attn_implementation(original)
        finally:
            with _ACTIVE_LOCK:
                for m in modules:
                    if _ACTIVE.get(id(m)) is recorder:
                        del _ACTIVE[id(m)]
