"""``CorpusRetriever``: a LangChain retriever over a MixPR corpus built by ``build_indexes``."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_longctx import CorpusRetriever  # noqa: E402
from longctx.corpus import build_indexes  # noqa: E402
from longctx.io import sample_text  # noqa: E402


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    t = sample_text("alice")
    docs = [("chapter/1", t[5_000:15_000]), ("chapter/2", t[60_000:70_000])]
    out = tmp_path_factory.mktemp("c") / "corpus"
    build_indexes(docs, "mixpr", out, use_ray=False, progress=False)
    return out, dict(docs)


def test_corpus_retriever_maps_hits_to_documents(corpus_dir):
    out, texts = corpus_dir
    r = CorpusRetriever.from_corpus(out, k=6, metadatas={"chapter/2": {"title": "two"}})
    docs = r.invoke("Who sits at the tea party with the Hatter?")
    assert len(docs) == 6
    for d in docs:
        src = d.metadata["longctx_source_id"]
        a, b = d.metadata["longctx_start_char_idx"], d.metadata["longctx_end_char_idx"]
        assert texts[src][a:b] == d.page_content
        assert d.id == f"{src}#{a}-{b}"
        assert (d.metadata.get("title") == "two") == (src == "chapter/2")
    assert len(r.invoke("Who sits at the tea party?", k=2)) == 2


async def test_corpus_retriever_async(corpus_dir):
    out, _ = corpus_dir
    r = CorpusRetriever.from_corpus(out, k=3)
    assert [d.id for d in await r.ainvoke("rabbit")] == [d.id for d in r.invoke("rabbit")]


def test_a_path_given_as_corpus_is_refused_at_construction(corpus_dir):
    """``CorpusRetriever(corpus="a/path")`` used to fail at the first ``invoke`` with
    ``AttributeError: 'str' object has no attribute 'search'``."""
    out, _ = corpus_dir
    with pytest.raises(TypeError, match=r"corpus must be .*CorpusIndex, got str.*from_corpus"):
        CorpusRetriever(corpus=str(out))
    with pytest.raises(TypeError, match="corpus must be"):
        CorpusRetriever(corpus=None, vector_retriever=None, keep_firsts=True)
    assert CorpusRetriever.from_corpus(str(out), keep_firsts=True).invoke("rabbit")
