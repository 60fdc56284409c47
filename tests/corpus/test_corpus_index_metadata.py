"""``CorpusIndex.metadata(doc_id)`` is the metadata a ``filters=`` search reads, for every kind
of corpus: a per-document MixPR corpus returned ``{}`` while its filter read each document's
index's metadata."""

from __future__ import annotations

import pytest

from tests._corpus_filter import IDS, METAS, QUERY, metadata_corpus, per_document_corpus


@pytest.mark.parametrize("kind", ["one", "per_document", "sharded"])
def test_metadata_is_what_the_filter_reads(kind):
    corpus = metadata_corpus(kind)
    with corpus:
        assert [corpus.metadata(d) for d in IDS] == METAS
        got = corpus.search(QUERY, k=5, filters={"lang": "en"})
        held = {corpus.doc_ids[h.source] for h in got.hits}
        assert held and all(corpus.metadata(d)["lang"] == "en" for d in held)
        with pytest.raises(KeyError):
            corpus.metadata("nobody")
        m = corpus.metadata("a")
        m["lang"] = "xx"  # a copy: the index's metadata is not changed through it
        assert corpus.metadata("a") == METAS[0]


def test_an_index_without_metadata_gives_an_empty_dict():
    corpus = per_document_corpus()
    assert corpus.metadata("d") == {}
    with pytest.raises(KeyError):
        corpus.metadata("nobody")
