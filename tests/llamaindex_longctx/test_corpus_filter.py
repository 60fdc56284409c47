"""``CorpusRetriever(filters=...)``: LlamaIndex ``MetadataFilters`` (or a dict / callable), as
``MixPRRetriever`` takes them, applied by the core on MixPR corpora; a diversity corpus refuses
them naming ``filters`` (it used to fail inside the search with the index's ``TypeError``)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.vector_stores.types import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from llamaindex_longctx import CorpusRetriever  # noqa: E402
from longctx.corpus import build_indexes  # noqa: E402
from tests._corpus_filter import IDS, TEXTS, metadata_corpus, per_document_corpus  # noqa: E402
from tests._corpus_filter import QUERY as Q  # noqa: E402


@pytest.fixture(scope="module", params=["one", "sharded"])
def corpus(request):
    return metadata_corpus(request.param)


def _sources(nodes):
    return {n.node.metadata["longctx_source_id"] for n in nodes}


def test_metadata_filters_keep_the_documents_they_accept(corpus):
    fr = MetadataFilters(filters=[MetadataFilter(key="lang", value="fr")])
    nodes = CorpusRetriever(corpus, similarity_top_k=8, filters=fr).retrieve(Q)
    assert _sources(nodes) == {"b"}
    assert all(n.node.metadata["lang"] == "fr" for n in nodes)
    late = MetadataFilters(
        filters=[MetadataFilter(key="part", value=2, operator=FilterOperator.GTE)]
    )
    assert _sources(CorpusRetriever(corpus, similarity_top_k=8, filters=late).retrieve(Q)) <= {
        "b",
        "c",
    }
    assert _sources(
        CorpusRetriever(corpus, similarity_top_k=8, filters={"part": 1}).retrieve(Q)
    ) == {"a"}


def test_a_bad_filter_is_refused_at_construction(corpus):
    with pytest.raises(ValueError, match=r"\$bogus"):
        CorpusRetriever(corpus, filters={"lang": {"$bogus": 1}})


def test_a_corpus_built_from_files_holds_no_metadata(tmp_path):
    """As the guide says: no metadata stored, so a filter on a key keeps nothing."""
    out = tmp_path / "corpus"
    build_indexes(list(zip(IDS, TEXTS)), "mixpr", out, use_ray=False, progress=False)
    by_source = MetadataFilters(filters=[MetadataFilter(key="source", value="a")])
    assert CorpusRetriever.from_corpus(out, filters=by_source).retrieve(Q) == []
    # the rule the guide states: the filter sees {} (all or none), not a list of operators
    empty = MetadataFilter(key="source", value=None, operator=FilterOperator.IS_EMPTY)
    negated = MetadataFilters(filters=[by_source.filters[0]], condition=FilterCondition.NOT)
    for keeps_all in (MetadataFilters(filters=[empty]), negated):
        assert len(CorpusRetriever.from_corpus(out, filters=keeps_all).retrieve(Q)) == 10
    n = CorpusRetriever.from_corpus(out, similarity_top_k=1).retrieve(Q)[0]
    assert n.node.metadata["longctx_source_id"] in IDS
    assert not [k for k in n.node.metadata if not k.startswith("longctx_")]


def test_a_corpus_of_one_mixpr_index_per_document_filters():
    """Each document's own MixPRIndex filters on its metadata (refused by mistake once)."""
    corpus = metadata_corpus("per_document")
    assert corpus.index is None
    hits = corpus.search(Q, k=6, filters={"lang": "en"}).hits
    assert {corpus.doc_ids[h.source] for h in hits} == {"a", "c"}
    assert "b" in {corpus.doc_ids[h.source] for h in corpus.search(Q, k=6).hits}  # unfiltered
    r = CorpusRetriever(corpus, similarity_top_k=6, filters={"lang": "fr"})
    assert _sources(r.retrieve(Q)) == {"b"}


def test_a_diversity_corpus_refuses_filters_naming_them():
    corpus = per_document_corpus()
    with pytest.raises(ValueError, match="filters: a per-document corpus of _PerDocument indexes"):
        CorpusRetriever(corpus, filters={"lang": "en"})
