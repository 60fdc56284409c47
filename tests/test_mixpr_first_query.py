"""The first query after an open (issue 46): a level's gather summed in blocks
(:func:`longctx.mixpr.push.gather_summed`) gives the very sums of one gather, and the open makes
the query-independent pieces the first query made (the scorer, the push rule's limits, each
document's first unit) without changing a result."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from longctx.corpus.shards.shard import MixPRShard
from longctx.mixpr import MixPRIndex, push
from longctx.mixpr.persist_mapped import load_index
from longctx.mixpr.unit_filter import document_starts

QUESTIONS = (
    "Why did Alice follow the White Rabbit?",
    "What did the Queen of Hearts shout?",
    "the of and a to in",
)


def _results(index, q, **kw):
    r = index.search(q, **kw)
    hits = [(h.source, h.start, h.end, h.index, float(h.score).hex()) for h in r.hits]
    walk = [sorted((k, v.hex() if isinstance(v, float) else v) for k, v in dict(t).items())
            for t in r.trace]  # fmt: skip
    return hits, walk


# the blocked gather runs only where scipy's csc_matvec adds without fused multiply-adds
needs_matvec = pytest.mark.skipif(
    push.csc_matvec is None, reason="csc_matvec missing or fusing multiply-adds: gather then sum"
)


@pytest.fixture(scope="module")
def alice_index(alice_text):
    return MixPRIndex.from_texts(
        [alice_text, alice_text[:20000], alice_text[-20000:]],
        ids=["alice", "start", "end"],
        metadatas=[{"part": "all"}, {"part": "start"}, {"part": "end"}],
    )


def _rows(rng, n_rows, n_cols, index_dtype):
    lens = rng.integers(0, 40, n_rows)
    lens[rng.random(n_rows) < 0.1] = 0  # rows without entries
    indptr = np.concatenate([[0], np.cumsum(lens)]).astype(index_dtype)
    indices = np.concatenate([np.sort(rng.choice(n_cols, k, replace=False)) for k in lens])
    data = rng.random(int(indptr[-1])) * rng.choice([1e-9, 1.0, 1e9], int(indptr[-1]))
    return sp.csr_array((data, indices.astype(index_dtype), indptr), shape=(n_rows, n_cols))


@needs_matvec
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("block", [1, 7, 300, 10**9])
def test_gather_summed_equals_one_gather_then_sum(monkeypatch, index_dtype, block):
    """Every sum equal to the last bit (and the same indices, int64) for any block size."""
    monkeypatch.setattr(push, "GATHER_BLOCK", block)
    rng = np.random.default_rng(7)
    rows = _rows(rng, 2000, 500, index_dtype)
    for size in (1, 50, 1500):
        sel = np.sort(rng.choice(2000, size, replace=False))
        w = rng.random(size) * rng.choice([1e-6, 1.0, 1e6], size)
        where = push.spans(rows.indptr, sel)
        want = push.sum_sparse(
            *push.gather(rows.indptr, rows.indices, rows.data, sel, w, where), rows.shape[1]
        )
        got = push.gather_summed(rows, sel, w, where, rows.shape[1])
        assert got[0].dtype == want[0].dtype == np.int64
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])  # bit for bit: same values, same order of sums


@needs_matvec
def test_gather_summed_of_rows_without_entries_is_empty():
    rows = sp.csr_array((np.zeros(0), np.zeros(0, np.int32), np.zeros(4, np.int32)), shape=(3, 5))
    sel = np.array([0, 2])
    u, s = push.gather_summed(rows, sel, np.ones(2), push.spans(rows.indptr, sel), 5)
    assert len(u) == 0 and len(s) == 0


@needs_matvec
def test_blocked_walk_gives_the_same_results(alice_index, monkeypatch):
    """The walk's levels summed in blocks of a few entries (many blocks) and in one gather:
    the same hits, scores and walk records, to the last bit; the blocks did run."""
    calls = []
    real = push.gather_summed

    def counted(*a):
        calls.append(a[3][2])
        return real(*a)

    monkeypatch.setattr(push, "gather_summed", counted)
    monkeypatch.setattr(push, "GATHER_BLOCK", 10**12)  # one gather (the path before)
    want = [_results(alice_index, q, k=k) for q in QUESTIONS for k in (10, 100)]
    assert not calls
    monkeypatch.setattr(push, "GATHER_BLOCK", 50)
    got = [_results(alice_index, q, k=k) for q in QUESTIONS for k in (10, 100)]
    assert calls and max(calls) > 50  # levels gathered in many blocks
    assert got == want


@pytest.mark.parametrize("mmap", [False, True])
def test_load_prepares_what_the_first_query_made(alice_index, tmp_path, mmap):
    """A format-3 open holds the scorer, the push rule's limits and each document's first unit
    (found by a search over the checked units, equal to ``document_starts``); the results
    equal those of the built index and of an open that prepared nothing."""
    alice_index.save(tmp_path / "ix")
    back = MixPRIndex.load(tmp_path / "ix", mmap=mmap)
    st = back._state
    assert st._scorer is not None
    key = (st.config.push_threshold, st.config.push_df_power)
    assert st._scorer.__dict__["_push_limits"][0] == key
    assert np.array_equal(st._doc_first, document_starts(st.unit_source, len(st.doc_ids)))
    plain = load_index(MixPRIndex, tmp_path / "ix", mmap=mmap)  # nothing prepared
    assert plain._state._scorer is None
    for q in QUESTIONS:
        assert _results(back, q, k=20) == _results(alice_index, q, k=20)
        assert _results(plain, q, k=20) == _results(alice_index, q, k=20)
    sizes = np.bincount(st.unit_source).tolist()
    assert st.unit_positions(np.arange(st.n_units)).tolist() == [j for n in sizes for j in range(n)]
    # a filter's units are its documents' ranges, from the same starts (no pass over units)
    keep = {"part": {"$ne": "start"}}
    got = _results(back, QUESTIONS[0], k=20, filters=keep)
    assert got == _results(alice_index, QUESTIONS[0], k=20, filters=keep)
    assert st.block.doc_starts() is st._doc_first
    assert {h[0] for h in got[0]} <= {0, 2}


def test_format2_open_leaves_the_graph_to_the_first_query(alice_index, tmp_path):
    """A format-2 index holds no graph: its open builds none (seconds at 10M words)."""
    alice_index.save(tmp_path / "ix2", mappable=False)
    back = MixPRIndex.load(tmp_path / "ix2")
    assert back._state._graph is None and back._state._scorer is None
    assert _results(back, QUESTIONS[0], k=20) == _results(alice_index, QUESTIONS[0], k=20)


def test_a_shard_open_prepares_no_scorer_of_its_own(alice_index, tmp_path):
    """A shard answers through the block its corpus weighs (set_global), never through its
    own scorer: its open makes none."""
    alice_index.save(tmp_path / "shard")
    shard = MixPRShard.load(tmp_path / "shard")
    assert shard.index._state._scorer is None
    assert shard.index._state._doc_first is not None


@needs_matvec
def test_gather_summed_into_one_count_for_the_levels():
    """A count reused by the query's levels gives each level's sums as a fresh one, to the last
    bit, and is all zeros again after each level."""
    rng = np.random.default_rng(11)
    rows = _rows(rng, 2000, 500, np.int32)
    total = np.zeros(rows.shape[1])
    for size in (1, 50, 1500, 700):
        sel = np.sort(rng.choice(2000, size, replace=False))
        w = rng.random(size) * rng.choice([1e-6, 1.0, 1e6], size)
        where = push.spans(rows.indptr, sel)
        want = push.gather_summed(rows, sel, w, where, rows.shape[1])
        got = push.gather_summed(rows, sel, w, where, rows.shape[1], total)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert not total.any()


def test_the_levels_count_lives_in_the_query_only(alice_index, monkeypatch):
    """The walk's levels add into one count made by the query (its session), which is gone
    when the query ends: nothing is kept on the block between queries."""
    seen = []
    real = push.gather_summed

    def counted(*a):
        seen.append(id(a[5]))
        return real(*a)

    monkeypatch.setattr(push, "gather_summed", counted)
    monkeypatch.setattr(push, "GATHER_BLOCK", 50)
    block = alice_index._state.block
    for q in QUESTIONS[:2]:
        seen.clear()
        alice_index.search(q, k=10)
        assert len(seen) >= 2 and len(set(seen)) == 1  # the levels share one count
        assert not block._sessions  # the session and its count are gone


def test_fused_multiply_add_probe():
    """The import-time probe tells a ``y += a * x`` rounded once (fused) from one rounded
    twice (numpy's product, then the sum: what gather then sum_sparse compute)."""
    from fractions import Fraction

    def unfused(n_row, n_col, ptr, idx, a, x, y):
        y[0] = np.float64(a[0] * x[0]) + y[0]

    def fused(n_row, n_col, ptr, idx, a, x, y):
        y[0] = float(Fraction(a[0]) * Fraction(x[0]) + Fraction(y[0]))

    assert not push._fuses_multiply_add(unfused)
    assert push._fuses_multiply_add(fused)


@pytest.mark.parametrize("n, size", [(3000, 50_000), (3000, 1000), (1, 10)])
def test_sum_sparse_narrow_keeps_the_dtype_and_the_sums(n, size):
    """``wide=False`` (the walk's levels) gives the indices in the entries' own dtype when
    summed by a sort (int64 by a dense count) and the very sums of ``np.unique``'s inverse
    counted by ``np.bincount``, to the last bit, whichever sort serves."""
    rng = np.random.default_rng(5)
    runs = [np.sort(rng.integers(0, size, rng.integers(1, n + 1))) for _ in range(4)]
    idx = np.concatenate(runs).astype(np.int32)  # a few ascending runs, as a level's units
    val = rng.random(len(idx)) * rng.choice([1e-9, 1.0, 1e9], len(idx))
    u, inv = np.unique(idx, return_inverse=True)
    want = np.bincount(inv, weights=val, minlength=len(u))
    for sz in (size, None):
        got = push.sum_sparse(idx, val, sz, wide=False)
        wide = push.sum_sparse(idx, val, sz)
        dense = sz is not None and len(idx) * push.COUNT_SHARE > sz
        assert got[0].dtype == (np.int64 if dense else np.int32)
        assert wide[0].dtype == np.int64
        keep = want != 0 if dense else slice(None)  # a dense count leaves zero sums out
        for g in (got, wide):
            assert np.array_equal(g[0], u[keep]) and np.array_equal(g[1], want[keep])


def test_the_walk_leaves_its_restart_as_it_was(alice_index, monkeypatch):
    """The levels' moving mass is made in each level's own vector, never in the restart the
    walk started from (``push_p``, read again by every level's dangling mass and by
    ``explain``), and the first level's settled mass is made from it at the end; the walk
    starts without the query's edges matrix (freed once the restart is read)."""
    block = alice_index._state.block
    cls = type(block)
    seen = {}
    begin, finish = cls.push_begin, cls.push_finish

    def began(self, sid, *a):
        out = begin(self, sid, *a)
        s = self._s(sid)
        seen["r"] = s["push_p"][1].copy()
        seen["edges"] = "Bsub" in s
        return out

    def finished(self, sid):
        seen["end"] = self._s(sid)["push_p"][1].copy()
        return finish(self, sid)

    monkeypatch.setattr(cls, "push_begin", began)
    monkeypatch.setattr(cls, "push_finish", finished)
    for q in QUESTIONS[:2]:
        seen.clear()
        alice_index.search(q, k=10)
        assert len(seen["r"]) and np.array_equal(seen["r"], seen["end"])
        assert seen["edges"] is False


def test_sparse_result_and_level_sums_give_the_same_bits(alice_index, monkeypatch):
    """The walk's result and a level's units summed by a sort (``RESULT_SHARE``,
    ``STEP_SHARE``: every share) or by a dense count (none): the same hits, scores and walk
    records to the last bit, at k = 10, k = 100 and with a token budget; both paths ran (every
    level gathered: a level over the whole block would keep its dense vector)."""
    import longctx.mixpr.scoring as scoring
    from longctx.selection import SparseScores

    kinds = []
    real = scoring.UnitBlock.scores_local

    def seen(self, sid, *a):
        real(self, sid, *a)
        kinds.append(isinstance(self._s(sid)["scores"], SparseScores))

    monkeypatch.setattr(scoring.UnitBlock, "scores_local", seen)
    sizes = ({"k": 10}, {"k": 100}, {"token_budget": 600})
    monkeypatch.setattr(push, "DENSE_SHARE", 1e-9)  # no level over the whole block
    runs = []
    for share in (1 << 60, push.RESULT_SHARE, 1e-9):  # dense, the default, always sparse
        for name in ("RESULT_SHARE", "STEP_SHARE"):
            monkeypatch.setattr(push, name, share)
        monkeypatch.setattr(scoring, "RESULT_SHARE", share)
        kinds.clear()
        runs.append([_results(alice_index, q, **kw) for q in QUESTIONS for kw in sizes])
        runs[-1].append(set(kinds))
    assert runs[0][-1] == {False} and runs[2][-1] == {True}
    assert runs[0][:-1] == runs[1][:-1] == runs[2][:-1]


def test_spans_and_parked_sums_as_before():
    """``spans`` (gathers by ``take``, ends without ``sel + 1``) and ``_add_parts`` (one gather
    for one block) give what fancy indexing gave, for int32 and int64 rows."""
    rng = np.random.default_rng(7)
    indptr = np.concatenate([[0], np.cumsum(rng.integers(0, 9, 500))]).astype(np.int32)
    for dtype in (np.int32, np.int64):
        sel = np.sort(rng.choice(500, 120, replace=False)).astype(dtype)
        starts, lens, total = push.spans(indptr, sel)
        assert np.array_equal(starts, indptr[sel])
        assert np.array_equal(lens, indptr[sel + 1] - indptr[sel])
        assert total == int((indptr[sel + 1] - indptr[sel]).sum())
    park = rng.random(300) * (rng.random(300) < 0.5)
    terms = np.sort(rng.choice(300, 80, replace=False))
    mass = rng.random(80)
    want = park.copy()
    want[terms] += mass
    got = park.copy()
    t_terms, t = push._add_parts(got, [(terms, mass)])
    assert np.array_equal(got, want) and np.array_equal(t_terms, terms)
    assert np.array_equal(t, want[terms])
    parts = [(terms[::2], mass[::2]), (terms[1::2], mass[1::2])]
    got = park.copy()
    t_terms, t = push._add_parts(got, parts)
    assert np.array_equal(got, want) and np.array_equal(t, want[t_terms])
