"""What a MixPR index holds after its build (issue 46): compact term counts, ``E`` by rows
sharing the counts' index arrays (no CSR copy of ``E``), the push rule's term sums read at a
mapped open, and results equal to those of the copies they replace, to the last bit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from longctx.mixpr import MixPRIndex, push
from longctx.mixpr.counts import CountRows, compact_counts
from longctx.mixpr.push import gather
from longctx.mixpr.state import _offsets
from longctx.mixpr.tfidf import tfidf_rows
from longctx.persist.npy import mapped_base

QUESTIONS = ("Why did Alice follow the White Rabbit?", "What did the Queen of Hearts shout?")


def _hits(index, q, k=10):
    return [(h.source, h.start, h.end, h.score) for h in index.search(q, k=k).hits]


def _same_csr(a, b) -> bool:
    a, b = sp.csr_array(a), sp.csr_array(b)
    return (
        a.shape == b.shape
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
        and np.array_equal(a.data, b.data)
    )


@pytest.fixture(scope="module")
def alice_index(alice_text):
    index = MixPRIndex.from_texts([alice_text], ids=["alice"])
    index.search(QUESTIONS[0], k=5)  # the graph, the scorer and the push rows
    return index


def test_built_index_holds_compact_counts_and_no_copy_of_E(alice_index):
    st = alice_index._state
    counts, E = st.table.counts, st.table.embeddings()
    assert counts.data.dtype == np.uint16
    assert counts.indices.dtype == np.int32 and counts.indptr.dtype == np.int32
    assert E.indices.dtype == np.int32 and E.data.dtype == np.float64
    rows = st.block._rows()
    assert np.shares_memory(rows.indices, counts.indices)  # E by rows: no index copy
    assert np.shares_memory(rows.indptr, counts.indptr)
    assert _same_csr(rows, sp.csr_array(E))  # every value, to the last bit


def test_results_equal_a_block_given_a_csr_copy_of_E(alice_text):
    """The rows the table kept and a fresh ``csr_array(E)`` give the same hits and scores."""
    a = MixPRIndex.from_texts([alice_text], ids=["alice"])
    b = MixPRIndex.from_texts([alice_text], ids=["alice"])
    b._state.scorer()
    b._state.block.set_rows(sp.csr_array(b._state.table.embeddings()).copy())
    for q in QUESTIONS:
        assert _hits(a, q) == _hits(b, q)


def test_pruned_terms_keep_E_by_rows_exact(alice_text):
    """A term pruned by ``min_df`` is in the counts but not in ``E``: the rows are then a copy
    holding ``E``'s entries only, and searches equal a block given ``csr_array(E)``."""
    kw = {"vectorizer_kwargs": (("min_df", 3),)}
    a = MixPRIndex.from_texts([alice_text], **kw)
    st = a._state
    st.scorer()
    E, counts = st.table.embeddings(), st.table.counts
    assert E.nnz < counts.nnz  # the case under test: some entries dropped
    rows = st.block._rows()
    assert not np.shares_memory(rows.indices, counts.indices)
    assert _same_csr(rows, sp.csr_array(E))
    b = MixPRIndex.from_texts([alice_text], **kw)
    b._state.scorer()
    b._state.block.set_rows(sp.csr_array(b._state.table.embeddings()).copy())
    for q in QUESTIONS:
        assert _hits(a, q) == _hits(b, q)


def test_set_rows_refuses_rows_that_are_not_E(alice_index):
    block = alice_index._state.block
    E = block.E
    with pytest.raises(ValueError, match="rows"):
        block.set_rows(sp.csr_array((E.shape[0], E.shape[1] + 1)))
    with pytest.raises(ValueError, match="entries"):
        block.set_rows(sp.csr_array(E.shape))


def test_insert_and_delete_on_compact_counts_equal_a_fresh_build(alice_text):
    cut = len(alice_text) // 2
    parts = [alice_text[:cut], alice_text[cut:]]
    grown = MixPRIndex.from_texts([parts[0]], ids=["a"])
    grown.search(QUESTIONS[0], k=3)  # E and its rows made before the insert
    grown.insert([parts[1]], ids=["b"])
    fresh = MixPRIndex.from_texts(parts, ids=["a", "b"])
    for q in QUESTIONS:
        assert _hits(grown, q) == _hits(fresh, q)
    assert grown._state.table.counts.data.dtype == np.uint16
    grown.delete(["b"])
    alone = MixPRIndex.from_texts([parts[0]], ids=["a"])
    for q in QUESTIONS:
        assert _hits(grown, q) == _hits(alone, q)


def test_counts_past_uint16_stay_exact():
    counts = sp.csr_array(np.array([[70_000.0, 0.0, 3.0], [0.0, 1.0, 0.0]]))
    small = compact_counts(sp.csr_array(np.array([[65_535.0, 2.0]])))
    assert small.data.dtype == np.uint16 and small.data.tolist() == [65_535, 2]
    big = compact_counts(counts)
    assert big.data.dtype == np.float64 and big.data.tolist() == [70_000.0, 3.0, 1.0]
    assert big.indices.dtype == np.int32
    assert compact_counts(big) is big  # already compact: no copy


def test_E_from_compact_counts_equals_E_from_float_counts(alice_index):
    """``tfidf_rows`` reads uint16 counts as the float64 counts they stand for."""
    t = alice_index._state.table
    c = t.counts
    wide = sp.csr_array(
        (c.data.astype(np.float64), c.indices.astype(np.int64), c.indptr.astype(np.int64)),
        shape=c.shape,
    )
    E1 = tfidf_rows(t.settings, c, t.idf())
    E2, rows = tfidf_rows(t.settings, wide, t.idf(), by_rows=True)
    assert _same_csr(E1, E2)
    assert _same_csr(rows, E2)


def test_format2_save_keeps_float64_counts(alice_index, tmp_path):
    alice_index.save(tmp_path / "ix", mappable=False)  # format 2
    with np.load(tmp_path / "ix" / "terms.npz") as z:
        assert z["data"].dtype == np.float64
    back = MixPRIndex.load(tmp_path / "ix")
    for q in QUESTIONS:
        assert _hits(back, q) == _hits(alice_index, q)


@pytest.mark.parametrize("mmap", [True, False])
def test_mapped_open_reads_the_term_sums_the_scorer_would_compute(alice_index, tmp_path, mmap):
    """Format 3: the push rule's term sums come from the open (the first query reads only
    what it reaches), equal to the last bit to the blocks' own reduction."""
    alice_index.save(tmp_path / "ix", mappable=True)
    back = MixPRIndex.load(tmp_path / "ix", mmap=mmap)
    st = back._state
    assert st._term_sums is not None
    s, df = st.scorer().term_sizes()
    assert np.array_equal(s, st.block.colsum_partial())
    assert np.array_equal(df, st.block.term_df_partial())
    for q in QUESTIONS:
        assert _hits(back, q) == _hits(alice_index, q)


# -- E by rows made from the counts (counts.CountRows, past ROWS_HELD_MAX entries) ------------
@pytest.fixture
def rows_from_counts(monkeypatch):
    """Every index built here makes ``E``'s rows from its counts (the 10M-word case)."""
    monkeypatch.setattr("longctx.mixpr.counts.ROWS_HELD_MAX", 0)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"sublinear_tf": False},
        {"vectorizer_kwargs": (("binary", True),)},
    ],
)
def test_rows_from_counts_hold_no_values_and_equal_E(alice_text, rows_from_counts, kw):
    index = MixPRIndex.from_texts([alice_text], ids=["alice"], **kw)
    index.search(QUESTIONS[0], k=5)
    st = index._state
    rows = st.block._rows()
    assert isinstance(rows, CountRows)
    assert "_E_rows" not in st.table.__dict__  # no float64 copy of E's values held
    assert np.shares_memory(rows.indices, st.table.counts.indices)
    E = sp.csr_array(st.table.embeddings())
    assert _same_csr(rows.csr(), E)  # every value, to the last bit
    assert _same_csr(st.table.rows(), E)
    sel = np.array([3, 0, 17, 17, len(st.starts) - 1])
    w = np.linspace(0.5, 2.0, len(sel))
    got, want = rows.gather(sel, w), gather(E.indptr, E.indices, E.data, sel, w)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    empty = rows.gather(np.zeros(0, np.int64), np.zeros(0))
    assert empty[0].shape == empty[1].shape == (0,)


@pytest.mark.skipif(push.csc_matvec is None, reason="csc_matvec missing or fusing")
@pytest.mark.parametrize(
    "kw", [{}, {"sublinear_tf": False}, {"vectorizer_kwargs": (("binary", True),)}]
)
@pytest.mark.parametrize("block", [1, 37, 10**9])
@pytest.mark.parametrize("tf_one", [True, False])
def test_rows_from_counts_summed_in_blocks_equal_one_gather(
    alice_text, rows_from_counts, monkeypatch, kw, block, tf_one
):
    """``push.gather_summed`` over a ``CountRows`` (its values made a block at a time by
    ``block_values``) gives the sums of ``CountRows.gather`` then ``sum_sparse``, to the last
    bit, for any block size, with the product taken idf first where the count is 1 (issue 46:
    the 20M-word query's levels)."""
    monkeypatch.setattr(push, "GATHER_BLOCK", block)
    index = MixPRIndex.from_texts([alice_text], ids=["alice"], **kw)
    index.search(QUESTIONS[0], k=3)
    rows = index._state.block._rows()
    assert isinstance(rows, CountRows)
    assert rows._tf_one  # tf(1) = 1 with every setting: the idf-first product
    rows._tf_one = tf_one  # and the tf-first one
    rng = np.random.default_rng(3)
    n, n_terms = rows.shape
    for size in (1, 40, n // 2):
        sel = np.sort(rng.choice(n, size, replace=False))
        w = rng.random(size) * rng.choice([1e-6, 1.0, 1e6], size)
        where = push.spans(rows.indptr, sel)
        want = push.sum_sparse(*rows.gather(sel, w, where), n_terms)
        total = np.zeros(n_terms)
        got = push.gather_summed(rows, sel, w, where, n_terms, total)
        assert np.array_equal(got[0], want[0])
        assert np.array_equal(got[1], want[1])  # bit for bit
        assert not total.any()  # the shared count left zeros


def test_rows_from_counts_give_the_same_hits_and_scores(alice_text, monkeypatch):
    held = MixPRIndex.from_texts([alice_text], ids=["alice"])
    monkeypatch.setattr("longctx.mixpr.counts.ROWS_HELD_MAX", 0)
    made = MixPRIndex.from_texts([alice_text], ids=["alice"])
    made.search(QUESTIONS[0], k=3)
    assert isinstance(made._state.block._rows(), CountRows)
    for q in QUESTIONS + ("the Mock Turtle's song about the lobster quadrille",):
        for k in (1, 10, 100):
            assert _hits(made, q, k) == _hits(held, q, k)
    a = made.search(QUESTIONS[1], k=5, explain=True).trace
    b = held.search(QUESTIONS[1], k=5, explain=True).trace
    assert str(a) == str(b)


def test_rows_from_counts_save_what_held_rows_save(alice_text, rows_from_counts, tmp_path):
    made = MixPRIndex.from_texts([alice_text], ids=["alice"])
    made.search(QUESTIONS[0], k=3)
    made.save(tmp_path / "ix", mappable=True)
    E = sp.csr_array(made._state.table.embeddings())
    back = MixPRIndex.load(tmp_path / "ix", mmap=True)
    assert _same_csr(back._state._e_rows, E)
    for q in QUESTIONS:
        assert _hits(back, q) == _hits(made, q)


def test_pruned_terms_keep_held_rows_past_the_limit(alice_text, rows_from_counts):
    """A pruned term's entries are in the counts, not in ``E``: the rows are then held."""
    index = MixPRIndex.from_texts([alice_text], vectorizer_kwargs=(("min_df", 3),))
    index.search(QUESTIONS[0], k=3)
    assert not isinstance(index._state.block._rows(), CountRows)


def test_count_rows_refuses_float_counts():
    counts = sp.csr_array(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="uint16"):
        CountRows(counts, None, np.ones(2), np.ones(1))


# -- unit_index made from unit_source (not held) -------------------------------------------------
def _positions(src: np.ndarray) -> np.ndarray:
    first = np.searchsorted(src, src, side="left")
    return np.arange(len(src)) - first


def test_unit_index_is_made_from_unit_source_not_held(alice_text):
    chapters = alice_text.split("CHAPTER")[1:5]
    index = MixPRIndex.from_texts(chapters, ids=["a", "b", "c", "d"])
    st = index._state
    assert not any(
        isinstance(v, np.ndarray) and v.shape == (st.n_units,) and "index" in k
        for k, v in vars(st).items()
    )  # no (n_units,) array of positions held
    want = _positions(np.asarray(st.unit_source))
    assert index.unit_index.dtype == np.int64 and not index.unit_index.flags.writeable
    assert np.array_equal(index.unit_index, want)
    some = np.array([0, 5, st.n_units - 1, 5])
    assert np.array_equal(st.unit_positions(some), want[some])
    for h in index.search(QUESTIONS[0], k=20).hits:
        u = int(np.flatnonzero((st.starts == h.start) & (st.unit_source == h.source))[0])
        assert h.index == want[u]
    for h in index.search(QUESTIONS[0], k=2, whole_documents=True).hits:
        assert 0 <= h.index < np.count_nonzero(np.asarray(st.unit_source) == h.source)
    index.insert([chapters[0]], ids=["e"])
    index.update([chapters[3]], ids=["b"])  # a document of other units, in the middle
    index.delete(["c"])
    st = index._state
    assert np.array_equal(index.unit_index, _positions(np.asarray(st.unit_source)))


def test_unit_offsets_held_as_int32_where_they_fit(alice_index, tmp_path):
    st = alice_index._state
    for a in (st.unit_source, st.starts, st.ends):
        assert a.dtype == np.int32 and not a.flags.writeable
    assert _offsets(np.array([0, 2**31 - 1])).dtype == np.int32
    big = _offsets(np.array([0, 2**31], dtype=np.int64))
    assert big.dtype == np.int64 and big.tolist() == [0, 2**31]
    alice_index.save(tmp_path / "ix", mappable=True)
    assert np.load(tmp_path / "ix" / "starts.npy").dtype == np.int64  # saved as int64
    mapped = MixPRIndex.load(tmp_path / "ix", mmap=True)._state
    assert mapped.starts.dtype == np.int64 and mapped_base(mapped.starts) is not None
    read = MixPRIndex.load(tmp_path / "ix")._state
    assert read.starts.dtype == np.int32
    for q in QUESTIONS:
        assert _hits(MixPRIndex.load(tmp_path / "ix", mmap=True), q) == _hits(alice_index, q)
