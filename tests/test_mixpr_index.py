"""MixPRIndex: build once, query many; agreement with the paper-literal path, persistence,
concurrency."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp

from longctx.mixpr import (
    MixPR,
    MixPRIndex,
    column_normalize,
    personalized_pagerank,
    similarity_graph,
)
from longctx.mixpr.query import query_weights
from longctx.persist import PersistError
from longctx.types import SearchResult

QUESTIONS = [
    "What did the Mock Turtle sing about?",
    "Who is the Cheshire Cat?",
    "Who stole the tarts?",
    "Why did Alice cry a pool of tears?",
    "What did the Caterpillar smoke?",
]


@pytest.fixture(scope="module")
def alice_index(alice_text):
    # the paper's graph and personalization, built once (the literal path refits per query)
    return MixPRIndex.from_texts(alice_text, preset="paper", fit_query=False)


def test_search_agrees_with_paper_literal_path(alice_text, alice_index):
    literal = MixPR(preset="paper")
    for q in QUESTIONS:
        ours = {h.start for h in alice_index.search(q, k=100).hits}
        ref = {h.start for h in literal.search(alice_text, q, k=100).hits}
        assert len(ours & ref) >= 98, q


def test_bordered_power_iteration_equals_pagerank_on_explicit_graph(alice_text):
    # (solver pinned: the push on this graph is tests/test_mixpr_push_graph.py's)
    alice_index = MixPRIndex.from_texts(alice_text, preset="paper", fit_query=False, solver="power")
    q = "What did the Caterpillar smoke? Tell me"  # two query chunks, the last one short
    scores, mode, _ = alice_index.score(q, "local")
    assert mode == "local"
    qchunks = ["What did the Caterpillar smoke?", "Tell me"]
    Eq, Q = query_weights(alice_index.terms, qchunks, with_q=True)
    E = sp.csr_array(alice_index.terms.embeddings(), dtype=np.float64)
    # the chunks' query-term weights as in the paper-literal fit (the query is one more
    # document: df + 1 for its terms), rows re-normalized; df counted from E's nonzeros
    n = alice_index.n_units
    terms = np.unique(Eq.indices)
    df = np.diff(sp.csc_array(E).indptr)[terms]
    idf_old = np.log((1 + n) / (1 + df)) + 1
    idf_new = np.log((2 + n) / (2 + df)) + 1
    scale = np.ones(E.shape[1])
    scale[terms] = idf_new / idf_old
    E2 = E @ sp.diags_array(scale)
    norms = np.sqrt(E2.multiply(E2).sum(axis=1))
    E2 = sp.diags_array(np.divide(1, norms, out=np.zeros_like(norms), where=norms > 0)) @ E2
    B = (E2 @ Eq.T.astype(np.float64)).toarray()
    S = similarity_graph(E, 0.27).toarray()
    full = np.block([[S, B], [B.T, Q]])
    full[full < 0.27] = 0
    A = column_normalize(sp.csr_array(full))
    p = np.zeros(n + 2)
    p[-2:] = 0.5  # sec. 4: the last query chunk has fewer than 3 words
    ref = personalized_pagerank(A, p, 0.6, 18, 1e-6)[:n]
    np.testing.assert_allclose(scores, ref, atol=1e-7)


def test_result_type_hits_and_budget(alice_text, alice_index):
    r = alice_index.search("Who stole the tarts?", k=10)
    assert isinstance(r, SearchResult) and r.method == "mixpr" and r.mode == "local"
    assert len(r.hits) == 10 and r.budget == {"k": 10}
    assert set(r.timings) >= {"route", "query_edges", "rank", "select"}
    assert "embed_query" not in r.timings  # no model: nothing embedded
    assert [h.start for h in r.hits] == sorted(h.start for h in r.hits)
    for h in r.hits:
        assert alice_text[h.start : h.end] == h.text and h.source == 0
    r = alice_index.search("Who stole the tarts?", token_budget=60)
    assert r.budget == {"token_budget": 60, "unit": "count_tokens"}
    assert 0 < sum(int(alice_index.token_counts[h.index]) for h in r.hits) <= 60
    assert len(alice_index.search("Who stole the tarts?")) == 100  # the paper's k
    assert alice_index.search("Summarize the book.", k=5).mode == "global"
    assert alice_index.search("zyzzyva qwxk?", k=5, mode="local").mode == "global-fallback"


def test_many_texts_keep_their_source_and_offsets():
    texts = ["Mary went to the kitchen. The cat slept.", "John took the milk. Mary got the milk."]
    index = MixPRIndex.from_texts(texts, threshold=0.1)
    r = index.search("Who got the milk?", k=4)
    assert {h.source for h in r.hits} == {0, 1}
    for h in r.hits:
        assert texts[h.source][h.start : h.end] == h.text
    assert [(h.source, h.start) for h in r.hits] == sorted((h.source, h.start) for h in r.hits)


def test_one_off_call_ranks_like_the_index(alice_text, alice_index):
    q = QUESTIONS[0]
    a = [h.start for h in MixPR(preset="paper", fit_query=False).retrieve(alice_text, q, k=20)]
    assert a == [h.start for h in alice_index.search(q, k=20).hits]
    # the default preset: one-off call and built index share settings and scoring code
    default_index = MixPRIndex.from_texts(alice_text)
    for q in QUESTIONS[:3]:
        a = MixPR().search(alice_text, q, k=20)
        b = default_index.search(q, k=20)
        assert [h.start for h in a.hits] == [h.start for h in b.hits]
        assert [h.score for h in a.hits] == [h.score for h in b.hits]
        assert a.mode == b.mode == "local"


@pytest.mark.parametrize(
    "save_kw, mmap, version",
    [({}, False, 3), ({}, True, 3), ({"mappable": False}, False, 2)],
    ids=["default", "mapped", "format2"],
)
def test_save_load_round_trip(tmp_path, alice_index, save_kw, mmap, version):
    alice_index.save(tmp_path / "idx", **save_kw)
    loaded = MixPRIndex.load(tmp_path / "idx", mmap=mmap)
    for q in QUESTIONS[:3] + ["Summarize the book."]:
        a, b = alice_index.search(q, k=50), loaded.search(q, k=50)
        assert a.hits == b.hits and a.mode == b.mode
    assert (
        loaded.search(QUESTIONS[0], token_budget=80).hits
        == alice_index.search(QUESTIONS[0], token_budget=80).hits
    )
    raw = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert raw["format"] == "longctx.mixpr" and raw["format_version"] == version


@pytest.mark.parametrize(
    "mappable, cut, gone", [(False, "graph.npz", "vocabulary.json"), (True, "S_data.npy", "df.npy")]
)
def test_damaged_saves_are_clear_errors(tmp_path, alice_index, mappable, cut, gone):
    d = tmp_path / "idx"
    alice_index.save(d, mappable=mappable)
    graph = (d / cut).read_bytes()
    (d / cut).write_bytes(graph[: len(graph) // 2])
    for mmap in (False, True) if mappable else (False,):
        with pytest.raises(PersistError, match=cut):
            MixPRIndex.load(d, mmap=mmap)
    alice_index.save(d, mappable=mappable)
    (d / gone).unlink()
    with pytest.raises(PersistError, match=gone):
        MixPRIndex.load(d)
    alice_index.save(d, mappable=mappable)
    m = json.loads((d / "manifest.json").read_text())
    m["format_version"] = 99
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PersistError, match="format version 99"):
        MixPRIndex.load(d)
    (d / "manifest.json").unlink()
    with pytest.raises(PersistError, match="manifest.json"):
        MixPRIndex.load(d)
    with pytest.raises(PersistError, match="not a directory"):
        MixPRIndex.load(tmp_path / "nothing")


def test_concurrent_searches_equal_sequential(alice_index):
    queries = QUESTIONS + ["Summarize the book.", "zyzzyva qwxk?", "Who is the Queen?"]
    sequential = [alice_index.search(q, k=30) for q in queries]
    with ThreadPoolExecutor(8) as pool:
        threaded = list(pool.map(lambda q: alice_index.search(q, k=30), queries))

    async def gather():
        return await asyncio.gather(
            *(asyncio.to_thread(alice_index.search, q, k=30) for q in queries)
        )

    for a, b, c in zip(sequential, threaded, asyncio.run(gather())):
        assert a.hits == b.hits == c.hits and a.mode == b.mode == c.mode


def test_bad_settings_raise_before_work(alice_text):
    with pytest.raises(ValueError, match="stop_words"):
        MixPRIndex.from_texts(alice_text, stop_words="englsh")
    with pytest.raises(ValueError, match="vectorizer_kwargs"):
        MixPRIndex.from_texts(alice_text, vectorizer_kwargs={"no_such_arg": 1})
    with pytest.raises(ValueError, match="ngram_range"):
        MixPRIndex.from_texts(alice_text, vectorizer_kwargs={"ngram_range": "x"})
    with pytest.raises(ValueError, match="preset"):
        MixPRIndex.from_texts(alice_text, preset="best")
    with pytest.raises(TypeError):
        MixPRIndex.from_texts(alice_text, no_such_setting=1)
    with pytest.raises(ValueError, match="personalization"):
        MixPRIndex.from_texts(alice_text, personalization="uniform")
    with pytest.raises(ValueError, match="no term to index"):
        MixPRIndex.from_texts("The and of. It is the.")
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        MixPRIndex.from_texts(["fine text", "  "])
    index = MixPRIndex.from_texts("Mary went home. John stayed.")
    with pytest.raises(ValueError, match="at most one"):
        index.search("Mary?", k=1, token_budget=3)
    with pytest.raises(ValueError, match="token_budget must be >= 1"):
        index.search("Mary?", token_budget=0)
    with pytest.raises(ValueError, match="query"):
        index.search(" ")
