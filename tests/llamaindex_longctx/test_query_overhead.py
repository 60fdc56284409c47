"""What a LlamaIndex MixPRRetriever query costs beyond the core's search (the adapters' query
overhead): a hit's SOURCE relationship hashes its document once, not once per hit per query;
a retriever following a docstore that did not change does not compare it node by node; the
nodes a user reads are the core's hits exactly."""

from __future__ import annotations

import pytest
from llama_index.core import Document
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MediaResource, NodeRelationship, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore

import llamaindex_longctx.mixpr_retriever as mixpr_module
from llamaindex_longctx import CorpusRetriever, MixPRRetriever
from longctx import sample_text
from longctx.types import hit_id
from tests._fixtures import BOOK_QUERIES
from tests.llamaindex_longctx._fixtures import book_docs, strings_in


@pytest.fixture
def text_hashes(monkeypatch):
    """Counts the SHA-256s of a ``Document``'s text (``MediaResource.hash``, which
    ``Document.hash`` reads)."""
    calls = []
    real = MediaResource.hash

    def counted(self):
        calls.append(self.text)
        return real.fget(self)

    monkeypatch.setattr(MediaResource, "hash", property(counted))
    return calls


def test_nodes_are_the_core_hits_exactly():
    docs = book_docs()
    r = MixPRRetriever.from_documents(docs, similarity_top_k=4, order="document")
    by_id = {d.node_id: d for d in docs}
    for q in BOOK_QUERIES:
        result = r.index.search(q, k=4, unique_texts=True)
        nodes = r.retrieve(q)
        assert len(nodes) == len(result.hits) > 0
        for nws, hit, doc_id in zip(nodes, result.hits, result.info["doc_ids"]):
            node, source = nws.node, by_id[doc_id]
            assert node.node_id == hit_id(doc_id, hit)
            assert node.text == hit.text == source.text[hit.start : hit.end]
            assert nws.score == hit.score == node.metadata["longctx_score"]
            assert node.metadata == {
                **source.metadata,
                "longctx_start_char_idx": hit.start,
                "longctx_end_char_idx": hit.end,
                "longctx_unit_index": hit.index,
                "longctx_score": hit.score,
                "longctx_method": "mixpr",
                "longctx_source_id": doc_id,
            }
            rel = node.relationships[NodeRelationship.SOURCE]
            assert rel == source.as_related_node_info()
            assert rel.hash == source.hash and node.ref_doc_id == doc_id


def test_a_document_is_hashed_once_not_per_hit_per_query(text_hashes):
    text = sample_text("alice")
    docs = [Document(text=text[:40_000], id_="a"), Document(text=text[40_000:80_000], id_="b")]
    r = MixPRRetriever.from_documents(docs, token_budget=600)
    text_hashes.clear()
    queries = ["Who was late?", "What did the Queen shout?", "Where did Alice fall?"]
    hits = sum(len(r.retrieve(q)) for q in queries for _ in range(3))
    assert hits > 3 * len(queries) * 5  # many hits of each document
    # each document hit at most once (before: once per hit of every query)
    assert 0 < len(text_hashes) <= len(docs)
    assert len(set(text_hashes)) == len(text_hashes)


def test_an_edited_source_is_hashed_again():
    from llamaindex_longctx._nodes import related_info

    doc = Document(text="The hound ran across the moor at night.", id_="d", metadata={"a": 1})
    memo: dict = {}
    first = related_info(doc, memo)
    assert first == doc.as_related_node_info()
    assert related_info(doc, memo) == first
    doc.metadata["a"] = 2  # edited in place
    assert related_info(doc, memo) == doc.as_related_node_info() != first
    doc.set_content("The hound slept.")
    assert related_info(doc, memo) == doc.as_related_node_info()
    node = TextNode(text="a chunk", id_="n", metadata={"k": [1]})
    assert related_info(node, memo) == node.as_related_node_info()
    node.metadata["k"].append(2)  # a value changed inside the metadata: str(metadata) differs
    assert related_info(node, memo) == node.as_related_node_info()
    node.text = "another chunk"
    assert related_info(node, memo) == node.as_related_node_info()


def test_a_deleted_document_leaves_the_memo():
    r = MixPRRetriever.from_documents(book_docs(), similarity_top_k=3)
    for q in BOOK_QUERIES:
        r.retrieve(q)
    held = set(r._hashes)
    assert held
    r.delete_ref_doc(sorted(held)[0])
    assert sorted(held)[0] not in r._hashes


def test_corpus_retriever_hashes_each_document_once(tmp_path, text_hashes):
    from longctx.corpus import build_indexes

    (tmp_path / "books").mkdir()
    for d in book_docs():
        (tmp_path / "books" / f"{d.node_id}.txt").write_text(d.text, encoding="utf-8")
    build_indexes(str(tmp_path / "books"), "mixpr", str(tmp_path / "corpus"), progress=False)
    r = CorpusRetriever.from_corpus(tmp_path / "corpus", similarity_top_k=4)
    text_hashes.clear()
    nodes = [n for q in BOOK_QUERIES for _ in range(3) for n in r.retrieve(q)]
    sources = {n.node.ref_doc_id for n in nodes}
    assert len(nodes) > len(sources)
    # once per document's text (the corpus gives each query the same text)
    assert len(text_hashes) == len(sources)
    # the memo holds, by doc id, no text (before: each document's whole text, never dropped:
    # a4.py held 9.78 MB after 16 queries)
    assert set(r._hashes) == sources
    assert not {r.corpus.text(i) for i in sources} & set(strings_in(r._hashes))
    for n in nodes:
        doc = Document(
            text=r.corpus.text(n.node.ref_doc_id),
            id_=n.node.ref_doc_id,
            metadata=r.corpus.metadata(n.node.ref_doc_id),
        )
        assert n.node.relationships[NodeRelationship.SOURCE] == doc.as_related_node_info()


def _docstore_retriever():
    store = SimpleDocumentStore()
    store.add_documents(SentenceSplitter(chunk_size=64, chunk_overlap=0)(book_docs()))
    r = MixPRRetriever.from_defaults(docstore=store, chunk_nodes=False, similarity_top_k=3)
    return store, r


def test_an_unchanged_docstore_is_not_compared_node_by_node(monkeypatch):
    store, r = _docstore_retriever()
    calls = []
    real = mixpr_module.docstore_hashes

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(mixpr_module, "docstore_hashes", counted)
    before = [r.retrieve(q) for q in BOOK_QUERIES]
    again = [r.retrieve(q) for q in BOOK_QUERIES * 3]
    assert len(calls) == 1  # the first search compares; the next find it unchanged
    view = lambda out: [(n.node.node_id, n.score, n.node.text) for n in out]  # noqa: E731
    assert [view(x) for x in again[: len(before)]] == [view(x) for x in before]
    # a change is still followed: a node added, one updated, one deleted
    extra = Document(text="The gem lay under the old oak by the well.", id_="extra")
    store.add_documents([extra])
    best = r.retrieve("Where was the gem under the oak?")
    assert len(calls) == 2 and "extra" in [n.node.node_id for n in best]
    store.delete_document("extra")
    assert "extra" not in [n.node.node_id for n in r.retrieve("Where was the gem under the oak?")]
    node = store.get_node(sorted(store.docs)[0])
    node.set_content("The gem lay under the old oak by the well, said the keeper.")
    store.add_documents([node], allow_update=True)
    best = r.retrieve("What did the keeper say of the gem under the oak?")
    assert node.node_id in [n.node.node_id for n in best]
    assert len(calls) == 4  # each change compared once
