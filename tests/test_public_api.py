"""Each package's ``__all__`` lists exactly what it exports; adapters use only public core names."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ["longctx", "llamaindex_longctx", "langchain_longctx"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_lists_exactly_the_exports(name):
    pkg = importlib.import_module(name)
    assert sorted(pkg.__all__) == sorted(set(pkg.__all__)), "duplicates in __all__"
    assert sorted(dir(pkg)) == sorted(pkg.__all__)
    for attr in pkg.__all__:
        assert getattr(pkg, attr) is not None, attr
    with pytest.raises(AttributeError):
        pkg.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", PACKAGES)
def test_typed_marker(name):
    assert (REPO / name / "py.typed").is_file()


@pytest.mark.parametrize("name", ["llamaindex_longctx", "langchain_longctx"])
def test_adapters_import_no_private_core_names(name):
    for path in (REPO / name).glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("longctx"):
                parts = node.module.split(".")
                assert not any(p.startswith("_") for p in parts), f"{path.name}: {node.module}"
                for alias in node.names:
                    assert not alias.name.startswith("_"), f"{path.name}: {alias.name}"
