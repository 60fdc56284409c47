"""``explain`` on the LangChain components that lacked it: YouraCompressor, CorpusRetriever
(field and per call), GarlicRetriever's information points. Each document's
``longctx_explanation`` is JSON-ready and equal to what the core gives for the same query."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from longctx.types import META_EXPLANATION
from tests import _explain_helpers as ex


def test_youra_compressor(smollm2_tokenizer):
    pytest.importorskip("torch")
    from langchain_longctx import YouraCompressor

    scorer, TEXTS, ids, QUERY = ex.youra_setup(smollm2_tokenizer, "d")
    docs = [Document(page_content=t, id=i) for t, i in zip(TEXTS, ids)]
    plain = YouraCompressor(k=3, scorer=scorer).compress_documents(docs, QUERY)
    assert plain and all(META_EXPLANATION not in d.metadata for d in plain)
    out = YouraCompressor(k=3, scorer=scorer, explain=True).compress_documents(docs, QUERY)
    ex.check_same([d.metadata for d in out], ex.youra_core(TEXTS, ids, scorer, QUERY, 3))


def test_corpus_retriever_field_and_per_call(tmp_path):
    from langchain_longctx import CorpusRetriever

    corpus = ex.diversity_corpus(tmp_path)
    core = ex.corpus_core(corpus, 3)
    r = CorpusRetriever(corpus=corpus, k=3)
    assert all(META_EXPLANATION not in d.metadata for d in r.invoke(ex.CORPUS_QUERY))
    ex.check_same([d.metadata for d in r.invoke(ex.CORPUS_QUERY, explain=True)], core)
    on = CorpusRetriever(corpus=corpus, k=3, explain=True)
    ex.check_same([d.metadata for d in on.invoke(ex.CORPUS_QUERY)], core)
    assert all(
        META_EXPLANATION not in d.metadata for d in on.invoke(ex.CORPUS_QUERY, explain=False)
    )
    with pytest.raises(TypeError, match="explain"):
        r.invoke(ex.CORPUS_QUERY, explain="yes")


def test_corpus_retriever_over_shards(tmp_path):
    from langchain_longctx import CorpusRetriever

    corpus = ex.sharded_corpus(tmp_path)
    docs = CorpusRetriever(corpus=corpus, k=6).invoke(ex.CORPUS_QUERY, explain=True)
    ex.check_same([d.metadata for d in docs], ex.corpus_core(corpus, 6))
    assert {d.metadata["longctx_source_id"] for d in docs} == {"kitchen", "garden"}


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
