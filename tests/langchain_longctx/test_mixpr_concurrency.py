"""LangChain MixPRRetriever searched while other threads replace its documents (delete, then
add_documents with the same id): every returned document's text, offsets and metadata come
from one version of its source."""

from __future__ import annotations

from langchain_core.documents import Document

from langchain_longctx import MixPRRetriever
from tests._concurrency import (
    QUERIES,
    Churn,
    base_docs,
    saves_beside_writes,
    searches_beside_writes,
)
from tests._fixtures import VERSIONED_N_DOCS, search_while_updating
from tests.langchain_longctx._fixtures import versioned_doc


def test_hits_under_concurrent_updates_are_each_from_one_version():
    r = MixPRRetriever.from_documents([versioned_doc(i, 0) for i in range(VERSIONED_N_DOCS)], k=50)

    def update(i, v):
        r.delete([f"d{i}"])
        r.add_documents([versioned_doc(i, v)])

    def search():
        return [(d.page_content, d.metadata) for d in r.invoke("castle knight dragon")]

    seen, errors = search_while_updating(update, search)
    assert seen > 500
    assert not errors, f"{len(errors)} of {seen} hits mix versions, e.g. {errors[0]}"


# -- issue 48 and issue 44 item 1: writes beside searches and saves ---------------------------
def _retriever(docs):
    return MixPRRetriever.from_documents([Document(page_content=t, id=d) for d, t in docs], k=5)


def _churn(r, seed):
    return Churn(
        lambda d: r.add_documents([Document(page_content=t, id=i) for i, t in d]), r.delete, seed
    )


def _hits(r, q):
    return [(d.id, d.page_content, d.metadata.get("score")) for d in r.invoke(q)]


def test_searches_beside_writes_leave_the_retriever_equal_to_a_fresh_build():
    r = _retriever(base_docs())

    def same():
        fresh = MixPRRetriever.from_documents(list(r.documents), k=5)
        assert all(_hits(r, q) == _hits(fresh, q) for q in QUERIES)

    searches_beside_writes(_churn(r, 1), lambda i: r.invoke(QUERIES[i]), lambda: r.index, same)


def test_saves_beside_add_documents_each_load_as_one_version(tmp_path):
    r = _retriever(base_docs())
    target = tmp_path / "r"
    saves_beside_writes(
        _churn(r, 2),
        lambda: [d.id for d in r.documents],
        lambda: r.save(target),
        lambda: MixPRRetriever.load(target) if target.exists() else None,
        lambda got: [d.id for d in got.documents],
        lambda got: got.index,
    )
