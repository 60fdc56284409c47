"""benchmarks/studies/mixpr_first_query.py: a trial runs in the checkout it measures, so it must
run in a checkout from before session 20 (its ``bench_vs_bm25.py`` has no ``rotated``), and
``--rotate`` asks every question first equally often by default."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests._fixtures import REPO, load_script
from tests._persist_helpers import TEXTS

STUDY = REPO / "benchmarks" / "studies" / "mixpr_first_query.py"

#: A checkout's bench before session 20: its questions and imports, no ``rotated``.
OLD_BENCH = """
def _imports(system):
    pass


def _questions(n):
    return ["cat", "dog", "Paris", "Rome", "fish", "milk", "garden", "weather", "mat", "Italy"][:n]
"""


@pytest.fixture(scope="module")
def study():
    return load_script("benchmarks/studies/mixpr_first_query.py")


def test_a_trial_runs_in_a_checkout_whose_bench_has_no_rotation(tmp_path):
    """``_trial`` called the measured checkout's ``bench_vs_bm25.rotated``: a checkout from
    before session 20 crashed (AttributeError); the study orders the questions itself."""
    from longctx.mixpr import MixPRIndex

    old = tmp_path / "old"
    (old / "benchmarks").mkdir(parents=True)
    (old / "benchmarks" / "bench_vs_bm25.py").write_text(OLD_BENCH, "utf-8")
    MixPRIndex.from_texts(TEXTS).save(tmp_path / "work" / "0.001M" / "saved")
    cmd = [sys.executable, str(STUDY), "--trial", "--words", "0.001", "--first", "3"]
    run = subprocess.run(
        [*cmd, "--work", str(tmp_path / "work")],
        cwd=old,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0, run.stderr[-800:]
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert figures["first_ms"] >= 0 and figures["next_ms"] >= 0


def test_the_rotation_is_the_benchs(study):
    bench = load_script("benchmarks/bench_vs_bm25.py")
    for first in range(10):
        assert study.rotated(10, first) == bench.rotated(10, first)
    assert study.rotated(4, 2) == [2, 3, 0, 1, 2]


def test_rotate_defaults_to_one_trial_per_question_and_says_when_uneven(study, capsys):
    assert study.trial_count(None, rotate=True) == study.N_QUESTIONS == 10
    assert study.trial_count(None, rotate=False) == 6
    assert capsys.readouterr().err == ""
    assert study.trial_count(20, rotate=True) == 20
    assert capsys.readouterr().err == ""
    assert study.trial_count(6, rotate=True) == 6
    err = capsys.readouterr().err
    assert "6 trials" in err and "questions 0-5" in err
