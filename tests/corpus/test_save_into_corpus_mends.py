"""Mends of the save into a corpus (review of 2026-11-29, reproductions ``r1``-``r7``).

- A save waiting for the corpus's build lock no longer holds the index's write lock: an
  ``insert`` in another thread goes on while ``longctx index`` runs (before: it waited for the
  whole build).
- A folder is a corpus only when its ``corpus.json`` is a corpus's manifest (format
  ``longctx.corpus``): a user's own ``corpus.json`` beside an ``indexes/`` folder is not one.
- A failed save puts its mark back only when the mark is still its own: another writer's mark
  written meanwhile stays.
- ``longctx.corpus.manifest`` keeps the names it had before the format moved down.
- A save inside a corpus's index folder (``indexes/mixpr/nested``), or of a sharded index
  inside a corpus's ``indexes/``, is refused: a rebuild replaces those folders whole.
"""

from __future__ import annotations

import json
import logging
import os
import threading

import pytest

from longctx.corpus import build_indexes, load_corpus
from longctx.corpus.shards import ShardedMixPRIndex
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError, SaveTargetError, marks
from tests.corpus import _build_race as race

DOCS = [
    ("a", "Mary went to the kitchen. She got the milk there."),
    ("b", "John walked in the garden. The roses were red."),
]
TIMEOUT = 60


def _corpus(tmp_path, shards=None):
    out = tmp_path / "c"
    build_indexes(DOCS, "mixpr", out, **race.build_options("mixpr", shards))
    return out


_files = race.corpus_files


def _hold_corpus_lock(index_root):
    """A thread holding the corpus's build lock (as a build does) until ``release`` is set."""
    held, release = threading.Event(), threading.Event()

    def hold():
        with marks.corpus_lock(index_root, "a build of this corpus"):
            held.set()
            release.wait(TIMEOUT)

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(TIMEOUT)
    return t, release


@pytest.mark.parametrize("sharded", [False, True], ids=["one-index", "sharded"])
def test_a_change_does_not_wait_for_a_build_a_save_waits_for(tmp_path, sharded):
    """r6: while a build holds the corpus, a save waits for it; an insert meanwhile goes on
    (it used to wait behind the save's index lock for the whole build)."""
    out = _corpus(tmp_path, 2 if sharded else None)
    if sharded:
        where = out / "indexes"
        index = ShardedMixPRIndex.load(where, use_ray=False)
    else:
        where = out / "indexes" / "mixpr"
        index = MixPRIndex.load(where)
    holder, release = _hold_corpus_lock(out / "indexes")
    waiting, errors = threading.Event(), []
    handler = race.watch_waits(waiting)
    saver = inserter = None
    try:

        def save():
            try:
                index.save(where)
            except Exception as exc:  # noqa: BLE001 (checked below)
                errors.append(exc)

        saver = threading.Thread(target=save)
        saver.start()
        assert waiting.wait(TIMEOUT)  # the save waits for the build's lock
        inserter = threading.Thread(
            target=lambda: index.insert(["Sandra took the apple."], ids=["c"])
        )
        inserter.start()
        inserter.join(10)
        assert not inserter.is_alive()  # done while the build still holds the corpus
        assert holder.is_alive() and saver.is_alive()
    finally:
        release.set()
        holder.join(TIMEOUT)
        for t in (saver, inserter):
            if t is not None:
                t.join(TIMEOUT)
        logging.getLogger("longctx").removeHandler(handler)
        if sharded:
            index.close()
    # the save ran after the insert: the index no longer holds corpus.json's documents
    assert len(errors) == 1 and isinstance(errors[0], PersistError), errors
    assert "1 inserted ('c')" in str(errors[0])
    assert race.corpus_state(out, "mixpr")[0] == "ok"


@pytest.mark.parametrize(
    "content",
    [
        json.dumps([{"text": "my own data set, not a longctx corpus"}]),
        json.dumps({"format": "my.dataset", "rows": [1, 2]}),
        "not JSON at all",
        json.dumps({"rows": ["x" * 100] * 1000}),  # larger than what is read to tell
    ],
    ids=["list", "other-format", "not-json", "large"],
)
def test_a_users_corpus_json_does_not_make_a_corpus(tmp_path, content):
    """r1 (core side): ``proj/corpus.json`` of the user's + ``proj/indexes/`` is no corpus; a
    MixPR index saves there as anywhere (before: refused as a corpus it was not read from)."""
    proj = tmp_path / "proj"
    (proj / "indexes").mkdir(parents=True)
    (proj / "corpus.json").write_text(content)
    assert marks.corpus_index_root(proj / "indexes") is None
    index = MixPRIndex.from_texts([t for _, t in DOCS], ids=[d for d, _ in DOCS])
    index.save(proj / "indexes" / "mine")
    index.save(proj / "indexes" / "mine" / "deeper")
    assert MixPRIndex.load(proj / "indexes" / "mine").doc_ids == ("a", "b")
    assert not (proj / "indexes" / marks.WRITER_FILE).exists()  # no corpus's mark written


def test_a_corpus_manifest_is_one_small_or_large(tmp_path):
    out = _corpus(tmp_path)
    assert marks.corpus_index_root(out / "indexes") == out.resolve() / "indexes"
    big = tmp_path / "big"
    (big / "indexes").mkdir(parents=True)
    # as CorpusManifest.to_json writes one, "format" first, larger than the bytes read
    data = {"format": "longctx.corpus", "format_version": 1, "pad": "x" * 100_000}
    (big / "corpus.json").write_text(json.dumps(data, indent=1))
    assert os.path.getsize(big / "corpus.json") > marks.MAX_MARKER_BYTES
    assert marks.corpus_index_root(big / "indexes") == big.resolve() / "indexes"
    (big / "corpus.json").write_text(json.dumps({"pad": "x" * 100_000, **data}))
    assert marks.corpus_index_root(big / "indexes") is None  # not as a corpus writes it


def test_a_failed_save_leaves_another_writers_mark(tmp_path):
    """r7: A marks, B marks over it, A fails before replacing a file: A used to put its old
    mark back over B's, while B was writing."""
    root = tmp_path.resolve()
    (root / "manifest.json").write_text("{}")
    marks.write_json_atomic(
        root / marks.WRITER_FILE, {"format": "longctx.writer", "token": "t0", "state": "done"}
    )

    def write(m):
        marks.write_json_atomic(root / marks.WRITER_FILE, m)

    def stamp():
        return marks.file_stamp(root / "manifest.json")

    a_marked, b_marked, a_done = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        try:
            with marks.saving_into_corpus(root, {}, "save A", write, stamp=stamp):
                a_marked.set()
                b_marked.wait(TIMEOUT)
                raise OSError("A fails before replacing a file")
        except OSError:
            a_done.set()

    def b():
        a_marked.wait(TIMEOUT)
        with marks.saving_into_corpus(root, {}, "save B", write, stamp=stamp) as mark:
            seen["b"] = mark["token"]
            b_marked.set()
            a_done.wait(TIMEOUT)
            seen["during"] = marks.mark_key(marks.read_mark_at(root))
            (root / "manifest.json.new").write_text("{}")
            os.replace(root / "manifest.json.new", root / "manifest.json")

    ta, tb = threading.Thread(target=a), threading.Thread(target=b)
    ta.start(), tb.start()
    ta.join(TIMEOUT), tb.join(TIMEOUT)
    assert a_done.is_set()
    assert seen["during"] == (seen["b"], "writing")
    assert marks.mark_key(marks.read_mark_at(root)) == (seen["b"], "done")


def test_a_failed_save_still_puts_its_own_mark_back(tmp_path):
    root = tmp_path.resolve()
    old = {"format": "longctx.writer", "token": "t0", "state": "done"}
    marks.write_json_atomic(root / marks.WRITER_FILE, old)

    def write(m):
        marks.write_json_atomic(root / marks.WRITER_FILE, m)

    with pytest.raises(OSError, match="fails"):
        with marks.saving_into_corpus(root, {}, "save", write, stamp=lambda: None):
            raise OSError("fails before replacing a file")
    assert marks.mark_key(marks.read_mark_at(root)) == ("t0", "done")


def test_old_names_of_the_corpus_manifest_module_import():
    from longctx.corpus.manifest import FORMAT, STATUSES, PersistError, check_format
    from longctx.persist import PersistError as persist_error
    from longctx.persist import check_format as persist_check_format

    assert FORMAT == "longctx.corpus" and STATUSES == ("done", "failed")
    assert PersistError is persist_error and check_format is persist_check_format


def test_a_save_inside_a_corpus_index_folder_is_refused(tmp_path):
    """r5: ``indexes/mixpr/nested`` was saved as a plain folder, and the next rebuild deleted
    it with ``indexes/mixpr``."""
    out = _corpus(tmp_path)
    other = MixPRIndex.from_texts(["Sandra took the apple."])
    before = _files(out)
    for where, says in (
        ("indexes/mixpr/nested", "is inside the index folder 'indexes/mixpr'"),
        ("indexes/mixpr/nested/deeper", "is inside the index folder 'indexes/mixpr'"),
        ("indexes", "is the indexes/ folder of the corpus"),
        ("indexes/backup/nested", "a rebuild leaves 'indexes/backup' alone"),
    ):
        with pytest.raises(SaveTargetError, match=says) as err:
            other.save(out / where)
        assert repr(str(out / where)) in str(err.value) and "path " in str(err.value)
    with pytest.raises(PersistError, match="not loaded from"):  # its own folder: the lock's path
        other.save(out / "indexes" / "shard-0")
    assert _files(out) == before
    assert next(iter(load_corpus(out, use_ray=False).values())).doc_ids == ("a", "b")


def test_a_sharded_save_inside_a_corpus_index_root_is_refused(tmp_path):
    out = _corpus(tmp_path, 2)
    other = ShardedMixPRIndex.from_texts(["Sandra took the apple.", "Bob ran."], ids=["x", "y"])
    before = _files(out)
    try:
        for where, says in (
            ("indexes/sub", "out .*a rebuild leaves 'indexes/sub' alone.*only as the whole"),
            ("indexes/shard-0/nested", "out .* is inside the index folder 'indexes/shard-0'"),
        ):
            with pytest.raises(SaveTargetError, match=says):
                other.save(out / where)
    finally:
        other.close()
    assert _files(out) == before
