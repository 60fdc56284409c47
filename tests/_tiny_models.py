"""Test helpers shared by the model-layer and YOURA tests: a tiny random Llama and a cached
SmolLM2 tokenizer. Not part of the package (import as ``tests._tiny_models``)."""

from __future__ import annotations

from functools import lru_cache


def tiny_llama(
    vocab_size: int,
    n_layers: int = 2,
    hidden: int = 64,
    heads: int = 4,
    kv_heads: int = 2,
    seed: int = 0,
    *,
    max_positions: int = 8192,
    attn_implementation: str = "eager",
):
    """A random ``LlamaForCausalLM`` (float32, eval mode, eager attention by default).

    With ``vocab_size=49152`` (SmolLM2) and the defaults it has ~3.2M parameters and runs 1000
    tokens with attentions in ~0.1 s on CPU. Same ``seed`` -> same weights.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=n_layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
    )
    config._attn_implementation = attn_implementation
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    return model.to(torch.float32).eval()


@lru_cache(maxsize=1)
def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's fast tokenizer, loaded once per process from the longctx cache
    (the first run ever reads it from the packaged GGUF, ~5 s)."""
    from longctx.models import load_tokenizer

    return load_tokenizer(None)
