"""LlamaIndex MixPRRetriever: chunked nodes keep their source, metadata and offsets."""

from __future__ import annotations

import pytest
from llama_index.core.schema import Document, NodeRelationship, TextNode

from llamaindex_longctx.mixpr_retriever import MixPRRetriever

STORY = (
    "Mary moved to the bathroom. The moors were grey and cold that winter. "
    "John went to the hallway. Mary got the milk there. The captain told stories of the sea. "
    "Sandra journeyed to the garden. Mary travelled to the office. Daniel went to the kitchen."
)


def _docs():
    return [
        Document(text=STORY, id_="doc-1", metadata={"title": "babi"}),
        Document(text="The sea was calm.\nDaniel took the apple.", id_="doc-2"),
    ]


def test_from_documents_chunks_and_keeps_source():
    docs = _docs()
    r = MixPRRetriever.from_documents(docs, similarity_top_k=3)
    assert MixPRRetriever.class_name() == "MixPRRetriever"
    out = r.retrieve("Where is the milk?")
    assert len(out) == 3
    texts = [n.node.get_content() for n in out]
    assert "Mary got the milk there." in texts
    by_id = {d.node_id: d for d in docs}
    # best first by default (LlamaIndex's retrievers' order); document order one argument away
    assert [n.score for n in out] == sorted((n.score for n in out), reverse=True)
    doc_order = MixPRRetriever.from_documents(docs, similarity_top_k=3, order="document")
    in_doc = doc_order.retrieve("Where is the milk?")
    order = [(n.node.ref_doc_id, n.node.metadata["longctx_unit_index"]) for n in in_doc]
    assert order == sorted(order, key=lambda x: ([d.node_id for d in docs].index(x[0]), x[1]))
    assert sorted(n.node.node_id for n in in_doc) == sorted(n.node.node_id for n in out)
    with pytest.raises(ValueError, match="order must be one of"):
        MixPRRetriever.from_documents(docs, order="chronological")
    assert len({n.node.node_id for n in out}) == len(out)
    for n in out:
        node = n.node
        src = by_id[node.ref_doc_id]
        assert node.relationships[NodeRelationship.SOURCE].node_id == src.node_id
        a, b = node.metadata["longctx_start_char_idx"], node.metadata["longctx_end_char_idx"]
        assert src.text[a:b] == node.text and (node.start_char_idx, node.end_char_idx) == (a, b)
        assert node.node_id == f"{src.node_id}#{a}-{b}"
        assert node.metadata["longctx_method"] == "mixpr"
        assert node.metadata["longctx_source_id"] == src.node_id
        assert n.score > 0 and node.metadata["longctx_score"] == n.score
        if src.node_id == "doc-1":
            assert node.metadata["title"] == "babi"
        assert "longctx_unit_index" not in node.get_content(metadata_mode="llm")
    best = max(out, key=lambda n: n.score)
    assert best.node.text == "Mary got the milk there."


async def test_async_and_budget_and_units():
    nodes = [TextNode(text=s + ".", id_=f"n{i}") for i, s in enumerate(STORY.split(". "))]
    r = MixPRRetriever(nodes=nodes, similarity_top_k=1, chunk_nodes=False)
    out = await r.aretrieve("Where is the milk?")
    assert [n.node.node_id for n in out] == ["n3"]
    assert out[0].node.node_id == "n3" and out[0].node.text == nodes[3].text  # the user's node
    assert "longctx_score" not in nodes[3].metadata  # a copy carries the keys
    rb = MixPRRetriever(nodes=_docs(), token_budget=12)
    got = rb.retrieve("Where is the milk?")
    assert 0 < sum(len(n.node.text.split()) for n in got) <= 12


def test_bad_arguments():
    with pytest.raises(ValueError, match="similarity_top_k"):
        MixPRRetriever(nodes=_docs(), similarity_top_k=0)
    with pytest.raises(ValueError, match="mode"):
        MixPRRetriever(nodes=_docs(), mode="both")
    with pytest.raises(TypeError, match=r"nodes\[0\]"):
        MixPRRetriever(nodes=["text"])
    with pytest.raises(ValueError, match="query"):
        MixPRRetriever(nodes=_docs()).retrieve("  ")


def test_index_built_once_and_persist_round_trip(tmp_path):
    r = MixPRRetriever.from_documents(_docs(), similarity_top_k=3)
    index = r.index
    first = r.retrieve("Where is the milk?")
    r.retrieve("Who went to the garden?")
    assert r.index is index  # not rebuilt per query
    r.persist(tmp_path / "r")
    loaded = MixPRRetriever.from_persist_dir(tmp_path / "r")
    again = loaded.retrieve("Where is the milk?")
    assert [(n.node.node_id, n.score) for n in again] == [(n.node.node_id, n.score) for n in first]
    assert again[0].node.metadata.get("title") == "babi"
