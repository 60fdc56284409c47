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
