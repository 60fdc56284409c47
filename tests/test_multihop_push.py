"""The multi-hop walk by forward push (issue 36): the same fixed point as networkx's PageRank on
the dense unit / phrase graph and as the power iteration, the current iteration's rankings on
hotpotqa-corpus, a cost set by the mass it moves (the same reads at 4x the corpus), and its
record in a search result's trace."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRIndex
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.multihop import MultiHopRanker, MultiHopWalk
from longctx.mixpr.push import COUNT_SHARE, sum_sparse

from .test_mixpr_multihop import QUESTION, UNITS

EXACT = {"tol": 1e-13, "max_iter": 10_000}


def _restart(ranker: MultiHopRanker, first):
    """The restart of :meth:`MultiHopRanker._scores` for ``QUESTION``: ``(r_u, r_p, d_u)``,
    caught on its way to the walk."""
    got = []
    orig = ranker._iterate

    def catch(r_u, r_p, d_u, trace=None):
        got.append((r_u.copy(), r_p.copy(), d_u.copy()))
        return orig(r_u, r_p, d_u, trace)

    ranker._iterate = catch
    ranker.scores(QUESTION, first)
    del ranker._iterate
    return got[0]


def _networkx_mass(ranker: MultiHopRanker, r_u, r_p, d_u) -> np.ndarray:
    """The walk's unit mass from networkx ``pagerank`` on the dense graph: unit, linking
    phrase, term and one-unit phrase nodes, the edges of the walk's matrices."""
    n = ranker.n_units
    G = nx.DiGraph()
    G.add_nodes_from(("u", i) for i in range(n))
    sides = [("p", ranker._phr, ranker._to_p)]
    if ranker._trm is not None:
        sides.append(("t", ranker._trm, ranker._to_t))
    for name, (up, down), share in sides:
        coo = up.rows.tocoo()
        for i, j, v in zip(coo.row, coo.col, coo.data):
            G.add_edge(("u", int(i)), (name, int(j)), weight=float(v * share[i]))
        coo = down.rows.tocoo()
        for j, i, v in zip(coo.row, coo.col, coo.data):
            G.add_edge((name, int(j)), ("u", int(i)), weight=float(v))
    pers = {("u", i): float(r_u[i]) for i in range(n)}
    pers.update({("p", j): float(v) for j, v in enumerate(r_p) if v})
    for i in np.flatnonzero(d_u):  # a phrase of one unit: a node with one edge to it
        G.add_edge(("s", int(i)), ("u", int(i)), weight=1.0)
        pers[("s", int(i))] = float(d_u[i])
    pr = nx.pagerank(G, alpha=1 - ranker.walk.alpha, personalization=pers, tol=1e-15,
                     max_iter=10_000, weight="weight")  # fmt: skip
    return np.array([pr[("u", i)] for i in range(n)])


@pytest.mark.parametrize("term_share", [0.0, 0.3])
def test_push_is_networkx_pagerank_on_the_dense_graph(term_share):
    E = MixPRConfig().vectorizer().fit_transform(UNITS) if term_share else None
    first = np.array([1.0, 0.0, 0.6, 0.5, 0.0])
    masses = {}
    for solver in ("push", "power"):
        walk = MultiHopWalk(solver=solver, term_share=term_share, push_threshold=0.0, **EXACT)
        ranker = MultiHopRanker.from_texts(UNITS, walk, E=E)
        r_u, r_p, d_u = _restart(ranker, first)
        assert d_u.any() and r_p.any() and r_u.any()  # every kind of seed is exercised
        trace = []
        masses[solver] = ranker._iterate(r_u, r_p, d_u, trace)
        assert trace[0]["solver"] == solver and trace[0]["residual"] < 1e-12
    expected = _networkx_mass(ranker, r_u, r_p, d_u)
    assert abs(expected.sum() - masses["push"][0].sum()) < 1e-12
    for solver, (mass, arrived) in masses.items():
        np.testing.assert_allclose(mass, expected, atol=1e-12, err_msg=solver)
        assert (arrived <= mass + 1e-15).all()
    np.testing.assert_allclose(masses["push"][1], masses["power"][1], atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 12), min_size=2, max_size=12),
    st.floats(0.1, 0.9),
    st.sampled_from([0.0, 1e-4, 1e-2]),
)
def test_push_and_power_share_the_fixed_point(picks, alpha, eps):
    # random corpora of passages naming each other; with a threshold the difference is
    # bounded by the residual the push reports
    names = [f"Name{chr(65 + i)} Person{chr(65 + i)}" for i in range(13)]
    units = [f"{names[i]}\n{names[i]} met {names[j]} and {names[(i + j) % 13]}."
             for i, j in zip(picks, picks[1:] + picks[:1])]  # fmt: skip
    first = np.linspace(1.0, 0.1, len(units))
    out = {}
    for solver in ("push", "power"):
        kw = {"push_threshold": eps} if solver == "push" else {}
        ranker = MultiHopRanker.from_texts(
            units, MultiHopWalk(solver=solver, alpha=alpha, max_df=1.0, **kw, **EXACT)
        )
        trace = []
        mass, _ = ranker._iterate(
            first / first.sum(), np.zeros(len(ranker._cols)), np.zeros(len(units)), trace
        )
        out[solver] = mass, trace[0]["residual"]
    bound = out["push"][1] / alpha + 1e-12
    assert np.abs(out["push"][0] - out["power"][0]).sum() <= bound


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 64).flatmap(
        lambda size: st.tuples(
            st.just(size),
            st.lists(
                st.tuples(st.integers(0, size - 1), st.sampled_from([0.0, 0.1, 1.0, 2.5, 1e-300])),
                max_size=3 * size,
            ),
        )
    )
)
def test_sum_sparse_sums_duplicates_in_entry_order(case):
    # the walks' one way to sum duplicates (the multi-hop push's position table went): both
    # paths give each index the sum of its entries added in their order, indices ascending
    size, entries = case
    idx = np.array([i for i, _ in entries], dtype=np.int64)
    val = np.array([v for _, v in entries])
    want = {}
    for i, v in entries:
        want[i] = want.get(i, 0.0) + v
    u, s = sum_sparse(idx, val)  # a sort of the entries
    assert u.dtype == np.int64 and np.all(np.diff(u) > 0)
    assert dict(zip(u.tolist(), s.tolist())) == want
    u2, s2 = sum_sparse(idx, val, size)  # a dense count when the entries are many
    assert np.all(np.diff(u2) > 0)
    if len(idx) * COUNT_SHARE > size:  # the dense count leaves out the indices summing to 0
        assert dict(zip(u2.tolist(), s2.tolist())) == {i: v for i, v in want.items() if v}
    else:
        assert u2.tolist() == u.tolist() and s2.tolist() == s.tolist()


def test_push_keeps_the_current_iterations_rankings_on_hotpotqa_corpus(shared_data):
    from longctx.eval.tasks import load_task

    corpus = load_task("hotpotqa-corpus", shared_data, 30)
    passages = list(corpus.passages)
    mix = MixPRIndex.from_texts(passages, chunk=False, walk="pagerank")
    current = MultiHopRanker.from_texts(passages, MultiHopWalk(solver="power", max_iter=15))
    graph, ext = current.graph, current.extractor
    push = MultiHopRanker(graph, MultiHopWalk(), extractor=ext)
    exact_push = MultiHopRanker(graph, MultiHopWalk(push_threshold=0.0, **EXACT), extractor=ext)
    exact = MultiHopRanker(graph, MultiHopWalk(solver="power", **EXACT), extractor=ext)
    for q in corpus.questions:
        first = mix.score(q.query, "local")[0]
        trace = []
        s = push.scores(q.query, first, trace=trace)
        assert trace[0]["residual"] < 1e-2 and trace[0]["steps"] < 20
        old = current.scores(q.query, first)
        top = np.argsort(-old, kind="stable")[:10]
        assert np.argsort(-s, kind="stable")[:10].tolist() == top.tolist(), q.query
        np.testing.assert_allclose(s, old, atol=1e-3)
        ref = exact.scores(q.query, first)
        np.testing.assert_allclose(exact_push.scores(q.query, first), ref, atol=1e-9)


def _chains(n_chains: int) -> tuple[list[str], list[tuple[str, int]]]:
    """Passages in chains of 4 by name (``Kalo Mire`` heads its passage and is named by the
    previous one; every name and word unique), every 10th from a town whose passages grow with
    the corpus: ``(passages, the first name of each chain and its passage)``."""
    syl = ["ka", "lo", "mi", "re", "su", "ta", "vo", "ne", "di", "ga", "po", "zu"]

    def word(k: int) -> str:  # k in base 12, as syllables: unique words
        out = ""
        for _ in range(5):
            out, k = syl[k % 12] + out, k // 12
        return out.capitalize()

    texts, heads = [], []
    for c in range(n_chains):
        chain = [f"{word(8 * c + 2 * i)} {word(8 * c + 2 * i + 1)}" for i in range(4)]
        heads.append((chain[0], len(texts)))
        for i, name in enumerate(chain):
            town = " from Greywater Harbour" if (4 * c + i) % 10 == 0 else ""
            nxt = f" {name} knew {chain[i + 1]}." if i + 1 < len(chain) else ""
            texts.append(f"{name}\n{name} was a writer{town}.{nxt}")
    return texts, heads


def test_push_reads_do_not_grow_with_the_corpus():
    reads, powers = [], []
    for n_chains in (150, 600):
        texts, heads = _chains(n_chains)
        ranker = MultiHopRanker.from_texts(texts, MultiHopWalk(max_df=1.0))
        assert ranker.graph.df.max() == len(texts) // 10  # the town, a node of the walk
        got = []
        for name, at in heads[:20]:
            trace = []
            s = ranker.scores(f"Who did {name} know?", trace=trace)
            got.append(trace[0]["read"])
            assert s[at] == s.max()  # the named passage first
        reads.append(float(np.median(got)))
        powers.append(ranker._phr[0].rows.nnz + ranker._phr[1].rows.nnz)
    assert powers[1] >= 3.5 * powers[0]  # the graph grew 4x
    assert reads[1] <= 1.2 * reads[0], reads  # the push read the same entries
    assert reads[1] < powers[1]  # not a pass over the graph


def test_search_trace_carries_the_multihop_record():
    index = MixPRIndex.from_texts(UNITS, chunk=False, walk="multihop")
    rec = [t for t in index.search(QUESTION, k=3).trace if t.get("stage") == "multihop"]
    assert len(rec) == 1 and rec[0]["solver"] == "push"
    assert rec[0]["residual"] < 1e-5 and rec[0]["steps"] >= 1 and rec[0]["read"] > 0
    power = MixPRIndex.from_texts(
        UNITS, chunk=False, walk="multihop", multihop={"solver": "power"}
    ).search(QUESTION, k=3)
    rec = [t for t in power.trace if t.get("stage") == "multihop"]
    assert rec[0]["solver"] == "power" and rec[0]["residual"] < 1e-6


def test_walk_settings_are_checked():
    with pytest.raises(ValueError, match="solver"):
        MultiHopWalk(solver="dense")
    with pytest.raises(ValueError, match="push_threshold"):
        MultiHopWalk(push_threshold=-1.0)
