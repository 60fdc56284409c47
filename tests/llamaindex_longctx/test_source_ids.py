"""Duplicate and missing source ids in the LlamaIndex adapters: no hit dropped, unique ids, the
user's ids kept in metadata; sizes checked by the core rule."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_longctx import DiversityPostprocessor, MixPRRetriever, YouraPostprocessor
from llamaindex_longctx.youra_retriever import YouraRetriever
from longctx.text import split_sentences
from tests._fixtures import SOURCE_A as A
from tests._fixtures import SOURCE_B as B
from tests._fixtures import shared_tiny_scorer as tiny_scorer
from tests._youra_helpers import QUERY
from tests.llamaindex_longctx._fixtures import HashEmbedding


def test_mixpr_two_nodes_with_one_id_lose_no_sentence():
    nodes = [TextNode(id_="x", text=A), TextNode(id_="x", text=B)]
    out = MixPRRetriever(nodes, similarity_top_k=6).retrieve("What did the cat and dog do?")
    assert len(out) == 6  # all six sentences, none dropped by LlamaIndex's dedup by id
    ids = [n.node.node_id for n in out]
    assert len(set(ids)) == 6 and ids[0] == "x#0-23" and ids[3].startswith("x@1#")
    texts = {n.node.get_content() for n in out}
    assert texts == {A[a:b] for a, b in split_sentences(A)} | {
        B[a:b] for a, b in split_sentences(B)
    }
    assert all(n.node.metadata["longctx_source_id"] == "x" for n in out)
    # whole nodes (chunk_nodes=False): the second copy gets a distinct id
    whole = MixPRRetriever(nodes, similarity_top_k=6, chunk_nodes=False).retrieve("cat")
    assert sorted(n.node.node_id for n in whole) == ["x", "x@1"]


def test_the_same_node_given_twice_comes_back_once():
    node = TextNode(id_="x", text=A)
    out = MixPRRetriever([node, node], similarity_top_k=6).retrieve("What did the cat do?")
    assert len(out) == 3 and len({n.node.get_content() for n in out}) == 3


def test_diversity_postprocessor_unique_ids():
    nodes = [
        NodeWithScore(node=TextNode(id_="x#40-76", text="The cat sat on the mat."), score=1.0),
        NodeWithScore(node=TextNode(id_="x#40-76", text="Dogs bark at night."), score=0.9),
    ]
    pp = DiversityPostprocessor(top_n=2, lambda_=0.5, embed_model=HashEmbedding())
    out = pp.postprocess_nodes(nodes, query_str="cat")
    assert sorted(n.node.node_id for n in out) == ["x#40-76", "x#40-76@1"]


def test_youra_adapters_keep_both_nodes_with_one_id():
    scorer = tiny_scorer()
    nodes = [TextNode(id_="x", text=A), TextNode(id_="x", text=B)]
    n_sent = len(split_sentences(A)) + len(split_sentences(B))
    out = YouraRetriever(nodes, scorer=scorer, similarity_top_k=50).retrieve(QUERY)
    assert len(out) == n_sent == len({n.node.node_id for n in out})
    pp = YouraPostprocessor(scorer=scorer, top_n=50)
    out = pp.postprocess_nodes(
        [NodeWithScore(node=n, score=1.0) for n in nodes], QueryBundle(QUERY)
    )
    assert len(out) == n_sent == len({n.node.node_id for n in out})


@pytest.mark.parametrize("bad", [True, 2.0, "3", 0])
def test_sizes_checked_by_the_core_rule(bad):
    nodes = [TextNode(id_="x", text=A)]
    with pytest.raises((TypeError, ValueError), match="similarity_top_k"):
        MixPRRetriever(nodes, similarity_top_k=bad)
    with pytest.raises((TypeError, ValueError), match="top_n"):
        DiversityPostprocessor(top_n=bad, embed_model=HashEmbedding())
    with pytest.raises((TypeError, ValueError), match="token_budget"):
        DiversityPostprocessor(token_budget=bad, embed_model=HashEmbedding())
    with pytest.raises((TypeError, ValueError), match="top_n"):
        YouraPostprocessor(scorer=tiny_scorer(), top_n=bad)


def test_longctx_source_id_is_always_the_nodes_id():
    """What README.md and the guide say: every LlamaIndex node has an id (given or generated),
    so every hit carries ``longctx_source_id``, that id."""
    from llama_index.core.schema import TextNode

    from llamaindex_longctx import MixPRRetriever

    nodes = [TextNode(text="The cat sat on the mat. The cat slept."), TextNode(text="A dog ran.")]
    out = MixPRRetriever(nodes, similarity_top_k=5).retrieve("What did the cat do?")
    assert out
    ids = {n.node_id for n in nodes}
    assert all(n.node.metadata["longctx_source_id"] in ids for n in out)
