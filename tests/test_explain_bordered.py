"""``explain=True`` for the bordered walk (``personalization="query"``, the ``"paper"``
preset's: the restart on the query nodes of ``[[S, B], [B^T, Q]]``) and for the thresholded
graph (``graph="threshold"``): the parts are the terms of the walk's fixed point, checked
against networkx's PageRank of the bordered graph built by hand; a sharded index explains the
bordered walk as one index (1 and 3 shards), and a query routed local that falls back to
global by its PageRank."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from longctx.explain import explanation_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.query import query_weights
from tests.test_explain import ALICE, _sum_ok
from tests.test_mixpr_shards import QUERIES, build
from tests.test_mixpr_shards_explain import alice_docs, same_explanations  # noqa: F401

#: Two sentences: two query nodes (the last one the restart), linked by their cosine.
QUERY = "The white rabbit had a pocket watch. The rabbit with the pocket watch ran past Alice."
EXACT = dict(solver="power", tol=1e-14, max_iter=10000)


def _unit_of(index, h) -> int:
    return next(u for u in range(index.n_units)
                if index.starts[u] == h.start and index.unit_source[u] == h.source)  # fmt: skip


def _by_hand(index, S):
    """networkx's PageRank of the bordered graph ``[[S, B], [B^T, Q]]`` of :data:`QUERY` (``B``
    the walk's query edges, ``Q`` the query chunks' cosines over the threshold, the restart
    ``p_q`` on the query nodes): ``(x over units and query nodes, B, D)``."""
    st = index._state
    keep: dict = {}
    scores, used, _, _ = index._score(st, QUERY, "local", None, None, [], keep=keep)
    assert used == "local"
    s = keep["session"]
    B = s["B"].toarray()
    p_q = np.asarray(s["p_query"])
    n, m = B.shape
    assert m == 2 and p_q.tolist() == [0.0, 1.0]
    cfg = index.config
    chunks = [QUERY[a:b] for a, b in cfg.chunk(QUERY)]
    Q = query_weights(st.table, chunks, with_q=True)[1]
    Q = np.where(Q >= cfg.effective_query_threshold, Q, 0.0)
    assert Q[0, 1] > 0  # the two query nodes are linked
    G = np.block([[S, B], [B.T, Q]])
    a = cfg.alpha_local
    pr = nx.pagerank(nx.from_numpy_array(G, create_using=nx.DiGraph), alpha=1 - a,
                     personalization={n + q: p_q[q] for q in range(m)}, tol=1e-15,
                     max_iter=10000, weight="weight")  # fmt: skip
    x = np.array([pr[i] for i in range(n + m)])
    np.testing.assert_allclose(np.asarray(scores), x[:n], atol=1e-9)  # the walk is this one
    return x, B, G.sum(axis=0)


@pytest.mark.parametrize("graph", ["factored", "threshold"])
def test_bordered_parts_are_the_fixed_point_terms_by_networkx(graph):
    """Every hit: ``question`` is ``(1 - a) sum_q B_iq x_q / D_q`` and ``walk`` is ``(1 - a)
    sum_j S_ij x_j / D_j`` of networkx's fixed point (the query nodes' masses, which the walk
    never keeps, included), ``unsettled`` ~0 at a tolerance of 1e-14; the top seed's and top
    term's masses by hand."""
    params = dict(personalization="query", lexical_weight=0.0, walk="pagerank", **EXACT)
    if graph == "threshold":
        params.update(preset="paper", **EXACT)  # the paper preset: thresholded and bordered
        params.pop("personalization"), params.pop("walk")
    index = MixPRIndex.from_texts(ALICE, chunk=False, **params)
    assert index.config.personalization == "query" and index.config.graph == graph
    g = index.graph
    E = index.terms.embeddings().toarray()
    if graph == "threshold":
        S = g.S.toarray()
    else:
        S = E @ np.diag(np.asarray(index.graph.term_weights)) @ E.T
    x, B, D = _by_hand(index, S)
    n = index.n_units
    a = index.config.alpha_local
    v = x / D
    r = index.search(QUERY, k=n, mode="local", explain=True)
    assert len(r.hits) == n
    terms = index.terms.terms()
    seen = 0
    for h in r.hits:
        i, e = _unit_of(index, h), h.explanation
        _sum_ok(e)
        assert set(e["parts"]) == {"question", "walk", "unsettled", "lexical", "dense"}
        assert math.isclose(e["parts"]["question"], (1 - a) * B[i] @ v[n:], abs_tol=1e-12)
        assert math.isclose(e["parts"]["walk"], (1 - a) * S[i] @ v[:n], abs_tol=1e-12)
        assert abs(e["parts"]["unsettled"]) < 1e-11
        for seed in e["seeds"]:  # units with a query edge, their one step to the hit
            j = seed["unit"]
            assert j != i and B[j].any()
            assert math.isclose(seed["score"], (1 - a) * S[i, j] * v[j], rel_tol=1e-9)
        if e["terms"]:  # factored: per term (1 - a) E_it W_t sum_j E_jt x_j / D_j
            t = terms.index(e["terms"][0]["term"])
            W = np.asarray(index.graph.term_weights)
            by_hand = (1 - a) * E[i, t] * W[t] * float(E[:, t] @ v[:n])
            assert math.isclose(e["terms"][0]["score"], by_hand, rel_tol=1e-9)
        seen += bool(e["seeds"])
        assert ("question" in explanation_text(e)) == (e["shares"]["question"] >= 0.001)
    assert seen >= 2
    if graph == "threshold":
        assert all(h.explanation["terms"] == [] for h in r.hits)  # S's edges: whole cosines


def test_paper_preset_explains_its_local_walk_with_the_default_solver():
    """``preset="paper"`` as a user builds it (the power iteration at its own tolerance, and
    with ``solver="push"``): parts add up, ``unsettled`` within the walk's residual, the same
    hits and scores as without explanations."""
    for solver in ("power", "push"):
        index = MixPRIndex.from_texts(ALICE, chunk=False, preset="paper", solver=solver)
        plain = index.search(QUERY, k=4, mode="local")
        r = index.search(QUERY, k=4, mode="local", explain=True)
        assert [(h.source, h.score) for h in r.hits] == [(h.source, h.score) for h in plain.hits]
        residual = r.trace[-1]["residual"]
        top = max(h.score for h in r.hits)
        assert top > 0
        for h in r.hits:
            assert abs(math.fsum(h.explanation["parts"].values()) - h.score) <= 1e-12
            assert abs(h.explanation["parts"]["unsettled"]) * top <= residual + 1e-12
        r = index.search("summarize", k=2, mode="global", explain=True)  # global: its PageRank
        assert all(h.explanation["walk"] == "global" for h in r.hits)


def test_thresholded_graph_restarting_on_units_is_explained():
    index = MixPRIndex.from_texts(ALICE, chunk=False, graph="threshold", walk="pagerank", **EXACT)
    r = index.search("the rabbit and the pocket watch", k=4, mode="local", explain=True)
    for h in r.hits:
        e = h.explanation
        _sum_ok(e)
        assert abs(e["parts"]["unsettled"]) < 1e-11 and "restart_lexical" in e["parts"]
    assert any(h.explanation["seeds"] for h in r.hits)


@pytest.mark.parametrize("shards", [1, 3])
def test_sharded_bordered_walk_explains_as_one_index(alice_docs, shards):  # noqa: F811
    """``personalization="query"`` over 1 and 3 shards: the explanations of one index (parts,
    terms, seeds within 1e-9) for local queries, and for a query routed local that reaches no
    unit and falls back to global (its PageRank); it was a NotImplementedError (session 18)."""
    one, sharded = build(alice_docs, shards, personalization="query")
    # QUERY: two query nodes, linked
    assert same_explanations(one, sharded, queries=[*QUERIES[:3], QUERY], mode="local") > 10
    r = sharded.search("zzzz qqqq", k=3, mode="local", explain=True)
    assert r.mode == "global-fallback" and r.hits
    assert all(h.explanation["parts"] == {"pagerank": h.score} for h in r.hits)
    same_explanations(one, sharded, queries=["zzzz qqqq"], sizes=({"k": 3},),
                      filters_list=(None,), mode="local")  # fmt: skip
    e = sharded.search(QUERIES[0], k=3, mode="local", explain=True).hits[0].explanation
    assert e["parts"]["question"] > 0 and "restart_lexical" not in e["parts"]
    # an app's seeds: their own walk restarts on the units (it leaves its weights in the
    # session), MixPR's walk still on the query nodes
    seeds = [("d2", 100, 900, 1.0), ("d5", None, None, 0.5)]
    same_explanations(one, sharded, queries=QUERIES[:2], sizes=({"k": 7},),
                      filters_list=(None,), mode="local", seeds=seeds)  # fmt: skip
    r = one.search(QUERIES[0], k=7, mode="local", seeds=seeds, explain=True)
    assert any(h.explanation["parts"]["seeds_walk"] > 0 for h in r.hits)
    for h in r.hits:  # the walk's terms: nothing left but its tolerance
        assert (
            abs(h.explanation["parts"]["unsettled"]) < 1e-5 and "question" in h.explanation["parts"]
        )
