"""Budget selection by blocks of the score order (session 20): ``select_top``,
``select_distinct`` and the sparse path with ``token_budget`` choose the very units the full
stable sort chose (the implementation before, kept here as ``_reference_*``), for ties, NaN,
negative and zero scores, zero token counts and units larger than the budget; and a budget
query over dense scores neither sorts every unit nor reads the key of every unit it passes."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from longctx import selection
from longctx.selection import SparseScores, select_distinct, select_top


# -- the implementation before session 20, copied as the reference --------------------------
def _reference_greedy(orders, token_counts, token_budget):
    chosen = []
    used = 0
    for order in orders:
        if used >= token_budget:
            break
        counts = token_counts[order]
        csum = used + np.cumsum(counts)
        n_prefix = int(np.searchsorted(csum, token_budget, side="right"))
        chosen.extend(order[:n_prefix].tolist())
        used = int(csum[n_prefix - 1]) if n_prefix else used
        for idx, c in zip(order[n_prefix:].tolist(), counts[n_prefix:].tolist()):
            if used >= token_budget:
                break
            if used + c <= token_budget:
                chosen.append(idx)
                used += c
    return np.sort(np.asarray(chosen, dtype=np.int64))


def _reference_top(scores, token_budget, token_counts):
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    return _reference_greedy([order], np.asarray(token_counts, np.int64), token_budget)


def _reference_sparse(scores: SparseScores, token_budget, token_counts):
    v = scores.vals
    if (v < 0).any() or np.isnan(v).any():
        return _reference_top(scores.dense(), token_budget, token_counts)
    token_counts = np.asarray(token_counts, dtype=np.int64)
    pos = scores.vals > 0
    pidx = scores.idx[pos]
    best = pidx[np.argsort(-scores.vals[pos], kind="stable")]

    def zeros(size: int = 4096):  # the same blocks: the units not in pidx, 4096 indices apart
        rest = np.setdiff1d(np.arange(scores.n, dtype=np.int64), pidx)
        for start in range(0, scores.n, size):
            yield rest[(rest >= start) & (rest < start + size)]

    return _reference_greedy(itertools.chain([best], zeros()), token_counts, token_budget)


def _reference_distinct(scores, key, token_budget, token_counts):
    if isinstance(scores, SparseScores):
        scores = scores.dense()
    scores = np.asarray(scores, dtype=np.float64)
    token_counts = np.asarray(token_counts, dtype=np.int64)
    n = len(scores)
    order = np.argsort(-scores, kind="stable")
    seen, chosen, used = set(), [], 0
    smallest = int(token_counts.min()) if n else 0
    for i in order.tolist():
        if used + smallest > token_budget:
            break
        kk = key(i)
        if kk in seen:
            continue
        seen.add(kk)
        c = int(token_counts[i])
        if used + c <= token_budget:
            chosen.append(i)
            used += c
    return np.sort(np.asarray(chosen, dtype=np.int64))


# -- inputs ----------------------------------------------------------------------------------
_SCORES = st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, -1.0, float("nan"), float("inf"), 3.0])


@st.composite
def _units(draw, min_count=0):
    """(scores, counts, keys, budget): few values (many ties), some NaN / negative / zero
    scores, counts from 0 (an empty unit) to larger than the budget."""
    n = draw(st.integers(0, 60))
    scores = np.array(draw(st.lists(_SCORES, min_size=n, max_size=n)), dtype=np.float64)
    counts = np.array(
        draw(
            st.lists(
                st.one_of(st.integers(min_count, 6), st.integers(min_count, 400)),
                min_size=n,
                max_size=n,
            )
        ),
        dtype=np.int64,
    )
    keys = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
    total = int(counts.sum())
    budget = draw(st.integers(1, max(1, total + 3)))
    return scores, counts, keys, budget


def _assert_as_before(scores, counts, keys, budget):
    """select_top and select_distinct by budget over ``scores`` and over them as SparseScores
    (NaN and negatives made 0) choose what the implementation before chose."""
    got = select_top(scores, token_budget=budget, token_counts=counts)
    assert got.tolist() == _reference_top(scores, budget, counts).tolist()
    assert int(counts[got].sum()) <= budget
    got = select_distinct(scores, keys.__getitem__, token_budget=budget, token_counts=counts)
    assert got.tolist() == _reference_distinct(scores, keys.__getitem__, budget, counts).tolist()
    clean = np.where(np.isnan(scores) | (scores < 0), 0.0, scores)
    at = np.flatnonzero(clean)
    sp = SparseScores(len(clean), at, clean[at])
    got = select_top(sp, token_budget=budget, token_counts=counts)
    assert got.tolist() == _reference_sparse(sp, budget, counts).tolist()
    got = select_distinct(sp, keys.__getitem__, token_budget=budget, token_counts=counts)
    assert got.tolist() == _reference_distinct(sp, keys.__getitem__, budget, counts).tolist()


@settings(max_examples=400, deadline=None)
@given(_units())
def test_small_arrays_as_before(u):
    _assert_as_before(*u)


@settings(max_examples=400, deadline=None)
@given(_units(), st.integers(1, 3))
def test_sparse_budget_as_before(u, m):
    scores, counts, _, budget = u
    scores = np.where(np.isnan(scores) | (scores < 0), 0.0, scores) if m > 1 else scores
    at = np.flatnonzero(scores != 0)
    sp = SparseScores(len(scores), at, scores[at])
    got = select_top(sp, token_budget=budget, token_counts=counts)
    assert got.tolist() == _reference_sparse(sp, budget, counts).tolist()


@settings(max_examples=400, deadline=None)
@given(_units())
def test_select_distinct_budget_as_before(u):
    scores, counts, keys, budget = u
    read = {"new": 0, "ref": 0}

    def key(name):
        def k(i):
            read[name] += 1
            return keys[i]

        return k

    got = select_distinct(scores, key("new"), token_budget=budget, token_counts=counts)
    want = _reference_distinct(scores, key("ref"), budget, counts)
    assert got.tolist() == want.tolist()
    assert read["new"] <= read["ref"]  # keys read: at most the units the full pass read
    at = np.flatnonzero(scores != 0)  # NaN too
    sp = SparseScores(len(scores), at, scores[at])
    got = select_distinct(sp, keys.__getitem__, token_budget=budget, token_counts=counts)
    assert got.tolist() == want.tolist()


@st.composite
def _many(draw):
    """Hundreds of units (several blocks of at least 64): scores from a few levels (ties across
    block edges) or continuous, with zeros, NaN and negatives; counts from 0 to 300."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(65, 1500))
    levels = draw(st.sampled_from([2, 5, 40, 0]))
    scores = rng.integers(0, levels, n).astype(float) if levels else rng.random(n)
    for value, share in ((0.0, 0.4), (float("nan"), 0.05), (-1.0, 0.05), (-0.0, 0.05)):
        if draw(st.booleans()):
            scores[rng.random(n) < share] = value
    hi = draw(st.sampled_from([3, 30, 300]))
    counts = rng.integers(draw(st.integers(0, 1)), hi + 1, n)
    keys = rng.integers(0, draw(st.sampled_from([5, 50, 10**6])), n).tolist()
    budget = draw(st.integers(1, max(1, int(counts.sum()))))
    return scores, counts, keys, budget


@settings(max_examples=300, deadline=None)
@given(_many())
def test_several_blocks_as_before(u):
    """Arrays larger than one block (the small ones above are read in one)."""
    _assert_as_before(*u)


def test_a_duplicate_of_a_unit_too_long_is_not_taken():
    """The better unit of a key that does not fit stands for its later (smaller) duplicates,
    though its key is read only when a later unit could be taken."""
    scores = np.array([3.0, 2.0, 1.0])
    counts = np.array([50, 5, 5])
    keys = ["a", "b", "a"]
    got = select_distinct(scores, keys.__getitem__, token_budget=10, token_counts=counts)
    assert got.tolist() == [1] == _reference_distinct(scores, keys.__getitem__, 10, counts).tolist()


def _big(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.random(n)  # dense: every unit scored
    counts = rng.integers(5, 60, n)
    return scores, counts


def test_dense_budget_does_not_sort_every_unit(monkeypatch):
    scores, counts = _big()
    want = _reference_top(scores, 1000, counts)
    sizes = []
    real = np.argsort

    def spy(a, *args, **kw):
        sizes.append(np.size(a))
        return real(a, *args, **kw)

    monkeypatch.setattr(selection.np, "argsort", spy)
    got = select_top(scores, token_budget=1000, token_counts=counts)
    assert got.tolist() == want.tolist()
    assert sizes and max(sizes) < len(scores) // 4
    sizes.clear()
    keys = (np.arange(len(scores)) % 5000).tolist()
    got = select_distinct(scores, keys.__getitem__, token_budget=1000, token_counts=counts)
    monkeypatch.undo()
    assert got.tolist() == _reference_distinct(scores, keys.__getitem__, 1000, counts).tolist()
    assert sizes and max(sizes) < len(scores) // 4


def test_distinct_budget_reads_fewer_keys():
    """The units passed over after the last one taken are never read: here the shortest unit
    (1 token) is the best, taken first, so the full pass read every key to the end (the
    budget is not spent to the last token) and the new one stops at the last unit taken."""
    scores, counts = _big()
    counts[np.argmax(scores)] = 1
    calls = {"new": 0, "ref": 0}

    def key(name):
        def k(i):
            calls[name] += 1
            return i % 5000

        return k

    got = select_distinct(scores, key("new"), token_budget=1000, token_counts=counts)
    want = _reference_distinct(scores, key("ref"), 1000, counts)
    assert got.tolist() == want.tolist()
    assert calls["new"] < calls["ref"] // 10, calls
