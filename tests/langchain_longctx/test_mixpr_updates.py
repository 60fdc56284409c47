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
    assert r.delete(ids=["pride"]) is False  # not held: skipped, as VectorStore.delete
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


def test_documents_without_id_after_a_delete_add_save_and_load(tmp_path):
    # a document without id is keyed by its position ("source1"); a delete moves the positions:
    # the next one added without id was named "source2" again (ValueError: already in the
    # index), and a save after the delete could not be loaded (PersistError: "damaged")
    r = MixPRRetriever.from_documents(
        [Document(page_content="Sir Henry lost a boot.", id="hound"),
         Document(page_content="Elizabeth walked in the mud.")], k=5,
    )  # fmt: skip
    assert r.add_documents([Document(page_content="Holmes found the gem.")]) == ["source2"]
    r.delete(ids=["hound"])
    added = r.add_documents([Document(page_content="Watson wrote about the moor.")])
    assert added == ["source2'"]
    assert {d.id.split("#")[0] for d in r.invoke("mud gem moor")} == {
        "source1", "source2", "source2'"
    }  # fmt: skip
    r.save(tmp_path / "r")
    loaded = MixPRRetriever.load(tmp_path / "r")
    assert _view(loaded, "mud gem moor") == _view(r, "mud gem moor")
    loaded.delete(ids=added)
    assert "moor" not in " ".join(d.page_content for d in loaded.invoke("mud gem moor"))


@pytest.mark.parametrize("bad", [{"a": 1}, ["a"], ["a", 3], ["a", "a"]])
def test_saved_keys_checked(bad):
    from langchain_longctx._persist import check_saved_keys
    from longctx.persist import PersistError

    assert check_saved_keys(["a", None], 2, "keys.json") == ["a", None]
    with pytest.raises(PersistError, match="keys.json"):
        check_saved_keys(bad, 2, "keys.json")


def test_async_add_and_delete():
    # LangChain's VectorStore has aadd_documents / adelete: an async app calls them
    import asyncio

    r = MixPRRetriever.from_documents(book_docs([0, 1]), k=3)

    async def go():
        ids = await r.aadd_documents([Document(page_content="A note on the moor.")], ids=["note"])
        found = await r.ainvoke("moor", k=1)
        gone = await r.adelete(ids=["note"])
        return ids, found, gone

    ids, found, gone = asyncio.run(go())
    assert ids == ["note"] and found[0].metadata["longctx_source_id"] == "note" and gone is True
    assert all(d.metadata["longctx_source_id"] != "note" for d in r.invoke("moor"))


def test_delete_skips_unknown_ids_as_langchains_stores_do():
    """``VectorStore.delete``: "True if deletion is successful, False otherwise";
    ``InMemoryVectorStore.delete`` skips unknown ids. Ours raised ``KeyError`` and removed
    nothing."""
    from langchain_core.vectorstores import InMemoryVectorStore

    from tests.langchain_longctx._fixtures import HashEmbeddings

    r = MixPRRetriever.from_documents(book_docs([0, 1, 2]), k=3)
    assert r.delete(ids=["pride", "nobody"]) is False  # "pride" removed, "nobody" skipped
    assert [d.id for d in r.documents] == ["hound", "whale"]
    fresh = MixPRRetriever.from_documents(book_docs([0, 2]), k=3)
    for q in BOOK_QUERIES:
        assert _view(r, q) == _view(fresh, q)
    assert r.delete(ids=["nobody"]) is False and len(r.documents) == 2
    assert r.delete(ids=["whale"]) is True
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(book_docs([0]))
    store.delete(ids=["nobody"])  # the framework's own: no error either
