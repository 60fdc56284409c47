"""LlamaIndex YOURA adapters, with a tiny random Llama and SmolLM2's tokenizer."""

from __future__ import annotations

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
from tests._youra_helpers import QUERY, TEXTS, tiny_scorer  # noqa: E402


@pytest.fixture(scope="module")
def scorer():
    return tiny_scorer()


def _nodes():
    return [
        NodeWithScore(node=TextNode(text=t, id_=f"n{i}", metadata={"page": i}), score=1.0)
        for i, t in enumerate(TEXTS)
    ]


def test_postprocessor_keeps_ids_metadata_and_budget(scorer):
    pp = YouraPostprocessor(scorer=scorer, token_budget=25)
    nodes = _nodes()
    out = pp.postprocess_nodes(nodes, query_str=QUERY)
    assert out and all(isinstance(n, NodeWithScore) for n in out)
    ids = [n.node.node_id for n in out]
    assert ids == sorted(ids) and set(ids) <= {"n0", "n1", "n2"}  # input order, same ids
    tok = scorer.tokenizer
    total = 0
    for n in out:
        i = int(n.node.node_id[1])
        meta = n.node.metadata
        assert meta["page"] == i
        assert n.score == meta["youra_score"] == max(meta["youra_sentence_scores"])
        spans = meta["youra_char_spans"]
        # the new text is made only of the original sentences, in order
        pieces = [TEXTS[i][a:b] for a, b in spans]
        text = n.node.get_content(metadata_mode=MetadataMode.NONE)
        pos = 0
        for p in pieces:
            pos = text.index(p, pos) + len(p)
        total += sum(len(tok(p, add_special_tokens=False)["input_ids"]) for p in pieces)
        # added keys are hidden from the LLM
        assert "youra_char_spans" not in n.node.get_content(metadata_mode=MetadataMode.LLM)
    assert total <= 25 + 3  # budget in tokens of the joined context (+1 boundary token a node)
    # user's nodes untouched
    assert [n.node.get_content() for n in nodes] == TEXTS
    assert all("youra_score" not in n.node.metadata for n in nodes)


def test_postprocessor_top_n_and_full_text(scorer):
    out = YouraPostprocessor(scorer=scorer, top_n=2, keep_full_text=True).postprocess_nodes(
        _nodes(), query_bundle=QueryBundle(QUERY)
    )
    assert sum(len(n.node.metadata["youra_char_spans"]) for n in out) == 2
    for n in out:
        assert n.node.get_content(metadata_mode=MetadataMode.NONE) == TEXTS[int(n.node.node_id[1])]
    assert YouraPostprocessor.class_name() == "YouraPostprocessor"
    assert YouraPostprocessor(scorer=scorer, top_n=1).postprocess_nodes([], query_str=QUERY) == []


def test_postprocessor_errors(scorer):
    with pytest.raises(ValueError, match="exactly one"):
        YouraPostprocessor(scorer=scorer)
    with pytest.raises(ValueError, match="token_budget"):
        YouraPostprocessor(scorer=scorer, token_budget=0)
    with pytest.raises(ValueError, match="aggregate"):
        YouraPostprocessor(scorer=None, model=None, top_n=1, aggregate="median")
    with pytest.raises(ValueError, match="query"):
        YouraPostprocessor(scorer=scorer, top_n=1).postprocess_nodes(_nodes())
    with pytest.raises(TypeError, match="scorer"):
        YouraPostprocessor(scorer="nope", top_n=1)


def test_retriever_sentences_with_offsets_and_source(scorer):
    docs = [
        Document(text=" ".join(TEXTS[:2]), id_="d0", metadata={"title": "one"}),
        Document(text=TEXTS[2], id_="d1", metadata={"title": "two"}),
    ]
    r = YouraRetriever(docs, scorer=scorer, top_n=2)
    out = r.retrieve(QUERY)
    assert len(out) == 4  # top_n per document
    for n in out:
        src = n.node.relationships[NodeRelationship.SOURCE].node_id
        doc = docs[int(src[1])]
        a, b = n.node.start_char_idx, n.node.end_char_idx
        assert doc.text[a:b] == n.node.get_content(metadata_mode=MetadataMode.NONE)
        assert n.node.node_id == f"{src}:{a}-{b}"
        assert n.node.metadata["title"] == doc.metadata["title"]
        assert n.score == n.node.metadata["youra_score"]
    starts = [n.node.start_char_idx for n in out[:2]]
    assert starts == sorted(starts)
    by_text = YouraRetriever(text=docs[0].text, scorer=scorer, token_budget=20).retrieve(QUERY)
    assert by_text and all(
        n.node.relationships[NodeRelationship.SOURCE].node_id == "text" for n in by_text
    )


def test_retriever_errors(scorer):
    with pytest.raises(ValueError, match="exactly one of documents and text"):
        YouraRetriever(scorer=scorer, top_n=1)
    with pytest.raises(ValueError, match="top_n"):
        YouraRetriever(text="Some text.", scorer=scorer, top_n=0)
    with pytest.raises(ValueError, match="query"):
        YouraRetriever(text="Some text.", scorer=scorer, top_n=1).retrieve(" ")
