"""The one test of "``E`` by rows made from the counts" (:func:`longctx.mixpr.counts.is_count_rows`,
defined in :mod:`longctx.mixpr.push`, which counts imports): every reader of a block's rows
(``PushBlock.set_rows`` / ``_rows_csr`` / ``_push_emit``, ``push.gather_summed``, explain's row
entries) asks it instead of its own ``hasattr``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from longctx.io import sample_text
from longctx.mixpr import MixPRIndex, counts, push
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.counts import CountRows, compact_counts, is_count_rows
from longctx.mixpr.tfidf import TfidfSettings


def _count_rows() -> CountRows:
    c = compact_counts(sp.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])))
    return CountRows(c, TfidfSettings(MixPRConfig()), np.ones(3), np.array([np.sqrt(5.0), 3.0]))


def test_is_count_rows_tells_count_rows_from_scipy_matrices():
    rows = _count_rows()
    assert counts.is_count_rows is push.is_count_rows  # one function, two names
    assert is_count_rows(rows)
    csr = rows.csr()
    for m in (csr, sp.csr_matrix(csr), sp.csc_array(csr), sp.coo_array(csr), csr.toarray()):
        assert not is_count_rows(m), type(m).__name__
    assert not is_count_rows(None)


@pytest.mark.parametrize("held_max", [0, None])
def test_a_block_holding_either_form_gives_one_csr(held_max, monkeypatch):
    """Past ``ROWS_HELD_MAX`` the block holds a ``CountRows`` (``held_max=0``), else a CSR:
    ``set_rows`` keeps either as it is, ``_rows_csr`` gives the same matrix, and a search with
    ``explain=True`` (explain's row entries) reads both alike."""
    if held_max is not None:
        monkeypatch.setattr("longctx.mixpr.counts.ROWS_HELD_MAX", held_max)
    text = sample_text("alice")[:40_000]
    index = MixPRIndex.from_texts(text)
    q = "What did the Mock Turtle sing about?"
    got = index.search(q, k=5, explain=True)
    block = index._state.block
    rows = block._rows()
    assert is_count_rows(rows) == (held_max == 0)
    block.set_rows(rows)
    kept = block._rows()  # a CountRows is kept as it is, a CSR's arrays are not copied
    assert kept is rows if held_max == 0 else np.shares_memory(kept.data, rows.data)
    csr = block._rows_csr()
    assert isinstance(csr, sp.csr_array) and not is_count_rows(csr)
    E = sp.csr_array(index._state.table.embeddings())
    assert np.array_equal(csr.indptr, E.indptr) and np.array_equal(csr.data, E.data)
    assert all(h.explanation is not None for h in got.hits)


def test_the_two_forms_rank_alike(monkeypatch):
    text = sample_text("alice")[:40_000]
    q = "Who was reading the list of singers?"
    plain = MixPRIndex.from_texts(text).search(q, k=10, explain=True)
    monkeypatch.setattr("longctx.mixpr.counts.ROWS_HELD_MAX", 0)
    made = MixPRIndex.from_texts(text)
    counted = made.search(q, k=10, explain=True)
    assert is_count_rows(made._state.block._rows())
    assert [h.start for h in counted.hits] == [h.start for h in plain.hits]
    assert [h.score for h in counted.hits] == [h.score for h in plain.hits]
    assert [h.explanation["shares"] for h in counted.hits] == [
        h.explanation["shares"] for h in plain.hits
    ]
