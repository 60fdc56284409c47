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
    # a unit the filter leaves out is not raised; one the filter keeps is, even at score 0
    assert keep_first_units(scores, [2], allowed=np.array([0, 1, 3])) is scores
    assert np.argmax(keep_first_units(scores, [2], allowed=np.array([1, 2]))) == 2
    assert np.argmax(keep_first_units(scores, [2])) == 2


def test_sparse_scores_keep_the_same_units_as_dense_ones():
    sparse = SparseScores(6, [1, 3, 4], [0.5, 0.9, 0.2])
    out = keep_first_units(sparse, [4, 5, 1])
    assert isinstance(out, SparseScores)
    assert out.dense().tolist() == keep_first_units(sparse.dense(), [4, 5, 1]).tolist()
    assert np.argsort(-out.dense()).tolist()[:3] == [4, 5, 1]  # 5 (absent, score 0) inserted
    assert keep_first_units(sparse, [5], allowed=np.array([1, 3, 4])) is sparse


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
    got = [h.source for h in r.by_score()]  # info["ranking"]: the kept units first
    assert len(got) == len(set(got)) == k
    assert got[0] == mixpr_first
    if k >= 2:
        assert app[0] in got[:2]
    # the hits keep their own fused scores (before: the kept ones scored top + 1 + ...)
    seeded = index.score(q, "local", seeds=seeds_of(app))[0]
    assert [h.score for h in r.hits] == [float(seeded[h.source]) for h in r.hits]
    # the rest is the seeded order
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
    got = [h.source for h in r.by_score()]
    assert max(h.score for h in r.hits) <= max(h.score for h in plain.hits)  # not raised
    best = max(plain.hits, key=lambda h: h.score).source
    assert got[:2] == [best, 7] if best != 7 else got[0] == 7
    # without keep_firsts a global query does not ask for seeds
    index.search(q, k=3, mode="global", seeds=seeds)
    assert asked == [1]


def _fused(index, q, app):
    return index.score(q, "local", seeds=seeds_of(app))[0]


@pytest.mark.parametrize(
    "size",
    [{"k": 4}, {"token_budget": 30}, {"k": 4, "unique_texts": True}],
    ids=["k", "budget", "unique"],
)
def test_explain_with_keep_firsts_explains_the_real_scores(index, size):
    """Before: ``ValueError: explanation parts sum to 1.5, the score is 4.5`` for every
    ``keep_firsts=True, explain=True`` search (the kept units carried their raised scores)."""
    q, app = QUERIES[0], [9, 2, 5]
    kw = dict(mode="local", seeds=seeds_of(app), keep_firsts=True, **size)
    r = index.search(q, explain=True, **kw)
    plain = index.search(q, **kw)
    assert [h.source for h in r.hits] == [h.source for h in plain.hits]
    assert r.positions() == plain.positions()
    fused = _fused(index, q, app)
    for h in r.hits:
        assert h.score == float(fused[h.source]) == h.explanation["score"]
        assert abs(sum(h.explanation["parts"].values()) - h.score) < 1e-9
    got = [h.source for h in r.by_score()]
    assert got[0] == int(np.argmax(index.score(q, "local")[0])) and app[0] in got[:2]
    assert [h.source for h in r.hits] == sorted(h.source for h in r.hits)  # document order


def test_whole_documents_with_keep_firsts_report_each_documents_real_best(index):
    q, app = QUERIES[1], [11, 3]
    r = index.search(
        q, k=3, mode="local", seeds=seeds_of(app), keep_firsts=True, whole_documents=True
    )
    fused = _fused(index, q, app)
    assert [h.score for h in r.hits] == [float(fused[h.source]) for h in r.hits]
    assert app[0] in [h.source for h in r.by_score()][:2]


# the reviewer's setup (kf3.py): with every default, a query naming a passage's head takes the
# multi-hop walk, where the app's first hit can score 0 in the fused scores
KF3 = [
    "The cat sat on the mat in Paris.",
    "Dogs bark at night in London.",
    "Paris is the capital of France.",
    "The river Seine flows through Paris.",
    "London has the Thames.",
    "Bananas are yellow fruit.",
    "Quantum physics studies small particles.",
    "The Eiffel tower stands in Paris.",
    "Tea is popular in London.",
    "Volcanoes erupt lava.",
] * 2


def test_the_apps_first_hit_is_kept_on_the_multihop_walk_too():
    """Before: ``['d2', 'd3', 'd13']``, the app's first hit d5 lost (it scored 0 in the fused
    scores, and only units scoring above 0 were raised)."""
    ids = [f"d{i}" for i in range(len(KF3))]
    meta = [{"g": i % 2} for i in range(len(KF3))]
    ix = MixPRIndex.from_texts(KF3, ids=ids, metadatas=meta)
    seeds = [Seed("d5", 0, len(KF3[5]), 1.0)]
    q = "Where does the Seine flow?"
    r = ix.search(q, k=3, seeds=seeds, keep_firsts=True, explain=True)
    assert r.trace[0]["walk"] == "multihop"
    got = [ids[h.source] for h in r.by_score()]
    assert got[1] == "d5" and len(got) == 3
    assert all(abs(sum(h.explanation["parts"].values()) - h.score) < 1e-9 for h in r.hits)
    # a filter that leaves d5 out: not kept, nothing outside the filter returned
    r = ix.search(q, k=3, seeds=seeds, keep_firsts=True, filters={"g": 0})
    assert len(r.hits) == 3 and all(meta[h.source]["g"] == 0 for h in r.hits)


@pytest.mark.parametrize("bad", [1, "yes", None, np.bool_(True)])
def test_keep_firsts_of_another_type_is_named_before_an_early_return(bad):
    """Checked at the top of the search, as the sharded index does: an empty index and a filter
    that keeps no document return early, and still name ``keep_firsts`` (review 18)."""
    ix = MixPRIndex.from_texts(PASSAGES[:4], metadatas=[{"p": 0}] * 4, chunk=False)
    empty = MixPRIndex.from_texts(["the white rabbit"], ids=["a"])
    empty.delete(["a"])
    for index, kw in ((ix, {"filters": {"p": 1}}), (empty, {}), (ix, {})):
        with pytest.raises(TypeError, match="keep_firsts"):
            index.search(QUERIES[0], k=3, seeds=seeds_of([0]), keep_firsts=bad, **kw)
    assert ix.search(QUERIES[0], k=3, filters={"p": 1}, keep_firsts=True).hits == ()
