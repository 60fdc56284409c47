"""MixPR's walk at any corpus size (issue 36): the stopping rule does not loosen with the corpus,
forward push equals networkx's PageRank on the factored graph, its cost follows the mass it
moves, it works through shards, and line-structured text keeps a line per unit."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.io import sample_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.lines import line_units, looks_line_structured
from longctx.mixpr.push import gather, sum_sparse
from longctx.selection import SparseScores


def _walk_record(result) -> dict:
    """The walk's own record in a MixPR result's trace (after the route record)."""
    return next(t for t in result.trace if t.get("stage") == "walk")


def hashhop(n_chains: int, seed: int = 0, hops: int = 6):
    """Shuffled lines ``'<h_i>' = '<h_i+1>'`` of ``n_chains`` chains: ``(text, chains, line
    of each link)``."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz0123456789"))
    h = ["".join(rng.choice(letters, 16)) for _ in range(n_chains * (hops + 1))]
    chains = [h[c * (hops + 1) : (c + 1) * (hops + 1)] for c in range(n_chains)]
    links = [(c, i) for c in range(n_chains) for i in range(hops)]
    order = rng.permutation(len(links))
    lines = [None] * len(links)
    where = {}
    for pos, j in enumerate(order.tolist()):
        c, i = links[j]
        lines[pos] = f"'{chains[c][i]}' = '{chains[c][i + 1]}'"
        where[(c, i)] = pos
    return "\n".join(lines) + "\n", chains, where


def hops_found(index, chains, where, k=100):
    """Share of the chains whose every hop's line is among the ``k`` units, and the traces."""
    st = index._state
    found, traces = [], []
    for c, chain in enumerate(chains[:20]):
        res = index.search(f"'{chain[0]}' = ?", k=k)
        traces.append(_walk_record(res))
        got = {h.index for h in res.hits}
        found.append(all(where[(c, i)] in got for i in range(6)))
    assert st.n_units == len(where)  # one line, one unit
    return float(np.mean(found)), traces


@pytest.mark.parametrize("solver", ["push", "power"])
def test_walk_depth_does_not_shrink_with_the_corpus(solver):
    # networkx's rule ||x_t - x_{t-1}||_1 < n * tol stopped after ~4 steps at 1,200 units
    # (hop 6 lost); the rule on the probability vector itself walks as deep at 4x the units
    steps = []
    for n_chains in (50, 200):
        text, chains, where = hashhop(n_chains)
        index = MixPRIndex.from_texts(text, solver=solver)
        share, traces = hops_found(index, chains, where)
        assert share == 1.0, (solver, n_chains)
        assert all(t["solver"] == solver and t["residual"] < 1e-6 for t in traces)
        steps.append(sorted({t["steps"] for t in traces}))
    assert steps[0] == steps[1]
    assert min(steps[1]) >= 6


def test_push_cost_follows_the_mass_not_the_corpus():
    read = []
    for n_chains in (100, 400):
        text, chains, _ = hashhop(n_chains, seed=1)
        index = MixPRIndex.from_texts(text)
        read.append(
            np.median([_walk_record(index.search(f"'{c[0]}' = ?"))["read"] for c in chains])
        )
    assert read[1] <= 1.2 * read[0]  # 4x the units, the same entries read


def _walk(index, query):
    """The walk's probabilities and its restart, from the scoring session."""
    st = index._state
    scorer = st.scorer()
    sid = scorer.new_session()
    scorer.open(sid, None)
    assert scorer.score(sid, query, "local", None, None)[0] == "local"
    s = st.block._s(sid)
    x = s["x"].dense() if isinstance(s["x"], SparseScores) else s["x"].copy()
    w = st.block._restart(s)
    return x, w / w.sum()


@pytest.mark.parametrize("solver", ["push", "power"])
@pytest.mark.parametrize("query", ["What was in the bottle marked DRINK ME?", "the White Rabbit"])
def test_walk_matches_networkx_on_the_factored_graph(solver, query):
    text = sample_text("alice")[:40000]
    cfg = dict(lexical_weight=0.0, tol=1e-13, max_iter=1000, push_threshold=0.0)
    index = MixPRIndex.from_texts(text, solver=solver, **cfg)
    x, p = _walk(index, query)
    g = index._state.graph
    E = g.E.toarray()
    S = (E * g.term_weights) @ E.T
    G = nx.from_numpy_array(S, create_using=nx.DiGraph)
    pers = {i: float(v) for i, v in enumerate(p)}
    ref = nx.pagerank(G, alpha=1 - index.config.alpha_local, personalization=pers, tol=1e-15,
                      max_iter=10_000, weight="weight")  # fmt: skip
    ref = np.array([ref[i] for i in range(len(x))])
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-10)


def test_push_threshold_parks_common_terms_and_keeps_the_ranking():
    text = sample_text("alice")
    q = "Who stole the tarts?"
    rule = {"push_df_power": 1.0}  # Andersen et al.'s rule at every level
    exact = MixPRIndex.from_texts(text, push_threshold=0.0, **rule).search(q, k=20)
    parked = MixPRIndex.from_texts(text, push_threshold=1e-6, **rule).search(q, k=20)
    assert _walk_record(parked)["parked"] > 0 and _walk_record(exact)["parked"] == 0
    assert _walk_record(parked)["read"] < _walk_record(exact)["read"]
    assert _walk_record(parked)["residual"] < 0.01  # an L1 bound of what the ranking lost
    top_a = {h.start for h in exact.by_score()[:10]}
    top_b = {h.start for h in parked.by_score()[:10]}
    assert len(top_a & top_b) >= 9


@pytest.mark.parametrize(
    "q", ["Who stole the tarts?", "What did the Mock Turtle sing about?", "Alice and the Queen"]
)
def test_push_df_power_reads_less_and_keeps_the_top_20(q):
    """The stricter rule after the first level (``push_df_power``, default 1.5) parks the
    common terms' thin mass: fewer entries of ``E`` read than with ``1.0``, the same first
    level (the restart's own terms), the same top 20 in the same order, scores within the
    residual it reports; ``push_threshold=0`` stays the exact series whatever the power."""
    text = sample_text("alice")
    old = MixPRIndex.from_texts(text, push_df_power=1.0).search(q, k=20, mode="local")
    new = MixPRIndex.from_texts(text).search(q, k=20, mode="local")
    assert MixPRIndex.from_texts(text).config.push_df_power == 1.5
    w_old, w_new = _walk_record(old), _walk_record(new)
    assert w_new["read"] < w_old["read"]
    assert w_new["parked"] > w_old["parked"]
    assert [h.start for h in new.by_score()] == [h.start for h in old.by_score()]
    diff = max(abs(a.score - b.score) for a, b in zip(new.hits, old.hits))
    assert 0 < diff < w_new["residual"]
    exact = [
        MixPRIndex.from_texts(text, push_threshold=0.0, push_df_power=p).search(q, k=20)
        for p in (1.0, 2.0)
    ]
    assert [h.score for h in exact[0].hits] == [h.score for h in exact[1].hits]


def test_first_level_keeps_the_plain_rule_for_the_query_terms_only(monkeypatch):
    """At the first level the query's own terms keep ``push_threshold * df``; the restart
    units' other terms take the stricter rule: fewer terms pushed at the first level than
    when the whole first level keeps the plain rule, the query's own among them, the same
    top 10."""
    import longctx.mixpr.push as push
    import longctx.mixpr.scoring as scoring
    from longctx.mixpr.push import _members

    assert _members(np.array([1, 4, 9]), np.array([4, 9, 12])).tolist() == [False, True, True]
    assert not _members(np.array([3]), np.zeros(0, np.int64)).any()
    index = MixPRIndex.from_texts(sample_text("alice"))
    q = "Why was the Queen angry with the Knave of Hearts?"
    first = []
    real_map = scoring.LocalBlocks.map

    def spy(self, method, *args):  # the terms of each walk's first push
        if method == "push_begin":
            first.append(None)
        elif method == "push_step" and first[-1] is None:
            first[-1] = np.asarray(args[1])
        return real_map(self, method, *args)

    monkeypatch.setattr(scoring.LocalBlocks, "map", spy)
    own = index.search(q, k=10, mode="local")
    with monkeypatch.context() as m:  # no query terms given: the whole first level is plain
        m.setattr(scoring, "push_walk", lambda *a: push.push_walk(*a[:5]))
        plain = index.search(q, k=10, mode="local")
    strict, loose = first
    assert len(strict) < len(loose) and set(strict.tolist()) <= set(loose.tolist())
    by_column = index.terms.terms()
    words = [by_column[j] for j in strict.tolist()]
    assert {"queen", "knave", "heart"} <= set(words)  # the query's own terms (stemmed)
    assert {h.start for h in own.hits} == {h.start for h in plain.hits}


def test_push_df_power_is_checked():
    for bad in (0.5, 4.5, float("nan")):
        with pytest.raises(ValueError, match="push_df_power"):
            MixPRIndex.from_texts("Alice met the Queen.", push_df_power=bad)
    with pytest.raises(TypeError, match="push_df_power"):
        MixPRIndex.from_texts("Alice met the Queen.", push_df_power="1.5")


def test_push_through_shards_equals_one_index():
    text, chains, _ = hashhop(60, seed=2)
    lines = text.splitlines(keepends=True)
    docs = ["".join(lines[i : i + 40]) for i in range(0, len(lines), 40)]
    one = MixPRIndex.from_texts(docs)
    sharded = ShardedMixPRIndex.from_texts(docs, shards=3)
    for chain in chains[:10]:
        q = f"'{chain[0]}' = ?"
        a, b = one.search(q, k=10), sharded.search(q, k=10)
        assert [(h.source, h.start) for h in a.hits] == [(h.source, h.start) for h in b.hits]
        np.testing.assert_allclose([h.score for h in a.hits], [h.score for h in b.hits], atol=1e-9)
        assert (
            _walk_record(b)["solver"] == "push"
            and _walk_record(b)["steps"] == _walk_record(a)["steps"]
        )


@pytest.mark.parametrize("compiled", [True, False])
def test_gather_and_sum_sparse(compiled, monkeypatch):
    if not compiled:  # the numpy gather, for a scipy without its compiled row gather
        monkeypatch.setattr("longctx.mixpr.push.csr_row_index", None)
    indptr = np.array([0, 2, 2, 5])
    indices = np.array([1, 3, 0, 1, 2])
    data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    idx, val = gather(indptr, indices, data, np.array([2, 0, 1]), np.array([10.0, 1.0, 7.0]))
    assert idx.tolist() == [0, 1, 2, 1, 3]
    assert val.tolist() == [30.0, 40.0, 50.0, 1.0, 2.0]
    u, v = sum_sparse(idx, val)
    assert u.tolist() == [0, 1, 2, 3] and v.tolist() == [30.0, 41.0, 50.0, 2.0]
    u2, v2 = sum_sparse(idx, val, size=5)  # by a dense count: the same sums
    assert u2.tolist() == u.tolist() and v2.tolist() == v.tolist()


# -- units that follow the text's lines ------------------------------------------------------
RECORDS = {
    "hash": hashhop(5)[0],
    "log": "".join(
        f"2024-05-0{i % 9 + 1} 12:00:{i:02d} INFO worker-{i} started job {i * 7}\n"
        for i in range(30)
    ),
    "kv": "".join(f"key_{i} = value number {i}\n" for i in range(30)),
    "csv": "id,name,city\n" + "".join(f"{i},Name {i},City {i % 4}\n" for i in range(30)),
}


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_records_keep_a_line_per_unit(kind):
    text = RECORDS[kind]
    assert looks_line_structured(text)
    index = MixPRIndex.from_texts([text, "One more document, in prose."])
    units = [u.text for u in index.units() if u.source == 0]
    assert units == [line.strip() for line in text.splitlines() if line.strip()]
    packed = MixPRIndex.from_texts(text, split_lines=False)  # the override: today's units
    assert packed.n_units < len(units)


def test_prose_keeps_todays_units():
    alice = sample_text("alice")
    assert not looks_line_structured(alice)
    assert not looks_line_structured("one paragraph of prose, " * 50)
    a = MixPRIndex.from_texts(alice)
    b = MixPRIndex.from_texts(alice, split_lines=False)
    assert [(u.start, u.end) for u in a.units()] == [(u.start, u.end) for u in b.units()]


def test_line_units_cut_long_lines_and_skip_blank_ones():
    text = "  a = b  \n\n" + " ".join(["word"] * 10) + "\n"
    spans = line_units(text, max_words=4)
    got = [text[a:b] for a, b in spans]
    assert got[0] == "a = b"
    assert all(len(g.split()) <= 4 for g in got[1:]) and sum(len(g.split()) for g in got) == 13
