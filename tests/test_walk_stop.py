"""Issue 44, the smaller items: ``tol=0`` stops when nothing moves (it ran ``max_iter`` empty
levels), the push walk's trace keeps ``tol``'s bound to the moving mass (the parked mass is
reported apart), and a sharded index says in its trace which walk it took and why."""

from __future__ import annotations

import numpy as np
import pytest

from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.mixpr import MixPRIndex
from tests.test_limits import PASSAGES, QUESTION

TEXT = " ".join(
    f"The {a} met the {b} near the {c} river. The {b} told the {c} about the {a}."
    for a, b, c in zip(
        ["fox", "owl", "cat", "dog", "elk", "bee"] * 4,
        ["king", "miller", "smith", "queen", "baker", "tailor"] * 4,
        ["north", "south", "old", "green", "still", "wide"] * 4,
    )
)


def _walk(result, stage: str = "walk") -> dict:
    return next(t for t in result.trace if t.get("stage") == stage)


@pytest.mark.parametrize(
    "params",
    [
        {},  # the factored graph's push
        {"graph": "threshold"},  # the thresholded graph's push
        {"solver": "power"},
        {"graph": "threshold", "solver": "power"},
    ],
)
def test_tol_zero_stops_when_nothing_moves(params):
    index = MixPRIndex.from_texts(TEXT, max_words=12, tol=0.0, max_iter=10_000, **params)
    result = index.search("Where did the fox meet the king?", k=5)
    walk = _walk(result)
    assert walk["steps"] < 10_000  # it ran all 10,000 levels (1.2 s on Alice)
    if walk["solver"] == "push":  # stopped with nothing moving: all unsettled mass is parked
        assert walk["residual"] == pytest.approx(walk["parked"], abs=0.0)
    else:  # a fixed point: one more step changes nothing
        assert walk["residual"] == 0.0
        more = MixPRIndex.from_texts(
            TEXT, max_words=12, tol=0.0, max_iter=walk["steps"] + 50, **params
        )
        a = index.score("Where did the fox meet the king?", mode="local")[0]
        b = more.score("Where did the fox meet the king?", mode="local")[0]
        np.testing.assert_array_equal(a, b)


def test_tol_zero_multihop_walk_stops_when_nothing_moves():
    index = MixPRIndex.from_texts(
        PASSAGES, chunk=False, walk="multihop", multihop={"tol": 0.0, "max_iter": 10_000}
    )
    walk = _walk(index.search(QUESTION, k=2), "multihop")
    assert walk["solver"] == "push" and walk["steps"] < 10_000


def test_a_sharded_index_on_passages_says_it_walks_pagerank():
    one = MixPRIndex.from_texts(PASSAGES, chunk=False)
    route = one.search(QUESTION, k=2).trace[0]
    assert route["stage"] == "route" and route["walk"] == "multihop"
    sharded = ShardedMixPRIndex.from_texts(PASSAGES, chunk=False, shards=2)
    trace = sharded.search(QUESTION, k=2).trace
    assert trace[0]["stage"] == "route" and trace[0]["walk"] == "pagerank"
    assert trace[0]["corpus"] == "passages" and "sharded index" in trace[0]["reason"]
    book = ShardedMixPRIndex.from_texts([TEXT], shards=1, max_words=12)
    assert book.search("fox", k=2).trace[0] == {
        "stage": "route",
        "corpus": "one document",
        "walk": "pagerank",
        "reason": "one document",
    }
