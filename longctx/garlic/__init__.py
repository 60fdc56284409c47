"""GARLIC: hierarchical weighted summary graph (HWDAG) built from summarization attention.

Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790 (PECAN, Findings of ACL 2025), sec. 3.1.
Part 1 (this package): building and storing the graph. Searching it is part 2.

The public names are imported on first use (PEP 562 ``__getattr__``): building and searching
load torch and transformers, which ``import longctx.garlic.options`` (the settings and their
checks) and a refused argument do not need (session 21: 2.3 s to refuse ``stop_patience=0``).
"""

from __future__ import annotations

__all__ = [
    "HWDAG",
    "GarlicSearcher",
    "Node",
    "build_hwdag",
    "build_hwdags",
    "chunk_text",
    "parse_ips",
]


_SUBMODULES = ("build", "graph", "options", "prompts", "search")
#: each public name's submodule
_HOME = {
    "build_hwdag": "build",
    "build_hwdags": "build",
    "chunk_text": "build",
    "HWDAG": "graph",
    "Node": "graph",
    "parse_ips": "prompts",
    "GarlicSearcher": "search",
}


def _submodule(name: str):
    # literal imports (each an edge of the import-layer test), made on first access; `import
    # a.b as m`, not `from a import b`: that one asks this module's __getattr__ for `b` first
    if name == "build":
        import longctx.garlic.build as module
    elif name == "graph":
        import longctx.garlic.graph as module
    elif name == "options":
        import longctx.garlic.options as module
    elif name == "prompts":
        import longctx.garlic.prompts as module
    else:
        import longctx.garlic.search as module
    return module


def __getattr__(name: str):
    if name in _SUBMODULES:  # `import longctx.garlic; longctx.garlic.search.X`, as before
        return _submodule(name)
    if name not in _HOME:
        raise AttributeError(f"module 'longctx.garlic' has no attribute {name!r}")
    value = getattr(_submodule(_HOME[name]), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
