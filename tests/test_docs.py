"""README.md and the documentation site (docs/, mkdocs.yml) stay true.

- Every ```python block of README.md and docs/**/*.md runs ON ITS OWN (a fresh interpreter, cwd a
  temporary folder, HF_HUB_OFFLINE=1, the repository on PYTHONPATH) and exits 0. A block preceded
  by the line ``<!-- docs-test: skip (reason) -->`` is only parsed, and the names it imports must
  exist (for blocks that run an LLM for minutes on CPU); the reason is required.
- A ```console block preceded by ``<!-- docs-test: run -->`` runs each ``$ longctx ...`` line
  (as ``python -m longctx.cli ...``) and needs exit status 0.
- ``mkdocs build --strict`` passes (skipped when mkdocs is not installed).

The blocks' processes run two at a time, started at the first block's test (``tests._ahead``).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests._ahead import Ahead, selected

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w+)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!--\s*docs-test:\s*(skip|run)\b\s*(.*?)-->")


def _blocks(path: Path):
    """``(language, code, marker, reason, line)`` for every fenced block of ``path``."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip().splitlines()
        marker = MARKER.search(before[-1]) if before else None
        out.append(
            (
                m.group(1),
                m.group(2),
                marker.group(1) if marker else None,
                marker.group(2).strip() if marker else "",
                text.count("\n", 0, m.start()) + 1,
            )
        )
    return out


def _cases(language: str):
    cases = []
    for path in DOC_FILES:
        for lang, code, marker, reason, line in _blocks(path):
            if lang == language:
                name = f"{path.relative_to(ROOT)}:{line}"
                cases.append(pytest.param(code, marker, reason, id=name))
    return cases


def _env() -> dict:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _check_imports(code: str) -> None:
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)


PYTHON_CASES = _cases("python")
CONSOLE_CASES = [c for c in _cases("console") if c.values[1] == "run"]


def _run_python_block(code: str, folder: Path) -> subprocess.CompletedProcess:
    """``code`` run as a script by a fresh interpreter in ``folder`` (``_env()``)."""
    script = folder / "block.py"
    script.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=folder,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run_console_block(code: str, folder: Path) -> list:
    """``(command, process)`` of each ``$ longctx ...`` line of ``code``, run in turn as
    ``python -m longctx.cli ...`` in ``folder``, up to the first that fails."""
    out = []
    for command in [line[2:] for line in code.splitlines() if line.startswith("$ ")]:
        argv = shlex.split(command, comments=True)[1:]
        proc = subprocess.run(
            [sys.executable, "-m", "longctx.cli", *argv],
            cwd=folder,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        out.append((command, proc))
        if proc.returncode != 0:
            break
    return out


@pytest.fixture(scope="module")
def block_runs(request, tmp_path_factory):
    """The selected blocks' processes, started at the module's first test two at a time
    (``tests._ahead``), each in a folder of its own; keyed by (test name, block id)."""
    jobs = {}
    runners = {
        "test_python_block_runs_on_its_own": _run_python_block,
        "test_console_block_runs": _run_console_block,
    }
    for name, run in runners.items():
        for item in selected(request, name):
            code, marker = item.callspec.params["code"], item.callspec.params["marker"]
            if marker != "skip":
                folder = tmp_path_factory.mktemp("block")
                jobs[(name, item.callspec.id)] = functools.partial(run, code, folder)
    ahead = Ahead(jobs)
    yield ahead
    ahead.close()


@pytest.mark.parametrize(("code", "marker", "reason"), PYTHON_CASES)
def test_python_block_runs_on_its_own(code, marker, reason, block_runs, request):
    if marker == "skip":
        assert reason, "a skipped block must say why: <!-- docs-test: skip (reason) -->"
        _check_imports(code)
        return
    proc = block_runs.result((request.node.originalname, request.node.callspec.id))
    assert proc.returncode == 0, f"{code}\n--- stderr ---\n{proc.stderr[-3000:]}"
    if "print(" in code:
        assert proc.stdout.strip(), "the block prints nothing"


@pytest.mark.parametrize(("code", "marker", "reason"), CONSOLE_CASES)
def test_console_block_runs(code, marker, reason, block_runs, request):
    commands = [line[2:] for line in code.splitlines() if line.startswith("$ ")]
    assert commands and all(c.startswith("longctx ") for c in commands), code
    runs = block_runs.result((request.node.originalname, request.node.callspec.id))
    for command, proc in runs:
        assert proc.returncode == 0, f"{command}\n{proc.stderr[-2000:]}"
        assert proc.stdout.strip(), command
    assert [c for c, _ in runs] == commands


def test_every_python_block_is_collected():
    # README: one example per framework plus the core; the first prints hits best first
    readme = [b for b in _blocks(README) if b[0] == "python"]
    assert len(readme) >= 3
    first = readme[0][1]
    assert ".by_score()" in first or ".top(" in first
    assert "hits[:" not in first
    assert any("llamaindex_longctx" in b[1] for b in readme)
    assert any("langchain_longctx" in b[1] and "langchain_classic" not in b[1] for b in readme)
    assert len(PYTHON_CASES) >= 10


def test_readme_is_short_and_works_on_pypi():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "make test" in text and "download.pytorch.org/whl/cpu" in text
    # the PyPI description renders the README alone: images and links need absolute URLs
    for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text):
        assert re.match(r"https?://", target), f"relative image link {target!r}"


def test_quickstart_notebook_cells_parse_and_imports_resolve():
    nb = json.loads((ROOT / "notebooks" / "quickstart.ipynb").read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code) >= 5
    for cell in code:
        _check_imports(cell)


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    api = (tmp_path / "site" / "api" / "types" / "index.html").read_text(encoding="utf-8")
    assert "by_score" in api  # the reference is generated from the docstrings
    # no Sphinx role shows as raw text (issue 32: about 280 did); they became links or code
    roles = re.compile(r":(?:py:)?(?:class|meth|func|data|mod|attr|obj|exc):")
    for page in (tmp_path / "site").rglob("*"):
        if page.suffix in (".html", ".json"):
            found = roles.findall(page.read_text(encoding="utf-8"))
            assert not found, f"{page.relative_to(tmp_path)}: {len(found)} raw roles"
    assert 'href="#longctx.types.SearchResult.by_score"' in api  # a role made a link
    # no raw reStructuredText directive shows (issue 38: the LangChain page showed "Setup: ..
    # code-block:: bash" with "Key init args" run together): the docstrings are Markdown
    for page in (tmp_path / "site").rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert ".. code-block::" not in html, f"{page.relative_to(tmp_path)}: raw code-block"
    lc = (tmp_path / "site" / "api" / "langchain" / "index.html").read_text(encoding="utf-8")
    assert "<strong>Key init args</strong>" in lc and "<strong>Setup</strong>" in lc
    assert "over a fixed set of long documents" not in lc


CHUNK_SIZE_PAGES = [README, ROOT / "docs" / "index.md", ROOT / "docs" / "guide" / "python.md"]


def test_stated_chunk_size_is_the_default():
    """Issue 32: the README said 64 words, docs/index.md "~32-word chunks", the guide "about 32
    words". Every page states the default's ``max_words`` and the measured average."""
    import numpy as np

    from longctx import MixPRIndex, sample_text
    from longctx.mixpr import MixPRConfig

    n = MixPRConfig().max_words
    text = sample_text("alice")
    index = MixPRIndex.from_texts(text)
    mean = np.mean([len(text[a:b].split()) for a, b in zip(index.starts, index.ends)])
    for path in CHUNK_SIZE_PAGES:
        page = path.read_text(encoding="utf-8")
        sizes = re.findall(r"up to (\d+) words, cut at sentence ends", page)
        assert sizes and {int(s) for s in sizes} == {n}, path.name
        averages = [int(a) for a in re.findall(r"about (\d+) words on average", page)]
        assert averages and all(abs(a - mean) <= 2 for a in averages), (path.name, mean)
        assert not re.search(r"~\d+-word chunks|about \d+ words each|\d+-word chunks", page)


def _sphinx_roles_hook():
    from tests._fixtures import load_script

    return load_script("docs_hooks/sphinx_roles.py")


def test_sphinx_roles_become_links_or_code():
    """The mkdocs hook (no build here): a documented target is an autorefs link, an unknown or
    ambiguous one code; ``~`` shortens the title; roles inside code keep their title only."""
    hook = _sphinx_roles_hook()

    class Autorefs:
        documented = {"longctx.types.SearchResult", "longctx.types.SearchResult.top", "a.search"}

        def get_item_url(self, identifier):
            if identifier not in self.documented:
                raise KeyError(identifier)
            return f"#{identifier}", None

    hook._paths.clear()
    hook._paths.update(
        {
            "SearchResult": [("longctx.types.SearchResult", "longctx.types.SearchResult")],
            "longctx.SearchResult": [],
            "search": [("a.search", "a.search"), ("b.search", "b.search")],
        }
    )
    html = (
        "A :class:<code>longctx.types.SearchResult</code>, :meth:<code>~longctx.types.SearchResult.top</code>,"
        " :class:<code>longctx.SearchResult</code>, :func:<code>nowhere</code>,"
        " :meth:<code>search</code> and <code>list of :class:`~x.Passage`</code>."
    )
    out = hook.rewrite_roles(html, Autorefs())
    assert not re.search(r":(class|meth|func|data|mod|attr):", out)
    assert (
        '<autoref identifier="longctx.types.SearchResult" optional><code>'
        "longctx.types.SearchResult</code></autoref>" in out
    )
    assert '<autoref identifier="longctx.types.SearchResult.top" optional><code>top</code>' in out
    assert out.count('identifier="longctx.types.SearchResult"') == 2  # re-exported name resolved
    assert "<code>nowhere</code>" in out and "<code>list of Passage</code>" in out
    assert '<autoref identifier="a.search"' in out  # one documented among the candidates
