"""``MixPRRetriever(vector_retriever=...)`` when many documents share one ``source``: a loader's
pages or rows (``PyPDFLoader``: one ``Document`` per page, ``CSVLoader``: one per row). A
splitter's chunk of a later page seeds its span in that page, not a search in the first
(issue 45: the source map held the first document of a source only, and such seeds were
dropped)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

from langchain_longctx import MixPRRetriever
from langchain_longctx._documents import documents_to_seeds, source_map
from longctx.mixpr.seeds import seed_units
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.langchain_longctx._fixtures import HashEmbeddings

FILLER = [
    "The baker kneaded the dough before sunrise. Flour settled on the wooden counter. ",
    "A tram rattled past the closed market. Pigeons waited on the fountain's rim. ",
    "The choir rehearsed an old hymn in the cold chapel. The organ wheezed twice. ",
    "Rain drummed on the greenhouse roof. Tomatoes ripened along the trellis. ",
]
QUERY = "Where were the ships counted at dawn?"


def _pages() -> list[Document]:
    """A six-page report as ``PyPDFLoader`` gives it: one document per page, one ``source``;
    the chalk sentence is on the last page only."""
    texts = [SEED_BOOK * 2] + [f * 3 for f in FILLER] + [SEED_OTHER * 2]
    return [Document(page_content=t, metadata={"source": "report.pdf", "page": i})
            for i, t in enumerate(texts)]  # fmt: skip


def _splits(pages, size=200):
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=size, chunk_overlap=20, add_start_index=True
    )
    return splitter.split_documents(pages)


def _chalk_store(pages, *, keep=("source", "page", "start_index")):
    """An in-memory store holding the last page's chunk of the chalk sentence (a real split:
    its ``start_index`` counts from the start of that page), with the metadata keys ``keep``."""
    chunk = [d for d in _splits(pages) if "Chalk dust" in d.page_content][-1]
    assert chunk.metadata["page"] == 5 and chunk.metadata["start_index"] > 0
    meta = {k: v for k, v in chunk.metadata.items() if k in keep}
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents([Document(page_content=chunk.page_content, metadata=meta)])
    return store


@pytest.mark.parametrize("keep", [("source", "page", "start_index"), ("source",)])
def test_a_later_pages_chunk_brings_in_what_the_query_alone_does_not_reach(keep):
    pages = _pages()
    plain = MixPRRetriever.from_documents(pages, k=3)
    hybrid = MixPRRetriever.from_documents(
        pages, k=3, vector_retriever=_chalk_store(pages, keep=keep)
    )
    assert not any("Chalk" in d.page_content for d in plain.invoke(QUERY))
    got = hybrid.invoke(QUERY)
    chalk = [d for d in got if "Chalk" in d.page_content]
    assert chalk and all(d.metadata["page"] == 5 for d in chalk)


def test_every_chunk_of_every_page_seeds_its_own_span_of_its_own_page():
    pages = _pages()
    r = MixPRRetriever.from_documents(pages, k=3)
    splits = _splits(pages)
    by_key = dict(zip(r._keys, pages))
    sources = source_map(pages, r._keys, "source")
    assert sources["report.pdf"] == tuple(r._keys)
    seeds = documents_to_seeds(splits, r.index, sources, "source", by_key)
    assert len(seeds) == len(splits)
    for s, d in zip(seeds, splits):
        assert by_key[s.doc_id].metadata["page"] == d.metadata["page"]
        assert s.start == d.metadata["start_index"]
        assert by_key[s.doc_id].page_content[s.start : s.end] == d.page_content


def test_a_text_on_two_pages_goes_to_the_page_its_metadata_names():
    """Two pages of the same text (a repeated form, a CSV's equal rows): the chunk's ``page``
    picks its own; without that key the first page that holds the text at the offset wins."""
    pages = [Document(page_content=SEED_OTHER, metadata={"source": "f.csv", "row": i})
             for i in range(3)]  # fmt: skip
    r = MixPRRetriever.from_documents(pages, k=3)
    by_key = dict(zip(r._keys, pages))
    sources = source_map(pages, r._keys, "source")
    hit = Document(page_content=SEED_OTHER[:40], metadata={"source": "f.csv", "row": 2,
                                                             "start_index": 0})  # fmt: skip
    (s,) = documents_to_seeds([hit], r.index, sources, "source", by_key)
    assert by_key[s.doc_id].metadata["row"] == 2
    hit.metadata = {"source": "f.csv", "start_index": 0}
    (s,) = documents_to_seeds([hit], r.index, sources, "source", by_key)
    assert by_key[s.doc_id].metadata["row"] == 0


def test_a_chunk_without_start_index_is_located_in_the_page_that_holds_it():
    pages = _pages()
    r = MixPRRetriever.from_documents(pages, k=3)
    phrase = "Tomatoes ripened along the trellis."
    hit = Document(page_content=phrase, metadata={"source": "report.pdf"})
    by_key = dict(zip(r._keys, pages))
    (s,) = documents_to_seeds([hit], r.index, source_map(pages, r._keys, "source"),
                              "source", by_key)  # fmt: skip
    page = by_key[s.doc_id]
    assert page.metadata["page"] == 4
    assert (s.start, s.end) == (page.page_content.index(phrase),
                                page.page_content.index(phrase) + len(phrase))  # fmt: skip


def test_added_pages_join_their_sources_candidates():
    pages = _pages()
    store = _chalk_store(pages)
    grown = MixPRRetriever.from_documents(pages[:2], k=3, vector_retriever=store)
    assert not any("Chalk" in d.page_content for d in grown.invoke(QUERY))  # map built
    assert grown._sources["report.pdf"] == tuple(grown._keys)
    grown.add_documents(pages[2:])
    assert grown._sources["report.pdf"] == tuple(grown._keys)
    assert any("Chalk" in d.page_content for d in grown.invoke(QUERY))


WORDS = st.sampled_from("amber birch cedar delta ember fjord grove heron ivory jade".split())
PAGE = st.lists(WORDS, min_size=1, max_size=60).map(lambda ws: " ".join(ws) + ".")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(PAGE, min_size=2, max_size=6),
    size=st.integers(30, 120),
    with_page=st.booleans(),
)
def test_every_chunks_seed_lands_on_units_that_overlap_its_own_text(texts, size, with_page):
    """Random pages of one source, split at random sizes: every chunk's seed is a span whose
    text is the chunk's, and the units it lands on overlap that span (its own page's when the
    chunk carries ``page``)."""
    pages = [Document(page_content=t, metadata={"source": "s", "page": i})
             for i, t in enumerate(texts)]  # fmt: skip
    r = MixPRRetriever.from_documents(pages, k=3)
    splits = _splits(pages, size)
    if not with_page:
        for d in splits:
            del d.metadata["page"]
    by_key = dict(zip(r._keys, pages))
    seeds = documents_to_seeds(splits, r.index, source_map(pages, r._keys, "source"), "source",
                               by_key)  # fmt: skip
    assert len(seeds) == len(splits)
    ix = r.index
    state = ix._state
    for s, d in zip(seeds, splits):
        page = by_key[s.doc_id]
        if s.start is None:  # the chunk is a whole page: the page's own text entry
            a, b = 0, len(page.page_content)
        else:
            a, b = s.start, s.end
            if with_page:
                assert page.metadata["page"] == d.metadata["page"]
        assert page.page_content[a:b] == d.page_content
        units, w = seed_units([s], state.positions, state.texts, state.unit_source,
                              state.starts, state.ends)  # fmt: skip
        assert len(units) > 0 and np.all(w > 0)
        assert np.all(ix.unit_source[units] == ix.doc_ids.index(s.doc_id))
        assert np.all(np.minimum(ix.ends[units], b) > np.maximum(ix.starts[units], a))


def test_a_hit_equal_to_another_sources_document_seeds_its_own_source():
    """A chunk whose text is the whole text of a document of another source (a repeated row,
    a boilerplate page) seeds its span in its own source's page, not that other document."""
    pages = [
        Document(page_content="intro. Shared sentence here. end", metadata={"source": "a.pdf"}),
        Document(page_content="Shared sentence here. more text", metadata={"source": "a.pdf"}),
        Document(page_content="Shared sentence here.", metadata={"source": "b.pdf"}),
    ]
    keys = ["k0", "k1", "k2"]

    class Held:
        def holds(self, k):
            return k in keys

    sources = source_map(pages, keys, "source")
    hits = [
        Document(
            page_content="Shared sentence here.", metadata={"source": "a.pdf", "start_index": 0}
        ),
        Document(
            page_content="Shared sentence here.", metadata={"source": "a.pdf", "start_index": 7}
        ),
        Document(
            page_content="Shared sentence here.", metadata={"source": "b.pdf", "start_index": 0}
        ),
    ]
    seeds = documents_to_seeds(hits, Held(), sources, "source", dict(zip(keys, pages)))
    assert [(s.doc_id, s.start, s.end) for s in seeds] == [
        ("k1", 0, 21),
        ("k0", 7, 28),
        ("k2", None, None),  # its own source's document, whole: it is the hit's text
    ]
