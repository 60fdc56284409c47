"""The text ids of :mod:`longctx.mixpr.text_ids`: ``unique_texts=True`` compares ids made once
per index state instead of reading each reached unit's text, with results bit for bit those of
the text-based selection it replaced (copied below as it was, ``_old_*``): over duplicates,
near-duplicates that differ only by what the normalisation removes (whitespace) and ones that
differ by more (case, punctuation), budgets from 1 to the total, ``k``, filters, after inserts,
updates and deletes, over a saved index (mapped, read, and an older folder without the ids),
a one-index corpus (:class:`~longctx.corpus.load.CorpusIndex`) and the shards of a
:class:`~longctx.corpus.shards.index.ShardedMixPRIndex`."""

from __future__ import annotations

import json
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import longctx.mixpr.hits as hits
from longctx.mixpr import MixPRIndex
from longctx.mixpr.text_ids import check_text_ids, kept_ids, unit_text_ids
from longctx.persist import PersistError
from longctx.persist.npy import mapped_base
from longctx.selection import (
    BudgetTooSmallError,
    SparseScores,
    _check_budget,
    _dense_blocks,
    _sparse_blocks,
    select_distinct,
    select_top,
)
from tests._persist_helpers import restamp


# -- the text-based selection before the ids (longctx/selection.py, longctx/mixpr/hits.py) ----
def _old_select_distinct(scores, key, *, k=None, token_budget=None, token_counts=None):
    if (k is None) == (token_budget is None):
        raise ValueError("give exactly one of k and token_budget")
    if isinstance(scores, SparseScores) and k is None:
        if scores.in_order():  # the order a block at a time
            token_budget, token_counts = _check_budget((scores.n,), token_budget, token_counts)
            return _old_distinct_budget(_sparse_blocks(scores), key, token_budget, token_counts)
        scores = scores.dense()
    if not isinstance(scores, SparseScores):
        scores = np.asarray(scores, dtype=np.float64)
    n = len(scores)
    if k is not None:
        m = k
        while True:
            cand = select_top(scores, k=min(m, n)) if n else np.zeros(0, np.int64)
            vals = scores.at(cand) if isinstance(scores, SparseScores) else scores[cand]
            order = cand[np.argsort(-vals, kind="stable")]  # best first, ties earliest
            seen, kept = set(), []
            for i in order.tolist():
                kk = key(i)
                if kk not in seen:
                    seen.add(kk)
                    kept.append(i)
                    if len(kept) == k:
                        break
            if len(kept) == k or m >= n:
                return np.sort(np.asarray(kept, dtype=np.int64))
            m *= 2
    token_budget, token_counts = _check_budget(scores.shape, token_budget, token_counts)
    blocks = _dense_blocks(scores, token_counts, token_budget, None, grow=4)
    return _old_distinct_budget(blocks, key, token_budget, token_counts)


def _old_distinct_budget(blocks, key, token_budget, token_counts):
    smallest = int(token_counts.min()) if len(token_counts) else 0
    seen: set = set()
    chosen: list = []
    used = 0
    passed: list = []

    def read_passed():
        for part in passed:
            seen.update(key(i) for i in part.tolist())
        passed.clear()

    for block in blocks:
        counts = token_counts[block]
        done = np.zeros(len(block), bool)
        start = 0
        for p in np.flatnonzero(counts <= token_budget - used).tolist():
            if used + smallest > token_budget:
                break
            c = int(counts[p])
            if used + c > token_budget:
                continue
            i = int(block[p])
            kk = key(i)
            done[p] = True
            if kk in seen:
                continue
            passed.append(block[start:p][~done[start:p]])
            start = p + 1
            read_passed()
            if kk in seen:
                continue
            seen.add(kk)
            chosen.append(i)
            used += c
        passed.append(block[start:][~done[start:]])
        if used + smallest > token_budget:
            break
    return np.sort(np.asarray(chosen, dtype=np.int64))


def _old_unit_text_key(st_, allowed):
    def key(j):
        i = int(j if allowed is None else allowed[j])
        d, a, b = int(st_.unit_source[i]), int(st_.starts[i]), int(st_.ends[i])
        return " ".join(hits.text_slice(st_.texts, d, a, b).split())

    return key


@contextmanager
def _old_selection():
    """``MixPRIndex.search`` with the selection before the ids (``select_units`` itself is
    unchanged but for the key it passes)."""
    with (
        mock.patch.object(hits, "unit_text_key", _old_unit_text_key),
        mock.patch.object(hits, "select_distinct", _old_select_distinct),
    ):
        yield


# -- helpers ----------------------------------------------------------------------------------
def _reference_ids(st_) -> list[int]:
    """Each unit's first unit of the same normalised text, read from the texts."""
    first: dict = {}
    return [first.setdefault(" ".join(st_.unit_text(i).split()), i) for i in range(st_.n_units)]


def _reference_hashes(st_) -> list[int]:
    """Each unit's normalised text's ``hash()``."""
    return [hash(" ".join(st_.unit_text(i).split())) for i in range(st_.n_units)]


def _outcome(search, **kw):
    """The hits of ``search(**kw)`` as comparable tuples, or the error it raised."""
    try:
        r = search(**kw)
    except BudgetTooSmallError as exc:
        return ("too small", str(exc))
    return [(h.source, h.start, h.end, h.text, h.score, h.index) for h in r.hits], r.info


def _same_as_text_based(search, **kw):
    new = _outcome(search, unique_texts=True, **kw)
    with _old_selection():
        old = _outcome(search, unique_texts=True, **kw)
    assert new == old, kw
    return new


BASE = [
    "The ship sailed at dawn.",
    "A storm rose in the west.",
    "The captain kept the map in his sea chest.",
    "Silver walked to the inn.",
]
#: what the normalisation removes: whitespace runs, ends
SAME = [
    lambda s: s,
    lambda s: s.replace(" ", "  ", 1),
    lambda s: s.replace(" ", "\n", 1),
    lambda s: "\t" + s + " ",
]
#: what it keeps: case, punctuation
NEAR = [lambda s: s.lower(), lambda s: s[:-1] + "!", lambda s: s.upper()]

sentence = st.tuples(
    st.sampled_from(BASE), st.sampled_from(SAME + NEAR), st.sampled_from(SAME)
).map(lambda t: t[2](t[1](t[0])))
documents = st.lists(
    st.lists(sentence, min_size=1, max_size=5).map("\n\n".join), min_size=1, max_size=5
)


# -- the property -----------------------------------------------------------------------------
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    docs=documents,
    chunk=st.booleans(),
    query=st.sampled_from(["ship dawn", "storm west", "captain map chest", "Silver inn ship"]),
    data=st.data(),
)
def test_unique_texts_equal_the_text_based_selection(docs, chunk, query, data):
    groups = [{"group": "ab"[i % 2]} for i in range(len(docs))]
    index = MixPRIndex.from_texts(docs, metadatas=groups, chunk=chunk)
    st_ = index._state
    assert st_.text_ids().tolist() == _reference_ids(st_)
    total = int(np.sum(index.token_counts))
    budgets = data.draw(st.lists(st.integers(1, total), min_size=1, max_size=3), "budgets")
    for filters in (None, {"group": "a"}, {"group": "b"}):
        for budget in (*budgets, total):
            _same_as_text_based(partial(index.search, query), token_budget=budget, filters=filters)
        k = data.draw(st.integers(1, st_.n_units + 2), "k")
        _same_as_text_based(partial(index.search, query), k=k, filters=filters)


def test_select_distinct_takes_an_id_array_as_the_keys():
    scores = np.array([0.5, 0.9, 0.9, 0.1, 0.7])
    ids = np.array([0, 1, 1, 3, 0])
    assert select_distinct(scores, ids, k=3).tolist() == [1, 3, 4]
    assert (
        select_distinct(scores, ids, k=3).tolist()
        == select_distinct(scores, ids.tolist().__getitem__, k=3).tolist()
    )
    counts = np.array([2, 3, 3, 1, 2])
    got = select_distinct(scores, ids, token_budget=6, token_counts=counts)
    assert got.tolist() == [1, 3, 4]
    sparse = SparseScores(5, [1, 2, 4], [0.9, 0.9, 0.7])
    assert select_distinct(sparse, ids, token_budget=6, token_counts=counts).tolist() == [1, 3, 4]
    with pytest.raises(ValueError, match=r"key must be a callable or an \(5,\) int array"):
        select_distinct(scores, ids[:4], k=2)
    with pytest.raises(ValueError, match="key must be"):
        select_distinct(scores, ids.astype(float), k=2)


# -- the ids through the index's life ---------------------------------------------------------
BOOK = (
    "TREASURE ISLAND\n\nSquire Trelawney asked me to write down the whole story.\n\n"
    "TREASURE  ISLAND\n\nThe old sea dog came to the Admiral Benbow inn.\n\n"
    "Treasure Island\n\nLong John Silver kept the Spy-glass tavern."
)
QUERIES = ["TREASURE ISLAND", "sea dog inn", "Silver tavern island"]


def _all_same(index):
    st_ = index._state
    assert st_.text_ids().tolist() == _reference_ids(st_)
    for q in QUERIES:
        total = int(np.sum(index.token_counts))
        for budget in (1, 12, 30, total):
            _same_as_text_based(partial(index.search, q), token_budget=budget)
        _same_as_text_based(partial(index.search, q), k=2)


def test_insert_update_delete_keep_the_ids_right():
    index = MixPRIndex.from_texts([BOOK, "Jim Hawkins found the map."], ids=["book", "jim"])
    before = index._state.text_ids().tolist()
    _all_same(index)
    # a duplicate of a unit (up to whitespace) inserted after the build: the ids made at the
    # insert from the old ones, the new units' texts and the candidates' first units
    index.insert(["TREASURE\tISLAND\n\nA parrot cried pieces of eight."], ids=["dup"])
    st_ = index._state
    assert st_._ids is not None and st_._ids[1] is not None
    ids = st_.text_ids()
    dup = int(np.flatnonzero(st_.unit_source == 2)[0])
    assert ids[dup] == 0 and st_.unit_text(dup) == "TREASURE\tISLAND"
    assert st_.text_ids() is ids  # once per state
    _all_same(index)
    one = index.search("TREASURE ISLAND", k=3, unique_texts=True)
    assert sum(" ".join(h.text.split()) == "TREASURE ISLAND" for h in one.hits) == 1
    index.update(["Jim Hawkins found the map.\n\nTREASURE ISLAND"], ids=["jim"])
    _all_same(index)
    assert index._state._ids is not None
    # deletes renumber the ids made (no text read), the first kept unit of each text
    index.delete(["book"])
    st_ = index._state
    assert st_._ids is not None and st_._ids[0].tolist() == _reference_ids(st_)
    assert st_._ids[1] is not None
    _all_same(index)
    index.delete(["dup", "jim"])
    assert index._state.text_ids().tolist() == []
    # the duplicate inserted, then deleted again: the ids of the build
    index = MixPRIndex.from_texts([BOOK, "Jim Hawkins found the map."], ids=["book", "jim"])
    index.search("TREASURE ISLAND", k=2, unique_texts=True)
    index.insert(["TREASURE ISLAND"], ids=["dup"])
    index.search("TREASURE ISLAND", k=2, unique_texts=True)
    index.delete(["dup"])
    assert index._state._ids[0].tolist() == before
    _all_same(index)


@settings(max_examples=25, deadline=None)
@given(docs=documents, more=documents, data=st.data())
def test_changes_keep_the_ids_those_of_a_fresh_pass(docs, more, data):
    """Inserts, updates and deletes in any order: the ids each change makes from the old
    state's equal one pass over the new state's texts, with hash collisions forced too."""
    index = MixPRIndex.from_texts(docs)
    index._state.text_ids()
    collide = data.draw(st.booleans(), "collide")
    if collide:  # every text one hash: candidates by text alone
        st0 = index._state
        zeros = np.zeros_like(st0._ids[1])
        zeros.setflags(write=False)
        st0._ids = (st0._ids[0], zeros, None)
        hashes = mock.patch("longctx.mixpr.text_ids.hash", lambda t: 0, create=True)
    else:
        hashes = nullcontext()
    with hashes:
        for j, text in enumerate(more):
            ids = list(index.doc_ids)
            op = data.draw(st.sampled_from(["insert", "update", "delete"]), "op")
            if op == "update" or (op == "delete" and len(ids) > 1):
                target = data.draw(st.sampled_from(ids), "id")
                if op == "update":
                    index.update([text], ids=[target])
                else:
                    index.delete([target])
            else:
                index.insert([text], ids=[f"new{j}"])
            st_ = index._state
            assert st_._ids is not None  # made by the change, not by a pass
            assert st_._ids[0].tolist() == _reference_ids(st_)
            hashes = [0] * st_.n_units if collide else _reference_hashes(st_)
            assert st_._ids[1].tolist() == hashes
    _same_as_text_based(partial(index.search, "ship storm"), token_budget=20)


def test_queries_during_changes_keep_the_ids_those_of_a_fresh_pass():
    """Threads asking ``unique_texts`` queries while another inserts, updates and deletes:
    every query answers, and the ids of the last state equal a fresh pass (ids and hashes are
    read together: a change never pairs one state's ids with another's hashes)."""
    import threading

    index = MixPRIndex.from_texts([BOOK, "Jim Hawkins found the map."], ids=["book", "jim"])
    stop, errors = threading.Event(), []

    def ask():
        try:
            while not stop.is_set():
                for q in QUERIES:
                    index.search(q, token_budget=12, unique_texts=True)
                    index.search(q, k=2, unique_texts=True)
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    readers = [threading.Thread(target=ask) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for j in range(12):
            index.insert([f"TREASURE ISLAND\n\nChapter {j % 3} begins."], ids=[f"n{j}"])
            if j % 3 == 1:
                index.update([f"Treasure  Island\n\nChapter {j % 3} begins."], ids=[f"n{j}"])
            if j % 4 == 3:
                index.delete([f"n{j - 1}"])
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=60)
    assert not errors, errors
    assert not any(t.is_alive() for t in readers)
    st_ = index._state
    assert st_.text_ids().tolist() == _reference_ids(st_)
    assert st_._ids[1].tolist() == _reference_hashes(st_)
    _all_same(index)


def test_the_ids_are_made_under_a_lock_of_their_own():
    """Making the ids never waits for the lock of the graph, scorer and ranker (held here by
    this thread: a pass under it would never end)."""
    import threading

    st_ = MixPRIndex.from_texts([BOOK], ids=["book"])._state
    got = []
    with st_.lock:
        t = threading.Thread(target=lambda: got.append(st_.text_ids().tolist()))
        t.start()
        t.join(timeout=30)
        alive = t.is_alive()
    t.join()
    assert not alive and got == [_reference_ids(st_)]


def test_kept_ids_renumber_to_the_first_kept_unit():
    ids = np.array([0, 1, 0, 1, 4, 0], dtype=np.int32)
    keep = np.array([False, True, True, True, True, True])
    out = kept_ids(ids, keep)
    assert out.tolist() == [0, 1, 0, 3, 1] and out.dtype == np.int32 and not out.flags.writeable


def test_unit_text_ids_group_by_normalised_text():
    texts = ["a  b\nc d", "a b c", "x"]
    ids, hashes = unit_text_ids(texts, [0, 0, 1, 2], [0, 7, 0, 0], [6, 8, 5, 1])
    assert ids.tolist() == [0, 1, 0, 3] and ids.dtype == np.int32
    assert hashes.tolist() == [hash("a b c"), hash("d"), hash("a b c"), hash("x")]
    assert not ids.flags.writeable and not hashes.flags.writeable
    with mock.patch("longctx.mixpr.text_ids.hash", lambda t: 0, create=True):  # all collide
        again, _ = unit_text_ids(texts, [0, 0, 1, 2, 2], [0, 7, 0, 0, 0], [6, 8, 5, 1, 1])
    assert again.tolist() == [0, 1, 0, 3, 3]


def _saved(tmp_path, *, made: bool):
    """BOOK and its title saved (format 3), with the text ids made first when ``made``."""
    index = MixPRIndex.from_texts([BOOK, "TREASURE ISLAND"], ids=["book", "title"])
    if made:
        index._state.text_ids()
    d = tmp_path / "ix"
    index.save(d)
    return index, d


def _files(d) -> list[str]:
    return json.loads((d / "manifest.json").read_text())["files"]


@pytest.mark.parametrize("mmap", [True, False], ids=["mapped", "read"])
def test_saved_ids_are_loaded_and_equal(tmp_path, mmap):
    index, d = _saved(tmp_path, made=True)
    assert "text_ids.npy" in _files(d)
    back = MixPRIndex.load(d, mmap=mmap)
    held = back._state._ids
    assert held is not None and held[1] is None  # read, not made (hashes are never saved)
    assert (mapped_base(held[0]) is not None) == mmap  # a mapped load maps them
    assert (held[2] is not None) == mmap  # checked against the texts at the first use
    assert held[0].tolist() == index._state.text_ids().tolist()
    for q in QUERIES:
        assert _outcome(back.search, query=q, k=3, unique_texts=True) == _outcome(
            index.search, query=q, k=3, unique_texts=True
        )
    assert back._state._ids[2] is None  # checked once
    _all_same(back)


def test_a_save_never_makes_the_ids(tmp_path, monkeypatch):
    """A state without ids saves none and never makes them (the pass is a query's, when one
    asks); a state holding them saves them."""
    import longctx.mixpr.state as state_mod

    def refuse(*a, **kw):
        raise AssertionError("the save made the text ids")

    with monkeypatch.context() as m:
        m.setattr(state_mod, "unit_text_ids", refuse)
        index, d = _saved(tmp_path, made=False)
        assert index._state._ids is None
    assert "text_ids.npy" not in _files(d) and not (d / "text_ids.npy").exists()
    assert MixPRIndex.load(d)._state._ids is None
    index._state.text_ids()
    index.save(d)
    assert "text_ids.npy" in _files(d)
    assert np.load(d / "text_ids.npy").tolist() == index._state.text_ids().tolist()


@pytest.mark.parametrize("mmap", [True, False], ids=["mapped", "read"])
def test_a_folder_saved_without_the_ids_loads_and_answers_the_same(tmp_path, mmap):
    index, d = _saved(tmp_path, made=False)  # as saved before the ids, or never asked for
    assert "text_ids.npy" not in _files(d)
    back = MixPRIndex.load(d, mmap=mmap)
    assert back._state._ids is None
    for q in QUERIES:
        assert _outcome(back.search, query=q, token_budget=20, unique_texts=True) == _outcome(
            index.search, query=q, token_budget=20, unique_texts=True
        )
    assert back._state._ids[0].tolist() == index._state.text_ids().tolist()
    # format 2 holds no ids: made when first asked
    index.save(tmp_path / "f2", mappable=False)
    old = MixPRIndex.load(tmp_path / "f2")
    assert old._state._ids is None
    _all_same(old)


@pytest.mark.parametrize("mmap", [True, False], ids=["mapped", "read"])
def test_changes_after_a_load_keep_the_ids_those_of_a_fresh_pass(tmp_path, mmap):
    """A load holds the saved ids without their hashes: a delete renumbers them, an insert or
    update drops them and the next ``unique_texts`` query makes them (with their hashes, so
    the changes after it splice them)."""
    _, d = _saved(tmp_path, made=True)
    back = MixPRIndex.load(d, mmap=mmap)
    back.delete(["title"])
    st_ = back._state
    if mmap:  # a mapped load's ids, not yet checked: dropped, as an insert drops them
        assert st_._ids is None
    else:
        assert st_._ids is not None and st_._ids[0].tolist() == _reference_ids(st_)
    back.insert(["TREASURE\nISLAND\n\nA parrot."], ids=["dup"])
    assert back._state._ids is None  # dropped: no hashes to find the old units by
    _all_same(back)  # made here, hashes too
    back.update(
        ["Jim found the map.\n\nThe old sea dog came to the Admiral Benbow inn."], ids=["dup"]
    )
    st_ = back._state
    assert st_._ids is not None and st_._ids[1] is not None  # spliced
    assert st_._ids[0].tolist() == _reference_ids(st_)
    assert st_._ids[1].tolist() == _reference_hashes(st_)
    back.delete(["book"])
    st_ = back._state
    assert st_._ids[0].tolist() == _reference_ids(st_)
    _all_same(back)
    back2 = MixPRIndex.load(d, mmap=mmap)
    back2.update(["TREASURE ISLAND"], ids=["book"])
    assert back2._state._ids is None
    _all_same(back2)


@pytest.mark.parametrize(
    ("poke", "match"),
    [
        (lambda a: a[:-1], "one text id per unit expected"),
        (lambda a: np.where(np.arange(len(a)) == 1, -1, a), r"outside \[0, its unit\]"),
        (lambda a: np.where(np.arange(len(a)) == 0, 3, a), r"outside \[0, its unit\]"),
        (lambda a: np.where(np.arange(len(a)) == 4, 2, a), "not the first unit of its text"),
        (lambda a: a.astype(np.float64), "holds dtype float64"),
        (lambda a: a.astype(np.int16), "holds dtype int16"),
    ],
)
def test_damaged_saved_ids_are_refused_at_load(tmp_path, poke, match):
    index = MixPRIndex.from_texts([BOOK], ids=["book"])
    ids = index._state.text_ids()
    assert ids[1] == 1 and ids[2] == 0 and ids[4] == 4  # what the pokes assume
    d = tmp_path / "ix"
    index.save(d)
    np.save(d / "text_ids.npy", poke(np.load(d / "text_ids.npy")))
    restamp(d)
    for mmap in (True, False):
        with pytest.raises(PersistError, match=match):
            MixPRIndex.load(d, mmap=mmap)


def _forge(d, unit: int, group: int) -> None:
    """Give ``unit`` the text id ``group`` in the saved ids (a well-formed array)."""
    ids = np.load(d / "text_ids.npy")
    ids[unit] = group
    np.save(d / "text_ids.npy", ids)
    restamp(d)


@pytest.mark.parametrize(
    ("unit", "group"),
    [(1, 0), (4, 0), (5, 3)],
    ids=["other-text", "other-case", "last-unit"],
)
def test_forged_well_formed_ids_are_refused(tmp_path, monkeypatch, unit, group):
    """Ids that pass the structural check but give two different texts one id (which made a
    ``unique_texts`` search drop a distinct text) are refused: at the load with
    ``mmap=False``, at their first use by a query with ``mmap=True``, once (later uses are
    refused without reading a text again); a save leaves them out and a delete drops them, as
    an insert does."""
    index = MixPRIndex.from_texts([BOOK], ids=["book"])
    ids = index._state.text_ids()
    assert ids[unit] == unit and ids[group] == group  # a group's first unit, each
    d = tmp_path / "ix"
    index.save(d)
    _forge(d, unit, group)
    check_text_ids(np.load(d / "text_ids.npy"), len(ids), "well formed")  # passes
    named = r"text_ids\.npy'?: unit \d+ is given the text id of unit \d+, whose text differs"
    with pytest.raises(PersistError, match=named):
        MixPRIndex.load(d, mmap=False)
    back = MixPRIndex.load(d, mmap=True)  # the open stays cheap: no text read for the ids
    text = index._state.unit_text(unit)
    plain = back.search(text, k=3)  # the ids are not used: answers
    assert plain.hits == index.search(text, k=3).hits
    # a save writes only checked ids (these are left out: a load of it makes its own)
    back.save(tmp_path / "again")
    assert not (tmp_path / "again" / "text_ids.npy").exists()
    again = MixPRIndex.load(tmp_path / "again", mmap=True)
    assert (
        again.search(text, k=3, unique_texts=True).hits
        == index.search(text, k=3, unique_texts=True).hits
    )
    import longctx.mixpr.state as state_mod

    checks = []
    real = state_mod.verify_text_ids
    monkeypatch.setattr(
        state_mod, "verify_text_ids", lambda *a, **kw: (checks.append(1), real(*a, **kw))
    )
    for use in (
        lambda: back.search(text, k=3, unique_texts=True),
        lambda: back.search(text, token_budget=30, unique_texts=True),
    ):
        with pytest.raises(PersistError, match=named):
            use()
    assert len(checks) == 1  # refused once by the check, then at once: no text read again
    back.delete(["book"])  # the unchecked ids are dropped, as an insert drops them
    assert back._state._ids is None and back._state.n_units == 0


def test_verify_text_ids_reads_only_the_repeated_units(monkeypatch):
    """The check reads the texts of the units given another's id and of their groups' first
    units, each first unit once: nothing of a text seen once."""
    import longctx.mixpr.text_ids as tid

    texts = ["a b", "c", "a  b", "d", "a\nb", "c"]
    n = len(texts)
    src, starts, ends = list(range(n)), [0] * n, [len(t) for t in texts]
    ids, _ = unit_text_ids(texts, src, starts, ends)
    assert ids.tolist() == [0, 1, 0, 3, 0, 1]
    read = []
    real = tid._unit_text
    monkeypatch.setattr(
        tid, "_unit_text", lambda t, s, a, b, i: read.append(i) or real(t, s, a, b, i)
    )
    tid.verify_text_ids(ids, texts, src, starts, ends, "f")
    assert sorted(read) == [0, 1, 2, 4, 5]  # 3: a text seen once, never read
    with pytest.raises(PersistError, match="'f.npy': unit 5 is given the text id of unit 0"):
        tid.verify_text_ids(np.array([0, 1, 0, 3, 0, 0]), texts, src, starts, ends, "'f.npy'")


def test_check_text_ids_names_the_file():
    with pytest.raises(PersistError, match="'f.npy': text ids must be integers"):
        check_text_ids(np.zeros(3), 3, "'f.npy'")
    check_text_ids(np.array([0, 0, 2, 0]), 4, "f")  # passes


# -- a corpus, and the shards of a sharded index ----------------------------------------------
CORPUS = [
    ("book", BOOK),
    ("title", "TREASURE  ISLAND"),
    ("jim", "Jim Hawkins found the map.\n\nTREASURE ISLAND\n\nthe old sea dog came to the inn."),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A one-index MixPR corpus built by ``build_indexes`` (its save writes no ids: none made
    yet) and opened as the frameworks' corpus retrievers open it (the first query that asks
    makes them)."""
    from longctx.corpus import CorpusIndex, build_indexes

    built = build_indexes(
        CORPUS, "mixpr", tmp_path_factory.mktemp("corpus") / "c", use_ray=False, progress=False
    )
    assert not built.failed
    assert not list(Path(built.out).rglob("text_ids.npy"))
    corpus = CorpusIndex.from_corpus(built.out)
    assert corpus.index._state._ids is None
    return corpus


@settings(max_examples=25, deadline=None)
@given(query=st.sampled_from(QUERIES), budget=st.integers(1, 80), k=st.integers(1, 12))
def test_a_corpus_search_equals_the_text_based_selection(corpus, query, budget, k):
    assert corpus.index._state.text_ids().tolist() == _reference_ids(corpus.index._state)
    for kw in ({"k": k}, {"token_budget": budget}):
        new = _outcome(corpus.search, query=query, unique_texts=None, **kw)
        with _old_selection():
            old = _outcome(corpus.search, query=query, unique_texts=None, **kw)
        assert new == old


def test_the_shards_of_a_sharded_index_hold_the_right_ids(tmp_path):
    """A sharded index does not implement ``unique_texts`` (``CorpusIndex.search`` raises
    ``NotImplementedError``): its build, writes and saves never make the shards' ids (a save
    writes none); ids made in a shard (its own MixPR index's queries) stay right through
    writes, a save and load."""
    from longctx.corpus.shards.index import ShardedMixPRIndex

    texts = [t for _, t in CORPUS] + ["TREASURE ISLAND\n\nSilver kept the tavern."]
    sharded = ShardedMixPRIndex.from_texts(texts, shards=2, ids=["a", "b", "c", "d"])
    sharded.insert(["TREASURE ISLAND"], ids=["x"])
    sharded.delete(["x"])
    sharded.save(tmp_path / "none")
    assert all(s.index._state._ids is None for s in sharded._backend.shards.values())
    assert list((tmp_path / "none").rglob("*.npy"))
    assert not list((tmp_path / "none").rglob("text_ids.npy"))

    def check(ix):
        shards = [s.index._state for s in ix._backend.shards.values()]
        for st_ in shards:
            assert st_.text_ids().tolist() == _reference_ids(st_)
        assert sum(st_.n_units for st_ in shards) == ix.n_units
        return shards

    assert len(check(sharded)) == 2
    sharded.insert(["TREASURE\nISLAND"], ids=["e"])
    check(sharded)
    sharded.delete(["d"])
    check(sharded)
    sharded.save(tmp_path / "sh")
    back = ShardedMixPRIndex.load(tmp_path / "sh")
    loaded = [s.index._state._ids for s in back._backend.shards.values()]
    assert loaded and all(ids is not None for ids in loaded)  # read from the shards' folders
    check(back)
