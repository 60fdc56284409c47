"""``MixPRIndex.insert`` / ``update`` find each long text's distinct characters once (its check,
then its chunker: :func:`longctx.word_pieces.shared_chars`), as ``from_texts`` does. Before,
twice."""

from __future__ import annotations

from unittest import mock

import pytest

import longctx.word_pieces as wp
from longctx.mixpr import MixPRIndex

CJK = "".join(f"第{i}章。小明去了北京的图书馆，读了很多书。" for i in range(400))
MIXED = " ".join(
    f"Alice met 王小明 in Zürich on day {i}; they talked about Émile." for i in range(200)
)


@pytest.fixture
def scans():
    """The ids of the texts ``distinct_chars`` scans (a list, cleared by the test)."""
    real, seen = wp.distinct_chars, []
    with mock.patch.object(
        wp, "distinct_chars", side_effect=lambda t: seen.append(id(t)) or real(t)
    ):
        yield seen


@pytest.mark.parametrize("text", [CJK, MIXED], ids=["cjk", "mixed"])
def test_insert_and_update_find_a_texts_characters_once(text, scans):
    assert len(text) >= wp.CHARS_MIN
    index = MixPRIndex.from_texts(["a first short document about libraries"], ids=["a"])
    scans.clear()
    index.insert([text], ids=["b"])
    assert scans.count(id(text)) == 1  # before: 2
    new = text + " 后记。"
    scans.clear()
    index.update([new], ids=["b"])
    assert scans.count(id(new)) == 1  # before: 2
    assert index.texts[1] == new
    fresh = MixPRIndex.from_texts(["a first short document about libraries", new], ids=["a", "b"])
    assert [(p.start, p.end) for p in index.units()] == [(p.start, p.end) for p in fresh.units()]
