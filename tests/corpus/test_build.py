"""``longctx.corpus.build_indexes`` without Ray (MixPR, sequential): inputs, resume, failures,
storage, loading, searching, the CLI."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from longctx.corpus import (
    CorpusIndex,
    build_indexes,
    load_corpus,
    load_index,
    read_corpus_manifest,
    read_documents,
    safe_component,
)
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError
from tests.corpus.conftest import index_files

STOP_WORDS_ONLY = "the and of the to a in that it was"


def seq(docs, out, **kw):
    return build_indexes(docs, "mixpr", out, use_ray=False, progress=False, **kw)


# -- inputs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad, match",
    [
        ([("a", "x y"), ("a", "z w")], "given twice"),
        ([("../etc", "x y")], r"'\.' or '\.\.'"),
        ([("/abs", "x y")], "absolute"),
        ([("a\x00b", "x y")], "control"),
        ([("", "x y")], "empty"),
        ([("a", "   ")], "text is empty"),
        ([], "no document"),
    ],
)
def test_bad_documents_raise_before_work(bad, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        seq(bad, tmp_path / "c")
    assert not (tmp_path / "c").exists()


def test_bad_method_and_options(tmp_path, docs):
    with pytest.raises(ValueError, match="no query-independent"):
        build_indexes(docs, "youra", tmp_path / "c")
    with pytest.raises(ValueError, match="method must be one of"):
        build_indexes(docs, "bm25", tmp_path / "c")
    with pytest.raises(ValueError, match="takes no option"):
        build_indexes(docs, "garlic", tmp_path / "c", temperature=0.7)
    with pytest.raises(ValueError, match="workers"):
        build_indexes(docs, "mixpr", tmp_path / "c", workers=0)


def test_inputs_folder_glob_jsonl(tmp_path):
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "a.txt").write_text("Alpha text here.", "utf-8")
    (tmp_path / "in" / "sub" / "b.txt").write_text("Beta text here.", "utf-8")
    (tmp_path / "in" / ".hidden").write_text("no", "utf-8")
    assert read_documents(tmp_path / "in") == [
        ("a.txt", "Alpha text here."),
        ("sub/b.txt", "Beta text here."),
    ]
    assert [d for d, _ in read_documents(str(tmp_path / "in" / "**" / "*.txt"))] == [
        "a.txt",
        "b.txt",
    ]  # a glob, as a single file: the file's name (the guides say so)
    assert read_documents(tmp_path / "in" / "sub" / "b.txt") == [("b.txt", "Beta text here.")]
    jl = tmp_path / "c.jsonl"
    jl.write_text(
        json.dumps({"id": 7, "text": "Seven."}) + "\n\n" + json.dumps({"id": "x", "text": "X."}),
        "utf-8",
    )
    assert read_documents(jl) == [("7", "Seven."), ("x", "X.")]
    jl.write_text('{"id": "a"}\n', "utf-8")
    with pytest.raises(ValueError, match="line 1"):
        read_documents(jl)


def test_safe_component_distinct_and_safe():
    ids = ["a b", "a_b", "A b", "x/../y", "ü" * 100]
    names = [safe_component(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert all("/" not in n and not n.startswith(".") and len(n) <= 71 for n in names)


def test_out_holding_user_files_is_refused(tmp_path, docs):
    (tmp_path / "mine.txt").write_text("keep me", "utf-8")
    with pytest.raises(ValueError, match="holds files"):
        seq(docs, tmp_path)
    assert (tmp_path / "mine.txt").read_text("utf-8") == "keep me"


# -- building, resuming, growing ------------------------------------------------------------------
def _results(corpus, queries=("What did the Caterpillar say?", "Who is the Queen?")):
    return [
        [
            (corpus.doc_ids[h.source], h.start, h.end, round(h.score, 12))
            for h in corpus.search(q, k=8)
        ]
        for q in queries
    ]


def test_build_manifest_and_load(tmp_path, docs):
    r = seq(docs, tmp_path / "c")
    assert r.built == tuple(d for d, _ in docs) and not r.failed and r.backend == "in-process"
    m = read_corpus_manifest(tmp_path / "c")
    assert m.method == "mixpr" and list(m.entries) == [d for d, _ in docs]
    e = m.entries["alice/part 0"]
    assert e.status == "done" and e.tokens > 500 and e.seconds > 0 and e.error is None
    assert e.path == "indexes/mixpr"  # one index over every document
    ix = load_index(tmp_path / "c" / e.path)
    assert isinstance(ix, MixPRIndex) and ix.texts == tuple(t for _, t in docs)
    assert ix.doc_ids == tuple(d for d, _ in docs)
    loaded = load_corpus(tmp_path / "c")
    assert list(loaded) == [d for d, _ in docs] and len({id(v) for v in loaded.values()}) == 1


def test_a_corpus_grows_and_equals_one_build(tmp_path, docs):
    seq(docs, tmp_path / "whole")
    first = seq(docs[:2], tmp_path / "grown")
    assert len(first.built) == 2
    again = seq(docs, tmp_path / "grown")  # the two new documents are inserted
    assert again.skipped == (docs[0][0], docs[1][0]) and again.built == (docs[2][0], docs[3][0])
    whole = CorpusIndex.from_corpus(tmp_path / "whole")
    grown = CorpusIndex.from_corpus(tmp_path / "grown")
    assert grown.doc_ids == whole.doc_ids and _results(grown) == _results(whole)
    # a changed text is updated in place, the rest skipped
    changed = [docs[0], (docs[1][0], docs[1][1] + " More words about the Queen."), *docs[2:]]
    r = seq(changed, tmp_path / "grown")
    assert r.built == (docs[1][0],) and len(r.skipped) == 3
    seq(changed, tmp_path / "fresh")
    assert _results(CorpusIndex.from_corpus(tmp_path / "grown")) == _results(
        CorpusIndex.from_corpus(tmp_path / "fresh")
    )
    # documents the call does not name stay in the corpus
    r = seq(docs[:1], tmp_path / "grown")
    assert (
        r.skipped == (docs[0][0],) and len(CorpusIndex.from_corpus(tmp_path / "grown").doc_ids) == 4
    )


def test_stop_word_documents_and_an_empty_vocabulary(tmp_path, docs):
    r = seq([docs[0], ("stop words", STOP_WORDS_ONLY), docs[1]], tmp_path / "c")
    assert r.built == (docs[0][0], "stop words", docs[1][0]) and not r.failed
    corpus = CorpusIndex.from_corpus(tmp_path / "c")
    assert "stop words" not in {corpus.doc_ids[h.source] for h in corpus.search("Alice?", k=5)}
    with pytest.raises(ValueError, match="no term to index"):
        seq([("stop words", STOP_WORDS_ONLY)], tmp_path / "d")
    assert not (tmp_path / "d" / "corpus.json").exists()


def test_swapped_or_edited_entries_are_persist_errors(tmp_path, docs):
    seq(docs[:2], tmp_path / "c")
    f = tmp_path / "c" / "corpus.json"
    raw = json.loads(f.read_text("utf-8"))
    a, b = raw["documents"]
    a["text_sha256"], b["text_sha256"] = b["text_sha256"], a["text_sha256"]
    f.write_text(json.dumps(raw), "utf-8")
    with pytest.raises(PersistError, match="text_sha256"):
        CorpusIndex.from_corpus(tmp_path / "c")
    with pytest.raises(PersistError, match="text_sha256"):
        seq(docs[:2], tmp_path / "c")


def test_bad_mixpr_options_raise_before_anything_is_written(tmp_path, docs):
    with pytest.raises(ValueError, match="preset"):
        seq(docs[:1], tmp_path / "c", preset="nope")
    with pytest.raises(ValueError, match="takes no option"):
        seq(docs[:1], tmp_path / "c", no_such=1)
    assert not (tmp_path / "c").exists()
    seq(docs[:1], tmp_path / "c", preset="paper")  # the corrected call is not refused
    assert read_corpus_manifest(tmp_path / "c").options == {"preset": "paper"}


def test_other_options_in_same_out_raise(tmp_path, docs):
    seq(docs[:1], tmp_path / "c")
    with pytest.raises(ValueError, match=r"another out or give the same options \(none\)"):
        seq(docs[:1], tmp_path / "c", preset="paper")
    seq(docs[:1], tmp_path / "d", preset="paper", chunk=False)
    with pytest.raises(ValueError, match="same options .--whole-documents --preset paper.$"):
        seq(docs[:1], tmp_path / "d")


def test_memory_url_round_trip(docs):
    out = "memory://longctx-test-corpus"
    r = seq(docs[:2], out)
    assert len(r.built) == 2
    assert seq(docs[:2], out).skipped == tuple(d for d, _ in docs[:2])
    corpus = CorpusIndex.from_corpus(out)
    assert [corpus.text(d) for d, _ in docs[:2]] == [t for _, t in docs[:2]]
    res = corpus.search("What did the Caterpillar say?", k=5)
    assert len(res.hits) == 5 and res.info["doc_ids"] == (docs[0][0], docs[1][0])
    for h in res.hits:
        assert corpus.text(corpus.doc_ids[h.source])[h.start : h.end] == h.text


def test_file_url_equals_folder(tmp_path, docs):
    seq(docs[:2], tmp_path / "a")
    seq(docs[:2], f"file://{tmp_path / 'b'}")
    assert index_files(tmp_path / "a") == index_files(tmp_path / "b")


def test_without_ray_runs_sequentially(tmp_path, docs, monkeypatch, caplog):
    from tests.corpus._helpers import hash_embed

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ModuleNotFoundError
    with caplog.at_level(logging.INFO, logger="longctx"):  # said by longctx._ray
        r = build_indexes(docs[:2], "diversity", tmp_path / "c", progress=False, encoder=hash_embed)
    assert r.backend == "sequential" and len(r.built) == 2
    assert "Ray is not installed" in caplog.text and "building 2 documents" in caplog.text
    with pytest.raises(ModuleNotFoundError, match="longctx-rag\\[ray\\]"):
        build_indexes(docs[2:], "diversity", tmp_path / "d", use_ray=True, encoder=hash_embed)
    with caplog.at_level(logging.INFO, logger="longctx.corpus.build"):
        r = build_indexes(docs[:2], "mixpr", tmp_path / "m", workers=2, progress=False)
    assert r.backend == "in-process" and "workers=2 is not used" in caplog.text


def test_use_ray_for_one_rule(monkeypatch):
    """The corpus build and the sharded build ask one function whether to use Ray."""
    from longctx._ray import use_ray_for

    assert use_ray_for(False, None, "x") is False  # never imports ray
    monkeypatch.setitem(sys.modules, "ray", None)
    assert use_ray_for(None, None, "x") is False
    for use_ray, address in ((True, None), (None, "ray://h:1")):
        with pytest.raises(ModuleNotFoundError, match="longctx-rag\\[ray\\]"):
            use_ray_for(use_ray, address, "x")


# -- CLI -------------------------------------------------------------------------------------------
def test_cli_corpus(tmp_path, docs, capsys):
    from longctx.cli import main

    (tmp_path / "in").mkdir()
    for i, (_, text) in enumerate(docs[:2]):
        (tmp_path / "in" / f"{i}.txt").write_text(text, "utf-8")
    (tmp_path / "in" / "stop.txt").write_text(STOP_WORDS_ONLY, "utf-8")
    argv = ["index", str(tmp_path / "in"), "--method", "mixpr", "--out", str(tmp_path / "c")]
    assert main([*argv, "--sequential"]) == 0
    out = capsys.readouterr().out
    assert "built 3, unchanged 0, failed 0" in out
    (tmp_path / "in" / "2.txt").write_text(docs[2][1], "utf-8")
    assert main([*argv, "--format", "json"]) == 0  # the new file is inserted
    data = json.loads(capsys.readouterr().out)
    assert data["skipped"] == ["0.txt", "1.txt", "stop.txt"] and data["built"] == ["2.txt"]
    assert main(["index", str(tmp_path / "in" / "0.txt"), "--out", "x", "--workers", "2"]) == 2
    assert "--workers needs --method" in capsys.readouterr().err


def test_damaged_manifest_is_a_persist_error(tmp_path, docs):
    seq(docs[:1], tmp_path / "c")
    (tmp_path / "c" / "corpus.json").write_text('{"format": "longctx.corpus", "format_', "utf-8")
    with pytest.raises(PersistError, match="damaged"):
        seq(docs[:1], tmp_path / "c")
    with pytest.raises(PersistError, match="damaged"):
        load_corpus(tmp_path / "c")
    with pytest.raises(PersistError, match="no corpus"):
        load_corpus(tmp_path / "nothing")


def test_diversity_corpus_sequential(tmp_path, docs):
    from longctx.diversity import DiversityIndex
    from tests.corpus._helpers import hash_embed

    r = build_indexes(
        docs[:2], "diversity", tmp_path / "c", use_ray=False, progress=False, encoder=hash_embed
    )
    assert len(r.built) == 2, r.errors
    loaded = load_corpus(tmp_path / "c", encoder=hash_embed)
    assert all(isinstance(ix, DiversityIndex) for ix in loaded.values())
    corpus = CorpusIndex(loaded)
    res = corpus.search("the Queen of Hearts", k=4)
    assert len(res.hits) == 4 and res.method in ("mmr", "fps")
    for h in res.hits:
        assert corpus.text(corpus.doc_ids[h.source])[h.start : h.end] == h.text
    pool = [
        (h.score, pos, h.start)
        for pos, ix in enumerate(loaded.values())
        for h in ix.search("the Queen of Hearts", k=4).hits
    ]
    best = sorted(pool, key=lambda x: (-x[0], x[1], x[2]))[:4]
    assert sorted((h.source, h.start) for h in res.hits) == sorted((p, a) for _, p, a in best)


def test_remote_index_needs_its_manifest_last():
    from longctx.corpus import Storage

    s = Storage("memory://longctx-test-put")
    with pytest.raises(ValueError, match="manifest.json"):
        s.put_files({"texts.json": b"[]"}, "indexes/a")
    assert not s.index_complete("indexes/a")
    s.put_files({"texts.json": b"[]", "manifest.json": b"{}"}, "indexes/a")
    assert s.index_complete("indexes/a")
