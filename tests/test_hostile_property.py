"""Session 20 (2026-11-29): random damage to the saved things ``test_persist_property.py`` does
not cover: a built MixPR corpus (one index, and 2 shards, loaded by ``load_corpus``) and a
LangChain ``MixPRRetriever.save`` folder. A file of the corpus (``corpus.json``,
``indexes/shards.json``, any member of an index) is truncated, has bits flipped, is replaced by
a folder, a FIFO or a link out of the corpus, has a JSON value replaced or a key repeated, or
(a ``.npy`` member) is replaced by an array of another dtype, shape or order, an object array
or a header claiming 10**12 entries; the index's digests are rewritten or not. Every outcome is
a correct load, whose hits are slices of the documents, or a ``PersistError``; never another
exception, never a hang (a FIFO is never opened for a blocking read)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.corpus import build_indexes, load_corpus
from longctx.persist import PersistError
from tests._persist_helpers import TEXTS, restamp
from tests.test_persist_property import _paths, _replace

DOCS = [("a", TEXTS[0]), ("b", TEXTS[1]), ("c", "Fish swim in the river. Birds fly over hills.")]
SOURCES = [t for _, t in DOCS]
QUERY = "Where did the cat sit?"

json_values = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=8)
json_values |= st.just([]) | st.just({}) | st.floats(allow_nan=False, allow_infinity=False)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from langchain_core.documents import Document

    from langchain_longctx import MixPRRetriever

    root = tmp_path_factory.mktemp("hostile")
    build_indexes(DOCS, "mixpr", root / "corpus", use_ray=False, progress=False)
    build_indexes(DOCS, "mixpr", root / "sharded", use_ray=False, progress=False, shards=2)
    docs = [Document(page_content=t, id=d) for d, t in DOCS]
    MixPRRetriever.from_documents(docs, k=3).save(root / "langchain")
    (root / "outside.json").write_text(json.dumps({"format": "x", "secret": 1}), "utf-8")
    return root


def _members(d: Path) -> list[Path]:
    return sorted(
        p for p in d.rglob("*") if p.is_file() and not p.is_symlink() and p.name != ".build.lock"
    )


def _npy(a: np.ndarray, how: str, data) -> bytes | np.ndarray:
    if how == "huge":
        h = "{'descr': '<i8', 'fortran_order': False, 'shape': (1000000000000,), }"
        h = h.ljust(118) + "\n"
        return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode() + a.tobytes()
    if how == "object":
        return np.array([{"x": 1}] * max(a.size, 1), dtype=object)
    if how == "fortran":
        return np.asfortranarray(np.stack([a, a], axis=1))
    if how == "shape":
        return a[: data.draw(st.integers(0, max(a.size - 1, 0)), label="length")]
    if how == "value" and a.size:
        wide = np.float64 if a.dtype.kind == "f" else np.int64
        b = a.astype(wide)
        i = data.draw(st.integers(0, a.size - 1), label="at")
        choices = [-1, 0, 2**31, np.nan] if wide is np.float64 else [-1, 0, 2**31]
        b.flat[i] = data.draw(st.sampled_from(choices), label="value")
        return b.astype(a.dtype)  # wraps in a narrower dtype: any bytes a forger writes
    dtype = data.draw(st.sampled_from(["<f8", "<i4", "|u1", "<f2", "?"]), label="dtype")
    return a.astype(dtype)


def _damage(d: Path, outside: Path, data) -> None:
    p = data.draw(st.sampled_from(_members(d)), label="file")
    raw = p.read_bytes()
    hows = ["truncate", "flip", "folder", "fifo", "link"]
    if p.suffix == ".json":
        hows += ["json", "json", "repeat"]
    if p.suffix == ".npy":
        hows += ["npy", "npy", "npy"]
    how = data.draw(st.sampled_from(hows), label="how")
    if how == "truncate":
        p.write_bytes(raw[: data.draw(st.integers(0, max(len(raw) - 1, 0)), label="size")])
    elif how == "flip" and raw:
        pos = data.draw(st.integers(0, len(raw) - 1), label="pos")
        p.write_bytes(
            raw[:pos] + bytes([raw[pos] ^ (1 << data.draw(st.integers(0, 7)))]) + raw[pos + 1 :]
        )
    elif how in ("folder", "fifo", "link"):
        p.unlink()
        {"folder": p.mkdir, "fifo": lambda: os.mkfifo(p), "link": lambda: p.symlink_to(outside)}[
            how
        ]()
        return
    elif how == "json":
        doc = json.loads(raw)
        where = data.draw(st.sampled_from(list(_paths(doc))), label="path")
        p.write_text(json.dumps(_replace(doc, where, data.draw(json_values, label="value"))))
    elif how == "repeat":
        doc = json.loads(raw)
        if isinstance(doc, dict) and doc:
            key = data.draw(st.sampled_from(sorted(doc)), label="key")
            value = json.dumps(data.draw(json_values, label="value"))
            p.write_text(json.dumps(doc)[:-1] + f", {json.dumps(key)}: {value}}}")
    elif how == "npy":
        a = np.load(p, allow_pickle=False)
        kind = data.draw(
            st.sampled_from(["huge", "object", "fortran", "shape", "value", "dtype"]), label="npy"
        )
        out = _npy(a, kind, data)
        if isinstance(out, bytes):
            p.write_bytes(out)
        else:
            np.save(p, out, allow_pickle=kind == "object")
    if p.name != "manifest.json" and data.draw(st.booleans(), label="digests rewritten"):
        restamp(p.parent)


def _check(kind: str, d: Path) -> None:
    if kind == "langchain":
        from langchain_longctx import MixPRRetriever

        for doc in MixPRRetriever.load(d).invoke(QUERY):
            assert any(doc.page_content in t for t in SOURCES), doc.page_content
        return
    indexes = load_corpus(d)
    for index in {id(ix): ix for ix in indexes.values()}.values():
        try:
            for h in index.search(QUERY, k=5).hits:
                assert any(h.text in t for t in SOURCES), h.text
        finally:
            getattr(index, "close", lambda: None)()


def _outcome(kind: str, d: Path) -> str:
    """``"loaded"`` (hits checked) or ``"refused"`` (a PersistError naming the folder)."""
    try:
        _check(kind, d)
    except PersistError as exc:
        assert str(d) in str(exc), exc
        return "refused"
    return "loaded"


SMALL = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("kind", ["corpus", "sharded", "langchain"])
@SMALL
@given(data=st.data())
def test_damaged_corpus_or_retriever_loads_correctly_or_raises_persist_error(saved, kind, data):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(shutil.copytree(saved / kind, Path(tmp) / kind, symlinks=True))
        _damage(d, saved / "outside.json", data)
        assert _outcome(kind, d) in ("loaded", "refused")
