"""``keep_firsts=True`` walks once where it can (issue 45, session 18): MixPR's own scores come
from the seeded walk (:func:`longctx.mixpr.seeds.own_scores`) instead of a second, plain walk,
and the seeds are mapped to units once. Every search here is compared with the two-walk search
of before (``own_scores`` patched to always ask for the plain walk, as the code did): the same
hits, scores (bit for bit), mode and ``info`` (``info["ranking"]`` included)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import longctx.mixpr.index as index_module
from longctx.mixpr import MixPRIndex
from longctx.mixpr.seeds import Seed, rank_weight
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.test_mixpr_keep_firsts import PASSAGES
from tests.test_mixpr_keep_firsts import QUERIES as KF_QUERIES

SLOW = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
DOCS = [SEED_BOOK, SEED_OTHER, SEED_OTHER + " " + SEED_BOOK[:200]]
QUERIES = [*KF_QUERIES, "frozen ships", "zebra quasar"]  # the last: only the seeds reach a unit
COUNT = {"token_counter": lambda s: len(s.split())}


def two_walks(session, scores, used, walk, hybrid):
    """The choice before (ce81252): MixPR's own scores by a second, plain walk for every search
    that ends local, in the mode it ended in (a fallback the multi-hop walk lifted to local
    included), else the search's scores. ``None`` here: the search walks again when it ended
    local and keeps its scores otherwise (``used`` is the mode before the multi-hop walk, so
    it must not decide)."""
    return None


def both(ix, query, monkeypatch, **kw):
    """``(one walk, two walks, walks run by the first)`` of one search."""
    calls = []
    real = MixPRIndex._score

    def counted(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(MixPRIndex, "_score", counted)
    one = ix.search(query, keep_firsts=True, **kw)
    walks = len(calls)
    with monkeypatch.context() as m:
        m.setattr(index_module, "own_scores", two_walks)
        two = ix.search(query, keep_firsts=True, **kw)
    return one, two, walks


def assert_same(one, two):
    assert one.hits == two.hits  # texts, offsets, sources and scores, bit for bit
    assert one.mode == two.mode and one.info == two.info
    assert "ranking" in one.info  # the kept order is reported


@pytest.fixture(scope="module")
def book():
    meta = [{"part": i % 2} for i in range(len(DOCS))]
    return MixPRIndex.from_texts(DOCS, ids=["a", "b", "c"], metadatas=meta, **COUNT)


@pytest.fixture(scope="module")
def passages():  # one unit a passage: questions naming a passage's head take the multi-hop walk
    return MixPRIndex.from_texts(PASSAGES, chunk=False, **COUNT)


@pytest.fixture(scope="module")
def hybrid():
    ix = MixPRIndex.from_texts(DOCS, **COUNT)
    rng = np.random.default_rng(0)
    return MixPRIndex.from_texts(DOCS, unit_vectors=rng.normal(size=(ix.n_units, 8)), **COUNT)


spans = st.lists(
    st.tuples(st.integers(0, len(DOCS) - 1), st.integers(0, 600), st.integers(1, 300)),
    min_size=1,
    max_size=6,
)
sizes = st.sampled_from(
    [{"k": 1}, {"k": 3}, {"k": 8}, {"token_budget": 40}, {"k": 5, "unique_texts": True}]
)


def book_seeds(picked):
    out = []
    for r, (d, a, n) in enumerate(picked):
        a = min(a, len(DOCS[d]) - 1)
        out.append(Seed("abc"[d], a, min(a + n, len(DOCS[d])), rank_weight(r)))
    return out


@SLOW
@given(
    q=st.sampled_from(QUERIES), picked=spans, size=sizes, mode=st.sampled_from(["auto", "local"])
)
def test_local_and_routed_searches_equal_the_two_walks(book, monkeypatch, q, picked, size, mode):
    one, two, walks = both(book, q, monkeypatch, mode=mode, seeds=book_seeds(picked), **size)
    assert_same(one, two)
    if one.mode == "local" and q != "zebra quasar":
        assert walks == 1  # MixPR's own scores reused: no second walk


@SLOW
@given(q=st.sampled_from(QUERIES), picked=spans, size=sizes, part=st.integers(0, 1))
def test_filtered_searches_equal_the_two_walks(book, monkeypatch, q, picked, size, part):
    kw = dict(mode="local", seeds=book_seeds(picked), filters={"part": part}, **size)
    one, two, _ = both(book, q, monkeypatch, **kw)
    assert_same(one, two)
    assert all(book.metadatas[h.source]["part"] == part for h in one.hits)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(q=st.sampled_from(QUERIES), picked=spans, k=st.integers(1, 3))
def test_global_and_whole_document_searches_equal_the_two_walks(book, monkeypatch, q, picked, k):
    one, two, walks = both(book, q, monkeypatch, k=k, mode="global", seeds=book_seeds(picked))
    assert_same(one, two)
    assert one.mode == "global" and walks == 1
    kw = dict(k=k, mode="local", seeds=book_seeds(picked), whole_documents=True)
    assert_same(*both(book, q, monkeypatch, **kw)[:2])


@SLOW
@given(
    q=st.sampled_from(QUERIES + [p[:40] for p in PASSAGES[:6]]),
    app=st.permutations(range(len(PASSAGES))).map(lambda p: p[:4]),
    size=sizes,
)
def test_passage_searches_multihop_included_equal_the_two_walks(
    passages, monkeypatch, q, app, size
):
    seeds = [Seed(str(i), score=rank_weight(r)) for r, i in enumerate(app)]
    one, two, walks = both(passages, q, monkeypatch, seeds=seeds, **size)
    assert_same(one, two)
    if one.trace[0]["walk"] == "multihop":
        assert walks == 2  # the seeded multi-hop walk is not MixPR's own: walked again


@SLOW
@given(q=st.sampled_from(QUERIES[:4]), picked=spans, size=sizes)
def test_hybrid_searches_equal_the_two_walks(hybrid, monkeypatch, q, picked, size):
    qv = np.random.default_rng(len(q)).normal(size=8)
    kw = dict(mode="local", seeds=book_seeds(picked), query_vector=qv, **size)
    one, two, walks = both(hybrid, q, monkeypatch, **kw)
    assert_same(one, two)
    assert walks == 2  # the plain hybrid walk restarts on the nearest units too: walked again


def test_the_seeds_are_mapped_once(book, monkeypatch):
    import longctx.mixpr.seeds as seeds_module

    calls = []
    real = seeds_module.seeds_on
    counted = lambda *a: calls.append(1) or real(*a)  # noqa: E731
    monkeypatch.setattr(seeds_module, "seeds_on", counted)  # mapped_seeds
    monkeypatch.setattr(index_module, "seeds_on", counted)  # the search's own calls
    book.search(QUERIES[0], k=3, mode="local", seeds=book_seeds([(0, 10, 80)]), keep_firsts=True)
    assert calls == [1]


def test_real_questions_equal_the_two_walks(shared_data, monkeypatch):
    """SQuAD's Super Bowl 50 paragraphs (one document each, chunked: the PageRank walk) and
    HotpotQA's first 20 examples' paragraphs (one unit each: the multi-hop walk where the router
    takes it), every question with the app's hits as seeds."""
    squad = json.loads((shared_data / "squad" / "dev-v1.1-superbowl50.json").read_text())
    paras = squad["data"][0]["paragraphs"]
    texts = [p["context"] for p in paras]
    ix = MixPRIndex.from_texts(texts, **COUNT)
    rng = np.random.default_rng(0)
    n = 0
    for d, p in enumerate(paras):
        for qa in p["qas"][:2]:
            other = int(rng.integers(len(texts)))
            seeds = [Seed(str(d), score=1.0), Seed(str(other), 0, 120, 0.5)]
            for size in ({"k": 5}, {"token_budget": 200, "unique_texts": True}):
                one, two, _ = both(ix, qa["question"], monkeypatch, seeds=seeds, **size)
                assert_same(one, two)
                n += 1
    assert n >= 100
    hotpot = json.loads((shared_data / "hotpotqa" / "dev-distractor-first100.json").read_text())
    ex = hotpot[:20]
    units = [" ".join(s) for e in ex for _, s in e["context"]]
    pix = MixPRIndex.from_texts(units, chunk=False, **COUNT)
    walks = set()
    for i, e in enumerate(ex):
        seeds = [Seed(str(10 * i + j), score=rank_weight(j)) for j in (3, 0, 7)]
        one, two, _ = both(pix, e["question"], monkeypatch, k=5, seeds=seeds)
        assert_same(one, two)
        walks.add(one.trace[0]["walk"])
    assert walks == {"pagerank", "multihop"}  # both walks covered


def test_a_fallback_lifted_by_the_multihop_walk_keeps_the_multihop_best():
    """A question that reaches no kept unit lexically (``query_threshold``) falls back to the
    PageRank, and the multi-hop walk lifts it to local: MixPR's own best is the multi-hop
    walk's (the plain search's hit), not the fallback PageRank's (review 18)."""
    ix = MixPRIndex.from_texts(PASSAGES, chunk=False, query_threshold=0.95, **COUNT)
    q = PASSAGES[4][:40]
    plain = ix.search(q, k=1)
    assert plain.mode == "local" and plain.trace[0]["walk"] == "multihop"
    r = ix.search(q, k=1, seeds=[Seed("not-in-index", score=1.0)], keep_firsts=True)
    assert r.mode == "local"
    assert [(h.source, h.score) for h in r.hits] == [(h.source, h.score) for h in plain.hits]


def test_filtered_hotpot_questions_lifted_to_local_equal_the_two_walks(shared_data, monkeypatch):
    """HotpotQA's first 100 examples' paragraphs (one unit each), each question filtered to the
    next example's paragraphs (it reaches none of them lexically: the fallback, which the
    multi-hop walk often lifts to local), with no seeds, unknown seeds and two real ones."""
    hot = json.loads((shared_data / "hotpotqa" / "dev-distractor-first100.json").read_text())
    units = [" ".join(s) for e in hot for _, s in e["context"]]
    meta = [{"ex": i} for i, e in enumerate(hot) for _ in e["context"]]
    ix = MixPRIndex.from_texts(units, chunk=False, metadatas=meta, **COUNT)
    lifted = 0
    for i, e in enumerate(hot[:40]):
        f = {"ex": (i + 1) % len(hot)}
        first = meta.index(f)
        for seeds in ([Seed("nope", score=1.0)], [Seed(str(first), score=1.0)]):
            one, two, _ = both(ix, e["question"], monkeypatch, k=2, filters=f, seeds=seeds)
            assert_same(one, two)
            plain = ix.search(e["question"], k=2, filters=f)
            lifted += plain.mode == "local" and plain.trace[0]["walk"] == "multihop"
    assert lifted >= 10  # the case the test is about is covered
