"""The guide's fusion recipe (issue 45): MixPR over the app's own nodes seeded by the app's
vector retriever asked for 5 (``vector_retriever=``), top 5. And ``RankFusionRetriever``, the
rank-fusion alternative: the two fused by reciprocal rank, a node both return counted once."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import NodeWithScore, TextNode

from llamaindex_longctx import MixPRRetriever, RankFusionRetriever
from longctx.fusion import reciprocal_rank_fusion
from longctx.mixpr.seeds import Seed, rank_weight
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.llamaindex_longctx._fixtures import HashEmbedding

QUERY = "Where did the fox cross the frozen stream?"


class Fixed(BaseRetriever):
    """A retriever that returns the nodes it was given, in that order, each with its own
    metadata ``{"by": tag}`` (as MixPR adds its ``longctx_*`` keys to the app's nodes)."""

    def __init__(self, ids, tag="fixed"):
        self.ids, self.tag = list(ids), tag
        super().__init__()

    def _retrieve(self, query_bundle):
        return [
            NodeWithScore(node=TextNode(text=f"text {i}", id_=i, metadata={"by": self.tag}),
                          score=1.0 / (r + 1))
            for r, i in enumerate(self.ids)
        ]  # fmt: skip


@pytest.fixture(scope="module")
def app():
    """An app from LlamaIndex's docs: documents, a splitter, a VectorStoreIndex."""
    docs = [Document(text=SEED_BOOK * 3, id_="book"), Document(text=SEED_OTHER * 3, id_="other")]
    nodes = SentenceSplitter(chunk_size=40, chunk_overlap=0)(docs)
    return VectorStoreIndex(nodes, embed_model=HashEmbedding())


def ids(found):
    return [n.node.node_id for n in found]


def test_the_recipe_is_mixpr_seeded_by_the_apps_5_at_the_nodes_grain(app):
    vector = app.as_retriever(similarity_top_k=5)
    fused = MixPRRetriever.from_defaults(
        index=app, chunk_nodes=False, similarity_top_k=5, vector_retriever=vector,
        keep_firsts=True,
    )  # fmt: skip
    out = ids(fused.retrieve(QUERY))
    assert len(set(out)) == 5 and set(out) <= set(app.docstore.docs)  # 5 distinct app nodes
    app5 = ids(vector.retrieve(QUERY))
    seeds = [Seed(i, score=rank_weight(r)) for r, i in enumerate(app5)]
    want = fused.index.search(QUERY, k=5, seeds=seeds, keep_firsts=True, unique_texts=True)
    assert set(out) == {fused.index.doc_ids[h.source] for h in want.hits}  # the core rule
    alone = ids(MixPRRetriever.from_defaults(index=app, chunk_nodes=False).retrieve(QUERY))[:5]
    assert out[0] == alone[0] and app5[0] in out[:2]  # each retriever's first node, first
    assert out != alone


def test_the_fused_top_k_keeps_both_top_hits_and_a_shared_node_once_first():
    fused = RankFusionRetriever(
        [Fixed(["m1", "m2", "s", "m3"]), Fixed(["a1", "s", "a2", "a3"])], similarity_top_k=4
    )
    out = fused.retrieve("q")
    assert ids(out) == ["s", "m1", "a1", "m2"]
    assert out[0].score == pytest.approx(1 / 63 + 1 / 62)


def test_the_recipe_over_a_vector_index_is_the_core_rule_on_node_ids(app):
    mixpr = MixPRRetriever.from_defaults(index=app, chunk_nodes=False, similarity_top_k=3)
    vector = app.as_retriever(similarity_top_k=3)
    out = RankFusionRetriever([mixpr, vector], similarity_top_k=3).retrieve(QUERY)
    lists = [ids(mixpr.retrieve(QUERY)), ids(vector.retrieve(QUERY))]
    assert set(lists[0]) <= set(app.docstore.docs)  # MixPR returns the app's own node ids
    expected = reciprocal_rank_fusion(lists, k=3)
    assert ids(out) == [k for k, _ in expected]
    assert [n.score for n in out] == pytest.approx([s for _, s in expected])
    assert len(set(ids(out))) == len(out) == 3
    assert lists[0][0] in ids(out) and lists[1][0] in ids(out)


def test_the_frameworks_own_fusion_neither_merges_nor_raises_a_node_both_return():
    """Why the recipe has its own class: ``QueryFusionRetriever`` keys nodes by ``node.hash``
    (text and metadata; MixPR's copy of a node carries its ``longctx_*`` keys), cuts its top
    ``k`` with the copies in it and then drops a repeated node id: the node both retrievers
    return is not raised, and fewer than ``k`` nodes may come back."""
    lists = [Fixed(["m1", "m2", "s"], "mixpr"), Fixed(["a1", "a2", "s"], "app")]
    theirs = QueryFusionRetriever(
        lists, mode="reciprocal_rerank", similarity_top_k=3, num_queries=1, use_async=False,
        llm=MockLLM(),
    ).retrieve("q")  # fmt: skip
    assert "s" not in ids(theirs)
    ours = RankFusionRetriever(lists, similarity_top_k=3).retrieve("q")
    assert ids(ours) == ["s", "m1", "a1"]
    assert ours[0].node.metadata == {"by": "mixpr"}  # the first retriever's copy


def test_async_retrieval_equals_sync(app):
    fused = RankFusionRetriever(
        [MixPRRetriever.from_defaults(index=app, chunk_nodes=False, similarity_top_k=3),
         app.as_retriever(similarity_top_k=3)], similarity_top_k=4,
    )  # fmt: skip
    assert ids(asyncio.run(fused.aretrieve(QUERY))) == ids(fused.retrieve(QUERY))


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"retrievers": []}, ValueError, "at least one retriever"),
        ({"retrievers": ["not a retriever"]}, TypeError, "retrievers[0]"),
        ({"weights": [1.0]}, ValueError, "weights has 1 values for 2"),
        ({"c": -1.0}, ValueError, "c must be in"),
        ({"similarity_top_k": 0}, ValueError, "similarity_top_k must be >= 1"),
    ],
)
def test_bad_arguments_are_named_at_construction(kwargs, error, words):
    kwargs = {"retrievers": [Fixed(["a"]), Fixed(["b"])], **kwargs}
    with pytest.raises(error) as exc:
        RankFusionRetriever(**kwargs)
    assert words in str(exc.value)


class Ordered(BaseRetriever):
    """The app's retriever returning the index's own nodes in a given order."""

    def __init__(self, nodes):
        self.nodes = list(nodes)
        super().__init__()

    def _retrieve(self, query_bundle):
        return [NodeWithScore(node=n, score=1.0 / (r + 1)) for r, n in enumerate(self.nodes)]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), k=st.integers(1, 8))
def test_keep_firsts_returns_each_retrievers_first_node(app, data, k):
    nodes = list(app.docstore.docs.values())
    order = data.draw(st.permutations(range(len(nodes))))[:5]
    texts = lambda found: [n.node.get_content() for n in found]  # noqa: E731
    fused = MixPRRetriever.from_defaults(
        index=app, chunk_nodes=False, similarity_top_k=k, keep_firsts=True,
        vector_retriever=Ordered([nodes[i] for i in order]),
    )  # fmt: skip
    out = texts(fused.retrieve(QUERY))
    alone = texts(MixPRRetriever.from_defaults(index=app, chunk_nodes=False).retrieve(QUERY))
    assert len(out) == k and out[0] == alone[0]  # MixPR's first node, first
    if k >= 2:
        assert nodes[order[0]].get_content() in out[:2]  # the app's first node


def test_keep_firsts_must_be_a_bool(app):
    with pytest.raises(TypeError, match="keep_firsts"):
        MixPRRetriever.from_defaults(index=app, chunk_nodes=False, keep_firsts="yes")


def test_keep_firsts_with_explain_explains_each_nodes_own_score(app):
    """Before: a retrieve with ``explain=True`` and ``keep_firsts=True`` always raised
    ``ValueError: explanation parts sum to ..., the score is ...``."""
    nodes = list(app.docstore.docs.values())
    kw = dict(index=app, chunk_nodes=False, similarity_top_k=4, keep_firsts=True)
    vr = Ordered([nodes[3], nodes[0]])
    plain = MixPRRetriever.from_defaults(vector_retriever=vr, **kw).retrieve(QUERY)
    out = MixPRRetriever.from_defaults(vector_retriever=vr, explain=True, **kw).retrieve(QUERY)
    assert ids(out) == ids(plain) and nodes[3].node_id in ids(out)[:2]
    for n in out:
        e = n.node.metadata["longctx_explanation"]
        assert e["score"] == n.score == n.node.metadata["longctx_score"]
        assert abs(sum(e["parts"].values()) - e["score"]) < 1e-9
