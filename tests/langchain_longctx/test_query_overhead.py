"""What a LangChain CorpusRetriever query costs beyond the corpus's search (the adapters' query
overhead): a hit's document is made from the corpus's metadata and the hit's own text, without
reading the whole document's text; the corpus finds a document's position without a pass over
all its ids; the documents a user reads are unchanged."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402

from langchain_longctx import CorpusRetriever  # noqa: E402
from langchain_longctx._documents import hit_to_document  # noqa: E402
from longctx.corpus import CorpusIndex, build_indexes  # noqa: E402
from longctx.io import sample_text  # noqa: E402

QUERIES = ("Who sits at the tea party with the Hatter?", "Who was late?", "What did the Queen say?")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    t = sample_text("alice")
    docs = [(f"chapter/{j}", t[j * 12_000 : (j + 1) * 12_000]) for j in range(5)]
    out = tmp_path_factory.mktemp("c") / "corpus"
    build_indexes(docs, "mixpr", out, use_ray=False, progress=False)
    return out


def test_documents_equal_those_made_from_the_whole_source(corpus_dir):
    extra = {"chapter/2": {"title": "two", "longctx_note": 1}}
    r = CorpusRetriever.from_corpus(corpus_dir, k=8, metadatas=extra)
    c = r.corpus
    for q in QUERIES:
        result = c.search(q, k=8, unique_texts=None, explain=False)
        want = []
        for j in result.positions("score"):
            hit = result.hits[j]
            d = c.doc_ids[hit.source]
            meta = {**c.metadata(d), **extra.get(d, {})}
            src = Document(page_content=c.text(d), id=d, metadata=meta)
            want.append(hit_to_document(hit, src, result.method))
        got = r.invoke(q)
        assert len(got) == len(want) == 8
        assert [(x.id, x.page_content, x.metadata) for x in got] == [
            (x.id, x.page_content, x.metadata) for x in want
        ]


def test_a_query_reads_no_whole_text(corpus_dir, monkeypatch):
    r = CorpusRetriever.from_corpus(corpus_dir, k=6)
    calls = []
    real = CorpusIndex.text
    monkeypatch.setattr(CorpusIndex, "text", lambda self, d: calls.append(d) or real(self, d))
    docs = [d for q in QUERIES for d in r.invoke(q)]
    assert len(docs) == 6 * len(QUERIES) and calls == []  # before: one per document hit


def test_positions_are_mapped_once_per_version_of_the_ids(corpus_dir):
    c = CorpusIndex.from_corpus(corpus_dir)
    ids = c.index.doc_ids
    texts = [c.text(d) for d in c.doc_ids]
    held = c._positions
    assert held[0] is ids and held[1] == {d: i for i, d in enumerate(ids)}
    assert [c.metadata(d) for d in c.doc_ids] and c._positions is held  # not rebuilt
    assert texts == [c.index.texts[i] for i in range(len(ids))]
    with pytest.raises(KeyError):
        c.text("no such document")
