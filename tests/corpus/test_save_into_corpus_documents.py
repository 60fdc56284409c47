"""A save into a corpus's index root checks the index's documents against ``corpus.json`` and
runs every check that can refuse before it marks the corpus (review 19, F1 and F2).

F1: an index loaded from a corpus, changed (``insert`` / ``update`` / ``delete``) and saved back
was accepted and marked ``"done"``; after an update or a delete the corpus no longer loaded
("field 'text_sha256' does not match", "document ... is not in the index"), after an insert it
loaded with a document ``corpus.json`` does not list, which the next build deleted silently.

F2: a save refused before writing anything (a link, a folder of other files, a check of the
index's data) left the corpus's mark at ``"writing"`` with a new token: every other index read
from the corpus could no longer save there ("... stopped half way")."""

from __future__ import annotations

import json
import os

import pytest

from longctx.corpus import build_indexes, load_corpus
from longctx.persist import PersistError, SaveTargetError
from longctx.persist.marks import WRITER_FILE

DOCS = [
    ("a", "Mary went to the kitchen. She got the milk there."),
    ("b", "John walked in the garden. The roses were red."),
]
CHANGES = {
    "insert": (
        lambda ix: ix.insert(["Sandra took the apple to the office."], ids=["c"]),
        "1 inserted ('c')",
    ),
    "update": (lambda ix: ix.update(["Mary went to the hallway."], ids=["a"]), "1 changed ('a')"),
    "delete": (lambda ix: ix.delete(["b"]), "1 deleted ('b')"),
}


def _corpus(tmp_path, shards):
    out = tmp_path / "c"
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False, shards=shards)
    return out


def _target(out, shards):
    return out / "indexes" / ("mixpr" if shards is None else "")


def _one(out):
    return next(iter(load_corpus(out, use_ray=False).values()))


def _close(index):
    if hasattr(index, "close"):
        index.close()


def _mark(out) -> bytes:
    return (out / "indexes" / WRITER_FILE).read_bytes()


def _loads_as_built(out) -> None:
    index = _one(out)
    try:
        assert sorted(index.doc_ids) == ["a", "b"]
        texts = dict(DOCS)
        for d in ("a", "b"):
            got = index.text(d) if hasattr(index, "text") else index.texts[index.doc_ids.index(d)]
            assert got == texts[d]
    finally:
        _close(index)


@pytest.mark.parametrize("shards", [None, 2])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_index_is_not_saved_into_its_corpus(tmp_path, shards, change):
    out = _corpus(tmp_path, shards)
    mark = _mark(out)
    index = _one(out)
    try:
        apply, counted = CHANGES[change]
        apply(index)
        with pytest.raises(PersistError) as err:
            index.save(_target(out, shards))
        message = str(err.value)
        assert "documents differ from the corpus's corpus.json" in message
        assert counted in message and "longctx index" in message and "elsewhere" in message
        assert _mark(out) == mark  # nothing written, the mark as it was
        _loads_as_built(out)
        index.save(tmp_path / "elsewhere")  # elsewhere: as before
    finally:
        _close(index)


@pytest.mark.parametrize("shards", [None, 2])
def test_an_unchanged_index_saves_back_into_its_corpus(tmp_path, shards):
    out = _corpus(tmp_path, shards)
    index = _one(out)
    try:
        index.save(_target(out, shards))
        index.save(_target(out, shards))  # its own last save
    finally:
        _close(index)
    assert json.loads(_mark(out))["state"] == "done"
    _loads_as_built(out)
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False, shards=shards)
    _loads_as_built(out)


def test_a_save_refused_by_the_target_check_leaves_the_mark(tmp_path):
    """A link to the corpus's index folder, and a folder of other files in its index root:
    refused before anything is written; the mark stays, so another index that read the
    corpus still saves there."""
    out = _corpus(tmp_path, None)
    mark = _mark(out)
    index, other = _one(out), _one(out)
    link = tmp_path / "link"
    link.symlink_to(out / "indexes" / "mixpr", target_is_directory=True)
    with pytest.raises(SaveTargetError, match="symbolic link"):
        index.save(link)
    assert _mark(out) == mark
    foreign = out / "indexes" / "notes"
    foreign.mkdir()
    (foreign / "mine.txt").write_text("not an index")
    with pytest.raises(SaveTargetError, match="not a longctx index"):
        index.save(foreign)
    assert _mark(out) == mark
    other.save(out / "indexes" / "mixpr")  # before: "... which stopped half way"
    _loads_as_built(out)


@pytest.mark.parametrize("had_mark", [True, False])
def test_a_save_failing_before_it_writes_puts_the_mark_back(tmp_path, monkeypatch, had_mark):
    """A check inside the save's writer (the index's data, a size limit) refusing before the
    folder is replaced: the mark is put back byte for byte, or removed for a corpus that had
    none (an older longctx's)."""
    import longctx.mixpr.writes as writes

    out = _corpus(tmp_path, None)
    if not had_mark:
        os.remove(out / "indexes" / WRITER_FILE)
    before = _mark(out) if had_mark else None
    index, other = _one(out), _one(out)

    def refuse(*args, **kwargs):
        raise ValueError("this index cannot be saved as it is (injected)")

    monkeypatch.setattr(writes, "save_mapped", refuse)
    with pytest.raises(ValueError, match="injected"):
        index.save(out / "indexes" / "mixpr")
    monkeypatch.undo()
    mark_file = out / "indexes" / WRITER_FILE
    assert (mark_file.read_bytes() if mark_file.exists() else None) == before
    other.save(out / "indexes" / "mixpr")  # before: "... which stopped half way"
    _loads_as_built(out)


def test_a_sharded_save_failing_before_it_writes_puts_the_mark_back(tmp_path, monkeypatch):
    from longctx.corpus.storage import Storage

    out = _corpus(tmp_path, 2)
    mark = _mark(out)
    index, other = _one(out), _one(out)
    try:

        def full(self, local_dir, rel):  # the first shard's folder is not moved in
            raise OSError(28, "No space left on device (injected)")

        monkeypatch.setattr(Storage, "put_index", full)
        with pytest.raises(OSError, match="injected"):
            index.save(out / "indexes")
        monkeypatch.undo()
        assert _mark(out) == mark
        other.save(out / "indexes")  # before: "... which stopped half way"
    finally:
        _close(index)
        _close(other)
    _loads_as_built(out)
