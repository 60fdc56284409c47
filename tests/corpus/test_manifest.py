"""The corpus manifest ``corpus.json`` is untrusted input (#28): entries' text digests checked on
load, every field typed, JSON depth bounded; options checked before anything is recorded;
``memory://`` outputs refused by the CLI."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longctx.corpus import CorpusIndex, build_indexes, load_corpus, read_corpus_manifest
from longctx.io import InputError
from longctx.persist import PersistError

DOCS = [
    ("a", "The cat sat on the mat. The cat was happy and purred all day long."),
    ("b", "The dog ran in the park. The dog chased a red ball until sunset."),
]


def seq(docs, out, **kw):
    return build_indexes(docs, "mixpr", out, use_ray=False, progress=False, **kw)


def _edit(out, edit):
    path = out / "corpus.json"
    data = json.loads(path.read_text("utf-8"))
    edit(data)
    path.write_text(json.dumps(data), "utf-8")


def test_swapped_entry_paths_are_a_persist_error_naming_the_entry(tmp_path):
    out = tmp_path / "c"
    seq(DOCS, out)
    assert CorpusIndex.from_corpus(out).text("a") == DOCS[0][1]

    def swap(data):  # a MixPR corpus is one index: its entries share a path, swap the digests
        d = data["documents"]
        d[0]["text_sha256"], d[1]["text_sha256"] = d[1]["text_sha256"], d[0]["text_sha256"]

    _edit(out, swap)
    with pytest.raises(PersistError, match=r"corpus\.json.*document 'a'.*text_sha256"):
        CorpusIndex.from_corpus(out)
    with pytest.raises(PersistError, match="document 'a'"):
        load_corpus(out)


def test_edited_digest_is_a_persist_error(tmp_path):
    out = tmp_path / "c"
    seq(DOCS, out)
    _edit(out, lambda data: data["documents"][1].update(text_sha256="0" * 64))
    with pytest.raises(PersistError, match="document 'b'"):
        load_corpus(out)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["documents"][0].update(path="indexes/../../etc"), r"documents\[0\]\.path"),
        (lambda d: d["documents"][0].update(path="indexes/x/y"), r"documents\[0\]\.path"),
        (lambda d: d["documents"][0].update(path="/etc"), r"documents\[0\]\.path"),
        (lambda d: d["documents"][0].update(path="indexes/C:"), r"documents\[0\]\.path"),
        (lambda d: d["documents"][0].update(path=["indexes/x"]), r"documents\[0\]\.path"),
        (lambda d: d["documents"][0].update(doc_id=7), r"documents\[0\]\.doc_id"),
        (lambda d: d["documents"][0].update(tokens="many"), r"documents\[0\]\.tokens"),
        (lambda d: d["documents"][0].update(seconds=True), r"documents\[0\]\.seconds"),
        (lambda d: d["documents"][0].update(extra=[1]), r"documents\[0\]\.extra"),
        (lambda d: d["documents"][0].update(status="maybe"), r"documents\[0\]\.status"),
        (lambda d: d["documents"][0].update(text_sha256="abc"), r"documents\[0\]\.text_sha256"),
        (lambda d: d["documents"][0].pop("text_sha256"), r"documents\[0\]"),
        (lambda d: d["documents"][0].update(evil=1), r"documents\[0\]"),
        (lambda d: d["documents"][1].update(doc_id="a"), r"documents\[1\]\.doc_id"),
        (lambda d: d["documents"][1].update(path="indexes/other"), r"\[1\]\.path"),
        (lambda d: d.update(options=[1]), "options"),
        (lambda d: d.update(method=None), "method"),
        (lambda d: d.update(documents={}), "documents"),
    ],
)
def test_damaged_entries_are_persist_errors_naming_the_field(tmp_path, edit, field):
    out = tmp_path / "c"
    seq(DOCS, out)
    _edit(out, edit)
    with pytest.raises(PersistError, match=rf"corpus\.json.*{field}"):
        read_corpus_manifest(out)


def test_deeply_nested_corpus_json_is_a_persist_error(tmp_path, capsys):
    from longctx.cli import main

    out = tmp_path / "c"
    out.mkdir()
    (out / "corpus.json").write_text("[" * 100_000 + "]" * 100_000, "utf-8")
    for call in (
        lambda: read_corpus_manifest(out),
        lambda: load_corpus(out),
        lambda: seq(DOCS, out),
    ):
        with pytest.raises(PersistError, match="nested"):
            call()
    from longctx.persist import MAX_JSON_DEPTH

    deep = MAX_JSON_DEPTH + 6
    (out / "corpus.json").write_text('{"a":' * deep + "1" + "}" * deep, "utf-8")
    with pytest.raises(PersistError, match=f"nested deeper than {MAX_JSON_DEPTH}"):
        read_corpus_manifest(out)
    (tmp_path / "in.txt").write_text(DOCS[0][1], "utf-8")
    argv = ["index", str(tmp_path / "in.txt"), "--method", "mixpr", "--out", str(out)]
    assert main([*argv, "--sequential"]) == 2
    err = capsys.readouterr().err
    assert "nested" in err and "unexpected" not in err and len(err.strip().splitlines()) == 1


def test_deeply_nested_jsonl_line_is_an_input_error(tmp_path):
    from longctx.corpus import read_documents

    path = tmp_path / "docs.jsonl"
    path.write_text('{"id": "a", "text": "x y"}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(InputError, match=r"docs\.jsonl' line 2: nested too deeply"):
        read_documents(path)


@pytest.mark.parametrize(
    "method, options, match",
    [
        ("mixpr", {"preset": "nope"}, "preset"),
        ("mixpr", {"max_words": 0}, "max_words"),
        ("mixpr", {"bogus": 1}, "bogus"),
        ("mixpr", {"stop_words": 3}, "stop_words"),
        ("diversity", {"unit": "page"}, "unit"),
        ("diversity", {"max_unit_tokens": 0}, "max_unit_tokens"),
        ("garlic", {"chunk_tokens": 0}, "chunk_tokens"),
        ("garlic", {"chunk_tokens": 500, "batch_tokens": 100}, "chunk_tokens"),
        ("garlic", {"max_levels": 1}, "max_levels"),
        ("garlic", {"model": 3}, "model"),
    ],
)
def test_bad_option_values_raise_before_anything_is_recorded(tmp_path, method, options, match):
    out = tmp_path / "c"
    with pytest.raises((ValueError, TypeError), match=match):
        build_indexes(DOCS, method, out, use_ray=False, progress=False, **options)
    assert not out.exists()


def test_typo_preset_in_the_cli_then_the_corrected_run(tmp_path, capsys):
    """#28's reproduction: ``--preset nope`` used to be recorded and the corrected rerun
    refused ("built with options {'preset': 'nope'}")."""
    from longctx.cli import main

    (tmp_path / "in.txt").write_text(DOCS[0][1], "utf-8")
    argv = ["index", str(tmp_path / "in.txt"), "--method", "mixpr", "--out", str(tmp_path / "c")]
    assert main([*argv, "--sequential", "--preset", "nope"]) == 2
    assert "preset must be one of" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
    assert main([*argv, "--sequential", "--preset", "paper"]) == 0
    assert "built 1" in capsys.readouterr().out


def test_a_corpus_whose_documents_all_failed_takes_other_options(tmp_path):
    """A corpus that recorded options but finished nothing (a typo recorded by an older
    longctx) may be built again with the corrected options; one with a finished index not."""
    out = tmp_path / "c"
    out.mkdir()
    entry = {"doc_id": "a", "path": "indexes/mixpr", "status": "failed", "text_sha256": "0" * 64}
    manifest = {
        "format": "longctx.corpus",
        "format_version": 1,
        "method": "mixpr",
        "options": {"preset": "nope"},
        "options_sha256": "0" * 64,
        "documents": [entry],
    }
    (out / "corpus.json").write_text(json.dumps(manifest), "utf-8")
    r = seq(DOCS, out, preset="paper")
    assert r.built == ("a", "b") and read_corpus_manifest(out).options == {"preset": "paper"}
    with pytest.raises(ValueError, match="another out"):
        seq(DOCS, out)


def test_memory_out_refused_by_the_cli_and_logged_by_the_api(tmp_path, capsys, caplog):
    from longctx.cli import main

    (tmp_path / "in.txt").write_text(DOCS[0][1], "utf-8")
    for url in ("memory://x/y", "MEMORY://x/y"):
        argv = ["index", str(tmp_path / "in.txt"), "--method", "mixpr", "--out", url]
        assert main([*argv, "--sequential"]) == 2
        err = capsys.readouterr().err
        assert "in-memory" in err and "vanish" in err and len(err.strip().splitlines()) == 1
    with caplog.at_level(logging.WARNING, logger="longctx.corpus.build"):
        r = seq(DOCS[:1], "memory://longctx-test-manifest")
    assert r.built == ("a",) and "lost when it exits" in caplog.text


_SEGMENTS = ["indexes", "..", ".", "", "a", "b-1", "/", "\\", "\x00", "C:", "~", "x/y"]


@settings(max_examples=200, deadline=None)
@given(
    path=st.one_of(
        st.lists(st.sampled_from(_SEGMENTS), min_size=1, max_size=5).map("/".join),
        st.text(max_size=30),
    )
)
def test_random_entry_paths_are_plain_folders_under_indexes_or_refused(path):
    """Property: an entry's path is accepted only as ``indexes/<one plain folder name>``."""
    from longctx.corpus.manifest import CorpusManifest, text_sha256

    entry = {"doc_id": "a", "path": path, "status": "done", "text_sha256": text_sha256("x")}
    data = {
        "format": "longctx.corpus",
        "format_version": 1,
        "method": "mixpr",
        "options": {},
        "options_sha256": "0",
        "documents": [entry],
    }
    try:
        m = CorpusManifest.from_json(data, "corpus.json")
    except PersistError as exc:
        assert "documents[0].path" in str(exc)
        return
    head, name = m.entries["a"].path.split("/", 1)
    assert head == "indexes" and name not in ("", ".", "..")
    assert all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
