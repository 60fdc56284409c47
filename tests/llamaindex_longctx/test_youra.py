"""LlamaIndex YOURA adapters, with a tiny random Llama and SmolLM2's tokenizer."""

from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("torch")

from llama_index.core.schema import (  # noqa: E402
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    TextNode,
)

from llamaindex_longctx.youra_postprocessor import YouraPostprocessor  # noqa: E402
from llamaindex_longctx.youra_retriever import YouraRetriever  # noqa: E402
from longctx.text import split_sentences  # noqa: E402
from longctx.types import METADATA_KEYS, hit_id  # noqa: E402
from longctx.youra import DEFAULT_K  # noqa: E402
from tests._fixtures import shared_tiny_scorer  # noqa: E402
from tests._youra_helpers import QUERY, TEXTS  # noqa: E402


@pytest.fixture(scope="module")
def scorer():
    return shared_tiny_scorer()


def _nodes():
    return [
        NodeWithScore(node=TextNode(text=t, id_=f"n{i}", metadata={"page": i}), score=1.0)
        for i, t in enumerate(TEXTS)
    ]


def _check_hit_node(nws, sources):
    """A returned node: longctx keys beside the user's, offsets, id, SOURCE, hidden keys."""
    node = nws.node
    meta = node.metadata
    src = sources[meta["longctx_source_id"]]
    a, b = meta["longctx_start_char_idx"], meta["longctx_end_char_idx"]
    text = src.get_content(metadata_mode=MetadataMode.NONE)
    assert text[a:b] == node.get_content(metadata_mode=MetadataMode.NONE)
    assert meta["longctx_method"] == "youra" and nws.score == meta["longctx_score"]
    assert set(METADATA_KEYS) <= set(meta) and meta["page"] == src.metadata["page"]
    for key in METADATA_KEYS:
        assert key in node.excluded_llm_metadata_keys and key in node.excluded_embed_metadata_keys
    if node.node_id == src.node_id:  # the unit is the whole node
        assert (a, b) == (0, len(text))
    else:
        assert node.node_id == f"{src.node_id}#{a}-{b}"
        assert (node.start_char_idx, node.end_char_idx) == (a, b)
        assert node.relationships[NodeRelationship.SOURCE].node_id == src.node_id
    assert "longctx_score" not in node.get_content(metadata_mode=MetadataMode.LLM)


def test_postprocessor_maps_hits_to_nodes(scorer):
    nodes = _nodes()
    out = YouraPostprocessor(scorer=scorer, top_n=4).postprocess_nodes(nodes, query_str=QUERY)
    assert len(out) == 4 and all(isinstance(n, NodeWithScore) for n in out)
    sources = {n.node.node_id: n.node for n in nodes}
    for n in out:
        _check_hit_node(n, sources)
    ids = [n.node.node_id for n in out]
    assert len(set(ids)) == len(ids)
    keys = [(n.node.metadata["page"], n.node.metadata["longctx_start_char_idx"]) for n in out]
    assert keys == sorted(keys)  # document order
    # user's nodes untouched
    assert [n.node.get_content() for n in nodes] == TEXTS
    assert all(not set(METADATA_KEYS) & set(n.node.metadata) for n in nodes)


def test_postprocessor_default_size_budget_and_async(scorer):
    nodes = _nodes()
    default = YouraPostprocessor(scorer=scorer).postprocess_nodes(nodes, query_str=QUERY)
    n_sentences = sum(len(split_sentences(t)) for t in TEXTS)
    assert len(default) == min(DEFAULT_K, n_sentences)  # a selection, not the input unchanged
    budget = YouraPostprocessor(scorer=scorer, token_budget=25).postprocess_nodes(
        nodes, query_bundle=QueryBundle(QUERY)
    )
    tok = scorer.tokenizer
    used = sum(
        len(tok(n.node.get_content(), add_special_tokens=False)["input_ids"]) for n in budget
    )
    assert 0 < used <= 25 + len(budget)  # +1 a sentence for a token shared across a boundary
    pp = YouraPostprocessor(scorer=scorer, top_n=3)
    sync = pp.postprocess_nodes(nodes, query_str=QUERY)
    got = asyncio.run(pp.apostprocess_nodes(nodes, query_str=QUERY))
    assert [(n.node.node_id, n.score) for n in got] == [(n.node.node_id, n.score) for n in sync]
    assert YouraPostprocessor.class_name() == "YouraPostprocessor"
    assert pp.postprocess_nodes([], query_str=QUERY) == []


def test_postprocessor_whole_node_and_duplicate_ids(scorer):
    one = NodeWithScore(node=TextNode(text="The Rabbit had pink eyes.", id_="one"), score=0.5)
    out = YouraPostprocessor(scorer=scorer, top_n=50).postprocess_nodes(
        [one, *_nodes(), one], query_str=QUERY
    )
    ids = [n.node.node_id for n in out]
    n_sentences = sum(len(split_sentences(t)) for t in TEXTS)
    assert (
        len(ids) == len(set(ids)) == n_sentences + 1 and "one" in ids
    )  # the whole node: its own id
    whole = out[ids.index("one")].node
    assert whole.metadata["longctx_unit_index"] == 0 and "longctx_score" not in one.node.metadata


def test_postprocessor_errors(scorer):
    with pytest.raises(ValueError, match="at most one"):
        YouraPostprocessor(scorer=scorer, top_n=2, token_budget=5)
    with pytest.raises(ValueError, match="token_budget"):
        YouraPostprocessor(scorer=scorer, token_budget=0)
    with pytest.raises(ValueError, match="aggregate"):
        YouraPostprocessor(scorer=None, model=None, top_n=1, aggregate="median")
    with pytest.raises(ValueError, match="query"):
        YouraPostprocessor(scorer=scorer, top_n=1).postprocess_nodes(_nodes())
    with pytest.raises(TypeError, match="scorer"):
        YouraPostprocessor(scorer="nope", top_n=1)


def _docs():
    return [
        Document(text=" ".join(TEXTS[:2]), id_="d0", metadata={"page": 0}),
        Document(text=TEXTS[2], id_="d1", metadata={"page": 1}),
    ]


def test_retriever_built_once_maps_hits(scorer):
    docs = _docs()
    r = YouraRetriever(docs, scorer=scorer, similarity_top_k=4)
    index = r.index
    out = r.retrieve(QUERY)
    assert len(out) == 4 and r.index is index
    assert [n.score for n in out] == sorted((n.score for n in out), reverse=True)  # best first
    in_doc = YouraRetriever(docs, scorer=scorer, similarity_top_k=4, order="document")
    ids = [d.node_id for d in docs]
    pos = [
        (ids.index(n.node.metadata["longctx_source_id"]), n.node.metadata["longctx_start_char_idx"])
        for n in in_doc.retrieve(QUERY)
    ]
    assert pos == sorted(pos)  # document order
    sources = {d.node_id: d for d in docs}
    for n in out:
        _check_hit_node(n, sources)
        h_id = hit_id(n.node.metadata["longctx_source_id"], _as_passage(n))
        assert n.node.node_id == h_id
    # a second query on the built retriever runs no context pass
    misses = scorer.cache_info()["misses"]
    second = r.retrieve("Where did the Rabbit go?")
    assert scorer.cache_info()["misses"] == misses and len(second) == 4
    by_text = YouraRetriever(text=docs[0].text, scorer=scorer, token_budget=20).retrieve(QUERY)
    assert by_text and all(
        n.node.relationships[NodeRelationship.SOURCE].node_id == "text" for n in by_text
    )
    assert YouraRetriever.class_name() == "YouraRetriever"


def _as_passage(n):
    from longctx.types import Passage

    m = n.node.metadata
    return Passage(m["longctx_start_char_idx"], m["longctx_end_char_idx"], "", 0.0, 0)


def test_retriever_async_gather_equals_sequential_off_the_loop(scorer):
    r = YouraRetriever(_docs(), scorer=scorer, similarity_top_k=3)
    queries = [QUERY, "Where did the Rabbit go?", "Who sat on the bank?", "What was hot?"] * 2
    seq = [[(n.node.node_id, n.score) for n in r.retrieve(q)] for q in queries]
    threads = set()
    h = scorer.model.register_forward_pre_hook(lambda *a: threads.add(threading.get_ident()))

    async def main():
        res = await asyncio.gather(*(r.aretrieve(q) for q in queries))
        return [[(n.node.node_id, n.score) for n in x] for x in res]

    try:
        got = asyncio.run(main())
    finally:
        h.remove()
    assert got == seq
    assert threads and threading.get_ident() not in threads  # model work never on the loop


def test_retriever_errors(scorer):
    with pytest.raises(ValueError, match="exactly one of nodes"):
        YouraRetriever(scorer=scorer)
    with pytest.raises(ValueError, match="similarity_top_k"):
        YouraRetriever(text="Some text.", scorer=scorer, similarity_top_k=0)
    with pytest.raises(ValueError, match="query"):
        YouraRetriever(text="Some text.", scorer=scorer).retrieve(" ")
    with pytest.raises(TypeError, match="nodes"):
        YouraRetriever(["not a node"], scorer=scorer)


def test_postprocessor_presets_build_the_scorer():
    from tests._youra_helpers import smollm2_tokenizer, tiny_llama

    tok = smollm2_tokenizer()
    model = tiny_llama(len(tok))
    default = YouraPostprocessor(model=model, tokenizer=tok, top_n=2)._scorer
    assert (default.preset, default.normalize, default.layers) == ("default", "ratio", "all")
    paper = YouraPostprocessor(model=model, tokenizer=tok, top_n=2, preset="paper")._scorer
    assert (paper.baseline, paper.normalize, paper.layers, paper.aggregate) == (
        "paper",
        "none",
        "last",
        "gmean",
    )
    one = YouraPostprocessor(model=model, tokenizer=tok, top_n=2, normalize="none")._scorer
    assert one.normalize == "none" and one.baseline == "instruction"
    with pytest.raises(ValueError):
        YouraPostprocessor(model=model, tokenizer=tok, top_n=2, preset="fast")
