"""The import graph of ``longctx``, ``llamaindex_longctx`` and ``langchain_longctx`` runs one way
(issue 39; CONTRIBUTING.md has the map):

- no import cycle: no module imports one that imports it back, directly or through others, with
  imports inside functions and package ``__init__`` files counted;
- no upward import: every module sits on a floor of :data:`FLOORS` and imports only modules of
  its floor or below, except the deprecated re-exports of :data:`ALLOWED_UPWARD`, each to be
  removed in the release it names (a release after the current ``longctx.__version__``);
- no module of ``longctx/`` over :data:`MAX_LINES` lines.

The graph is read from the source (``ast``): every ``import`` / ``from ... import`` statement,
wherever it is, and modules named as strings: a literal full module path passed to
``importlib.import_module`` (or ``import_module``, ``__import__``), the values of the tables of
:data:`DATA_PLACES` (modules a module imports by name later) and the ``preload=`` names given to
``longctx._ray.start_ray`` (modules the caller has Ray's workers import). ``from longctx import
NAME`` of a name of a package's lazy table (:data:`LAZY_TABLES`) is an edge to the module that
defines it. The lazy tables themselves are not edges of the package: they are its public facade,
resolved on a user's first attribute access, and nothing in the packages imports the facade.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest
from packaging.version import Version

import longctx

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("longctx", "llamaindex_longctx", "langchain_longctx")
MAX_LINES = 800

#: The contract: a module's floor is that of the longest prefix naming it. A module imports only
#: modules of its floor or below.
FLOORS = {
    # 0: text, tokens, types, checks, errors, selection, small helpers; importing no other floor
    "longctx": 0,  # the package: its public names are resolved lazily (strings)
    "longctx._hf": 0,
    "longctx._ray": 0,
    "longctx._rss": 0,
    "longctx.align": 0,
    "longctx.checks": 0,
    "longctx.explain": 0,
    "longctx.filters": 0,
    "longctx.fusion": 0,
    "longctx.index": 0,
    "longctx.io": 0,
    "longctx.selection": 0,
    "longctx.terms": 0,
    "longctx.text": 0,
    "longctx.word_pieces": 0,
    "longctx.tokens": 0,
    "longctx.types": 0,
    # 1: persistence
    "longctx.persist": 1,
    "longctx.persist_fs": 1,  # deprecated aliases of longctx.persist.* (in 0.2, removed in 0.3)
    "longctx.persist_reader": 1,
    "longctx.persist_write": 1,
    "longctx.filters_persist": 1,
    # 2: the methods and their model layers
    "longctx.attention": 2,
    "longctx.diversity": 2,
    "longctx.embeddings": 2,
    "longctx.garlic": 2,
    "longctx.mixpr": 2,
    "longctx.models": 2,
    "longctx.youra": 2,
    # 3: a corpus's lifecycle (documents, manifests, storage, builds, shards, Ray)
    "longctx.corpus": 3,
    # 4: what users run: evaluation, the CLI, the framework adapters
    "longctx.eval": 4,
    "longctx.cli": 4,
    "longctx.__main__": 4,  # python -m longctx: the CLI
    "llamaindex_longctx": 4,
    "langchain_longctx": 4,
}

#: Upward imports kept for one release: (importer, imported) -> (why, the release that removes
#: it). Every one is a deprecated path: deprecated in 0.2, removed in 0.3.
ALLOWED_UPWARD = {
    ("longctx.mixpr", "longctx.corpus.shards.index"): (
        "longctx.mixpr.ShardedMixPRIndex: lazy __getattr__ with a DeprecationWarning",
        "0.3",
    ),
    ("longctx.mixpr.shards", "longctx.corpus.shards.index"): (
        "longctx.mixpr.shards: deprecated alias module (docs/api named it)",
        "0.3",
    ),
}

#: Module-level tables whose values name modules their module imports by name later
#: (``importlib.import_module(TABLE[key])``): (module, table name). Every string of a value that
#: is a project module path is an edge of that module.
DATA_PLACES = {
    ("longctx.corpus.load", "_LOADERS"),  # saved format -> (module, class) of its loader
    ("longctx.cli.retrieve", "METHODS"),  # --method -> the CLI module that runs it
}

#: The packages' lazy tables of public names (PEP 562 ``__getattr__``): name -> module.
LAZY_TABLES = {pkg: "_LAZY" for pkg in PACKAGES}

#: Modules that call ``import_module`` with a name that is not a literal, and where that name
#: comes from (a new one must be added to :data:`DATA_PLACES` or here, with its reason).
DYNAMIC_IMPORTS = {
    "longctx": "its lazy table (LAZY_TABLES)",
    "llamaindex_longctx": "its lazy table (LAZY_TABLES)",
    "langchain_longctx": "its lazy table (LAZY_TABLES)",
    "longctx.corpus.load": "_LOADERS (DATA_PLACES)",
    "longctx.cli.retrieve": "METHODS (DATA_PLACES)",
    "longctx._ray": "the preload= names of start_ray's callers (edges of the callers)",
}

#: How a deprecated path's warning names the releases: "deprecated in longctx 0.2, removed in 0.3".
DEPRECATION = re.compile(r"deprecated in longctx (\d+\.\d+), removed in (\d+\.\d+)")


def _modules(root: Path = REPO) -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = f
    return mods


def _resolve(name: str, modules) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _module_path(value, modules) -> str | None:
    """The project module a string constant names (a full path of a package's module), else None."""
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return None
    s = value.value
    if not any(s == p or s.startswith(p + ".") for p in PACKAGES):
        return None
    return _resolve(s, modules)


def _is_import_module(func: ast.expr) -> bool:
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def _table(tree: ast.Module, name: str) -> ast.expr | None:
    """The value of a module-level ``name = ...`` (or annotated) assignment."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return node.value
    return None


def _lazy_tables(modules) -> dict[str, dict[str, str]]:
    """package -> {public name: module} read from the package's lazy table."""
    out = {}
    for pkg, var in LAZY_TABLES.items():
        if pkg not in modules:
            continue
        value = _table(ast.parse(modules[pkg].read_text(encoding="utf-8")), var)
        if isinstance(value, ast.Dict):
            out[pkg] = {
                k.value: v.value
                for k, v in zip(value.keys, value.values)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
            }
    return out


def _imports(module: str, path: Path, modules, lazy=None) -> dict[str, int]:
    """The project modules ``module`` imports, each with the line of its first import: import
    statements, and the modules it names as strings (see the module docstring)."""
    lazy = lazy or {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, int] = {}

    def add(target, line):
        if target and target != module and (target not in out or line < out[target]):
            out[target] = line

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(_resolve(a.name, modules), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            full = node.module or ""
            if node.level:
                b = base
                for _ in range(node.level - 1):
                    b = b.rpartition(".")[0]
                full = b + ("." + full if full else "")
            for a in node.names:
                sub = f"{full}.{a.name}"
                if sub in modules:
                    add(sub, node.lineno)
                elif a.name in lazy.get(full, {}):
                    add(_resolve(lazy[full][a.name], modules), node.lineno)
                else:
                    add(_resolve(full, modules), node.lineno)
        elif isinstance(node, ast.Call):
            if _is_import_module(node.func) and node.args:
                add(_module_path(node.args[0], modules), node.lineno)
            for kw in node.keywords:
                if kw.arg == "preload":
                    for c in ast.walk(kw.value):
                        add(_module_path(c, modules), node.lineno)
    for m, var in DATA_PLACES:
        if m == module and (value := _table(tree, var)) is not None:
            for c in ast.walk(value):
                add(_module_path(c, modules), getattr(c, "lineno", value.lineno))
    return out


def _dynamic_imports(modules) -> set[str]:
    """The modules that call ``import_module`` with a name that is not a string literal."""
    out = set()
    for m, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and _is_import_module(node.func)
                and node.args
                and not isinstance(node.args[0], ast.Constant)
            ):
                out.add(m)
    return out


def _graph(root: Path = REPO) -> dict[str, dict[str, int]]:
    modules = _modules(root)
    lazy = _lazy_tables(modules)
    return {m: _imports(m, p, modules, lazy) for m, p in modules.items()}


MODULES = _modules()
GRAPH = _graph()


def floor(module: str) -> int | None:
    best = max(
        (p for p in FLOORS if module == p or module.startswith(p + ".")), key=len, default=None
    )
    return None if best is None else FLOORS[best]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def _edges(graph) -> dict[str, set[str]]:
    return {m: {t for t in ts if (m, t) not in ALLOWED_UPWARD} for m, ts in graph.items()}


def _upward(graph) -> list[str]:
    return [
        f"{m} (floor {floor(m)}) imports {t} (floor {floor(t)}) at line {line}"
        for m, ts in graph.items()
        for t, line in ts.items()
        if floor(t) > floor(m) and (m, t) not in ALLOWED_UPWARD
    ]


CYCLES = _cycles(_edges(GRAPH))


def test_the_graph_sees_module_and_function_level_imports():
    """The checker itself: an import inside a function and a package ``__init__`` are edges."""
    assert "longctx.persist.fs" in GRAPH["longctx.persist.reader"]
    assert "longctx.corpus.build" in GRAPH["longctx.corpus"]  # the package __init__
    assert "longctx.corpus.shards.build" in GRAPH["longctx.corpus.build"]  # inside a function
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_modules_named_as_strings():
    """``import_module("...")`` literals and the data places are edges; the lazy tables are not."""
    assert "longctx.mixpr.shards" in GRAPH["longctx.mixpr"]  # import_module literal
    assert "llamaindex_longctx.garlic_index" in GRAPH["llamaindex_longctx"]  # at module level
    assert {"longctx.mixpr", "longctx.diversity", "longctx.garlic"} <= set(
        GRAPH["longctx.corpus.load"]
    )  # _LOADERS
    assert "longctx.cli.ask" in GRAPH["longctx.cli.retrieve"]  # METHODS
    assert "longctx.youra" not in GRAPH["longctx"]  # the package's lazy table is its facade


def test_every_dynamic_import_has_a_known_source():
    """A new ``import_module(variable)`` must say where its names come from (DATA_PLACES or
    DYNAMIC_IMPORTS), so that the modules it imports are not missed."""
    assert _dynamic_imports(MODULES) == set(DYNAMIC_IMPORTS)
    for m, var in DATA_PLACES:
        assert _table(ast.parse(MODULES[m].read_text(encoding="utf-8")), var) is not None, (m, var)


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text, encoding="utf-8")


_TREE = {
    "longctx/__init__.py": '_LAZY = {"Thing": "longctx.cli.x"}\n',
    "longctx/cli/__init__.py": "",
    "longctx/corpus/__init__.py": "",
    "longctx/_ray.py": "",
}


@pytest.mark.parametrize(
    "text",
    [
        'import importlib\n\ndef f():\n    return importlib.import_module("longctx.cli.x")\n',
        'from importlib import import_module\n\nM = import_module("longctx.cli.x.sub")\n',
        '__import__("longctx.cli.x")\n',
        'from longctx._ray import start_ray\n\nstart_ray(2, None, preload=("longctx.cli.x",))\n',
        "from longctx import Thing\n",  # a name of the package's lazy table
    ],
    ids=["import_module", "from-import", "__import__", "preload", "lazy-name"],
)
def test_an_upward_import_named_as_a_string_is_caught(tmp_path, text):
    """A floor-0 module naming a floor-4 module as a string: an upward import, and with the
    floor-4 module importing it back, a cycle."""
    _write_tree(
        tmp_path,
        {**_TREE, "longctx/text.py": text, "longctx/cli/x.py": "from longctx.text import f\n"},
    )
    graph = _graph(tmp_path)
    assert graph["longctx.text"].keys() == {"longctx.cli.x"} | (
        {"longctx._ray"} if "preload" in text else set()
    )
    assert [b.split(" at line")[0] for b in _upward(graph)] == [
        "longctx.text (floor 0) imports longctx.cli.x (floor 4)"
    ]
    assert _cycles(_edges(graph)) == [["longctx.cli.x", "longctx.text"]]


def test_a_data_place_and_its_plain_strings(tmp_path):
    """A data place's module paths are edges; other strings (a format name that is not a data
    place, a non-project name) are not."""
    _write_tree(
        tmp_path,
        {
            **_TREE,
            "longctx/cli/retrieve.py": 'METHODS = {"m": "longctx.corpus", "n": "numpy.linalg"}\n',
            "longctx/text.py": 'FORMAT = "longctx.cli.x"\nimportlib.import_module(name)\n',
            "longctx/cli/x.py": "",
        },
    )
    graph = _graph(tmp_path)
    assert graph["longctx.cli.retrieve"] == {"longctx.corpus": 1}
    assert graph["longctx.text"] == {}
    assert _dynamic_imports(_modules(tmp_path)) == {"longctx.text"}


def test_every_module_has_a_floor():
    assert [m for m in MODULES if floor(m) is None] == []


def test_no_upward_import():
    assert _upward(GRAPH) == []


def test_allowed_upward_imports_exist_and_say_when_they_go():
    current = Version(longctx.__version__)
    for (m, t), (why, removed_in) in ALLOWED_UPWARD.items():
        assert t in GRAPH[m], f"{m} -> {t} is gone: remove it from ALLOWED_UPWARD"
        assert floor(t) > floor(m), f"{m} -> {t} is not upward: remove it from ALLOWED_UPWARD"
        assert why and Version(removed_in) > current, f"{m} -> {t}: due in {removed_in}"


#: Areas of the code, each checked on its own for cycles: (name, module prefixes).
AREAS = {
    "persist": ("longctx.persist",),
    "corpus": ("longctx.corpus", "longctx._ray", "longctx._rss"),
    "mixpr": ("longctx.mixpr",),
    "diversity": ("longctx.diversity",),
    "cli": ("longctx.cli",),
    "rest": (),  # every cycle outside the areas above
}


@pytest.mark.parametrize("area", list(AREAS))
def test_no_import_cycle(area):
    def touches(cycle, prefixes):
        return any(m == p or m.startswith(p + ".") for m in cycle for p in prefixes)

    if area == "rest":
        named = [p for ps in AREAS.values() for p in ps]
        found = [c for c in CYCLES if not touches(c, named)]
    else:
        found = [c for c in CYCLES if touches(c, AREAS[area])]
    assert found == [], "modules that import each other (directly or through others): " + str(found)


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


_LONG_FILES = [p for p in sorted((REPO / "longctx").rglob("*.py")) if _line_count(p) > MAX_LINES]


@pytest.mark.parametrize("rel", ["*"] + sorted(str(p.relative_to(REPO)) for p in _LONG_FILES))
def test_no_module_over_800_lines(rel):
    """``*``: the count itself works; then one case per file over the limit (none, once done)."""
    if rel == "*":
        sizes = {p: _line_count(p) for p in (REPO / "longctx").rglob("*.py")}
        assert len(sizes) > 100 and max(sizes.values()) > 100
        return
    assert _line_count(REPO / rel) <= MAX_LINES, f"{rel}: split it by idea"


# -- deprecated paths (ALLOWED_UPWARD and the aliases of moved modules) -------------------------
@pytest.mark.parametrize(
    "old, new",
    [
        ("longctx.persist_reader", "longctx.persist.reader"),
        ("longctx.persist_write", "longctx.persist.writer"),
        ("longctx.persist_fs", "longctx.persist.fs"),
        ("longctx.mixpr.shards", "longctx.corpus.shards.index"),
    ],
)
def test_an_old_module_path_warns_and_is_the_moved_module(old, new, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=new.replace(".index", "")):
        mod = importlib.import_module(old)
    assert mod is importlib.import_module(new)


def test_old_public_names_still_work():
    import longctx.mixpr
    import longctx.persist
    from longctx.corpus.shards import ShardedMixPRIndex

    with pytest.warns(DeprecationWarning, match="longctx.corpus.shards"):
        assert longctx.mixpr.ShardedMixPRIndex is ShardedMixPRIndex
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the persist names did not move: no warning
        for name in ("open_index_dir", "retry_on_concurrent_save", "IndexDir", "write_dir"):
            assert callable(getattr(longctx.persist, name))
        assert issubclass(longctx.persist.ConcurrentSaveError, longctx.persist.PersistError)
    with pytest.raises(AttributeError):
        longctx.mixpr.NoSuchName  # noqa: B018


def test_the_old_shards_module_is_reached_from_the_package(monkeypatch):
    import longctx.mixpr
    from longctx.corpus.shards import index

    monkeypatch.delitem(sys.modules, "longctx.mixpr.shards", raising=False)
    monkeypatch.delattr(longctx.mixpr, "shards", raising=False)
    with pytest.warns(DeprecationWarning, match="longctx.corpus.shards"):
        assert longctx.mixpr.shards is index


def _removal_releases(message: str) -> tuple[Version, Version]:
    m = DEPRECATION.search(message)
    assert m, f"{message!r} does not say 'deprecated in longctx X.Y, removed in X.Z'"
    return Version(m.group(1)), Version(m.group(2))


def _check_releases(message: str, version: str | None = None) -> None:
    """The removal release comes after the release being made (``0.2.0.dev0`` makes 0.2), and
    the deprecation one is not after it."""
    making = Version(Version(version or longctx.__version__).base_version)
    deprecated, removed = _removal_releases(message)
    assert removed > making, f"{message!r}: due for removal (longctx {making})"
    assert deprecated <= making, f"{message!r}: deprecated after {making}"


def _alias_warnings(monkeypatch) -> list[str]:
    import longctx.mixpr

    def recorded(action) -> list[str]:
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            action()
        found = [str(w.message) for w in rec if issubclass(w.category, DeprecationWarning)]
        assert found, action
        return found

    out = []
    for old in ("longctx.persist_reader", "longctx.persist_write", "longctx.persist_fs"):
        monkeypatch.delitem(sys.modules, old, raising=False)
        out += recorded(lambda old=old: importlib.import_module(old))
    # the attribute first, and only where it is set: ``hasattr`` (which ``delattr`` asks)
    # runs the package's ``__getattr__``, which imports the old module out of the record (the
    # test failed when run alone, where nothing had imported it before)
    if "shards" in vars(longctx.mixpr):
        monkeypatch.delattr(longctx.mixpr, "shards")
    monkeypatch.delitem(sys.modules, "longctx.mixpr.shards", raising=False)

    def shards():
        longctx.mixpr.shards  # noqa: B018
        longctx.mixpr.ShardedMixPRIndex  # noqa: B018

    return out + recorded(shards)


def test_every_deprecated_alias_names_a_removal_release_after_this_version(monkeypatch):
    """The warning of every deprecated path says the releases, and the removal one is still to
    come (``packaging.version``): bumping ``__version__`` past it fails here."""
    messages = _alias_warnings(monkeypatch)
    assert len(messages) == 5, messages
    for message in messages:
        _check_releases(message)
    for (m, t), (_, removed_in) in ALLOWED_UPWARD.items():
        assert any(removed_in in msg for msg in messages), (m, t)


def test_every_deprecation_warning_in_the_source_says_its_releases():
    """Each ``warnings.warn(..., DeprecationWarning)`` of the packages, found in the source (so a
    new one is checked too), names its releases as the aliases do."""
    found = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "warn"
                and any(
                    getattr(a, "id", None) == "DeprecationWarning"
                    for a in [*node.args, *(k.value for k in node.keywords)]
                )
            ):
                assert isinstance(node.args[0], ast.Constant), f"{path}:{node.lineno}: a literal"
                found.append(node.args[0].value)
                _check_releases(node.args[0].value)
    assert len(found) >= 5


@pytest.mark.parametrize(
    "message, version, error",
    [
        ("x: deprecated in longctx 0.2, removed in 0.3", "0.2.0.dev0", None),
        ("x: deprecated in longctx 0.2, removed in 0.3", "0.2.1", None),
        ("x: deprecated in longctx 0.2, removed in 0.3", "0.3.0.dev0", "due for removal"),
        ("x: deprecated in longctx 0.1, removed in 0.2", "0.2.0.dev0", "due for removal"),
        ("x: deprecated in longctx 0.3, removed in 0.4", "0.2.0", "deprecated after"),
        ("x is deprecated (removed in longctx 0.4)", "0.2.0", "does not say"),
    ],
)
def test_the_release_check(message, version, error):
    if error is None:
        _check_releases(message, version)
    else:
        with pytest.raises(AssertionError, match=error):
            _check_releases(message, version)
