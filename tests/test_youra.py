"""longctx.youra: the fast path equals eq. 1 from full attention maps; selection rules; errors."""

from __future__ import annotations

import importlib.util
import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from longctx.youra import GMEAN_EPS, ReactionScorer, ScoredSpan  # noqa: E402
from tests._youra_helpers import (  # noqa: E402
    eager_copy,
    naive_ratio,
    naive_reaction,
    smollm2_tokenizer,
    tiny_llama,
)

CONTEXT = (
    "Alice was beginning to get very tired of sitting by her sister on the bank. "
    "Once or twice she had peeped into the book her sister was reading. "
    "It had no pictures or conversations in it. "
    "Suddenly a White Rabbit with pink eyes ran close by her.\n\n"
    "There was nothing so very remarkable in that. "
    "The Rabbit took a watch out of its waistcoat-pocket, and looked at it. "
    "Alice started to her feet! "
    "She ran across the field after it, and was just in time to see it pop down a large "
    "rabbit-hole under the hedge."
)
QUERY = "What colour were the Rabbit's eyes?"


@pytest.fixture(scope="module")
def tok():
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return tiny_llama(len(tok))


@pytest.fixture(scope="module")
def eager(model):
    return eager_copy(model)


class _Counter:
    """Counts the rows of a model's forward calls (a forward pre-hook): one per window of a
    padded batch, with their (padded) token lengths; ``calls`` counts the calls."""

    def __init__(self, model):
        self.n = 0
        self.calls = 0
        self.lengths = []
        self._h = model.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs):
        b, n = kwargs["input_ids"].shape
        self.calls += 1
        self.n += b
        self.lengths += [n] * b

    def close(self):
        self._h.remove()


@pytest.mark.parametrize("baseline", ["paper", "instruction"])
@pytest.mark.parametrize("layers", ["last", "all", [0]])
def test_fast_path_equals_naive_eq1(model, eager, tok, baseline, layers):
    scorer = ReactionScorer(model, tok, baseline=baseline, layers=layers, normalize="none")
    vec = scorer.reaction_vector(CONTEXT, QUERY)
    ctx_ids = tok(CONTEXT, add_special_tokens=False)["input_ids"]
    assert vec.dtype == np.float32 and vec.shape == (len(ctx_ids),)
    q_ids = tok(scorer.query_template.replace("{query}", QUERY), add_special_tokens=False)[
        "input_ids"
    ]
    sel = {"last": [1], "all": [0, 1]}.get(layers, layers) if isinstance(layers, str) else layers
    ref = naive_reaction(eager, ctx_ids, q_ids, sel, scorer._suffix_ids)
    assert ref.max() > 1e-4  # the reaction is not trivially ~0
    np.testing.assert_allclose(vec, ref, atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(vec, ref, atol=1e-7, rtol=1e-3)


@pytest.mark.parametrize("baseline", ["paper", "instruction"])
@pytest.mark.parametrize("layers", ["last", "all"])
def test_ratio_equals_naive_ratio(model, eager, tok, baseline, layers):
    scorer = ReactionScorer(model, tok, baseline=baseline, layers=layers, normalize="ratio")
    vec = scorer.reaction_vector(CONTEXT, QUERY)
    ctx_ids = tok(CONTEXT, add_special_tokens=False)["input_ids"]
    q_ids = tok(scorer.query_template.replace("{query}", QUERY), add_special_tokens=False)[
        "input_ids"
    ]
    sel = {"last": [1], "all": [0, 1]}[layers]
    ref = naive_ratio(eager, ctx_ids, q_ids, sel, scorer._suffix_ids)
    assert ref.std() > 0.05  # not trivially constant
    np.testing.assert_allclose(vec, ref, rtol=1e-4)


# Scores of main before presets existed (commit a9d4e3b): tiny model, CONTEXT, QUERY; one window
# (None) and 64-token windows. The paper preset must give them unchanged.
FINGERPRINTS = {
    ("paper", "last", None): [0.00116802, 0.00031146, 6.86e-05],
    ("paper", "last", 64): [0.00369974, 0.00083514, 0.00303],
    ("paper", "all", None): [0.00115374, 0.00028736, 0.00017198],
    ("paper", "all", 64): [0.00314595, 0.00131624, 0.00361623],
    ("instruction", "last", None): [0.00100107, 0.00084043, 0.00064321],
    ("instruction", "last", 64): [0.00190151, 0.00261607, 0.00281266],
    ("instruction", "all", None): [0.00062499, 0.00039562, 0.00038263],
    ("instruction", "all", 64): [0.00261547, 0.00213194, 0.00161024],
}


@pytest.mark.parametrize("key", sorted(FINGERPRINTS, key=str))
def test_paper_preset_reproduces_the_scores_before_presets(model, tok, key):
    baseline, layers, window = key
    kw = {"max_window": window, "max_query_tokens": 16} if window else {}
    if baseline == "paper":  # one argument
        scorer = ReactionScorer(model, tok, preset="paper", layers=layers, **kw)
    else:  # the old default: instruction baseline, raw reactions, gmean, no prior
        scorer = ReactionScorer(
            model, tok, layers=layers, normalize="none", aggregate="gmean", prior_tokens=0, **kw
        )
    scores = [s.score for s in scorer.score_sentences(CONTEXT, QUERY)]
    assert len(scores) == 8
    # 6 significant digits were recorded; float32 attention sums round at ~1e-7 relative
    np.testing.assert_allclose(scores[:3], FINGERPRINTS[key], rtol=2e-5, atol=2e-9)


def test_presets_and_their_settings(model, tok):
    from longctx.youra import PRESETS

    paper = ReactionScorer(model, tok, preset="paper")
    assert (paper.baseline, paper.layers, paper.aggregate, paper.normalize) == (
        "paper",
        "last",
        "gmean",
        "none",
    )
    default = ReactionScorer(model, tok)
    assert default.preset == "default" and default.normalize == PRESETS["default"]["normalize"]
    assert default.config()["preset"] == "default" and paper.config()["normalize"] == "none"
    # an explicit option overrides the preset's
    assert ReactionScorer(model, tok, preset="paper", layers="all").layers == "all"
    with pytest.raises(ValueError, match="preset"):
        ReactionScorer(preset="fast")
    with pytest.raises(ValueError, match="normalize"):
        ReactionScorer(normalize="rank")


def _copies_scores(model, tok, **kw):
    """Scores of the sentences of three copies of one paragraph, windows [copy 1, copy 2] and
    [copy 3]: copies 1 and 3 open their windows (same tokens, same positions), but the windows
    differ in length. Returns ``(3, sentences per copy)``."""
    from longctx.youra import INSTRUCTION_SUFFIX

    para = (
        "The White Rabbit took a watch out of its waistcoat-pocket. Alice ran across the field "
        "after it. She was just in time to see it pop down a large rabbit-hole under the hedge. "
        "In another moment down went Alice after it.\n\n"
    )
    text = para * 3
    probe = ReactionScorer(model, tok, **kw)
    _, sentences, spans = probe.encode_context(text)
    per = len(sentences) // 3
    third = spans[2 * per][0]  # first token of copy 3
    suffix = len(tok(INSTRUCTION_SUFFIX, add_special_tokens=False)["input_ids"])
    extra = suffix if probe.baseline == "instruction" else 0
    scorer = ReactionScorer(model, tok, max_window=third + extra + 16, max_query_tokens=16, **kw)
    lay = scorer._layout(text)
    assert [a for a, _ in lay.windows] == [0, third]
    s = np.asarray([x.score for x in scorer.score_sentences(text, "Where did the Rabbit go?")])
    return s.reshape(3, per)


def test_copies_in_different_windows_score_alike_under_the_default(model, tok):
    default = _copies_scores(model, tok)
    raw = _copies_scores(model, tok, normalize="none", prior_tokens=0)
    paper = _copies_scores(model, tok, preset="paper")
    # copy 1 (first of a 2-copy window) against copy 3 (alone in a window half as long)
    spread = np.abs(np.log(default[2] / default[0])).max()
    # raw reactions scale with 1 / window length and with position: the copies differ by far
    assert np.abs(np.log(raw[2] / raw[0])).max() > 0.5
    assert np.abs(np.log(paper[2] / paper[0])).max() > 1.0
    # ratios: the same up to how the window's end (what the suffix and query rows see) differs;
    # within 25% on this tiny random model (raw: a factor of 1.7 or more)
    assert spread < np.log(1.25)
    # and the order of the copies' sentences is the same in both windows
    assert np.array_equal(np.argsort(default[0]), np.argsort(default[2]))


def test_prior_tokens_shrink_short_sentences_toward_the_window_median(model, tok):
    from longctx.youra import PRESETS, _Layout

    assert PRESETS["default"]["prior_tokens"] == 8 and PRESETS["paper"]["prior_tokens"] == 0
    assert ReactionScorer(model, tok).prior_tokens == 8
    assert ReactionScorer(model, tok, preset="paper").prior_tokens == 0
    assert ReactionScorer(model, tok, prior_tokens=3).config()["prior_tokens"] == 3
    with pytest.raises(ValueError, match="prior_tokens"):
        ReactionScorer(prior_tokens=-1)
    # window 1 (60 tokens): a 2-token sentence at ratio 3, a 20-token one at 2, the rest at 1
    # (median 1); window 2 (10 tokens, one sentence at 4: median 4)
    vec = np.concatenate([[3.0, 3.0], np.full(20, 2.0), np.ones(38), np.full(10, 4.0)])
    spans = ((0, 2), (2, 22), (22, 60), (60, 70))
    lay = _Layout(tuple(range(70)), spans, spans, ((0, 60), (60, 70)), ("a", "b"))
    plain = ReactionScorer(model, tok, prior_tokens=0)._scores(lay, vec)
    shrunk = ReactionScorer(model, tok)._scores(lay, vec)
    np.testing.assert_allclose(plain, [3.0, 2.0, 1.0, 4.0])
    np.testing.assert_allclose(shrunk, [(6 + 8) / 10, (40 + 8) / 28, 1.0, 4.0])
    assert plain[0] > plain[1] and shrunk[1] > shrunk[0]  # the long sentence now ranks first
    # gmean shrinks in log space toward the log of the median (log 1 = 0 in window 1)
    g = ReactionScorer(model, tok, aggregate="gmean")._scores(lay, vec)
    np.testing.assert_allclose(g[[0, 3]], [np.exp(2 * np.log(3.0) / 10), 4.0])


def test_layers_change_the_vector(model, tok):
    kw = {"normalize": "none"}
    last = ReactionScorer(model, tok, layers="last", **kw).reaction_vector(CONTEXT, QUERY)
    first = ReactionScorer(model, tok, layers=[0], **kw).reaction_vector(CONTEXT, QUERY)
    both = ReactionScorer(model, tok, layers="all", **kw).reaction_vector(CONTEXT, QUERY)
    assert not np.allclose(last, first)
    # the layer mean is taken before the absolute value: |mean| <= mean of |.|
    assert np.all(both <= (last + first) / 2 + 1e-7)


def test_cached_second_query_equals_fresh_and_costs_only_query(model, tok):
    q2 = "Where did the Rabbit go?"
    cached = ReactionScorer(model, tok, max_window=64, max_query_tokens=16)
    cached.reaction_vector(CONTEXT, QUERY)
    counter = _Counter(model)
    try:
        second = cached.reaction_vector(CONTEXT, q2)
        n_windows = len(cached._layout(CONTEXT).windows)
        assert n_windows > 1
        q_len = len(cached._query_ids(q2))
        assert counter.lengths == [q_len] * n_windows  # only the query tokens ran
    finally:
        counter.close()
    fresh = ReactionScorer(model, tok, max_window=64, max_query_tokens=16, cache_bytes=0)
    np.testing.assert_allclose(second, fresh.reaction_vector(CONTEXT, q2), atol=1e-7, rtol=1e-5)
    # and the first query again, after the cache was cropped back: same as before
    np.testing.assert_allclose(
        cached.reaction_vector(CONTEXT, QUERY),
        fresh.reaction_vector(CONTEXT, QUERY),
        atol=1e-7,
        rtol=1e-5,
    )


def test_layout_lru_and_clear_cache(model, tok):
    scorer = ReactionScorer(model, tok, cache_size=1)
    scorer.reaction_vector(CONTEXT, QUERY)
    scorer.reaction_vector(CONTEXT + " The end.", QUERY)
    info = scorer.cache_info()
    assert info["layouts"] == 1 and info["windows"] == 2 and info["misses"] == 2
    scorer.clear_cache()
    info = scorer.cache_info()
    assert info["layouts"] == info["windows"] == info["bytes"] == info["misses"] == 0


def test_scores_gmean_and_mean(model, tok):
    g = ReactionScorer(model, tok, aggregate="gmean", prior_tokens=0)
    m = ReactionScorer(model, tok, aggregate="mean", prior_tokens=0)
    vec = g.reaction_vector(CONTEXT, QUERY)
    gs, ms = g.score_sentences(CONTEXT, QUERY), m.score_sentences(CONTEXT, QUERY)
    assert [s.index for s in gs] == list(range(len(gs))) and len(gs) == 8
    for a, b in zip(gs, ms):
        assert isinstance(a, ScoredSpan)
        assert (a.start, a.end, a.token_start, a.token_end) == (
            b.start,
            b.end,
            b.token_start,
            b.token_end,
        )
        v = vec[a.token_start : a.token_end].astype(np.float64)
        assert a.score == pytest.approx(np.exp(np.log(np.maximum(v, GMEAN_EPS)).mean()), rel=1e-5)
        assert b.score == pytest.approx(v.mean(), rel=1e-5)
        assert a.score <= b.score * (1 + 1e-6)  # AM-GM
    # spans: contiguous tokens covering the whole vector; char spans are the sentences
    assert gs[0].token_start == 0 and gs[-1].token_end == len(vec)
    assert all(x.token_end == y.token_start for x, y in zip(gs, gs[1:]))
    assert gs[3].text(CONTEXT).startswith("Suddenly a White Rabbit")


def test_windows_cover_every_token_and_sentence(model, tok, eager):
    kw = {"max_window": 60, "max_query_tokens": 16}
    scorer = ReactionScorer(model, tok, layers="last", normalize="none", **kw)
    ids, sentences, spans = scorer.encode_context(CONTEXT)
    vec = scorer.reaction_vector(CONTEXT, QUERY)
    windows = scorer._layout(CONTEXT).windows
    assert len(windows) >= 3
    assert vec.shape == (len(ids),) and np.all(np.isfinite(vec))
    assert windows[0][0] == 0 and windows[-1][1] == len(ids)
    starts = {s for s, _ in spans}
    for (a, b), (c, _) in zip(windows, windows[1:]):
        assert b == c and b - a <= 32 and b in starts  # cut at sentence starts
    scored = scorer.score_sentences(CONTEXT, QUERY)
    assert [s.index for s in scored] == list(range(len(sentences)))
    assert [(s.start, s.end) for s in scored] == sentences
    # each window is eq. 1 on its own tokens
    a, b = windows[1]
    q_ids = scorer._query_ids(QUERY)
    ref = naive_reaction(eager, ids[a:b], q_ids, [1], scorer._suffix_ids)
    np.testing.assert_allclose(vec[a:b], ref, atol=1e-7, rtol=1e-4)
    # the default preset: ratios of each window on its own tokens (eps from its own length)
    ratio = ReactionScorer(model, tok, **kw).reaction_vector(CONTEXT, QUERY)
    ref = naive_ratio(eager, ids[a:b], q_ids, [0, 1], scorer._suffix_ids)
    np.testing.assert_allclose(ratio[a:b], ref, rtol=1e-4)


def test_sentence_longer_than_window_is_split_at_token_level(model, tok):
    long_sentence = "The Rabbit " + " and ".join(["ran very fast"] * 40) + "."
    text = "Short one. " + long_sentence + " Alice followed."
    scorer = ReactionScorer(model, tok, max_window=40, max_query_tokens=8)
    ids, sentences, spans = scorer.encode_context(text)
    vec = scorer.reaction_vector(text, "Who ran?")
    windows = scorer._layout(text).windows
    assert vec.shape == (len(ids),)
    assert max(b - a for a, b in windows) <= 40 - 8 - len(scorer._suffix_ids)
    assert len(windows) >= 5
    assert len(scorer.score_sentences(text, "Who ran?")) == len(sentences) == 3


def test_select_budget_order_and_cap(model, tok):
    scorer = ReactionScorer(model, tok)
    spans = scorer.score_sentences(CONTEXT, QUERY)
    for budget in (1, 12, 25, 60, 10_000):
        chosen = scorer.select(CONTEXT, QUERY, token_budget=budget)
        assert sum(s.n_tokens for s in chosen) <= budget
        idx = [s.index for s in chosen]
        assert idx == sorted(idx)
        assert len(chosen) <= int(0.8 * len(spans))
    # a huge budget stops at 80% of the sentences (6 of 8), the best-scoring ones
    chosen = scorer.select(CONTEXT, QUERY, token_budget=10_000)
    assert len(chosen) == 6
    best = sorted(spans, key=lambda s: -s.score)[:6]
    assert {s.index for s in chosen} == {s.index for s in best}
    assert len(scorer.select(CONTEXT, QUERY, token_budget=10_000, max_fraction=1.0)) == 8
    top = scorer.select(CONTEXT, QUERY, top_n=3)
    assert [s.index for s in top] == sorted(s.index for s in best[:3])


class _Boom(torch.nn.Module):
    """A stand-in model that fails if it is ever run."""


def test_errors_before_running_the_model(model, tok, monkeypatch):
    # model=None: bad input is refused before longctx.models is even imported
    fake = types.ModuleType("longctx.models")

    def _no_load(*a, **k):
        raise AssertionError("the model must not be loaded")

    fake.load_causal_lm = _no_load
    monkeypatch.setitem(sys.modules, "longctx.models", fake)
    lazy = ReactionScorer()
    with pytest.raises(ValueError, match="query"):
        lazy.score_sentences(CONTEXT, "  ")
    with pytest.raises(TypeError, match="context"):
        lazy.reaction_vector(None, QUERY)
    with pytest.raises(ValueError, match="token_budget"):
        lazy.select(CONTEXT, QUERY, token_budget=0)
    with pytest.raises(ValueError, match="exactly one"):
        lazy.select(CONTEXT, QUERY)
    with pytest.raises(ValueError, match="max_fraction"):
        lazy.select(CONTEXT, QUERY, token_budget=5, max_fraction=0)
    with pytest.raises(ValueError, match="layers"):
        ReactionScorer(layers="middle")
    with pytest.raises(TypeError, match="layers"):
        ReactionScorer(layers=[0.5])
    with pytest.raises(ValueError, match="aggregate"):
        ReactionScorer(aggregate="median")
    with pytest.raises(ValueError, match="baseline"):
        ReactionScorer(baseline="none")
    with pytest.raises(ValueError, match="tokenizer"):
        ReactionScorer(model)
    # with a model: an out-of-range layer is refused at construction, a long query before running
    with pytest.raises(ValueError, match="layers"):
        ReactionScorer(model, tok, layers=[2])
    counter = _Counter(model)
    try:
        scorer = ReactionScorer(model, tok, max_query_tokens=4)
        with pytest.raises(ValueError, match="max_query_tokens"):
            scorer.reaction_vector(CONTEXT, "a much longer question than four tokens?")
        with pytest.raises(ValueError, match="query"):
            scorer.select(CONTEXT, "", token_budget=10)
        assert counter.n == 0
    finally:
        counter.close()


def test_bfloat16_model_runs(tok):
    m = tiny_llama(len(tok)).to(torch.bfloat16)
    vec = ReactionScorer(m, tok).reaction_vector(CONTEXT, QUERY)
    assert vec.dtype == np.float32 and np.all(np.isfinite(vec)) and vec.max() > 0


_HAS_MODELS = importlib.util.find_spec("longctx.models") is not None


@pytest.mark.slow
@pytest.mark.skipif(not _HAS_MODELS, reason="longctx.models (the default loader) is not merged yet")
def test_default_model_finds_the_answer_sentence():
    text = (
        "The weather in the valley was mild that spring. The village held a market every "
        "Tuesday. Marie's bicycle was painted bright green. The baker sold bread and cakes. "
        "Children played near the river in the afternoon."
    )
    q = "What colour was Marie's bicycle?"
    # the default preset ranks the answer sentence first with SmolLM2-135M-Instruct
    scorer = ReactionScorer()
    top = scorer.select(text, q, top_n=1)
    assert len(top) == 1 and "bicycle" in top[0].text(text)
    # the paper's setting runs on the same model (it favours early tokens: longctx.youra docstring)
    paper = ReactionScorer(model=scorer.model, tokenizer=scorer.tokenizer, preset="paper")
    vec = paper.reaction_vector(text, q)
    assert vec.shape == (len(scorer.encode_context(text)[0]),) and np.all(np.isfinite(vec))


def test_cli_module(model, tok, monkeypatch):
    import argparse

    import longctx.cli.youra as cli
    from longctx.types import SearchResult

    scorer = ReactionScorer(model, tok)
    monkeypatch.setattr(cli, "_get_scorer", lambda args: scorer)
    args = argparse.Namespace(model=None, device=None, progress=False, k=3, budget=None)
    spans, scores, counts = cli.score_units(CONTEXT, QUERY, args)
    assert len(spans) == len(scores) == len(counts) == 8
    assert counts.sum() == len(tok(CONTEXT, add_special_tokens=False)["input_ids"])
    assert scores.dtype == np.float64 and counts.dtype == np.int64
    result = cli.run(CONTEXT, QUERY, args)
    assert isinstance(result, SearchResult) and result.method == "youra"
    passages = result.hits
    assert len(passages) == 3 and [p.index for p in passages] == sorted(p.index for p in passages)
    assert all(CONTEXT[p.start : p.end] == p.text for p in passages)
    best = set(np.argsort(-scores, kind="stable")[:3].tolist())
    assert {p.index for p in passages} == best  # the same scores as score_units
    args.k, args.budget = None, 20
    assert sum(counts[p.index] for p in cli.run(CONTEXT, QUERY, args).hits) <= 20
    # the scorer options come from the CLI arguments, instruction by default
    cli._scorer.cache_clear()
    monkeypatch.undo()
    built = cli._get_scorer(argparse.Namespace(model=None, cache_bytes=1234))
    assert built.baseline == "instruction" and built.cache_bytes == 1234
    cli._scorer.cache_clear()


# -- the window cache under a byte budget ------------------------------------------------------

# three copies told apart in every sentence, so that no two windows hold the same tokens
LONG = " ".join(CONTEXT.replace(".", f" in {1860 + c}.") for c in range(3))
QUERIES = [QUERY, "Where did the Rabbit go?"]


def _window_bytes(scorer, text):
    """Bytes one cached window of ``text`` takes (the largest), from an unbounded scorer."""
    scorer.reaction_vector(text, QUERY)
    return max(e.nbytes for e in scorer._windows.values())


def test_eviction_under_tiny_budget_gives_the_unbounded_results(model, tok):
    kw = dict(max_window=96, max_query_tokens=16)
    full = ReactionScorer(model, tok, **kw)
    one = _window_bytes(ReactionScorer(model, tok, **kw), LONG)
    budget = int(2.5 * one)  # two windows of ~10 fit
    small = ReactionScorer(model, tok, cache_bytes=budget, **kw)
    n_windows = len(small._layout(LONG).windows)
    assert n_windows >= 5
    for _ in range(2):
        for q in QUERIES:
            ref = full.reaction_vector(LONG, q)
            got = small.reaction_vector(LONG, q)
            np.testing.assert_allclose(got, ref, atol=1e-7, rtol=1e-5)
            info = small.cache_info()
            assert info["bytes"] <= budget and info["peak_bytes"] <= budget
            assert info["bytes"] == sum(e.nbytes for e in small._windows.values())
    info = small.cache_info()
    assert info["evictions"] > 0 and 2 <= info["windows"] < n_windows
    # cached windows go first, so every query after the first reuses a full budget of windows
    assert info["hits"] >= 2 * (2 * len(QUERIES) - 1)
    assert full.cache_info()["evictions"] == 0
    assert full.cache_info()["windows"] == n_windows


def test_zero_budget_and_window_larger_than_budget(model, tok):
    kw = dict(max_window=96, max_query_tokens=16)
    ref = ReactionScorer(model, tok, **kw).reaction_vector(LONG, QUERY)
    for budget in (0, 100):  # nothing fits
        s = ReactionScorer(model, tok, cache_bytes=budget, **kw)
        np.testing.assert_allclose(s.reaction_vector(LONG, QUERY), ref, atol=1e-7, rtol=1e-5)
        info = s.cache_info()
        assert info["windows"] == info["bytes"] == info["hits"] == 0
        assert s.warm(LONG) == 0 or budget == 100


def test_bfloat16_cache_halves_bytes_and_stays_close(model, tok):
    kw = dict(max_window=96, max_query_tokens=16)
    f32 = ReactionScorer(model, tok, **kw)
    b16 = ReactionScorer(model, tok, cache_dtype="bfloat16", **kw)
    ref = f32.reaction_vector(LONG, QUERY)
    first = b16.reaction_vector(LONG, QUERY)
    again = b16.reaction_vector(LONG, QUERY)  # from the cache: the same as the first query
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, ref, rtol=0.05, atol=5e-3 * ref.max())
    kv32 = f32.cache_info()["bytes"] - sum(e.base_sums.nbytes for e in f32._windows.values())
    kv16 = b16.cache_info()["bytes"] - sum(e.base_sums.nbytes for e in b16._windows.values())
    assert kv16 * 2 == kv32
    s32 = np.array([s.score for s in f32.score_sentences(LONG, QUERY)])
    s16 = np.array([s.score for s in b16.score_sentences(LONG, QUERY)])
    assert np.corrcoef(np.argsort(np.argsort(s32)), np.argsort(np.argsort(s16)))[0, 1] > 0.95


def test_warm_fills_the_cache_up_to_the_budget(model, tok):
    kw = dict(max_window=96, max_query_tokens=16)
    s = ReactionScorer(model, tok, **kw)
    n = len(s._layout(LONG).windows)
    assert s.warm(LONG) == n and s.warm(LONG) == 0
    counter = _Counter(model)
    try:
        s.reaction_vector(LONG, QUERY)
        assert counter.n == n  # only query passes
    finally:
        counter.close()
    one = max(e.nbytes for e in s._windows.values())
    small = ReactionScorer(model, tok, cache_bytes=int(2.5 * one), **kw)
    done = small.warm(LONG)
    info = small.cache_info()
    assert 2 <= info["windows"] < n and done <= info["windows"] + 1
    assert info["bytes"] <= small.cache_bytes


def test_progress_bar_total_is_the_windows(model, tok, capsys):
    s = ReactionScorer(model, tok, max_window=96, max_query_tokens=16, show_progress=True)
    s.reaction_vector(LONG, QUERY)
    err = capsys.readouterr().err
    n = len(s._layout(LONG).windows)
    assert f"{n}/{n}" in err and "window" in err


def test_bad_cache_arguments():
    with pytest.raises(ValueError, match="cache_bytes"):
        ReactionScorer(cache_bytes=-1)
    with pytest.raises(TypeError, match="cache_bytes"):
        ReactionScorer(cache_bytes=1.5)
    with pytest.raises(ValueError, match="cache_dtype"):
        ReactionScorer(cache_dtype="float16")
    assert ReactionScorer().baseline == "instruction"


def test_identical_windows_share_one_cache_entry(model, tok):
    s = ReactionScorer(model, tok, max_window=64, max_query_tokens=16)
    twice = CONTEXT + " " + CONTEXT
    vec = s.reaction_vector(twice, QUERY)
    lay = s._layout(twice)
    assert len(set(lay.wkeys)) < len(lay.wkeys) and s.cache_info()["windows"] == len(set(lay.wkeys))
    assert np.all(np.isfinite(vec))


# -- YouraIndex: build once, query many ---------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_index(model, tok):
    from longctx.youra import YouraIndex
    from tests._youra_helpers import TEXTS

    return YouraIndex.from_texts(TEXTS + [CONTEXT], ReactionScorer(model, tok))


def test_index_search_hits_sources_order_and_sizes(corpus_index):
    from longctx.types import SearchResult

    texts = corpus_index.texts
    res = corpus_index.search(QUERY, k=5)
    assert isinstance(res, SearchResult) and len(res) == 5
    assert res.method == "youra" and res.mode == "instruction" and res.budget == {"k": 5}
    assert {"score", "context", "query", "select"} <= set(res.timings)
    keys = [(h.source, h.start) for h in res.hits]
    assert keys == sorted(keys) and len({h.source for h in res.hits}) > 1
    for h in res.hits:
        assert texts[h.source][h.start : h.end] == h.text
        spans, _ = corpus_index.units(h.source)
        assert spans[h.index] == (h.start, h.end)
    # the k best of one global ranking: every hit outscores every sentence left out
    scores, _ = corpus_index.score_units(QUERY)
    assert min(h.score for h in res.hits) >= np.sort(scores)[-5]
    assert len(corpus_index.search(QUERY)) == 10  # DEFAULT_K
    res = corpus_index.search(QUERY, token_budget=30)
    used = sum(int(corpus_index.units(h.source)[1][h.index]) for h in res.hits)
    assert 0 < used <= 30 and res.budget["token_budget"] == 30
    capped = corpus_index.search(QUERY, token_budget=10_000, max_fraction=0.5)
    assert len(capped) == corpus_index.n_sentences // 2
    # the second query ran only query passes (the windows are cached)
    assert res.info["cache_misses"] == 0 and res.info["cache_hits"] == res.info["windows"]


def test_index_scores_are_the_scorers_times_the_window_length(corpus_index, model, tok):
    from longctx.youra import YouraIndex
    from tests._youra_helpers import TEXTS

    # default preset: ratios are on one scale, ranked as they are
    scorer = corpus_index.scorer
    scores, _ = corpus_index.score_units(QUERY)
    assert corpus_index.score_scale == "none"
    raw = [s.score for s in scorer.score_sentences(CONTEXT, QUERY)]
    np.testing.assert_allclose(scores[-len(raw) :], raw, rtol=1e-12)
    # raw reactions (normalize="none"): times the text's mean window length
    plain = ReactionScorer(model, tok, normalize="none")
    index = YouraIndex.from_texts(TEXTS + [CONTEXT], plain)
    assert index.score_scale == "window"
    scores, _ = index.score_units(QUERY)
    lay = index._layouts[3]
    raw = [s.score for s in plain.score_sentences(CONTEXT, QUERY)]
    np.testing.assert_allclose(scores[-len(raw) :], np.asarray(raw) * len(lay.ids), rtol=1e-12)
    # one text: the same sentences as ReactionScorer.select
    one = YouraIndex.from_texts(CONTEXT, scorer, score_scale="none")
    for kw, sel in (({"k": 3}, {"top_n": 3}), ({"token_budget": 25}, {"token_budget": 25})):
        hits = one.search(QUERY, **kw).hits
        chosen = scorer.select(CONTEXT, QUERY, **sel)
        assert [(h.start, h.end, h.score) for h in hits] == [
            (s.start, s.end, s.score) for s in chosen
        ]


def test_index_concurrent_searches_equal_sequential(corpus_index):
    from concurrent.futures import ThreadPoolExecutor

    queries = [QUERY, "Where did the Rabbit go?", "Who sat on the bank?", "What was hot?"] * 2
    seq = [corpus_index.search(q, k=4).hits for q in queries]
    with ThreadPoolExecutor(8) as pool:
        par = list(pool.map(lambda q: corpus_index.search(q, k=4).hits, queries))
    assert par == seq
    assert not [a for a in vars(corpus_index) if "last" in a or "query" in a]


def test_index_save_load_round_trip_and_errors(corpus_index, tmp_path):
    import json

    from longctx.persist import PersistError
    from longctx.youra import YouraIndex

    d = tmp_path / "idx"
    corpus_index.save(d)
    assert sorted(p.name for p in d.iterdir()) == [
        "config.json",
        "manifest.json",
        "sentences.npz",
        "texts.json",
    ]
    loaded = YouraIndex.load(d, scorer=corpus_index.scorer)
    assert loaded.texts == corpus_index.texts
    for kw in ({"k": 4}, {"token_budget": 20}):
        assert loaded.search(QUERY, **kw).hits == corpus_index.search(QUERY, **kw).hits
    cfg = json.loads((d / "config.json").read_text())
    assert cfg["scorer"]["baseline"] == "instruction" and cfg["max_fraction"] == 0.8
    # without a scorer: the model is given like to from_texts, the saved options are used
    scorer = corpus_index.scorer
    fresh = YouraIndex.load(d, model=scorer.model, tokenizer=scorer.tokenizer)
    assert fresh.scorer is not scorer and fresh.scorer.config() == scorer.config()
    # a fresh cache scores its windows in other padded batches: scores agree to float rounding
    got, want = fresh.search(QUERY, k=4).hits, corpus_index.search(QUERY, k=4).hits
    assert [(h.start, h.end, h.text, h.index, h.source) for h in got] == [
        (h.start, h.end, h.text, h.index, h.source) for h in want
    ]
    np.testing.assert_allclose([h.score for h in got], [h.score for h in want], rtol=1e-6)

    def broken(name, how):
        b = tmp_path / f"broken-{name}-{how}"
        corpus_index.save(b)
        f = b / name
        if how == "missing":
            f.unlink()
        else:
            f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2])
        return b, f

    for name in ("config.json", "texts.json", "sentences.npz", "manifest.json"):
        for how in ("missing", "truncated"):
            b, f = broken(name, how)
            with pytest.raises(PersistError, match=name.replace(".", r"\.")):
                YouraIndex.load(b, scorer=corpus_index.scorer)
    b = tmp_path / "version"
    corpus_index.save(b)
    m = json.loads((b / "manifest.json").read_text())
    m["format_version"] = 99
    (b / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PersistError, match="version"):
        YouraIndex.load(b, scorer=corpus_index.scorer)
    b = tmp_path / "mismatch"
    corpus_index.save(b)
    (b / "texts.json").write_text(json.dumps(["only one text"]))
    with pytest.raises(PersistError, match=r"texts\.json.*SHA-256"):
        YouraIndex.load(b, scorer=corpus_index.scorer)
    from tests._persist_helpers import restamp

    restamp(b)  # the manifest's digests rewritten too: the sentences do not fit the texts
    with pytest.raises(PersistError, match="sentences.npz"):
        YouraIndex.load(b, scorer=corpus_index.scorer)


def test_index_bad_arguments(corpus_index, model, tok):
    from longctx.youra import YouraIndex

    with pytest.raises(ValueError, match="texts"):
        YouraIndex.from_texts([], ReactionScorer(model, tok))
    with pytest.raises(TypeError, match="texts"):
        YouraIndex.from_texts(3, ReactionScorer(model, tok))
    with pytest.raises(ValueError, match="score_scale"):
        YouraIndex.from_texts("Some text.", ReactionScorer(model, tok), score_scale="z")
    with pytest.raises(ValueError, match="either scorer"):
        YouraIndex.from_texts("Some text.", ReactionScorer(model, tok), baseline="paper")
    with pytest.raises(ValueError, match="k"):
        corpus_index.search(QUERY, k=0)
    with pytest.raises(ValueError, match="at most one"):
        corpus_index.search(QUERY, k=2, token_budget=5)
    with pytest.raises(ValueError, match="query"):
        corpus_index.search("  ")
    with pytest.raises(ValueError, match="max_fraction"):
        corpus_index.search(QUERY, token_budget=5, max_fraction=0)


def test_budget_below_every_sentence_fails_before_any_model_pass(monkeypatch):
    from longctx.youra import YouraIndex
    from tests._youra_helpers import tiny_scorer

    index = YouraIndex.from_texts(CONTEXT, tiny_scorer())

    def no_pass(*args, **kwargs):  # the check must come first
        raise AssertionError("a model pass ran")

    monkeypatch.setattr(index, "score_units", no_pass)
    with pytest.raises(ValueError, match=r"budget 1 is smaller than the shortest unit"):
        index.search("Where is the milk?", token_budget=1)


def test_sentences_longer_than_max_unit_tokens_are_cut(tiny_model, smollm2_tokenizer):
    """A text without punctuation is one "sentence": it is cut on word boundaries into pieces of
    at most ``max_unit_tokens`` model tokens, so no hit is the whole text (issue: no passage is
    a whole file); given sentences are never cut."""
    from longctx import YouraIndex

    model, tok = tiny_model, smollm2_tokenizer
    words = "the cat sat on a mat while dogs ran in the park and birds sang".split()
    rng = np.random.default_rng(0)
    text = " ".join(rng.choice(words, size=400))
    index = YouraIndex.from_texts(text, model=model, tokenizer=tok, max_unit_tokens=40)
    spans, counts = index.units(0)
    assert len(spans) > 1 and int(np.max(counts)) <= 40
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    r = index.search("where did the birds sing", token_budget=40)
    size = {tuple(sp): int(c) for sp, c in zip(spans, counts)}
    assert r.hits and sum(size[(h.start, h.end)] for h in r.hits) <= 40
    whole = YouraIndex.from_texts(
        text, model=model, tokenizer=tok, sentences=[[(0, len(text))]], max_unit_tokens=40
    )
    assert len(whole.units(0)[0]) == 1
    with pytest.raises(ValueError, match="max_unit_tokens"):
        YouraIndex.from_texts(text, model=model, tokenizer=tok, max_unit_tokens=0)


def test_overlong_query_is_refused_before_any_model_pass():
    from longctx.checks import MAX_QUERY_CHARS
    from longctx.youra import YouraIndex
    from tests._youra_helpers import tiny_scorer

    index = YouraIndex.from_texts("The cat sat on the mat. The dog ran.", tiny_scorer())
    with pytest.raises(ValueError, match="query is .* over the limit"):
        index.search("why " * (MAX_QUERY_CHARS // 4 + 1), k=1)


@pytest.mark.parametrize(
    "option, value",
    [
        ("max_window", 10**12),
        ("cache_bytes", 10**15),
        ("batch_size", 10**9),
        ("max_query_tokens", 10**9),
        ("row_block", 10**9),
        ("cache_size", 10**9),
        ("prior_tokens", 10**9),
    ],
)
def test_size_options_are_bounded_in_the_constructor_and_on_load(tmp_path, option, value):
    """#28: huge sizes are a ValueError naming the argument, and a saved YOURA index holding
    them is a PersistError naming config.json (they used to load without error)."""
    from longctx.persist import PersistError, write_dir
    from longctx.youra import YouraIndex
    from longctx.youra.config import MAX_BATCH_SIZE, MAX_CACHE_BYTES, MAX_WINDOW

    with pytest.raises(ValueError, match=rf"{option} must be <="):
        ReactionScorer(**{option: value})
    ok = {"max_window": MAX_WINDOW, "cache_bytes": MAX_CACHE_BYTES, "batch_size": MAX_BATCH_SIZE}
    if option in ok:
        assert getattr(ReactionScorer(**{option: ok[option]}), option) == ok[option]
    d = tmp_path / "y"
    write_dir(
        d,
        kind="youra",
        version=YouraIndex.FORMAT_VERSION,
        json_files={
            "config": {
                "max_fraction": 0.8,
                "score_scale": None,
                "scorer": {"model": None, "preset": "default", option: value},
            },
            "texts": ["The cat sat. The dog ran."],
        },
        arrays={
            "sentences": {
                "spans": np.array([[0, 12], [13, 25]]),
                "offsets": np.array([0, 2]),
                "token_counts": np.array([4, 4]),
            }
        },
    )
    with pytest.raises(PersistError, match=rf"config\.json.*'scorer'.*{option} must be <="):
        YouraIndex.load(d)
