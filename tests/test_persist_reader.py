"""longctx.persist.reader: a load sees one save (digests, one folder descriptor, retries), never
a member followed out of its folder, and indexes saved without digests still load (issue 28)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from longctx.mixpr import MixPRIndex
from longctx.persist import ConcurrentSaveError, PersistError, SaveTargetError
from longctx.persist.reader import (
    LOAD_ATTEMPTS,
    IndexDir,
    open_index_dir,
    retry_on_concurrent_save,
)
from tests._persist_helpers import TEXTS, edit_json, mixpr_index, restamp

_WORDS = ["cat", "dog", "mat", "sat", "ran", "sun", "fish", "milk", "Paris", "river"]
# each word to another of the same length: the two corpora have the same lengths and units, so
# one's texts with the other's arrays pass every check of the values (the reproduction of #28)
_SWAP = {"cat": "dog", "dog": "cat", "mat": "sat", "sat": "mat", "ran": "sun", "sun": "ran"}
_SWAP.update({"fish": "milk", "milk": "fish", "Paris": "river", "river": "Paris"})


def _race_texts(swap: bool) -> list[str]:
    rng = np.random.default_rng(1)
    out = []
    for _ in range(3):
        words = rng.choice(_WORDS, (60, 6))
        if swap:
            words = np.vectorize(_SWAP.get)(words)
        out.append(" ".join(" ".join(row) + "." for row in words))
    return out


def _same(x: MixPRIndex, y: MixPRIndex) -> bool:
    return (
        x.texts == y.texts
        and np.array_equal(x.starts, y.starts)
        and np.array_equal(x.ends, y.ends)
        and np.array_equal(x.unit_source, y.unit_source)
        and np.array_equal(x.token_counts, y.token_counts)
        and x.doc_ids == y.doc_ids
        and x.terms.terms() == y.terms.terms()
        and np.array_equal(x.terms.idf(), y.terms.idf())
        and (x.terms.counts != y.terms.counts).nnz == 0
    )


_RACE = {}


def _save_alternately(path: str, stop_at: float) -> None:
    a, b, mappable = _RACE["a"], _RACE["b"], _RACE["mappable"]
    while time.time() < stop_at:
        a.save(path, mappable=mappable)
        b.save(path, mappable=mappable)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize(
    "mappable, mmap, seconds",
    [(False, False, 3.0), (True, False, 2.0), (True, True, 2.0)],
    ids=["format2", "format3-read", "format3-mapped"],
)
def test_a_load_racing_saves_returns_one_of_the_two_indexes(tmp_path, mappable, mmap, seconds):
    """One process saves two indexes to one path in turn, this one loads in a loop: every load
    is one of the two (before: 53 of 691 loads mixed one's texts with the other's arrays). In
    format 3 too, read or mapped (a map checks sizes, not digests: every member still comes
    from the one folder the manifest was read from)."""
    a = MixPRIndex.from_texts(_race_texts(False), max_words=8)
    b = MixPRIndex.from_texts(_race_texts(True), max_words=8)
    assert [len(t) for t in a.texts] == [len(t) for t in b.texts] and not _same(a, b)
    _RACE.update(a=a, b=b, mappable=mappable)
    d = tmp_path / "shared"
    a.save(d, mappable=mappable)
    stop = time.time() + seconds
    saver = multiprocessing.get_context("fork").Process(
        target=_save_alternately, args=(str(d), stop)
    )
    saver.start()
    loads, failures = [], []
    try:
        while time.time() < stop:
            try:
                x = MixPRIndex.load(d, mmap=mmap)
            except PersistError as exc:  # allowed: a clear error, never a mixed index
                failures.append(exc)
                continue
            loads.append("a" if _same(x, a) else "b" if _same(x, b) else "MIXED")
    finally:
        saver.join(timeout=60)
    assert saver.exitcode == 0
    assert "MIXED" not in loads
    assert len(loads) >= 5 and len(failures) <= len(loads)


def test_a_file_edited_after_the_save_is_named_by_its_digest(tmp_path):
    d = tmp_path / "idx"
    mixpr_index().save(d, mappable=False)
    manifest = json.loads((d / "manifest.json").read_text())
    assert set(manifest["digests"]) == set(manifest["files"])
    edit_json(d / "texts.json", lambda t: t.__setitem__(0, t[0].upper()), stamp=False)
    with pytest.raises(PersistError, match=r"texts\.json.*SHA-256") as info:
        MixPRIndex.load(d)
    assert not isinstance(info.value, ConcurrentSaveError)  # the folder was not replaced


def test_indexes_saved_without_digests_still_load(tmp_path):
    """Folders written before manifests carried digests (longctx 0.1) load as before."""
    from langchain_core.documents import Document

    from langchain_longctx import MixPRRetriever

    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)]
    MixPRRetriever(documents=docs, k=2).save(tmp_path / "lc")
    mixpr_index().save(tmp_path / "core")
    for m in (tmp_path).rglob("manifest.json"):
        data = json.loads(m.read_text())
        del data["digests"]
        m.write_text(json.dumps(data))
    assert list(MixPRIndex.load(tmp_path / "core").texts) == TEXTS
    loaded = MixPRRetriever.load(tmp_path / "lc")
    assert [d.page_content for d in loaded.invoke("cat")] == [
        d.page_content for d in MixPRRetriever(documents=docs, k=2).invoke("cat")
    ]


def test_a_nested_index_from_another_save_is_refused(tmp_path):
    """The outer manifest carries the digest of the nested index's manifest."""
    from langchain_core.documents import Document

    from langchain_longctx import MixPRRetriever

    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)]
    MixPRRetriever(documents=docs, k=2).save(tmp_path / "lc")
    other = MixPRIndex.from_texts([TEXTS[1], TEXTS[0]], max_words=8)
    shutil.rmtree(tmp_path / "lc" / "index")
    other.save(tmp_path / "lc" / "index")
    with pytest.raises(PersistError, match=r"index.manifest\.json.*SHA-256"):
        MixPRRetriever.load(tmp_path / "lc")


def test_a_symlinked_member_file_is_refused(tmp_path):
    """Loading never follows a member out of the folder (texts.json -> elsewhere)."""
    d = tmp_path / "idx"
    mixpr_index().save(d, mappable=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.move(d / "texts.json", elsewhere / "texts.json")
    (d / "texts.json").symlink_to(elsewhere / "texts.json")
    with pytest.raises(PersistError, match=r"texts\.json.*symbolic link"):
        MixPRIndex.load(d)
    # saving over it is refused too, and the link's target stays
    with pytest.raises(SaveTargetError, match="symbolic link"):
        mixpr_index().save(d, mappable=False)
    assert json.loads((elsewhere / "texts.json").read_text()) == TEXTS


def test_a_symlinked_nested_index_is_refused(tmp_path):
    from langchain_core.documents import Document

    from langchain_longctx import MixPRRetriever

    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)]
    MixPRRetriever(documents=docs, k=2).save(tmp_path / "lc")
    shutil.move(tmp_path / "lc" / "index", tmp_path / "real_index")
    (tmp_path / "lc" / "index").symlink_to(tmp_path / "real_index", target_is_directory=True)
    with pytest.raises(PersistError, match=r"index.*symbolic link"):
        MixPRRetriever.load(tmp_path / "lc")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_member_is_refused_without_blocking(tmp_path):
    d = tmp_path / "idx"
    mixpr_index().save(d, mappable=False)
    (d / "texts.json").unlink()
    os.mkfifo(d / "texts.json")
    with pytest.raises(PersistError, match=r"texts\.json.*not a regular file"):
        MixPRIndex.load(d)


def test_reader_api(tmp_path):
    d = tmp_path / "idx"
    mixpr_index().save(d, mappable=False)
    with open_index_dir(d, kind="mixpr", versions=(2,)) as r:
        assert isinstance(r, os.PathLike) and os.fspath(r) == str(d)
        assert r.has("texts.json") and not r.has("nope.json")
        assert r.file("texts.json") == d / "texts.json"
        assert r.json("texts.json") == TEXTS
        assert r.arrays("arrays.npz", ["starts"])["starts"].dtype.kind in "iu"
        assert r.sparse("terms.npz").shape[0] == len(r.arrays("arrays.npz", ["starts"])["starts"])
        with pytest.raises(PersistError, match=r"nope\.json.*not listed"):
            r.json("nope.json")
        assert open_index_dir(r, kind="mixpr", versions=(2,)) is r
    with pytest.raises(PersistError, match="longctx.mixpr"):
        open_index_dir(d, kind="diversity", versions=(1,))
    with pytest.raises(PersistError, match="format version"):
        open_index_dir(d, kind="mixpr", versions=(7,))


def test_retry_on_concurrent_save_loads_again_then_raises():
    calls = []

    @retry_on_concurrent_save("path")
    def load(path, fail):
        calls.append(path)
        if len(calls) <= fail:
            raise ConcurrentSaveError("changed during the load")
        return "loaded"

    assert load("x", 1) == "loaded" and len(calls) == 2
    calls.clear()
    with pytest.raises(ConcurrentSaveError):
        load("x", 99)
    assert len(calls) == LOAD_ATTEMPTS
    calls.clear()
    nested = IndexDir.__new__(IndexDir)  # a nested folder: the outer load retries, not this one
    with pytest.raises(ConcurrentSaveError):
        load(nested, 99)
    assert len(calls) == 1


def test_digests_cover_every_file_and_nested_manifest(tmp_path):
    from langchain_core.documents import Document

    from langchain_longctx import MixPRRetriever

    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)]
    MixPRRetriever(documents=docs, k=2).save(tmp_path / "lc")
    m = json.loads((tmp_path / "lc" / "manifest.json").read_text())
    assert set(m["digests"]) == set(m["files"]) | {"index"}
    # a forged digest entry for a name outside the folder is refused
    m["digests"]["../x"] = m["digests"]["index"]
    (tmp_path / "lc" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PersistError, match="digests"):
        MixPRRetriever.load(tmp_path / "lc")
    restamp(tmp_path / "lc")
    assert MixPRRetriever.load(tmp_path / "lc").k == 2


def test_json_file_over_its_limit_is_refused_before_reading(tmp_path):
    d = tmp_path / "idx"
    mixpr_index().save(d, mappable=False)
    with open_index_dir(d, kind="mixpr", versions=(2,)) as r:
        with pytest.raises(PersistError, match="more than the limit"):
            r.json("texts.json", max_bytes=10)
    assert Path(d / "texts.json").stat().st_size > 10


def test_prefetch_reads_each_member_once_and_keeps_the_json_limit(tmp_path, monkeypatch):
    import longctx.persist.reader as pr

    d = tmp_path / "idx"
    MixPRIndex.from_texts(TEXTS).save(d, mappable=False)
    r = open_index_dir(d, kind="mixpr", versions=(2,))
    r.prefetch(["config.json", "arrays.npz", "not-listed.json"])
    (d / "config.json").unlink()  # what a concurrent save's clean-up does
    assert isinstance(r.json("config.json"), dict)  # the bytes read before
    with pytest.raises(PersistError, match="missing"):
        r.json("config.json")  # read once: asked again, the file is read again
    MixPRIndex.from_texts(TEXTS).save(d, mappable=False)
    monkeypatch.setattr(pr, "MAX_JSON_BYTES", 10)
    r2 = open_index_dir(d, kind="mixpr", versions=(2,))
    with pytest.raises(PersistError, match="more than the limit"):
        r2.prefetch(["texts.json"])
