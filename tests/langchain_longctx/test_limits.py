"""Issue 44 items 2 and 8 through the LangChain retriever: a filter or metadata the API accepts,
nested to its limit, saves and loads; a saved filter is read as strictly as it is written."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_longctx import MixPRRetriever
from longctx.filters import MAX_DEPTH, MetadataFilter, MetadataFilters
from longctx.persist import MAX_METADATA_DEPTH, PersistError
from tests._fixtures import BOOK_QUERIES
from tests._persist_helpers import edit_json
from tests.langchain_longctx._fixtures import book_docs
from tests.test_limits import deep_metadata, dict_filter


def _view(r, q):
    return [(d.id, round(d.metadata["longctx_score"], 9)) for d in r.invoke(q)]


def _groups(depth: int) -> MetadataFilters:
    f = MetadataFilters((MetadataFilter("author", ["Austen", "Melville"], "in"),))
    for _ in range(depth - 1):
        f = MetadataFilters((f,), "or")
    return f


@pytest.mark.parametrize("spelling", [dict_filter, _groups])
def test_a_filter_nested_to_the_limit_saves_and_loads(tmp_path, spelling):
    r = MixPRRetriever.from_documents(book_docs(), k=3, filter=spelling(MAX_DEPTH))
    r.save(tmp_path / "r")  # depth 31 saved, then failed to load: issue 44
    loaded = MixPRRetriever.load(tmp_path / "r")
    for q in BOOK_QUERIES:
        assert _view(loaded, q) == _view(r, q)
        assert {d.metadata["longctx_source_id"] for d in loaded.invoke(q)} <= {"pride", "whale"}
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels"):
        MixPRRetriever.from_documents(book_docs(), filter=spelling(MAX_DEPTH + 1))


def test_metadata_nested_to_the_limit_saves_and_loads(tmp_path):
    md = deep_metadata(MAX_METADATA_DEPTH)
    docs = [Document(page_content="The whale swam far.", id="w", metadata=md), *book_docs([0])]
    MixPRRetriever.from_documents(docs).save(tmp_path / "r")
    assert MixPRRetriever.load(tmp_path / "r").documents[0].metadata == md
    with pytest.raises(ValueError, match=f"more than {MAX_METADATA_DEPTH} levels"):
        MixPRRetriever.from_documents(
            [Document(page_content="x y", id="w", metadata={"a": md}), *book_docs([0])]
        ).save(tmp_path / "deeper")


@pytest.mark.parametrize("cond", [None, "", 0, False])
def test_a_saved_filter_condition_the_save_never_writes_is_refused(tmp_path, cond):
    MixPRRetriever.from_documents(book_docs(), filter={"author": "Doyle"}).save(tmp_path / "r")

    def edit(settings):
        settings["filter"]["condition"] = cond  # was read as "and"
        return settings

    edit_json(tmp_path / "r" / "retriever.json", edit)
    with pytest.raises(PersistError, match="retriever.json.*'condition' must be one of"):
        MixPRRetriever.load(tmp_path / "r")
