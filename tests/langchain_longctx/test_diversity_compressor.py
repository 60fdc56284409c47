"""DiversityCompressor (LangChain adapter of MMR/FPS)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.embeddings import Embeddings

from langchain_longctx import DiversityCompressor
from tests.test_diversity import HashEncoder

_HASH = HashEncoder()


class HashEmbeddings(Embeddings):
    def embed_documents(self, texts):
        return _HASH(list(texts)).tolist()

    def embed_query(self, text):
        return _HASH([text])[0].tolist()


TEXTS = [
    "The cat sat on the mat.",
    "The cat sat on the mat again.",
    "The cat sat on a mat.",
    "Paris is the capital of France.",
    "Dogs bark at night.",
]


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
    comp = DiversityCompressor(top_n=2, lambda_=0.5, embeddings=HashEmbeddings())
    out = comp.compress_documents(_docs(), "Where did the cat sit?")
    assert len(out) == 2 and sum("cat" in d.page_content for d in out) == 1
    for d in out:
        j = int(d.id[1:])
        assert d.metadata == {"src": j, "score": pytest.approx(1.0 - 0.1 * j)}
    plain = DiversityCompressor(top_n=2, lambda_=1.0, embeddings=HashEmbeddings())
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
    fps = DiversityCompressor(
        method="fps", top_n=3, window=2, order="1:1", embeddings=HashEmbeddings()
    )
    out = fps.compress_documents(first.compress_documents(_docs(), "q"), "cat")
    assert len(out) == 3 and "d4" not in {d.id for d in out}


async def test_async_and_validation():
    comp = DiversityCompressor(top_n=1, embeddings=HashEmbeddings())
    out = await comp.acompress_documents(_docs(), "Paris France")
    assert [d.id for d in out] == ["d3"]
    bad = [Document(page_content="x", metadata={})] + _docs()
    with pytest.raises(ValueError, match="reward_key"):
        DiversityCompressor(
            top_n=1, reward_key="score", embeddings=HashEmbeddings()
        ).compress_documents(bad, "q")
    with pytest.raises(ValueError, match="method"):
        DiversityCompressor(method="nope")
    with pytest.raises(ValueError, match="order"):
        DiversityCompressor(order="5")
    assert (
        DiversityCompressor(embeddings=HashEmbeddings()).compress_documents(_docs(), "q") == _docs()
    )
