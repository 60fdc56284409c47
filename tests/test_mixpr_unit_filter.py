"""What a query reads (issue 46): a filter is held as its documents' unit ranges
(:class:`longctx.mixpr.unit_filter.UnitFilter`), a global query takes its top k from the
PageRank order sorted once, and ``whole_documents`` picks documents from sparse scores; each
gives the very results of the dense path (every unit's mask, score vector, maximum)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRIndex
from longctx.mixpr.hits import _best_documents, _best_documents_dense
from longctx.mixpr.unit_filter import UnitFilter, document_starts
from longctx.selection import SparseScores, select_top

WORDS = "whale ship captain sea harpoon storm island map gold crew sail anchor".split()


def _docs(n_docs: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_docs):
        sents = [" ".join(rng.choice(WORDS, 6)) + "." for _ in range(rng.integers(1, 6))]
        out.append(" ".join(sents))
    return out


@pytest.fixture(scope="module")
def index():
    docs = _docs(40)
    md = [{"n": i, "even": i % 2 == 0, "third": i % 3 == 0} for i in range(len(docs))]
    return MixPRIndex.from_texts(docs, metadatas=md, max_words=4)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 5), min_size=1, max_size=12),
    data=st.data(),
)
def test_unit_filter_units_are_the_kept_documents_units(sizes, data):
    unit_doc = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)
    docs = np.array(data.draw(st.lists(st.booleans(), min_size=len(sizes), max_size=len(sizes))))
    want = np.flatnonzero(docs[unit_doc])
    for starts in (document_starts(unit_doc, len(sizes)), None):
        f = UnitFilter(docs, unit_doc, starts)
        np.testing.assert_array_equal(f.units, want)
        np.testing.assert_array_equal(f.dense(), docs[unit_doc])
        assert len(f) == len(want)
        probe = np.arange(len(unit_doc))
        np.testing.assert_array_equal(f.at(probe), docs[unit_doc])
        assert not f.units.flags.writeable and not f.dense().flags.writeable


def test_document_starts_needs_units_in_document_order():
    assert document_starts(np.array([0, 0, 2, 2, 2]), 4).tolist() == [0, 2, 2, 5, 5]
    assert document_starts(np.array([1, 0]), 2) is None
    f = UnitFilter(np.array([True, False]), np.array([1, 0, 0]), None)  # one pass
    assert f.units.tolist() == [1, 2]


@pytest.mark.parametrize("flt", [None, {"even": True}, {"third": True}, {"n": {"$in": [3, 7]}}])
@pytest.mark.parametrize("k", [1, 5, 37, 10_000])
def test_global_top_k_equals_the_dense_selection(index, flt, k):
    pr = index.global_pagerank()
    mask = index.unit_mask(flt)
    allowed = np.arange(index.n_units) if mask is None else np.flatnonzero(mask)
    want = allowed[select_top(pr[allowed], k=k)]
    res = index.search("anything", k=k, mode="global", filters=flt)
    got = [(h.source, h.start) for h in res.hits]
    st_ = index._state
    assert got == [(int(st_.unit_source[i]), int(st_.starts[i])) for i in want]
    assert [h.score for h in res.hits] == pr[want].tolist()
    assert index._state.block._global_order is not None  # taken from the order, sorted once
    # a token budget reads every unit's score, as before
    counts = index.token_counts[allowed]
    want = allowed[select_top(pr[allowed], token_budget=40, token_counts=counts)]
    res = index.search("anything", token_budget=40, mode="global", filters=flt)
    assert [(h.source, h.start) for h in res.hits] == [
        (int(st_.unit_source[i]), int(st_.starts[i])) for i in want
    ]


def test_global_top_k_breaks_ties_to_the_earlier_unit():
    docs = ["whale ship.", "whale ship.", "whale ship.", "storm island."]
    index = MixPRIndex.from_texts(docs)
    pr = index.global_pagerank()
    assert pr[0] == pr[1] == pr[2]
    for k in (1, 2, 3):
        want = select_top(pr, k=k)
        got = [h.source for h in index.search("x", k=k, mode="global").hits]
        assert got == want.tolist()


@pytest.mark.parametrize("flt", [None, {"even": True}, {"n": 5}])
@pytest.mark.parametrize("k", [1, 3, 40])
def test_whole_documents_from_sparse_or_dense_scores_equal_the_sorting_path(index, flt, k):
    mask = index._mask(index._state, flt)
    starts = index._state.block.doc_starts()
    src = index.unit_source
    rng = np.random.default_rng(k)
    for trial in range(20):
        m = rng.integers(0, index.n_units + 1)
        idx = np.sort(rng.choice(index.n_units, m, replace=False))
        vals = rng.integers(0, 4, m).astype(np.float64) / 4  # ties and zeros
        sparse = SparseScores(index.n_units, idx, vals)
        dense = sparse.dense()
        units = np.arange(index.n_units) if mask is None else mask.units
        n_docs = len(index.doc_ids)
        want_best = np.full(n_docs, -np.inf)
        np.maximum.at(want_best, src[units], dense[units])
        want_arg = np.full(n_docs, -1)
        order = units[np.argsort(dense[units], kind="stable")]
        want_arg[src[order]] = order
        docs = np.flatnonzero(want_arg >= 0)
        want = docs[select_top(want_best[docs], k=k)]
        for top, best, arg in (
            _best_documents(src, starts, sparse, mask, k),
            _best_documents_dense(starts, dense, mask, k),
        ):
            assert top.tolist() == want.tolist(), trial
            assert best.tolist() == want_best[want].tolist(), trial
            assert arg.tolist() == want_arg[want].tolist(), trial


def test_whole_documents_search_equals_the_dense_path(index, monkeypatch):
    import longctx.mixpr.hits as hits
    import longctx.mixpr.push as push
    import longctx.mixpr.scoring as scoring
    from longctx.mixpr.hits import document_hits

    for mod in (push, scoring):  # keep the walk's scores sparse whatever it reaches
        monkeypatch.setattr(mod, "RESULT_SHARE", 1e-9)
    monkeypatch.setattr(push, "COUNT_SHARE", 1e-9)
    seen = []
    real = hits._best_documents
    monkeypatch.setattr(hits, "_best_documents", lambda *a: seen.append(1) or real(*a))
    for flt in (None, {"even": True}):
        mask = index._mask(index._state, flt)
        for q in ["whale captain", "storm gold map", "anchor"]:
            got = index.search(q, k=4, whole_documents=True, filters=flt, mode="local")
            scores, _, _ = index.score(q, "local", filters=flt)  # (n,): the dense path
            want = document_hits(index._state, scores, 4, "mixpr", "local", {}, 0.0, mask)
            assert got.hits and [(h.source, h.index, h.score) for h in got.hits] == [
                (h.source, h.index, h.score) for h in want.hits
            ]
    assert len(seen) == 6  # every search took the sparse path
