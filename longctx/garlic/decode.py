"""Batched greedy decoding with per-node attention capture, and the bullet-format logits processor.

Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.1 (the summarization that makes the
HWDAG) and Table 4 (the ``* summary point`` answer format).

:func:`generate_batch_with_capture` decodes several summarization prompts at once. Each prompt is
first run alone (so the prefill's peak memory is one prompt's, as before); the per-row KV caches are
left-padded to one length and stacked; every decoding step then runs all rows in one forward pass,
the padding masked out (2-D attention mask) and each row at its own position ids, so a row's logits
and attention rows are the ones it gets alone, up to float rounding. A row that emits an end-of-sequence token stops growing
and is dropped from the batch and the KV cache (``DynamicCache.batch_select_indices``); the others go
on. Each step's attention rows of every active sequence (recorded by
:func:`longctx.attention.record_attention_stats` with ``fuse_steps``, which computes a step's
attention once and takes the layer output from the same probabilities) are reduced at once to
per-node means with one batched matrix product.

Prompt-lookup decoding (:mod:`longctx.garlic.lookup`, on by default in the build) feeds each row's
draft tokens, guessed from the text it summarizes and from its own earlier lines, in the same pass,
and keeps the prefix the model's greedy choice agrees with: the same summaries and edge weights in
fewer passes.

:class:`BulletLogitsProcessor` makes any model write the Table 4 format: at the start of the
answer only the bullet (``*``) may be written, after a newline the bullet or the end of the
answer, and after the bullet only a token that starts with one space and then text; so every line
is ``* <text>`` and :func:`~longctx.garlic.prompts.parse_ips` finds every information point.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Sequence

import numpy as np

from longctx._hf import cache_keyword
from longctx.checks import check_int
from longctx.garlic.lookup import (
    DEFAULT_PROMPT_LOOKUP,
    PASS_TOKENS,
    PromptLookup,
    check_prompt_lookup,
)
from longctx.garlic.prompts import parse_ips, parse_list_items

logger = logging.getLogger(__name__)

__all__ = [
    "BulletLogitsProcessor",
    "DEFAULT_BATCH_SIZE",
    "default_batch_size",
    "check_batch_size",
    "check_prompt_lookup",
    "DEFAULT_PROMPT_LOOKUP",
    "generate_batch_with_capture",
    "generate_with_capture",
    "ip_edge_weights",
]

# Sequences decoded together per forward pass, by device type (measured: docs/notes/garlic-speed.md).
DEFAULT_BATCH_SIZE = {"cpu": 8, "cuda": 32, "mps": 8}


def default_batch_size(model) -> int:
    """The default ``batch_size`` for ``model``'s device (:data:`DEFAULT_BATCH_SIZE`; 8 for an
    unknown device type)."""
    try:
        dev = next(model.parameters()).device.type
    except (AttributeError, StopIteration, TypeError):
        dev = "cpu"
    return DEFAULT_BATCH_SIZE.get(dev, 8)


def check_batch_size(batch_size, model=None) -> int:
    """Validate ``batch_size`` (sequences per forward pass); ``None`` -> the device default.

    Raises
    ------
    TypeError, ValueError
        ``batch_size`` is not an int >= 1 (the message names ``batch_size``).
    """
    if batch_size is None:
        return default_batch_size(model) if model is not None else DEFAULT_BATCH_SIZE["cpu"]
    return check_int(batch_size, "batch_size", minimum=1)


# -- the bullet format -------------------------------------------------------------------------
try:  # a real transformers LogitsProcessor when transformers is installed
    from transformers import LogitsProcessor as _LogitsProcessorBase
except ImportError:  # pragma: no cover - the build needs transformers anyway
    _LogitsProcessorBase = object


_VOCAB_CACHE: dict[tuple, tuple] = {}


def _vocab_classes(tokenizer, bullet_ids: tuple[int, ...], vocab_size: int):
    """Per token id (as the text it adds after the bullet): ends a line; holds a newline before
    its end; is one space followed by text (a valid first token after the bullet)."""
    key = (id(tokenizer), getattr(tokenizer, "name_or_path", ""), bullet_ids, vocab_size)
    hit = _VOCAB_CACHE.get(key)
    if hit is not None:
        return hit
    head = tokenizer.decode(list(bullet_ids))
    n = min(vocab_size, len(tokenizer))
    texts = tokenizer.batch_decode([[*bullet_ids, t] for t in range(n)])
    ends_line = np.zeros(vocab_size, dtype=bool)
    inner_newline = np.zeros(vocab_size, dtype=bool)
    space_text = np.zeros(vocab_size, dtype=bool)
    for t, full in enumerate(texts):
        s = full[len(head) :] if full.startswith(head) else full
        if "\n" in s:
            ends_line[t] = s.endswith("\n")
            inner_newline[t] = "\n" in s.rstrip("\n") or not s.endswith("\n")
        space_text[t] = len(s) >= 2 and s[0] == " " and not s[1].isspace() and "\n" not in s
    _VOCAB_CACHE.clear()  # one tokenizer at a time
    _VOCAB_CACHE[key] = (ends_line, inner_newline, space_text)
    return _VOCAB_CACHE[key]


class BulletLogitsProcessor(_LogitsProcessorBase):
    """A ``transformers.LogitsProcessor`` that forces every line of the answer to be ``* <text>``.

    At the start of the answer only the bullet token(s) of ``"*"`` are allowed; after a token that
    ends a line, the bullet or an end-of-sequence token; right after the bullet, only tokens made
    of one space and then text (``" word"``); inside a line, any token that does not start a new
    line in its middle. Every other logit is set to ``-inf``. Table 4 of Wang et al. (2024),
    arXiv:2410.04790 asks for this format; small models often ignore it.

    Parameters
    ----------
    tokenizer : transformers tokenizer
        The model's tokenizer (its vocabulary is classified once, ~1 s for 50k tokens).
    eos_token_ids : sequence of int
        Tokens that end the answer (allowed at the start of a line after the first).
    vocab_size : int, optional
        Size of the logits' last axis (default ``len(tokenizer)``).
    prompt_length : int, default 0
        Tokens of ``input_ids`` before the answer (``model.generate`` passes the prompt too;
        :func:`generate_batch_with_capture` passes the generated tokens only).

    Notes
    -----
    Called as ``processor(input_ids, scores)`` with ``input_ids`` a ``(batch, length)`` long
    tensor and ``scores`` a ``(batch, vocab)`` float tensor; returns the masked scores.
    """

    def __init__(self, tokenizer, eos_token_ids: Sequence[int] = (), vocab_size=None, *,
                 prompt_length: int = 0):  # fmt: skip
        ids = tuple(int(x) for x in tokenizer("*", add_special_tokens=False)["input_ids"])
        if not ids:
            raise ValueError("the tokenizer has no token for the bullet '*'")
        self.bullet_ids = ids
        self.eos_token_ids = tuple(int(e) for e in eos_token_ids)
        self.vocab_size = int(vocab_size) if vocab_size is not None else len(tokenizer)
        self.prompt_length = check_int(prompt_length, "prompt_length", minimum=0)
        self._ends_line, self._inner_nl, self._space_text = _vocab_classes(
            tokenizer, ids, self.vocab_size
        )
        self._masks: dict = {}

    def _mask(self, name: str, device):
        import torch

        key = (name, str(device))
        m = self._masks.get(key)
        if m is None:
            if name == "after_bullet":
                arr = self._space_text
            elif name == "in_line":
                arr = ~self._inner_nl
            else:
                raise KeyError(name)
            m = torch.as_tensor(arr, device=device)
            self._masks[key] = m
        return m

    def _state(self, toks: list[int]) -> tuple[str, int]:
        """(state, position): "start" (line start, answer start when position < 0), "bullet"
        (inside the bullet tokens, position = tokens written), "after_bullet", "in_line"."""
        j = len(toks) - 1
        while j >= 0 and not (toks[j] < len(self._ends_line) and self._ends_line[toks[j]]):
            j -= 1
        seg = toks[j + 1 :]
        nb = len(self.bullet_ids)
        if len(seg) < nb:
            return ("bullet", len(seg)) if seg or j >= 0 else ("bullet", -1)
        if len(seg) == nb:
            return "after_bullet", 0
        return "in_line", 0

    def __call__(self, input_ids, scores):
        import torch

        out = scores.clone()
        neg = torch.finfo(out.dtype).min if out.dtype.is_floating_point else -(2**31)
        rows = input_ids[:, self.prompt_length :].tolist()
        for r, toks in enumerate(rows):
            state, pos = self._state(toks)
            if state == "bullet":
                keep = torch.zeros(out.shape[-1], dtype=torch.bool, device=out.device)
                keep[self.bullet_ids[max(pos, 0)]] = True
                if pos == 0:  # a new line after at least one: the answer may end here
                    for e in self.eos_token_ids:
                        if e < out.shape[-1]:
                            keep[e] = True
            else:
                keep = self._mask(state, out.device)
                if keep.shape[0] < out.shape[-1]:
                    keep = torch.cat([keep, keep.new_zeros(out.shape[-1] - keep.shape[0])])
                keep = keep[: out.shape[-1]]
            out[r] = out[r].masked_fill(~keep, neg)
        return out


# -- one prompt, and splitting a summary into IPs -------------------------------------------------------------------
def generate_with_capture(
    model,
    input_ids: Sequence[int],
    node_ranges: Sequence[tuple[int, int]],
    *,
    max_new_tokens: int,
    eos_token_ids: Sequence[int] = (),
    layers="all",
    logits_processor: Callable | None = None,
    capture: bool = True,
) -> tuple[list[int], np.ndarray]:
    """Greedy decoding of one prompt with a KV cache, reducing each new token's attention to
    per-node means (:func:`~longctx.garlic.decode.generate_batch_with_capture` with one row).

    Parameters
    ----------
    model : transformers causal LM (AttentionInterface-based, e.g. Llama)
    input_ids : sequence of int
        The prompt.
    node_ranges : sequence of (start, end)
        Token ranges of the input nodes in ``input_ids`` (non-empty, end exclusive).
    max_new_tokens : int
        Generation limit.
    eos_token_ids : sequence of int
        Tokens that stop generation (not returned).
    layers : {"all", "last"} or list of int
        Layers averaged (the paper: all).
    logits_processor : callable, optional
        ``f(generated_ids: list[int], logits: (vocab,) tensor) -> (vocab,) tensor``, or a
        ``transformers.LogitsProcessor`` (given the generated ids only), applied before the argmax.
    capture : bool, default True
        False: plain greedy decoding (the benchmark's baseline), ``node_att`` is empty.

    Returns
    -------
    generated : list of int
        Generated token ids (without the stopping EOS).
    node_att : (n_generated, n_nodes) float64 ndarray
        ``node_att[t, k]``: attention of generated token ``t`` to node ``k``, averaged over heads,
        the selected layers and node ``k``'s tokens.
    """
    from longctx.garlic.decode import generate_batch_with_capture

    for k, (a, b) in enumerate(node_ranges):
        if not 0 <= a < b <= len(input_ids):
            raise ValueError(f"node_ranges[{k}] = {(a, b)} is not a non-empty range of the prompt")
    ((generated, node_att),) = generate_batch_with_capture(
        model,
        [(list(input_ids), list(node_ranges))],
        max_new_tokens=max_new_tokens,
        eos_token_ids=eos_token_ids,
        layers=layers,
        logits_processors=[logits_processor] if logits_processor is not None else [],
        capture=capture,
    )
    if not capture:
        node_att = np.zeros((0, len(node_ranges)), dtype=np.float64)
    return generated, node_att


def _token_char_ends(tokenizer, ids: list[int]) -> tuple[str, np.ndarray]:
    text = tokenizer.decode(ids, skip_special_tokens=True)
    prefixes = tokenizer.batch_decode(
        [ids[: i + 1] for i in range(len(ids))], skip_special_tokens=True
    )
    ends = np.array([len(p) for p in prefixes], dtype=np.int64)
    ends = np.minimum(np.maximum.accumulate(ends), len(text)) if len(ends) else ends
    return text, ends


def ip_edge_weights(
    tokenizer, generated: list[int], node_att: np.ndarray
) -> tuple[str, list[tuple[int, int]], np.ndarray]:
    """Split a generated summary into IPs and turn per-token node attention into edge weights.

    A generated token belongs to the first IP whose text (:func:`~longctx.garlic.prompts.parse_ips`
    span, bullet excluded) it overlaps; tokens of no IP (bullets, newlines, text before the first
    bullet) are left out. Without any ``*`` line (a weak model), numbered or dashed lines
    (:func:`~longctx.garlic.prompts.parse_list_items`) are the IPs, else every non-empty line.

    Returns
    -------
    text : str
        The decoded summary.
    spans : list of (start, end)
        IP character spans in ``text``.
    weights : (n_ips, n_nodes) float64 ndarray
        Rows sum to 1 (answer A1, step 5).
    """
    text, ends = _token_char_ends(tokenizer, generated)
    spans = parse_ips(text)
    if not spans and text.strip():
        # a weak model may ignore the "*" format: numbered or dashed lines, else every line
        spans = parse_list_items(text)
        if not spans:
            spans = [(m.start(), m.end()) for m in re.finditer(r"[^\s](?:[^\n]*[^\s])?", text)]
        logger.warning(
            "no '*' line in a generated summary; using %d list or plain line(s) as information "
            "points",
            len(spans),
        )
    starts = np.concatenate([[0], ends[:-1]]) if len(ends) else ends
    n_nodes = node_att.shape[1]
    weights = np.zeros((len(spans), n_nodes), dtype=np.float64)
    owner = np.full(len(generated), -1, dtype=np.int64)
    for j, (s, e) in enumerate(spans):
        hit = (owner < 0) & (starts < e) & (ends > s)
        owner[hit] = j
    for j in range(len(spans)):
        sel = owner == j
        if sel.any():
            e = node_att[sel].mean(axis=0)
        else:  # cannot happen for a non-empty IP; keep the graph well-formed anyway
            e = np.ones(n_nodes)
        total = e.sum()
        weights[j] = e / total if total > 0 else 1.0 / n_nodes
    return text, spans, weights


# -- batched decoding --------------------------------------------------------------------------
def _is_batched(proc) -> bool:
    try:
        from transformers import LogitsProcessor, LogitsProcessorList
    except ImportError:  # pragma: no cover
        return False
    return isinstance(proc, (LogitsProcessor, LogitsProcessorList))


def _layer_kv(cache, layer: int):
    lay = cache.layers[layer]
    return lay.keys, lay.values


@functools.cache
def _growing_layer_class():
    """``DynamicLayer`` keeping keys and values in buffers with room for ``extra`` more tokens
    (built on first use: transformers is imported lazily)."""
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def __init__(self, extra: int = 0):
            super().__init__()
            self._extra = int(extra)
            self._kbuf = self._vbuf = None
            self._n = 0

        def _view(self):
            self.keys = self._kbuf[:, :, : self._n]
            self.values = self._vbuf[:, :, : self._n]

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n_new = key_states.shape[-2]
            kb = self._kbuf
            if kb is None or kb.shape[0] != key_states.shape[0] or self._n + n_new > kb.shape[2]:
                cap = self._n + n_new + self._extra
                b, h, _, d = key_states.shape
                new_k = key_states.new_empty(b, h, cap, d)
                new_v = value_states.new_empty(b, h, cap, value_states.shape[-1])
                if self._n:
                    new_k[:, :, : self._n] = self.keys
                    new_v[:, :, : self._n] = self.values
                self._kbuf, self._vbuf = new_k, new_v
            self._kbuf[:, :, self._n : self._n + n_new] = key_states
            self._vbuf[:, :, self._n : self._n + n_new] = value_states
            self._n += n_new
            self._view()
            return self.keys, self.values

        def fill_left_padded(self, rows: list, length: int) -> None:
            """Start the layer from per-row ``(keys, values)`` of shape ``(1, h, n_i, d)``,
            each written right-aligned into one ``(rows, h, length + extra, d)`` buffer (one
            copy); the left padding is zeros (finite: masked positions get probability 0)."""
            k0, v0 = rows[0]
            self.lazy_initialization(k0, v0)
            b, h, d, dv = len(rows), k0.shape[1], k0.shape[-1], v0.shape[-1]
            self._kbuf = k0.new_empty(b, h, length + self._extra, d)
            self._vbuf = v0.new_empty(b, h, length + self._extra, dv)
            for i, (k, v) in enumerate(rows):
                pad = length - k.shape[2]
                if pad:
                    self._kbuf[i, :, :pad].zero_()
                    self._vbuf[i, :, :pad].zero_()
                self._kbuf[i, :, pad:length] = k[0]
                self._vbuf[i, :, pad:length] = v[0]
            self._n = length
            self._view()

        def get_seq_length(self) -> int:
            return self._n

        def reset(self) -> None:
            self._kbuf = self._vbuf = None
            self._n = 0
            super().reset()

        def crop(self, tokens_to_remove: int) -> None:
            super().crop(tokens_to_remove)
            if self._kbuf is not None:
                self._n = self.keys.shape[-2]
                self._view()

        def batch_repeat_interleave(self, repeats: int) -> None:
            if self._kbuf is not None:
                self._kbuf = self._kbuf.repeat_interleave(repeats, dim=0)
                self._vbuf = self._vbuf.repeat_interleave(repeats, dim=0)
                self._view()

        def batch_select_indices(self, indices) -> None:
            if self._kbuf is not None:
                self._kbuf, self._vbuf = self._kbuf[indices], self._vbuf[indices]
                self._view()

    return GrowingLayer


def _growing_cache(extra: int):
    """A ``DynamicCache`` whose layers keep keys and values in buffers with room for ``extra``
    more tokens: a decoding step writes one slot instead of concatenating (copying) the whole
    cache, copies that grew with the square of the generated length. The layers hand out views
    of the filled part, so attention sees the same keys and values as with ``DynamicLayer``."""
    from transformers import DynamicCache

    cache = DynamicCache()
    cache.layer_class_to_replicate = functools.partial(_growing_layer_class(), extra)
    return cache


def _prefill(model, prompts, ids, mask, positions, cache_kw, extra: int = 0):
    """Run the prompts and return (batched KV cache, last logits ``(rows, vocab)``).

    Each prompt runs alone (no padding, the one-at-a-time computation, peak memory of one
    prompt); the per-row caches are then left-padded (zeros, masked out later) and stacked into
    one ``DynamicCache``. A model whose cache has no ``layers`` runs the padded batch instead.
    """
    import torch
    from transformers import DynamicCache

    p_max = ids.shape[1]
    rows_kv, logits = [], []
    try:
        for toks, _ in prompts:
            c = DynamicCache()
            t = torch.tensor([[int(x) for x in toks]], dtype=torch.long, device=ids.device)
            out = model(input_ids=t, use_cache=True, logits_to_keep=1, **{cache_kw: c})
            logits.append(out.logits[:, -1])
            rows_kv.append([_layer_kv(c, layer) for layer in range(len(c.layers))])
    except (AttributeError, IndexError, TypeError):  # another cache layout: one padded batch
        cache = DynamicCache()
        out = model(
            input_ids=ids, attention_mask=mask, position_ids=positions,
            use_cache=True, logits_to_keep=1, **{cache_kw: cache},
        )  # fmt: skip
        return cache, out.logits[:, -1]
    cache = _growing_cache(extra)
    n_layers = len(rows_kv[0])
    while len(cache.layers) < n_layers:  # what DynamicCache.update does for a new layer index
        cache.layers.append(cache.layer_class_to_replicate())
    for layer in range(n_layers):
        cache.layers[layer].fill_left_padded([kv[layer] for kv in rows_kv], p_max)
        for kv in rows_kv:
            kv[layer] = None  # free the row's copy
    return cache, torch.cat(logits)


def generate_batch_with_capture(
    model,
    prompts: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]],
    *,
    max_new_tokens: int,
    eos_token_ids: Sequence[int] = (),
    layers="all",
    logits_processors: Sequence[Callable] = (),
    capture: bool = True,
    prompt_lookup_num_tokens: int = 0,
) -> list[tuple[list[int], np.ndarray]]:
    """Greedy decoding of several prompts as one left-padded batch, with attention capture.

    Parameters
    ----------
    model : transformers causal LM (AttentionInterface-based, e.g. Llama)
    prompts : sequence of (input_ids, node_ranges)
        Each prompt's token ids and its input nodes' token ranges (non-empty, end exclusive,
        within the prompt). All are decoded together: memory is about
        ``len(prompts) * (max prompt + max_new_tokens)`` tokens of KV cache.
    max_new_tokens : int
        Generation limit per prompt.
    eos_token_ids : sequence of int
        Tokens that end a row (not returned); a finished row leaves the batch.
    layers : {"all", "last"} or list of int
        Layers averaged (the paper: all).
    logits_processors : sequence
        Applied in order before the argmax. A ``transformers.LogitsProcessor`` is called once per
        step as ``p(generated_ids (rows, n_generated) long, scores (rows, vocab))`` (the prompt is
        not passed); any other callable per row as ``f(generated: list[int], logits: (vocab,))``.
    capture : bool, default True
        False: plain greedy decoding, every ``node_att`` is empty.
    prompt_lookup_num_tokens : int, default 0
        Prompt-lookup decoding (Saxena 2023; 0: off): each pass also feeds up to this many draft
        tokens per row, the tokens that followed the most recent earlier occurrence of the row's
        last 8 (else 7, ..., else 1) tokens in its prompt or generated text, continued cyclically when
        the match runs into the end (a repeated line repeats again). The model's greedy choice at
        every draft position (after the logits processors) is compared with the draft; the
        agreeing prefix and the model's next token are kept, so the output is the greedy output,
        at up to ``1 + prompt_lookup_num_tokens`` tokens per pass. A row's draft starts at 4
        tokens, doubles after a fully accepted draft and falls back to one more than the tokens
        accepted otherwise; one pass feeds at most about 64 tokens over all rows. Draft tokens not
        kept stay in the KV cache, masked out. At most 63.

    Returns
    -------
    list of (generated, node_att), one per prompt, in order
        ``generated``: token ids without the stopping EOS; ``node_att``:
        ``(n_generated, n_nodes)`` float64, the attention of generated token ``t`` (fed back as a
        one-token pass) to node ``k``, averaged over heads, the layers and node ``k``'s tokens.
        In float32 both equal decoding each prompt alone (tokens identical up to exact ties,
        attention to ~1e-6).

    Raises
    ------
    ValueError
        An empty prompt or a node range outside its prompt.
    """
    import torch

    from longctx.attention import FUSED_MAX_QUERY, record_attention_stats

    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=0)
    prompt_lookup_num_tokens = check_prompt_lookup(prompt_lookup_num_tokens)
    n_rows = len(prompts)
    if n_rows == 0:
        return []
    device = next(model.parameters()).device
    lens = [len(p[0]) for p in prompts]
    if min(lens) < 1:
        raise ValueError("every prompt must hold at least one token")
    n_nodes = [len(r) for _, r in prompts]
    p_max, k_max = max(lens), max(1, max(n_nodes))
    eos = [int(e) for e in eos_token_ids]
    eos_set = set(eos)
    pad = eos[0] if eos else 0
    ids = torch.full((n_rows, p_max), pad, dtype=torch.long)
    mask = torch.zeros((n_rows, p_max), dtype=torch.long)
    assign = torch.zeros(n_rows, p_max, k_max, dtype=torch.float32)
    for i, (toks, ranges) in enumerate(prompts):
        off = p_max - lens[i]
        ids[i, off:] = torch.tensor([int(t) for t in toks], dtype=torch.long)
        mask[i, off:] = 1
        for k, (a, b) in enumerate(ranges):
            if not 0 <= a < b <= lens[i]:
                raise ValueError(
                    f"prompts[{i}]: node range {k} = {(a, b)} is not a non-empty range of the prompt"
                )
            assign[i, off + a : off + b, k] = 1.0 / (b - a)
    ids, mask, assign = ids.to(device), mask.to(device), assign.to(device)
    positions = (mask.cumsum(-1) - 1).clamp_(min=0)
    next_pos = torch.tensor(lens, dtype=torch.long, device=device)
    processors = list(logits_processors)

    def process(i: int, extra: list[int], scores):
        """Row ``i``'s scores ``(vocab,)`` after the processors, given its generated tokens plus
        ``extra`` (draft tokens being checked)."""
        if not processors:
            return scores
        toks = generated[i] + extra
        for p in processors:
            if _is_batched(p):
                ids_t = torch.tensor([toks], dtype=torch.long, device=device)
                scores = p(ids_t, scores[None])[0]
            else:
                scores = p(toks, scores)
        return scores

    cache_kw = cache_keyword(model)
    generated: list[list[int]] = [[] for _ in range(n_rows)]
    lookups = (
        [PromptLookup(toks, prompt_lookup_num_tokens) for toks, _ in prompts]
        if prompt_lookup_num_tokens
        else []
    )
    # per decoding pass: (active rows, (rows, q, k_max) node attention, tokens kept per row)
    steps: list[tuple[list[int], torch.Tensor, list[int]]] = []
    active = list(range(n_rows)) if max_new_tokens else []
    n_passes = 0
    with torch.no_grad(), record_attention_stats(model, layers) as rec:
        with rec.paused():
            cache, logits = _prefill(
                model, prompts, ids, mask, positions, cache_kw, extra=2 * max_new_tokens + 8
            )  # room for the draft tokens not kept too; past it the buffers grow (one copy)
        rec.enabled = capture
        rec.fuse_steps = True  # a decoding pass computes attention once (p @ V from recorded p)
        while active:
            tok_list = [int(torch.argmax(process(i, [], logits[j]))) for j, i in enumerate(active)]
            keep = [
                j
                for j, i in enumerate(active)
                if tok_list[j] not in eos_set and len(generated[i]) < max_new_tokens
            ]
            if len(keep) < len(active):
                if not keep:
                    break
                keep_t = torch.tensor(keep, dtype=torch.long, device=device)
                cache.batch_select_indices(keep_t)
                mask, next_pos, assign = mask[keep_t], next_pos[keep_t], assign[keep_t]
                active = [active[j] for j in keep]
                tok_list = [tok_list[j] for j in keep]
            drafts = []
            cap = max(1, PASS_TOKENS // len(active) - 1)  # draft tokens a row, this pass
            cap = min(cap, FUSED_MAX_QUERY - 1)
            for j, i in enumerate(active):
                generated[i].append(tok_list[j])
                room = max_new_tokens - len(generated[i])
                d = (
                    lookups[i].draft(generated[i], min(room, lookups[i].k, cap))
                    if (lookups and room > 0)
                    else []
                )
                drafts.append(d)
            q_len = 1 + max(len(d) for d in drafts)
            inp = torch.full((len(active), q_len), pad, dtype=torch.long)
            new_mask = torch.zeros((len(active), q_len), dtype=mask.dtype)
            for j, d in enumerate(drafts):
                inp[j, : 1 + len(d)] = torch.tensor([tok_list[j], *d], dtype=torch.long)
                new_mask[j, : 1 + len(d)] = 1
            inp, new_mask = inp.to(device), new_mask.to(device)
            start = mask.shape[1]
            mask = torch.cat([mask, new_mask], dim=1)
            pos = next_pos[:, None] + torch.arange(q_len, device=device)[None, :]
            n_passes += 1
            out = model(
                input_ids=inp, attention_mask=mask, position_ids=pos,
                use_cache=True, **{cache_kw: cache},
            )  # fmt: skip
            step_logits = out.logits  # (rows, q_len, vocab)
            accepted = []
            for j, i in enumerate(active):
                d, a = drafts[j], 0
                while a < len(d):
                    t = int(torch.argmax(process(i, d[:a], step_logits[j, a])))
                    if t != d[a] or t in eos_set:
                        break
                    a += 1
                accepted.append(a)
                if d:
                    lookups[i].adapt(a, len(d))
                generated[i].extend(d[:a])
            kept = [1 + a for a in accepted]  # tokens of each row's pass that stay
            n_kept = torch.tensor(kept, dtype=torch.long, device=device)
            if q_len > 1:  # draft tokens not accepted (and padding) are masked out from now on
                cols = torch.arange(q_len, device=device)[None, :]
                mask[:, start:] = mask[:, start:] * (cols < n_kept[:, None]).to(mask.dtype)
            next_pos = next_pos + n_kept
            logits = step_logits[torch.arange(len(active), device=device), n_kept - 1]
            if capture:
                row = rec.pop_rows()[:, :, :p_max]  # (rows, q, p_max): attention to the prompt
                steps.append((list(active), torch.bmm(row, assign), kept))
    logger.debug(
        "decoded %d prompt(s): %d tokens in %d passes (prompt lookup %d)",
        n_rows, sum(len(g) for g in generated), n_passes, prompt_lookup_num_tokens,
    )  # fmt: skip
    results = []
    per_row_att: list[list] = [[] for _ in range(n_rows)]
    for rows, att, kept in steps:
        att = att.double().cpu().numpy()
        for j, i in enumerate(rows):
            per_row_att[i].append(att[j, : kept[j], : n_nodes[i]])
    for i in range(n_rows):
        if per_row_att[i]:
            node_att = np.concatenate(per_row_att[i])
        else:
            node_att = np.zeros((0, n_nodes[i]), dtype=np.float64)
        results.append((generated[i], node_att))
    return results
