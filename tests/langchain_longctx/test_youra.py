"""LangChain YOURA adapters, with a tiny random Llama and SmolLM2's tokenizer."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("torch")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402

from langchain_longctx.youra_compressor import YouraCompressor  # noqa: E402
from langchain_longctx.youra_retriever import YouraRetriever  # noqa: E402
from tests._youra_helpers import QUERY, TEXTS, tiny_scorer  # noqa: E402


@pytest.fixture(scope="module")
def scorer():
    return tiny_scorer()


def _docs():
    return [Document(page_content=t, id=f"d{i}", metadata={"page": i}) for i, t in enumerate(TEXTS)]


class _ListRetriever(BaseRetriever):
    docs: list[Document]

    def _get_relevant_documents(self, query, *, run_manager):
        return list(self.docs)


def test_compressor_keeps_ids_metadata_and_sentences(scorer):
    comp = YouraCompressor(scorer=scorer, top_n=3)
    docs = _docs()
    out = comp.compress_documents(docs, QUERY)
    assert sum(len(d.metadata["youra_char_spans"]) for d in out) == 3
    for d in out:
        i = d.metadata["page"]
        assert d.id == f"d{i}"
        pieces = [TEXTS[i][a:b] for a, b in d.metadata["youra_char_spans"]]
        pos = 0
        for p in pieces:
            pos = d.page_content.index(p, pos) + len(p)
        assert d.metadata["youra_score"] == max(d.metadata["youra_sentence_scores"])
    assert [d.page_content for d in docs] == TEXTS  # inputs untouched
    assert all("youra_score" not in d.metadata for d in docs)


def test_compressor_budget_and_errors(scorer):
    out = YouraCompressor(scorer=scorer, token_budget=12).compress_documents(_docs(), QUERY)
    tok = scorer.tokenizer
    used = sum(len(tok(d.page_content, add_special_tokens=False)["input_ids"]) for d in out)
    assert 0 < used <= 12 + len(out)
    with pytest.raises(ValueError, match="exactly one"):
        YouraCompressor(scorer=scorer)
    with pytest.raises(ValueError, match="top_n"):
        YouraCompressor(scorer=scorer, top_n=0)
    with pytest.raises(ValueError, match="query"):
        YouraCompressor(scorer=scorer, top_n=1).compress_documents(_docs(), "")


def test_compressor_in_contextual_compression_retriever(scorer):
    try:
        from langchain_classic.retrievers import ContextualCompressionRetriever
    except ImportError:
        try:
            from langchain.retrievers import ContextualCompressionRetriever
        except ImportError:
            pytest.skip("ContextualCompressionRetriever needs langchain-classic (or langchain<1)")
    retriever = ContextualCompressionRetriever(
        base_compressor=YouraCompressor(scorer=scorer, top_n=2),
        base_retriever=_ListRetriever(docs=_docs()),
    )
    out = retriever.invoke(QUERY)
    direct = YouraCompressor(scorer=scorer, top_n=2).compress_documents(_docs(), QUERY)
    assert [(d.id, d.page_content) for d in out] == [(d.id, d.page_content) for d in direct]
    assert out and all(d.id.startswith("d") for d in out)


def test_retriever_sentences_with_offsets(scorer):
    docs = [
        Document(page_content=" ".join(TEXTS[:2]), id="a", metadata={"title": "one"}),
        Document(page_content=TEXTS[2], metadata={"title": "two"}),
    ]
    r = YouraRetriever(documents=docs, scorer=scorer, top_n=2)
    out = r.invoke(QUERY)
    assert len(out) == 4
    for d in out:
        src = docs[0] if d.metadata["source_id"] == "a" else docs[1]
        a, b = d.metadata["start_index"], d.metadata["end_index"]
        assert src.page_content[a:b] == d.page_content
        assert d.metadata["title"] == src.metadata["title"]
        assert d.id == f"{d.metadata['source_id']}:{a}-{b}"
    assert out[2].metadata["source_id"] == "1"  # no id: its position
    budget = YouraRetriever(documents=docs, scorer=scorer, token_budget=15).invoke(QUERY)
    assert budget
    with pytest.raises(ValueError, match="exactly one"):
        YouraRetriever(documents=docs, scorer=scorer)
    with pytest.raises(ValueError, match="documents"):
        YouraRetriever(documents=[], scorer=scorer, top_n=1)
