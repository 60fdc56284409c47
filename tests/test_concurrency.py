"""Searches and saves beside writes (issue 48, issue 44 item 1): after any interleaving the index
equals a fresh build of its documents, and every folder a save leaves loads and equals one
version of the index.

The race of issue 48: an insert counted its rows over the term table's vocabulary as the table
kept its appended rows (:meth:`~longctx.mixpr.tfidf.TermTable.rows_for`), a search then gave the
table its canonical form (sorted columns), and the insert stacked its rows onto the canonical
counts with the appended-rows column numbers: every later state held terms under other terms'
columns."""

from __future__ import annotations

import random

import numpy as np
import pytest

from longctx.mixpr import MixPRIndex
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.tfidf import TermTable, TfidfSettings
from tests._concurrency import (
    QUERIES,
    Churn,
    assert_equals_fresh_build,
    base_docs,
    churn_doc,
    run_beside,
    run_counted,
    same_table,
    saves_beside_writes,
)


def _settings():
    return TfidfSettings(MixPRConfig.from_preset("default"))


A = ["the zebra ran far", "a quick brown fox"]
B = ["apple banana cherry"]
C = ["yellow apple mango zebra"]


@pytest.mark.parametrize("at", [None, 1])
def test_rows_counted_before_a_search_materializes_the_table_land_in_their_columns(at):
    # the interleaving of issue 48, made deterministic: rows_for on the table whose appended
    # rows are kept apart, then a search's first use of its counts, then insert_rows
    s = _settings()
    t2 = TermTable.build(s, A).add(B)
    vocab, rows = t2.rows_for(C)
    t2.counts  # noqa: B018 (what a search does: the canonical form)
    t3 = t2.insert_rows(vocab, rows, at=at)
    want = A + B + C if at is None else A[:1] + C + A[1:] + B
    same_table(t3, TermTable.build(s, want))


def test_an_append_keeps_its_view_when_a_search_materializes_the_table_meanwhile(monkeypatch):
    # the table is read once in insert_rows: a search materializing it between the check of the
    # vocabulary and the append does not mix the two forms
    import longctx.mixpr.tfidf as tfidf

    s = _settings()
    t2 = TermTable.build(s, A).add(B)
    vocab, rows = t2.rows_for(C)
    real = tfidf._appended

    def appended(table, *args):
        table.counts  # noqa: B018 (a search, just before the append)
        return real(table, *args)

    monkeypatch.setattr(tfidf, "_appended", appended)
    same_table(t2.insert_rows(vocab, rows), TermTable.build(s, A + B + C))


def test_a_vocabulary_is_read_under_the_lock_of_its_shared_new_terms():
    # a search materializing a table reads its vocabulary's new terms while a write may extend
    # the same shared dict for a later table: the read waits for the write's lock
    import threading

    s = _settings()
    v2 = TermTable.build(s, A).add(B)._vocab()
    out = []
    with v2.lock:
        t = threading.Thread(target=lambda: out.append(v2.as_dict()))
        t.start()
        t.join(0.2)
        assert t.is_alive() and not out
    t.join()
    v3, _ = v2.extended({"newterm": 0})
    assert "newterm" not in out[0] and "newterm" not in v2.as_dict()
    assert "newterm" in v3.as_dict() and len(v3.as_dict()) == len(out[0]) + 1


def _index_churn(index: MixPRIndex, seed: int = 1) -> Churn:
    return Churn(
        lambda docs: index.insert([t for _, t in docs], ids=[d for d, _ in docs]),
        index.delete,
        seed=seed,
    )


def test_searches_beside_writes_leave_the_index_equal_to_a_fresh_build():
    docs = base_docs()
    index = MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs])
    churn = _index_churn(index)
    rngs = [random.Random(i) for i in range(4)]
    out = run_beside(
        churn.step, lambda i: index.search(rngs[i].choice(QUERIES), k=5), seconds=2.5,
        min_writes=40, min_searches=40,
    )  # fmt: skip
    assert not out["errors"], out["errors"][:3]
    assert out["writes"] >= 40 and out["searches"] >= 40
    assert_equals_fresh_build(index)
    # and the sequential replay of the same writes: the same index, bit for bit
    again = MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs])
    churn.replay(lambda d: again.insert([t for _, t in d], ids=[i for i, _ in d]), again.delete)
    assert again.doc_ids == index.doc_ids
    for q in QUERIES:
        assert np.array_equal(again.score(q)[0], index.score(q)[0])


@pytest.mark.parametrize(
    "mappable, mmap",
    [(True, False), (True, True), (False, False)],
    ids=["format3-read", "format3-mapped", "format2"],
)
def test_core_saves_beside_writes_each_load_as_one_version(tmp_path, mappable, mmap):
    docs = base_docs()
    index = MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs])
    target = tmp_path / "idx"
    loaded = saves_beside_writes(
        _index_churn(index, seed=2),
        lambda: index.doc_ids,
        lambda: index.save(target, mappable=mappable),
        lambda: MixPRIndex.load(target, mmap=mmap) if target.exists() else None,
        lambda got: got.doc_ids,
        lambda got: got,
    )
    for got in loaded[:: max(1, len(loaded) // 4)]:
        assert_equals_fresh_build(got)


def test_a_write_publishes_one_state():
    # every attribute a reader takes comes from the state of one assignment
    docs = base_docs(4)
    index = MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs])
    before = index._state
    index.insert([churn_doc(random.Random(0), "z")], ids=["z"])
    after = index._state
    assert after is not before and before.doc_ids == tuple(d for d, _ in docs)
    assert after.doc_ids[-1] == "z" and after.n_units > before.n_units


# -- the sharded index ------------------------------------------------------------------------
def _sharded(docs):
    from longctx.corpus.shards import ShardedMixPRIndex

    return ShardedMixPRIndex.from_texts(
        [t for _, t in docs], ids=[d for d, _ in docs], shards=2, use_ray=False
    )


def _sharded_churn(index, seed):
    return Churn(
        lambda d: index.insert([t for _, t in d], ids=[i for i, _ in d]), index.delete, seed
    )


def test_sharded_searches_beside_writes_never_fail_and_leave_it_equal_to_its_writes_replayed():
    # before: a search met a shard whose block a change had dropped ('NoneType' object has no
    # attribute ...), every search failed. 20 rounds of writes (60 inserts, 20 deletes), each
    # met by searches (run_counted): 4-53 s before, when it looped for at least 2.5 s until 30
    # rounds and 10 searches were done on a busy machine
    docs = base_docs()
    index = _sharded(docs)
    churn = _sharded_churn(index, 1)
    out = run_counted(churn.step, lambda i: index.search(QUERIES[i], k=5), writes=20)
    assert not out["errors"], out["errors"][:3]
    assert not out["timed_out"], f"20 rounds of writes took over 60 s: {out}"
    assert out["writes"] == 20 and out["searches"] >= 20  # each round met by a search
    again = _sharded(docs)
    churn.replay(lambda d: again.insert([t for _, t in d], ids=[i for i, _ in d]), again.delete)
    single = MixPRIndex.from_texts([index.text(d) for d in index.doc_ids], ids=index.doc_ids)
    assert again.doc_ids == index.doc_ids
    for q in QUERIES:
        got = index.score(q)[0]
        assert np.array_equal(got, again.score(q)[0])
        np.testing.assert_allclose(got, single.score(q)[0], rtol=0, atol=1e-12)


def test_sharded_saves_beside_writes_each_load_as_one_version(tmp_path):
    from longctx.corpus.shards import ShardedMixPRIndex

    index = _sharded(base_docs())
    target = tmp_path / "sh"
    loaded = saves_beside_writes(
        _sharded_churn(index, 2),
        lambda: index.doc_ids,
        lambda: index.save(target),
        lambda: (
            ShardedMixPRIndex.load(target, use_ray=False)
            if (target / "shards.json").exists()
            else None
        ),
        lambda got: got.doc_ids,
    )
    got = loaded[-1]
    single = MixPRIndex.from_texts([got.text(d) for d in got.doc_ids], ids=got.doc_ids)
    for q in QUERIES:
        np.testing.assert_allclose(got.score(q)[0], single.score(q)[0], rtol=0, atol=1e-12)


def test_run_counted_fails_a_write_that_never_returns_at_its_deadline():
    """A deadlock (the defect these tests catch) fails at the deadline plus one grace for all
    threads, and its threads, daemons, cannot keep the test process from exiting (review of
    session 20: each thread had 30 s more, and they were not daemons)."""
    import threading
    import time

    stuck = threading.Event()  # never set

    def write():
        stuck.wait()

    def search(i):
        time.sleep(0.001)

    t0 = time.monotonic()
    out = run_counted(write, search, writes=3, n_search=2, deadline=0.5, grace=0.5)
    assert out["timed_out"] is True
    assert out["writes"] == 0
    assert time.monotonic() - t0 < 5.0
    assert all(th.daemon for th in threading.enumerate() if th.name.endswith("(writer)"))
