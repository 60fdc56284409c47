"""A sharded index saved into a corpus's ``indexes/`` folder (``ShardedMixPRIndex.save``) holds
the corpus's build lock, as builds do, and writes only over the corpus it read: a save beside a
running ``longctx index`` waits for it, then refuses (the build changed the corpus since the
index read it); so does a save after a build that followed its load. Before, the save ran
beside the build and put the older documents back under the newer ``corpus.json``: the corpus
failed to load ("document ... is not in the sharded index")."""

from __future__ import annotations

import logging
import threading

import pytest

from longctx.corpus import build_indexes
from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.persist import PersistError
from tests.corpus._build_race import (
    TIMEOUT,
    build_options,
    corpus_state,
    doc_sets,
    fresh_state,
    hold_inside_build,
    same,
    wait_either,
    watch_waits,
    write_folder,
)

SHARDS = 2


def _corpus(tmp_path):
    base, set1, _ = doc_sets()
    folder, out = tmp_path / "docs", tmp_path / "out"
    write_folder(folder, base)
    build_indexes(str(folder), "mixpr", str(out), **build_options("mixpr", SHARDS))
    return folder, out, set1


def _build(folder, out):
    return build_indexes(str(folder), "mixpr", str(out), **build_options("mixpr", SHARDS))


def _loads_as(tmp_path, out, docs):
    state = corpus_state(out, "mixpr")
    assert state[0] == "ok", state[1]
    assert same(state, fresh_state(tmp_path / "fresh", docs, "mixpr", SHARDS), True)


def test_a_save_beside_a_running_build_waits_then_refuses(tmp_path):
    folder, out, set1 = _corpus(tmp_path)
    index = ShardedMixPRIndex.load(out / "indexes", use_ray=False)
    index.insert(["a note the user added about gardens"], ids=["note"])
    started, go, waiting = threading.Event(), threading.Event(), threading.Event()
    undo = hold_inside_build("mixpr", started, go, only_thread="build-A")
    handler = watch_waits(waiting)
    errors = []

    def save():
        try:
            index.save(out / "indexes")
        except Exception as exc:  # noqa: BLE001 (checked)
            errors.append(exc)

    write_folder(folder, set1)
    build = threading.Thread(target=_build, args=(folder, out), name="build-A")
    saver = threading.Thread(target=save)
    try:
        build.start()
        assert started.wait(TIMEOUT)
        saver.start()
        assert wait_either([waiting.is_set, lambda: not saver.is_alive()])
        waited = waiting.is_set()  # before: the save ran through beside the held build
    finally:
        go.set()
        build.join(TIMEOUT)
        saver.join(TIMEOUT)
        undo()
        logging.getLogger("longctx").removeHandler(handler)
        index.close()
    assert waited
    assert len(errors) == 1 and isinstance(errors[0], PersistError), errors
    assert "a rebuild of this corpus" in str(errors[0]) and "load the corpus again" in str(
        errors[0]
    )
    _loads_as(tmp_path, out, set1)  # the build's corpus, whole


def test_a_save_after_a_later_build_is_refused_and_the_corpus_still_loads(tmp_path):
    folder, out, set1 = _corpus(tmp_path)
    with ShardedMixPRIndex.load(out / "indexes", use_ray=False) as index:
        write_folder(folder, set1)
        _build(folder, out)  # the corpus changes after the index read it
        with pytest.raises(PersistError, match="after this index read it") as err:
            index.save(out / "indexes")  # before: saved, and the corpus no longer loaded
    assert str(out / "indexes") in str(err.value)
    _loads_as(tmp_path, out, set1)


def test_the_index_read_from_a_corpus_saves_back_into_it(tmp_path):
    from longctx.corpus import load_corpus

    _, out, _ = _corpus(tmp_path)
    with ShardedMixPRIndex.load(out / "indexes", use_ray=False) as index:
        index.save(out / "indexes")
        index.save(out / "indexes")  # its own last save: still the corpus it wrote
        index.insert(["another note"], ids=["note2"])  # a corpus changes with its builds only
        with pytest.raises(PersistError, match="documents differ from the corpus's corpus.j"):
            index.save(out / "indexes")
    corpus = load_corpus(out, use_ray=False)
    with next(iter(corpus.values())) as loaded:
        assert "note2" not in loaded.doc_ids
    fresh = ShardedMixPRIndex.from_texts(["other texts entirely"] * 2, ids=["x", "y"], shards=2)
    with pytest.raises(PersistError, match="not loaded from the corpus at") as err:
        fresh.save(out / "indexes")  # would replace the corpus's documents
    assert "load the corpus again" not in str(err.value)  # it never was
    fresh.save(tmp_path / "elsewhere")  # any other folder: as before
    assert corpus_state(out, "mixpr")[0] == "ok"


def test_an_index_loaded_during_a_build_cannot_undo_it(tmp_path):
    """(Review 18b, item 1.) A load while a rebuild runs, before it replaces the files, reads
    the old corpus and the build's mark at ``"writing"``; the build then marks ``"done"`` with
    the same token. Before, the save compared the token only: it was accepted and wrote the
    old documents back under the new ``corpus.json`` (the corpus no longer loaded)."""
    folder, out, set1 = _corpus(tmp_path)
    started, go = threading.Event(), threading.Event()
    undo = hold_inside_build("mixpr", started, go, only_thread="build-A")
    write_folder(folder, set1)
    build = threading.Thread(target=_build, args=(folder, out), name="build-A")
    try:
        build.start()
        assert started.wait(TIMEOUT)
        index = ShardedMixPRIndex.load(out / "indexes", use_ray=False)  # the old files
    finally:
        go.set()
        build.join(TIMEOUT)
        undo()
    with index:
        assert "e.txt" not in index.doc_ids  # read before the build replaced the files
        with pytest.raises(PersistError, match="rebuild of this corpus.*after this index read"):
            index.save(out / "indexes")
    _loads_as(tmp_path, out, set1)


def test_a_save_over_another_writers_unfinished_mark_is_refused(tmp_path):
    """A mark left at ``"writing"`` by another writer that stopped half way (here a rebuild
    that raised) matches no index that read it: its files may be partly replaced. The error
    says to run that write again."""
    from longctx.corpus.storage import open_storage
    from longctx.corpus.writers import writing

    _, out, _ = _corpus(tmp_path)
    with pytest.raises(RuntimeError):
        with writing(open_storage(str(out / "indexes")), "a rebuild of this corpus"):
            raise RuntimeError("stopped half way")
    with ShardedMixPRIndex.load(out / "indexes", use_ray=False) as index:
        index.insert(["a note the user added about gardens"], ids=["note"])
        with pytest.raises(PersistError, match="stopped half way.*run that write again"):
            index.save(out / "indexes")
    state = corpus_state(out, "mixpr")
    assert state[0] == "ok", state[1]
    assert "note" not in dict(state[1])


def test_a_save_that_failed_half_way_can_be_retried(tmp_path, monkeypatch):
    """(Review 18b, item 2.) A save into the corpus that fails after its mark (disk full)
    leaves the corpus at ``"writing"`` with the index's own token; the same index's retry is
    accepted and repairs the corpus. Before, the retry was refused for good ("written by a
    save of this sharded index after this index read it")."""
    from longctx.corpus.storage import Storage, open_storage
    from longctx.corpus.writers import read_mark

    _, out, _ = _corpus(tmp_path)
    real = Storage.write_json

    def full(self, rel, obj, *args, **kwargs):
        if rel == "shards.json":
            raise OSError(28, "No space left on device (injected)")
        return real(self, rel, obj, *args, **kwargs)

    with ShardedMixPRIndex.load(out / "indexes", use_ray=False) as index:
        monkeypatch.setattr(Storage, "write_json", full)
        with pytest.raises(OSError, match="No space left"):
            index.save(out / "indexes")
        monkeypatch.setattr(Storage, "write_json", real)
        assert read_mark(open_storage(out / "indexes"))["state"] == "writing"  # half written
        index.save(out / "indexes")  # the retry
    state = corpus_state(out, "mixpr")
    assert state[0] == "ok", state[1]


def test_a_backup_save_elsewhere_keeps_the_corpus_saveable(tmp_path):
    """(Review 18b, item 3.) A save to another folder first (a backup) leaves the index's
    record of the corpus as read: the later save back into the unchanged corpus is accepted.
    Before, the record was overwritten by the backup ("not read from")."""
    _, out, _ = _corpus(tmp_path)
    with ShardedMixPRIndex.load(out / "indexes", use_ray=False) as index:
        index.save(tmp_path / "backup")
        index.save(out / "indexes")
        index.insert(["a note the user added about gardens"], ids=["note"])
        index.save(tmp_path / "backup")  # and its own saves go on (a changed one: elsewhere)
        index.delete(["note"])
        index.save(out / "indexes")
    state = corpus_state(out, "mixpr")
    assert state[0] == "ok", state[1]
    with ShardedMixPRIndex.load(tmp_path / "backup", use_ray=False) as backup:
        assert "note" in backup.doc_ids


@pytest.mark.parametrize("alias", ["link", "dotdot"])
def test_a_save_through_another_name_of_the_corpus_is_checked(tmp_path, alias):
    """(Review 18b, item 4.) The corpus's index root named otherwise (a symbolic link to it,
    or ``indexes/shard-0/..``) is the same corpus: after a later build the save is refused
    and the corpus still loads. Before, the name was tested as typed: the save went through
    without the lock or the check and the corpus no longer loaded."""
    folder, out, set1 = _corpus(tmp_path)
    if alias == "link":
        (tmp_path / "alias").symlink_to(out / "indexes", target_is_directory=True)
        where = tmp_path / "alias"
    else:
        where = out / "indexes" / "shard-0" / ".."
    with ShardedMixPRIndex.load(out / "indexes", use_ray=False) as index:
        write_folder(folder, set1)
        _build(folder, out)
        with pytest.raises(PersistError, match="after this index read it"):
            index.save(where)
    _loads_as(tmp_path, out, set1)
