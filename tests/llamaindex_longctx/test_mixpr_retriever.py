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
    idx = [n.node.metadata["mixpr_chunk_index"] for n in out]
    assert idx == sorted(idx)
    for n in out:
        node = n.node
        src = by_id[node.ref_doc_id]
        assert node.relationships[NodeRelationship.SOURCE].node_id == src.node_id
        a, b = node.metadata["mixpr_start_char_idx"], node.metadata["mixpr_end_char_idx"]
        assert src.text[a:b] == node.text and (node.start_char_idx, node.end_char_idx) == (a, b)
        assert n.score > 0
        if src.node_id == "doc-1":
            assert node.metadata["title"] == "babi"
        assert "mixpr_chunk_index" not in node.get_content(metadata_mode="llm")
    best = max(out, key=lambda n: n.score)
    assert best.node.text == "Mary got the milk there."


async def test_async_and_budget_and_units():
    nodes = [TextNode(text=s + ".", id_=f"n{i}") for i, s in enumerate(STORY.split(". "))]
    r = MixPRRetriever(nodes=nodes, similarity_top_k=1, chunk_nodes=False)
    out = await r.aretrieve("Where is the milk?")
    assert [n.node.node_id for n in out] == ["n3"]
    assert out[0].node is nodes[3]  # the user's node itself
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
