"""LangChain MixPRRetriever searched while other threads replace its documents (delete, then
add_documents with the same id): every returned document's text, offsets and metadata come
from one version of its source."""

from __future__ import annotations

from langchain_longctx import MixPRRetriever
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
