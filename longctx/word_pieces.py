"""The word pieces of MixPR's chunker (:func:`longctx.text.chunk_words`): a sentence over the
word limit is cut at its paragraphs (blank lines), then into pieces of near-equal word counts
(Alonso and Millidge, 2024, arXiv:2412.06078, sec. 3 "Chunking method"). Spans are ``(start,
end)`` character offsets into the caller's text, end exclusive."""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager

import numpy as np

Span = tuple[int, int]

__all__ = [
    "BLANK_LINE_RE",
    "code_points",
    "distinct_chars",
    "equal_word_pieces",
    "has_char",
    "lowered_chars",
    "marked",
    "merge_short",
    "paragraphs",
    "shared_chars",
    "shared_words",
    "space_words",
    "text_chars",
    "unwrapped_pieces",
]

_NONSPACE_RE = re.compile(r"\S")
_WORD_RE = re.compile(r"\S+")

#: ``str.isspace`` of every code point below U+3001 (no space character lies above U+3000):
#: what ``\s`` and ``\S`` of ``re`` follow.
_IS_SPACE = np.array([chr(c).isspace() for c in range(0x3001)], dtype=bool)

# .on: inside shared_words(); .last, .chars: (text, words), (text, chars) of the last text
_SHARED = threading.local()


@contextmanager
def shared_words():
    """Inside the block, :func:`space_words` and :func:`text_chars` of a text are found once
    and kept until another text is asked for (the chunker's passes over one text: its lines, its sentences' pieces and
    its chunks share it; per thread, released when the block ends).

    Used by :meth:`longctx.mixpr.config.MixPRConfig.chunk_arrays` (issue 46: MixPR's build
    found each book's words three times)."""
    outer = getattr(_SHARED, "on", False)
    _SHARED.on, _SHARED.last, _SHARED.chars = True, None, None
    try:
        yield
    finally:
        _SHARED.on, _SHARED.last, _SHARED.chars = outer, None, None


@contextmanager
def shared_chars(texts):
    """Inside the block, :func:`text_chars` of each text of ``texts`` (a str, or a list or tuple
    of them; anything else names none) is found once, where a text is first scanned (its check,
    then its chunker read it again), and kept until the block ends (per thread; the texts are
    the caller's, held by it meanwhile; other texts are not kept: the chunker's joined batches
    and the TF-IDF's blocks are made and dropped inside the block).

    Used by :meth:`longctx.mixpr.index.MixPRIndex.from_texts`."""
    items = [texts] if isinstance(texts, str) else texts if isinstance(texts, list | tuple) else ()
    outer = getattr(_SHARED, "known", {})
    known = dict(outer)
    for t in items:
        if isinstance(t, str) and len(t) >= CHARS_MIN and id(t) not in known:
            known[id(t)] = [t, None]
    _SHARED.known = known
    try:
        yield
    finally:
        _SHARED.known = outer


#: Texts of at least this many characters have their distinct characters found on their code
#: points (:func:`text_chars`); shorter ones are searched by the callers' patterns at once.
CHARS_MIN = 4096


def text_chars(text: str) -> str | None:
    """The distinct non-ASCII characters of ``text``, in code-point order, as one string, for
    ``text`` of :data:`CHARS_MIN` characters or more (``None`` for a shorter one). A pattern of
    one character class of non-ASCII characters finds a character in ``text`` exactly when it
    finds one in this string, so one pass over the code points (~1.5 ms a million characters)
    answers the chunker's class searches (lone surrogates, grapheme extenders, CJK and Thai-like
    scripts; each a pass of ~3 ms a million characters). Kept like :func:`space_words` inside
    :func:`shared_words`."""
    if len(text) < CHARS_MIN:
        return None
    if text.isascii():
        return ""
    slot = getattr(_SHARED, "known", {}).get(id(text))
    if slot is not None and slot[0] is text:  # a text of shared_chars(): found once
        if slot[1] is None:
            slot[1] = distinct_chars(text)
        return slot[1]
    if not getattr(_SHARED, "on", False):
        return distinct_chars(text)
    chars = _SHARED.chars
    if chars is None or chars[0] is not text:
        chars = _SHARED.chars = (text, distinct_chars(text))
    return chars[1]


#: Texts of at least this many characters have their distinct characters marked in a table of
#: every code point (0x110000 bools, 1.1 MB); shorter ones are sorted (measured crossover: about
#: 1,000-2,000 characters; on 1M CJK characters the mark takes 1.9 ms, the sort 26-29 ms).
MARK_MIN_CHARS = 2048
#: Code points of Unicode (U+0000-U+10FFFF).
_N_CODE_POINTS = 0x110000


def distinct_chars(text: str) -> str:
    """The distinct non-ASCII characters of ``text`` (lone surrogates included), in code-point
    order, as one string: one pass over its code points, marked in a table of every code point
    (:data:`MARK_MIN_CHARS` characters or more) or sorted (any length; :func:`text_chars` keeps
    it for a long text)."""
    cp = code_points(text)
    if len(cp) < MARK_MIN_CHARS:
        return "".join(map(chr, np.unique(cp[cp >= 128]).tolist()))
    seen = np.zeros(_N_CODE_POINTS, dtype=bool)
    seen[cp] = True
    return "".join(map(chr, (np.flatnonzero(seen[128:]) + 128).tolist()))


def lowered_chars(chars: str, lowered: str) -> str:
    """:func:`distinct_chars` of ``lowered``, the ``str.lower()`` of a text whose distinct
    characters are ``chars``, without a pass over it: the lowercase of each character on its own
    (``str.lower`` maps a character alone, but for the final sigma: a text holding ``"Σ"`` is
    read again). ASCII characters lower to ASCII ones, so ``chars`` holds every source."""
    if "\u03a3" in chars:
        return distinct_chars(lowered)
    return distinct_chars("".join(c.lower() for c in chars))


def code_points(text: str) -> np.ndarray:
    """``(len(text),) uint32``: the code points of ``text`` (lone surrogates included), read
    from its UTF-32 encoding (4 bytes a character)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def marked(cp: np.ndarray, table: np.ndarray) -> np.ndarray:
    """``(len(cp),) bool``: ``table[c]`` of each code point ``c`` of ``cp``, ``False`` for those
    past the table's end (``table``: a ``bool`` array indexed by code point)."""
    low = cp < len(table)
    out = np.zeros(len(cp), dtype=bool)
    out[low] = table[cp[low]]
    return out


def has_char(pattern: re.Pattern, text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether ``pattern`` (one character class of non-ASCII characters) finds a character in
    ``text[start:end]``: searched in :func:`text_chars` of a long ``text`` asked for whole (no
    pass over the text when none of the class is there), else in the text."""
    end = len(text) if end is None else end
    chars = text_chars(text) if start == 0 and end == len(text) else None
    found = pattern.search(text, start, end) if chars is None else pattern.search(chars)
    return found is not None


def space_words(text: str) -> tuple[np.ndarray, np.ndarray]:
    r"""The starts and ends of ``re.finditer(r"\S+", text)`` as two ``(n_words,) int64``
    arrays (16 bytes a word: a list of ``(start, end)`` tuples takes about 120), found on the
    code points at once for long texts. Read only: inside :func:`shared_words` the arrays of
    the last text are kept and given again."""
    if not getattr(_SHARED, "on", False):
        return _find_words(text)
    last = _SHARED.last
    if last is None or last[0] is not text:
        words = _find_words(text)
        for a in words:
            a.setflags(write=False)
        last = _SHARED.last = (text, words)
    return last[1]


def _find_words(text: str) -> tuple[np.ndarray, np.ndarray]:
    if len(text) < 256:
        arr = np.fromiter(
            (x for m in _WORD_RE.finditer(text) for x in m.span()), dtype=np.int64
        ).reshape(-1, 2)
        return arr[:, 0].copy(), arr[:, 1].copy()
    space = marked(code_points(text), _IS_SPACE)
    starts = ~space
    starts[1:] &= space[:-1]
    ends = ~space
    ends[:-1] &= space[1:]
    return np.flatnonzero(starts).astype(np.int64), np.flatnonzero(ends).astype(np.int64) + 1


# A paragraph ends before a blank line: two line breaks with only spaces or tabs between. (The
# paragraphs are the text between these matches, found without a pattern spanning a paragraph:
# ``\S(?:[^\n]|\n(?!...))*`` took about 130 bytes of the regular expression engine's stack
# per character, 2.7 GB on a 20 MB line.)
#: A paragraph break: a line holding only spaces between two line feeds.
BLANK_LINE_RE = re.compile(r"\n[ \t\f\v\r]*\n")


def paragraphs(text: str, start: int, end: int):
    """``(start, end)`` of the paragraphs of ``text[start:end]``: from a non-space character to
    the next blank line (:data:`BLANK_LINE_RE`) or ``end``."""
    cuts = [(m.start(), m.end()) for m in BLANK_LINE_RE.finditer(text, start, end)]
    for a, b in zip([start] + [e for _, e in cuts], [s for s, _ in cuts] + [end]):
        m = _NONSPACE_RE.search(text, a, b)
        if m is not None:
            yield m.start(), b


def equal_word_pieces(starts: np.ndarray, ends: np.ndarray, max_words: int) -> list[Span]:
    """Cut a run of words (``(n,) int64`` starts and ends) into ``ceil(n / max_words)`` pieces
    of near-equal word counts."""
    n = len(starts)
    n_pieces = -(-n // max_words)
    cuts = np.linspace(0, n, n_pieces + 1).round().astype(int)
    lo, hi = cuts[:-1], cuts[1:]
    keep = hi > lo
    return list(zip(starts[lo[keep]].tolist(), ends[hi[keep] - 1].tolist()))


def unwrapped_pieces(
    text: str,
    sentences: list[Span],
    sent: np.ndarray,
    n_words: np.ndarray,
    all_words: tuple[np.ndarray, np.ndarray],
    max_words: int,
) -> list[Span]:
    """The chunks of :func:`longctx.text.chunk_words` with ``split_lines=False``, the long
    sentences' pieces computed on arrays: the very chunks of the sentence-by-sentence loop
    (``longctx.text._sentence_pieces``: the same paragraphs, words and
    :func:`equal_word_pieces` cuts, with ``numpy.linspace``'s arithmetic), in a few numpy
    passes instead of some fifteen numpy calls per long sentence (a book has thousands).

    Parameters
    ----------
    text : str
        The text, whose words are its ``\\S+`` runs and which holds no grapheme cluster of
        more than one code point (the caller's condition).
    sentences : list of (start, end)
        Its sentences; ``sent`` the same as an ``(n, 2) int64`` array.
    n_words : (n,) int64
        Words of each sentence.
    all_words : ((n_words,) int64, (n_words,) int64)
        Starts and ends of every word of ``text``.
    max_words : int >= 1
        Most words of a chunk.

    Returns
    -------
    list of (start, end)
        Character spans in sentence order: a sentence of at most ``max_words`` words as it
        is, a longer one's pieces in its place.
    """
    ws, we = all_words
    long = np.flatnonzero(n_words > max_words)
    if not len(long):
        return list(sentences)
    # the paragraphs of the long sentences, in order, and the sentence of each
    part_s, part_e, part_of = [], [], []
    for k, (a, b) in zip(long.tolist(), sent[long].tolist()):
        for ps, pe in paragraphs(text, a, b):
            part_s.append(ps)
            part_e.append(pe)
            part_of.append(k)
    S = np.asarray(part_s, dtype=np.int64)
    E = np.asarray(part_e, dtype=np.int64)
    # the words of each paragraph: first index f, count n (as longctx.text._Words.spans: a
    # paragraph starting inside a word, as its first non-space character may, takes that
    # word's rest first)
    i = np.searchsorted(ws, S, side="left")
    j = np.searchsorted(ws, E, side="left")
    inside = (i == j) | (ws[np.minimum(i, len(ws) - 1)] != S)
    f = i - inside
    n = j - f
    k = -(-n // max_words)  # pieces of each paragraph (0: no word)
    has = k > 0
    f, n, k, S, E = f[has], n[has], k[has], S[has], E[has]
    part_sent = np.asarray(part_of, dtype=np.int64)[has]
    # numpy.linspace(0, n, k + 1) of each paragraph: t * (n / k), the last one n, rounded
    cuts_of = np.repeat(np.arange(len(k)), k + 1)
    first_cut = np.concatenate([[0], np.cumsum(k + 1)[:-1]])
    t = np.arange(len(cuts_of), dtype=np.float64) - first_cut[cuts_of]
    y = t * (n.astype(np.float64) / k)[cuts_of]
    y[first_cut + k] = n
    cuts = y.round().astype(np.int64)
    piece = np.ones(len(cuts), dtype=bool)
    piece[first_cut + k] = False  # a piece from each cut but a paragraph's last
    at = np.flatnonzero(piece)
    lo, hi, owner = cuts[at], cuts[at + 1], cuts_of[at]
    keep = hi > lo
    lo, hi, owner = lo[keep], hi[keep], owner[keep]
    p_start = np.maximum(ws[f[owner] + lo], S[owner])
    p_end = np.minimum(we[f[owner] + hi - 1], E[owner])
    # the short sentences as they are, the pieces in their sentences' places
    short = np.flatnonzero(n_words <= max_words)
    order = np.argsort(np.concatenate([short, part_sent[owner]]), kind="stable")
    starts = np.concatenate([sent[short, 0], p_start])[order]
    ends = np.concatenate([sent[short, 1], p_end])[order]
    return list(zip(starts.tolist(), ends.tolist()))


def merge_short(
    text: str,
    chunks: list[Span],
    word_starts: np.ndarray,
    min_words: int,
    max_words: int,
) -> list[Span]:
    """``min_words`` of :func:`longctx.text.chunk_words`: join a chunk to the one before it
    when either holds fewer than ``min_words`` words, the two together hold at most
    ``max_words`` and no blank line lies between them."""
    if not chunks:
        return chunks
    arr = np.asarray(chunks, dtype=np.int64)
    n_words = (
        np.searchsorted(word_starts, arr[:, 1], side="left")
        - np.searchsorted(word_starts, arr[:, 0], side="left")
    ).tolist()
    out: list[list[int]] = []  # [start, end, words]
    for (a, b), n in zip(chunks, n_words):
        if out:
            last = out[-1]
            joinable = last[2] + n <= max_words and BLANK_LINE_RE.search(text, last[1], a) is None
            if joinable and (last[2] < min_words or n < min_words):
                last[1] = b
                last[2] += n
                continue
        out.append([a, b, n])
    return [(a, b) for a, b, _ in out]
