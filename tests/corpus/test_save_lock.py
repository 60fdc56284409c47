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
        index.insert(["a note the user added about gardens"], ids=["note"])
        index.save(out / "indexes")
        index.delete(["note"])
        index.save(out / "indexes")  # its own last save: still the corpus it wrote
        index.insert(["another note"], ids=["note2"])
        index.save(out / "indexes")
    corpus = load_corpus(out, use_ray=False)
    with next(iter(corpus.values())) as loaded:
        assert "note2" in loaded.doc_ids and "note" not in loaded.doc_ids
    fresh = ShardedMixPRIndex.from_texts(["other texts entirely"] * 2, ids=["x", "y"], shards=2)
    with pytest.raises(PersistError, match="not read from"):
        fresh.save(out / "indexes")  # would replace the corpus's documents
    fresh.save(tmp_path / "elsewhere")  # any other folder: as before
    assert corpus_state(out, "mixpr")[0] == "ok"
