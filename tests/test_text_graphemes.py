"""No unit or sentence boundary falls inside an extended grapheme cluster (Unicode UAX #29, the
regex module's ``\\X``): emoji ZWJ sequences, flags, skin tones, combining marks, Hangul jamo and
Thai vowels stay whole, and the units still cover the text exactly."""

from __future__ import annotations

from collections import Counter

import numpy as np
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRIndex
from longctx.text import (
    MAX_SPACELESS_SENTENCE_CHARS,
    _grapheme_clusters,
    chunk_words,
    split_long_spans,
    split_sentences,
)
from tests._intl_texts import JA, TH, ZH

FAMILY = "👨\u200d👩\u200d👧"
FLAGS = "🇫🇷🇩🇪🇯🇵"
THUMB = "👍🏽"
_GRAPHEME = regex.compile(r"\X")


def _is_flag(g: str) -> bool:
    return "\U0001f1e6" <= g[0] <= "\U0001f1ff"


def _boundaries(text: str) -> set[int]:
    return {0} | {m.end() for m in _GRAPHEME.finditer(text)}


def _check(text: str, spans) -> None:
    """Spans in order, without overlap, every edge a grapheme boundary, covering every
    non-space character exactly once; a span starts with a space only when the space carries
    a combining mark (one grapheme)."""
    bounds = _boundaries(text)
    covered = np.zeros(len(text), dtype=np.int64)
    last = 0
    for a, b in spans:
        assert last <= a < b <= len(text)
        assert a in bounds and b in bounds, (a, b, text[max(0, a - 2) : b + 2])
        if text[a].isspace():
            assert _GRAPHEME.match(text, a).end() > a + 1
        covered[a:b] += 1
        last = b
    nonspace = np.array([not c.isspace() for c in text], dtype=bool)
    assert (covered[nonspace] == 1).all() and covered.max() <= 1


def _salted(text: str) -> str:
    """``text`` with emoji sequences, flags and skin tones after every clause mark."""
    for mark in "，、,":
        text = text.replace(mark, FAMILY + FLAGS + THUMB + mark)
    return text


def test_emoji_in_chinese_and_thai_stay_whole():
    """The issue: 22 broken units in Chinese, 12 in Thai; flags cut in half."""
    for base in (ZH, JA, TH):
        text = _salted(base) * 4
        sentences = split_sentences(text)
        _check(text, sentences)
        for max_words in (1, 3, 32):
            chunks = chunk_words(text, max_words, sentences=sentences)
            _check(text, chunks)
            assert sum(text[a:b].count(FAMILY) for a, b in chunks) == text.count(FAMILY)
            # the same flags come back (a flag cut in half pairs its halves with other flags)
            pieces = [g for a, b in chunks for g in _GRAPHEME.findall(text[a:b])]
            assert Counter(g for g in pieces if _is_flag(g)) == Counter(
                g for g in _GRAPHEME.findall(text) if _is_flag(g)
            )
            assert pieces.count(THUMB) == text.count(THUMB)


def test_long_run_of_emoji_without_punctuation():
    text = "中" + (FAMILY + FLAGS + THUMB + "文") * 200
    spans = split_sentences(text)
    _check(text, spans)
    assert len(spans) > 1
    assert max(b - a for a, b in spans) <= MAX_SPACELESS_SENTENCE_CHARS + len(FAMILY)


def test_combining_marks_stay_on_their_character():
    """``"中" + "\\u0301" * 5000`` gave 4,842 units of lone combining marks: it is one grapheme
    cluster, so it is one unit (a unit longer than the limits only when it is one cluster)."""
    text = "中" + "\u0301" * 5000
    assert split_sentences(text) == [(0, len(text))]
    assert chunk_words(text) == [(0, len(text))]
    mixed = ("中" + "\u0301" * 3 + "文") * 500
    spans = split_sentences(mixed)
    _check(mixed, spans)
    assert max(b - a for a, b in spans) <= MAX_SPACELESS_SENTENCE_CHARS
    _check(mixed, chunk_words(mixed, 5, sentences=spans))


def test_thai_vowels_stay_on_their_letter():
    # ำ (U+0E33) is a spacing mark of category Lo: the 160-character cut fell before it
    text = "ก" * 159 + ("กำลัง" + "ทำงาน") * 100
    spans = split_sentences(text)
    _check(text, spans)
    _check(text, chunk_words(text, 4, sentences=spans))


def test_split_long_spans_and_mixpr_keep_clusters():
    text = ("猫\u0301字" + THUMB + "🇫🇷 ") * 300
    spans = split_sentences(text)
    for max_tokens in (1, 2, 3, 10):
        _check(text, split_long_spans(text, spans, max_tokens))
    hits = MixPRIndex.from_texts(text).search("猫", k=5).hits
    bounds = _boundaries(text)
    assert hits and all(h.start in bounds and h.end in bounds for h in hits)


def test_plain_text_has_no_clusters(alice_text):
    assert _grapheme_clusters(alice_text) == []
    assert _grapheme_clusters(ZH) == []
    assert _grapheme_clusters(" \u0301x" + FLAGS) == [(0, 2), (3, 5), (5, 7), (7, 9)]


# -- property test: random grapheme sequences ---------------------------------------------
_BASES = list("aeiouxyzAEZ中文猫熊字ひカ가한ก") + ["ข", "द", "ק", "ب"]
_MARKS = ["\u0301", "\u0300", "\u0308", "\u0327", "\u0e31", "\u0e49", "\u093f", "\u094d", "\ufe0f"]
_EMOJI = [FAMILY, "👩\u200d💻", "❤\ufe0f", "👍🏽", "👋🏿", "🏳\ufe0f\u200d🌈", "😀"]
_FLAGS = ["🇫🇷", "🇩🇪", "🇯🇵", "🇺🇸", "🇬🇧", "\U0001f1e6"]  # and a lone regional indicator
_HANGUL = ["\u1100\u1161", "\u1100\u1161\u11a8", "\u1112\u1161\u11ab", "\u11a8", "\uac00\u11a8"]
_THAI = ["กำ", "ลัง", "ที่", "เป็น", "น้ำ"]
_SEPARATORS = [
    " ",
    "  ",
    "\n",
    "\n\n",
    "\t",
    "\r\n",
    "。",
    "！",
    "？",
    ". ",
    "! ",
    "? ",
    "，",
    "\u3000",
]

_grapheme = st.one_of(
    st.builds(
        lambda b, ms: b + "".join(ms),
        st.sampled_from(_BASES + [" "]),
        st.lists(st.sampled_from(_MARKS), max_size=4),
    ),
    st.sampled_from(_EMOJI),
    st.sampled_from(_FLAGS),
    st.sampled_from(_HANGUL),
    st.sampled_from(_THAI),
    st.sampled_from(_SEPARATORS),
)
grapheme_texts = st.lists(_grapheme, min_size=1, max_size=120).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=grapheme_texts, max_words=st.integers(1, 6))
def test_boundaries_are_grapheme_boundaries(text, max_words):
    spans = split_sentences(text)
    _check(text, spans)
    _check(text, chunk_words(text, max_words, sentences=spans))
    _check(text, chunk_words(text, max_words, sentences=spans, split_lines=False, min_words=2))
    _check(text, split_long_spans(text, spans, 4))


def test_ascii_text_has_no_cluster_to_find_and_builds_no_pattern():
    """The O(1) ASCII shortcut of ``_grapheme_clusters`` (a first query no longer compiles the
    patterns, ~13 ms): no ASCII character is an extender, so the full test finds none."""
    from longctx.text import _grapheme_patterns

    every_ascii = "".join(map(chr, range(128)))
    quick, runs, _ = _grapheme_patterns()
    assert quick.search(every_ascii) is None and runs.search(every_ascii) is None
    _grapheme_patterns.cache_clear()
    try:
        assert _grapheme_clusters("Who is he?\r\n" + every_ascii) == []
        assert _grapheme_patterns.cache_info().currsize == 0
        assert _grapheme_clusters("e\u0301") == [(0, 2)]  # not ASCII: the full test
    finally:
        _grapheme_patterns.cache_clear()
