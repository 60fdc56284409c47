"""ShardedMixPRIndex with its shards in this process: every search equals one MixPRIndex over the
same documents (hits, modes, scores within 1e-9), through inserts, updates and deletes, with
filters, token budgets, the bordered walk and hybrid mode; save / load; named errors. The same
reductions run on Ray in tests/corpus/test_mixpr_shards_ray.py."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.corpus.shards.index import ShardedMixPRIndex, assign_shards
from longctx.io import sample_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.seeds import Seed
from longctx.persist import PersistError
from tests.test_mixpr_corpus import POOL, _encoder

QUERIES = [
    "Who stole the tarts?",
    "What did the Caterpillar smoke? Tell me",  # two query chunks, the last one short
    "Summarize the book.",  # global
    "zzzz qqqq",  # no unit reached: global fallback
    "Where is the milk?",
]
SIZES = ({"k": 7}, {"token_budget": 150}, {"k": 1})


@pytest.fixture(scope="module")
def alice_docs():
    t = sample_text("alice")
    return [(f"d{i}", t[i * 7000 : (i + 1) * 7000], {"n": i}) for i in range(7)] + [
        (f"p{j}", p, {"n": 10 + j}) for j, p in enumerate(POOL[:4])
    ]


def same_results(one, sharded, queries=QUERIES, filters_list=(None, {"n": {"$gte": 3}}), **kw):
    """Every search and score of ``sharded`` equals ``one``'s."""
    assert sharded.doc_ids == tuple(one.doc_ids)
    for q in queries:
        for f in filters_list:
            for size in SIZES:
                a = one.search(q, filters=f, **size, **kw)
                b = sharded.search(q, filters=f, **size, **kw)
                assert a.mode == b.mode, (q, f, size)
                assert [(h.source, h.start, h.end, h.text, h.index) for h in a.hits] == [
                    (h.source, h.start, h.end, h.text, h.index) for h in b.hits
                ], (q, f, size)
                np.testing.assert_allclose(
                    [h.score for h in a.hits], [h.score for h in b.hits], rtol=0, atol=1e-9
                )
                assert a.info["doc_ids"] == b.info["doc_ids"]
            sa, ma, _ = one.score(q, filters=f, **kw)
            sb, mb, _ = sharded.score(q, filters=f, **kw)
            assert ma == mb
            np.testing.assert_allclose(sa, sb, rtol=0, atol=1e-9)


def build(docs, shards, **params):
    ids = [d for d, _, _ in docs]
    texts = [t for _, t, _ in docs]
    mds = [m for _, _, m in docs]
    one = MixPRIndex.from_texts(texts, ids=ids, metadatas=mds, **params)
    sharded = ShardedMixPRIndex.from_texts(texts, ids=ids, metadatas=mds, shards=shards, **params)
    return one, sharded


@pytest.mark.parametrize(
    "shards, params",
    [(3, {}), (2, {"personalization": "query"}), (4, {"lexical_weight": 0.0})],
)
def test_search_equals_one_index(alice_docs, shards, params):
    one, sharded = build(alice_docs, shards, **params)
    sizes = sharded.shard_sizes()
    assert len(sizes) == shards and all(s["documents"] for s in sizes.values())
    assert sum(s["units"] for s in sizes.values()) == one.n_units == sharded.n_units
    # the documents interleave over the shards: corpus order is not shard order
    assert [sharded.shard_of(d) for d in sharded.doc_ids[:3]] == [0, 1, 2 % shards]
    same_results(one, sharded)


def test_a_budget_that_needs_more_candidates(alice_docs):
    """A large budget: the first candidates of each shard do not decide the greedy choice."""
    one, sharded = build(alice_docs, 3, max_words=8)
    for q in QUERIES[:2]:
        for budget in (5, 4000):
            a = one.search(q, token_budget=budget)
            b = sharded.search(q, token_budget=budget)
            assert [(h.source, h.start) for h in a.hits] == [(h.source, h.start) for h in b.hits]
            assert len(a.hits) > 256 or budget == 5


def test_shard_assignment_rule():
    assert assign_shards([5, 5, 5, 1], 2, [0, 0]) == [0, 1, 0, 1]
    assert assign_shards([10, 1, 1], 3, [3, 0, 0]) == [1, 2, 2]  # ties to the lowest number
    assert assign_shards([], 2, [0, 0]) == []


OPS = st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "update"]), st.integers(0, len(POOL) - 1)),
    min_size=1,
    max_size=5,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, shards=st.integers(1, 3))
def test_changes_through_shards_equal_a_fresh_build(ops, shards):
    docs = {"d0": (POOL[0], {"n": 0}), "d1": (POOL[1], {"n": 1}), "d2": (POOL[2], {"n": 2})}
    sharded = ShardedMixPRIndex.from_texts(
        [v[0] for v in docs.values()],
        ids=list(docs),
        metadatas=[v[1] for v in docs.values()],
        shards=shards,
    )
    serial = 3
    for op, j in ops:
        if op == "insert" or len(docs) <= 1:
            key = f"d{serial}"
            serial += 1
            docs[key] = (POOL[j], {"n": j})
            sharded.insert([POOL[j]], ids=[key], metadatas=[{"n": j}])
        elif op == "delete":
            key = sorted(docs)[j % len(docs)]
            del docs[key]
            sharded.delete([key])
        else:
            key = sorted(docs)[j % len(docs)]
            docs[key] = (POOL[(j + 3) % len(POOL)], {"n": -j})
            sharded.update([docs[key][0]], ids=[key], metadatas=[{"n": -j}])
            assert sharded.metadata(key) == {"n": -j}
    fresh = MixPRIndex.from_texts(
        [v[0] for v in docs.values()], ids=list(docs), metadatas=[v[1] for v in docs.values()]
    )
    same_results(fresh, sharded, queries=QUERIES[2:], filters_list=(None, {"n": {"$gte": 2}}))


def test_delete_a_whole_shard_then_insert_again():
    sharded = ShardedMixPRIndex.from_texts(POOL[:4], ids=list("abcd"), shards=2)
    gone = [d for d in "abcd" if sharded.shard_of(d) == 0]
    sharded.delete(gone)
    assert sharded.shard_sizes()[0]["documents"] == 0
    sharded.insert([POOL[5]], ids=["e"])
    assert sharded.shard_of("e") == 0  # the emptiest shard
    kept = [d for d in "abcd" if d not in gone] + ["e"]
    fresh = MixPRIndex.from_texts([POOL["abcde".index(d)] for d in kept[:-1]] + [POOL[5]], ids=kept)
    same_results(fresh, sharded, queries=QUERIES[2:], filters_list=(None,))
    sharded.delete(list(sharded.doc_ids))
    assert sharded.n_units == 0 and sharded.search("milk", k=2).hits == ()


def test_hybrid_equals_one_index():
    docs = [(f"d{i}", POOL[i], {"n": i}) for i in range(len(POOL))]
    one, sharded = build(docs, 3, encoder=_encoder, dense_weight=0.5)
    same_results(one, sharded, queries=QUERIES[2:], filters_list=(None, {"n": {"$gte": 2}}))
    one_q, sharded_q = build(docs, 2, encoder=_encoder, personalization="query")
    same_results(one_q, sharded_q, queries=QUERIES[4:], filters_list=(None,))
    vec = _encoder(["the garden apple"])[0]
    a = one.search("apple", k=3, query_vector=vec)
    b = sharded.search("apple", k=3, query_vector=vec)
    assert [h.start for h in a.hits] == [h.start for h in b.hits]


def test_save_load_round_trip(tmp_path, alice_docs):
    one, sharded = build(alice_docs[:6], 3)
    sharded.save(tmp_path / "ix")
    manifest = json.loads((tmp_path / "ix" / "shards.json").read_text())
    assert manifest["format_version"] == 1 and manifest["n_shards"] == 3
    assert sorted(p.name for p in (tmp_path / "ix").iterdir()) == [
        "shard-0", "shard-1", "shard-2", "shards.json", "writing.json",
    ]  # fmt: skip
    loaded = ShardedMixPRIndex.load(tmp_path / "ix", use_ray=False)
    assert loaded.backend == "in-process"
    same_results(one, loaded, queries=QUERIES[:2])
    # memory:// (an fsspec URL) too
    sharded.save("memory://longctx-shards-test")
    again = ShardedMixPRIndex.load("memory://longctx-shards-test", use_ray=False)
    same_results(one, again, queries=QUERIES[:1], filters_list=(None,))


def test_damaged_or_missing_shards_are_named(tmp_path):
    sharded = ShardedMixPRIndex.from_texts(POOL[:4], ids=list("abcd"), shards=2)
    root = tmp_path / "ix"
    sharded.save(root)
    (root / "shard-1" / "E_data.npy").write_bytes(b"not an array")
    with pytest.raises(PersistError, match=r"shard 1 .*E_data\.npy"):
        ShardedMixPRIndex.load(root, use_ray=False)
    sharded.save(root)
    m = json.loads((root / "shards.json").read_text())
    m["documents"][0][1] = 1 - m["documents"][0][1]  # a document moved to the other shard
    (root / "shards.json").write_text(json.dumps(m))
    with pytest.raises(PersistError, match="interrupted build"):
        ShardedMixPRIndex.load(root, use_ray=False)
    m["documents"][0][1] = 7
    (root / "shards.json").write_text(json.dumps(m))
    with pytest.raises(PersistError, match=r"documents\[0\]"):
        ShardedMixPRIndex.load(root, use_ray=False)
    (root / "shards.json").unlink()
    with pytest.raises(PersistError, match="shards.json"):
        ShardedMixPRIndex.load(root, use_ray=False)


def test_bad_arguments_raise_before_work():
    sharded = ShardedMixPRIndex.from_texts(POOL[:3], ids=list("abc"), shards=2)
    with pytest.raises(ValueError, match="already in the index"):
        sharded.insert([POOL[4]], ids=["a"])
    with pytest.raises(KeyError, match="nope"):
        sharded.delete(["a", "nope"])
    with pytest.raises(KeyError, match="nope"):
        sharded.update([POOL[4]], ids=["nope"])
    with pytest.raises(ValueError, match="mode"):
        sharded.search("milk", mode="everything")
    with pytest.raises(ValueError, match="operator"):
        sharded.search("milk", filters={"n": {"$near": 1}})
    with pytest.raises(ValueError, match="smaller than the shortest unit"):
        sharded.search("milk", token_budget=1)
    with pytest.raises(ValueError, match="query_vector needs"):
        sharded.search("milk", query_vector=np.ones(4))
    with pytest.raises(ValueError, match="factored"):
        ShardedMixPRIndex.from_texts(POOL[:2], shards=2, graph="threshold")
    with pytest.raises(ValueError, match="shards"):
        ShardedMixPRIndex.from_texts(POOL[:2], shards=0)
    assert sharded.doc_ids == ("a", "b", "c")


def test_whole_documents_is_not_implemented_on_shards_and_said_before_work(tmp_path, monkeypatch):
    """``whole_documents=True`` (a one index's documents ranked by their best unit) is a clear
    ``NotImplementedError`` on a sharded index and a sharded corpus, not a ``TypeError``."""
    from longctx.corpus import CorpusIndex, build_indexes

    docs = [(d, t) for d, t in zip("abc", POOL[:3])]
    build_indexes(docs, "mixpr", tmp_path / "c", shards=2, use_ray=False, progress=False)
    with CorpusIndex.from_corpus(tmp_path / "c", use_ray=False) as corpus:
        with pytest.raises(NotImplementedError, match="whole_documents=True .* sharded"):
            corpus.search("milk", k=2, whole_documents=True)
        assert corpus.search("milk", k=2).hits  # the corpus still searches
    sharded = ShardedMixPRIndex.from_texts(POOL[:3], ids=list("abc"), shards=2)
    monkeypatch.setattr(sharded, "_with_retry", lambda *a, **k: pytest.fail("work was done"))
    with pytest.raises(NotImplementedError, match="whole_documents"):
        sharded.search("milk", k=2, whole_documents=True)


@pytest.mark.parametrize("change", ["insert", "update"])
def test_insert_and_update_check_their_arguments_before_any_shard_call(change, monkeypatch):
    # insert and update share one check (ids, taken / missing ids, metadata, unit_vectors):
    # every error comes before a shard is asked for anything, and nothing changes
    sharded = ShardedMixPRIndex.from_texts(POOL[:3], ids=list("abc"), shards=2)
    shard_calls = []
    monkeypatch.setattr(sharded, "_run", lambda calls: shard_calls.append(calls))
    monkeypatch.setattr(sharded._backend, "add", lambda *a: shard_calls.append(a))
    fn = getattr(sharded, change)
    fresh, held = (["x", "y"], ["a", "b"]) if change == "insert" else (["a", "b"], ["x", "y"])
    two = [POOL[4], POOL[5]]
    with pytest.raises(TypeError, match="ids is required"):
        fn(two, ids=None)
    with pytest.raises(ValueError, match="ids has 1 entries for 2 texts"):
        fn(two, ids=fresh[:1])
    with pytest.raises(ValueError, match="must be unique"):
        fn(two, ids=[fresh[0], fresh[0]])
    with pytest.raises(TypeError, match=r"ids\[1\] must be a non-empty str"):
        fn(two, ids=[fresh[0], 7])
    if change == "insert":
        with pytest.raises(ValueError, match=r"\['a', 'b'\] are already in the index: use update"):
            fn(two, ids=held)
    else:
        with pytest.raises(KeyError, match=r"\['x', 'y'\] are not in the index"):
            fn(two, ids=held)
    with pytest.raises(ValueError, match="metadatas has 1 entries for 2 texts"):
        fn(two, ids=fresh, metadatas=[{}])
    with pytest.raises(TypeError, match=r"metadatas\[1\] \(document '.'\) must be a dict"):
        fn(two, ids=fresh, metadatas=[{}, "n=1"])
    with pytest.raises(ValueError, match="unit_vectors with a sharded index takes one document"):
        fn(two, ids=fresh, unit_vectors=np.ones((2, 4)))
    with pytest.raises(TypeError):
        fn([POOL[4], 3], ids=fresh)
    assert shard_calls == [] and sharded.doc_ids == ("a", "b", "c")
    monkeypatch.undo()
    fn(two, ids=fresh, metadatas=[{"n": 1}, None])  # the same arguments, corrected, go through
    assert sharded.metadata(fresh[0]) == {"n": 1}


def test_concurrent_searches_equal_sequential(alice_docs):
    from concurrent.futures import ThreadPoolExecutor

    _, sharded = build(alice_docs, 3)
    jobs = [(q, f) for q in QUERIES for f in (None, {"n": {"$gte": 2}}, {"n": {"$lt": 5}})]

    def run(job):
        r = sharded.search(job[0], k=5, filters=job[1])
        return [(h.source, h.start, h.score) for h in r.hits]

    want = [run(j) for j in jobs]
    sharded = build(alice_docs, 3)[1]  # fresh: no filter mask cached yet
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(run, jobs)) == want


def test_the_multihop_walk_is_refused_on_shards():
    from longctx.corpus.shards import ShardedMixPRIndex

    with pytest.raises(NotImplementedError, match="multihop"):
        ShardedMixPRIndex.from_texts(["a b c", "d e f"], shards=2, preset="multihop", use_ray=False)


def test_seeds_equal_one_index(alice_docs):
    """issue 45: another retriever's hits seed the sharded walk as they seed one index's (each
    seed mapped by the shard holding its document), with filters, k and token budgets."""
    one, sharded = build(alice_docs, 3)
    text3 = dict((d, t) for d, t, _ in alice_docs)["d3"]
    seeds = [
        Seed("d2", 100, 900, 1.0),  # a span
        Seed("p1", score=0.5),  # a whole passage
        Seed("d3", None, None, 0.4, text3[2000:2600]),  # located by its text
        Seed("d5", 0, 400, 0.3),
        Seed("elsewhere", 0, 10, 1.0),  # a document the index does not hold: left out
    ]
    assert len({sharded.shard_of(s.doc_id) for s in seeds[:4]}) > 1
    same_results(one, sharded, seeds=seeds)
    q = "Who stole the tarts?"
    plain = [(h.source, h.start) for h in sharded.search(q, k=7).hits]
    seeded = [(h.source, h.start) for h in sharded.search(q, k=7, seeds=seeds).hits]
    assert seeded != plain
    d2 = sharded.doc_ids.index("d2")
    assert any(s == d2 and a < 900 for s, a in seeded)  # the first seed's span is retrieved
    with pytest.raises(ValueError, match=r"seeds\[0\]"):
        sharded.search(q, k=3, seeds=[Seed("d2", 5, 5, 1.0)])


def test_seeds_map_to_one_indexs_units_after_changes_and_a_reload(alice_docs, tmp_path):
    """The shards map seeds to the corpus-wide keys of their blocks (ints, no document ids):
    the units one index over the same documents maps them to, after a delete and an insert
    that renumber the units, and after a save and load; the searches agree (issue 45
    review)."""
    from longctx.corpus.shards.query import seed_keys
    from longctx.mixpr.seeds import check_seeds, seed_units

    one, sharded = build(alice_docs, 3)
    extra = sample_text("alice")[60000:64000]
    for ix in (one, sharded):
        ix.delete(["d1"])
        ix.insert([extra], ids=["n1"], metadatas=[{"n": 20}])
    seeds = check_seeds(
        [Seed("d2", 100, 900, 1.0), Seed("p1", score=0.5), Seed("d6", 10, 300, 0.7),
         Seed("n1", 50, 600, 0.9), Seed("d1", 0, 50, 1.0)]
    )  # fmt: skip
    st = one._state
    want = seed_units(seeds, st.positions, st.texts, st.unit_source, st.starts, st.ends)
    assert len(want[0]) > 8
    sharded.save(tmp_path / "s")
    for ix in (sharded, ShardedMixPRIndex.load(tmp_path / "s")):
        keys, weights = seed_keys(ix._run, ix._shard_of, seeds)
        assert keys.dtype == np.int64
        np.testing.assert_array_equal(keys, want[0])
        np.testing.assert_allclose(weights, want[1], rtol=0, atol=1e-12)
        same_results(one, ix, queries=QUERIES[:2], seeds=seeds)


@pytest.mark.parametrize(
    ("nodes", "n", "want"),
    [
        ([2.0], 2, 1.0),  # one CPU each where there is one
        ([1.0, 1.0], 4, 0.5),  # 4 shards on two 1-CPU nodes
        ([1.0, 1.0], 3, 0.5),  # 0.66 would fit 1 + 1 actors only
        ([4.0, 1.0], 10, 0.5),  # 10 on 4 + 1 CPUs: 8 + 2 actors
        ([1.0, 1.0, 1.0], 10, 0.25),
        ([0.0, 2.0], 3, 0.6666),  # rounded down to Ray's 1e-4
        ([], 3, 0.0),
    ],
)
def test_shard_cpus_is_the_largest_share_that_fits(nodes, n, want):
    from longctx.corpus.shards.backends import shard_cpus

    got = shard_cpus(nodes, n)
    assert got == want
    assert got == 0 or sum(int(c / got + 1e-9) for c in nodes) >= n  # every actor fits


@given(
    st.lists(st.integers(0, 16).map(float), min_size=1, max_size=6),
    st.integers(1, 64),
)
def test_shard_cpus_fits_and_no_larger_share_does(nodes, n):
    from longctx.corpus.shards.backends import shard_cpus

    x = shard_cpus(nodes, n)
    assert 0 <= x <= 1
    if sum(nodes) > 0:
        assert x > 0 and sum(int(c / x + 1e-9) for c in nodes) >= n
        y = x + 2e-4  # a larger share (past Ray's rounding) leaves an actor unplaced, or > 1
        assert y > 1 or sum(int(c / y + 1e-9) for c in nodes) < n


def test_shard_cpus_too_large_is_one_line():
    from longctx.corpus.shards.backends import shard_cpus

    assert shard_cpus([1.0, 1.0], 4, 0.5) == 0.5 and shard_cpus([1.0], 4, 0) == 0.0
    with pytest.raises(ValueError, match=r"cpus_per_shard=1 does not fit: 4 shard actors") as e:
        shard_cpus([1.0, 1.0], 4, 1.0)
    assert "\n" not in str(e.value) and "<= 0.5" in str(e.value)


def test_a_mappable_sharded_corpus_maps_its_shards(tmp_path, alice_docs):
    # build_indexes(..., shards=N, mappable=True): format-3 shards that every load maps
    from longctx.corpus import build_indexes
    from longctx.persist.npy import mapped_base

    pairs = [(d, t) for d, t, _ in alice_docs]
    build_indexes(pairs, "mixpr", tmp_path / "c", shards=3, mappable=True, use_ray=False)
    build_indexes(pairs[:2], "mixpr", tmp_path / "c", shards=3, mappable=True, use_ray=False)
    from longctx.tokens import count_tokens  # counted by the shard jobs

    entries = json.loads((tmp_path / "c" / "corpus.json").read_text())["documents"]
    assert {e["doc_id"]: e["tokens"] for e in entries} == {d: count_tokens(t) for d, t in pairs}
    one = MixPRIndex.from_texts([t for _, t in pairs], ids=[d for d, _ in pairs])
    with ShardedMixPRIndex.load(tmp_path / "c" / "indexes", use_ray=False) as index:
        for s in index._backend.shards.values():
            assert mapped_base(s.index._state.starts) is not None
        same_results(one, index, queries=QUERIES[:3], filters_list=(None,))
        index.insert(["a new garden of roses"], ids=["new"])  # in memory; the files unchanged
        assert index.search("roses garden", k=1).hits[0].source == len(pairs)
    plain = tmp_path / "plain"
    ShardedMixPRIndex.from_texts([t for _, t in pairs[:4]], shards=2).save(plain)
    with ShardedMixPRIndex.load(plain, use_ray=False) as index:  # format 3, the default: mapped
        for s in index._backend.shards.values():
            assert mapped_base(s.index._state.starts) is not None
    build_indexes(pairs[:4], "mixpr", tmp_path / "f2", shards=2, mappable=False, use_ray=False)
    with ShardedMixPRIndex.load(tmp_path / "f2" / "indexes", use_ray=False) as index:
        for s in index._backend.shards.values():  # format 2: read whole
            assert mapped_base(s.index._state.starts) is None
    with pytest.raises(TypeError, match="mappable must be a bool, got str"):
        build_indexes(pairs, "mixpr", tmp_path / "d", shards=2, mappable="yes", use_ray=False)


def test_a_mappable_one_index_corpus_is_saved_in_format_3(tmp_path, alice_docs):
    from longctx.corpus import CorpusIndex, build_indexes

    pairs = [(d, t) for d, t, _ in alice_docs[:4]]
    build_indexes(pairs, "mixpr", tmp_path / "c", mappable=True, use_ray=False)
    manifest = json.loads((tmp_path / "c" / "indexes" / "mixpr" / "manifest.json").read_text())
    assert manifest["format_version"] == 3
    one = MixPRIndex.from_texts([t for _, t in pairs], ids=[d for d, _ in pairs])
    with CorpusIndex.from_corpus(tmp_path / "c") as corpus:
        assert corpus.index.search(QUERIES[0], k=3).hits == one.search(QUERIES[0], k=3).hits


def test_each_manifest_is_read_once_per_load(tmp_path, monkeypatch):
    """A shard's load opens its folder once and gives it to the loader (it read the manifest
    three times: a format hint, the old-format check, the folder), and a MixPRIndex load reads
    its manifest once (twice before): code-health review of issue 46."""
    import builtins
    import io
    import os

    from tests.test_mixpr_corpus import POOL

    ShardedMixPRIndex.from_texts(POOL[:4], ids=list("abcd"), shards=2).save(tmp_path / "s")
    MixPRIndex.from_texts(POOL[:4]).save(tmp_path / "one")
    reads = []

    def counting(real):
        def opener(p, *a, **k):
            if isinstance(p, (str, os.PathLike)) and os.fspath(p).endswith("manifest.json"):
                reads.append(os.fspath(p))
            return real(p, *a, **k)

        return opener

    monkeypatch.setattr(os, "open", counting(os.open))
    monkeypatch.setattr(builtins, "open", counting(builtins.open))
    monkeypatch.setattr(io, "open", counting(io.open))
    MixPRIndex.load(tmp_path / "one")
    assert len(reads) == 1
    reads.clear()
    back = ShardedMixPRIndex.load(tmp_path / "s", use_ray=False)
    assert len(reads) == 2 == back.n_shards
