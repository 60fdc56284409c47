"""``ShardedMixPRIndex.search(explain=True)`` (:mod:`longctx.corpus.shards.explain`): the
explanations of one MixPRIndex over the same documents (parts, top terms, seeds), for one shard
and for several, with filters, token budgets, seeds, hybrid mode and global queries; the same
hits and scores as a search without explanations; no pass over every unit for them (the
bordered walk, ``personalization="query"``: tests/test_explain_bordered.py). On Ray:
tests/corpus/test_mixpr_shards_ray.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from longctx.corpus.shards import shard as shard_module
from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.explain import SUM_TOLERANCE
from longctx.io import sample_text
from longctx.selection import SparseScores
from tests.test_mixpr_corpus import POOL, _encoder
from tests.test_mixpr_shards import QUERIES, build

SIZES = ({"k": 7}, {"token_budget": 150})
FILTERS = (None, {"n": {"$gte": 3}})


@pytest.fixture(scope="module")
def alice_docs():
    """tests/test_mixpr_shards.py's corpus: seven parts of the book and four short passages."""
    t = sample_text("alice")
    return [(f"d{i}", t[i * 7000 : (i + 1) * 7000], {"n": i}) for i in range(7)] + [
        (f"p{j}", p, {"n": 10 + j}) for j, p in enumerate(POOL[:4])
    ]


def _evidence(items) -> list:
    """An evidence list without its numbers (what it names, in order)."""
    return [{k: v for k, v in e.items() if k not in ("score", "share")} for e in items]


def same_explanations(one, sharded, queries=QUERIES, sizes=SIZES, filters_list=FILTERS, **kw):
    """Every explained search of ``sharded`` gives ``one``'s hits with ``one``'s explanations
    (parts and evidence scores within 1e-9, the same terms and seed units in the same order),
    and the hits and scores of its own search without explanations. Returns how many hits had
    a walk's explanation."""
    walked = 0
    for q in queries:
        for f in filters_list:
            for size in sizes:
                a = one.search(q, filters=f, explain=True, **size, **kw)
                b = sharded.search(q, filters=f, explain=True, **size, **kw)
                plain = sharded.search(q, filters=f, **size, **kw)
                where = (q, f, size)
                assert [(h.source, h.start, h.score) for h in b.hits] == [
                    (h.source, h.start, h.score) for h in plain.hits
                ], where
                assert all(h.explanation is None for h in plain.hits)
                assert "explain" in b.timings and "explain" not in plain.timings
                assert [(h.source, h.start) for h in a.hits] == [
                    (h.source, h.start) for h in b.hits
                ], where
                for ha, hb in zip(a.hits, b.hits):
                    ea, eb = ha.explanation, hb.explanation
                    assert ea.keys() == eb.keys(), where
                    assert (ea["method"], ea["walk"]) == (eb["method"], eb["walk"]), where
                    assert eb["score"] == hb.score
                    total = math.fsum(eb["parts"].values())
                    assert abs(total - eb["score"]) <= SUM_TOLERANCE * max(1.0, eb["score"])
                    assert ea["parts"].keys() == eb["parts"].keys()
                    for part, v in ea["parts"].items():
                        assert eb["parts"][part] == pytest.approx(v, abs=1e-9), (where, part)
                    for key in ("terms", "seeds"):
                        assert _evidence(ea.get(key, [])) == _evidence(eb.get(key, [])), where
                        np.testing.assert_allclose(
                            [e["score"] for e in ea.get(key, [])],
                            [e["score"] for e in eb.get(key, [])],
                            rtol=0,
                            atol=1e-9,
                        )
                    walked += ea["walk"] == "pagerank" and bool(ea.get("terms"))
    return walked


@pytest.mark.parametrize("solver", ["push", "power"])
def test_one_shard_explains_as_one_index(alice_docs, solver):
    one, sharded = build(alice_docs, 1, solver=solver)
    assert same_explanations(one, sharded) > 20


@pytest.mark.parametrize("shards, params", [(3, {}), (4, {"lexical_weight": 0.0})])
def test_several_shards_explain_as_one_shard_and_one_index(alice_docs, shards, params):
    """The documents interleave over the shards, so a hit's terms and seeds gather entries of
    every shard: the same explanations as one shard over the same corpus, and as one index."""
    one, sharded = build(alice_docs, shards, **params)
    _, single = build(alice_docs, 1, **params)
    assert len({sharded.shard_of(d) for d in sharded.doc_ids}) == shards
    assert same_explanations(single, sharded) > 20
    assert same_explanations(one, sharded, queries=QUERIES[:2], filters_list=(None,)) > 5
    # a seed of another shard than its hit's is named as one index names it (corpus unit)
    r = sharded.search(QUERIES[0], k=7, explain=True)
    ids = r.info["doc_ids"]
    seeds = [(ids[n], s) for n, h in enumerate(r.hits) for s in h.explanation["seeds"]]
    assert any(sharded.shard_of(s["doc_id"]) != sharded.shard_of(d) for d, s in seeds)
    for _, s in seeds:
        assert s["doc_id"] in sharded.doc_ids and s["end"] > s["start"]
        assert 0 <= s["unit"] < sharded.n_units


def test_seeds_hybrid_and_global_explain_as_one_index(alice_docs):
    seeds = [("d2", 100, 900, 1.0), ("p1", None, None, 0.5)]
    one, sharded = build(alice_docs, 3)
    same_explanations(one, sharded, queries=QUERIES[:2], sizes=({"k": 5},), seeds=seeds)
    # the question reaches no unit: only the seeds' walk scores
    r = sharded.search("zzzz qqqq", k=3, mode="local", seeds=seeds, explain=True)
    assert r.hits and all(set(h.explanation["parts"]) == {"seeds_walk"} for h in r.hits)
    same_explanations(one, sharded, queries=["zzzz qqqq"], sizes=({"k": 3},), filters_list=(None,),
                      mode="local", seeds=seeds)  # fmt: skip
    # global and global-fallback: the PageRank
    g = sharded.search(QUERIES[2], k=3, mode="global", explain=True)
    assert all(h.explanation["parts"] == {"pagerank": h.score} for h in g.hits)
    one, sharded = build(alice_docs, 3, encoder=_encoder)
    same_explanations(one, sharded, queries=QUERIES[:2], sizes=({"k": 7},))
    r = sharded.search(QUERIES[0], k=7, explain=True)
    assert any(h.explanation["parts"]["restart_dense"] > 0 for h in r.hits)


def test_explain_reads_no_dense_vector_of_the_walk(monkeypatch):
    """A push walk's mass that stays sparse (a corpus of rare words, a walk that parks its
    small masses) is gathered at the hits' term columns: the explanations never make it a
    vector over every unit (their cost is the hits', not the corpus's)."""
    rng = np.random.default_rng(0)
    words = [f"w{i}x" for i in range(5000)]
    docs = [" ".join(rng.choice(words, 12)) + "." for _ in range(1200)]
    sharded = ShardedMixPRIndex.from_texts(docs, shards=3, chunk=False, push_threshold=1e-3)
    calls, kinds = [], []
    dense, inflow = SparseScores.dense, shard_module.walk_inflow

    def counted(self):
        calls.append(self.n)
        return dense(self)

    def seen(block, s, *args):
        kinds.append(type(s["x"]))
        return inflow(block, s, *args)

    monkeypatch.setattr(SparseScores, "dense", counted)
    monkeypatch.setattr(shard_module, "walk_inflow", seen)
    q = " ".join(docs[5].split()[:2])
    plain = sharded.search(q, k=5, mode="local")
    before = len(calls)
    r = sharded.search(q, k=5, mode="local", explain=True)
    assert kinds == [SparseScores] * 3  # each shard's walk was sparse, and stayed so
    assert len(calls) == before and r.hits[0].explanation["terms"]
    assert [h.score for h in r.hits] == [h.score for h in plain.hits]


def test_bordered_global_queries_explained_as_one_index_bad_explain_refused(alice_docs):
    """``personalization="query"``: a global query is explained by its PageRank, as one index
    explains it (local ones: tests/test_explain_bordered.py); ``explain`` not a bool is a
    ``TypeError`` naming it."""
    one, sharded = build(alice_docs, 2, personalization="query")
    for ix in (one, sharded):
        g = ix.search(QUERIES[0], k=3, mode="global", explain=True)
        assert g.mode == "global" and g.hits
        assert all(h.explanation["parts"] == {"pagerank": h.score} for h in g.hits)
    a = one.search(QUERIES[0], k=3, mode="global", explain=True)
    assert [(h.source, h.start) for h in a.hits] == [(h.source, h.start) for h in g.hits]
    for ha, hb in zip(a.hits, g.hits):  # the sharded PageRank within float rounding
        assert hb.explanation["parts"]["pagerank"] == pytest.approx(ha.score, rel=1e-12)
    with pytest.raises(TypeError, match="explain"):
        sharded.search(QUERIES[0], k=3, explain=1)


def test_an_empty_sharded_index_explains_nothing(alice_docs):
    sharded = ShardedMixPRIndex.from_texts(["the white rabbit"], ids=["a"], shards=2)
    sharded.delete(["a"])
    assert sharded.search("rabbit", k=3, explain=True).hits == ()


def _own_word_docs(n: int) -> list:
    """``n`` documents of eight sentences, each document of 30 random words of its own."""
    rng = np.random.default_rng(0)

    def word():
        return "".join(rng.choice(list("bcdfghjklmnpqrstvwxz"), 3)) + "".join(
            rng.choice(list("aeiou"), 2)
        )

    docs = []
    for _ in range(n):
        vocab = [word() for _ in range(30)]
        docs.append(" ".join(" ".join(rng.choice(vocab, 12)) + "." for _ in range(8)))
    return docs


def test_one_index_explains_a_sparse_push_walk_as_the_sharded_index():
    """Documents of words of their own: a one-word question's push walk reaches its document's
    units only, so its scores stay sparse (:class:`~longctx.selection.SparseScores`). One index
    explains them (it raised a TypeError, review 18) as the sharded index does, for unit hits
    and document hits (``whole_documents=True``: the best unit's parts), parts adding up."""
    docs = _own_word_docs(200)
    ids = [f"d{i}" for i in range(len(docs))]
    one, sharded = build([(d, t, {}) for d, t in zip(ids, docs)], 3)
    qs = [docs[3].split()[0], docs[120].split()[5]]
    for q in qs:
        scores = one._score(one._state, q, "local", None, None)[0]
        assert isinstance(scores, SparseScores) and len(scores.idx) <= one.n_units // 16
    sizes = ({"k": 3}, {"token_budget": 50})
    kw = dict(queries=qs, filters_list=(None,), sizes=sizes, mode="local")
    assert same_explanations(one, sharded, **kw) >= 4
    for q in qs:
        units = one.search(q, k=20, mode="local", explain=True)
        by_unit = {(h.source, h.index): h.explanation for h in units.hits}
        r = one.search(q, k=2, whole_documents=True, mode="local", explain=True)
        assert [h.score for h in r.hits] == [
            h.score for h in one.search(q, k=2, whole_documents=True, mode="local").hits
        ]
        assert any(h.score > 0 for h in r.hits)  # (hits in document order)
        assert all(h.explanation["walk"] == "pagerank" for h in r.hits)
        for h in r.hits:
            e = h.explanation
            assert abs(math.fsum(e["parts"].values()) - h.score) <= SUM_TOLERANCE
            if h.score > 0:
                assert e["parts"] == by_unit[(h.source, h.index)]["parts"]
            assert e["unit"]["doc_id"] == ids[h.source] and e["units_scored"] >= (h.score > 0)
