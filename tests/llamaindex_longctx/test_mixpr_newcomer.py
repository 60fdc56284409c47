"""LlamaIndex MixPRRetriever as a newcomer meets it (issue 38): best first by default, filters
saved and restored, the VectorStoreIndex route (ref_doc_id the document's id, a reloaded
retriever following its reloaded index), identical texts in one slot."""

from __future__ import annotations

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from llamaindex_longctx import CorpusRetriever, MixPRRetriever
from tests._fixtures import BOOK_DOCS, BOOK_QUERIES
from tests.llamaindex_longctx._fixtures import book_docs

EMBED = MockEmbedding(embed_dim=8)


def _view(retriever, q):
    return [(n.node.node_id, round(n.score, 9)) for n in retriever.retrieve(q)]


def test_best_first_by_default_document_order_by_argument():
    r = MixPRRetriever.from_documents(book_docs(), similarity_top_k=4)
    d = MixPRRetriever.from_documents(book_docs(), similarity_top_k=4, order="document")
    for q in BOOK_QUERIES:
        best, doc = r.retrieve(q), d.retrieve(q)
        assert [n.score for n in best] == sorted((n.score for n in best), reverse=True)
        ids = [n.node.ref_doc_id for n in doc]
        assert ids == sorted(ids, key=[x[0] for x in BOOK_DOCS].index)
        assert sorted(_view(r, q)) == sorted(_view(d, q))


def test_filters_and_order_are_saved_and_restored(tmp_path):
    flt = MetadataFilters(filters=[MetadataFilter(key="author", value="Doyle", operator="!=")])
    r = MixPRRetriever.from_documents(
        book_docs(), similarity_top_k=3, filters=flt, order="document"
    )
    r.persist(tmp_path / "r")
    loaded = MixPRRetriever.from_persist_dir(tmp_path / "r")
    assert loaded.order == "document"
    q = "What did Sir Henry lose at the hotel?"
    assert _view(loaded, q) == _view(r, q)
    assert {n.node.ref_doc_id for n in loaded.retrieve(q)} <= {"pride", "whale"}
    unfiltered = MixPRRetriever.from_persist_dir(tmp_path / "r", filters=None)
    assert "hound" in {n.node.ref_doc_id for n in unfiltered.retrieve(q)}
    # a callable cannot be saved: said, and the retriever saved without it
    c = MixPRRetriever.from_documents(book_docs(), filters=lambda md: md.get("author") == "Austen")
    with pytest.warns(UserWarning, match="callable filter cannot be saved"):
        c.persist(tmp_path / "c")
    assert MixPRRetriever.from_persist_dir(tmp_path / "c").filters is None


def test_vector_store_index_route_ref_doc_id_and_reload_following_the_index(tmp_path):
    index = VectorStoreIndex.from_documents(book_docs([0, 1, 2]), embed_model=EMBED)
    r = MixPRRetriever.from_defaults(index=index, similarity_top_k=3)
    got = r.retrieve("What did Sir Henry lose?")
    assert got[0].node.ref_doc_id == "hound"  # the document's id, not the splitter chunk's
    assert {n.node.ref_doc_id for n in got} <= {"hound", "pride", "whale"}
    index.storage_context.persist(tmp_path / "s")
    r.persist(tmp_path / "s")  # beside the index's files
    again = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=tmp_path / "s"), embed_model=EMBED
    )
    loaded = MixPRRetriever.from_persist_dir(tmp_path / "s", index=again)
    again.insert(book_docs([3])[0])
    again.delete_ref_doc("hound", delete_from_docstore=True)
    fresh = MixPRRetriever.from_defaults(index=again, similarity_top_k=3)
    for q in BOOK_QUERIES:
        assert _view(loaded, q) == _view(fresh, q)
        assert "hound" not in {n.node.ref_doc_id for n in loaded.retrieve(q)}
    assert loaded.retrieve("Where was the gem?")[0].node.ref_doc_id == "gem"
    with pytest.raises(ValueError, match="at most one of index and docstore"):
        MixPRRetriever.from_persist_dir(tmp_path / "s", index=again, docstore=again.docstore)


def test_identical_texts_take_one_slot():
    title = "TREASURE ISLAND"
    docs = [
        Document(text=f"{title}\n\nThe old sea dog came to the inn.", id_="a"),
        Document(text=f"{title}\n\nLong John Silver kept a tavern.", id_="b"),
    ]
    out = MixPRRetriever.from_documents(docs, similarity_top_k=3).retrieve(title)
    assert [n.node.text for n in out].count(title) == 1 and len(out) == 3


def test_corpus_retriever_best_first(tmp_path):
    from longctx.corpus import build_indexes

    build_indexes([(i, t) for i, t, _ in BOOK_DOCS], "mixpr", tmp_path / "c", progress=False)
    best = CorpusRetriever.from_corpus(tmp_path / "c", similarity_top_k=3)
    doc = CorpusRetriever.from_corpus(tmp_path / "c", similarity_top_k=3, order="document")
    for q in BOOK_QUERIES:
        a, b = best.retrieve(q), doc.retrieve(q)
        assert [n.score for n in a] == sorted((n.score for n in a), reverse=True)
        ids = [x[0] for x in BOOK_DOCS]
        assert [ids.index(n.node.ref_doc_id) for n in b] == sorted(
            ids.index(n.node.ref_doc_id) for n in b
        )


def test_corpus_retriever_refuses_a_path_naming_from_corpus(tmp_path):
    with pytest.raises(TypeError, match=r"corpus must be .*got PosixPath.*\.from_corpus\(out"):
        CorpusRetriever(tmp_path / "c")
