"""A corpus follows its folder (issue 45): a file removed from a folder (a record from a JSONL
file) is removed from the corpus on the next build, said in one line; a file that cannot be read
as text is skipped with one warning and the rest indexed; ``longctx index FOLDER`` without
``--method`` names ``--method mixpr``."""

from __future__ import annotations

import json
import logging
import os

import pytest

from longctx.cli import main
from longctx.corpus import build_indexes, load_corpus, read_corpus_manifest
from longctx.corpus.documents import read_corpus_input
from longctx.io import InputError
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError

BINARY = bytes(range(256)) * 8


def seq(src, out, method="mixpr", **kw):
    return build_indexes(src, method, out, use_ray=False, progress=False, **kw)


def _folder(tmp_path, docs, n=3, binary=True):
    folder = tmp_path / "books"
    folder.mkdir()
    for i in range(n):
        (folder / f"{i}.txt").write_text(docs[i][1], "utf-8")
    if binary:
        (folder / "cover.png").write_bytes(BINARY)
    return folder


def _ids_of(loaded) -> list:
    index = next(iter(loaded.values()))
    return list(index.doc_ids)


def test_binary_file_is_skipped_with_one_warning(tmp_path, docs, caplog):
    folder = _folder(tmp_path, docs)
    with caplog.at_level(logging.WARNING, logger="longctx"):
        inp = read_corpus_input(folder)
    assert [d for d, _ in inp.docs] == ["0.txt", "1.txt", "2.txt"]
    assert inp.skipped == ("cover.png",)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "cover.png" in warned[0] and "\n" not in warned[0]
    assert set(inp.sources.values()) == {os.path.abspath(folder)} == set(inp.named)
    # a binary file named on its own is still an error, and a folder of nothing readable too
    with pytest.raises(InputError, match="binary"):
        read_corpus_input(folder / "cover.png")
    only = tmp_path / "only"
    only.mkdir()
    (only / "x.bin").write_bytes(BINARY)
    with pytest.raises(InputError, match="no file readable as text"):
        read_corpus_input(only)


def test_mixpr_corpus_follows_its_folder(tmp_path, docs):
    folder = _folder(tmp_path, docs)
    r = seq(folder, tmp_path / "c")
    assert r.built == ("0.txt", "1.txt", "2.txt") and r.unreadable == ("cover.png",)
    assert r.summary().startswith("built 3, unchanged 0, unreadable 1, failed 0 in ")
    (folder / "1.txt").unlink()
    r = seq(folder, tmp_path / "c")
    assert r.removed == ("1.txt",) and r.built == () and r.skipped == ("0.txt", "2.txt")
    assert "removed 1" in r.summary()
    loaded = load_corpus(tmp_path / "c")
    assert list(loaded) == ["0.txt", "2.txt"] and _ids_of(loaded) == ["0.txt", "2.txt"]
    assert set(read_corpus_manifest(tmp_path / "c").entries) == {"0.txt", "2.txt"}
    # the corpus searches as a fresh build over what the folder holds
    fresh = MixPRIndex.from_texts([docs[0][1], docs[2][1]], ids=["0.txt", "2.txt"])
    got = next(iter(loaded.values())).search("the Queen of Hearts", k=5)
    want = fresh.search("the Queen of Hearts", k=5)
    assert [(h.source, h.start, h.end) for h in got.hits] == [
        (h.source, h.start, h.end) for h in want.hits
    ]
    # a third run changes nothing
    r = seq(folder, tmp_path / "c")
    assert r.removed == () and r.built == () and r.skipped == ("0.txt", "2.txt")


def test_every_file_replaced_and_other_sources_stay(tmp_path, docs):
    folder = _folder(tmp_path, docs, n=2, binary=False)
    seq(folder, tmp_path / "c")
    seq([("mine", docs[3][1])], tmp_path / "c")  # pairs: no source, never removed
    for f in folder.iterdir():
        f.unlink()
    (folder / "new.txt").write_text(docs[2][1], "utf-8")
    r = seq(folder, tmp_path / "c")
    assert set(r.removed) == {"0.txt", "1.txt"} and r.built == ("new.txt",)
    assert sorted(load_corpus(tmp_path / "c")) == ["mine", "new.txt"]


def test_unreadable_file_keeps_its_indexed_version(tmp_path, docs):
    folder = _folder(tmp_path, docs, n=2, binary=False)
    seq(folder, tmp_path / "c")
    (folder / "1.txt").write_bytes(BINARY)  # now unreadable: skipped, not removed
    r = seq(folder, tmp_path / "c")
    assert r.removed == () and r.unreadable == ("1.txt",)
    assert sorted(load_corpus(tmp_path / "c")) == ["0.txt", "1.txt"]


def test_jsonl_record_removed(tmp_path):
    path = tmp_path / "p.jsonl"
    recs = [{"id": f"p{i}", "text": f"Passage {i} about river number {i} and mill {i}."}
            for i in range(4)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), "utf-8")
    seq(path, tmp_path / "c")
    path.write_text("".join(json.dumps(r) + "\n" for r in recs[:3]), "utf-8")
    r = seq(path, tmp_path / "c")
    assert r.removed == ("p3",)
    assert sorted(load_corpus(tmp_path / "c")) == ["p0", "p1", "p2"]


def test_sharded_corpus_follows_its_folder(tmp_path, docs):
    folder = _folder(tmp_path, docs, n=4, binary=False)
    seq(folder, tmp_path / "c", shards=2)
    (folder / "3.txt").unlink()
    r = seq(folder, tmp_path / "c", shards=2)
    assert r.removed == ("3.txt",)
    loaded = load_corpus(tmp_path / "c", use_ray=False)
    try:
        assert sorted(loaded) == ["0.txt", "1.txt", "2.txt"]
        index = next(iter(loaded.values()))
        assert sorted(index.digests()) == ["0.txt", "1.txt", "2.txt"]
        assert all(h.text for h in index.search("the Queen of Hearts", k=3).hits)
    finally:
        next(iter(loaded.values())).close()


def test_sharded_removal_that_empties_a_shard_is_refused_before_work(tmp_path, docs):
    folder = _folder(tmp_path, docs, n=2, binary=False)
    seq(folder, tmp_path / "c", shards=2)  # one document a shard
    before = (tmp_path / "c" / "corpus.json").read_bytes()
    (folder / "1.txt").unlink()
    with pytest.raises(ValueError, match="empty"):
        seq(folder, tmp_path / "c", shards=2)
    assert (tmp_path / "c" / "corpus.json").read_bytes() == before


def test_diversity_corpus_removes_the_index_folder(tmp_path, docs):
    from tests.corpus._helpers import hash_embed

    folder = _folder(tmp_path, docs, n=2, binary=False)
    seq(folder, tmp_path / "c", "diversity", encoder=hash_embed)
    manifest = read_corpus_manifest(tmp_path / "c")
    gone = tmp_path / "c" / manifest.entries["1.txt"].path
    assert gone.is_dir()
    (folder / "1.txt").unlink()
    r = seq(folder, tmp_path / "c", "diversity", encoder=hash_embed)
    assert r.removed == ("1.txt",) and not gone.exists()
    assert list(load_corpus(tmp_path / "c", encoder=hash_embed)) == ["0.txt"]


def test_forged_source_is_a_persist_error(tmp_path, docs):
    folder = _folder(tmp_path, docs, n=1, binary=False)
    seq(folder, tmp_path / "c")
    path = tmp_path / "c" / "corpus.json"
    data = json.loads(path.read_text("utf-8"))
    data["documents"][0]["source"] = "x" * 5000
    path.write_text(json.dumps(data), "utf-8")
    with pytest.raises(PersistError, match="source"):
        read_corpus_manifest(tmp_path / "c")


def test_cli_says_what_it_removed_and_skipped(tmp_path, docs, capsys):
    folder = _folder(tmp_path, docs, n=2)
    argv = ["index", str(folder), "--method", "mixpr", "--out", str(tmp_path / "c")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("longctx: warning: skipped, not indexed:") == 1 and "cover.png" in err
    (folder / "0.txt").unlink()
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "removed (no longer in their folder or file): 0.txt"
    assert out[1].startswith("built 0, unchanged 1, removed 1, unreadable 1, failed 0")
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["removed"] == [] and data["unreadable"] == ["cover.png"]


def test_cli_folder_without_method_names_method_mixpr(tmp_path, docs, capsys):
    folder = _folder(tmp_path, docs, n=1, binary=False)
    assert main(["index", str(folder), "--out", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--method mixpr" in err and "is a folder" in err
    assert not (tmp_path / "g").exists()


def test_sharded_k_search_counts_no_tokens(tmp_path, docs, monkeypatch):
    """A ``k`` search of a loaded sharded corpus selects without counting every unit's tokens
    (it spent 0.5-0.75 s of a CLI search in 'select' doing so; an unsharded index never does),
    and picks what one index picks."""
    import longctx.mixpr.index as mixpr_index

    seq(docs, tmp_path / "s", shards=2)
    seq(docs, tmp_path / "u")
    calls = []
    real = mixpr_index.count_units
    monkeypatch.setattr(
        mixpr_index, "count_units", lambda *a, **kw: calls.append(1) or real(*a, **kw)
    )
    sharded = next(iter(load_corpus(tmp_path / "s", use_ray=False).values()))
    one = next(iter(load_corpus(tmp_path / "u").values()))
    try:
        got = sharded.search("the Queen of Hearts", k=5)
        assert calls == []
        want = one.search("the Queen of Hearts", k=5)
        assert [(got.info["doc_ids"][i], h.start) for i, h in enumerate(got.hits)] == [
            (want.info["doc_ids"][i], h.start) for i, h in enumerate(want.hits)
        ]
        sharded.search("the Queen of Hearts", token_budget=200)
        assert calls  # a token budget needs the counts
    finally:
        sharded.close()


@pytest.mark.parametrize("shards", [None, 2])
def test_a_removal_stopped_half_way_is_finished_by_the_next_run(
    tmp_path, docs, monkeypatch, shards
):
    """The manifest is written before the index changes, so a run stopped between the two leaves
    a corpus that loads, and the next run deletes what the manifest no longer lists."""
    from longctx.corpus.storage import Storage

    folder = _folder(tmp_path, docs, n=4, binary=False)
    seq(folder, tmp_path / "c", shards=shards)
    (folder / "3.txt").unlink()

    def stop(*a, **kw):
        raise RuntimeError("stopped")

    monkeypatch.setattr(Storage, "put_index", stop)
    monkeypatch.setattr(Storage, "put_files", stop)
    with pytest.raises(RuntimeError, match="stopped"):
        seq(folder, tmp_path / "c", shards=shards)
    monkeypatch.undo()
    loaded = load_corpus(tmp_path / "c", use_ray=False)
    assert sorted(loaded) == ["0.txt", "1.txt", "2.txt"]  # loads: no entry names a missing document
    next(iter(loaded.values())).close() if shards else None
    r = seq(folder, tmp_path / "c", shards=shards)
    assert r.removed == ("3.txt",)
    index = next(iter(load_corpus(tmp_path / "c", use_ray=False).values()))
    held = sorted(index.digests()) if shards else sorted(index.doc_ids)
    assert held == ["0.txt", "1.txt", "2.txt"]
    if shards:
        index.close()


def test_source_is_written_only_for_documents_read_from_a_source(tmp_path, docs):
    folder = _folder(tmp_path, docs, n=1, binary=False)
    seq(folder, tmp_path / "c")
    seq([("mine", docs[3][1])], tmp_path / "c")
    data = json.loads((tmp_path / "c" / "corpus.json").read_text("utf-8"))
    by_id = {d["doc_id"]: d for d in data["documents"]}
    assert by_id["0.txt"]["source"] == os.path.abspath(folder) and "source" not in by_id["mine"]
