"""MixPR core: PageRank vs networkx, the sparse graph vs a dense reference, routers, retrieval."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from longctx.mixpr import (
    ROUTER_PROMPT,
    KeywordRouter,
    LLMRouter,
    MixPR,
    column_normalize,
    personalized_pagerank,
    similarity_graph,
)


def _random_graph(n=60, density=0.08, seed=0, n_dangling=3):
    rng = np.random.default_rng(seed)
    W = sp.random(n, n, density=density, random_state=rng, format="csr")
    W = W + W.T
    W = sp.lil_matrix(W)
    for j in range(n_dangling):  # isolated (dangling) nodes
        W[j, :] = 0
        W[:, j] = 0
    return sp.csr_array(W)


@pytest.mark.parametrize("alpha", [0.0, 0.15, 0.6, 0.95])
def test_pagerank_matches_networkx(alpha):
    W = _random_graph()
    n = W.shape[0]
    p = np.zeros(n)
    p[-1], p[-2] = 0.7, 0.3
    A = column_normalize(W)
    ours = personalized_pagerank(A, p, alpha, max_iter=1000, tol=1e-15)
    G = nx.from_scipy_sparse_array(W, create_using=nx.DiGraph)
    ref = nx.pagerank(
        G,
        alpha=1 - alpha,
        personalization=dict(enumerate(p)),
        max_iter=1000,
        tol=1e-15,
        weight="weight",
    )
    ref = np.array([ref[i] for i in range(n)])
    assert np.abs(ours - ref).max() < 1e-6
    assert ours.sum() == pytest.approx(1.0)


def test_pagerank_stops_at_max_iter_without_raising():
    A = column_normalize(_random_graph())
    n = A.shape[0]
    x1 = personalized_pagerank(A, np.ones(n), 0.0, max_iter=1, tol=0.0)
    x2 = personalized_pagerank(A, np.ones(n), 0.0, max_iter=2, tol=0.0)
    assert not np.allclose(x1, x2)  # really stopped after 1 iteration
    assert x1.sum() == pytest.approx(1.0)


def test_pagerank_bad_input():
    A = column_normalize(_random_graph(n=5, n_dangling=0, density=0.9))
    with pytest.raises(ValueError, match="alpha"):
        personalized_pagerank(A, np.ones(5), 1.5)
    with pytest.raises(ValueError, match="p must have shape"):
        personalized_pagerank(A, np.ones(4), 0.5)
    with pytest.raises(ValueError, match="column-stochastic"):
        personalized_pagerank(sp.csr_array(np.full((5, 5), 2.0)), np.ones(5), 0.5)
    with pytest.raises(TypeError, match="A must be a scipy sparse"):
        personalized_pagerank(np.eye(5), np.ones(5), 0.5)


def test_similarity_graph_matches_dense_reference():
    rng = np.random.default_rng(1)
    E = sp.random(300, 40, density=0.1, random_state=rng, format="csr")
    E = sp.csr_array(E.multiply(1 / np.sqrt(E.multiply(E).sum(axis=1)).clip(1e-12)))
    # tiny blocks and 2 threads: exercises the block and thread paths
    S = similarity_graph(E, 0.27, max_block_nnz=500, n_jobs=2).toarray()
    D = (E @ E.T).toarray()
    D[D < 0.27] = 0
    # same sparsity pattern (no entry close to the threshold in this draw) and values
    assert np.abs(S - D).max() < 1e-6
    assert ((S > 0) == (D > 0)).all()
    A = column_normalize(S)
    colsum = np.asarray(A.sum(axis=0)).ravel()
    assert np.allclose(colsum[colsum > 0], 1.0)


CHUNKS = [
    "Mary moved to the bathroom.",
    "The weather over the moors was grey and cold.",
    "John went to the hallway.",
    "Mary got the milk there.",
    "The old captain told stories of the sea.",
    "Sandra journeyed to the garden.",
    "Mary travelled to the office.",
]


def test_rank_local_prefers_query_related_chunks():
    for preset in ("paper", "default"):
        mp = MixPR(preset=preset)
        scores, mode = mp.rank_with_mode(CHUNKS, "Where is the milk?", mode="local")
        assert scores.shape == (len(CHUNKS),) and scores.dtype == np.float64
        assert int(np.argmax(scores)) == 3  # "Mary got the milk there."
        assert mode == "local"
        # multi-hop: in this tiny text "Mary" is common (low idf), so the Mary-Mary links
        # (cosine ~.22) need a lower threshold; then the walk reaches Mary's other chunks.
        scores = MixPR(preset=preset, threshold=0.2).rank(CHUNKS, "Where is the milk?", "local")
        assert min(scores[0], scores[6]) > 10 * max(scores[1], scores[4])


def test_rank_global_is_pagerank_and_router_picks_it():
    query = "Summarize what Mary did in the whole story."
    # paper-literal: PageRank over the chunks and the query node(s)
    mp = MixPR(preset="paper", threshold=0.2)
    scores, mode = mp.rank_with_mode(CHUNKS, query)
    assert mode == "global"
    texts = CHUNKS + mp.query_chunks(query)
    n = len(texts)
    ref = personalized_pagerank(mp.graph(texts), np.full(n, 1 / n), 0.0)
    assert np.allclose(scores, ref[: len(CHUNKS)])
    local = mp.rank(CHUNKS, "Where is the milk?", mode="local")
    assert not np.allclose(local, mp.rank(CHUNKS, "Where is the milk?", mode="global"))
    # index path: PageRank of the chunk graph alone (query-independent)
    mp = MixPR(threshold=0.2)
    scores, mode = mp.rank_with_mode(CHUNKS, query)
    assert mode == "global"
    ref = personalized_pagerank(mp.graph(CHUNKS), np.full(len(CHUNKS), 1 / len(CHUNKS)), 0.0)
    assert np.allclose(scores, ref)


@pytest.mark.parametrize("preset", ["paper", "default"])
def test_rank_falls_back_to_pagerank_when_query_reaches_no_chunk(preset, caplog):
    with caplog.at_level("INFO", logger="longctx.mixpr"):
        scores, mode = MixPR(preset=preset).rank_with_mode(
            CHUNKS, "quantum chromodynamics?", mode="local"
        )
    assert mode == "global-fallback"
    assert "using PageRank" in caplog.text
    assert np.all(scores > 0)


def test_keyword_router():
    r = KeywordRouter()
    assert r("Summarize this book.") == "global"
    assert r("What are the most frequent words in the text?") == "global"
    assert r("What is the document about?") == "global"
    assert r("Where is the milk?") == "local"
    assert r("Who gave Alice the summary of the trial?") == "global"  # keyword router is crude


def test_llm_router_uses_paper_prompt_and_parses_answers():
    seen = []

    def llm(prompt):
        seen.append(prompt)
        return " 'Y' "

    router = LLMRouter(llm)
    assert router("Where is Mary?", ["c0", "c1", "c2", "c3", "c4"]) == "global"
    prompt = seen[0]
    assert prompt == ROUTER_PROMPT.replace("[query]", "c0\nc1\nc4\nWhere is Mary?")
    assert prompt.count("answer \u2019y\u2019 with no other text") == 2
    assert prompt.endswith("Answer:")
    assert LLMRouter(lambda p: "n")("Summarize it.", []) == "local"
    # unparseable answer: keyword fallback
    assert LLMRouter(lambda p: "maybe")("Summarize it.", []) == "global"
    mp = MixPR(router=LLMRouter(lambda p: "n"))
    assert mp.rank_with_mode(CHUNKS, "Summarize where Mary went.")[1] == "local"


def test_short_last_query_chunk_spreads_personalization():
    mp = MixPR()
    assert mp.query_chunks("Where is the milk? Answer:") == ["Where is the milk?", "Answer:"]
    # both query chunks are restart nodes: the milk chunk still wins
    scores = mp.rank(CHUNKS, "Where is the milk? Answer:", mode="local")
    assert int(np.argmax(scores)) == 3


def test_retrieve_passages_and_budget(alice_text):
    mp = MixPR()
    query = "What did the Mock Turtle sing about?"
    passages = mp.retrieve(alice_text, query, k=10)
    assert len(passages) == 10
    assert [p.index for p in passages] == sorted(p.index for p in passages)
    for p in passages:
        assert alice_text[p.start : p.end] == p.text
    assert any("Mock Turtle" in p.text for p in passages)
    budget = mp.retrieve(alice_text, query, token_budget=60)
    assert 0 < sum(len(p.text.split()) for p in budget) <= 60
    assert (
        sum(len(p.text) for p in mp.retrieve(alice_text, query, token_budget=50, token_counter=len))
        <= 50
    )
    assert len(mp.retrieve(alice_text, query)) == 100  # paper's default k


def test_bad_arguments_raise_before_work():
    mp = MixPR()
    with pytest.raises(ValueError, match="query"):
        mp.retrieve("some text", "  ")
    with pytest.raises(ValueError, match="k must be >= 1"):
        mp.retrieve("some text", "q", k=0)
    with pytest.raises(ValueError, match="mode"):
        mp.rank(["a b"], "q", mode="both")
    with pytest.raises(ValueError, match="at most one"):
        mp.retrieve("some text", "q", k=1, token_budget=5)
    with pytest.raises(TypeError, match=r"chunks\[1\]"):
        mp.rank(["a", 3], "q")
    with pytest.raises(ValueError, match="threshold"):
        MixPR(threshold=2)
    assert mp.rank([], "q").shape == (0,)


def test_rank_scores_one_texts_chunks_as_the_index_of_that_text(alice_text):
    """``score_text`` / ``rank`` take the chunks as one text's units: the walk of one document
    (no phrase graph), so they equal the index built on the text; the same chunks as passages
    would take the multi-hop walk for these questions."""
    from longctx.mixpr import MixPRIndex

    text = alice_text[:60000]
    index = MixPRIndex.from_texts(text)
    spans = list(zip(index.starts.tolist(), index.ends.tolist()))
    passages = MixPRIndex.from_texts([text[a:b] for a, b in spans], chunk=False)
    walks = []
    for q in ("What did the White Rabbit lose?", "Why did Alice cry a pool of tears?"):
        got_spans, got = MixPR().score_text(text, q, "local")
        assert got_spans == spans
        np.testing.assert_allclose(got, index.score(q, "local")[0], rtol=0, atol=1e-12)
        walks.append(passages.search(q, k=5, mode="local").trace[0]["walk"])
    assert "multihop" in walks  # what rank would have walked before
