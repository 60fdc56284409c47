"""Fusion of MixPR with the app's retriever (issue 45: fusion that keeps MixPR's hits): the
recipe's rule (MixPR over the app's chunks, seeded by the app's top k: CombSUM of the two walks,
each divided by its maximum) and ``longctx.fusion.reciprocal_rank_fusion``, the rank-fusion
alternative."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longctx.fusion import MAX_RANKINGS, reciprocal_rank_fusion
from longctx.mixpr import MixPRIndex
from longctx.mixpr.seeds import Seed, rank_weight
from tests._fixtures import SEED_BOOK, SEED_OTHER


def keys(fused):
    return [k for k, _ in fused]


def test_the_recipe_adds_the_seeds_walk_to_mixprs_score_each_over_its_maximum():
    """MixPR over the app's chunks (one unit each), the app's top 3 as seeds by rank: a chunk's
    fused score is MixPR's own divided by its maximum plus the seeds' walk divided by its
    maximum, so the fused maximum is in [1, 2], MixPR's best keeps at least 1 and every seeded
    chunk gains."""
    import numpy as np

    chunks = [s.strip() + "." for s in (SEED_BOOK + SEED_OTHER).split(".") if s.strip()]
    index = MixPRIndex.from_texts(chunks, chunk=False)
    query = "Where did the fox cross the frozen stream?"
    plain = np.asarray(index.score(query)[0])
    app = [5, 0, 9]  # the app's top 3, best first (positions: document ids "5", "0", "9")
    seeds = [Seed(str(i), score=rank_weight(r)) for r, i in enumerate(app)]
    fused = np.asarray(index.score(query, seeds=seeds)[0])
    walk = fused - plain / plain.max()  # the seeds' walk over its maximum
    assert walk.min() >= -1e-9 and walk.max() == pytest.approx(1.0)
    assert all(walk[i] > 0 for i in app)
    assert 1.0 <= fused.max() <= 2.0 + 1e-9
    assert fused[int(np.argmax(plain))] >= 1.0 - 1e-9


def test_scores_are_weight_over_c_plus_rank_summed_over_lists():
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], weights=[2.0, 1.0], c=10))
    assert fused == pytest.approx({"a": 2 / 11, "b": 2 / 12 + 1 / 11, "c": 1 / 12})


def test_an_item_both_lists_hold_rises_above_every_item_one_holds():
    mixpr = ["m1", "m2", "m3", "m4", "shared"]
    app = ["a1", "a2", "a3", "a4", "shared"]
    assert keys(reciprocal_rank_fusion([mixpr, app], k=5)) == ["shared", "m1", "a1", "m2", "a2"]


def test_ties_go_to_the_first_list_and_k_cuts():
    assert keys(reciprocal_rank_fusion([["x", "y"], ["p", "q"]])) == ["x", "p", "y", "q"]
    assert keys(reciprocal_rank_fusion([["p", "q"], ["x", "y"]], k=1)) == ["p"]


def test_a_key_repeated_in_one_list_counts_at_its_best_rank_only():
    fused = dict(reciprocal_rank_fusion([["a", "b", "a"]], c=0))
    assert fused == {"a": 1.0, "b": 0.5}


def test_a_zero_weight_list_adds_its_items_at_score_zero_after_the_others():
    fused = reciprocal_rank_fusion([["a"], ["b"]], weights=[1.0, 0.0])
    assert fused == [("a", pytest.approx(1 / 61)), ("b", 0.0)]


def test_empty_rankings_fuse_to_nothing():
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []], k=3) == []


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"rankings": "abc"}, TypeError, "rankings must be a sequence"),
        ({"rankings": [["a"], "bc"]}, TypeError, "rankings[1]"),
        ({"rankings": [[["unhashable"]]]}, TypeError, "rankings[0][0] must be hashable"),
        ({"rankings": [["a"]], "weights": [1.0, 2.0]}, ValueError, "weights has 2 values"),
        ({"rankings": [["a"]], "weights": [-1.0]}, ValueError, "weights[0]"),
        ({"rankings": [["a"]], "weights": [float("nan")]}, ValueError, "weights[0]"),
        ({"rankings": [["a"]], "weights": ["1"]}, TypeError, "weights[0]"),
        ({"rankings": [["a"], ["b"]], "weights": [0, 0]}, ValueError, "weights must not all"),
        ({"rankings": [["a"]], "c": -1}, ValueError, "c must be in"),
        ({"rankings": [["a"]], "k": 0}, ValueError, "k must be >= 1"),
        ({"rankings": [["a"]] * (MAX_RANKINGS + 1)}, ValueError, "more than"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, words):
    with pytest.raises(error) as exc:
        reciprocal_rank_fusion(**kwargs)
    assert words in str(exc.value)


ranked = st.lists(st.integers(0, 30), min_size=1, max_size=8, unique=True)


@settings(max_examples=200, deadline=None)
@given(mixpr=ranked, app=ranked, k=st.integers(2, 8))
def test_the_fused_top_k_keeps_both_top_hits_unless_k_minus_1_items_are_shared(mixpr, app, k):
    """At equal weights and ``c=60``, only items both lists hold outrank a list's first item
    (the first list's wins a tie), so each top hit is in the fused top ``k`` while at most
    ``k - 2`` other items are shared; every shared item is above every unshared one."""
    mixpr, app = mixpr[:k], app[:k]
    fused = keys(reciprocal_rank_fusion([mixpr, app], k=k))
    shared = set(mixpr) & set(app)
    if len(shared - {mixpr[0], app[0]}) <= k - 2:
        assert mixpr[0] in fused and app[0] in fused
    full = keys(reciprocal_rank_fusion([mixpr, app]))
    n = len(shared)
    assert set(full[:n]) == shared
    assert sorted(full) == sorted(set(mixpr) | set(app))
