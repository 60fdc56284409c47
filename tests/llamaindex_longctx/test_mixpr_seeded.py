"""``MixPRRetriever(vector_retriever=...)``: the hybrid over the app's own VectorStoreIndex, whose
hits seed the walk; longctx embeds nothing (issue 45)."""

from __future__ import annotations

import warnings

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import NodeWithScore, TextNode

from llamaindex_longctx import MixPRRetriever
from llamaindex_longctx._nodes import nodes_to_seeds
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.llamaindex_longctx._fixtures import HashEmbedding

BOOK, OTHER = SEED_BOOK, SEED_OTHER


@pytest.fixture
def app():
    """An app from LlamaIndex's docs: documents, a splitter, a VectorStoreIndex."""
    docs = [Document(text=BOOK * 3, id_="book"), Document(text=OTHER * 3, id_="other")]
    emb = HashEmbedding()
    nodes = SentenceSplitter(chunk_size=64, chunk_overlap=8)(docs)
    vindex = VectorStoreIndex(nodes, embed_model=emb)
    return docs, nodes, vindex, emb


def test_the_app_retrievers_chunks_become_spans_of_their_documents(app):
    docs, nodes, vindex, emb = app
    r = MixPRRetriever.from_documents(docs, similarity_top_k=3)
    found = vindex.as_retriever(similarity_top_k=2).retrieve("Where did the fox cross?")
    seeds = nodes_to_seeds(found, r.index)
    assert [s.doc_id for s in seeds] == [n.node.ref_doc_id for n in found]
    assert [(s.start, s.end) for s in seeds] == [
        (n.node.start_char_idx, n.node.end_char_idx) for n in found
    ]
    assert [s.score for s in seeds] == [1.0, 0.5]
    text = r.index.texts[r.index.doc_ids.index(seeds[0].doc_id)]
    assert text[seeds[0].start : seeds[0].end] == found[0].node.get_content()


def test_hybrid_over_the_apps_index_embeds_nothing_at_build_insert_or_query(app):
    docs, nodes, vindex, emb = app
    before = emb.calls
    r = MixPRRetriever.from_documents(
        docs[:1], similarity_top_k=3, vector_retriever=vindex.as_retriever(similarity_top_k=2)
    )
    r.insert(docs[1])
    out = r.retrieve("Where did the fox cross the stream?")
    assert emb.calls == before  # the app's query embedding is its own (not counted as a text)
    assert out and all(n.node.metadata["longctx_method"] == "mixpr" for n in out)
    assert r.index.unit_vectors is None


def test_the_seeds_bring_in_what_the_vector_retriever_found(app):
    docs, _, _, _ = app
    target = OTHER.index("Chalk dust")

    class Fixed(BaseRetriever):
        def _retrieve(self, query_bundle):
            node = TextNode(text=OTHER[target : target + 40], id_="x")
            node.start_char_idx = target
            node.end_char_idx = target + 40
            node.relationships = {}
            from llama_index.core.schema import NodeRelationship, RelatedNodeInfo

            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="other")
            return [NodeWithScore(node=node, score=0.3)]

    q = "Where were the ships counted at dawn?"
    plain = MixPRRetriever.from_documents(docs, similarity_top_k=3)
    hybrid = MixPRRetriever.from_documents(docs, similarity_top_k=3, vector_retriever=Fixed())
    assert not any("Chalk" in n.node.get_content() for n in plain.retrieve(q))
    assert any("Chalk" in n.node.get_content() for n in hybrid.retrieve(q))


def test_built_over_the_apps_own_nodes_a_hit_seeds_its_node(app):
    _, nodes, vindex, _ = app
    r = MixPRRetriever.from_defaults(
        index=vindex, similarity_top_k=3, vector_retriever=vindex.as_retriever(similarity_top_k=2)
    )
    found = vindex.as_retriever(similarity_top_k=2).retrieve("the owl in the forest")
    seeds = nodes_to_seeds(found, r.index)
    assert [s.doc_id for s in seeds] == [n.node.node_id for n in found]
    assert all(s.start is None for s in seeds)
    assert r.retrieve("the owl in the forest")


def test_a_vector_retriever_that_is_not_a_retriever_is_refused(app):
    docs = app[0]
    with pytest.raises(TypeError, match="vector_retriever must be a llama_index BaseRetriever"):
        MixPRRetriever.from_documents(docs, vector_retriever=app[2])


def test_refresh_embeds_a_followed_indexs_new_nodes_before_the_search():
    emb = HashEmbedding()
    vindex = VectorStoreIndex([], embed_model=emb)
    vindex.insert(Document(text=BOOK, id_="book"))
    r = MixPRRetriever.from_defaults(index=vindex, similarity_top_k=2, embed_model=emb)
    vindex.insert(Document(text=OTHER, id_="other"))
    r.refresh()  # the new chunk is embedded here (by longctx and by the app's index)
    before = emb.calls
    out = r.retrieve("Where did the chalk dust drift?")
    assert emb.calls == before  # nothing embedded inside the search
    assert any("Chalk" in n.node.get_content() for n in out)


def test_a_reloaded_retriever_takes_the_vector_retriever_again(app, tmp_path):
    docs, _, vindex, _ = app
    vr = vindex.as_retriever(similarity_top_k=2)
    r = MixPRRetriever.from_documents(docs, similarity_top_k=3, vector_retriever=vr)
    r.persist(tmp_path)
    back = MixPRRetriever.from_persist_dir(tmp_path, vector_retriever=vr)
    assert back.vector_retriever is vr
    q = "Where did the fox cross the stream?"
    assert [n.node.node_id for n in back.retrieve(q)] == [n.node.node_id for n in r.retrieve(q)]


def test_a_search_never_embeds_a_followed_indexs_new_nodes():
    """issue 45: with embed_model= a search makes no embedding call but the query's; the new
    node waits for refresh() (warned once), a deleted one is gone at once."""
    emb = HashEmbedding()
    vindex = VectorStoreIndex([], embed_model=emb)
    vindex.insert(Document(text=BOOK, id_="book"))
    vindex.insert(Document(text=OTHER, id_="other"))
    r = MixPRRetriever.from_defaults(index=vindex, similarity_top_k=3, embed_model=emb)
    vindex.insert(Document(text="Chalk dust drifted over the quiet harbour.", id_="chalk"))
    vindex.delete_ref_doc("other", delete_from_docstore=True)
    q = "Where did the chalk dust drift?"
    before = emb.calls
    with pytest.warns(UserWarning, match=r"refresh\(\)"):
        out = r.retrieve(q)
    assert emb.calls == before  # HashEmbedding counts the texts it embeds, not queries
    assert not any("Chalk dust" in n.node.get_content() for n in out)
    assert [n.ref_doc_id for n in r.nodes] == ["book"]  # the deletion is followed at once
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: the next search only logs
        r.retrieve(q)
    r.refresh()
    assert emb.calls > before  # embedded here, at refresh
    after = emb.calls
    out = r.retrieve(q)
    assert emb.calls == after
    assert any("Chalk dust" in n.node.get_content() for n in out)


def test_the_apps_retriever_is_asked_for_local_queries_only(app):
    """A question the router sends to global mode uses no seeds: the app's retriever (and the
    query embedding it costs) is not called for it (issue 45 review)."""
    docs, _, vindex, _ = app
    inner = vindex.as_retriever(similarity_top_k=2)

    class Counting(BaseRetriever):
        calls = 0

        def _retrieve(self, query_bundle):
            Counting.calls += 1
            return inner.retrieve(query_bundle)

    r = MixPRRetriever.from_documents(docs, similarity_top_k=3, vector_retriever=Counting())
    assert r.retrieve("Summarize the main themes of the books.")
    assert Counting.calls == 0
    assert r.retrieve("Where did the fox cross the stream?")
    assert Counting.calls == 1
