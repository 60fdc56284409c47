"""longctx.word_pieces: the long sentences' pieces on arrays equal the sentence-by-sentence loop
(issue 46: MixPR's build)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.text import (
    _WORD_RE,
    _partition_to_spans,
    _sentence_pieces,
    _space_words,
    _Words,
    chunk_words,
    split_sentences,
)
from longctx.word_pieces import unwrapped_pieces

# words, sentence marks, and every kind of space and line break (no grapheme cluster, no CJK)
_PIECES = ["a", "word", "Natásha", "42", "a.", "Mr.", "x,y", "!", "?", "The", "end."]
_SPACES = [" ", "  ", "\n", "\n\n", "\n \t\n", "\r\n", "\r\n\r\n", "\t", "\x0b", "\u2028", ""]
texts = st.lists(st.sampled_from(_PIECES + _SPACES), max_size=120).map("".join)


def _both(text, sentences, max_words):
    words = _space_words(text)
    sent = np.asarray(sentences, dtype=np.int64).reshape(-1, 2)
    n_words = np.searchsorted(words[0], sent[:, 1]) - np.searchsorted(words[0], sent[:, 0])
    fast = unwrapped_pieces(text, sentences, sent, n_words, words, max_words)
    loop = _sentence_pieces(
        text, sentences, n_words, _Words(text, _WORD_RE, [], words), max_words, False
    )
    return fast, loop


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, max_words=st.integers(1, 6), data=st.data())
def test_unwrapped_pieces_equal_the_loop(text, max_words, data):
    # the splitter's sentences, and arbitrary cuts (a sentence may then start inside a word)
    cuts = data.draw(st.lists(st.integers(0, max(len(text), 1)), max_size=8))
    for sentences in (split_sentences(text, "rules"), _partition_to_spans(text, cuts)):
        if not sentences:
            continue
        fast, loop = _both(text, sentences, max_words)
        assert fast == loop
        assert all(isinstance(a, int) and isinstance(b, int) for a, b in fast)


def test_unwrapped_pieces_on_long_sentences_and_paragraphs():
    words = [f"w{i}" for i in range(1000)]
    text = " ".join(words[:700]) + ".\n\n" + "\n".join(words[700:]) + "\n \n" + "Short one."
    sentences = split_sentences(text, "rules")
    fast, loop = _both(text, sentences, 32)
    assert fast == loop
    assert len(fast) == -(-700 // 32) + -(-300 // 32) + 1
    assert all(1 <= len(text[a:b].split()) <= 32 for a, b in fast)
    assert chunk_words(text, 32, split_lines=False, backend="rules") == fast


def test_shared_words_finds_a_texts_words_once_per_block():
    import threading

    from longctx import word_pieces
    from longctx.word_pieces import shared_words, space_words

    text, other = "alpha beta  gamma\n" * 40, "delta epsilon " * 30
    calls = []
    real = word_pieces._find_words

    def counting(t):
        calls.append(t)
        return real(t)

    word_pieces._find_words = counting
    try:
        with shared_words():
            a = space_words(text)
            assert space_words(text) is a  # kept
            assert not a[0].flags.writeable
            seen = []
            worker = threading.Thread(target=lambda: seen.append(space_words(text)))
            worker.start()
            worker.join()
            assert seen[0] is not a  # another thread has no shared block
            space_words(other)
            assert space_words(text) is not a  # one text kept: the other replaced it
        assert space_words(text) is not space_words(text)  # outside: found at each call
    finally:
        word_pieces._find_words = real
    assert len(calls) == 6
    assert a[0].tolist() == [m.start() for m in _WORD_RE.finditer(text)]


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab \n’é中\u0e01\u0301\U0001f600\ufeff", min_size=1, max_size=50))
def test_text_chars_are_the_distinct_non_ascii_characters(piece):
    from longctx.word_pieces import CHARS_MIN, text_chars

    text = piece * (CHARS_MIN // len(piece) + 1)
    chars = text_chars(text)
    assert chars == "".join(sorted({c for c in text if ord(c) >= 128}))
    assert text_chars(piece[: CHARS_MIN - 1]) is None  # short: the callers search it


@settings(max_examples=100, deadline=None)
@given(
    st.text(alphabet="ab \n’é中\u0e01\u0301\ud800", min_size=1, max_size=40),
    st.integers(0, 5000),
    st.integers(0, 5000),
    st.booleans(),
)
def test_has_char_answers_as_a_search_of_the_text(piece, start, end, whole):
    """``has_char`` (the chunker's, the TF-IDF's and ``check_text``'s one shortcut) says what a
    search of the text says, long or short, whole or a range; ``distinct_chars`` (also
    ``terms``' folding) is the sorted set of non-ASCII characters at any length."""
    import re

    from longctx.word_pieces import CHARS_MIN, distinct_chars, has_char

    text = piece * (CHARS_MIN // len(piece) + 1) if whole else piece
    start, end = min(start, end, len(text)), min(max(start, end), len(text))
    for pattern in ("[中\u0e01]", "[\ud800-\udfff]", "[\u0300-\u036f]", "[é]"):
        r = re.compile(pattern)
        assert has_char(r, text) == (r.search(text) is not None)
        assert has_char(r, text, start, end) == (r.search(text, start, end) is not None)
    assert distinct_chars(text) == "".join(sorted({c for c in text if ord(c) >= 128}))


def test_long_texts_scripts_and_surrogates_found_through_their_characters():
    import pytest

    from longctx.checks import check_text
    from longctx.text import _grapheme_clusters, _scripts
    from longctx.word_pieces import CHARS_MIN

    filler = "plain words and ’curly’ quotes " * (CHARS_MIN // 20)
    family = "👨\u200d👩\u200d👧"
    clusters, spaceless = _scripts(filler + family + filler)
    assert clusters == [(len(filler), len(filler) + len(family))] and not spaceless
    assert _scripts(filler + "中文" + filler) == ([], True)
    assert _grapheme_clusters(filler) == [] and _scripts(filler) == ([], False)
    with pytest.raises(ValueError, match=f"U\\+D800\\) at character {len(filler)}"):
        check_text(filler + "\ud800" + filler)
    assert check_text(filler) is filler


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="a \x7f\x80é中\ud800\U0010ffff\U0001f600", max_size=30), st.integers(0, 3))
def test_distinct_chars_the_same_sorted_or_marked(piece, scale):
    """Below ``MARK_MIN_CHARS`` the code points are sorted, from it on marked in a table of
    every code point: both the sorted set of non-ASCII characters (U+0080 and U+10FFFF
    included, U+007F not)."""
    from longctx.word_pieces import MARK_MIN_CHARS, distinct_chars

    for n in (0, MARK_MIN_CHARS - 1, MARK_MIN_CHARS, MARK_MIN_CHARS * (scale + 1) + 7):
        text = (piece * (n // max(len(piece), 1) + 1))[:n] if piece else "x" * n
        assert distinct_chars(text) == "".join(sorted({c for c in text if ord(c) >= 128}))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="aA Σσςİı\u212aKßǅǄ\u0130\u1e9eÉé中\u0301", max_size=40))
def test_lowered_chars_are_those_of_the_lowered_text(text):
    """The TF-IDF's folding reads the lowered text's characters from the text's own (the final
    sigma read again): the same string as a pass over the lowered text."""
    from longctx.word_pieces import distinct_chars, lowered_chars

    assert lowered_chars(distinct_chars(text), text.lower()) == distinct_chars(text.lower())


def test_a_build_finds_each_long_texts_characters_once(monkeypatch):
    """``MixPRIndex.from_texts`` checks a text, then its chunker reads it again: its distinct
    characters are found once (before: twice, ~27 ms each on 1M CJK characters), and the
    TF-IDF finds those of its joined units once (before: twice, for the folding and the CJK
    search); the index is the same."""
    import longctx.terms
    from longctx import word_pieces
    from longctx.mixpr import MixPRIndex

    rng = np.random.default_rng(0)
    han = "".join(map(chr, 0x4E00 + rng.integers(0, 500, 30_000)))
    text = "。".join(han[i : i + 20] for i in range(0, len(han), 20)) + " Café ÉTÉ"
    plain = MixPRIndex.from_texts([text])
    lengths = []
    real = word_pieces.distinct_chars

    def counting(t):
        lengths.append(len(t))
        return real(t)

    monkeypatch.setattr(word_pieces, "distinct_chars", counting)
    monkeypatch.setattr(longctx.terms, "distinct_chars", counting)
    index = MixPRIndex.from_texts([text])
    long_passes = [n for n in lengths if n >= len(text) // 2]
    assert lengths.count(len(text)) == 1  # the text (check, sentences, chunks)
    assert len(long_passes) == 2  # and the joined units (folding, CJK search)
    assert index.units() == plain.units()
    assert np.array_equal(index.score("文化")[0], plain.score("文化")[0])
