"""The query keeps its vectors sparse (the units the walk reached, :class:`SparseScores`) and
gives the very results of the dense path it replaced: the golden results of
``tests/fixtures/mixpr_query_golden`` (written by the dense path, see its ``make.py``) on Alice
split into chapters and on War and Peace, with and without filters, top k, token budgets,
unique texts, whole documents, the paper preset, the power iteration and hybrid mode."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from longctx.selection import SparseScores, select_distinct, select_top

GOLDEN = Path(__file__).parent / "fixtures" / "mixpr_query_golden"
sys.path.insert(0, str(GOLDEN))
import make  # noqa: E402  (the golden cases' questions and corpus)


def _same_hits(got, want, where):
    assert len(got) == len(want), where
    for g, w in zip(got, want):
        assert g[:4] == w[:4], where
        assert abs(g[4] - w[4]) <= 1e-12, (where, g, w)


@pytest.fixture(scope="module")
def alice_golden():
    return json.loads((GOLDEN / "alice.json").read_text())


@pytest.mark.parametrize("path", ["default", "sparse"])
def test_alice_results_equal_the_dense_path(alice_golden, monkeypatch, path):
    if path == "sparse":
        _force(monkeypatch, path)
    alice_now = make.alice_cases()
    assert alice_now.keys() == alice_golden.keys()
    for key, want in alice_golden.items():
        got = alice_now[key]
        assert got["mode"] == want["mode"], key
        if "scores" in want:
            np.testing.assert_allclose(got["scores"], want["scores"], rtol=0, atol=1e-12)
        else:
            _same_hits(got["hits"], want["hits"], key)


@pytest.mark.parametrize("path", ["default", "sparse"])
def test_war_and_peace_results_equal_the_dense_path(shared_data, monkeypatch, path):
    if path == "sparse":
        _force(monkeypatch, path)
    want = json.loads((GOLDEN / "war_and_peace.json").read_text())
    got = make.wp_cases(shared_data)
    assert got.keys() == want.keys()
    for key in want:
        if key == "n_docs":
            assert got[key] == want[key]
            continue
        assert got[key]["mode"] == want[key]["mode"], key
        _same_hits(got[key]["hits"], want[key]["hits"], key)


def _force(monkeypatch, path: str):
    """Make the query's vectors ``"dense"`` (as before they were kept sparse: the walk's
    settled mass and the scores are ``(n_units,)`` arrays) or ``"sparse"`` whatever share of
    the units the walk reached (by default a walk whose result holds more than 1/4 of them
    goes dense, as most of Alice's do)."""
    import longctx.mixpr.push as push
    import longctx.mixpr.scoring as scoring

    share = 1 << 60 if path == "dense" else 1e-9
    for name in ("COUNT_SHARE", "RESULT_SHARE", "STEP_SHARE"):
        monkeypatch.setattr(push, name, share)
    monkeypatch.setattr(scoring, "RESULT_SHARE", share)


CASES = [
    {"k": 10},
    {"k": 100000},
    {"k": 50, "filters": {"even": True}},
    {"k": 20, "filters": {"chapter": 3}},
    {"k": 30, "unique_texts": True},
    {"k": 30, "unique_texts": True, "filters": {"even": True}},
    {"token_budget": 200},
    {"k": 2, "whole_documents": True},
]


@pytest.mark.parametrize("params", [{}, {"lexical_weight": 0.0}, {"literal_query_weights": True}])
def test_sparse_path_equals_the_dense_path_in_this_environment(monkeypatch, params):
    """The same queries with the vectors kept dense (the old path, by the same code) and
    sparse: the same hits, in the same order, the same scores (this run's libraries, so the
    check does not depend on the golden files' vocabulary)."""
    from longctx.io import sample_text
    from longctx.mixpr import MixPRIndex

    docs = make.chapters(sample_text("alice"))
    md = [{"chapter": i, "even": i % 2 == 0} for i in range(len(docs))]
    index = MixPRIndex.from_texts(docs, metadatas=md, **params)
    qs = make.QUESTIONS

    def run():
        return {
            (qi, ci): make.hits(index.search(q, mode="local", **kw))
            for qi, q in enumerate(qs)
            for ci, kw in enumerate(CASES)
        }

    with monkeypatch.context() as m:
        _force(m, "sparse")
        sparse = run()
    with monkeypatch.context() as m:
        _force(m, "dense")
        dense = run()
    for key, want in dense.items():
        _same_hits(sparse[key], want, key)
    assert sum(len(v) for v in sparse.values()) > 1000


def _random_sparse(rng, n, nnz):
    idx = np.sort(rng.choice(n, nnz, replace=False))
    vals = rng.integers(0, 4, nnz).astype(np.float64) / 4  # many ties, some zeros
    return SparseScores(n, idx, vals)


def test_sparse_top_k_equals_dense_top_k():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 60))
        s = _random_sparse(rng, n, int(rng.integers(0, n + 1)))
        dense = s.dense()
        for k in (1, 2, 5, n, n + 3):
            np.testing.assert_array_equal(select_top(s, k=k), select_top(dense, k=k))
        allowed = np.flatnonzero(rng.random(n) < 0.5)
        sub = s.restrict(allowed)
        assert len(sub) == len(allowed)
        np.testing.assert_array_equal(sub.dense(), dense[allowed])
        for k in (1, 3, len(allowed) + 1):
            np.testing.assert_array_equal(select_top(sub, k=k), select_top(dense[allowed], k=k))
        key = rng.integers(0, 5, n).tolist().__getitem__
        for k in (1, 4, n + 1):
            np.testing.assert_array_equal(
                select_distinct(s, key, k=k), select_distinct(dense, key, k=k)
            )
        counts = rng.integers(1, 9, n)
        for budget in (1, 12, 40, 1000):
            np.testing.assert_array_equal(
                select_top(s, token_budget=budget, token_counts=counts),
                select_top(dense, token_budget=budget, token_counts=counts),
            )
            c = counts[allowed]
            np.testing.assert_array_equal(
                select_top(sub, token_budget=budget, token_counts=c),
                select_top(dense[allowed], token_budget=budget, token_counts=c),
            )


def test_sparse_scores_checks_its_arrays():
    with pytest.raises(ValueError, match="idx"):
        SparseScores(3, np.array([2, 1]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="idx"):
        SparseScores(3, np.array([1, 3]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="vals"):
        SparseScores(3, np.array([1]), np.array([1.0, 2.0]))
    s = SparseScores(4, np.array([1, 3]), np.array([0.5, -1.0]))
    np.testing.assert_array_equal(s.at(np.array([0, 1, 3])), [0.0, 0.5, -1.0])
    # a negative score: the sparse top k is the dense one (the zeros rank above it)
    np.testing.assert_array_equal(select_top(s, k=3), select_top(s.dense(), k=3))
    counts = np.array([3, 1, 2, 1])
    np.testing.assert_array_equal(
        select_top(s, token_budget=4, token_counts=counts),
        select_top(s.dense(), token_budget=4, token_counts=counts),
    )
    with pytest.raises(ValueError, match="token_counts"):
        select_top(s, token_budget=4, token_counts=counts[:3])
    with pytest.raises(ValueError, match="token_counts"):
        select_top(SparseScores(4, [1], [1.0]), token_budget=4)


def test_sparse_budget_reads_the_zero_units_in_blocks():
    """A budget the walk's units fill is chosen among them; one they do not fill takes the
    units scoring 0 in their order, across the 4096-unit blocks."""
    n = 10_000
    s = SparseScores(n, np.array([5, 7000, 9000]), np.array([0.5, 0.9, 0.5]))
    counts = np.full(n, 10)
    np.testing.assert_array_equal(select_top(s, token_budget=25, token_counts=counts), [5, 7000])
    got = select_top(s, token_budget=10 * 5000, token_counts=counts)
    np.testing.assert_array_equal(
        got, select_top(s.dense(), token_budget=50000, token_counts=counts)
    )
    assert len(got) == 5000 and {5, 7000, 9000} <= set(got.tolist())


def test_search_touches_only_what_the_walk_reached(monkeypatch):
    """No ``(n_units,)`` array is made by a search without filters: every ``np.zeros``,
    ``np.flatnonzero`` and ``np.bincount`` of the query path is far below the unit count when
    the walk reaches a few units (a chain of units, each sharing one word with the next)."""
    from longctx.mixpr import MixPRIndex

    texts = [f"alpha{i}x alpha{i + 1}x" for i in range(3000)]
    texts[5] += " the needle zebra"
    index = MixPRIndex.from_texts(texts, chunk=False)
    index.search("needle zebra", k=10, mode="local")  # warm: the walk's row view, term sizes
    n = index.n_units
    sizes = []
    real_zeros, real_nz, real_count = np.zeros, np.flatnonzero, np.bincount

    def zeros(shape, *a, **kw):
        sizes.append(int(np.prod(shape)))
        return real_zeros(shape, *a, **kw)

    def flatnonzero(a):
        sizes.append(np.size(a))
        return real_nz(a)

    def bincount(x, weights=None, minlength=0):
        sizes.append(max(minlength, len(x)))
        return real_count(x, weights=weights, minlength=minlength)

    monkeypatch.setattr(np, "zeros", zeros)
    monkeypatch.setattr(np, "flatnonzero", flatnonzero)
    monkeypatch.setattr(np, "bincount", bincount)
    res = index.search("needle zebra", k=10, mode="local")
    monkeypatch.undo()
    assert len(res.hits) == 10 and 5 in [h.source for h in res.hits]
    assert res.trace[-1]["read"] < 1000
    assert sizes and max(sizes) < n // 10, (max(sizes), n)


@pytest.mark.parametrize(
    "kwargs", [{}, {"min_df": 2, "max_df": 0.05}, {"min_df": 0.001}, {"max_features": 500}]
)
def test_query_term_filter_reads_the_vocabulary_as_kept_terms(alice_text, kwargs):
    """The query's terms are checked against the vocabulary's pruning one by one, as
    ``TermTable.kept_terms`` prunes every term."""
    from longctx.mixpr import MixPRIndex
    from longctx.mixpr.query import _query_term_filter

    table = MixPRIndex.from_texts(alice_text[:50000], vectorizer_kwargs=kwargs).terms
    keep = table.kept_terms()
    kept = _query_term_filter(table)
    if kept is None:
        np.testing.assert_array_equal(keep, table.df > 0)
    else:
        assert [kept(j) for j in range(len(keep))] == keep.tolist()


def test_fewest_left_is_the_least_count_among_the_units_not_taken():
    from longctx.selection import fewest_left

    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(2, 3000))
        counts = rng.integers(1, 50, n)
        by_count = np.argsort(counts, kind="stable")
        allowed = None if rng.random() < 0.5 else np.flatnonzero(rng.random(n) < 0.3)
        pool = np.arange(n) if allowed is None else allowed
        if len(pool) < 2:
            continue
        taken = np.sort(rng.choice(pool, int(rng.integers(1, len(pool))), replace=False))
        left = np.setdiff1d(pool, taken)
        assert fewest_left(counts, by_count, allowed, taken) == counts[left].min()
    with pytest.raises(ValueError, match="taken"):
        fewest_left(np.array([1, 2]), np.array([0, 1]), None, np.array([0, 1]))


@pytest.mark.parametrize("path", ["default", "sparse"])
def test_sharded_search_equals_one_index_on_either_path(monkeypatch, path):
    """The shards pick their candidates from sparse scores (and the fewest tokens left out
    from their units by token count) as one index picks its hits."""
    from longctx.corpus.shards.index import ShardedMixPRIndex
    from longctx.io import sample_text
    from longctx.mixpr import MixPRIndex

    if path == "sparse":
        _force(monkeypatch, path)
    docs = make.chapters(sample_text("alice"))
    md = [{"even": i % 2 == 0} for i in range(len(docs))]
    one = MixPRIndex.from_texts(docs, metadatas=md)
    sharded = ShardedMixPRIndex.from_texts(docs, metadatas=md, shards=3)
    for q in make.QUESTIONS[:4]:
        for kw in ({"k": 15}, {"token_budget": 300}, {"k": 15, "filters": {"even": True}},
                   {"token_budget": 250, "filters": {"even": False}}):  # fmt: skip
            a, b = one.search(q, mode="local", **kw), sharded.search(q, mode="local", **kw)
            assert [(h.source, h.start) for h in a.hits] == [(h.source, h.start) for h in b.hits]
            np.testing.assert_allclose(
                [h.score for h in a.hits], [h.score for h in b.hits], rtol=0, atol=1e-9
            )
