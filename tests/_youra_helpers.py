"""Shared helpers for the YOURA tests: SmolLM2's tokenizer (loaded once per process) and a tiny
random Llama with its vocabulary, plus the naive two-pass reference of eq. 1."""

from __future__ import annotations

import copy

import numpy as np

from tests import _tiny_models
from tests._tiny_models import smollm2_tokenizer  # noqa: F401  (re-exported for the tests)

# Three short "documents" and a question whose answer sits in the second one (adapter tests).
TEXTS = [
    "Alice sat by her sister on the bank. She had nothing to do. The day was hot.",
    "A White Rabbit with pink eyes ran close by her. It took a watch out of its pocket.",
    "Alice ran across the field after it. She saw it pop down a large rabbit-hole.",
]
QUERY = "What colour were the Rabbit's eyes?"


def tiny_scorer(**kwargs):
    """A ReactionScorer on a tiny random Llama with SmolLM2's tokenizer."""
    from longctx.youra import ReactionScorer

    tok = smollm2_tokenizer()
    return ReactionScorer(tiny_llama(len(tok)), tok, **kwargs)


def tiny_llama(vocab_size: int = 49152, n_layers: int = 2, attn: str = "sdpa", seed: int = 0):
    """A random Llama: hidden 64, 4 query heads / 2 KV heads (GQA), float32, eval mode."""
    import torch

    model = _tiny_models.tiny_llama(vocab_size, n_layers, seed=seed, max_positions=2048)
    # sharper attention than the default init, so that reactions are not all ~equal
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(8.0)
            layer.self_attn.k_proj.weight.mul_(8.0)
    model.set_attn_implementation(attn)
    return model


def eager_copy(model):
    """The same weights, run with eager attention (and its own config object)."""
    from transformers import LlamaForCausalLM

    m = LlamaForCausalLM(copy.deepcopy(model.config)).eval()
    m.load_state_dict(model.state_dict())
    m.set_attn_implementation("eager")
    return m


def attn_vec(eager_model, ids, layers, rows=None):
    """Mean over heads and ``layers`` of the per-column mean of the full attention maps
    (``output_attentions=True``), over all rows or the rows ``rows`` (a slice)."""
    import torch

    with torch.no_grad():
        out = eager_model(torch.tensor([ids]), output_attentions=True)
    vecs = []
    for layer in layers:
        a = out.attentions[layer][0].double()  # (heads, n, n)
        if rows is not None:
            a = a[:, rows, :]
        vecs.append(a.mean(dim=1).mean(dim=0).numpy())
    return np.mean(vecs, axis=0)


def naive_reaction(eager_model, ctx_ids, query_ids, layers, suffix_ids=()):
    """Eq. 1 by two full passes. ``suffix_ids`` empty: the paper's baseline (all rows).
    Otherwise the authors' code: rows of the suffix (without) and of suffix + query (with)."""
    c = len(ctx_ids)
    if not suffix_ids:
        without = attn_vec(eager_model, list(ctx_ids), layers)
        with_q = attn_vec(eager_model, list(ctx_ids) + list(query_ids), layers)
    else:
        s = len(suffix_ids)
        without = attn_vec(eager_model, list(ctx_ids) + list(suffix_ids), layers, slice(c, c + s))
        with_q = attn_vec(
            eager_model,
            list(ctx_ids) + list(suffix_ids) + list(query_ids),
            layers,
            slice(c, None),
        )
    return np.abs(without[:c] - with_q[:c])


def naive_ratio(eager_model, ctx_ids, query_ids, layers, suffix_ids=(), eps_share=0.1):
    """``normalize="ratio"`` by full passes: the query rows' attention share of each context token
    over the baseline rows' (all context rows, or the suffix rows), each plus ``eps_share / c``,
    over its median."""
    c = len(ctx_ids)
    rows = list(ctx_ids) + list(suffix_ids)
    if not suffix_ids:
        without = attn_vec(eager_model, rows, layers)
    else:
        without = attn_vec(eager_model, rows, layers, slice(c, None))
    query = attn_vec(eager_model, rows + list(query_ids), layers, slice(len(rows), None))
    eps = eps_share / c
    q_share, base_share = query[:c] / query[:c].sum(), without[:c] / without[:c].sum()
    ratio = (q_share + eps) / (base_share + eps)
    return ratio / np.median(ratio)
