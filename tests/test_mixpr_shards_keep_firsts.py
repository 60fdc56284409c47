"""``ShardedMixPRIndex.search(seeds=..., keep_firsts=True)`` (issue 45, session 18): the fusion
that keeps MixPR's own best unit and the app's first hit, over shards, as one index does it.
One shard equals one :class:`MixPRIndex` (hits, order, ``info["ranking"]``; scores within the
exact-shards contract's 1e-9); several shards equal one index and one shard likewise, with
filters, budgets, global questions, a question only the seeds reach and hybrid mode; through
:class:`longctx.corpus.CorpusIndex` too."""

from __future__ import annotations

import numpy as np
import pytest

from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.mixpr import MixPRIndex
from longctx.mixpr.seeds import Seed
from tests.test_mixpr_corpus import POOL, _encoder
from tests.test_mixpr_shards import QUERIES, SIZES, alice_docs, build  # noqa: F401

SEEDS = [
    Seed("d5", 0, 400, 1.0),  # the app's first hit: kept first (when the filter keeps it)
    Seed("d2", 100, 900, 0.5),
    Seed("p1", score=0.3),
    Seed("elsewhere", 0, 10, 0.9),  # a document the index does not hold: left out
]
FILTERS = (None, {"n": {"$gte": 3}}, {"n": {"$lt": 3}})


def key(r):
    return [(h.source, h.start, h.end, h.text, h.index) for h in r.hits]


def same_kept(a, b, where):
    assert a.mode == b.mode, where
    assert key(a) == key(b), where
    assert a.info["ranking"] == b.info["ranking"], where
    assert a.info["doc_ids"] == b.info["doc_ids"], where
    np.testing.assert_allclose(
        [h.score for h in a.hits], [h.score for h in b.hits], rtol=0, atol=1e-9
    )


@pytest.fixture(scope="module")
def indexes(alice_docs):  # noqa: F811 (the fixture imported above)
    one, three = build(alice_docs, 3)
    ids, texts, mds = zip(*[(d, t, m) for d, t, m in alice_docs])
    single = ShardedMixPRIndex.from_texts(list(texts), ids=list(ids), metadatas=list(mds), shards=1)
    return one, single, three


def test_one_shard_and_several_equal_one_index(indexes):
    one, single, three = indexes
    n = 0
    for q in QUERIES:  # local, global, "zzzz qqqq": only the seeds reach a unit
        for f in FILTERS:
            for size in SIZES:
                a = one.search(q, filters=f, seeds=SEEDS, keep_firsts=True, **size)
                for sh in (single, three):
                    b = sh.search(q, filters=f, seeds=SEEDS, keep_firsts=True, **size)
                    same_kept(a, b, (q, f, size, sh.n_shards))
                    n += 1
    assert n == len(QUERIES) * len(FILTERS) * len(SIZES) * 2


def test_the_firsts_come_first_and_hits_keep_their_real_scores(indexes):
    one, _, three = indexes
    q = QUERIES[0]
    r = three.search(q, k=5, seeds=SEEDS, keep_firsts=True, mode="local")
    own = one.score(q, "local")[0]
    fused = three.score(q, "local", seeds=SEEDS)[0]
    ranked = [(h.source, h.index) for h in r.by_score()]
    d5 = three.doc_ids.index("d5")
    best = int(np.argmax(own))
    unit_of = {(h.source, h.index): i for i, h in enumerate(one.units())}
    assert unit_of[ranked[0]] == best  # MixPR's own best first
    assert ranked[1][0] == d5  # then the app's first hit
    # real (fused) scores on every hit, not the raised ones
    assert [h.score for h in r.hits] == pytest.approx(
        [fused[unit_of[(h.source, h.index)]] for h in r.hits], abs=1e-9
    )
    plain = three.search(q, k=5, seeds=SEEDS, mode="local")
    assert "ranking" not in plain.info  # without keep_firsts: no kept order


def test_a_global_question_asks_the_app_and_keeps_its_first(indexes):
    _, _, three = indexes
    asked = []

    def seeds():
        asked.append(1)
        return SEEDS

    r = three.search("Summarize the book.", k=3, mode="global", seeds=seeds, keep_firsts=True)
    assert asked == [1] and r.mode == "global"
    assert three.doc_ids[r.hits[r.info["ranking"][1]].source] == "d5"
    three.search("Summarize the book.", k=3, mode="global", seeds=seeds)  # not kept: not asked
    assert asked == [1]


def test_hybrid_shards_equal_one_index():
    docs = [(f"d{i}", POOL[i], {"n": i}) for i in range(len(POOL))]
    one, three = build(docs, 3, encoder=_encoder)
    seeds = [Seed("d4", score=1.0), Seed("d1", score=0.5)]
    for q in QUERIES:
        for f in (None, {"n": {"$gte": 2}}):
            for size in SIZES:
                a = one.search(q, filters=f, seeds=seeds, keep_firsts=True, **size)
                b = three.search(q, filters=f, seeds=seeds, keep_firsts=True, **size)
                same_kept(a, b, (q, f, size))


@pytest.mark.parametrize("bad", [1, "yes", None, np.bool_(True)])
def test_keep_firsts_of_another_type_is_named(indexes, bad):
    _, _, three = indexes
    with pytest.raises(TypeError, match="keep_firsts"):
        three.search(QUERIES[0], k=3, seeds=SEEDS, keep_firsts=bad)


def test_the_corpus_search_passes_keep_firsts_to_its_shards(tmp_path, alice_docs):  # noqa: F811
    from longctx.corpus import CorpusIndex

    ids, texts, mds = zip(*[(d, t, m) for d, t, m in alice_docs])
    one = MixPRIndex.from_texts(list(texts), ids=list(ids), metadatas=list(mds))
    three = ShardedMixPRIndex.from_texts(list(texts), ids=list(ids), metadatas=list(mds), shards=3)
    corpus = CorpusIndex(three)
    q = QUERIES[0]
    a = one.search(q, k=5, seeds=SEEDS, keep_firsts=True)
    b = corpus.search(q, k=5, seeds=SEEDS, keep_firsts=True)
    assert key(a) == key(b) and a.info["ranking"] == b.info["ranking"]
    with pytest.raises(TypeError, match="keep_firsts"):
        corpus.search(q, k=5, seeds=SEEDS, keep_firsts="no")


def test_explained_kept_hits_equal_one_index_and_sum_to_their_real_scores(indexes):
    """``keep_firsts`` with ``explain``: the shards explain the hits' real (fused) scores, as
    one index does, whatever order the kept firsts impose."""
    from tests.test_mixpr_shards_explain import same_explanations

    one, single, three = indexes
    for sh in (single, three):
        walked = same_explanations(one, sh, QUERIES, SIZES, FILTERS, seeds=SEEDS, keep_firsts=True)
        assert walked >= 5
