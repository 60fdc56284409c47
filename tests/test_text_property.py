"""Property test: random texts in several scripts through split_sentences and MixPR give a correct
result (exact offsets, sentences covering the text without overlap) or a ValueError / TypeError
naming the argument, never anything else."""

from __future__ import annotations

import numpy as np
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRIndex
from longctx.text import chunk_words, split_sentences

_PIECES = [
    "The cat sat on the mat",
    "Natásha smiled",
    "熊猫吃竹子",
    "大熊猫是中国特有的动物",
    "ひらがなとカタカナ",
    "ประเทศไทย",
    "Привет мир",
    "😀🎉",
    "42",
    "é",
]
_PUNCT = [". ", "! ", "?", "。", "！", "？", "、", "，", "!!!!!!!!!!!!", "!?!?!?!?!?", "...", "…"]
_SPACE = [" ", "\n", "\n\n", "\t", "\r\n", "\u3000", ""]

_GRAPHEME = regex.compile(r"\X")

_token = st.one_of(
    st.sampled_from(_PIECES),
    st.sampled_from(_PUNCT),
    st.sampled_from(_SPACE),
    st.text(min_size=1, max_size=4),  # any code points, lone surrogates included
)
texts = st.lists(_token, min_size=0, max_size=40).map("".join)


def _check_cover(text, spans):
    covered = np.zeros(len(text), dtype=np.int64)
    last = 0
    for a, b in spans:
        assert isinstance(a, int) and isinstance(b, int)
        assert last <= a < b <= len(text)
        # a span may start with a space only when the space carries a combining mark
        # (one grapheme cluster, never cut: tests/test_text_graphemes.py)
        assert not text[a].isspace() or _GRAPHEME.match(text, a).end() > a + 1
        assert not text[b - 1].isspace() or _GRAPHEME.match(text, b - 1).end() == b
        covered[a:b] += 1
        last = b
    assert all(covered[i] == 1 for i, c in enumerate(text) if not c.isspace())


def _surrogate(s):
    return any("\ud800" <= c <= "\udfff" for c in s)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_split_sentences_and_chunks_cover_the_text(text):
    try:
        spans = split_sentences(text)
    except ValueError as exc:
        assert _surrogate(text) and "text" in str(exc)
        return
    assert not _surrogate(text)
    _check_cover(text, spans)
    _check_cover(text, chunk_words(text, 8, sentences=spans))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, min_size=1, max_size=3), texts)
def test_mixpr_hits_are_exact_or_a_named_error(docs, query):
    try:
        index = MixPRIndex.from_texts(docs)
    except (ValueError, TypeError) as exc:
        assert "texts" in str(exc)
        return
    try:
        result = index.search(query, k=5)
    except (ValueError, TypeError) as exc:
        assert "query" in str(exc)
        return
    seen = set()
    for h in result.hits:
        assert docs[h.source][h.start : h.end] == h.text and h.text.strip()
        assert (h.source, h.start) not in seen
        seen.add((h.source, h.start))


@given(
    st.text(
        alphabet=" \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u202f\u3000ab\u200bé\U0001f600",
        max_size=60,
    )
)
def test_vectorized_word_starts_equal_the_regex(s):
    from longctx.text import _WORD_RE, _space_word_starts

    assert _space_word_starts(s).tolist() == [m.start() for m in _WORD_RE.finditer(s)]
    long = s * (300 // max(len(s), 1) + 1)  # the code-point path (texts of 256+ characters)
    assert _space_word_starts(long).tolist() == [m.start() for m in _WORD_RE.finditer(long)]


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet=" \t\n\x0b\x1c\x85\xa0\u2000\u3000ab.é", max_size=400),
    st.lists(st.integers(0, 400), max_size=150),
)
def test_partition_to_spans_many_pieces_equal_one_by_one(text, cuts):
    from longctx.text import _partition_to_spans, _strip_span

    starts = sorted({c for c in cuts if c <= len(text)})
    bounds = sorted(set(starts) | {0}) + [len(text)]
    want = [x for a, b in zip(bounds[:-1], bounds[1:]) if (x := _strip_span(text, a, b))]
    assert _partition_to_spans(text, starts) == want  # 64+ pieces take the code-point path
