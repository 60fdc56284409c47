"""Hits, results and the metadata shared by every adapter."""

from longctx.types import (
    META_SOURCE_ID,
    META_START,
    Passage,
    SearchResult,
    hit_id,
    hit_metadata,
    resolve_hit,
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
