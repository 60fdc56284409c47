"""DiversityCompressor (LangChain adapter of MMR/FPS)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.documents import BaseDocumentCompressor, Document

from langchain_longctx import DiversityCompressor
from langchain_longctx.diversity_compressor import DEFAULT_K
from longctx.types import METADATA_KEYS
from tests._fixtures import DIVERSITY_TEXTS as TEXTS
from tests.langchain_longctx._fixtures import HashEmbeddings


def _docs():
    return [
        Document(page_content=t, id=f"d{j}", metadata={"src": j, "score": 1.0 - 0.1 * j})
        for j, t in enumerate(TEXTS)
    ]


class DropLast(BaseDocumentCompressor):
    """A trivial compressor to chain before the diversity step."""

    def compress_documents(self, documents: Sequence[Document], query, callbacks=None):
        return list(documents)[:-1]


def test_mmr_keeps_diverse_docs_with_ids_and_metadata():
    comp = DiversityCompressor(k=2, lambda_=0.5, embeddings=HashEmbeddings())
    out = comp.compress_documents(_docs(), "Where did the cat sit?")
    assert len(out) == 2 and sum("cat" in d.page_content for d in out) == 1
    for d in out:
        j = int(d.id[1:])  # the source document's id: each document is one unit
        assert d.metadata["src"] == j and d.metadata["score"] == pytest.approx(1.0 - 0.1 * j)
        assert set(d.metadata) == {"src", "score", *METADATA_KEYS}
        assert d.metadata["longctx_source_id"] == d.id and d.metadata["longctx_method"] == "mmr"
        assert d.metadata["longctx_end_char_idx"] == len(d.page_content)
    plain = DiversityCompressor(k=2, lambda_=1.0, embeddings=HashEmbeddings())
    assert all("cat" in d.page_content for d in plain.compress_documents(_docs(), "cat sit"))


def test_chains_after_another_compressor_with_metadata_reward():
    first = DropLast()
    div = DiversityCompressor(
        reward_key="score",
        lambda_=1.0,
        token_budget=14,
        order="document",
        embeddings=HashEmbeddings(),
    )
    # each compressor feeds the next, as in a DocumentCompressorPipeline
    docs = _docs()
    for step in (first, div):
        docs = step.compress_documents(docs, "anything")
    assert [d.id for d in docs] == ["d0", "d2"]  # by score while they fit (7 + 7 tokens)
    pipeline_mod = pytest.importorskip("langchain_classic.retrievers.document_compressors")
    pipeline = pipeline_mod.DocumentCompressorPipeline(transformers=[first, div])
    assert [d.id for d in pipeline.compress_documents(_docs(), "anything")] == ["d0", "d2"]
    fps = DiversityCompressor(method="fps", k=3, window=2, order="1:1", embeddings=HashEmbeddings())
    out = fps.compress_documents(first.compress_documents(_docs(), "q"), "cat")
    assert len(out) == 3 and "d4" not in {d.id for d in out}


async def test_async_and_validation():
    comp = DiversityCompressor(k=1, embeddings=HashEmbeddings())
    out = await comp.acompress_documents(_docs(), "Paris France")
    assert [d.id for d in out] == ["d3"]
    bad = [Document(page_content="x", metadata={})] + _docs()
    with pytest.raises(ValueError, match="reward_key"):
        DiversityCompressor(
            k=1, reward_key="score", embeddings=HashEmbeddings()
        ).compress_documents(bad, "q")
    with pytest.raises(ValueError, match="method"):
        DiversityCompressor(method="nope")
    with pytest.raises(ValueError, match="order"):
        DiversityCompressor(order="5")
    with pytest.raises(ValueError, match="at most one"):
        DiversityCompressor(k=2, token_budget=5)
    with pytest.raises(ValueError, match="token_budget"):
        DiversityCompressor(token_budget=0)
    # no size given: the documented default (k=5), never the input unchanged
    many = _docs() + [Document(page_content=f"Extra line {j}.", id=f"x{j}") for j in range(3)]
    out = DiversityCompressor(embeddings=HashEmbeddings()).compress_documents(many, "q")
    assert len(out) == DEFAULT_K < len(many)
    with pytest.warns(DeprecationWarning, match="top_n"):
        old = DiversityCompressor(top_n=2, embeddings=HashEmbeddings())
    assert old.k == 2


def test_ids_unique_and_fps_method_key():
    docs = _docs() + [Document(page_content=TEXTS[0], id=None, metadata={})]
    out = DiversityCompressor(
        method="fps", k=6, lambda_=0.2, embeddings=HashEmbeddings()
    ).compress_documents(docs, "cat")
    ids = [d.id for d in out if d.id is not None]  # a document without id stays without one
    assert len(out) == 6 and len(ids) == len(set(ids)) == 5
    assert {d.metadata["longctx_method"] for d in out} == {"fps"}
