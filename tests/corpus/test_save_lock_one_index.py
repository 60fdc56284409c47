"""A MixPR index saved into a one-index corpus's ``indexes/mixpr`` (``MixPRIndex.save``) holds
the corpus's build lock, as builds and the sharded save do (``test_save_lock.py``), and writes
only over the corpus it read: a save beside a running ``longctx index`` waits for it, then
refuses; so does a save after a build that followed its load. Before, the save went through:
beside the build, or after it, it put the older documents back under the newer ``corpus.json``
and the corpus failed to load ("field 'text_sha256' does not match")."""

from __future__ import annotations

import logging
import threading

import pytest

from longctx.corpus import build_indexes
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError
from tests.corpus import _build_race as race

#: A small, quick build of one index (no shards).
ONE = race.build_options("mixpr", None)


def _build(folder, out) -> None:
    build_indexes(str(folder), "mixpr", str(out), **ONE)


def _corpus(tmp_path):
    """``(folder, out, set1)``: the corpus ``out`` built from the first document set (in
    ``folder``), and the next set."""
    base, set1, _ = race.doc_sets()
    folder = tmp_path / "docs"
    race.write_folder(folder, base)
    _build(folder, tmp_path / "out")
    return folder, tmp_path / "out", set1


def _loads_as(tmp_path, out, docs):
    """The corpus at ``out`` loads and equals a fresh build of ``docs``."""
    state, fresh = (
        race.corpus_state(out, "mixpr"),
        race.fresh_state(tmp_path / "fresh", docs, "mixpr", None),
    )
    assert state[0] == "ok" and race.same(state, fresh, False), state[1]


def _while_a_build_is_held(folder, out, docs, during):
    """``during()`` while a rebuild of the corpus at ``out`` to ``docs`` is held inside its
    lock and mark (thread "build-A"); the build then goes on and ends. Returns ``during()``'s
    value."""
    started, go = threading.Event(), threading.Event()
    undo = race.hold_inside_build("mixpr", started, go, only_thread="build-A")
    race.write_folder(folder, docs)
    build = threading.Thread(target=_build, args=(folder, out), name="build-A")
    try:
        build.start()
        assert started.wait(race.TIMEOUT)
        return during()
    finally:
        go.set()
        build.join(race.TIMEOUT)
        undo()


def test_a_save_beside_a_running_build_waits_then_refuses(tmp_path):
    folder, out, set1 = _corpus(tmp_path)
    where = out / "indexes" / "mixpr"
    index = MixPRIndex.load(where)
    index.insert(["a note the user added about gardens"], ids=["note"])
    waiting, errors = threading.Event(), []
    handler = race.watch_waits(waiting)

    def save():
        try:
            index.save(where)
        except Exception as exc:  # noqa: BLE001 (checked)
            errors.append(exc)

    saver = threading.Thread(target=save)

    def start_the_save():
        saver.start()
        assert race.wait_either([waiting.is_set, lambda: not saver.is_alive()])
        return waiting.is_set()  # before: the save ran through beside the held build

    try:
        waited = _while_a_build_is_held(folder, out, set1, start_the_save)
        saver.join(race.TIMEOUT)
    finally:
        logging.getLogger("longctx").removeHandler(handler)
    assert waited
    assert len(errors) == 1 and isinstance(errors[0], PersistError), errors
    message = str(errors[0])
    assert "a rebuild of this corpus" in message and "load the corpus again" in message
    _loads_as(tmp_path, out, set1)  # the build's corpus, whole


def test_a_save_after_a_later_build_is_refused_and_the_corpus_still_loads(tmp_path):
    folder, out, set1 = _corpus(tmp_path)
    index = MixPRIndex.load(out / "indexes" / "mixpr")
    race.write_folder(folder, set1)
    _build(folder, out)  # the corpus changes after the index read it
    with pytest.raises(PersistError, match="after this index read it") as err:
        index.save(out / "indexes" / "mixpr")  # before: saved, and the corpus no longer loaded
    assert str(out / "indexes") in str(err.value)
    _loads_as(tmp_path, out, set1)


def test_the_index_read_from_a_corpus_saves_back_into_it(tmp_path):
    from longctx.corpus import load_corpus

    _, out, _ = _corpus(tmp_path)
    where = out / "indexes" / "mixpr"
    index = MixPRIndex.load(where)
    index.save(where)
    index.save(where, mappable=False)  # its own last save: still the corpus it wrote
    index.save(where)
    loaded = next(iter(load_corpus(out, use_ray=False).values()))
    assert loaded.doc_ids == index.doc_ids
    index.insert(["another note"], ids=["note2"])  # a corpus changes with its builds only
    with pytest.raises(PersistError, match="documents differ from the corpus's corpus.json"):
        index.save(where)
    fresh = MixPRIndex.from_texts(["other texts entirely", "and more"], ids=["x", "y"])
    with pytest.raises(PersistError, match="not loaded from the corpus at") as err:
        fresh.save(where)  # would replace the corpus's documents
    assert "load the corpus again" not in str(err.value)  # it never was
    assert race.corpus_state(out, "mixpr")[0] == "ok"
    fresh.save(tmp_path / "elsewhere")  # any other folder: as before
    assert MixPRIndex.load(tmp_path / "elsewhere").doc_ids == ("x", "y")


def test_an_index_loaded_during_a_build_cannot_undo_it(tmp_path):
    """A load while a rebuild runs, before it replaces the files, reads the old index and the
    build's mark at ``"writing"``; the build then marks ``"done"``: the save is refused."""
    folder, out, set1 = _corpus(tmp_path)
    where = out / "indexes" / "mixpr"
    index = _while_a_build_is_held(folder, out, set1, lambda: MixPRIndex.load(where))
    assert "e.txt" not in index.doc_ids  # read before the build replaced the files
    with pytest.raises(PersistError, match="rebuild of this corpus.*after this index read"):
        index.save(where)
    _loads_as(tmp_path, out, set1)


def test_a_save_that_failed_half_way_can_be_retried(tmp_path, monkeypatch):
    """A save that fails after the corpus's mark and the folder's replacement leaves it at
    ``"writing"`` with the index's own token: the same index's retry is accepted, another
    index's save is not. (One failing before it replaces the folder puts the mark back:
    ``test_save_into_corpus_documents.py``.)"""
    import longctx.mixpr.writes as writes

    _, out, _ = _corpus(tmp_path)
    where = out / "indexes" / "mixpr"
    index = MixPRIndex.load(where)
    other = MixPRIndex.load(where)
    real = writes.save_mapped

    def full(*args, **kwargs):
        real(*args, **kwargs)  # the folder replaced, then a failure
        raise OSError(28, "No space left on device (injected)")

    monkeypatch.setattr(writes, "save_mapped", full)
    with pytest.raises(OSError, match="No space left"):
        index.save(where)
    monkeypatch.setattr(writes, "save_mapped", real)
    with pytest.raises(PersistError, match="after this index read it"):
        other.save(where)
    index.save(where)  # the retry
    state = race.corpus_state(out, "mixpr")
    assert state[0] == "ok", state[1]


@pytest.mark.parametrize("alias", ["link", "dotdot"])
def test_a_save_through_another_name_of_the_corpus_is_checked(tmp_path, alias):
    """The corpus's index named otherwise (through a symbolic link to its index root, or
    ``indexes/mixpr/../mixpr``) is the same corpus: after a later build the save is refused."""
    folder, out, set1 = _corpus(tmp_path)
    if alias == "link":
        (tmp_path / "alias").symlink_to(out / "indexes", target_is_directory=True)
        where = tmp_path / "alias" / "mixpr"
    else:
        where = out / "indexes" / "mixpr" / ".." / "mixpr"
    index = MixPRIndex.load(where)
    race.write_folder(folder, set1)
    _build(folder, out)
    with pytest.raises(PersistError, match="after this index read it"):
        index.save(where)
    _loads_as(tmp_path, out, set1)


def test_a_snapshot_keeps_its_own_record(tmp_path):
    """A snapshot of a loaded index may save into the corpus (it holds what the index read);
    the index's record then no longer matches the corpus: its own save is refused, not
    silently undoing the snapshot's."""
    _, out, _ = _corpus(tmp_path)
    where = out / "indexes" / "mixpr"
    index = MixPRIndex.load(where)
    view = index.snapshot()
    view.save(where)
    with pytest.raises(PersistError, match="a save of this MixPR index"):
        index.save(where)
    assert race.corpus_state(out, "mixpr")[0] == "ok"
