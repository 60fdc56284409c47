"""``MixPRRetriever(vector_retriever=...)``: the hybrid over the app's own vector store, whose
hits seed the walk; longctx embeds nothing (issue 45)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

from langchain_longctx import MixPRRetriever
from langchain_longctx._documents import documents_to_seeds, source_map
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.langchain_longctx._fixtures import HashEmbeddings

BOOK, OTHER = SEED_BOOK, SEED_OTHER


class Counting(HashEmbeddings):
    """The hash embeddings, counting the texts embedded as documents."""

    calls: int = 0

    def embed_documents(self, texts):
        Counting.calls += len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def app():
    """An app from LangChain's docs: loaded documents, a splitter, an in-memory vector store."""
    docs = [
        Document(page_content=BOOK * 3, metadata={"source": "book.txt"}),
        Document(page_content=OTHER * 3, metadata={"source": "other.txt"}),
    ]
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=200, chunk_overlap=20, add_start_index=True
    )
    splits = splitter.split_documents(docs)
    store = InMemoryVectorStore(Counting())
    store.add_documents(splits)
    return docs, splits, store


def test_the_stores_chunks_become_spans_of_their_source_documents(app):
    docs, _, store = app
    r = MixPRRetriever.from_documents(docs, k=3)
    found = store.similarity_search("Where did the fox cross?", k=2)
    seeds = documents_to_seeds(found, r.index, source_map(docs, r._keys, "source"), "source")
    assert [s.doc_id for s in seeds] == ["source0" if d.metadata["source"] == "book.txt"
                                         else "source1" for d in found]  # fmt: skip
    for s, d in zip(seeds, found):
        assert (s.start, s.end) == (d.metadata["start_index"],
                                    d.metadata["start_index"] + len(d.page_content))  # fmt: skip
        text = r.index.texts[r.index.doc_ids.index(s.doc_id)]
        assert text[s.start : s.end] == d.page_content


@pytest.mark.parametrize("as_store", [True, False])
def test_hybrid_over_the_apps_store_embeds_nothing_and_follows_its_seeds(app, as_store):
    docs, _, store = app
    vr = store if as_store else store.as_retriever(search_kwargs={"k": 2})
    before = Counting.calls
    r = MixPRRetriever.from_documents(docs[:1], k=3, vector_retriever=vr, vector_k=2)
    r.add_documents(docs[1:])
    out = r.invoke("Where did the chalk dust drift?")
    assert Counting.calls == before
    assert any("Chalk" in d.page_content for d in out)
    assert r.index.unit_vectors is None


def _chalk_store():
    """A store holding one chunk of ``other.txt`` (its chalk sentence, with ``start_index``)."""
    target = OTHER.index("Chalk dust")
    chunk = Document(
        page_content=OTHER[target : target + 40],
        metadata={"source": "other.txt", "start_index": target},
    )
    store = InMemoryVectorStore(Counting())
    store.add_documents([chunk])
    return store


def test_the_seeds_bring_in_what_the_vector_store_found(app):
    docs, _, _ = app
    store, q = _chalk_store(), "Where were the ships counted at dawn?"
    plain = MixPRRetriever.from_documents(docs, k=3)
    hybrid = MixPRRetriever.from_documents(docs, k=3, vector_retriever=store)
    assert not any("Chalk" in d.page_content for d in plain.invoke(q))
    assert any("Chalk" in d.page_content for d in hybrid.invoke(q))


def test_at_the_apps_grain_each_store_hit_seeds_the_split_itself(app):
    """MixPR over the app's own splits (``chunk_documents=False``): the store gave the splits
    ids of its own, so a hit is found by its text, and seeds that whole split (not a span of
    the first split of its source)."""
    _, splits, store = app
    r = MixPRRetriever(documents=splits, chunk_documents=False, k=3)
    found = store.similarity_search("Where did the fox cross?", k=4)
    assert all(d.id is not None and not r.index.holds(d.id) for d in found)
    seeds = documents_to_seeds(found, r.index, source_map(splits, r._keys, "source"), "source")
    texts = {k: d.page_content for k, d in zip(r._keys, splits)}
    assert [texts[s.doc_id] for s in seeds] == [d.page_content for d in found]
    assert all(s.start is None and s.end is None for s in seeds)
    assert [s.score for s in seeds] == pytest.approx([1.0, 0.5, 1 / 3, 0.25])


def test_a_chunk_without_start_index_is_located_by_its_text(app):
    docs, _, _ = app
    r = MixPRRetriever.from_documents(docs, k=3)
    phrase = "The fox crossed the frozen stream."
    seeds = documents_to_seeds(
        [Document(page_content=phrase, metadata={"source": "book.txt"})],
        r.index, source_map(docs, r._keys, "source"), "source",
    )  # fmt: skip
    assert seeds[0].start is None and seeds[0].text == phrase
    assert r.index.search("x y z fox", k=2, mode="local", seeds=seeds).hits


def test_a_vector_retriever_of_another_kind_is_refused(app):
    with pytest.raises(Exception, match="vector_retriever must be a LangChain BaseRetriever"):
        MixPRRetriever.from_documents(app[0], vector_retriever=object())


def test_a_loaded_retriever_takes_the_store_again(app, tmp_path):
    docs, _, store = app
    r = MixPRRetriever.from_documents(docs, k=3, vector_retriever=store, vector_k=2)
    r.save(tmp_path / "r")
    back = MixPRRetriever.load(tmp_path / "r", vector_retriever=store, vector_k=2)
    q = "Where did the fox cross the stream?"
    assert [d.id for d in back.invoke(q)] == [d.id for d in r.invoke(q)]


@pytest.mark.parametrize("as_store", [True, False])
def test_the_apps_retriever_is_asked_for_local_queries_only(app, as_store):
    """A question the router sends to global mode uses no seeds: the app's store or retriever
    (and the query embedding it costs) is not called for it (issue 45 review)."""
    docs, _, store = app
    asked = []

    class CountingStore(InMemoryVectorStore):
        def similarity_search(self, query, k=4, **kwargs):
            asked.append(query)
            return super().similarity_search(query, k=k, **kwargs)

    counted = CountingStore(store.embedding)
    counted.store = store.store
    vr = counted if as_store else counted.as_retriever(search_kwargs={"k": 2})
    r = MixPRRetriever.from_documents(docs, k=3, vector_retriever=vr, vector_k=2)
    assert r.invoke("Summarize the main themes of the books.")
    assert asked == []
    assert r.invoke("Where did the fox cross the stream?")
    assert asked == ["Where did the fox cross the stream?"]


def test_added_documents_seed_their_spans_like_the_first_ones(app):
    """After ``add_documents`` the source map holds the new documents too: a store's chunk of
    an added document seeds its span there, as a chunk of a first document does (issue 45
    review). The query shares no term with the chunk: only the seed brings it in."""
    docs, _, _ = app
    store, q = _chalk_store(), "Where were the ships counted at dawn?"
    whole = MixPRRetriever.from_documents(docs, k=3, vector_retriever=store)
    grown = MixPRRetriever.from_documents(docs[:1], k=3, vector_retriever=store)
    assert not any("Chalk" in d.page_content for d in grown.invoke(q))  # map built, no other
    by_source = lambda m: {k: v for k, v in m.items() if isinstance(k, str)}  # noqa: E731
    assert by_source(grown._sources) == {"book.txt": ("source0",)}
    grown.add_documents(docs[1:], ids=["added"])
    assert by_source(grown._sources) == {"book.txt": ("source0",), "other.txt": ("added",)}
    got = grown.invoke(q)
    assert any("Chalk" in d.page_content for d in got)
    assert [d.page_content for d in got] == [d.page_content for d in whole.invoke(q)]
    grown.add_documents([Document(page_content=BOOK, metadata={"source": "book.txt"})])
    # a source's added documents come after its first ones (candidates of its chunks, in order)
    assert grown._sources["book.txt"] == ("source0", grown._keys[-1])
