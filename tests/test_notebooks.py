"""Every notebook in notebooks/ runs top to bottom (nbclient, the test interpreter's kernel), each
by a fresh interpreter, two at a time (``tests._ahead``)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._ahead import Ahead, selected

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


#: Run by a fresh interpreter: executes notebook argv[1] (nbclient, the interpreter's kernel,
#: working folder argv[3]) and writes it with its outputs to argv[2]; a cell's error exits non-zero.
_EXECUTE = """
import sys
import nbclient
import nbformat

nb = nbformat.read(sys.argv[1], as_version=4)
client = nbclient.NotebookClient(
    nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": sys.argv[3]}}
)
client.execute()
nbformat.write(nb, sys.argv[2])
"""


def _execute(path: Path, folder: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """Notebook ``path`` run top to bottom in ``folder`` by a fresh interpreter (its kernel sees
    LONGCTX_DATA, HF_HUB_OFFLINE=1 and this interpreter's path): the process and the executed
    notebook's file."""
    env = dict(os.environ)
    env.update(
        LONGCTX_DATA=str(SHARED),
        HF_HUB_OFFLINE="1",
        PYTHONPATH=os.pathsep.join([str(path.parents[1]), *sys.path]),
    )
    out = folder / f"executed-{path.name}"
    proc = subprocess.run(
        [sys.executable, "-c", _EXECUTE, str(path), str(out), str(folder)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return proc, out


def _runnable(path: Path) -> bool:
    return path.name != "benchmark_report.ipynb" or SHARED.is_dir()


@pytest.fixture(scope="module")
def notebook_runs(request, tmp_path_factory):
    """The selected notebooks, run two at a time from the module's first notebook test
    (``tests._ahead``), each by its own interpreter in its own folder; keyed by file name."""
    pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    jobs = {}
    for item in selected(request, "test_notebook_runs"):
        path = item.callspec.params["path"]
        if _runnable(path):
            jobs[path.name] = functools.partial(_execute, path, tmp_path_factory.mktemp("nb"))
    ahead = Ahead(jobs)
    yield ahead
    ahead.close()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, notebook_runs):
    nbformat = pytest.importorskip("nbformat")
    if not _runnable(path):
        pytest.skip(f"needs the benchmark data at {SHARED}")
    proc, out = notebook_runs.result(path.name)
    assert proc.returncode == 0, proc.stderr[-4000:]
    nb = nbformat.read(out, as_version=4)
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")


# --------------------------------------------- what a user's `pip install longctx-rag[all]` holds
ROOT = Path(__file__).resolve().parents[1]
OWN = {"longctx", "llamaindex_longctx", "langchain_longctx"}


def _notebook_imports(path: Path) -> set[str]:
    """Every module a notebook imports (``import a.b`` -> ``a.b``; ``from a.b import c`` ->
    ``a.b``), magics and shell lines left out."""
    import ast
    import json

    out = set()
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        lines = "".join(cell["source"]).splitlines()
        code = "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                out.add(node.module)
    return out


def _all_extra_closure() -> set[str]:
    """Canonical names of the distributions ``pip install longctx-rag[all]`` installs, as declared:
    pyproject's dependencies and the ``all`` extra (its ``longctx-rag[...]`` extras expanded), then
    each installed distribution's own requirements (markers evaluated, requested extras
    followed)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras, todo, done = project["optional-dependencies"], ["all"], set()
    reqs = [Requirement(r) for r in project["dependencies"]]
    while todo:
        extra = todo.pop()
        if extra in done:
            continue
        done.add(extra)
        for r in map(Requirement, extras[extra]):
            if canonicalize_name(r.name) == canonicalize_name(project["name"]):
                todo.extend(r.extras)
            else:
                reqs.append(r)
    closure: dict[str, set[str]] = {}
    while reqs:
        req = reqs.pop()
        name = canonicalize_name(req.name)
        if name in closure and set(req.extras) <= closure[name]:
            continue
        closure.setdefault(name, set()).update(req.extras)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        envs = [{"extra": e} for e in ("", *closure[name])]
        for r in map(Requirement, requires):
            if r.marker is None or any(r.marker.evaluate(env) for env in envs):
                reqs.append(r)
    return set(closure)


@functools.lru_cache(maxsize=1)
def _packages_distributions() -> dict:
    from importlib import metadata

    return metadata.packages_distributions()


def _distribution_of(module: str) -> str | None:
    """Canonical name of the installed distribution that holds ``module`` (a namespace
    package's portion too: ``llama_index.llms.huggingface``), or ``None`` if none does."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    parts = module.split(".")
    candidates = _packages_distributions().get(parts[0], [])
    for depth in range(len(parts), 0, -1):
        stem = "/".join(parts[:depth])
        for dist in candidates:
            files = {str(f).replace("\\", "/") for f in metadata.files(dist) or ()}
            if f"{stem}/__init__.py" in files or f"{stem}.py" in files:
                return canonicalize_name(dist)
    return canonicalize_name(candidates[0]) if len(candidates) == 1 else None


def test_notebooks_import_only_what_longctx_all_installs():
    """Issue 32: the quickstart notebooks imported ``langchain_classic`` (and the frameworks' HF
    LLM wrappers), which only the dev extras installed, so they failed in a user's
    ``pip install longctx-rag[all]``. Every module a notebook imports is the standard library's,
    longctx's, or comes from a distribution in ``longctx-rag[all]``'s declared dependencies."""
    pytest.importorskip("packaging")
    closure = _all_extra_closure()
    assert "pytest" not in closure and "nbclient" not in closure  # dev-only: would be caught
    missing = []
    for path in NOTEBOOKS:
        for module in sorted(_notebook_imports(path)):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in OWN:
                continue
            dist = _distribution_of(module)
            if dist not in closure:
                missing.append(f"{path.name}: {module} ({dist or 'not installed'})")
    assert not missing, "not in longctx-rag[all]: " + "; ".join(missing)
    assert "langchain-classic" in closure and "ray" in closure
