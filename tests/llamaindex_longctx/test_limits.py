"""Issue 44 items 2 and 8 through the LlamaIndex retriever: a filter or node metadata the API
accepts, nested to its limit, persists and loads; a saved filter is read as strictly as it is
written."""

from __future__ import annotations

import pytest
from llama_index.core import Document
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from llamaindex_longctx import MixPRRetriever
from longctx.filters import MAX_DEPTH
from longctx.persist import MAX_METADATA_DEPTH, PersistError
from tests._fixtures import BOOK_QUERIES
from tests._persist_helpers import edit_json
from tests.llamaindex_longctx._fixtures import book_docs
from tests.test_limits import deep_metadata, dict_filter


def _view(retriever, q):
    return [(n.node.node_id, round(n.score, 9)) for n in retriever.retrieve(q)]


def _llama_filters(depth: int) -> MetadataFilters:
    f = MetadataFilters(
        filters=[MetadataFilter(key="author", value=["Austen", "Melville"], operator="in")]
    )
    for _ in range(depth - 1):
        f = MetadataFilters(filters=[f], condition="or")
    return f


@pytest.mark.parametrize("spelling", [_llama_filters, dict_filter])
def test_filters_nested_to_the_limit_persist_and_load(tmp_path, spelling):
    r = MixPRRetriever.from_documents(book_docs(), similarity_top_k=3, filters=spelling(MAX_DEPTH))
    r.persist(tmp_path / "r")  # depth 31 persisted, then failed to load: issue 44
    loaded = MixPRRetriever.from_persist_dir(tmp_path / "r")
    for q in BOOK_QUERIES:
        assert _view(loaded, q) == _view(r, q)
        assert {n.node.ref_doc_id for n in loaded.retrieve(q)} <= {"pride", "whale"}
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels"):
        MixPRRetriever.from_documents(book_docs(), filters=spelling(MAX_DEPTH + 1))


def test_node_metadata_nested_to_the_limit_persists_and_loads(tmp_path):
    md = deep_metadata(MAX_METADATA_DEPTH)
    docs = [Document(text="The whale swam far.", id_="w", metadata=md), *book_docs([0])]
    MixPRRetriever.from_documents(docs).persist(tmp_path / "r")
    loaded = MixPRRetriever.from_persist_dir(tmp_path / "r")
    assert any(n.metadata == md for n in loaded._nodes)
    with pytest.raises(ValueError, match=f"more than {MAX_METADATA_DEPTH} levels"):
        MixPRRetriever.from_documents(
            [Document(text="x y", id_="w", metadata={"a": md}), *book_docs([0])]
        ).persist(tmp_path / "deeper")


@pytest.mark.parametrize("cond", [None, "", 0, False])
def test_a_saved_filter_condition_the_save_never_writes_is_refused(tmp_path, cond):
    flt = MetadataFilters(filters=[MetadataFilter(key="author", value="Doyle")])
    MixPRRetriever.from_documents(book_docs(), filters=flt).persist(tmp_path)
    sub = tmp_path / "longctx_mixpr"

    def edit(settings):
        settings["filters"]["condition"] = cond  # was read as "and"
        return settings

    edit_json(sub / "retriever.json", edit)
    with pytest.raises(PersistError, match="retriever.json.*'condition' must be one of"):
        MixPRRetriever.from_persist_dir(tmp_path)
