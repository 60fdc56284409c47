"""A sharded MixPR index on a local Ray (2 CPUs, started once for the module): one actor per
shard, searches equal to one MixPRIndex, inserts / deletes through the actors equal to a fresh
build, a killed actor restarted from storage, a shard that cannot be loaded named. Few and small
tests: Ray's start-up is slow; the reductions themselves are tested without Ray in
tests/test_mixpr_shards.py."""

from __future__ import annotations

import os

import pytest

ray = pytest.importorskip("ray")

from longctx.corpus import CorpusIndex, build_indexes  # noqa: E402
from longctx.corpus.shards.index import ShardedMixPRIndex  # noqa: E402
from longctx.io import sample_text  # noqa: E402
from longctx.mixpr import MixPRIndex  # noqa: E402
from longctx.mixpr.seeds import Seed  # noqa: E402
from longctx.persist import PersistError  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.test_mixpr_shards import QUERIES, same_results  # noqa: E402
from tests.test_mixpr_shards_explain import same_explanations  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs) for the module; workers import ``longctx`` through PYTHONPATH."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), old) if p)
    if ray.is_initialized():  # one left by another module (or started by a library call)
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="module")
def docs():
    t = sample_text("alice")
    return [(f"ch{i}", t[i * 8000 : (i + 1) * 8000], {"n": i}) for i in range(8)]


def one_index(docs):
    return MixPRIndex.from_texts(
        [t for _, t, _ in docs], ids=[d for d, _, _ in docs], metadatas=[m for _, _, m in docs]
    )


def test_corpus_of_four_shards_built_and_searched_on_ray(local_ray, tmp_path, docs):
    pairs = [(d, t) for d, t, _ in docs]
    r = build_indexes(pairs, "mixpr", tmp_path / "c", shards=4, workers=2, progress=False)
    assert r.backend == "ray-local" and r.workers == 2 and len(r.built) == 8
    with CorpusIndex.from_corpus(tmp_path / "c") as corpus:  # Ray: one actor per shard
        index = corpus.index
        assert index.backend == "ray-local" and len(set(index._backend.pids().values())) == 4
        one = MixPRIndex.from_texts([t for _, t in pairs], ids=[d for d, _ in pairs])
        same_results(one, index, queries=QUERIES[:3], filters_list=(None,))
        # another retriever's hits seed the walk through the actors too (issue 45)
        seeds = [Seed("ch2", 100, 900, 1.0), Seed("ch5", score=0.5)]
        same_results(one, index, queries=QUERIES[:2], filters_list=(None,), seeds=seeds)
        # keep_firsts too: its block calls (longctx.corpus.shards.fused) run in the actors
        for q in QUERIES[:3]:
            a = one.search(q, k=5, seeds=seeds, keep_firsts=True)
            b = corpus.search(q, k=5, seeds=seeds, keep_firsts=True)
            assert [(h.source, h.start) for h in a.hits] == [(h.source, h.start) for h in b.hits]
            assert a.info["ranking"] == b.info["ranking"]
        # explanations gathered through the actors: one index's
        walked = same_explanations(one, index, QUERIES[:2], ({"k": 5},), filters_list=(None,))
        assert walked >= 5


def test_changes_through_actors_and_a_killed_actor(local_ray, tmp_path, docs):
    sharded = ShardedMixPRIndex.from_texts(
        [t for _, t, _ in docs[:6]],
        ids=[d for d, _, _ in docs[:6]],
        metadatas=[m for _, _, m in docs[:6]],
        shards=3,
        use_ray=True,
    )
    with sharded:
        assert sharded.backend == "ray-local"
        same_results(one_index(docs[:6]), sharded, queries=QUERIES[:2])
        sharded.insert([docs[6][1], docs[7][1]], ids=["ch6", "ch7"], metadatas=[{"n": 6}, {"n": 7}])
        sharded.delete(["ch1"])
        sharded.update([docs[2][1][:3000]], ids=["ch2"], metadatas=[{"n": 2}])
        now = [docs[0], (docs[2][0], docs[2][1][:3000], {"n": 2}), *docs[3:]]
        fresh = one_index(now)
        same_results(fresh, sharded, queries=QUERIES[:2])
        # stored, a killed actor is restarted from storage and the query tried again
        sharded.save(tmp_path / "ix")
        victim = sharded.shard_of("ch6")
        ray.kill(sharded._backend.actors[victim])
        r = sharded.search(QUERIES[0], k=5, filters={"n": {"$gte": 3}})
        want = fresh.search(QUERIES[0], k=5, filters={"n": {"$gte": 3}})
        assert [(h.source, h.start) for h in r.hits] == [(h.source, h.start) for h in want.hits]
        same_results(fresh, sharded, queries=QUERIES[:1], filters_list=(None,))
        # an actor that dies with changes not stored cannot be restarted: a clear error
        sharded.insert([docs[1][1]], ids=["ch1"])
        victim = sharded.shard_of("ch1")
        ray.kill(sharded._backend.actors[victim])
        with pytest.raises(RuntimeError, match=f"shard {victim} .*save"):
            sharded.search(QUERIES[0], k=5)


def test_a_shard_that_cannot_be_loaded_is_named(local_ray, tmp_path, docs):
    sharded = ShardedMixPRIndex.from_texts([t for _, t, _ in docs[:4]], shards=2)
    sharded.save(tmp_path / "ix")
    (tmp_path / "ix" / "shard-1" / "documents.json").write_text("[1, 2", "utf-8")
    with pytest.raises(PersistError, match=r"shard 1 .*documents\.json"):
        ShardedMixPRIndex.load(tmp_path / "ix", use_ray=True)


def test_more_shards_than_cpus_load_on_a_cluster_without_waiting(local_ray, tmp_path, docs):
    # joining the module's 2-CPU Ray as a cluster: 4 actors asking 1 CPU each waited for ever
    import threading

    sharded = ShardedMixPRIndex.from_texts(
        [t for _, t, _ in docs], ids=[d for d, _, _ in docs], shards=4
    )
    sharded.save(tmp_path / "ix")
    got: dict = {}

    def load():
        try:
            got["index"] = ShardedMixPRIndex.load(tmp_path / "ix", ray_address="auto")
        except BaseException as exc:  # noqa: BLE001 - reported below
            got["error"] = exc

    t = threading.Thread(target=load, daemon=True)
    t.start()
    t.join(timeout=240)
    assert not t.is_alive(), "the load of 4 shards on 2 CPUs did not finish within 240 s"
    assert "error" not in got, got.get("error")
    with got["index"] as index:
        assert index.backend == "ray-cluster" and index._backend.cpus_per_shard == 0.5
        assert len(set(index._backend.pids().values())) == 4
        one = MixPRIndex.from_texts([t for _, t, _ in docs], ids=[d for d, _, _ in docs])
        same_results(one, index, queries=QUERIES[:2], filters_list=(None,))
    with pytest.raises(ValueError) as err:  # asked for more than the nodes have: one line
        ShardedMixPRIndex.load(tmp_path / "ix", ray_address="auto", cpus_per_shard=1)
    msg = str(err.value)
    assert "\n" not in msg and "cpus_per_shard=1 does not fit" in msg and "<= 0.5" in msg


def test_bordered_walk_explained_through_actors_as_sequential_shards(local_ray, docs):
    """``personalization="query"`` (the paper preset's bordered walk) explained on Ray: each
    actor sends its hits' facts and its part of the inflow and of the query nodes' columns
    (``longctx.corpus.shards.explain``); the parts, terms and seeds equal those of the same
    shards searched in this process within 1e-9, for a query of one and of two query nodes."""
    from tests.test_explain_bordered import QUERY

    texts, ids = [t for _, t, _ in docs], [d for d, _, _ in docs]
    seq = ShardedMixPRIndex.from_texts(texts, ids=ids, shards=3, personalization="query")
    on_ray = ShardedMixPRIndex.from_texts(
        texts, ids=ids, shards=3, personalization="query", use_ray=True
    )
    with seq, on_ray:
        assert on_ray.backend == "ray-local" and seq.backend != "ray-local"
        queries = [*QUERIES[:2], QUERY]
        walked = same_explanations(seq, on_ray, queries, ({"k": 5},), filters_list=(None,))
        assert walked >= 5
        e = on_ray.search(QUERY, k=3, mode="local", explain=True).hits[0].explanation
        assert e["parts"]["question"] > 0 and "restart_lexical" not in e["parts"]
