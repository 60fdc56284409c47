"""LlamaIndex MixPRRetriever(explain=True): every node says why it was retrieved, in JSON-ready
metadata hidden from the LLM and the embedder."""

from __future__ import annotations

import json

from llama_index.core.schema import Document, MetadataMode

from llamaindex_longctx.mixpr_retriever import MixPRRetriever
from longctx.mixpr import MixPR
from longctx.types import META_EXPLANATION
from tests.test_explain import BRIDGE, BRIDGE_Q, IDS


def _docs():
    return [Document(text=t, id_=i) for t, i in zip(BRIDGE, IDS)]


def test_nodes_carry_the_explanation_only_when_asked():
    plain = MixPRRetriever(_docs(), similarity_top_k=3, chunk_nodes=False,
                           mixpr=MixPR(preset="multihop"))  # fmt: skip
    assert all(META_EXPLANATION not in n.node.metadata for n in plain.retrieve(BRIDGE_Q))
    r = MixPRRetriever(_docs(), similarity_top_k=3, chunk_nodes=False,
                       mixpr=MixPR(preset="multihop"), explain=True)  # fmt: skip
    nodes = r.retrieve(BRIDGE_Q)
    by_id = {n.node.node_id: n for n in nodes}
    e = by_id["Shirley Temple"].node.metadata[META_EXPLANATION]
    assert json.loads(json.dumps(e)) == e
    assert e["walk"] == "multihop" and e["score"] == by_id["Shirley Temple"].score
    assert e["paths"][0]["path"][2] == {"phrase": "shirley temple"}
    node = by_id["Shirley Temple"].node
    assert META_EXPLANATION in node.excluded_llm_metadata_keys
    assert "walk_phrases" not in node.get_content(metadata_mode=MetadataMode.LLM)
