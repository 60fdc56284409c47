"""LlamaIndex objects over the shared corpora of ``tests._fixtures``."""

from __future__ import annotations

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding

from tests._fixtures import book_rows, hash_vector, versioned_text


class HashEmbedding(BaseEmbedding):
    """``tests.test_diversity.HashEncoder`` as a LlamaIndex embedding model; ``calls`` counts
    the texts it embedded."""

    calls: int = 0

    def _get_query_embedding(self, query: str):
        return hash_vector(query)

    async def _aget_query_embedding(self, query: str):
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str):
        self.calls += 1
        return hash_vector(text)


def book_docs(which=None) -> list[Document]:
    """``tests._fixtures.BOOK_DOCS`` (rows ``which``, default all) as Documents with ids."""
    return [Document(text=t, id_=i, metadata=md) for i, t, md in book_rows(which)]


def versioned_doc(i: int, v: int) -> Document:
    """Document ``d<i>`` at version ``v`` (``tests._fixtures.search_while_updating``)."""
    return Document(text=versioned_text(i, v), id_=f"d{i}", metadata={"v": v, "doc": i})


def strings_in(obj):
    """Every ``str`` inside ``obj`` (nested tuples, lists and dicts, keys too)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings_in(k)
            yield from strings_in(v)
    elif isinstance(obj, (tuple, list)):
        for v in obj:
            yield from strings_in(v)
