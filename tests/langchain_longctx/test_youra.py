"""LangChain YOURA adapters, with a tiny random Llama and SmolLM2's tokenizer: the standard
retriever suite, metadata keys, ids, sizes, build once, async."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("torch")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from langchain_longctx.youra_compressor import YouraCompressor  # noqa: E402
from langchain_longctx.youra_retriever import YouraRetriever  # noqa: E402
from longctx.text import split_sentences  # noqa: E402
from longctx.types import METADATA_KEYS  # noqa: E402
from longctx.youra import DEFAULT_K  # noqa: E402
from tests._fixtures import shared_tiny_scorer as _scorer  # noqa: E402
from tests._youra_helpers import QUERY, TEXTS  # noqa: E402


@pytest.fixture(scope="module")
def scorer():
    return _scorer()


def _docs():
    return [Document(page_content=t, id=f"d{i}", metadata={"page": i}) for i, t in enumerate(TEXTS)]


class TestYouraRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[YouraRetriever]:
        return YouraRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"documents": _docs(), "scorer": _scorer(), "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class _ListRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return list(self.docs)


def _check_hit_doc(d, sources):
    meta = d.metadata
    src = sources[meta["longctx_source_id"]]
    a, b = meta["longctx_start_char_idx"], meta["longctx_end_char_idx"]
    assert src.page_content[a:b] == d.page_content
    assert set(METADATA_KEYS) <= set(meta) and meta["page"] == src.metadata["page"]
    assert meta["longctx_method"] == "youra"
    if d.id == src.id:
        assert (a, b) == (0, len(src.page_content))
    else:
        assert d.id == f"{src.id}#{a}-{b}"


def test_compressor_maps_hits_to_documents(scorer):
    docs = _docs()
    out = YouraCompressor(scorer=scorer, k=3).compress_documents(docs, QUERY)
    assert len(out) == 3
    sources = {d.id: d for d in docs}
    for d in out:
        _check_hit_doc(d, sources)
    keys = [(d.metadata["page"], d.metadata["longctx_start_char_idx"]) for d in out]
    assert keys == sorted(keys) and len({d.id for d in out}) == 3
    assert [d.page_content for d in docs] == TEXTS  # inputs untouched
    assert all(not set(METADATA_KEYS) & set(d.metadata) for d in docs)


def test_compressor_sizes_defaults_and_errors(scorer):
    n_sentences = sum(len(split_sentences(t)) for t in TEXTS)
    default = YouraCompressor(scorer=scorer).compress_documents(_docs(), QUERY)
    assert len(default) == min(DEFAULT_K, n_sentences)
    out = YouraCompressor(scorer=scorer, token_budget=12).compress_documents(_docs(), QUERY)
    tok = scorer.tokenizer
    used = sum(len(tok(d.page_content, add_special_tokens=False)["input_ids"]) for d in out)
    assert 0 < used <= 12 + len(out)
    with pytest.warns(DeprecationWarning, match="top_n"):
        old = YouraCompressor(scorer=scorer, top_n=2)
    assert old.k == 2 and len(old.compress_documents(_docs(), QUERY)) == 2
    with pytest.raises(ValueError, match="at most one"):
        YouraCompressor(scorer=scorer, k=2, token_budget=5)
    with pytest.raises(ValueError, match="k"):
        YouraCompressor(scorer=scorer, k=0)
    with pytest.raises(ValueError, match="query"):
        YouraCompressor(scorer=scorer, k=1).compress_documents(_docs(), "")
    # duplicates in the input never give duplicate ids; async equals sync
    twice = _docs() + _docs()
    comp = YouraCompressor(scorer=scorer, k=50)
    out = comp.compress_documents(twice, QUERY)
    assert len({d.id for d in out}) == len(out) == n_sentences
    got = asyncio.run(comp.acompress_documents(twice, QUERY))
    assert [(d.id, d.page_content) for d in got] == [(d.id, d.page_content) for d in out]


def test_compressor_in_contextual_compression_retriever(scorer):
    try:
        from langchain_classic.retrievers import ContextualCompressionRetriever
    except ImportError:
        try:
            from langchain.retrievers import ContextualCompressionRetriever
        except ImportError:
            pytest.skip("ContextualCompressionRetriever needs langchain-classic (or langchain<1)")
    retriever = ContextualCompressionRetriever(
        base_compressor=YouraCompressor(scorer=scorer, k=2),
        base_retriever=_ListRetriever(docs=_docs()),
    )
    out = retriever.invoke(QUERY)
    direct = YouraCompressor(scorer=scorer, k=2).compress_documents(_docs(), QUERY)
    assert [(d.id, d.page_content) for d in out] == [(d.id, d.page_content) for d in direct]


def test_retriever_built_once_ids_metadata_sizes(scorer):
    docs = [
        Document(page_content=" ".join(TEXTS[:2]), id="a", metadata={"page": 0}),
        Document(page_content=TEXTS[2], metadata={"page": 1}),
        Document(page_content="The Rabbit had pink eyes.", id="whole", metadata={"page": 2}),
    ]
    r = YouraRetriever(documents=docs, scorer=scorer, k=50)
    index = r.index
    out = r.invoke(QUERY)
    assert r.index is index and len({d.id for d in out}) == len(out)
    assert "whole" in [d.id for d in out]  # a one-sentence document comes back as itself
    for d in out:
        if d.metadata.get("longctx_source_id") is not None:
            _check_hit_doc(d, {"a": docs[0], "whole": docs[2]})
        else:  # no source id: named by position
            assert d.id.startswith("source1#") and d.metadata["page"] == 1
    scores = [d.metadata["longctx_score"] for d in out]
    assert scores == sorted(scores, reverse=True)  # best first
    in_doc = r.invoke(QUERY, order="document")
    assert sorted(d.id for d in in_doc) == sorted(d.id for d in out)
    pos = [(d.metadata["page"], d.metadata["longctx_start_char_idx"]) for d in in_doc]
    assert pos == sorted(pos)  # document order
    misses = scorer.cache_info()["misses"]
    assert len(r.invoke(QUERY, k=2)) == 2
    assert scorer.cache_info()["misses"] == misses  # only query passes after the build
    budget = r.invoke(QUERY, token_budget=15)
    assert budget and len(budget) < len(out)
    with pytest.raises(ValueError, match="documents"):
        YouraRetriever(documents=[], scorer=scorer)
    with pytest.raises(ValueError):
        YouraRetriever(documents=docs, scorer=scorer, k=0)
    with pytest.raises(ValueError, match="query"):
        r.invoke(" ")


def test_retriever_async_gather_equals_sequential(scorer):
    r = YouraRetriever(documents=_docs(), scorer=scorer, k=3)
    queries = [QUERY, "Where did the Rabbit go?", "Who sat on the bank?", "What was hot?"] * 2
    seq = [[(d.id, d.metadata["longctx_score"]) for d in r.invoke(q)] for q in queries]

    async def main():
        res = await asyncio.gather(*(r.ainvoke(q) for q in queries))
        return [[(d.id, d.metadata["longctx_score"]) for d in x] for x in res]

    assert asyncio.run(main()) == seq


def test_compressor_presets_build_the_scorer():
    from tests._youra_helpers import smollm2_tokenizer, tiny_llama

    tok = smollm2_tokenizer()
    model = tiny_llama(len(tok))
    default = YouraCompressor(model=model, tokenizer=tok, k=2)._scorer
    assert (default.preset, default.normalize, default.baseline) == (
        "default",
        "ratio",
        "instruction",
    )
    paper = YouraCompressor(model=model, tokenizer=tok, k=2, preset="paper")._scorer
    assert (paper.baseline, paper.normalize, paper.layers) == ("paper", "none", "last")
