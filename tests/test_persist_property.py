"""Property test (hypothesis): a randomly damaged saved index (a file truncated, bytes flipped, or
a JSON value replaced by random JSON) gives either a correct load, whose results hold only the
sources' own text, or a PersistError naming the index's files; never another exception."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.diversity import DiversityIndex
from longctx.garlic import HWDAG
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError
from tests._persist_helpers import (
    TEXTS,
    diversity_index,
    garlic_graph,
    hash_encoder,
    mixpr_index,
)

QUERY = "Where did the cat sit?"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    root = tmp_path_factory.mktemp("saved")
    mixpr_index().save(root / "mixpr")
    diversity_index().save(root / "diversity")
    garlic_graph().save(root / "garlic")
    _retriever().persist(root / "llamaindex")
    return root


def _docs():
    from llama_index.core.schema import Document

    return [Document(text=t, id_=f"doc{i}") for i, t in enumerate(TEXTS)]


def _retriever():
    from llamaindex_longctx import MixPRRetriever

    return MixPRRetriever.from_documents(_docs(), similarity_top_k=4)


def _paths(obj, path=()):
    """Every path to a value in a JSON document (capped, so huge lists stay cheap)."""
    yield path
    if isinstance(obj, dict):
        for k, v in list(obj.items())[:20]:
            yield from _paths(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:20]):
            yield from _paths(v, (*path, i))


def _replace(obj, path, value):
    if not path:
        return value
    obj[path[0]] = _replace(obj[path[0]], path[1:], value)
    return obj


def _damage(d: Path, data) -> str:
    if (d / "longctx_mixpr").is_dir():  # a LlamaIndex persist folder: damage the retriever's
        d = d / "longctx_mixpr"
        if data.draw(st.booleans(), label="in the index"):
            d = d / "index"
    files = sorted(p.name for p in d.iterdir() if p.is_file())
    name = data.draw(st.sampled_from(files), label="file")
    p = d / name
    raw = p.read_bytes()
    how = data.draw(st.sampled_from(["truncate", "flip", "json"]), label="how")
    if how == "json" and name.endswith(".json"):
        doc = json.loads(raw)
        paths = list(_paths(doc))
        where = data.draw(st.sampled_from(paths), label="path")
        value = data.draw(json_values, label="value")
        p.write_text(json.dumps(_replace(doc, where, value)))
    elif how == "truncate" or not raw:
        p.write_bytes(raw[: data.draw(st.integers(0, max(len(raw) - 1, 0)), label="size")])
    else:
        pos = data.draw(st.integers(0, len(raw) - 1), label="pos")
        bit = data.draw(st.integers(0, 7), label="bit")
        p.write_bytes(raw[:pos] + bytes([raw[pos] ^ (1 << bit)]) + raw[pos + 1 :])
    return name


def _check(kind: str, d: Path) -> None:
    if kind == "mixpr":
        index = MixPRIndex.load(d)
        hits = index.search(QUERY, k=5).hits
        texts = index.texts
    elif kind == "diversity":
        index = DiversityIndex.load(d, encoder=hash_encoder())
        hits = index.search(QUERY, token_budget=40).hits
        texts = index.texts
    elif kind == "llamaindex":
        from llama_index.core.schema import QueryBundle

        from llamaindex_longctx import MixPRRetriever
        from longctx.types import META_END, META_SOURCE_ID, META_START

        originals = {n.node_id: n.text for n in _docs()}
        for n in MixPRRetriever.from_persist_dir(d).retrieve(QueryBundle(QUERY)):
            m = n.node.metadata
            src = originals[m[META_SOURCE_ID]]
            assert src[m[META_START] : m[META_END]] == n.node.get_content()
        return
    else:
        graph = HWDAG.load(d)
        for node in graph.nodes:
            if node.level == 1:
                assert graph.texts[node.source][node.start : node.end] == node.text
        return
    for h in hits:
        assert h.text == texts[h.source][h.start : h.end]


@pytest.mark.parametrize("kind", ["mixpr", "diversity", "garlic", "llamaindex"])
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_damaged_index_loads_correctly_or_raises_persist_error(saved, kind, data):
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / kind
        shutil.copytree(saved / kind, d)
        _damage(d, data)
        try:
            _check(kind, d)
        except PersistError as exc:
            assert str(d) in str(exc)
