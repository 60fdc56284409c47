"""Corpus fixtures: small documents and a file-by-file comparison of two corpora."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx.io import sample_text

#: Fields of a GARLIC graph's ``info`` that are wall-clock or per-run figures, not content.
RUN_FIELDS = ("seconds", "tokens_generated_this_run", "resumed_batches")


@pytest.fixture(scope="session")
def docs():
    """Four ~6k-character slices of Alice, ids with spaces and slashes."""
    t = sample_text("alice")
    return [(f"alice/part {i}", t[20_000 + i * 6000 : 26_000 + i * 6000]) for i in range(4)]


def index_files(root) -> dict[str, bytes]:
    """``{relative path: bytes}`` of every index file of a local corpus (``indexes/``), with a
    GARLIC ``graph.json``'s run fields (seconds...) dropped, and so the manifest's digest of it;
    without the mark of the last build (``writing.json``: its process, start and token) and the
    build lock's file (``.build.lock``: the last build's process and start)."""
    root = Path(root) / "indexes"
    out = {}
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.relative_to(root).as_posix() in ("writing.json", ".build.lock"):
            continue
        data = f.read_bytes()
        if f.name == "graph.json":
            g = json.loads(data)
            for k in RUN_FIELDS:
                g["info"].pop(k, None)
            data = json.dumps(g, sort_keys=True).encode()
        elif f.name == "manifest.json":  # its digest of graph.json covers those run fields too
            m = json.loads(data)
            m.get("digests", {}).pop("graph.json", None)
            data = json.dumps(m, sort_keys=True).encode()
        out[f.relative_to(root).as_posix()] = data
    return out
