"""The query path without scipy's small matrices gives the very values of the pipeline it
replaced (issue 46, the 1M-word query): the query's edges (:func:`query_edge_rows` against
the scipy products ``Et @ Eqt.T``, threshold, coverage, filter) and the push walk's driver
(:func:`longctx.mixpr.push.push_walk` against the loop that re-summed every parked term at
every level), bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import longctx.mixpr.scoring as scoring
from longctx.mixpr import MixPRIndex
from longctx.mixpr.push import (
    SMALL_SORT,
    _members,
    finish_walk,
    sort_order,
    sum_sparse,
    unique_positions,
)
from longctx.mixpr.query import (
    personalization,
    query_edge_rows,
    query_weights,
    reweight_query_terms,
)
from longctx.selection import union_positions
from tests._coverage import weigh_by_coverage

QUESTIONS = [
    "Who stole the tarts?",
    "What did the Caterpillar say to Alice about the mushroom?",
    # several query chunks, terms shared between them, one chunk of stop words
    "The Queen of Hearts made some tarts. The Knave of Hearts stole those tarts. "
    "The King asked the jury about the tarts and the Knave. And so on and so on. "
    "Alice grew larger in the court.",
    "zebra quasar",  # no unit holds a query term
]


@pytest.fixture(scope="module")
def alice(alice_text):
    return MixPRIndex.from_texts(alice_text)


def _query(index, query):
    """``(E by columns, terms, Eqt, p_query)`` as :meth:`Scorer.score` makes them."""
    st = index._state
    cfg = st.config
    qchunks = [query[a:b] for a, b in cfg.chunk(query)] or [query]
    Eq, _ = query_weights(st.table, qchunks, with_q=False)
    terms = np.unique(Eq.indices)
    Eqt = sp.csr_array(
        (Eq.data, np.searchsorted(terms, Eq.indices), Eq.indptr), shape=(len(qchunks), len(terms))
    )
    return st.scorer().backend.blocks[0]._cols(), terms, Eqt, personalization(len(qchunks), qchunks)


def _scipy_edges(E, terms, Eqt, p_query, thr, power, keep, table, literal):
    """The query edges as scipy's products made them before (``edges.py`` at 7fdadca)."""
    Et = sp.csc_array(E[:, terms])
    rows = np.unique(Et.indices).astype(np.int64)
    Et = sp.csc_array(
        (Et.data, np.searchsorted(rows, Et.indices), Et.indptr), shape=(len(rows), len(terms))
    )
    if literal:
        Et = reweight_query_terms(table, Et, terms)
    B = sp.csr_array(Et @ sp.csr_array(Eqt).T)
    lexical = np.asarray(B @ p_query).ravel()
    B.data[B.data < thr] = 0.0
    B.eliminate_zeros()
    if power and B.nnz:
        B = weigh_by_coverage(B, Et, Eqt, power)
    if keep is not None and B.nnz:
        B = sp.csr_array(B.multiply(keep(rows)[:, None].astype(np.float64)))
        B.eliminate_zeros()
    return rows, B, lexical


@pytest.mark.parametrize("query", QUESTIONS)
@pytest.mark.parametrize(
    "thr, power, filtered, literal",
    [(0.0, 0.0, False, False), (0.02, 4.0, False, False), (0.1, 4.0, True, False),
     (0.05, 2.0, False, True), (0.0, 4.0, True, True)],
)  # fmt: skip
def test_query_edges_equal_the_scipy_products(alice, query, thr, power, filtered, literal):
    E, terms, Eqt, p_query = _query(alice, query)
    keep = (lambda units: units % 3 != 0) if filtered else None
    table = alice._state.table
    reweight = (lambda Et, t: reweight_query_terms(table, Et, t)) if literal else None
    rows, B, lex, w = query_edge_rows(
        E, terms, Eqt, p_query, thr, power, keep=keep, reweight=reweight, lexical=True
    )
    want_rows, want_B, want_lex = _scipy_edges(
        E, terms, Eqt, p_query, thr, power, keep, table, literal
    )
    np.testing.assert_array_equal(rows, want_rows)
    assert B.shape == want_B.shape
    np.testing.assert_array_equal(B.indptr, want_B.indptr)
    np.testing.assert_array_equal(B.indices, want_B.indices)
    np.testing.assert_array_equal(B.data, want_B.data)  # bit for bit
    np.testing.assert_array_equal(lex, want_lex)
    np.testing.assert_array_equal(w, want_B @ p_query)
    assert float(B.data.sum()) == float(want_B.sum())
    assert (B.data != 0).all()
    assert B.data.dtype == np.float64 and w.dtype == np.float64 and lex.dtype == np.float64
    if query != "zebra quasar":
        assert B.nnz > 0 or thr > 0
    assert query_edge_rows(E, terms, Eqt, p_query, thr, power, lexical=False)[2] is None


def test_several_query_chunks_are_tested(alice):
    """The long question is several query chunks sharing terms (the ``m > 1`` branch)."""
    _, terms, Eqt, _ = _query(alice, QUESTIONS[2])
    assert Eqt.shape[0] >= 3
    shared = np.bincount(Eqt.indices, minlength=len(terms))
    assert shared.max() >= 2


def test_unique_positions_as_np_unique():
    """A few ascending runs (merged), many runs and random entries past ``SMALL_SORT`` (the
    quicksort): ``np.unique``'s units and positions."""
    rng = np.random.default_rng(0)
    big = SMALL_SORT + 100
    cases = [rng.integers(0, 1000, 20), np.zeros(0, np.int64), rng.integers(0, 10**6, big)]
    cases += [np.concatenate([np.sort(rng.integers(0, 10**6, big // k)) for _ in range(k)])
              for k in (2, 30)]  # fmt: skip
    for idx in cases:
        u, pos = unique_positions(idx)
        want_u, want_pos = np.unique(idx, return_inverse=True)
        np.testing.assert_array_equal(u, want_u)
        np.testing.assert_array_equal(pos, want_pos)
        assert u.dtype == np.int64
    assert sort_order(cases[2]) is not None and sort_order(np.arange(big)) is None


def _old_push_walk(scorer, sid, scale, alpha, trace=None, query_terms=None):
    """The push driver before issue 46's 1M-word work (7fdadca): every parked term summed
    and decided again at every level."""
    cfg = scorer.config
    backend = scorer.backend
    s_j, df_j = scorer.term_sizes()
    w = scorer.weights
    eps, power = cfg.push_threshold, cfg.push_df_power
    parts = backend.map("push_begin", sid, scale, alpha)
    park_t, park_v = np.empty(0, np.int64), np.empty(0)
    steps = 0
    read = sum(p[4] for p in parts)
    moving = sum(p[3] for p in parts)
    while moving >= cfg.tol and moving > 0 and steps < cfg.max_iter:
        terms, t = sum_sparse(
            np.concatenate([park_t, *(p[0] for p in parts)]),
            np.concatenate([park_v, *(p[1] for p in parts)]),
            len(s_j),
        )
        dangling = sum(p[2] for p in parts)
        u = t if w is None else t * w[terms]
        df = df_j[terms]
        if power != 1.0 and (steps or query_terms is not None):
            strict = df.astype(np.float64) ** power
            if not steps:
                own = _members(terms, query_terms)
                strict[own] = df[own]
            df = strict
        push = u * s_j[terms] >= eps * df
        park_t, park_v = terms[~push], t[~push]
        parts = backend.map("push_step", sid, terms[push], u[push], dangling)
        steps += 1
        read += sum(p[4] for p in parts)
        moving = sum(p[3] for p in parts)
    return finish_walk(scorer, sid, park_t, park_v, (steps, moving, read), trace)


def _chain_texts():
    """A chain of units each sharing one word with the next: the walk stays small (the
    parked mass stays a list of terms)."""
    texts = [f"alpha{i}x alpha{i + 1}x" for i in range(3000)]
    texts[5] += " the needle zebra"
    return texts


@pytest.mark.parametrize("corpus", ["alice", "chain", "alice-plain-rule"])
def test_push_driver_equals_the_old_loop(alice_text, monkeypatch, corpus):
    """Scores (bit for bit) and the walk's record (steps, residual, parked, entries read) of
    the new driver equal the old loop's, on a walk whose parked mass becomes a vector (Alice)
    and on one where it stays a list (the chain)."""
    if corpus == "chain":
        index = MixPRIndex.from_texts(_chain_texts(), chunk=False)
        questions = ["needle zebra", "alpha7x", "alpha2999x zebra"]
    else:
        kw = {"push_df_power": 1.0} if corpus == "alice-plain-rule" else {}
        index = MixPRIndex.from_texts(alice_text, **kw)
        questions = QUESTIONS + ["the", "Alice"]
    for q in questions:
        got = index.search(q, k=25, mode="local")
        got_scores = index.score(q, mode="local")[0]
        monkeypatch.setattr(scoring, "push_walk", _old_push_walk)
        want = index.search(q, k=25, mode="local")
        want_scores = index.score(q, mode="local")[0]
        monkeypatch.undo()
        np.testing.assert_array_equal(got_scores, want_scores)
        assert [(h.source, h.start, h.score) for h in got.hits] == [
            (h.source, h.start, h.score) for h in want.hits
        ], q
        assert got.trace[1:] == want.trace[1:], q


@pytest.mark.parametrize("share", [0.0, 0.001, 0.3, 1.0])
def test_select_top_k_equals_a_stable_sort(share):
    """The ``k`` best (ties to the earlier unit) found from the k-th largest score by a
    partition of the positive scores (or of all, when fewer than ``k`` are positive) are those
    of a stable sort; many equal zeros, equal positives and negative scores included."""
    from longctx.selection import select_top

    rng = np.random.default_rng(7)
    n = 5000
    for trial in range(6):
        x = np.zeros(n)
        on = rng.random(n) < share
        x[on] = rng.integers(1, 40, on.sum()) / 8.0  # many ties
        if trial % 2:
            x[rng.random(n) < 0.1] = -rng.random()
        for k in (1, 3, 10, 100, n - 1):
            want = np.sort(np.argsort(-x, kind="stable")[:k])
            np.testing.assert_array_equal(select_top(x, k=k), want)


def test_query_rows_are_canonical_csr(alice):
    """The query's TF-IDF rows are built as CSR directly: per row the kept terms' columns
    ascending, no duplicates, the same matrix as the COO construction of the same entries."""
    st = alice._state
    qchunks = ["Alice and the Queen and Alice.", "The tarts, the tarts!", "zebra the"]
    Eq, _ = query_weights(st.table, qchunks, with_q=False)
    assert Eq.shape == (3, st.table.n_terms)
    assert Eq.has_canonical_format
    rows = np.repeat(np.arange(3), np.diff(Eq.indptr))
    order = np.random.default_rng(0).permutation(Eq.nnz)
    coo = sp.csr_array(
        (Eq.data[order], (rows[order], Eq.indices[order])), shape=Eq.shape, dtype=np.float64
    )
    np.testing.assert_array_equal(coo.indptr, Eq.indptr)
    np.testing.assert_array_equal(coo.indices, Eq.indices)
    np.testing.assert_array_equal(coo.data, Eq.data)
    assert np.diff(Eq.indptr).tolist()[2] == 0  # "zebra" unseen, "the" a stop word
    assert (Eq.data > 0).all()


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 8).flatmap(
        lambda runs: st.lists(
            st.lists(st.integers(0, 40), max_size=30).map(sorted), min_size=runs, max_size=runs
        )
    ),
    st.integers(0, 2**32 - 1),
)
def test_few_runs_are_merged_to_the_same_units_and_sums(runs, seed):
    """Entries made of ascending runs (the query terms' postings, a walk's levels) sorted by
    a merge: the units, positions and sums are ``np.unique``'s and each unit's entries added
    in their order, bit for bit."""
    idx = np.array([i for r in runs for i in r], dtype=np.int32)
    rng = np.random.default_rng(seed)
    val = rng.choice([1e16, 1.0, -1e16, 0.1, 3.0, 1e-300], len(idx))  # the order shows
    u, pos = unique_positions(idx)
    want_u, want_inv = np.unique(idx, return_inverse=True)
    assert u.dtype == np.int64
    np.testing.assert_array_equal(u, want_u)
    np.testing.assert_array_equal(pos, want_inv)
    su, s = sum_sparse(idx, val)
    want = {}
    for i, v in zip(idx.tolist(), val.tolist()):
        want[i] = want.get(i, 0.0) + v
    assert su.tolist() == sorted(want) and s.tolist() == [want[i] for i in sorted(want)]


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 60)), st.sets(st.integers(0, 60)), st.booleans())
def test_union_places_both_in_order(a, b, subset):
    """``selection.union_positions``: the union of two ascending unit lists and where each lies in it,
    also when ``b`` is within ``a`` (the usual case: no merge)."""
    a = np.array(sorted(a | b if subset else a), dtype=np.int64)
    b = np.array(sorted(b), dtype=np.int64)
    u, at_a, at_b = union_positions(a, b)
    np.testing.assert_array_equal(u, np.union1d(a, b))
    np.testing.assert_array_equal(u[at_a], a)
    np.testing.assert_array_equal(u[at_b], b)
