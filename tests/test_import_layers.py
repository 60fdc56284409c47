"""The import graph of ``longctx``, ``llamaindex_longctx`` and ``langchain_longctx`` runs one way
(issue 39; CONTRIBUTING.md has the map):

- no import cycle: no module imports one that imports it back, directly or through others, with
  imports inside functions and package ``__init__`` files counted;
- no upward import: every module sits on a floor of :data:`FLOORS` and imports only modules of
  its floor or below, except the deprecated re-exports of :data:`ALLOWED_UPWARD`, each to be
  removed in the release it names;
- no module of ``longctx/`` over :data:`MAX_LINES` lines.

The graph is read from the source (``ast``: every ``import`` / ``from ... import`` statement,
wherever it is); names imported from strings (``longctx.__init__``'s lazy table of the public
names, ``importlib.import_module`` in ``corpus.load``) are not edges.
"""

from __future__ import annotations

import ast
import importlib
import sys
import warnings
from pathlib import Path

import pytest

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
    "longctx.filters": 0,
    "longctx.index": 0,
    "longctx.io": 0,
    "longctx.selection": 0,
    "longctx.terms": 0,
    "longctx.text": 0,
    "longctx.tokens": 0,
    "longctx.types": 0,
    # 1: persistence
    "longctx.persist": 1,
    "longctx.persist_fs": 1,  # deprecated aliases of longctx.persist.* (remove in 0.4)
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
    "llamaindex_longctx": 4,
    "langchain_longctx": 4,
}

#: Upward imports kept for one release: (importer, imported) -> why, and when it goes.
ALLOWED_UPWARD = {
    ("longctx.mixpr", "longctx.corpus.shards.index"): (
        "longctx.mixpr.ShardedMixPRIndex: lazy __getattr__ with a DeprecationWarning; remove in 0.4"
    ),
    ("longctx.mixpr.shards", "longctx.corpus.shards.index"): (
        "longctx.mixpr.shards: deprecated alias module (docs/api named it); remove in 0.4"
    ),
}


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for f in sorted((REPO / pkg).rglob("*.py")):
            parts = list(f.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = f
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> dict[str, int]:
    """The project modules ``module`` imports, each with the line of its first import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [_resolve(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            full = node.module or ""
            if node.level:
                b = base
                for _ in range(node.level - 1):
                    b = b.rpartition(".")[0]
                full = b + ("." + full if full else "")
            for a in node.names:
                sub = f"{full}.{a.name}"
                targets.append(sub if sub in MODULES else _resolve(full))
        for t in targets:
            if t and t != module and (t not in out or node.lineno < out[t]):
                out[t] = node.lineno
    return out


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


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


def _edges() -> dict[str, set[str]]:
    return {m: {t for t in ts if (m, t) not in ALLOWED_UPWARD} for m, ts in GRAPH.items()}


CYCLES = _cycles(_edges())


def test_the_graph_sees_module_and_function_level_imports():
    """The checker itself: an import inside a function and a package ``__init__`` are edges."""
    assert "longctx.persist.fs" in GRAPH["longctx.persist.reader"]
    assert "longctx.corpus.build" in GRAPH["longctx.corpus"]  # the package __init__
    assert "longctx.corpus.shards.build" in GRAPH["longctx.corpus.build"]  # inside a function
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_every_module_has_a_floor():
    assert [m for m in MODULES if floor(m) is None] == []


def test_no_upward_import():
    bad = [
        f"{m} (floor {floor(m)}) imports {t} (floor {floor(t)}) at line {line}"
        for m, ts in GRAPH.items()
        for t, line in ts.items()
        if floor(t) > floor(m) and (m, t) not in ALLOWED_UPWARD
    ]
    assert bad == []


def test_allowed_upward_imports_exist_and_say_when_they_go():
    for (m, t), why in ALLOWED_UPWARD.items():
        assert t in GRAPH[m], f"{m} -> {t} is gone: remove it from ALLOWED_UPWARD"
        assert floor(t) > floor(m), f"{m} -> {t} is not upward: remove it from ALLOWED_UPWARD"
        assert "remove in 0." in why


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
