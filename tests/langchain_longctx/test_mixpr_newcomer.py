"""LangChain MixPRRetriever as a newcomer meets it (issue 38): best first by default, the filter
saved and restored, add_documents with an id held is an upsert equal to a fresh build."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_longctx import CorpusRetriever, MixPRRetriever
from tests._fixtures import BOOK_DOCS, BOOK_QUERIES
from tests.langchain_longctx._fixtures import book_docs


def _view(r, q, **kw):
    return [(d.id, round(d.metadata["longctx_score"], 9)) for d in r.invoke(q, **kw)]


def test_best_first_by_default_document_order_by_argument():
    r = MixPRRetriever.from_documents(book_docs(), k=4)
    ids = [x[0] for x in BOOK_DOCS]
    for q in BOOK_QUERIES:
        scores = [s for _, s in _view(r, q)]
        assert scores == sorted(scores, reverse=True)
        doc = r.invoke(q, order="document")
        pos = [ids.index(d.metadata["longctx_source_id"]) for d in doc]
        assert pos == sorted(pos) and sorted(_view(r, q)) == sorted(_view(r, q, order="document"))
    assert _view(
        MixPRRetriever.from_documents(book_docs(), k=4, order="document"), BOOK_QUERIES[0]
    ) == _view(r, BOOK_QUERIES[0], order="document")
    with pytest.raises(ValueError, match="order must be one of"):
        r.invoke(BOOK_QUERIES[0], order="best")


def test_filter_and_order_are_saved_and_restored(tmp_path):
    r = MixPRRetriever.from_documents(book_docs(), k=3, filter={"author": {"$ne": "Doyle"}})
    r.save(tmp_path / "r")
    loaded = MixPRRetriever.load(tmp_path / "r")
    q = "What did Sir Henry lose at the hotel?"
    assert _view(loaded, q) == _view(r, q)
    assert {d.metadata["longctx_source_id"] for d in loaded.invoke(q)} <= {"pride", "whale"}
    assert "hound" in {
        d.metadata["longctx_source_id"]
        for d in MixPRRetriever.load(tmp_path / "r", filter=None).invoke(q)
    }
    c = MixPRRetriever.from_documents(book_docs(), filter=lambda md: True)
    with pytest.warns(UserWarning, match="callable filter cannot be saved"):
        c.save(tmp_path / "c")


def test_add_documents_with_held_ids_is_an_upsert_equal_to_a_fresh_build():
    r = MixPRRetriever.from_documents(book_docs(), k=3)
    new = Document(
        page_content="Sir Henry found his boot under the bed.", metadata={"author": "Doyle"}
    )
    assert r.add_documents([new], ids=["hound"]) == ["hound"]
    fresh = MixPRRetriever.from_documents(
        [
            *book_docs([1, 2, 3]),
            Document(page_content=new.page_content, metadata=new.metadata, id="hound"),
        ],
        k=3,
    )
    for q in [*BOOK_QUERIES, "Where did Sir Henry find his boot?"]:
        assert _view(r, q) == _view(fresh, q)
    assert [d.id for d in r.documents] == ["pride", "whale", "gem", "hound"]
    assert "boot under the bed" in r.invoke("Where did Sir Henry find his boot?")[0].page_content
    with pytest.raises(ValueError, match="given twice"):
        r.add_documents(book_docs([0, 0]))


def test_corpus_retriever_best_first(tmp_path):
    from longctx.corpus import build_indexes

    build_indexes([(i, t) for i, t, _ in BOOK_DOCS], "mixpr", tmp_path / "c", progress=False)
    r = CorpusRetriever.from_corpus(tmp_path / "c", k=3)
    for q in BOOK_QUERIES:
        scores = [d.metadata["longctx_score"] for d in r.invoke(q)]
        assert scores == sorted(scores, reverse=True)
        ids = [x[0] for x in BOOK_DOCS]
        pos = [ids.index(d.metadata["longctx_source_id"]) for d in r.invoke(q, order="document")]
        assert pos == sorted(pos)
