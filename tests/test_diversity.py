"""MMR / FPS selection and ordering (longctx.diversity)."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import numpy as np
import pytest

from longctx.diversity import (
    compute_rewards,
    diversify,
    fps_select,
    mmr_select,
    order_selection,
    reference_select,
)
from longctx.selection import select_top


class HashEncoder:
    """Deterministic bag-of-words hashing vectors: texts sharing words are similar."""

    dim = 64

    def __call__(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for r, t in enumerate(texts):
            for w in t.lower().replace(".", " ").replace("?", " ").split():
                h = int(hashlib.md5(w.encode()).hexdigest(), 16)
                out[r, h % self.dim] += 1.0 if (h >> 8) & 1 else -1.0
        return out


def _rand(n, d=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)), rng.integers(1, 10, n), rng.normal(size=d)


# --- eq. 1 / eq. 2 semantics -------------------------------------------------------------------


def test_lambda_one_equals_top_by_reward():
    e, c, _ = _rand(50)
    r = np.random.default_rng(1).normal(size=50)
    for budget in (1, 17, 60, 10_000):
        got = mmr_select(e, r, c, budget, lambda_=1.0, window=3)
        assert sorted(got) == select_top(r, token_budget=budget, token_counts=c).tolist()
        assert got == sorted(got, key=lambda i: -r[i])  # selection order = reward order
        assert fps_select(e, r, c, budget, lambda_=1.0) == got
    assert sorted(mmr_select(e, r, k=7, lambda_=1.0)) == select_top(r, k=7).tolist()


def test_window_one_and_all_pick_differently():
    # 0 best; 1 near-duplicate of 0; 2 orthogonal to 0 but like 1... see picks below.
    e = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.99, 0.0, 0.14], [0.0, 0.0, 1.0]])
    r = np.array([1.0, 0.9, 0.85, 0.5])
    common = dict(k=3, lambda_=0.5, rescale_rewards=False)
    # picks: 0 first, then 1 (orthogonal to 0). With window=1 only 1 counts, so 2 (a near copy of
    # 0, orthogonal to 1) wins; with window=None, 0 still counts and 3 wins instead.
    assert mmr_select(e, r, **common, window=1) == [0, 1, 2]
    assert mmr_select(e, r, **common, window=None) == [0, 1, 3]
    assert mmr_select(e, r, **common, window=2) == [0, 1, 3]


def test_first_pick_is_best_reward_and_diversity_changes_second():
    e = np.array([[1.0, 0.0], [1.0, 0.01], [0.0, 1.0]])
    r = np.array([0.9, 0.89, 0.5])
    assert mmr_select(e, r, k=2, lambda_=0.5, rescale_rewards=False) == [0, 2]
    assert mmr_select(e, r, k=2, lambda_=1.0) == [0, 1]
    assert fps_select(e, r, k=2, lambda_=0.5, rescale_rewards=False) == [0, 2]


@pytest.mark.parametrize("method", ["mmr", "fps"])
@pytest.mark.parametrize("window", [None, 1, 2, 4])
def test_vectorized_equals_naive_reference(method, window):
    select = mmr_select if method == "mmr" else fps_select
    rng = np.random.default_rng([len(method), 0 if window is None else window, 11])
    for _ in range(12):
        n = int(rng.integers(1, 30))
        e, c, q = _rand(n, seed=int(rng.integers(1 << 30)))
        lam = float(rng.uniform())
        budget = int(c.sum() * rng.uniform(0.1, 0.9))
        kw = dict(query_embedding=q, lambda_=lam, window=window)
        got = select(e, None, c, budget, **kw)
        assert got == reference_select(e, None, c, budget, method=method, **kw)
        r = rng.normal(size=n)
        got = select(e, r, c, budget, lambda_=lam, window=window)
        assert got == reference_select(e, r, c, budget, method=method, lambda_=lam, window=window)


def test_budget_never_exceeded_and_skips_items_that_do_not_fit():
    e, _, q = _rand(40, seed=3)
    c = np.array([50] + [3] * 39)
    r = np.zeros(40)
    r[0] = 1.0  # the best item does not fit: it is skipped, smaller ones still come in
    for budget in (0, 1, 2, 3, 10, 49, 50, 80):
        got = mmr_select(e, r, c, budget, lambda_=0.7, window=2)
        assert c[got].sum() <= budget
        assert (0 in got) == (budget >= 50)
        # nothing left out that would still have fitted
        left = budget - c[got].sum()
        assert all(c[i] > left for i in range(40) if i not in got)
    got = mmr_select(e, None, c, ratio=0.1, query_embedding=q)
    assert c[got].sum() <= int(0.1 * c.sum())


def test_zero_token_items_and_k_limit():
    e, _, q = _rand(5, seed=4)
    c = np.array([0, 0, 5, 5, 5])
    got = mmr_select(e, None, c, 5, query_embedding=q)
    assert {0, 1} <= set(got) and c[got].sum() <= 5
    assert len(mmr_select(e, None, c, 100, query_embedding=q, k=2)) == 2


def test_ties_lowest_index_wins():
    e = np.ones((6, 3))
    assert mmr_select(e, np.ones(6), k=6) == [0, 1, 2, 3, 4, 5]
    e = np.eye(4)
    assert mmr_select(e, np.array([0.5, 1.0, 1.0, 0.5]), k=4) == [1, 2, 0, 3]
    assert fps_select(e, np.zeros(4), k=3, lambda_=0.0) == [0, 1, 2]


def test_empty_and_one_item():
    assert mmr_select(np.zeros((0, 4)), np.zeros(0), np.zeros(0), 10) == []
    assert fps_select(np.zeros((0, 4)), k=3) == []
    assert mmr_select(np.ones((1, 4)), None, [3], 3) == [0]
    assert mmr_select(np.ones((1, 4)), None, [3], 2) == []
    assert fps_select(np.ones((1, 4)), [7.0], k=5) == [0]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(embeddings=np.ones(4), k=1), "embeddings"),
        (dict(embeddings=np.ones((3, 2)), rewards=np.ones(2), k=1), "rewards"),
        (dict(embeddings=np.ones((3, 2)), token_counts=[1, 2], token_budget=3), "token_counts"),
        (dict(embeddings=np.ones((3, 2)), token_counts=[1, -2, 1], token_budget=3), "token_counts"),
        (dict(embeddings=np.ones((3, 2)), query_embedding=np.ones(3), k=1), "query_embedding"),
        (dict(embeddings=np.ones((3, 2)), k=1, lambda_=1.5), "lambda_"),
        (dict(embeddings=np.ones((3, 2)), k=1, window=0), "window"),
        (dict(embeddings=np.ones((3, 2)), token_budget=3), "token_counts"),
        (dict(embeddings=np.ones((3, 2))), "token_budget"),
        (dict(embeddings=np.full((3, 2), np.nan), k=1), "embeddings"),
    ],
)
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        mmr_select(**kwargs)


def test_rewards_rescaled_and_summarization_mode():
    e, _, _ = _rand(20, seed=5)
    r = np.random.default_rng(2).normal(size=20)
    # min-max rescaling is an affine map: same picks as rescaled-by-hand rewards
    scaled = (r - r.min()) / (r.max() - r.min())
    assert mmr_select(e, r * 100 + 7, k=6) == mmr_select(e, scaled, k=6, rescale_rewards=False)
    # no query, no rewards: similarity to the mean embedding
    mean_rewards = compute_rewards(e)
    assert mmr_select(e, k=5, lambda_=0.7) == mmr_select(
        e, mean_rewards, k=5, lambda_=0.7, rescale_rewards=False
    )
    assert np.all(np.abs(mean_rewards) <= 1.0 + 1e-6)


# --- ordering ----------------------------------------------------------------------------------


def test_order_selection_strategies():
    ranked = [7, 2, 9, 4, 0, 5]  # best first
    assert order_selection(ranked, None, "document") == [0, 2, 4, 5, 7, 9]
    assert order_selection(ranked, None, "score") == ranked
    assert order_selection(ranked, None, "1:0") == ranked
    # 1:1 -> front 7, back 2, front 9, back 4, ...: best at both ends, weakest in the middle
    assert order_selection(ranked, None, "1:1") == [7, 9, 0, 5, 4, 2]
    assert order_selection(ranked, None, "2:1") == [7, 2, 4, 0, 5, 9]
    assert order_selection(ranked, None, "3:1") == [7, 2, 9, 0, 5, 4]
    scores = np.array([0.1, 0, 0.9, 0, 0.5, 0.3, 0, 0.95, 0, 0.2])
    assert order_selection([0, 2, 4, 5, 7, 9], scores, "score") == [7, 2, 4, 5, 9, 0]
    assert order_selection([], None, "2:1") == []
    with pytest.raises(ValueError, match="strategy"):
        order_selection(ranked, None, "0:1")
    with pytest.raises(ValueError, match="scores"):
        order_selection(ranked, np.ones(3), "score")


# --- high level --------------------------------------------------------------------------------


def test_diversify_text_passages_are_exact_slices():
    text = (
        "The cat sat on the mat. The cat sat on the mat again. The cat sat on a mat. "
        "Paris is the capital of France. Dogs bark at night."
    )
    ps = diversify(text, "Where did the cat sit?", k=2, encoder=HashEncoder(), lambda_=0.5)
    assert len(ps) == 2 and [p.index for p in ps] == sorted(p.index for p in ps)
    for p in ps:
        assert text[p.start : p.end] == p.text
    top = diversify(text, "Where did the cat sit?", k=2, encoder=HashEncoder(), lambda_=1.0)
    assert sum("cat" in p.text for p in top) == 2  # relevance only: two cat repeats
    assert sum("cat" in p.text for p in ps) == 1  # MMR drops the near-duplicate
    units = ["a b c.", "d e f.", "a b c d."]
    ps = diversify(units, None, token_budget=5, encoder=HashEncoder(), method="fps")
    joined = " ".join(units)
    assert all(joined[p.start : p.end] == p.text for p in ps)
    assert sum(len(p.text.split()) for p in ps) <= 5
    with pytest.raises(ValueError, match="method"):
        diversify(text, "q", k=1, method="bogus", encoder=HashEncoder())
    with pytest.raises(ValueError, match="rewards"):
        diversify(units, "q", k=1, rewards=[1.0], encoder=HashEncoder())


def test_cli_diversify_units_uses_scores_as_rewards(monkeypatch):
    import longctx.cli.diversity as cli
    from longctx.embeddings import get_encoder

    monkeypatch.setattr(cli, "_encoder", lambda args: get_encoder(HashEncoder()))
    text = "Alpha beta. Alpha beta. Gamma delta. Epsilon."
    spans = [(0, 11), (12, 23), (24, 36), (37, 45)]
    args = SimpleNamespace(lambda_=1.0, window=None, k=2, budget=None, progress=False)
    ps = cli.diversify_units(text, spans, np.array([0.9, 0.8, 0.1, 0.0]), [2, 2, 2, 1], "q", args)
    assert [p.index for p in ps] == [0, 1] and ps[0].score == 0.9
    args.lambda_ = 0.5
    ps = cli.diversify_units(text, spans, np.array([0.9, 0.8, 0.1, 0.0]), [2, 2, 2, 1], "q", args)
    assert [p.index for p in ps] == [0, 2] and ps[1].text == "Gamma delta."
    args.k, args.budget = None, 3
    ps = cli.diversify_units(text, spans, np.array([0.9, 0.8, 0.1, 0.0]), [2, 2, 2, 1], "q", args)
    assert sum([2, 2, 2, 1][p.index] for p in ps) <= 3
    with pytest.raises(ValueError, match="scores"):
        cli.diversify_units(text, spans, np.ones(3), [2, 2, 2, 1], "q", args)


@pytest.mark.parametrize("method", ["mmr", "fps"])
@pytest.mark.parametrize("pool_size", [64, 2048])
def test_lazy_pool_path_equals_dense_loop(method, pool_size, monkeypatch):
    """window=None runs the lazy candidate-pool greedy; it must pick what the dense loop picks."""
    from longctx.diversity import lazy
    from longctx.diversity.dense import dense_greedy as _dense_greedy
    from longctx.diversity.inputs import max_picks as _max_picks
    from longctx.diversity.lazy import lazy_greedy as _lazy_greedy
    from longctx.diversity.prepare import prepare as _prepare

    # a small pool and small catch-up chunks: many rebuilds, chunks of rows with mixed staleness
    monkeypatch.setattr(lazy, "_POOL_SIZE", pool_size)
    monkeypatch.setattr(lazy, "_CATCH_UP_ROWS", 16)
    monkeypatch.setattr(lazy, "_PROBE_DIM", 8)  # probes on (24 > 2 * 8 dimensions)
    rng = np.random.default_rng(7)
    for lam, noise in [(0.0, 0.7), (0.3, 0.7), (0.5, 0.7), (0.6, 0.7), (0.9, 0.7), (1.0, 0.7)] + [
        # near-duplicates: 40 tight groups (not tighter: FPS's sqrt(2 - 2 cos) magnifies float32
        # rounding of cosines near 1, and the two paths round differently)
        (0.5, 0.02),
        (0.3, 0.02),
    ]:
        n = 1500
        centers = rng.normal(size=(40, 24))
        e = centers[rng.integers(0, 40, n)] + noise * rng.normal(size=(n, 24))
        c = rng.integers(0, 20, n)
        e, r, c, budget, k, lam, _ = _prepare(
            e,
            None,
            c,
            int(0.1 * c.sum()),
            query_embedding=rng.normal(size=24),
            ratio=None,
            k=None,
            lambda_=lam,
            window=None,
            rescale_rewards=True,
        )
        lazy = _lazy_greedy(e, r, c, budget, k, lam, method, _max_picks(c, budget, k, n), 2)
        assert lazy == _dense_greedy(e, r, c, budget, k, lam, None, method)
        assert c[lazy].sum() <= budget


def test_user_embeddings_are_never_modified():
    """Unit rows are used without a copy (fast path); neither kind of input may be written to."""
    rng = np.random.default_rng(3)
    raw = rng.normal(size=(3000, 80)).astype(np.float32)
    unit = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    for e in (raw, unit):
        before = e.copy()
        picks = mmr_select(e, token_counts=np.ones(3000, int), token_budget=300, lambda_=0.4)
        assert len(picks) == 300 and np.array_equal(e, before)
    # the no-copy path and the normalizing path pick the same items
    assert mmr_select(raw, k=50, lambda_=0.4) == mmr_select(unit, k=50, lambda_=0.4)
