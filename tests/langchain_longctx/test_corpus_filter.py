"""``CorpusRetriever(filter=...)`` / ``invoke(q, filter=...)``: the ``MixPRRetriever`` argument,
passed to the core's ``filters`` (it used to reach ``MixPRIndex.search`` as ``filter`` and raise
``TypeError: ... unexpected keyword argument 'filter'``)."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_longctx import CorpusRetriever  # noqa: E402
from longctx.corpus import build_indexes  # noqa: E402
from tests._corpus_filter import IDS, TEXTS, metadata_corpus, per_document_corpus  # noqa: E402
from tests._corpus_filter import QUERY as Q  # noqa: E402


@pytest.fixture(scope="module", params=["one", "sharded"])
def corpus(request):
    return metadata_corpus(request.param)


def _sources(docs):
    return {d.metadata["longctx_source_id"] for d in docs}


def test_invoke_filter_keeps_the_documents_it_accepts(corpus):
    r = CorpusRetriever(corpus=corpus, k=8)
    assert len(_sources(r.invoke(Q))) >= 2  # unfiltered: more than one document
    docs = r.invoke(Q, filter={"lang": "en"})
    assert docs and _sources(docs) <= {"a", "c"}
    assert all(d.metadata["lang"] == "en" for d in docs)
    assert _sources(r.invoke(Q, filter={"part": {"$gte": 2}})) <= {"b", "c"}
    assert _sources(r.invoke(Q, filter=lambda m: m["lang"] == "fr")) == {"b"}


def test_the_retrievers_filter_and_invoke_overriding_it(corpus):
    r = CorpusRetriever(corpus=corpus, k=8, filter={"lang": "fr"})
    assert _sources(r.invoke(Q)) == {"b"}
    assert _sources(r.invoke(Q, filter={"part": 3})) == {"c"}
    with pytest.raises(TypeError, match="not both"):
        r.invoke(Q, filter={"part": 3}, filters={"part": 1})


def test_a_bad_filter_is_refused_at_construction_and_per_call(corpus):
    with pytest.raises(ValueError, match=r"\$bogus"):
        CorpusRetriever(corpus=corpus, filter={"lang": {"$bogus": 1}})
    r = CorpusRetriever(corpus=corpus)
    with pytest.raises((TypeError, ValueError)):
        r.invoke(Q, filter=42)


def test_a_corpus_built_from_files_holds_no_metadata(tmp_path):
    """What the guides say: ``build_indexes`` / ``longctx index`` store no metadata, so a filter
    on a key keeps nothing and ``$ne`` keeps everything; the hits carry the document id."""
    out = tmp_path / "corpus"
    build_indexes(list(zip(IDS, TEXTS)), "mixpr", out, use_ray=False, progress=False)
    r = CorpusRetriever.from_corpus(out, k=4)
    assert all(r.corpus.metadata(d) == {} for d in IDS)
    assert r.invoke(Q, filter={"source": "a"}) == []
    assert len(r.invoke(Q, filter={"lang": {"$ne": "de"}})) == 4
    assert len(r.invoke(Q, filter={"$not": {"source": "a"}})) == 4  # the filter sees {}
    d = r.invoke(Q)[0]
    assert set(d.metadata) == {
        "longctx_start_char_idx", "longctx_end_char_idx", "longctx_unit_index",
        "longctx_score", "longctx_method", "longctx_source_id",
    }  # fmt: skip


def test_a_corpus_of_one_mixpr_index_per_document_filters():
    r = CorpusRetriever(corpus=metadata_corpus("per_document"), k=6, filter={"lang": "en"})
    assert {d.metadata["longctx_source_id"] for d in r.invoke(Q)} == {"a", "c"}


def test_a_diversity_corpus_refuses_a_filter_naming_it():
    corpus = per_document_corpus()
    with pytest.raises(ValueError, match="filter: a per-document"):
        CorpusRetriever(corpus=corpus, filter={"lang": "en"})
    with pytest.raises(ValueError, match="filter: a per-document"):
        CorpusRetriever(corpus=corpus).invoke(Q, filter={"lang": "en"})


def test_a_bad_filter_is_named_as_the_user_gave_it():
    """``filter`` (not the core's ``filters``) in the type error, at build and per call."""
    from langchain_longctx import MixPRRetriever

    corpus = metadata_corpus("one")
    for bad in (42, "lang=en"):
        with pytest.raises(TypeError, match="^filter must be"):
            CorpusRetriever(corpus=corpus, filter=bad)
        with pytest.raises(TypeError, match="^filter must be"):
            CorpusRetriever(corpus=corpus).invoke(Q, filter=bad)
        with pytest.raises(TypeError, match="^filters must be"):
            CorpusRetriever(corpus=corpus).invoke(Q, filters=bad)
        with pytest.raises(TypeError, match="^filter must be"):
            MixPRRetriever.from_texts(TEXTS, filter=bad)
        with pytest.raises(TypeError, match="^filter must be"):
            MixPRRetriever.from_texts(TEXTS).invoke(Q, filter=bad)


def test_a_per_call_filters_replaces_the_retrievers_filter():
    """As ``filter=`` does (it used to say "give filter= or filters=, not both")."""
    r = CorpusRetriever(corpus=metadata_corpus("one"), k=4, filter={"lang": "fr"})
    assert {d.metadata["longctx_source_id"] for d in r.invoke(Q)} == {"b"}
    assert {d.metadata["longctx_source_id"] for d in r.invoke(Q, filters={"lang": "en"})} <= {
        "a",
        "c",
    }
    assert {d.metadata["longctx_source_id"] for d in r.invoke(Q, filter={"lang": "en"})} <= {
        "a",
        "c",
    }
    with pytest.raises(TypeError, match="not both"):
        r.invoke(Q, filter={"lang": "en"}, filters={"lang": "en"})
