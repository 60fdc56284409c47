"""LlamaIndex MixPRRetriever on a corpus that changes: insert_nodes / delete_ref_doc equal to a
fresh build, following a VectorStoreIndex's docstore, metadata filters (MetadataFilters)."""

from __future__ import annotations

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from llamaindex_longctx import MixPRRetriever
from tests._fixtures import BOOK_QUERIES
from tests.llamaindex_longctx._fixtures import book_docs


def _view(retriever, q):
    return sorted((n.node.node_id, round(n.score, 9)) for n in retriever.retrieve(q))


def test_insert_and_delete_equal_a_fresh_build():
    r = MixPRRetriever.from_documents(book_docs([0, 1]), similarity_top_k=3)
    r.insert_nodes(book_docs([2]))
    r.insert(book_docs([3])[0])
    r.delete_ref_doc("pride")
    fresh = MixPRRetriever.from_documents(book_docs([0, 2, 3]), similarity_top_k=3)
    for q in BOOK_QUERIES:
        assert _view(r, q) == _view(fresh, q)
    assert [n.node_id for n in r.nodes] == ["hound", "whale", "gem"]
    with pytest.raises(KeyError, match="pride"):
        r.delete_ref_doc("pride", raise_error=True)
    with pytest.raises(ValueError, match="already"):
        r.insert_nodes(book_docs([0]))
    r.update_ref_doc(Document(text="Sir Henry found his boot again.", id_="hound"))
    best = max(r.retrieve("Did Sir Henry find the boot?"), key=lambda n: n.score)
    assert "found his boot" in best.node.text


def test_persisted_after_changes_loads_the_same(tmp_path):
    r = MixPRRetriever.from_documents(book_docs([0, 1]), similarity_top_k=2)
    r.insert_nodes(book_docs([2, 3]))
    r.delete_ref_doc("whale")
    r.persist(tmp_path / "r")
    loaded = MixPRRetriever.from_persist_dir(tmp_path / "r")
    for q in BOOK_QUERIES:
        assert _view(loaded, q) == _view(r, q)


def test_follows_the_vector_store_index_docstore():
    index = VectorStoreIndex.from_documents(
        book_docs([0, 1]), embed_model=MockEmbedding(embed_dim=8)
    )
    r = MixPRRetriever.from_defaults(index=index, similarity_top_k=2)

    def doc_of(n):  # the returned chunk's ref_doc_id is the document's id (issue 38)
        return n.node.ref_doc_id

    assert all(doc_of(n) != "gem" for n in r.retrieve("Where was the gem?"))
    index.insert(book_docs([3])[0])
    best = max(r.retrieve("Where was the gem?"), key=lambda n: n.score)
    assert "gem" in best.node.text and doc_of(best) == "gem"
    index.delete_ref_doc("hound", delete_from_docstore=True)
    assert all(doc_of(n) != "hound" for n in r.retrieve("What did Sir Henry lose?"))
    fresh = MixPRRetriever.from_defaults(index=index, similarity_top_k=2)
    for q in BOOK_QUERIES:
        assert _view(r, q) == _view(fresh, q)


def test_metadata_filters_exclude_the_best_document():
    q = "What did Sir Henry lose at the hotel?"
    r = MixPRRetriever.from_documents(book_docs(), similarity_top_k=2)
    assert r.retrieve(q)[0].node.ref_doc_id == "hound"
    flt = MetadataFilters(filters=[MetadataFilter(key="author", value="Doyle", operator="!=")])
    rf = MixPRRetriever.from_documents(book_docs(), similarity_top_k=5, filters=flt)
    assert {n.node.ref_doc_id for n in rf.retrieve(q)} <= {"pride", "whale"}
    both = MetadataFilters(
        filters=[
            MetadataFilter(key="author", value="Doyle"),
            MetadataFilter(key="year", value=1900, operator=FilterOperator.LT),
        ],
        condition=FilterCondition.AND,
    )
    rb = MixPRRetriever.from_documents(book_docs(), similarity_top_k=5, filters=both)
    assert {n.node.ref_doc_id for n in rb.retrieve(q)} == {"gem"}
    for n in rb.retrieve(q):
        assert n.node.metadata["author"] == "Doyle"  # the user's metadata kept
    with pytest.raises(TypeError, match="filters must be"):
        MixPRRetriever.from_documents(book_docs(), filters=3)


def test_delete_ref_doc_of_an_unknown_document_logs_as_llamaindex_does(caplog):
    """LlamaIndex's ``BaseIndex.delete_ref_doc`` logs "ref_doc_id X not found, nothing
    deleted." and returns (``VectorStoreIndex``'s returns silently); ours raised ``KeyError`` by
    default."""
    import logging

    r = MixPRRetriever.from_documents(book_docs([0, 1]), similarity_top_k=3)
    before = [n.node_id for n in r.nodes]
    with caplog.at_level(logging.WARNING):
        assert r.delete_ref_doc("nobody") is None
    assert [n.node_id for n in r.nodes] == before  # nothing deleted
    ours = [m for m in caplog.messages if "nobody" in m]
    caplog.clear()
    from llama_index.core import SummaryIndex

    vec = VectorStoreIndex.from_documents(book_docs([0]), embed_model=MockEmbedding(embed_dim=4))
    vec.delete_ref_doc("nobody")  # the framework's vector index: no raise (and no log)
    with caplog.at_level(logging.WARNING):
        SummaryIndex.from_documents(book_docs([0])).delete_ref_doc("nobody")  # BaseIndex's
    assert ours and ours == [m for m in caplog.messages if "nobody" in m]
    with caplog.at_level(logging.WARNING):
        caplog.clear()
        r.update_ref_doc(Document(text="A new note about the moor.", id_="note"))  # new: no log
    assert not [m for m in caplog.messages if "not found" in m]
    assert "note" in [n.node_id for n in r.nodes]


def test_delete_ref_doc_takes_llamaindex_positional_arguments():
    """``BaseIndex.delete_ref_doc(ref_doc_id, delete_from_docstore=False, **delete_kwargs)``:
    ours took ``raise_error`` second, so ``delete_ref_doc(id, True)`` raised for an unknown
    document and never touched the docstore; ``raise_error`` is a keyword now."""
    import inspect

    from llama_index.core.indices.base import BaseIndex

    ours = list(inspect.signature(MixPRRetriever.delete_ref_doc).parameters)
    theirs = list(inspect.signature(BaseIndex.delete_ref_doc).parameters)
    assert ours[:3] == theirs[:3] == ["self", "ref_doc_id", "delete_from_docstore"]
    from llama_index.core.storage.docstore import SimpleDocumentStore

    store = SimpleDocumentStore()
    store.add_documents(book_docs([0, 1, 2]))
    r = MixPRRetriever.from_defaults(docstore=store, similarity_top_k=2)
    r.delete_ref_doc("nobody", True)  # as LlamaIndex: logged, nothing deleted, no raise
    r.delete_ref_doc("hound", True)  # positional delete_from_docstore
    assert "hound" not in {n.ref_doc_id for n in r.nodes}
    assert not store.document_exists("hound")  # gone from the docstore too
    assert all(n.node.ref_doc_id != "hound" for n in r.retrieve("What did Sir Henry lose?"))
    r.delete_ref_doc("pride", False)  # the retriever only: the docstore keeps it
    assert store.document_exists("pride")
    assert "pride" not in {n.ref_doc_id for n in r.nodes}
    r.delete_ref_doc("whale", False, raise_error=True)  # held: deleted, no raise
    with pytest.raises(KeyError, match="whale"):
        r.delete_ref_doc("whale", raise_error=True)  # the keyword still taken
    with pytest.raises(TypeError, match="delete_from_docstore must be True or False"):
        r.delete_ref_doc("whale", "yes")


def test_delete_from_docstore_through_a_followed_index_is_refused(tmp_path):
    """A retriever following a ``VectorStoreIndex`` does not own its docstore: deleting from it
    left the index's struct and vector store holding the nodes, and the app's own retriever
    then raised ``KeyError: 'Node ID ... not found in fetched nodes'``. Refused now, naming the
    argument and the index's own delete; that delete is followed on the next query."""
    index = VectorStoreIndex.from_documents(
        book_docs([0, 1, 2]), embed_model=MockEmbedding(embed_dim=8)
    )
    r = MixPRRetriever.from_defaults(index=index, similarity_top_k=2)
    for args in (("hound", True), ("nobody", True)):
        with pytest.raises(ValueError, match=r"delete_from_docstore=True.*index\.delete_ref_doc"):
            r.delete_ref_doc(*args)
    assert index.docstore.get_ref_doc_info("hound") is not None  # nothing deleted
    assert len(index.as_retriever(similarity_top_k=9).retrieve("Sir Henry")) == 3
    index.delete_ref_doc("hound", delete_from_docstore=True)  # the app's way
    assert {n.node.ref_doc_id for n in index.as_retriever(similarity_top_k=9).retrieve("x")} == {
        "pride",
        "whale",
    }
    assert all(n.node.ref_doc_id != "hound" for n in r.retrieve("What did Sir Henry lose?"))
    index.delete_ref_doc("pride", delete_from_docstore=True)  # the documented way
    assert len(index.as_retriever(similarity_top_k=9).retrieve("x")) == 1
    assert "pride" not in {n.node.ref_doc_id for n in r.retrieve("Mr. Darcy and Elizabeth")}
    r.persist(tmp_path / "r")  # reloaded following the index: refused the same way
    again = MixPRRetriever.from_persist_dir(tmp_path / "r", index=index)
    with pytest.raises(ValueError, match="delete_from_docstore=True"):
        again.delete_ref_doc("whale", True)
    with pytest.raises(ValueError, match=r"delete_ref_doc: .*follows an index"):
        again.delete_ref_doc("whale")


def test_a_retriever_only_delete_on_a_followed_index_is_refused(tmp_path):
    """A retriever following an index has the index's docstore as its source of truth. A
    retriever-only ``delete_ref_doc(id)`` used to pass silently: the index still returned the
    document, the retriever never showed it again (not even after ``index.insert``) though the
    docstore held it, and a persist + reload brought it back. Refused now, naming the index's
    delete; a retriever that owns its nodes or its docstore still deletes."""
    from llama_index.core.storage.docstore import SimpleDocumentStore

    index = VectorStoreIndex.from_documents(
        book_docs([0, 1, 2]), embed_model=MockEmbedding(embed_dim=8)
    )
    r = MixPRRetriever.from_defaults(index=index, similarity_top_k=9)
    held = {n.node.ref_doc_id for n in r.retrieve("Mr. Darcy and Elizabeth")}
    assert "pride" in held
    for call in (lambda: r.delete_ref_doc("pride"), lambda: r.delete_ref_doc("pride", False),
                 lambda: r.delete_ref_doc("nobody", raise_error=True)):  # fmt: skip
        with pytest.raises(ValueError, match=r"index\.delete_ref_doc\('(pride|nobody)', "
                           r"delete_from_docstore=True\)"):  # fmt: skip
            call()
    index.insert(book_docs([3])[0])
    assert {n.node.ref_doc_id for n in r.retrieve("Mr. Darcy and Elizabeth")} == held | {"gem"}
    r.persist(tmp_path / "r")
    again = MixPRRetriever.from_persist_dir(tmp_path / "r", index=index)
    assert _view(again, "Mr. Darcy") == _view(r, "Mr. Darcy")
    # owners keep deleting: built from documents, or from a docstore given alone
    own = MixPRRetriever.from_documents(book_docs([0, 1]), similarity_top_k=9)
    own.delete_ref_doc("pride")
    assert {n.node.ref_doc_id for n in own.retrieve("Mr. Darcy")} == {"hound"}
    store = SimpleDocumentStore()
    store.add_documents(book_docs([0, 1]), store_text=True)
    by_store = MixPRRetriever.from_defaults(docstore=store, similarity_top_k=9)
    by_store.delete_ref_doc("pride")
    assert {n.node.ref_doc_id for n in by_store.retrieve("Mr. Darcy")} == {"hound"}


def test_every_retriever_only_change_on_a_followed_index_is_refused():
    """``delete_ref_doc`` was refused on a retriever following an index, but ``insert``,
    ``insert_nodes``, ``delete_nodes`` and ``update_ref_doc`` still changed the retriever alone
    and were never reconciled (session 21's review: a deleted node hidden while the index
    returned it; an inserted one kept while the index lacked it; an update's text kept while the
    index held the old). Each is refused now, naming the index's own call, and that call is
    followed; the docstore sync, which uses the same work inside, still follows."""
    index = VectorStoreIndex.from_documents(
        book_docs([0, 1, 2]), embed_model=MockEmbedding(embed_dim=8)
    )
    r = MixPRRetriever.from_defaults(index=index, similarity_top_k=9)
    before = _view(r, "Mr. Darcy and Elizabeth")
    hound_node = next(iter(index.docstore.get_ref_doc_info("hound").node_ids))
    extra = book_docs([3])[0]
    for call, through in (
        (lambda: r.insert(extra), r"index\.insert\(document\)"),
        (lambda: r.insert_nodes([extra]), r"index\.insert_nodes\(nodes\)"),
        (lambda: r.delete_nodes([hound_node]), r"index\.delete_nodes\(node_ids, "),
        (lambda: r.update_ref_doc(extra), r"index\.update_ref_doc\(document\)"),
    ):
        with pytest.raises(ValueError, match=r"follows an index.*" + through):
            call()
    assert _view(r, "Mr. Darcy and Elizabeth") == before  # nothing changed
    index.insert(extra)  # the app's way: followed
    assert "gem" in {n.node.ref_doc_id for n in r.retrieve("the blue carbuncle")}
    index.delete_ref_doc("hound", delete_from_docstore=True)
    assert "hound" not in {n.node.ref_doc_id for n in r.retrieve("What did Sir Henry lose?")}
    # a retriever that owns its nodes still takes every change
    first = book_docs([0])[0]
    own = MixPRRetriever.from_documents([first], similarity_top_k=9)
    own.insert(extra)
    own.update_ref_doc(extra)
    assert {n.node.ref_doc_id for n in own.retrieve("the blue carbuncle")} >= {"gem"}
    own.delete_nodes(["gem"])
    assert {n.node_id for n in own.nodes} == {first.node_id}


def test_delete_from_docstore_after_a_retriever_only_delete():
    """LlamaIndex looks the document up in the docstore: deleted from the retriever first
    (``False``), then with ``True``, it goes from the docstore (it returned "not found")."""
    from llama_index.core.storage.docstore import SimpleDocumentStore

    nodes = [
        TextNode(text=f"Part {j} of the hound story.", id_=f"h{j}", metadata={"j": j})
        for j in range(2)
    ]
    for n in nodes:
        n.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="hound")
    store = SimpleDocumentStore()
    store.add_documents([*nodes, *book_docs([1])], store_text=True)
    store.set_document_hash("hound", "h")  # the document's ref_doc_info holds h0, h1
    r = MixPRRetriever.from_defaults(docstore=store, similarity_top_k=2)
    r.delete_ref_doc("hound")
    assert store.get_ref_doc_info("hound") is not None  # the retriever only
    assert "hound" not in {n.node.ref_doc_id for n in r.retrieve("the hound story")}
    r.delete_ref_doc("hound", True, raise_error=True)  # found in the docstore: no raise
    assert store.get_ref_doc_info("hound") is None
    assert not store.document_exists("h0") and not store.document_exists("h1")
    assert store.document_exists("pride")
    with pytest.raises(KeyError, match="hound"):
        r.delete_ref_doc("hound", True, raise_error=True)  # now gone everywhere
    assert [n.node_id for n in r.nodes] == ["pride"]
