"""LangChain objects over the shared corpora of ``tests._fixtures``."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from tests._fixtures import book_rows, hash_vector, versioned_text


class HashEmbeddings(Embeddings):
    """``tests.test_diversity.HashEncoder`` as LangChain embeddings (deterministic, no model)."""

    def embed_documents(self, texts):
        return [hash_vector(t) for t in texts]

    def embed_query(self, text):
        return hash_vector(text)


def book_docs(which=None) -> list[Document]:
    """``tests._fixtures.BOOK_DOCS`` (rows ``which``, default all) as Documents with ids."""
    return [Document(page_content=t, id=i, metadata=md) for i, t, md in book_rows(which)]


def versioned_doc(i: int, v: int) -> Document:
    """Document ``d<i>`` at version ``v`` (``tests._fixtures.search_while_updating``)."""
    return Document(page_content=versioned_text(i, v), id=f"d{i}", metadata={"v": v, "doc": i})
