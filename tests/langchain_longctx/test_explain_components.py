"""``explain`` on the LangChain components that lacked it: YouraCompressor, CorpusRetriever
(field and per call), GarlicRetriever's information points. Each document's
``longctx_explanation`` is JSON-ready and equal to what the core gives for the same query."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from longctx.types import META_EXPLANATION
from tests._explain_helpers import (
    CORPUS_QUERY,
    check_same,
    corpus_core,
    diversity_corpus,
    youra_core,
)


def test_youra_compressor(smollm2_tokenizer):
    pytest.importorskip("torch")
    from langchain_longctx import YouraCompressor
    from longctx.youra import ReactionScorer
    from tests._youra_helpers import QUERY, TEXTS, tiny_llama

    scorer = ReactionScorer(tiny_llama(len(smollm2_tokenizer)), smollm2_tokenizer)
    ids = [f"d{j}" for j in range(len(TEXTS))]
    docs = [Document(page_content=t, id=i) for t, i in zip(TEXTS, ids)]
    plain = YouraCompressor(k=3, scorer=scorer).compress_documents(docs, QUERY)
    assert plain and all(META_EXPLANATION not in d.metadata for d in plain)
    out = YouraCompressor(k=3, scorer=scorer, explain=True).compress_documents(docs, QUERY)
    check_same([d.metadata for d in out], youra_core(TEXTS, ids, scorer, QUERY, 3))


def test_corpus_retriever_field_and_per_call(tmp_path):
    from langchain_longctx import CorpusRetriever

    corpus = diversity_corpus(tmp_path)
    core = corpus_core(corpus, 3)
    r = CorpusRetriever(corpus=corpus, k=3)
    assert all(META_EXPLANATION not in d.metadata for d in r.invoke(CORPUS_QUERY))
    check_same([d.metadata for d in r.invoke(CORPUS_QUERY, explain=True)], core)
    on = CorpusRetriever(corpus=corpus, k=3, explain=True)
    check_same([d.metadata for d in on.invoke(CORPUS_QUERY)], core)
    assert all(META_EXPLANATION not in d.metadata for d in on.invoke(CORPUS_QUERY, explain=False))
    with pytest.raises(TypeError, match="explain"):
        r.invoke(CORPUS_QUERY, explain="yes")


def test_garlic_retriever_explains_information_points_too():
    pytest.importorskip("torch")
    from langchain_longctx.garlic_retriever import GarlicRetriever
    from tests.langchain_longctx.test_garlic_retriever import QUESTION, _params

    r = GarlicRetriever(**_params())
    core = r.search(QUESTION, answer=False, explain=True).info["explanations"]
    assert all(META_EXPLANATION not in d.metadata for d in r.invoke(QUESTION))
    on = GarlicRetriever(**_params(), explain=True)
    docs = on.invoke(QUESTION)
    assert {d.metadata["longctx_level"] for d in docs} >= {1, 2} and len(docs) == len(core)
    for d in docs:
        e = d.metadata[META_EXPLANATION]
        assert e == core[e["path"][-1]["node"]] and e["method"] == "garlic"
    assert all(META_EXPLANATION not in d.metadata for d in on.invoke(QUESTION, explain=False))
