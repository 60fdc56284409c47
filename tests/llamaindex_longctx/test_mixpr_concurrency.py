"""LlamaIndex MixPRRetriever searched while other threads update its documents: every returned
node's text, offsets and metadata come from one version of its document."""

from __future__ import annotations

from llamaindex_longctx import MixPRRetriever
from tests._fixtures import VERSIONED_N_DOCS, search_while_updating
from tests.llamaindex_longctx._fixtures import versioned_doc


def test_hits_under_concurrent_updates_are_each_from_one_version():
    r = MixPRRetriever.from_documents(
        [versioned_doc(i, 0) for i in range(VERSIONED_N_DOCS)], similarity_top_k=50
    )

    def search():
        return [(n.node.get_content(), n.node.metadata) for n in r.retrieve("castle knight dragon")]

    seen, errors = search_while_updating(lambda i, v: r.update_ref_doc(versioned_doc(i, v)), search)
    assert seen > 500
    assert not errors, f"{len(errors)} of {seen} hits mix versions, e.g. {errors[0]}"
