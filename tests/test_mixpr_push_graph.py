"""Forward push on the explicit thresholded graph (``graph="threshold"``, the paper preset): it
equals networkx's PageRank on the same graph (bordered with the query nodes, or restarting on
the units), ranks as the power iteration, reports its walk in the trace, and reads what its
walk reaches, not the whole graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import longctx.mixpr.push_graph as push_graph
from longctx.io import sample_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.config import PRESETS
from longctx.mixpr.query import personalization, query_weights

from .test_mixpr_walk import _walk_record, hashhop

ALICE_QUESTIONS = [
    "Who stole the tarts?",
    "What was in the bottle marked DRINK ME?",
    "Why was the Hatter mad?",
    "What did the Caterpillar say to Alice?",
    "Who is the Duchess?",
    "Where did the White Rabbit go?",
    "What game did the Queen play?",
    "Who cried a pool of tears?",
]


def _session(index, query):
    """The walk's scores and the session's query edges, from a scoring session."""
    st = index._state
    scorer = st.scorer()
    sid = scorer.new_session()
    scorer.open(sid, None)
    trace: list = []
    assert scorer.score(sid, query, "local", None, None, trace=trace)[0] == "local"
    s = st.block._s(sid)
    return s["x"].copy(), s, trace[-1]


def _bordered_reference(index, query, s):
    """networkx's personalized PageRank (tol 1e-15) on ``[[S, B], [B^T, Q]]`` restarting on the
    query nodes, as the paper's walk: the units' part."""
    cfg = index.config
    S = index._state.graph.S.toarray()
    qchunks = [query[a:b] for a, b in cfg.chunk(query)] or [query]
    _, Q = query_weights(index._state.table, qchunks, with_q=True)
    thr = cfg.effective_query_threshold
    Q = np.where(Q >= thr, Q, 0.0)
    B = index._state.block._full_B(s).toarray()
    n, m = B.shape
    M = np.block([[S, B], [B.T, Q]])
    p = np.concatenate([np.zeros(n), personalization(m, qchunks)])
    G = nx.from_numpy_array(M, create_using=nx.DiGraph)
    pers = {i: float(v) for i, v in enumerate(p) if v}
    ref = nx.pagerank(G, alpha=1 - cfg.alpha_local, personalization=pers, tol=1e-15,
                      max_iter=10_000, weight="weight")  # fmt: skip
    return np.array([ref[i] for i in range(n)])


# the dense product / the row gathers with a dense count / with a sorted sum
PATHS = [(4, 16), (0, 0), (0, 1 << 30)]


@pytest.mark.parametrize(("dense_share", "count_share"), PATHS)
@pytest.mark.parametrize(
    "query",
    [
        "What was in the bottle marked DRINK ME?",
        "the White Rabbit",
        "What did the Caterpillar say? Tell me",  # two query nodes, the restart on both
    ],
)
def test_push_matches_networkx_on_the_bordered_thresholded_graph(
    query, dense_share, count_share, monkeypatch
):
    monkeypatch.setattr(push_graph, "GRAPH_DENSE_SHARE", dense_share)
    monkeypatch.setattr(push_graph, "COUNT_SHARE", count_share)
    # a unit of stop words only: no edge, a dangling node of the walk
    text = sample_text("alice")[:30000] + "\n\nAnd then it was so.\n"
    index = MixPRIndex.from_texts(
        text, preset="paper", solver="push", push_threshold=0.0, tol=1e-14, max_iter=1000
    )
    assert (index._state.graph.colsum == 0).any()
    x, s, record = _session(index, query)
    assert record["solver"] == "push" and record["parked"] == 0.0
    assert record["residual"] < 1e-14
    np.testing.assert_allclose(x, _bordered_reference(index, query, s), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("dense_share", "count_share"), PATHS)
def test_push_matches_networkx_with_the_similarity_restart(dense_share, count_share, monkeypatch):
    monkeypatch.setattr(push_graph, "GRAPH_DENSE_SHARE", dense_share)
    monkeypatch.setattr(push_graph, "COUNT_SHARE", count_share)
    text = sample_text("alice")[:30000] + "\n\nAnd then it was so.\n"
    index = MixPRIndex.from_texts(
        text, graph="threshold", solver="push", push_threshold=0.0, tol=1e-14, max_iter=1000,
        lexical_weight=0.0,
    )  # fmt: skip
    x, s, record = _session(index, "the Queen of Hearts and the tarts")
    assert record["solver"] == "push" and record["residual"] < 1e-14
    S = index._state.graph.S.toarray()
    w = index._state.block._restart(s)
    w = w / w.sum()
    G = nx.from_numpy_array(S, create_using=nx.DiGraph)
    ref = nx.pagerank(G, alpha=1 - index.config.alpha_local,
                      personalization={i: float(v) for i, v in enumerate(w) if v},
                      tol=1e-15, max_iter=10_000, weight="weight")  # fmt: skip
    np.testing.assert_allclose(x, [ref[i] for i in range(len(x))], rtol=0, atol=1e-12)


def test_paper_preset_with_the_push_ranks_as_the_power_iteration(alice_text):
    # the paper's fixed point, another solver: the same top 100 as the power iteration, the
    # walk's scores within tol of it, the same top 10 in the same order
    assert (PRESETS["paper"].solver, PRESETS["paper"].push_threshold) == ("power", 1e-8)
    push = MixPRIndex.from_texts(alice_text, preset="paper", solver="push")
    power = MixPRIndex.from_texts(alice_text, preset="paper")
    for q in ALICE_QUESTIONS:
        a, b = push.search(q, k=100), power.search(q, k=100)
        assert _walk_record(a)["solver"] == "push" and _walk_record(b)["solver"] == "power"
        assert [h.start for h in a.hits] == [h.start for h in b.hits], q
        assert [h.start for h in a.by_score()[:10]] == [h.start for h in b.by_score()[:10]], q
        x_a = _session(push, q)[0]
        x_b = _session(power, q)[0]
        assert np.abs(x_a - x_b).max() < push.config.tol, q


def test_push_on_squad_articles_ranks_as_the_power_iteration(shared_data):
    from longctx.eval.tasks import squad

    local = 0
    for examples in squad(shared_data, 15):
        text = examples[0].text
        push = MixPRIndex.from_texts(text, preset="paper", solver="push")
        power = MixPRIndex.from_texts(text, preset="paper")
        for ex in examples:
            a, b = push.search(ex.query, k=100), power.search(ex.query, k=100)
            assert a.mode == b.mode
            # an article of 117-229 units: its walk reaches fewer than 100, and the units it
            # does not reach score 0 in the push (ties: document order) where the power
            # iteration leaves them what its uniform start still holds (~1e-9): the same hits
            # among the units the walk reaches, the best ten in the same order
            tol = push.config.tol
            top_a = [h.start for h in a.by_score() if h.score >= tol]
            top_b = [h.start for h in b.by_score() if h.score >= tol]
            assert set(top_a) == set(top_b) and top_a[:10] == top_b[:10], ex.query
            if a.mode == "local":  # (a question under the paper's .27 falls back to PageRank)
                local += 1
                x_a, x_b = _session(push, ex.query)[0], _session(power, ex.query)[0]
                assert np.abs(x_a - x_b).max() < push.config.tol, ex.query
    assert local >= 10


def test_push_trace_and_parking(alice_text):
    q = "Who stole the tarts?"
    exact = MixPRIndex.from_texts(alice_text, preset="paper", solver="push", push_threshold=0.0)
    parked = MixPRIndex.from_texts(alice_text, preset="paper", solver="push", push_threshold=1e-6)
    ra, rb = _walk_record(exact.search(q)), _walk_record(parked.search(q))
    assert set(ra) == {"stage", "solver", "steps", "residual", "parked", "read"}
    assert ra["parked"] == 0 and ra["residual"] < exact.config.tol
    assert 0 < rb["parked"] <= rb["residual"] < 0.01  # an L1 bound of what the scores lack
    assert rb["read"] < ra["read"]


def test_push_reads_what_the_walk_reaches_not_the_graph():
    # Hash-Hop lines: a chain's links are joined in the thresholded graph, chains are not; 4x
    # the chains (and units) reads the same entries, where the power iteration reads 4x
    read, nnz = [], []
    for n_chains in (100, 400):
        text, chains, where = hashhop(n_chains, seed=3)
        index = MixPRIndex.from_texts(text, preset="paper", solver="push")
        nnz.append(index._state.graph.nnz)
        recs = []
        for c, chain in enumerate(chains[:10]):
            res = index.search(f"'{chain[0]}' = ?", k=20)
            recs.append(_walk_record(res))
            got = {h.index for h in res.hits}
            assert all(where[(c, i)] in got for i in range(6))
        assert all(r["solver"] == "push" and r["residual"] < 1e-6 for r in recs)
        read.append(np.median([r["read"] for r in recs]))
    assert nnz[1] >= 3.5 * nnz[0]
    assert read[1] <= 1.2 * read[0]


def test_push_on_a_factored_graph_block_is_refused():
    index = MixPRIndex.from_texts(sample_text("alice")[:5000])
    st = index._state
    scorer = st.scorer()
    sid = scorer.new_session()
    scorer.open(sid, None)
    with pytest.raises(ValueError, match="graph='threshold'"):
        st.block.graph_push_walk(sid, "weights", 1.0, 0.6, 1e-6, 18, 0.0)
