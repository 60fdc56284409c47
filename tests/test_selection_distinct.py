"""``select_distinct``: units with the same key take one slot (issue 38: "TREASURE ISLAND" came
back twice at k=5); ``MixPRIndex.search(unique_texts=True)`` and ``SearchResult.positions``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRIndex
from longctx.selection import select_distinct, select_top
from longctx.types import Passage, SearchResult


def _reference(scores, keys, **kw):
    """select_top over the units left once each key keeps only its best (earliest on a tie)."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    first = {}
    for i in order:
        first.setdefault(keys[i], i)
    keep = np.array(sorted(first.values()), dtype=np.int64)
    if "token_counts" in kw:
        kw = {**kw, "token_counts": np.asarray(kw["token_counts"])[keep]}
    return keep[select_top(np.asarray(scores)[keep], **kw)]


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(1, 6)), min_size=1, max_size=40
    ),
    k=st.integers(1, 12),
    budget=st.integers(6, 30),
)
def test_equals_select_top_over_the_distinct_units(data, k, budget):
    scores = [float(s) for s, _, _ in data]  # few values: many ties
    keys = [key for _, key, _ in data]
    counts = [c for _, _, c in data]
    got = select_distinct(np.array(scores), keys.__getitem__, k=k)
    assert got.tolist() == _reference(scores, keys, k=k).tolist()
    assert len({keys[i] for i in got}) == len(got)
    got = select_distinct(
        np.array(scores), keys.__getitem__, token_budget=budget, token_counts=np.array(counts)
    )
    want = _reference(scores, keys, token_budget=budget, token_counts=counts)
    assert got.tolist() == want.tolist()
    assert sum(counts[i] for i in got) <= budget


def test_bad_sizes_raise_as_select_top():
    with pytest.raises(ValueError, match="exactly one"):
        select_distinct(np.zeros(3), lambda i: i)
    with pytest.raises(ValueError, match="token_counts"):
        select_distinct(np.zeros(3), lambda i: i, token_budget=3)


BOOK = (
    "TREASURE ISLAND\n\nSquire Trelawney asked me to write down the whole story of the island.\n\n"
    "TREASURE ISLAND\n\nThe old sea dog came to the Admiral Benbow inn with his sea chest.\n\n"
    "TREASURE ISLAND\n\nLong John Silver kept the Spy-glass tavern near the docks."
)


def test_identical_unit_texts_take_one_slot():
    index = MixPRIndex.from_texts([BOOK, "TREASURE  ISLAND\n"], ids=["book", "title"])
    q = "TREASURE ISLAND"
    plain = index.search(q, k=3)
    assert sum(h.text.strip() == "TREASURE ISLAND" for h in plain.hits) >= 2  # the bug
    one = index.search(q, k=3, unique_texts=True)
    titles = [h for h in one.hits if " ".join(h.text.split()) == "TREASURE ISLAND"]
    assert len(titles) == 1 and len(one.hits) == 3  # the freed slots go to other units
    assert titles[0].score == max(h.score for h in plain.hits)
    assert one.info["doc_ids"] == tuple(index.doc_ids[h.source] for h in one.hits)
    by_budget = index.search(q, token_budget=40, unique_texts=True)
    assert sum(" ".join(h.text.split()) == "TREASURE ISLAND" for h in by_budget.hits) == 1


def test_positions_best_first_or_document_order():
    hits = tuple(
        Passage(i, i + 1, "x", s, i, 0) for i, s in enumerate([0.2, 0.9, float("nan"), 0.9])
    )
    r = SearchResult(hits, "mixpr")
    assert r.positions() == (1, 3, 0, 2)  # ties keep document order, NaN last
    assert [r.hits[j] for j in r.positions("score")] == list(r.by_score())
    assert r.positions("document") == (0, 1, 2, 3)
    with pytest.raises(ValueError, match="order must be one of"):
        r.positions("best")
