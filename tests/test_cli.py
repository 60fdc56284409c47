"""The ``longctx retrieve`` command line with ``--method mixpr`` (in-process and as a script)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from longctx.cli import main

REPO = Path(__file__).resolve().parents[1]
QUERY = "What did the Mock Turtle sing about?"


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_mixpr_text_format(capsys, alice_text):
    assert main(["retrieve", "--sample", "alice", "-q", QUERY, "--k", "5"]) == 0
    out = capsys.readouterr().out
    headers = [line for line in out.splitlines() if line.startswith("[")]
    assert len(headers) == 5
    assert "Mock Turtle" in out
    idx = [int(h[1 : h.index("]")]) for h in headers]
    assert idx == sorted(idx)


def test_mixpr_json_format_and_budget(capsys, alice_text):
    argv = ["retrieve", "--sample", "alice", "-q", QUERY, "--budget", "80", "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["method"] == "mixpr" and data["n_chars"] == len(alice_text)
    assert data["passages"]
    for p in data["passages"]:
        assert alice_text[p["start"] : p["end"]] == p["text"]
    assert main(argv[:-4] + ["--format", "json", "--mode", "global", "--k", "3"]) == 0
    assert len(json.loads(capsys.readouterr().out)["passages"]) == 3


def test_mixpr_score_units(alice_text):
    from longctx.cli import build_parser
    from longctx.cli.mixpr import score_units

    args = build_parser().parse_args(["retrieve", "--sample", "alice", "-q", QUERY])
    args.progress = False
    spans, scores, counts = score_units(alice_text, QUERY, args)
    assert len(spans) == scores.shape[0] == counts.shape[0] > 500
    assert (counts > 0).all()


@pytest.mark.parametrize(
    "kind, message",
    [
        ("missing", "does not exist"),
        ("empty", "is empty"),
        ("binary", "binary"),
    ],
)
def test_bad_files(tmp_path, capsys, kind, message):
    path = tmp_path / "input.txt"
    if kind == "empty":
        path.write_text("  \n")
    elif kind == "binary":
        path.write_bytes(b"\x00\x01\x02PNG\x00" * 10)
    assert main(["retrieve", str(path), "-q", "where?"]) != 0
    assert message in _one_error_line(capsys)


def test_empty_query(capsys):
    assert main(["retrieve", "--sample", "alice", "-q", "   "]) != 0
    assert "--query" in _one_error_line(capsys)


@pytest.mark.parametrize("k", ["0", "-1"])
def test_bad_k(capsys, k):
    with pytest.raises(SystemExit) as exc:
        main(["retrieve", "--sample", "alice", "-q", QUERY, "--k", k])
    assert exc.value.code != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--k must be >= 1" in err[0]


def test_console_script_subprocess(tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text(
        "The cat sat on the mat. Mary got the milk there. The dog barked at night.\n"
        "Mary went to the kitchen. John read a long book about ships.\n",
        encoding="utf-8",
    )
    cmd = [sys.executable, "-m", "longctx.cli", "retrieve", str(path), "-q", "Where is the milk?"]
    res = subprocess.run(
        cmd + ["--k", "1", "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [p["text"] for p in data["passages"]] == ["Mary got the milk there."]
    bad = subprocess.run(
        [sys.executable, "-m", "longctx.cli", "retrieve", str(tmp_path / "nope.txt"), "-q", "x"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
