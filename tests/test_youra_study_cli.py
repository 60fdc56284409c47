"""benchmarks/studies/youra_study.py's command line: a dump folder and named options (was
``sys.argv[1..5]`` by position)."""

from __future__ import annotations

import re

import pytest

from tests._fixtures import load_script


@pytest.fixture(scope="module")
def study():
    return load_script("benchmarks/studies/youra_study.py")


def test_help_names_every_option(study, capsys):
    with pytest.raises(SystemExit) as exc:
        study.parse_args(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in ("folder", "--match", "--kinds", "--layer-sets", "--aggs"):
        assert option in out


def test_defaults_and_named_options(study, tmp_path):
    args = study.parse_args([str(tmp_path)])
    assert args.folder == tmp_path and args.match is None
    assert args.kinds == list(study.DEFAULT_KINDS) and "distmed-ans" not in args.kinds
    assert args.layer_sets == list(study.LAYER_SETS) and args.aggs == ["gmean", "mean"]
    args = study.parse_args(
        [str(tmp_path), "--match", "squad|hotpot", "--kinds", "lograt,Q/C"]
        + ["--layer-sets", "last", "--aggs", "max,shrink8"]
    )
    assert args.match.pattern == "squad|hotpot" and isinstance(args.match, re.Pattern)
    assert (args.kinds, args.layer_sets, args.aggs) == (
        ["lograt", "Q/C"],
        ["last"],
        ["max", "shrink8"],
    )


@pytest.mark.parametrize(
    "extra, word",
    [
        (["--kinds", "instr,nope"], "nope"),
        (["--layer-sets", "middle"], "middle"),
        (["--aggs", "shrinkx"], "shrinkx"),
        (["--kinds", ","], "kinds"),
    ],
)
def test_a_bad_name_is_an_error_naming_it(study, tmp_path, capsys, extra, word):
    with pytest.raises(SystemExit) as exc:
        study.parse_args([str(tmp_path), *extra])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert word in err and extra[0] in err


def test_a_missing_folder_and_an_empty_one(study, tmp_path, capsys):
    with pytest.raises(SystemExit):
        study.parse_args([str(tmp_path / "missing")])
    assert "is not a folder" in capsys.readouterr().err
    assert study.main([str(tmp_path)]) == 2
    assert "no dumps" in capsys.readouterr().err
