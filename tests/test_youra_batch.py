"""longctx.youra: padded batches of windows equal single passes; GPU memory defaults; out of
memory errors; the CPU dtype default."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import longctx.youra.memory as memory_mod  # noqa: E402
from longctx.youra import ReactionScorer, YouraIndex  # noqa: E402
from longctx.youra.config import (  # noqa: E402
    CUDA_CACHE_FRACTION,
    DEFAULT_CPU_DTYPE,
    YouraOutOfMemoryError,
)
from longctx.youra.memory import gpu_memory_defaults, pass_bytes  # noqa: E402
from tests._youra_helpers import smollm2_tokenizer, tiny_llama  # noqa: E402

# nodes of different lengths (one window each), as a postprocessor gets them
NODES = [
    "Alice was beginning to get very tired of sitting by her sister on the bank. "
    "Once or twice she had peeped into the book her sister was reading.",
    "Suddenly a White Rabbit with pink eyes ran close by her.",
    "There was nothing so very remarkable in that. The Rabbit took a watch out of its "
    "waistcoat-pocket, and looked at it. Alice started to her feet! She ran across the field "
    "after it, and was just in time to see it pop down a large rabbit-hole under the hedge. "
    "In another moment down went Alice after it.",
    "The rabbit-hole went straight on like a tunnel for some way. Then it dipped suddenly down.",
    "Down, down, down. Would the fall never come to an end?",
]
QUERIES = ["What colour were the Rabbit's eyes?", "Where did Alice fall?"]


@pytest.fixture(scope="module")
def tok():
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return tiny_llama(len(tok), attn="eager")


@pytest.fixture(scope="module")
def sdpa_model(tok):
    return tiny_llama(len(tok))


class _Calls:
    """Counts forward calls and their batch sizes (a forward pre-hook)."""

    def __init__(self, model):
        self.batches = []
        self._h = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        self.batches.append(kwargs["input_ids"].shape[0])

    def close(self):
        self._h.remove()


def _scores(model, tok, batch_size, **kw):
    s = ReactionScorer(model, tok, batch_size=batch_size, max_window=512, **kw)
    index = YouraIndex.from_texts(NODES, s)
    calls = _Calls(model)
    try:
        # first query: context + suffix + query passes; second: cached windows, query pass only
        out = [index.score_units(q)[0] for q in QUERIES]
    finally:
        calls.close()
    return out, calls.batches


@pytest.mark.parametrize("which", ["model", "sdpa_model"])
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"preset": "paper"},
        {"normalize": "none"},
        {"cache_bytes": 0},
        {"cache_dtype": "bfloat16"},
    ],
)
def test_padded_batches_equal_single_passes(request, tok, which, kw):
    model = request.getfixturevalue(which)
    single, calls1 = _scores(model, tok, 1, **kw)
    batched, calls8 = _scores(model, tok, 8, **kw)
    assert max(calls1) == 1 and max(calls8) == len(NODES)  # all nodes in one padded batch
    assert len(calls8) < len(calls1)
    for a, b in zip(single, batched):
        assert a.shape == b.shape and len(a) > len(NODES)
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_batches_respect_batch_size_and_the_window(model, tok):
    _, calls = _scores(model, tok, 2)
    assert max(calls) == 2
    s = ReactionScorer(model, tok, batch_size=16, max_window=512)
    s._setup()
    items = [10, 300, 200, 100, 50]
    batches = s._batches(items, lambda n: n)
    assert [b for bt in batches for b in bt] == sorted(items, reverse=True)
    assert all(len(b) * b[0] <= 512 for b in batches)  # padded tokens <= max_window
    with pytest.raises(ValueError, match="batch_size"):
        ReactionScorer(model, tok, batch_size=0)


def test_duplicate_nodes_are_scored_once(model, tok):
    s = ReactionScorer(model, tok, max_window=512)
    index = YouraIndex.from_texts([NODES[0], NODES[1], NODES[0]], s)
    calls = _Calls(model)
    try:
        scores, info = index.score_units(QUERIES[0])
    finally:
        calls.close()
    n0 = len(index.units(0)[0])
    np.testing.assert_array_equal(scores[:n0], scores[-n0:])
    assert calls.batches == [2, 2, 2] and info["cache_hits"] == 1 and info["cache_misses"] == 2


def test_recorder_row_mask_leaves_padding_rows_out(model, tok):
    from longctx.attention import record_attention_stats

    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    with torch.no_grad(), record_attention_stats(model, "all") as rec:
        rec.row_mask = mask.bool()
        model(input_ids=ids, attention_mask=mask)
        both = rec.pop()
        rec.row_mask = None
        model(input_ids=ids[1:, :2])
        alone = rec.pop()
    # the padded row's real columns get exactly its own rows' attention
    torch.testing.assert_close(both[1, :2], alone[0], rtol=1e-5, atol=1e-6)
    assert float(both[1, 2:].abs().sum()) == 0.0


# -- defaults that fit a GPU --------------------------------------------------------------------
def test_gpu_memory_defaults_logic(model):
    cfg = model.config
    per_token = pass_bytes(cfg, 4, 1)
    assert pass_bytes(cfg, 4, 1000) == 1000 * per_token
    assert pass_bytes(cfg, 4, 1000, eager=True) > pass_bytes(cfg, 4, 1000)
    # plenty of memory: half of it for the cache, the model's window kept
    cache, window = gpu_memory_defaults(2**40, cfg, 4, 8192)
    assert cache == int(CUDA_CACHE_FRACTION * 2**40) and window == 8192
    # little memory: the window is capped so one pass fits in 80% of what the cache leaves
    free = 2000 * per_token * 2
    cache, window = gpu_memory_defaults(free, cfg, 4, 8192)
    assert cache == free // 2
    assert window % 256 == 0 and 256 <= window < 8192
    assert pass_bytes(cfg, 4, window) <= 0.8 * (free - cache) < pass_bytes(cfg, 4, window + 256)
    # given values are kept
    assert gpu_memory_defaults(free, cfg, 4, 8192, cache_bytes=7, max_window=1000) == (7, 1000)
    with pytest.raises(YouraOutOfMemoryError, match="cache_bytes.*max_window"):
        gpu_memory_defaults(per_token * 100, cfg, 4, 8192)


def test_scorer_takes_gpu_defaults_from_free_memory(sdpa_model, tok, monkeypatch):
    per_token = pass_bytes(sdpa_model.config.get_text_config(), 4, 1, eager=False)
    free = 1000 * per_token * 2  # half for the cache, 80% of the rest: ~800 tokens a pass
    seen = []

    def fake_free(device):
        seen.append(device)
        return free

    monkeypatch.setattr(memory_mod, "free_device_memory", fake_free)
    s = ReactionScorer(sdpa_model, tok)
    assert seen and s.cache_bytes == free // 2 and s.cache_info()["budget"] == free // 2
    assert s._window == 768  # the model window (2048) capped
    assert s.config()["cache_bytes"] is None  # "from the device" is what a saved index keeps
    given = ReactionScorer(sdpa_model, tok, cache_bytes=1234, max_window=300)
    assert given.cache_bytes == 1234 and given._window == 300
    # on CPU (no free-memory figure) the fixed defaults
    monkeypatch.setattr(memory_mod, "free_device_memory", lambda device: None)
    cpu = ReactionScorer(sdpa_model, tok)
    assert cpu.cache_bytes == 2**30 and cpu._window == 2048


def test_out_of_memory_is_a_clear_error(model, tok):
    def boom(module, args, kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    s = ReactionScorer(model, tok, max_window=256, batch_size=4)
    h = model.register_forward_pre_hook(boom, with_kwargs=True)
    try:
        with pytest.raises(YouraOutOfMemoryError) as err:
            s.score_sentences(NODES[2], QUERIES[0])
    finally:
        h.remove()
    msg = str(err.value)
    for name in ("max_window (now 256", "batch_size (now 4", "cache_bytes (now"):
        assert name in msg
    assert isinstance(err.value, MemoryError)
    assert isinstance(err.value.__cause__, torch.OutOfMemoryError)
    # the scorer still works afterwards (the recording was undone)
    assert len(s.score_sentences(NODES[2], QUERIES[0])) > 1


# -- dtype default --------------------------------------------------------------------------------
def test_cpu_default_dtype_and_bfloat16_selectable(model, tok, monkeypatch):
    import longctx.models

    asked = []

    def fake_load(name=None, *, device=None, dtype=None, **kw):
        asked.append(dtype)
        return model, tok

    monkeypatch.setattr(longctx.models, "load_causal_lm", fake_load)
    ReactionScorer(device="cpu")._setup()
    ReactionScorer(device="cpu", dtype="bfloat16")._setup()
    assert asked == [DEFAULT_CPU_DTYPE, "bfloat16"]


def test_cli_dtype_option_reaches_the_scorer(monkeypatch):
    import longctx.cli.youra as youra_cli
    from longctx.cli import build_parser

    args = build_parser().parse_args(["retrieve", "f.txt", "-q", "x", "--method", "youra"])
    assert args.dtype is None  # the scorer's default (DEFAULT_CPU_DTYPE on CPU)
    args = build_parser().parse_args(
        ["retrieve", "f.txt", "-q", "x", "--method", "youra", "--dtype", "bfloat16"]
    )
    seen = {}
    monkeypatch.setattr(youra_cli, "ReactionScorer", lambda model, **kw: seen.update(kw) or "s")
    youra_cli._scorer.cache_clear()
    try:
        assert youra_cli._get_scorer(args) == "s"
    finally:
        youra_cli._scorer.cache_clear()
    assert seen["dtype"] == "bfloat16" and seen["cache_bytes"] is None
