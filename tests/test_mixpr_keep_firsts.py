"""``MixPRIndex.search(seeds=..., keep_firsts=True)``: the fusion that keeps each retriever's
first hit (MixPR's own best unit and the app's first), then the seeded order (issue 45)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRIndex
from longctx.mixpr.seeds import Seed, first_units, keep_first_units, rank_weight
from longctx.selection import SparseScores
from longctx.text import split_sentences
from tests._fixtures import SEED_BOOK, SEED_OTHER

PASSAGES = [SEED_BOOK[a:b] for a, b in split_sentences(SEED_BOOK)] + [
    SEED_OTHER[a:b] for a, b in split_sentences(SEED_OTHER)
]
QUERIES = [
    "Where did the fox cross the frozen stream?",
    "Who counted the ships at dawn?",
    "What did the students copy from the blackboard?",
]


@pytest.fixture(scope="module")
def index():
    return MixPRIndex.from_texts(PASSAGES, token_counter=lambda s: len(s.split()), chunk=False)


def seeds_of(ranked):
    return [Seed(str(i), score=rank_weight(r)) for r, i in enumerate(ranked)]


def test_the_kept_units_come_first_in_the_order_given():
    scores = np.array([0.2, 0.9, 0.0, 0.5, 0.1])
    out = keep_first_units(scores, [4, 0])
    assert np.argsort(-out).tolist()[:3] == [4, 0, 1]
    assert out[[1, 2, 3]].tolist() == [0.9, 0.0, 0.5]  # the others unchanged
    assert scores.tolist() == [0.2, 0.9, 0.0, 0.5, 0.1]  # a new array
    # a unit scoring 0 (a filter left it out) is not raised
    assert keep_first_units(scores, [2]).tolist() == scores.tolist()


def test_sparse_scores_keep_the_same_units_as_dense_ones():
    sparse = SparseScores(6, [1, 3, 4], [0.5, 0.9, 0.2])
    out = keep_first_units(sparse, [4, 5, 1])
    assert isinstance(out, SparseScores)
    assert out.dense().tolist() == keep_first_units(sparse.dense(), [4, 5, 1]).tolist()
    assert np.argsort(-out.dense()).tolist()[:3] == [4, 1, 3]


def test_first_units_are_mixprs_best_then_the_heaviest_seed():
    own = np.array([0.1, 0.7, 0.7, 0.0])
    seed = (np.array([0, 3]), np.array([0.5, 1.0]))
    assert first_units(own, seed) == [1, 3]  # ties to the earlier unit
    assert first_units(own, (np.array([1]), np.array([1.0]))) == [1]  # the same unit once
    assert first_units(None, seed) == [3]  # the question reached no unit
    assert first_units(np.zeros(4), None) == []
    assert first_units(SparseScores(4, [2], [0.3]), seed) == [2, 3]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    q=st.sampled_from(QUERIES),
    app=st.permutations(range(len(PASSAGES))).map(lambda p: p[:5]),
    k=st.integers(1, len(PASSAGES)),
)
def test_each_retrievers_first_hit_is_in_the_fused_top_k(index, q, app, k):
    own = index.score(q, "local")[0]
    mixpr_first = int(np.argmax(own))
    r = index.search(q, k=k, mode="local", seeds=seeds_of(app), keep_firsts=True)
    got = [h.source for h in sorted(r.hits, key=lambda h: -h.score)]
    assert len(got) == len(set(got)) == k
    assert got[0] == mixpr_first
    if k >= 2:
        assert app[0] in got[:2]
    # the rest is the seeded order
    seeded = index.score(q, "local", seeds=seeds_of(app))[0]
    rest = [i for i in np.argsort(-seeded, kind="stable").tolist() if i not in got[:2]]
    assert got[2:] == rest[: max(k - 2, 0)]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(q=st.sampled_from(QUERIES), app=st.permutations(range(len(PASSAGES))).map(lambda p: p[:3]))
def test_a_budget_that_holds_both_firsts_returns_both(index, q, app):
    counts = np.array([len(p.split()) for p in PASSAGES])
    firsts = {int(np.argmax(index.score(q, "local")[0])), app[0]}
    budget = int(counts[list(firsts)].sum())
    r = index.search(q, token_budget=budget, mode="local", seeds=seeds_of(app), keep_firsts=True)
    assert {h.source for h in r.hits} == firsts


def test_without_seeds_or_the_flag_the_search_is_unchanged(index):
    q = QUERIES[0]
    plain = index.search(q, k=4, mode="local")
    assert index.search(q, k=4, mode="local", keep_firsts=True).hits == plain.hits
    seeded = index.search(q, k=4, mode="local", seeds=seeds_of([9, 2]))
    assert index.search(q, k=4, mode="local", seeds=seeds_of([9, 2])).hits == seeded.hits
    kept = index.search(q, k=4, mode="local", seeds=seeds_of([9, 2]), keep_firsts=True)
    assert 9 in {h.source for h in kept.hits}


def test_a_global_query_asks_the_app_too_and_keeps_its_first(index):
    asked = []

    def seeds():
        asked.append(1)
        return seeds_of([7, 1])

    q = QUERIES[1]
    plain = index.search(q, k=3, mode="global")
    r = index.search(q, k=3, mode="global", seeds=seeds, keep_firsts=True)
    assert asked == [1] and r.mode == "global"
    got = [h.source for h in sorted(r.hits, key=lambda h: -h.score)]
    best = max(plain.hits, key=lambda h: h.score).source
    assert got[:2] == [best, 7] if best != 7 else got[0] == 7
    # without keep_firsts a global query does not ask for seeds
    index.search(q, k=3, mode="global", seeds=seeds)
    assert asked == [1]
