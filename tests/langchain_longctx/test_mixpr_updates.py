"""LangChain MixPRRetriever on a corpus that changes: add_documents / delete equal to a fresh
build, filter= dicts (on the retriever and per invoke)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_longctx import MixPRRetriever
from tests._fixtures import BOOK_QUERIES
from tests.langchain_longctx._fixtures import book_docs


def _view(retriever, q, **kw):
    return sorted((d.id, round(d.metadata["longctx_score"], 9)) for d in retriever.invoke(q, **kw))


def test_add_and_delete_equal_a_fresh_build(tmp_path):
    r = MixPRRetriever.from_documents(book_docs([0, 1]), k=3)
    assert r.add_documents(book_docs([2, 3])) == ["whale", "gem"]
    assert r.delete(ids=["pride"]) is True
    fresh = MixPRRetriever.from_documents(book_docs([0, 2, 3]), k=3)
    for q in BOOK_QUERIES:
        assert _view(r, q) == _view(fresh, q)
    with pytest.raises(KeyError, match="pride"):
        r.delete(ids=["pride"])
    with pytest.raises(ValueError, match="given twice"):
        r.add_documents(book_docs([0, 0]))  # an id held is an upsert (test_mixpr_newcomer.py)
    with pytest.raises(ValueError, match="ids"):
        r.delete()
    ids = r.add_documents([Document(page_content="A note about the moor.")], ids=["note"])
    assert ids == ["note"] and r.invoke("moor", k=1)[0].metadata["longctx_source_id"] == "note"
    r.save(tmp_path / "r")
    loaded = MixPRRetriever.load(tmp_path / "r")
    for q in BOOK_QUERIES:
        assert _view(loaded, q) == _view(r, q)


def test_filter_dicts_exclude_the_best_document():
    q = "What did Sir Henry lose at the hotel?"
    r = MixPRRetriever.from_documents(book_docs(), k=5)
    assert r.invoke(q, k=1)[0].metadata["longctx_source_id"] == "hound"
    got = r.invoke(q, filter={"author": {"$ne": "Doyle"}})
    assert got and {d.metadata["author"] for d in got} <= {"Austen", "Melville"}
    rf = MixPRRetriever.from_documents(book_docs(), k=5, filter={"year": {"$lt": 1900}})
    assert {d.id.split("#")[0] for d in rf.invoke(q)} == {"gem"}
    assert rf.invoke(q, filter={"author": "Austen"})[0].metadata["author"] == "Austen"
    with pytest.raises(ValueError, match=r"\$regex"):
        MixPRRetriever.from_documents(book_docs(), filter={"author": {"$regex": "D"}})


def test_whole_passages_and_the_multihop_walk():
    from longctx.mixpr import MixPR

    passages = [
        Document(page_content=t, id=t.split("\n")[0])
        for t in (
            "Kiss and Tell\nKiss and Tell is a 1945 comedy film starring Shirley Temple.",
            "Meet Corliss Archer\nMeet Corliss Archer is an American radio comedy.",
            "Shirley Temple\nShirley Temple Black was an actress and later Chief of Protocol.",
            "Wilhelm Busch\nWilhelm Busch was a German humorist and poet.",
        )
    ]
    q = "What government position was held by the woman who starred in Kiss and Tell?"
    r = MixPRRetriever.from_documents(
        passages, k=2, chunk_documents=False, mixpr=MixPR(preset="multihop")
    )
    got = r.invoke(q)
    assert {d.id for d in got} == {"Kiss and Tell", "Shirley Temple"}
    assert all(d.page_content in {p.page_content for p in passages} for d in got)
    assert r.index.config.walk == "multihop" and r.index.n_units == len(passages)
