"""A folder input passes over hidden files and folders and links to folders: the core's walk
counts them (``CorpusInput.passed_over``, ``CorpusBuildResult.passed_over``) and ``longctx
index`` says so in one line (it was silent, even under ``--verbose``)."""

from __future__ import annotations

import json

import pytest

from longctx.cli import main
from longctx.corpus.documents import SkippedInFolder, read_corpus_input
from longctx.io import InputError


def _folder(tmp_path):
    books = tmp_path / "books"
    (books / "sub").mkdir(parents=True)
    (books / "a.txt").write_text("Alice was beginning to get very tired.", "utf-8")
    (books / "sub" / "b.txt").write_text("The Queen of Hearts made some tarts.", "utf-8")
    (books / ".notes.txt").write_text("hidden", "utf-8")
    (books / "sub" / ".draft.txt").write_text("hidden too", "utf-8")
    (books / ".git" / "objects").mkdir(parents=True)
    (books / ".git" / "HEAD").write_text("ref: refs/heads/main", "utf-8")
    (books / ".git" / "objects" / "x.txt").write_text("never walked", "utf-8")
    (books / "loop").symlink_to(books)
    return books


def test_read_corpus_input_counts_what_the_walk_passed_over(tmp_path):
    books = _folder(tmp_path)
    inp = read_corpus_input(str(books))
    assert [d for d, _ in inp.docs] == ["a.txt", "sub/b.txt"]
    assert inp.passed_over == (SkippedInFolder(str(books), 2, 1, 1),)
    assert str(inp.passed_over[0]) == (
        f"skipped 2 hidden files, 1 hidden folder and 1 link to a folder under {books}/"
    )
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "c.txt").write_text("Nothing hidden here.", "utf-8")
    assert read_corpus_input(str(tmp_path / "plain")).passed_over == ()


def test_a_folder_of_hidden_files_only_says_what_it_skipped(tmp_path):
    (tmp_path / "h").mkdir()
    (tmp_path / "h" / ".only.txt").write_text("hidden", "utf-8")
    with pytest.raises(InputError, match=r"holds no file \(skipped: 1 hidden file\)"):
        read_corpus_input(str(tmp_path / "h"))


def test_cli_index_says_in_one_line_what_it_passed_over(tmp_path, capsys):
    """A note on stderr (it went to stdout, among the results), naming the guide's section, not
    a path of the repository a pip user does not have; ``--quiet`` hides it."""
    books = _folder(tmp_path)
    out = tmp_path / "corpus"
    assert main(["index", str(books), "--method", "mixpr", "--out", str(out)]) == 0
    got = capsys.readouterr()
    assert "skipped" not in got.out and "hidden" not in got.out
    said = [x for x in got.err.splitlines() if "hidden" in x]
    assert said == [
        f"longctx: note: skipped 2 hidden files, 1 hidden folder and 1 link to a folder under "
        f"{books}/ (see the CLI guide: hidden files and links)"
    ]
    argv = ["index", str(books), "--method", "mixpr", "--out", str(out), "--format", "json"]
    assert main(argv) == 0
    got = capsys.readouterr()
    assert "hidden" in got.err  # the note, beside the JSON
    got = json.loads(got.out)
    assert got["passed_over"] == [
        {"folder": str(books), "hidden_files": 2, "hidden_folders": 1, "folder_links": 1}
    ]
    assert got["skipped"] == ["a.txt", "sub/b.txt"]  # the documents already indexed, unchanged
    assert main([*argv, "--quiet"]) == 0
    got = capsys.readouterr()
    assert got.err == "" and json.loads(got.out)["passed_over"]
