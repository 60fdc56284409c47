"""Hits, results and the metadata shared by every adapter."""

import numpy as np
import pytest

from longctx.mixpr import MixPRIndex
from longctx.types import (
    META_SOURCE_ID,
    META_START,
    Passage,
    SearchResult,
    hit_id,
    hit_metadata,
    resolve_hit,
    walk_record,
)


def test_hit_metadata_and_ids():
    h = Passage(5, 9, "milk", 0.5, 2, 1)
    meta = hit_metadata(h, "mixpr", "doc")
    assert meta[META_START] == 5 and meta[META_SOURCE_ID] == "doc"
    assert hit_id("doc", h) == "doc#5-9" and hit_id(None, h) == "source1#5-9"
    r = SearchResult((h,), "mixpr", "local", {"rank": 0.1}, {"k": 1})
    assert len(r) == 1 and list(r) == [h] and r.to_dict()["hits"][0]["text"] == "milk"


def test_chained_hits_point_into_the_original_text():
    original = "Mary went home. Mary got the milk there. John slept."
    chunk_meta = hit_metadata(Passage(16, 40, original[16:40], 1.0, 1), "mixpr", "story")
    inner = Passage(9, 17, "the milk", 0.3, 0)  # inside the chunk's text
    shifted, src, chained = resolve_hit(inner, "story#16-40", chunk_meta)
    assert chained and src == "story"
    assert original[shifted.start : shifted.end] == inner.text
    assert hit_id(src, shifted) == "story#25-33"
    same, src2, chained2 = resolve_hit(inner, "plain", {"title": "x"})
    assert same == inner and src2 == "plain" and not chained2


def test_hits_by_score_and_top():
    import math

    import pytest

    hits = (
        Passage(0, 4, "a", 0.1, 0),
        Passage(5, 9, "b", 0.9, 1),
        Passage(10, 14, "c", math.nan, 2),
        Passage(15, 19, "d", 0.9, 3),
        Passage(20, 24, "e", 0.5, 4),
    )
    r = SearchResult(hits, "mixpr")
    assert [h.text for h in r.by_score()] == ["b", "d", "e", "a", "c"]  # ties: document order
    assert [h.text for h in r.top(2)] == ["b", "d"] and len(r.top(99)) == 5
    assert r.hits == hits  # the result itself keeps document order
    with pytest.raises(ValueError, match="n must be >= 1"):
        r.top(0)
    with pytest.raises(TypeError, match="n must be an int"):
        r.top(1.5)
    assert SearchResult((), "mixpr").by_score() == ()


def test_a_ranking_in_info_orders_the_hits_best_first():
    """MixPR's ``keep_firsts``: the kept hits first, each hit keeping its own score."""
    hits = tuple(Passage(i, i + 1, t, s, i) for i, (t, s) in enumerate(zip("abc", (0.9, 0.0, 0.5))))
    r = SearchResult(hits, "mixpr", info={"ranking": (1, 0, 2)})
    assert r.positions() == (1, 0, 2) and r.positions("document") == (0, 1, 2)
    assert [h.text for h in r.by_score()] == ["b", "a", "c"] and r.top(1)[0].text == "b"
    with pytest.raises(ValueError, match="not a permutation"):
        SearchResult(hits, "mixpr", info={"ranking": (0, 0, 2)}).positions()


def test_walk_record_is_the_one_shape_of_a_walks_trace():
    push = walk_record("walk", "push", 3, 0.25, parked=0.125, read=np.int64(7))
    assert list(push) == ["stage", "solver", "steps", "residual", "parked", "read"]
    assert push["read"] == 7 and type(push["read"]) is int and push["parked"] == 0.125
    power = walk_record("multihop", "power", 12, 1e-7)
    assert power == {"stage": "multihop", "solver": "power", "steps": 12, "residual": 1e-7}
    with pytest.raises(ValueError, match="stage"):
        walk_record("route", "push", 1, 0.0)
    with pytest.raises(ValueError, match="solver"):
        walk_record("walk", "exact", 1, 0.0)


@pytest.mark.parametrize(
    "params, stage, keys",
    [
        ({}, "walk", ["stage", "solver", "steps", "residual", "parked", "read"]),
        ({"solver": "power"}, "walk", ["stage", "solver", "steps", "residual"]),
        ({"graph": "threshold"}, "walk", ["stage", "solver", "steps", "residual", "parked", "read"]),
        ({"walk": "multihop"}, "multihop", ["stage", "solver", "steps", "residual", "parked", "read"]),
        ({"walk": "multihop", "multihop": {"solver": "power"}}, "multihop", ["stage", "solver", "steps", "residual"]),
    ],
)  # fmt: skip
def test_search_traces_carry_walk_records(params, stage, keys):
    texts = [
        "Mary went to the kitchen. Mary picked up the Milk there. John went to the garden.",
        "John dropped the Apple in the garden. Sandra took the Milk to the office.",
    ]
    res = MixPRIndex.from_texts(texts, **params).search("Where is the Milk?", k=2, mode="local")
    rec = next(t for t in res.trace if t.get("stage") == stage)
    assert list(rec) == keys and rec["steps"] >= 1 and isinstance(rec["steps"], int)
    if "read" in rec:
        assert type(rec["read"]) is int and 0 <= rec["parked"] <= rec["residual"]
