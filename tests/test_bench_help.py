"""The benchmark scripts' ``--help``: the description a whole sentence (the first line of a
docstring cut it mid-sentence: "...an ablation, and") and every option explained (bench_apps'
options had no help; bench_mixpr_growth's sizes lacked their unit and the README's setting)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = [
    "benchmarks/studies/multihop_walk_study.py",
    "benchmarks/bench_garlic_build.py",
    "benchmarks/bench_apps.py",
    "benchmarks/bench_mixpr_growth.py",
]


def _help(script: str) -> str:
    run = subprocess.run(
        [sys.executable, str(REPO / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_is_whole_and_every_option_explained(script):
    text = _help(script)
    description = " ".join(text.split("\n\n")[1].split())
    assert description.endswith((".", ")")), description
    lines = text.split("options:\n", 1)[1].splitlines() + [""]
    bare = [
        line.strip()
        for line, after in zip(lines, lines[1:])
        if line.startswith("  -")
        and not re.search(r"\S  +\S", line.strip())  # no help beside the option
        and not after.startswith("    ")  # nor under it
    ]
    assert bare == [], f"{script}: options without help: {bare}"


def test_growth_help_names_the_unit_and_the_readme_sizes():
    text = " ".join(_help("benchmarks/bench_mixpr_growth.py").split())
    assert "10 million words" in text and "10M" not in text
    assert "default: 0.5,1,2,4,10" in text and "--sizes 1,10,20" in text


def test_no_benchmark_description_is_a_cut_first_line():
    """Every script that takes its description from its docstring takes the first paragraph,
    or a first line that is a whole sentence."""
    cut = []
    for path in sorted((REPO / "benchmarks").rglob("*.py")):
        source = path.read_text("utf-8")
        if not re.search(r'__doc__\.(split\("\\n"\)|splitlines\(\))\[0\]', source):
            continue
        first = (ast.get_docstring(ast.parse(source), clean=False) or "").split("\n")[0]
        if not first.rstrip().endswith((".", ")")):
            cut.append(str(path.relative_to(REPO)))
    assert cut == []
