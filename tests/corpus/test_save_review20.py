"""Saves and corpora, the review of session 20's save changes (each test failed before its fix):

- a damaged ``corpus.json`` (cut short, not strict JSON) still marks its folder as a corpus,
  so a save inside its ``indexes/`` stays refused (it was told by how the file starts until
  2026-11-29; the bounded strict parse then made such a corpus an ordinary folder);
- a local path with ``://`` inside it (``C://data``: a drive; ``runs/a://b``: a folder named
  ``a:``) is a local path, as fsspec reads a protocol (two characters or more, no path
  separator), not a URL refused;
- a local-only save given a URL of a store that may connect (``ftp://``) is refused as a URL
  without opening that store (it raised the store's own network error).
"""

from __future__ import annotations

import json
import os

import pytest

from longctx.corpus import build_indexes
from longctx.mixpr import MixPRIndex
from longctx.persist import SaveTargetError
from longctx.persist.marks import is_corpus_manifest, is_url

DOCS = [("a", "Mary went to the kitchen. She got the milk there.")]


def test_a_damaged_corpus_json_still_marks_a_corpus(tmp_path):
    out = tmp_path / "corp"
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False)
    manifest = out / "corpus.json"
    text = manifest.read_bytes()
    manifest.write_bytes(text[: len(text) // 2])  # cut short
    with pytest.raises(json.JSONDecodeError):
        json.loads(manifest.read_bytes())
    assert is_corpus_manifest(manifest)
    with pytest.raises(SaveTargetError, match="indexes/mixpr"):
        MixPRIndex.from_texts([t for _, t in DOCS]).save(out / "indexes" / "mixpr" / "mine")
    assert not (out / "indexes" / "mixpr" / "mine").exists()


def test_a_file_that_is_not_a_corpus_json_is_none(tmp_path):
    other = tmp_path / "corpus.json"
    other.write_text('{"format": "something-else"', "utf-8")  # damaged, another format
    assert not is_corpus_manifest(other)


@pytest.mark.parametrize(
    ("path", "url"),
    [
        ("memory://c/x", True),
        ("s3://bucket/x", True),
        ("simplecache::s3://bucket/x", True),
        ("file:///tmp/x", True),
        ("C://data/idx", False),
        ("runs/a://b/idx", False),
        ("plain/folder", False),
        (os.path.join("a", "b"), False),
    ],
)
def test_is_url_reads_a_protocol_as_fsspec_does(path, url):
    assert is_url(path) is url


def test_a_local_path_with_a_colon_slash_slash_folder_is_saved_locally(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    index = MixPRIndex.from_texts(["Mary went to the kitchen.", "John walked in the garden."])
    index.save("runs/a://b/idx")
    assert (tmp_path / "runs" / "a:" / "b" / "idx").is_dir()
    again = MixPRIndex.load("runs/a://b/idx")
    assert again.search("kitchen", k=1).hits[0].text == "Mary went to the kitchen."


def test_a_url_of_a_store_that_connects_is_refused_without_opening_it(monkeypatch):
    import fsspec

    def no_store(*args, **kwargs):
        raise AssertionError("a refused save opened the store")

    monkeypatch.setattr(fsspec.core, "url_to_fs", no_store)
    index = MixPRIndex.from_texts(["Mary went to the kitchen."])
    with pytest.raises(SaveTargetError, match="is a URL"):
        index.save("ftp://nonexistent.invalid/idx")
