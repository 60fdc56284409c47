"""The guide's fusion recipe in LangChain (issue 45): MixPR over the app's own splits (one unit
each), seeded by the store's retriever asked for 5 (``vector_retriever=``), its first 5: MixPR's
score plus the seeds' walk's, each divided by its maximum (the core's
:meth:`longctx.MixPRIndex.score` with :mod:`longctx.mixpr.seeds`). And the rank-fusion
alternative, LangChain's ``EnsembleRetriever`` at equal weights (reciprocal rank, ``c=60``), whose
ranking is the core rule's (:func:`longctx.fusion.reciprocal_rank_fusion`) on the splits' texts."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

from langchain_longctx import MixPRRetriever
from longctx.fusion import reciprocal_rank_fusion
from longctx.mixpr.seeds import Seed, rank_weight
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.langchain_longctx._fixtures import HashEmbeddings

QUERY = "Where did the fox cross the frozen stream?"


@pytest.fixture(scope="module")
def app():
    """An app from LangChain's docs: loaded documents, a splitter, an in-memory vector store."""
    docs = [
        Document(page_content=SEED_BOOK * 3, metadata={"source": "book.txt"}),
        Document(page_content=SEED_OTHER * 3, metadata={"source": "other.txt"}),
    ]
    splitter = RecursiveCharacterTextSplitter(chunk_size=120, chunk_overlap=0, add_start_index=True)
    splits = splitter.split_documents(docs)
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(splits)
    return splits, store


def texts(docs):
    return [d.page_content for d in docs]


def test_mixpr_over_the_splits_returns_the_splits_themselves(app):
    splits, _ = app
    mixpr = MixPRRetriever(documents=splits, chunk_documents=False, k=5)
    out = mixpr.invoke(QUERY)
    by_text = {d.page_content: d for d in splits}
    assert len(out) == 5 and all(d.page_content in by_text for d in out)
    assert all(d.metadata["source"] == by_text[d.page_content].metadata["source"] for d in out)


def test_the_recipe_is_mixpr_seeded_by_the_stores_5_at_the_splits_grain(app):
    splits, store = app
    vector = store.as_retriever(search_kwargs={"k": 5})
    fused = MixPRRetriever(
        documents=splits, chunk_documents=False, k=5, vector_retriever=vector, keep_firsts=True
    )
    out = texts(fused.invoke(QUERY))
    assert len(set(out)) == 5 and set(out) <= set(texts(splits))  # 5 distinct app splits
    # the core rule: the store's 5 splits seed MixPR's walk over them, by rank
    key = {d.page_content: k for k, d in zip(fused._keys, splits)}
    app5 = texts(vector.invoke(QUERY))
    seeds = [Seed(key[t], score=rank_weight(r)) for r, t in enumerate(app5)]
    want = fused.index.search(QUERY, k=5, seeds=seeds, keep_firsts=True, unique_texts=True)
    by_key = dict(zip(fused._keys, texts(splits)))
    assert set(out) == {by_key[fused.index.doc_ids[h.source]] for h in want.hits}
    # it keeps each retriever's first split, first, and differs from MixPR alone
    alone = texts(MixPRRetriever(documents=splits, chunk_documents=False, k=5).invoke(QUERY))
    assert out[0] == alone[0] and app5[0] in out[:2]
    assert out != alone


def test_rank_fusion_first_5_is_the_core_rule_and_keeps_both_top_hits(app):
    splits, store = app
    mixpr = MixPRRetriever(documents=splits, chunk_documents=False, k=5)
    vector = store.as_retriever(search_kwargs={"k": 5})
    fused = EnsembleRetriever(retrievers=[mixpr, vector], weights=[0.5, 0.5]).invoke(QUERY)[:5]
    lists = [texts(mixpr.invoke(QUERY)), texts(vector.invoke(QUERY))]
    assert texts(fused) == [k for k, _ in reciprocal_rank_fusion(lists, k=5)]
    assert len(set(texts(fused))) == 5  # a split both return is counted once
    shared = set(lists[0]) & set(lists[1])
    assert shared and len(shared - {lists[0][0], lists[1][0]}) <= 3  # the case this app makes
    assert lists[0][0] in texts(fused) and lists[1][0] in texts(fused)
    assert texts(fused)[0] in shared  # found by both: ranked first


class Ordered(BaseRetriever):
    """The app's retriever returning given splits in that order."""

    docs: list

    def _get_relevant_documents(self, query, *, run_manager=None):
        return list(self.docs)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), k=st.integers(1, 8))
def test_keep_firsts_returns_each_retrievers_first_split(app, data, k):
    splits, _ = app
    order = data.draw(st.permutations(range(len(splits))))[:5]
    fused = MixPRRetriever(
        documents=splits, chunk_documents=False, k=k, keep_firsts=True,
        vector_retriever=Ordered(docs=[splits[i] for i in order]),
    )  # fmt: skip
    out = texts(fused.invoke(QUERY))
    alone = texts(MixPRRetriever(documents=splits, chunk_documents=False, k=1).invoke(QUERY))
    assert len(out) == k and out[0] == alone[0]  # MixPR's first split, first
    if k >= 2:
        assert splits[order[0]].page_content in out[:2]  # the app's first split


def test_keep_firsts_must_be_a_bool(app):
    with pytest.raises(ValueError, match="keep_firsts"):
        MixPRRetriever(documents=app[0], chunk_documents=False, keep_firsts="yes")


def test_keep_firsts_with_explain_explains_each_documents_own_score(app):
    """Before: ``invoke(..., explain=True)`` with ``keep_firsts=True`` always raised
    ``ValueError: explanation parts sum to 2.0, the score is 4.0`` (the reviewer's lc.py)."""
    splits, store = app
    vector = store.as_retriever(search_kwargs={"k": 5})
    first = vector.invoke(QUERY)[0].page_content
    fused = MixPRRetriever(
        documents=splits, chunk_documents=False, k=5, vector_retriever=vector, keep_firsts=True
    )
    plain = fused.invoke(QUERY)
    out = fused.invoke(QUERY, explain=True)
    assert texts(out) == texts(plain) and first in texts(out)[:2]
    for d in out:
        e = d.metadata["longctx_explanation"]
        assert e["score"] == d.metadata["longctx_score"]
        assert abs(sum(e["parts"].values()) - e["score"]) < 1e-9


def test_keep_firsts_keeps_the_apps_first_hit_on_the_multihop_walk():
    """The reviewer's kf3.py through the adapter: a query naming a passage's head takes the
    multi-hop walk, where the app's first hit scored 0 and was dropped (before)."""
    from tests.test_mixpr_keep_firsts import KF3

    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(KF3)]
    fused = MixPRRetriever(
        documents=docs, chunk_documents=False, k=3, keep_firsts=True,
        vector_retriever=Ordered(docs=[docs[5], docs[9]]),
    )  # fmt: skip
    q = "Where does the Seine flow?"
    assert fused.index.search(q, k=3).trace[0]["walk"] == "multihop"
    out = [d.id for d in fused.invoke(q)]
    assert len(out) == 3 and out[1] == "d5"
