"""``explain`` on the LlamaIndex components that lacked it: YouraPostprocessor, CorpusRetriever,
GarlicIndex's retriever and query engine. Each node's ``longctx_explanation`` is JSON-ready,
hidden from the LLM, and equal to what the core gives for the same query."""

from __future__ import annotations

import pytest
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from longctx.types import META_EXPLANATION
from tests._explain_helpers import (
    CORPUS_QUERY,
    check_same,
    corpus_core,
    diversity_corpus,
    sharded_corpus,
    youra_core,
    youra_setup,
)


def test_youra_postprocessor(smollm2_tokenizer):
    pytest.importorskip("torch")
    from llamaindex_longctx import YouraPostprocessor

    scorer, TEXTS, ids, QUERY = youra_setup(smollm2_tokenizer, "n")
    nodes = [NodeWithScore(node=TextNode(text=t, id_=i), score=1.0) for t, i in zip(TEXTS, ids)]
    plain = YouraPostprocessor(top_n=3, scorer=scorer).postprocess_nodes(nodes, query_str=QUERY)
    assert plain and all(META_EXPLANATION not in n.node.metadata for n in plain)
    out = YouraPostprocessor(top_n=3, scorer=scorer, explain=True).postprocess_nodes(
        nodes, query_str=QUERY
    )
    check_same([n.node.metadata for n in out], youra_core(TEXTS, ids, scorer, QUERY, 3))
    assert "attention_before" not in out[0].node.get_content(metadata_mode=MetadataMode.LLM)
    with pytest.raises(ValueError):
        YouraPostprocessor(scorer=scorer, explain="yes please")


def test_corpus_retriever(tmp_path):
    from llamaindex_longctx import CorpusRetriever

    corpus = diversity_corpus(tmp_path)
    plain = CorpusRetriever(corpus, similarity_top_k=3).retrieve(CORPUS_QUERY)
    assert all(META_EXPLANATION not in n.node.metadata for n in plain)
    out = CorpusRetriever(corpus, similarity_top_k=3, explain=True).retrieve(CORPUS_QUERY)
    core = corpus_core(corpus, 3)
    check_same([n.node.metadata for n in out], core)
    later = [e for e in core.values() if e["against"]]
    assert later and all(e["against"]["doc_id"] in ("kitchen", "garden") for e in later)
    with pytest.raises(TypeError, match="explain"):
        CorpusRetriever(corpus, explain=1)


def test_corpus_retriever_over_shards(tmp_path):
    from llamaindex_longctx import CorpusRetriever

    corpus = sharded_corpus(tmp_path)
    out = CorpusRetriever(corpus, similarity_top_k=6, explain=True).retrieve(CORPUS_QUERY)
    check_same([n.node.metadata for n in out], corpus_core(corpus, 6))
    assert {n.node.metadata["longctx_source_id"] for n in out} == {"kitchen", "garden"}
    assert all(n.node.metadata[META_EXPLANATION]["walk"] == "pagerank" for n in out)


def test_garlic_index_retriever_and_query_engine(tiny_model, smollm2_tokenizer):
    from llama_index.core import Document

    from llamaindex_longctx import GarlicIndex
    from tests._fixtures import garlic_parts
    from tests.garlic._graphs import STORY

    kit = {**garlic_parts(tiny_model, smollm2_tokenizer), "max_new_tokens": 2}
    index = GarlicIndex.from_documents([Document(text=STORY, id_="tabitha")], **kit)
    q, kw = "Where did Tom Kitten lose his clothes?", {"stop_patience": 50}
    core = index.search(q, answer=False, explain=True, **kw).info["explanations"]
    plain = index.as_retriever(**kw).retrieve(q)
    assert all(META_EXPLANATION not in n.node.metadata for n in plain)
    nodes = index.as_retriever(explain=True, **kw).retrieve(q)
    levels = {n.node.metadata["longctx_level"] for n in nodes}
    assert levels >= {1, 2} and len(nodes) == len(core)
    for n in nodes:
        e = n.node.metadata[META_EXPLANATION]
        assert e == core[e["path"][-1]["node"]] and e["method"] == "garlic"
        assert META_EXPLANATION in n.node.excluded_llm_metadata_keys
    index.explain = True  # the index's default reaches its query engine
    response = index.as_query_engine(**kw).query(q)
    assert response.source_nodes
    for n in response.source_nodes:
        e = n.node.metadata[META_EXPLANATION]
        assert e == core[e["path"][-1]["node"]]
