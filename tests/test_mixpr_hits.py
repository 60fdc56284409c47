"""``longctx.mixpr.hits.unit_hits``: a selection's hits built together equal the hits built one
by one (``unit_hit``), in memory and from a memory-mapped save."""

from __future__ import annotations

import numpy as np
import pytest

from longctx import sample_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.hits import unit_hit, unit_hits


@pytest.fixture(scope="module")
def index():
    text = sample_text("alice")
    return MixPRIndex.from_texts([text[:30_000], text[30_000:52_000], "Short one."])


def _one_by_one(st, idx, vals):
    return tuple(unit_hit(st, int(i), float(v)) for i, v in zip(idx, vals))


def test_unit_hits_equal_unit_hit_of_each(index):
    st = index._state
    rng = np.random.default_rng(0)
    for idx in (np.arange(st.n_units), rng.choice(st.n_units, 40, replace=False), [3]):
        idx = np.sort(np.asarray(idx, np.int64))
        vals = rng.random(len(idx))
        got = unit_hits(st, idx, vals)
        want = _one_by_one(st, idx, vals)
        assert got == want and len(got) == len(idx)
        assert [(h.index, h.source, h.score) for h in got] == [
            (w.index, w.source, w.score) for w in want
        ]
        assert all(type(x) is int for h in got for x in (h.start, h.end, h.index, h.source))
        assert all(type(h.score) is float for h in got)
    assert unit_hits(st, np.zeros(0, np.int64), np.zeros(0)) == ()


def test_a_mapped_index_gives_the_same_hits(index, tmp_path):
    index.save(tmp_path / "ix")
    mapped = MixPRIndex.load(tmp_path / "ix", mmap=True)
    for q, kw in (("Who was late?", {"k": 7}), ("What did the Queen say?", {"token_budget": 300})):
        a = index.search(q, unique_texts=True, **kw)
        b = mapped.search(q, unique_texts=True, **kw)
        assert a.hits == b.hits and [h.score for h in a.hits] == [h.score for h in b.hits]
        assert len(a.hits) > 1
