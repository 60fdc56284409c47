"""DiversityPostprocessor (LlamaIndex adapter of MMR/FPS)."""

from __future__ import annotations

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_longctx import DiversityPostprocessor
from llamaindex_longctx.diversity_postprocessor import DEFAULT_TOP_N
from longctx.embeddings import default_cache
from longctx.types import METADATA_KEYS
from tests._fixtures import DIVERSITY_TEXTS as TEXTS
from tests._fixtures import hash_vector
from tests.llamaindex_longctx._fixtures import HashEmbedding


def _nodes(with_embedding=False):
    out = []
    for j, t in enumerate(TEXTS):
        node = TextNode(text=t, id_=f"n{j}", metadata={"pos": j})
        if with_embedding:
            node.embedding = hash_vector(t)
        out.append(NodeWithScore(node=node, score=1.0 - 0.1 * j))
    return out


def test_mmr_drops_near_duplicates_keeps_ids_metadata_scores():
    emb = HashEmbedding()
    pp = DiversityPostprocessor(top_n=2, lambda_=0.5, embed_model=emb)
    assert DiversityPostprocessor.class_name() == "DiversityPostprocessor"
    out = pp.postprocess_nodes(_nodes(), query_str="Where did the cat sit?")
    assert len(out) == 2 and emb.calls > 0
    assert sum("cat" in n.node.get_content() for n in out) == 1
    for n in out:
        j = int(n.node.node_id[1:])  # the source node's own id: each node is one unit
        assert n.node.metadata["pos"] == j and set(n.node.metadata) == {"pos", *METADATA_KEYS}
        assert n.node.metadata["longctx_source_id"] == f"n{j}"
        assert n.node.metadata["longctx_method"] == "mmr"
        assert n.score == pytest.approx(n.node.metadata["longctx_score"])
        assert set(METADATA_KEYS) <= set(n.node.excluded_llm_metadata_keys)
        assert set(METADATA_KEYS) <= set(n.node.excluded_embed_metadata_keys)
    plain = DiversityPostprocessor(top_n=2, lambda_=1.0, embed_model=emb).postprocess_nodes(
        _nodes(), query_str="Where did the cat sit?"
    )
    assert all("cat" in n.node.get_content() for n in plain)


def test_reuses_node_embeddings_and_node_score_reward_and_budget():
    emb = HashEmbedding()
    pp = DiversityPostprocessor(
        token_budget=14, reward="node_score", lambda_=1.0, order="document", embed_model=emb
    )
    out = pp.postprocess_nodes(_nodes(with_embedding=True), QueryBundle("unused"))
    assert emb.calls == 0  # stored embeddings reused, query not embedded for node_score
    # best node scores first while they fit (7 + 8 tokens > 14, so n0 then n2 (7 tokens))
    assert [n.node.node_id for n in out] == ["n0", "n2"]
    fps = DiversityPostprocessor(method="fps", top_n=3, window=1, order="2:1", embed_model=emb)
    got = fps.postprocess_nodes(_nodes(with_embedding=True), query_str="cat")
    assert len(got) == 3 and len({n.node.node_id for n in got}) == 3


def test_validation_and_default_size():
    with pytest.raises(ValueError, match="method"):
        DiversityPostprocessor(method="xyz")
    with pytest.raises(ValueError, match="order"):
        DiversityPostprocessor(order="sideways")
    with pytest.raises(ValueError, match="reward"):
        DiversityPostprocessor(reward="magic")
    with pytest.raises(ValueError):
        DiversityPostprocessor(lambda_=2.0)
    with pytest.raises(ValueError, match="top_n|k"):
        DiversityPostprocessor(top_n=0)
    with pytest.raises(ValueError, match="at most one"):
        DiversityPostprocessor(top_n=2, token_budget=10)
    with pytest.raises((TypeError, ValueError), match="token_budget"):
        DiversityPostprocessor(token_budget=2.5)
    # no size given: the documented default, never the input unchanged
    pp = DiversityPostprocessor(embed_model=HashEmbedding())
    nodes = _nodes() + [
        NodeWithScore(node=TextNode(text=f"Extra sentence number {j}.", id_=f"x{j}"), score=0.1)
        for j in range(4)
    ]
    out = pp.postprocess_nodes(nodes, query_str="cat")
    assert len(out) == DEFAULT_TOP_N < len(nodes)
    assert all("longctx_score" in n.node.metadata for n in out)
    assert DiversityPostprocessor(top_n=2).postprocess_nodes([], query_str="q") == []


def test_ids_unique_and_cache_avoids_reembedding():
    emb = HashEmbedding()
    pp = DiversityPostprocessor(top_n=4, embed_model=emb, lambda_=0.3)
    default_cache().clear()
    out = pp.postprocess_nodes(_nodes(), query_str="cat")
    ids = [n.node.node_id for n in out]
    assert len(ids) == len(set(ids)) == 4
    calls = emb.calls
    again = pp.postprocess_nodes(_nodes(), query_str="cat")
    assert emb.calls == calls  # node texts came from the cache; only the query was embedded
    assert [n.node.node_id for n in again] == ids


def test_user_metadata_kept_and_document_order():
    nodes = []
    for j, t in enumerate(TEXTS):
        node = TextNode(
            text=t,
            id_=f"n{j}",
            metadata={"pos": j, "longctx_note": "mine"},
            start_char_idx=100 * (len(TEXTS) - j),
            end_char_idx=100 * (len(TEXTS) - j) + len(t),
        )
        node.excluded_llm_metadata_keys = ["pos"]
        nodes.append(NodeWithScore(node=node, score=0.5))
    pp = DiversityPostprocessor(top_n=3, order="document", embed_model=HashEmbedding())
    out = pp.postprocess_nodes(nodes, query_str="cat")
    starts = [n.node.start_char_idx for n in out]
    assert starts == sorted(starts)  # document order = by start_char_idx
    for n in out:
        assert n.node.metadata["longctx_note"] == "mine" and "pos" in n.node.metadata
        assert "pos" in n.node.excluded_llm_metadata_keys
    for n in nodes:  # the input nodes are not modified: the keys go on copies
        assert set(n.node.metadata) == {"pos", "longctx_note"}
        assert n.node.excluded_llm_metadata_keys == ["pos"]


async def test_async_matches_sync_and_runs_concurrently():
    import asyncio

    pp = DiversityPostprocessor(top_n=2, embed_model=HashEmbedding())
    queries = ["cat", "Paris France", "dogs at night", "mat again"] * 2
    sync = [[n.node.node_id for n in pp.postprocess_nodes(_nodes(), query_str=q)] for q in queries]
    outs = await asyncio.gather(*(pp.apostprocess_nodes(_nodes(), query_str=q) for q in queries))
    assert [[n.node.node_id for n in o] for o in outs] == sync
