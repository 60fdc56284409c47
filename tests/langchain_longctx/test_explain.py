"""LangChain MixPRRetriever(explain=True): every document says why it was retrieved, in
JSON-ready metadata; invoke(..., explain=...) overrides the field."""

from __future__ import annotations

import json

from langchain_core.documents import Document

from langchain_longctx.mixpr_retriever import MixPRRetriever
from longctx.mixpr import MixPR
from longctx.types import META_EXPLANATION
from tests.test_explain import ALICE, BRIDGE, BRIDGE_Q, IDS


def test_documents_carry_the_explanation_only_when_asked():
    docs = [Document(page_content=t, id=i) for t, i in zip(BRIDGE, IDS)]
    r = MixPRRetriever(documents=docs, k=3, chunk_documents=False, mixpr=MixPR(preset="multihop"))
    assert all(META_EXPLANATION not in d.metadata for d in r.invoke(BRIDGE_Q))
    got = {d.id: d for d in r.invoke(BRIDGE_Q, explain=True)}
    e = got["Shirley Temple"].metadata[META_EXPLANATION]
    assert json.loads(json.dumps(e)) == e
    assert e["paths"][0]["path"][1]["doc_id"] == "Kiss and Tell"


def test_field_turns_it_on_for_chunks():
    r = MixPRRetriever.from_texts(" ".join(ALICE), ids=["alice"], k=2, explain=True)
    docs = r.invoke("the rabbit and the pocket watch")
    assert docs and all(META_EXPLANATION in d.metadata for d in docs)
    for d in docs:
        e = d.metadata[META_EXPLANATION]
        assert abs(sum(e["parts"].values()) - d.metadata["longctx_score"]) < 1e-9


def test_diversity_compressor_names_the_pick_a_penalty_was_measured_against():
    from langchain_longctx import DiversityCompressor
    from tests._fixtures import DIVERSITY_TEXTS
    from tests.langchain_longctx._fixtures import HashEmbeddings

    docs = [Document(page_content=t, id=f"d{j}") for j, t in enumerate(DIVERSITY_TEXTS)]
    comp = DiversityCompressor(method="fps", k=3, embeddings=HashEmbeddings(), explain=True)
    out = comp.compress_documents(docs, "Where did the cat sit?")
    picks = [d.metadata[META_EXPLANATION] for d in out]
    json.dumps(picks)
    later = [p for p in picks if p["pick"] > 0]
    assert later and all(p["against"]["doc_id"] in {d.id for d in out} for p in later)
    assert all(p["objective"]["diversity"] >= 0 for p in later)


def test_youra_retriever_explains_the_reaction():
    import pytest

    pytest.importorskip("torch")
    from langchain_longctx.youra_retriever import YouraRetriever
    from tests._youra_helpers import smollm2_tokenizer, tiny_llama
    from tests.test_youra import CONTEXT, QUERY

    tok = smollm2_tokenizer()
    r = YouraRetriever.from_texts(CONTEXT, model=tiny_llama(len(tok)), tokenizer=tok, k=2)
    assert all(META_EXPLANATION not in d.metadata for d in r.invoke(QUERY))
    for d in r.invoke(QUERY, explain=True):
        e = d.metadata[META_EXPLANATION]
        json.dumps(e)
        assert e["window"]["tokens"][0] <= e["tokens"][0]


def test_garlic_retriever_explains_visited_chunks():
    import pytest

    pytest.importorskip("torch")
    from langchain_longctx.garlic_retriever import GarlicRetriever
    from tests.langchain_longctx.test_garlic_retriever import QUESTION, _params

    r = GarlicRetriever(**_params())
    chunks = [d for d in r.invoke(QUESTION, explain=True) if d.metadata["longctx_level"] == 1]
    assert chunks
    for d in chunks:
        e = d.metadata[META_EXPLANATION]
        json.dumps(e)
        assert e["method"] == "garlic" and e["path"][-1]["level"] == 1
        assert abs(sum(e["parts"].values()) - d.metadata["longctx_score"]) < 1e-9
