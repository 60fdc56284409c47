"""Index terms in every script, for the TF-IDF of MixPR.

scikit-learn's word analyzer takes a run of word characters as one term, so a Chinese, Japanese
or Thai clause (no spaces between words) becomes a single term no query ever matches, and its
``strip_accents="unicode"`` drops every combining mark, so Japanese で (て + voiced mark) becomes
て and Thai loses its tone marks. Here, as search engines do (Lucene's ``CJKBigramFilter``):

- runs of Han, Hiragana, Katakana and Hangul characters, and runs of Thai, Lao, Khmer and
  Myanmar characters, give overlapping character bigrams (a run of one character gives itself);
- accent folding applies to Latin, Greek and Cyrillic letters (and to symbols and punctuation)
  only; the letters of other scripts keep their marks.

On text without those scripts both are exactly scikit-learn's behaviour, so English terms (and
the benchmark figures built on them) do not change.
"""

from __future__ import annotations

import re
import unicodedata

from sklearn.feature_extraction.text import strip_accents_ascii

from longctx.word_pieces import distinct_chars

# Characters whose accents are folded (as scikit-learn does): ASCII, Latin, IPA, Greek,
# Cyrillic, general punctuation and symbols, fullwidth ASCII, letterlike and math letters.
_FOLDED = (
    "\x00-\u052f\u1c80-\u1cbf\u1d00-\u1fff\u2000-\u2bff\u2c60-\u2c7f\u2de0-\u2dff"
    "\ua640-\ua69f\ua720-\ua7ff\uab30-\uab6f\ufb00-\ufb06\ufe00-\ufe0f\ufe20-\ufe2f"
    "\uff00-\uff65\U0001d400-\U0001d7ff"
)
_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
# A run of letters of other scripts with the combining marks that follow them: kept as written.
_KEPT_RUN_RE = re.compile(f"(?:[^{_FOLDED}][{_COMBINING}]*)+")

# Runs that give character bigrams: CJK (Han, Hiragana, Katakana, Hangul) and Thai-like scripts.
_CJK = (
    "\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b-\u303c\u3040-\u30fa"
    "\u30fc-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uffdc\U00020000-\U0003134f"
)
_SEA = "\u0e00-\u0e4e\u0e80-\u0eff\u1780-\u17dd\u1000-\u104f"
_BIGRAM_RUN_RE = re.compile(f"[{_CJK}]+|[{_SEA}]+")
# One character of those scripts: a search for it runs at C speed (the alternation above tries
# both branches at every position).
_BIGRAM_CHAR_RE = re.compile(f"[{_CJK}{_SEA}]")


def _fold(s: str, fold) -> str:
    """``s`` with ``fold`` (a whole-string accent folding: NFKD, then marks dropped) applied
    to its runs of Latin, Greek, Cyrillic, symbols and punctuation, the runs of other scripts
    (with the marks that follow them) kept as written."""
    if s.isascii():
        return s
    if len(s) >= FOLD_BY_CHARS:
        out = _fold_by_chars(s, fold)
        if out is not None:
            return out
    return _fold_by_runs(s, fold)


#: Texts of at least this many characters are folded through their distinct characters
#: (:func:`_fold_by_chars`); shorter ones (a query) run by runs at once.
FOLD_BY_CHARS = 4096
_FOLDED_RE = re.compile(f"[{_FOLDED}]")
_COMBINING_RE = re.compile(f"[{_COMBINING}]")


def _fold_by_chars(s: str, fold, chars: str | None = None) -> str | None:
    """:func:`_fold` of ``s`` character by character: each distinct non-ASCII character's
    folding, found once, replaced in one pass (a book's accents, ~30 distinct characters,
    folded at about 7x the speed of :func:`_fold_by_runs`). ``None`` when ``s`` holds a
    combining character (canonical combining class > 0, or in the ``_COMBINING`` blocks):
    there a kept run takes the marks that follow it (and, in the folding of
    :func:`fold_accents_unicode_kept`, NFKD reorders marks and a whole-string early return keeps
    them), so the caller folds by runs.

    Without combining characters both foldings act on each character alone: NFKD decomposes
    character by character and only reorders combining marks, the marks it brings are all
    dropped, and a kept run is the run of non-folded characters itself. ``chars``: the
    :func:`~longctx.word_pieces.distinct_chars` of ``s`` when the caller has them."""
    chars = distinct_chars(s) if chars is None else chars
    if _COMBINING_RE.search(chars) or any(map(unicodedata.combining, chars)):
        return None
    changed = {}
    for c in chars:
        if _FOLDED_RE.match(c):
            f = fold(c)
            if f != c:
                changed[c] = f
    if not changed:
        return s
    pattern = re.compile("[" + "".join(map(re.escape, changed)) + "]")
    return pattern.sub(lambda m: changed[m.group()], s)


def fold_by_chars(s: str, folder, chars: str | None = None) -> str | None:
    """``folder(s)`` (``folder``: :func:`fold_accents_unicode`, :func:`fold_accents_ascii` or
    :func:`fold_accents_unicode_kept`) computed character by character
    (:func:`_fold_by_chars`), as one string with its parts folded apart would be: ``None`` when
    ``s`` holds a combining character (or ``folder`` is another function), where a mark's
    folding depends on the character before it (and, with ``fold_accents_unicode_kept``, on
    the whole part: the caller then folds by blocks of units). ``chars``: the
    :func:`~longctx.word_pieces.distinct_chars` of ``s`` when the caller has them."""
    inner = {
        fold_accents_unicode: _strip_accents_unicode,
        fold_accents_unicode_kept: _strip_accents_unicode_kept,
        fold_accents_ascii: strip_accents_ascii,
    }
    fold = inner.get(folder)
    if fold is None:
        return None
    return s if s.isascii() else _fold_by_chars(s, fold, chars)


def _fold_by_runs(s: str, fold) -> str:
    """:func:`_fold` run by run (any text)."""
    out, pos = [], 0
    for m in _KEPT_RUN_RE.finditer(s):
        if m.start() > pos:
            out.append(fold(s[pos : m.start()]))
        out.append(m.group())
        pos = m.end()
    if pos == 0:
        return fold(s)
    out.append(fold(s[pos:]))
    return "".join(out)


_NON_ASCII_RE = re.compile("[^\x00-\x7f]+")


def _drop_combining(m: re.Match) -> str:
    run = m.group()
    return "".join([c for c in run if not unicodedata.combining(c)])


def _strip_accents_unicode(s: str) -> str:
    """scikit-learn's ``strip_accents_unicode``: a text that is not ASCII is put in NFKD and
    every combining character (canonical combining class > 0) dropped, also from a text that
    NFKD leaves as it is (already decomposed: ``"qe\\u0301yz"`` gives ``"qeyz"`` as ``"qéyz"``
    does). Same output; the per-character test runs on the non-ASCII characters only, and a
    text that NFKD leaves as it is and that holds no combining character (a book's curly
    quotes) is returned at once (testing its every character took half of MixPR's build)."""
    if s.isascii():
        return s
    normalized = unicodedata.normalize("NFKD", s)
    if normalized == s and _not_plain_re().search(s) is None:
        return s
    return _NON_ASCII_RE.sub(_drop_combining, normalized)


def _strip_accents_unicode_kept(s: str) -> str:
    """The folding of indexes saved before ``MixPRConfig.fold_decomposed``: as
    :func:`_strip_accents_unicode`, but a text that NFKD leaves as it is kept its combining
    characters (so a build block and a query could fold one unit's text apart)."""
    normalized = unicodedata.normalize("NFKD", s)
    if normalized == s:
        return s
    return _NON_ASCII_RE.sub(_drop_combining, normalized)


_NOT_PLAIN: list[re.Pattern] = []


def _not_plain_re() -> re.Pattern:
    """A character that is not a folded one (``_FOLDED``) or is a combining character: where
    none is, a text that NFKD leaves as it is has nothing to drop. Made at first use (the
    combining characters of the folded ranges, some 270, read from :mod:`unicodedata`)."""
    if not _NOT_PLAIN:
        bounds = [(ord(_FOLDED[i]), ord(_FOLDED[i + 2])) for i in range(0, len(_FOLDED), 3)]
        plain = [chr(c) for a, b in bounds for c in range(a, b + 1)]
        plain = [c for c in plain if not unicodedata.combining(c)]
        _NOT_PLAIN.append(re.compile("[^" + "".join(map(re.escape, plain)) + "]"))
    return _NOT_PLAIN[0]


def fold_accents_unicode(s: str) -> str:
    """scikit-learn's ``strip_accents_unicode`` (NFKD, combining marks dropped) applied to
    Latin, Greek and Cyrillic text, symbols and punctuation only: letters of other scripts and
    their marks are kept (Japanese で stays で, Thai keeps its vowel and tone marks). The same
    terms for a text analyzed alone (a query) or inside a block of units (the build)."""
    return _fold(s, _strip_accents_unicode)


def fold_accents_unicode_kept(s: str) -> str:
    """:func:`fold_accents_unicode` as it was before ``MixPRConfig.fold_decomposed``: a run
    that NFKD leaves as it is keeps its combining marks (``"qe\\u0301yz"``, and ``"İ"``
    lower-cased to ``"i\\u0307"``). Only for indexes saved before that field, whose vocabulary
    was folded this way."""
    return _fold(s, _strip_accents_unicode_kept)


def fold_accents_ascii(s: str) -> str:
    """scikit-learn's ``strip_accents_ascii`` on Latin, Greek and Cyrillic text, symbols and
    punctuation only; letters of other scripts are kept as written."""
    return _fold(s, strip_accents_ascii)


def char_bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK (Han, Kana, Hangul) or Thai-like run of
    ``text``, in order; a run of one character gives that character (Lucene's
    ``CJKBigramFilter`` with ``outputUnigrams=false``)."""
    terms: list[str] = []
    for m in _BIGRAM_RUN_RE.finditer(text):
        run = m.group()
        if len(run) == 1:
            terms.append(run)
        else:
            terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


def has_bigram_script(text: str) -> bool:
    """Whether ``text`` holds a character that :func:`char_bigrams` indexes."""
    return _BIGRAM_CHAR_RE.search(text) is not None


class ScriptAnalyzer:
    """A word analyzer (scikit-learn's, optionally followed by a Snowball stemmer) that indexes
    CJK and Thai-like runs as character bigrams. Text without those scripts gets exactly the
    word analyzer's terms. A plain object, rebuilt from the settings, never pickled.

    Parameters
    ----------
    base : callable str -> list of str
        ``TfidfVectorizer(...).build_analyzer()`` of the word settings.
    stemmer : str or None
        PyStemmer language applied to the word terms (not to the bigrams).
    """

    def __init__(self, base, stemmer: str | None = None):
        self.base = base
        self.language = stemmer
        self.stem_words = None
        if stemmer is not None:
            import Stemmer

            self.stem_words = Stemmer.Stemmer(stemmer).stemWords

    def distinct_stemmer(self):
        """``list[str] -> list[str]``: the stems of :attr:`stem_words` for lists of distinct
        words, without PyStemmer's cache (whose upkeep made stemming the ~27k distinct words
        of a 1M-word corpus 3x slower: 32 ms against 12); ``None`` without a stemmer."""
        if self.language is None:
            return None
        import Stemmer

        return Stemmer.Stemmer(self.language, 0).stemWords

    def _words(self, doc: str) -> list[str]:
        words = self.base(doc)
        return self.stem_words(words) if self.stem_words is not None else words

    def __call__(self, doc: str) -> list[str]:
        if _BIGRAM_CHAR_RE.search(doc) is None:
            return self._words(doc)
        return self._words(_BIGRAM_RUN_RE.sub(" ", doc)) + char_bigrams(doc)


__all__ = [
    "ScriptAnalyzer",
    "char_bigrams",
    "fold_accents_ascii",
    "fold_accents_unicode",
    "fold_accents_unicode_kept",
    "fold_by_chars",
    "has_bigram_script",
]
