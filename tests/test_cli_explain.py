"""``longctx retrieve --explain``: a 'why:' line per passage (text) and each passage's
``explanation`` (JSON); refused with one line for a method it does not cover."""

from __future__ import annotations

import json
import math

import pytest

from longctx.cli import main

QUERY = "What did the Mock Turtle sing about?"


def test_text_has_a_why_line_per_passage(capsys):
    assert main(["retrieve", "--sample", "alice", "-q", QUERY, "-k", "3", "--explain"]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert len(heads) == 3
    assert all(lines[i + 1].startswith("why: ") and "%" in lines[i + 1] for i in heads)


@pytest.mark.parametrize("method", ["mixpr", "fps"])
def test_json_passages_carry_their_explanation(capsys, monkeypatch, tmp_path, method):
    from longctx.cli import diversity as cli_div
    from tests.test_diversity import HashEncoder

    monkeypatch.setattr(cli_div, "_encoder", lambda args: HashEncoder())  # no model to load
    path = tmp_path / "t.txt"
    path.write_text(
        "The Mock Turtle sang about soup. The Gryphon danced. Alice listened to the song. "
        "The soup was beautiful, sang the Turtle. The Queen played croquet.",
        encoding="utf-8",
    )
    argv = ["retrieve", str(path), "-q", QUERY, "-k", "3", "--explain", "-m", method,
            "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["passages"]) == 3
    for p in data["passages"]:
        e = p["explanation"]
        assert e["method"] == method
        assert math.isclose(sum(e["parts"].values()), p["score"], abs_tol=1e-9)


def test_without_explain_no_explanation(capsys):
    assert main(["retrieve", "--sample", "alice", "-q", QUERY, "-k", "2", "--format", "json"]) == 0
    assert all("explanation" not in p for p in json.loads(capsys.readouterr().out)["passages"])


def test_garlic_is_no_longer_refused(capsys):
    # every method explains now; garlic fails here only for its missing --graph
    assert main(["retrieve", "--sample", "alice", "-q", QUERY, "--explain", "-m", "garlic"]) == 2
    err = capsys.readouterr().err
    assert "not implemented" not in err and "--graph" in err


def test_search_a_corpus_with_explain(tmp_path, capsys):
    from longctx.corpus import build_indexes

    docs = [
        ("kitchen", "Mary went to the kitchen. She got the milk there. The milk was cold."),
        ("garden", "John walked in the garden. The roses were red. He picked a rose for Mary."),
    ]
    out = tmp_path / "corpus"
    assert not build_indexes(docs, "mixpr", out, use_ray=False).failed
    argv = ["search", str(out), "-q", "Where is the milk?", "--k", "2", "--explain"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert heads and all(lines[i + 1].startswith("why: ") for i in heads)
    assert main([*argv, "--format", "json"]) == 0
    for p in json.loads(capsys.readouterr().out)["passages"]:
        assert math.isclose(sum(p["explanation"]["parts"].values()), p["score"], abs_tol=1e-9)
    argv[argv.index("2")] = "6"  # every unit: some in each shard
    one = {(p["doc_id"], p["start"]): p["explanation"] for p in json.loads(
        capsys.readouterr().out if main([*argv, "--format", "json"]) == 0 else "")["passages"]}  # fmt: skip
    # a corpus built with --shards: the same explanations (one index's, over the shards)
    shards = tmp_path / "shards"
    assert not build_indexes(docs, "mixpr", shards, use_ray=False, shards=2).failed
    argv[1] = str(shards)
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert len(heads) == len(one) and all(lines[i + 1].startswith("why: ") for i in heads)
    assert main([*argv, "--format", "json"]) == 0
    passages = json.loads(capsys.readouterr().out)["passages"]
    assert {p["doc_id"] for p in passages} == {"kitchen", "garden"}  # both shards
    for p in passages:
        e, want = p["explanation"], one[(p["doc_id"], p["start"])]
        assert e["parts"] == pytest.approx(want["parts"], abs=1e-12)
        assert [t["term"] for t in e["terms"]] == [t["term"] for t in want["terms"]]


def test_mixpr_names_the_units_it_came_from_by_the_file(capsys, tmp_path):
    """``retrieve --explain`` names the restart units by the file's name, as ``search`` does
    (``from book.txt#3``), not by the source number (``from 0#3``)."""
    path = tmp_path / "book.txt"
    path.write_text(
        "The Mock Turtle sang about soup. The Gryphon danced with the Turtle. Alice listened to "
        "the song of the Turtle. The soup was beautiful, sang the Turtle. The Queen played.",
        encoding="utf-8",
    )
    assert (
        main(["retrieve", str(path), "-q", QUERY, "-k", "2", "--explain", "--max-words", "8"]) == 0
    )
    whys = [line for line in capsys.readouterr().out.splitlines() if line.startswith("why: ")]
    assert any("from book.txt#" in w for w in whys) and not any("from 0#" in w for w in whys)
    assert main(["retrieve", "--sample", "alice", "-q", QUERY, "-k", "2", "--explain"]) == 0
    assert "from sample:alice#" in capsys.readouterr().out
