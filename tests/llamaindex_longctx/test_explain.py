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


def test_diversity_postprocessor_names_the_pick_a_penalty_was_measured_against():
    from llama_index.core.schema import NodeWithScore, TextNode

    from llamaindex_longctx import DiversityPostprocessor
    from tests._fixtures import DIVERSITY_TEXTS
    from tests.llamaindex_longctx._fixtures import HashEmbedding

    nodes = [NodeWithScore(node=TextNode(text=t, id_=f"n{j}"), score=1.0)
             for j, t in enumerate(DIVERSITY_TEXTS)]  # fmt: skip
    pp = DiversityPostprocessor(top_n=3, lambda_=0.5, embed_model=HashEmbedding(), explain=True)
    out = pp.postprocess_nodes(nodes, query_str="Where did the cat sit?")
    picks = [n.node.metadata[META_EXPLANATION] for n in out]
    json.dumps(picks)
    assert sorted(p["pick"] for p in picks) == [0, 1, 2]
    later = [p for p in picks if p["pick"] > 0]
    ids = {n.node.node_id for n in out}
    assert later and all(p["against"]["doc_id"] in ids for p in later)
    assert all(p["objective"]["redundancy"] <= 0 for p in later)


def test_youra_retriever_explains_the_reaction():
    import pytest

    pytest.importorskip("torch")
    from llamaindex_longctx.youra_retriever import YouraRetriever
    from tests._youra_helpers import smollm2_tokenizer, tiny_llama
    from tests.test_youra import CONTEXT, QUERY

    tok = smollm2_tokenizer()
    r = YouraRetriever(text=CONTEXT, model=tiny_llama(len(tok)), tokenizer=tok,
                       similarity_top_k=2, explain=True)  # fmt: skip
    for n in r.retrieve(QUERY):
        e = n.node.metadata[META_EXPLANATION]
        json.dumps(e)
        assert e["method"] == "youra" and {"attention_before", "attention_after"} <= set(e)
        assert abs(sum(e["parts"].values()) - n.score) < 1e-9
