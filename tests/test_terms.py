"""longctx.terms: accent folding through the distinct characters (the build's fast path) gives
the very text folding by runs gives (issue 46: MixPR's build)."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import strip_accents_ascii, strip_accents_unicode

from longctx import terms
from longctx.terms import (
    _fold,
    _fold_by_chars,
    _fold_by_runs,
    _strip_accents_unicode,
    _strip_accents_unicode_kept,
    fold_accents_ascii,
    fold_accents_unicode,
    fold_accents_unicode_kept,
    fold_by_chars,
)

# Latin with and without accents (precomposed and decomposed), combining marks in and out of
# canonical order, a ligature, fractions, curly quotes, an ellipsis, CJK, kana with its voicing
# mark, Thai with tone marks, a byte-order mark, Greek, spaces of other kinds, astral letters
ALPHABET = list(
    "ab Zé e\u0301\u0323\u0301\u20dd’“…ﬁ½²中文でて\u3099\u0e01\u0e48\ufeffÅΩά\u00a0\u2028\n\t"
) + ["\U0001d400", "\U0001f600", "\U0001f3fb"]
#: the same without combining characters (where folding by characters applies)
PLAIN = [c for c in ALPHABET if not unicodedata.combining(c) and c not in "\u20dd"]
FOLDS = (_strip_accents_unicode, strip_accents_ascii)
TEXTS = st.one_of(
    st.lists(st.sampled_from(ALPHABET), max_size=80), st.lists(st.sampled_from(PLAIN), max_size=80)
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_fold_by_chars_equals_fold_by_runs(text):
    for fold in FOLDS:
        fast = _fold_by_chars(text, fold)
        assert (fast is None) == any(c not in PLAIN for c in text if not c.isascii())
        if fast is not None:
            assert fast == _fold_by_runs(text, fold)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=40).map("".join))
def test_fold_of_a_long_text_equals_fold_by_runs(text):
    long = (text + " ") * (terms.FOLD_BY_CHARS // (len(text) + 1) + 1)
    assert len(long) >= terms.FOLD_BY_CHARS
    for fold in FOLDS:
        assert _fold(long, fold) == _fold_by_runs(long, fold)


def test_fold_by_chars_leaves_combining_marks_to_the_runs():
    # a mark after a kept letter stays with it, which a folding by characters cannot know
    assert _fold_by_chars("cafe\u0301s", _strip_accents_unicode) is None
    assert _fold_by_runs("cafe\u0301s 中\u0301", _strip_accents_unicode) == "cafes 中\u0301"
    assert _fold_by_chars("\u20dd", _strip_accents_unicode) is None  # a mark of class 0
    # the folding of indexes saved before MixPRConfig.fold_decomposed: a standalone mark kept
    # where nothing else changes (the whole-string early return), dropped where something does
    assert _fold_by_runs("cafe\u0301s", _strip_accents_unicode_kept) == "cafe\u0301s"
    assert _fold_by_runs("cafe\u0301s é", _strip_accents_unicode_kept) == "cafes e"


# -- one folding for a text alone (a query) and inside a block of units (the build) ------------
#: combining marks in and out of the folded scripts' blocks, of class 0 (kept) and above, "İ"
#: (lower-cased to i + U+0307), and the batch's separator characters
MARKED = ALPHABET + list("İi\u0307\u0327\u0483\u1dc0\ufe20\u034f\u0488ş\x00\x01\ue000")
MARKED_TEXTS = st.lists(st.sampled_from(MARKED), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(MARKED_TEXTS)
def test_strip_accents_unicode_is_scikit_learns(text):
    # was: a text that NFKD leaves as it is kept its combining marks ("qe\u0301yz")
    assert _strip_accents_unicode(text) == strip_accents_unicode(text)
    assert _strip_accents_unicode(text.lower()) == strip_accents_unicode(text.lower())


@settings(max_examples=400, deadline=None)
@given(st.lists(MARKED_TEXTS, min_size=1, max_size=6), st.sampled_from(["\x00", " ", "\n"]))
def test_folding_units_together_is_folding_each(texts, sep):
    # the build folds 512 units joined by a separator at once, a query folds its text alone
    for fold in (fold_accents_unicode, fold_accents_ascii):
        joined = sep.join(t.lower() for t in texts)
        assert fold(joined) == sep.join(fold(t.lower()) for t in texts)
        if len(joined) < terms.FOLD_BY_CHARS:  # and a long block (folded by characters)
            pad = "x" * terms.FOLD_BY_CHARS
            assert fold(joined + sep + pad) == fold(joined) + sep + pad


def test_a_decomposed_accent_and_dotted_i_fold_as_their_composed_forms():
    assert fold_accents_unicode("qe\u0301yz") == fold_accents_unicode("qéyz") == "qeyz"
    assert fold_accents_unicode("İstanbul".lower()) == "istanbul"
    assert fold_accents_unicode("で and て\u3099") == "で and て\u3099"  # kana keeps its mark
    # before: kept alone, folded beside another accent
    assert fold_accents_unicode_kept("qe\u0301yz") == "qe\u0301yz"
    assert fold_accents_unicode_kept("qe\u0301yz é") == "qeyz e"


def test_fold_by_chars_on_a_book_like_text():
    text = "“Natásha,” said Pierre… ﬁne ’tis \ufeff中文 Ёлка. " * 200
    out = _fold(text, _strip_accents_unicode)
    assert out == _fold_by_runs(text, _strip_accents_unicode)
    assert "Natasha" in out and "..." in out and "fine" in out and "Елка" in out
    assert "\ufeff中文" in out  # kept as written
    assert unicodedata.is_normalized("NFC", out)
    assert _fold_by_chars("plain ascii and ’quotes’ only", _strip_accents_unicode) == (
        "plain ascii and ’quotes’ only"
    )


def test_fold_by_chars_of_the_public_foldings():
    text = "Natásha’s café, ﬁne… 中文"
    assert fold_by_chars(text, fold_accents_unicode) == fold_accents_unicode(text)
    assert fold_by_chars(text, fold_accents_ascii) == fold_accents_ascii(text)
    assert fold_by_chars("cafe\u0301", fold_accents_unicode) is None  # a combining mark
    assert fold_by_chars(text, str.lower) is None  # not a folding it knows
    assert fold_by_chars("ascii", fold_accents_unicode) == "ascii"
