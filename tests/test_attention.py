"""longctx.attention: column sums equal those of the full eager attention maps."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from longctx._hf import cache_keyword  # noqa: E402
from longctx.attention import (  # noqa: E402
    num_hidden_layers,
    record_attention_stats,
    resolve_layers,
)
from tests._youra_helpers import eager_copy, tiny_llama  # noqa: E402

VOCAB = 500


@pytest.fixture(scope="module")
def models():
    m = tiny_llama(VOCAB, n_layers=3)
    return m, eager_copy(m)


def _full_maps(eager, ids):
    with torch.no_grad():
        return eager(ids, output_attentions=True).attentions


@pytest.mark.parametrize("row_block", [None, 3])
def test_context_column_sums_match_eager(models, row_block):
    model, eager = models
    ids = torch.randint(0, VOCAB, (1, 37), generator=torch.Generator().manual_seed(1))
    maps = _full_maps(eager, ids)
    with torch.no_grad(), record_attention_stats(model, "all", row_block=row_block) as rec:
        model(ids)
        for layer in range(3):
            ref = maps[layer][0].sum(dim=1)  # (heads, n)
            got = rec.column_sums(layer)[0]
            assert got.dtype == torch.float32
            torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
        assert rec.n_rows() == 37
        mean = rec.mean_column_sums()[0]
    ref_mean = torch.stack([m[0].sum(dim=1).mean(dim=0) for m in maps]).mean(dim=0)
    torch.testing.assert_close(mean, ref_mean, atol=1e-5, rtol=1e-5)


def test_new_tokens_over_kv_cache_match_eager(models):
    model, eager = models
    g = torch.Generator().manual_seed(2)
    ctx = torch.randint(0, VOCAB, (1, 30), generator=g)
    new = torch.randint(0, VOCAB, (1, 6), generator=g)
    maps = _full_maps(eager, torch.cat([ctx, new], dim=1))
    with torch.no_grad(), record_attention_stats(model, [-1]) as rec:
        with rec.paused():
            out = model(ctx, use_cache=True)
        assert rec._sums == {}  # paused: nothing recorded
        model(new, **{cache_keyword(model): out.past_key_values}, use_cache=True)
        got = rec.column_sums(2)[0]  # (heads, 36): rows of the 6 new tokens
    ref = maps[2][0][:, 30:, :].sum(dim=1)
    assert got.shape == ref.shape == (4, 36)
    torch.testing.assert_close(got, ref, atol=1e-6, rtol=1e-5)
    # each new row sums to 1 over all keys
    torch.testing.assert_close(got.sum(dim=-1), torch.full((4,), 6.0), atol=1e-5, rtol=0)


def test_only_selected_layers_recorded(models):
    model, _ = models
    ids = torch.randint(0, VOCAB, (1, 10))
    with torch.no_grad(), record_attention_stats(model, [0, 2]) as rec:
        model(ids)
        assert rec.layers == (0, 2)
        rec.column_sums(0)
        with pytest.raises(KeyError):
            rec.column_sums(1)


def test_implementation_restored_even_after_error(models):
    model, _ = models
    assert model.config._attn_implementation == "sdpa"
    with pytest.raises(RuntimeError, match="boom"):
        with record_attention_stats(model, "last"):
            assert model.config._attn_implementation.startswith("longctx_stats_")
            raise RuntimeError("boom")
    assert model.config._attn_implementation == "sdpa"
    # outputs unchanged by the recording
    ids = torch.randint(0, VOCAB, (1, 12))
    with torch.no_grad():
        plain = model(ids).logits
        with record_attention_stats(model, "all"):
            recorded = model(ids).logits
    torch.testing.assert_close(plain, recorded, atol=1e-6, rtol=1e-6)


def test_eager_original_kept(models):
    _, eager = models
    ids = torch.randint(0, VOCAB, (1, 9))
    with torch.no_grad(), record_attention_stats(eager, "last") as rec:
        eager(ids)
        assert rec.n_rows(2) == 9
    assert eager.config._attn_implementation == "eager"


def test_bfloat16_stats_in_float32():
    model = tiny_llama(VOCAB, n_layers=2).to(torch.bfloat16)
    ids = torch.randint(0, VOCAB, (1, 20))
    with torch.no_grad(), record_attention_stats(model, "last") as rec:
        model(ids)
        sums = rec.column_sums(1)[0]
    assert sums.dtype == torch.float32
    # every row of probabilities sums to 1: the column sums add up to the row count per head
    torch.testing.assert_close(sums.sum(dim=-1), torch.full((4,), 20.0), atol=1e-3, rtol=0)


def test_layer_spec_errors():
    assert resolve_layers("last", 5) == (4,)
    assert resolve_layers("all", 3) == (0, 1, 2)
    assert resolve_layers([-1, 0, 4], 5) == (0, 4)
    with pytest.raises(ValueError, match="layers"):
        resolve_layers("first", 5)
    with pytest.raises(ValueError, match="layers"):
        resolve_layers([5], 5)
    with pytest.raises(ValueError, match="layers"):
        resolve_layers([], 5)
    with pytest.raises(TypeError, match="layers"):
        resolve_layers([1.5], 5)
    with pytest.raises(TypeError, match="layers"):
        resolve_layers(True, 5)


def test_bad_model_and_row_block(models):
    model, _ = models
    assert num_hidden_layers(model) == 3
    with pytest.raises(ValueError, match="row_block"):
        with record_attention_stats(model, "last", row_block=0):
            pass
    with pytest.raises(TypeError, match="model"):
        with record_attention_stats(torch.nn.Linear(2, 2), "last"):
            pass


@pytest.mark.parametrize("padded", [False, True])
def test_fused_steps_give_the_same_output_and_attention_rows(models, padded):
    """``fuse_steps``: a pass of a few new tokens over a KV cache computes attention once; its
    logits equal the model's own and ``pop_rows`` equals the eager maps' rows (mean over heads
    and layers), with or without left padding in the batch."""
    from transformers import DynamicCache

    model, eager = models
    g = torch.Generator().manual_seed(5)
    ctx = torch.randint(0, VOCAB, (2, 20), generator=g)
    new = torch.randint(0, VOCAB, (2, 4), generator=g)
    mask = torch.ones(2, 24, dtype=torch.long)
    if padded:
        mask[1, :5] = 0  # row 1: five padding tokens on the left
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        ref = eager(torch.cat([ctx, new], 1), attention_mask=mask, position_ids=pos,
                    output_attentions=True)  # fmt: skip
        want_rows = torch.stack([a[:, :, 20:] for a in ref.attentions]).mean(dim=(0, 2))
        with record_attention_stats(model, "all") as rec:
            cache = DynamicCache()
            with rec.paused():
                model(ctx, attention_mask=mask[:, :20], position_ids=pos[:, :20],
                      **{cache_keyword(model): cache}, use_cache=True)  # fmt: skip
            rec.fuse_steps = True
            out = model(new, attention_mask=mask, position_ids=pos[:, 20:],
                        **{cache_keyword(model): cache}, use_cache=True)  # fmt: skip
            rows = rec.pop_rows()
    assert rows.shape == (2, 4, 24) and rows.dtype == torch.float32
    torch.testing.assert_close(out.logits, ref.logits[:, 20:], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rows, want_rows, atol=1e-6, rtol=1e-5)
    if padded:
        assert float(rows[1, :, :5].abs().max()) == 0.0  # padding gets no attention
    with pytest.raises(RuntimeError, match="no fused attention rows"):
        rec.pop_rows()


def test_fused_steps_in_bfloat16_match_the_model_without_float32_cache_copies(models):
    """A bfloat16 model: the fused pass (products in bf16, softmax in float32) gives the logits
    of the model's own attention to bf16 rounding, and float32 attention rows summing to 1."""
    import copy

    from transformers import DynamicCache

    model = copy.deepcopy(models[0]).to(torch.bfloat16)
    g = torch.Generator().manual_seed(7)
    ctx = torch.randint(0, VOCAB, (1, 40), generator=g)
    new = torch.randint(0, VOCAB, (1, 3), generator=g)

    def run(fuse: bool):
        cache = DynamicCache()
        with torch.no_grad(), record_attention_stats(model, "all") as rec:
            with rec.paused():
                model(ctx, **{cache_keyword(model): cache}, use_cache=True)
            rec.fuse_steps = fuse
            rec.enabled = fuse
            out = model(new, **{cache_keyword(model): cache}, use_cache=True)
            return out.logits.float(), (rec.pop_rows() if fuse else None)

    want, _ = run(False)
    got, rows = run(True)
    assert rows.dtype == torch.float32 and rows.shape == (1, 3, 43)
    torch.testing.assert_close(rows.sum(-1), torch.ones(1, 3), atol=1e-5, rtol=0)
    torch.testing.assert_close(got, want, atol=0.02, rtol=0)  # logits: std 0.17, max 1.1
