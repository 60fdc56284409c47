"""Units that follow a text's lines where the text is made of short records: log lines, hash or
``key = value`` assignments, CSV rows, lists. MixPR's chunker (:func:`longctx.text.chunk_words`)
cuts prose into sentences; text without sentence punctuation is one long "sentence" that the
default chunker (``split_lines=False``) cuts into equal word pieces, each holding some twenty
records, so one unit links to some forty others and the walk spreads over the whole text
(Hash-Hop at 0.1M tokens: hops found below what 100 random units give,
``docs/notes/mixpr-scale.md``). :func:`record_blocks` finds the blocks of record lines of a
text, :func:`line_units` keeps one record per unit and :func:`chunk_regions` chunks a text
block by block: record blocks by line, the prose around them as prose.

Lines end at every line break :meth:`str.splitlines` knows (``\\n``, ``\\r``, ``\\r\\n``,
vertical tab, form feed, U+001C-U+001E, U+0085, U+2028, U+2029). The decision is made per
region, on every line of the text (linear time): a block of record lines keeps its lines, prose
before or after it keeps prose units, wherever in the text they stand.
"""

from __future__ import annotations

import re
from itertools import islice

import numpy as np

from longctx.text import chunk_words
from longctx.word_pieces import code_points, marked
from longctx.word_pieces import space_words as _space_words

__all__ = ["chunk_regions", "line_units", "looks_line_structured", "record_blocks"]

#: The line breaks of :meth:`str.splitlines` (``"\r\n"`` is a ``\r`` and a ``\n`` here: the empty
#: line between them is blank and skipped).
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
#: Fewest non-empty lines of a block of records (and of a line-structured text).
MIN_LINES = 8
#: Lines on each side of a line that its share of records is taken over (a window of
#: ``2 * WINDOW + 1`` non-empty lines, cut at the text's ends).
WINDOW = 16
#: Share of record lines around a line at which a block of records starts (its core).
RECORD_SHARE = 0.8
#: Share below which a block of records ends (a few prose-like lines inside a block of records,
#: a header or a longer log message, do not end it).
LEAVE_SHARE = 0.5
#: Most non-record lines in a row inside a block of records (a note, a longer log message); more
#: end the block.
MAX_GAP = 2
#: Most words a record line has (longer lines are prose, or wrapped).
RECORD_WORDS = 40

_LINE = re.compile(f"[^{LINE_BREAKS}]+")
_IS_BREAK = np.zeros(max(map(ord, LINE_BREAKS)) + 1, dtype=bool)
_IS_BREAK[[ord(c) for c in LINE_BREAKS]] = True
_NONSPACE = re.compile(r"\S")
# A record line's opening, matched after a line break (the text's first line: by .match), its
# spaces within the line: one pass over the whole text, fast as it starts with a line break.
_SP = f"[^\\S{LINE_BREAKS}]"
_AT_LINE = f"[{LINE_BREAKS}]"
# A line opening with a quote is a record unless it ends as a sentence does: a line of dialogue
# ('"Yes," said he.') is prose, and a block of one-line dialogue paragraphs is not a block of
# records (Jane Eyre, Dorian Gray and Wuthering Heights hold blocks of 80 to 190 such lines).
_OPENING = re.compile(
    _AT_LINE
    + _SP
    + r"""*(?:
        (?P<record>
          [^\s=:]{1,80}SP*(?:=>|->|:=|=|:)SP*\S    # key = value, key: value, k => v
        | [\[\(\{<#\-\*\+\d|]                      # bracketed, bullet, number, comment
        | \S+(?:\t|SP*\|)                          # tab- or pipe-separated
        )
      | (?P<quoted>['"`\u2018\u201c])                 # quoted: a record unless a sentence
    )""".replace("SP", _SP),
    re.VERBOSE,
)
_SENTENCE_END = re.compile("[.!?\u2026]['\"`\u2019\u201d)\\]]*$")


def line_breaks(text: str) -> tuple[np.ndarray, np.ndarray]:
    """``(cp, breaks)``: the code points of ``text`` (``(len(text),) uint32``) and the positions
    of its line breaks (:data:`LINE_BREAKS`, ``(n_breaks,) int64``), what :func:`_openings`
    and :class:`_Lines` read."""
    cp = code_points(text)
    return cp, np.flatnonzero(marked(cp, _IS_BREAK))


def _openings(
    text: str, first_end: int, breaks: np.ndarray, cp: np.ndarray, word_starts: np.ndarray
) -> tuple[list[int], list[int]]:
    """The starts of the lines that open as a record and of those that open with a quote (see
    :data:`_OPENING`); the first line ends at ``first_end``. ``breaks`` are the positions of
    the line breaks, ``cp`` the text's code points, ``word_starts`` its words' starts.

    The pattern stays within the line after its break, so it matches at each break on its own
    (as ``finditer`` finds it); only the lines it may match are tried: those whose first
    character is none of ASCII's or opens with a quote, and those holding ``=``, ``:``, a tab,
    ``|`` or ``->`` (the pattern's first and third kinds need one). A line opening with a
    bracket, bullet, digit, ``#`` or ``|`` is a record, and one opening with a quote holding
    none of them is quoted, without the pattern (a book's 100k lines: ~10 ms instead of 50)."""
    found: tuple[list[int], list[int]] = ([], [])
    m = _OPENING.match("\n" + text[:first_end])  # the first line: after no line break
    if m is not None:
        found[m.lastgroup == "quoted"].append(0)
    if not len(breaks):
        return found
    line_end = np.append(breaks[1:], len(text))
    w = np.searchsorted(word_starts, breaks + 1, side="left")
    first = np.append(word_starts, len(text))[w]  # the line's first non-space character
    full = first < line_end
    b, first, line_end = breaks[full], first[full], line_end[full]
    c = cp[first]
    # the positions of = : tab | and of the '-' of each '->' (sparse: no mask of the text kept)
    dash = np.flatnonzero(cp[:-1] == ord("-"))
    at = [np.flatnonzero(cp == x) for x in _SPECIAL.tolist()]
    at = np.sort(np.concatenate([*at, dash[cp[dash + 1] == ord(">")]]))
    has = np.searchsorted(at, line_end, side="left") > np.searchsorted(at, first, side="left")
    record = np.isin(c, _RECORD_FIRST)
    quote = np.isin(c, _QUOTES)
    plain = ~has & ~record & ~quote & (c < 128)
    sure = record | (quote & ~has)  # decided without the pattern
    out: dict[int, bool] = dict(zip(b[sure].tolist(), quote[sure].tolist()))
    for p in b[~sure & ~plain].tolist():  # the pattern's own decision
        m = _OPENING.match(text, p)
        if m is not None:
            out[p] = m.lastgroup == "quoted"
    for p in sorted(out):
        found[out[p]].append(p + 1)
    return found


#: What the pattern's first and third kinds need in a line: ``=`` or ``:``, a tab or ``|``.
_SPECIAL = np.array([ord(x) for x in "=:\t|"], dtype=np.uint32)
#: A line's first character that makes it a record (the pattern's second kind, ASCII).
_RECORD_FIRST = np.array([ord(x) for x in "[({<#-*+|0123456789"], dtype=np.uint32)
#: A line's first character that opens a quote (the pattern's ``quoted``).
_QUOTES = np.array([ord(x) for x in "'\"`\u2018\u201c"], dtype=np.uint32)


def _paragraphs(cp: np.ndarray, breaks: np.ndarray, full: np.ndarray) -> np.ndarray:
    """The paragraph of each non-empty line, ``(n_lines,) int64`` numbers from 0 in text order:
    a blank line (empty or spaces only) starts a new one; the empty line between the ``\\r``
    and the ``\\n`` of a ``\\r\\n`` is no blank line. ``cp`` are the text's code points,
    ``breaks`` its line breaks' positions and ``full`` ``(len(breaks) + 1,) bool`` says which
    of the lines between them hold a word."""
    blank = ~full
    crlf = (breaks[1:] == breaks[:-1] + 1) & (cp[breaks[:-1]] == ord("\r"))
    blank[1:-1] &= ~(crlf & (cp[breaks[1:]] == ord("\n")))
    return np.cumsum(blank)[full]


class _Lines:
    """The non-empty lines of a text, found on its code points at once (linear time, no Python
    loop over the lines): ``starts`` / ``ends`` ``(n_lines,) int64``, each line without its
    spaces at both ends, ``n_words`` ``(n_lines,) int64`` and ``is_record`` ``(n_lines,) bool``
    (see :func:`record_blocks`)."""

    def __init__(self, text: str):
        word_starts, word_ends = _space_words(text)
        cp, breaks = line_breaks(text)
        commas = np.flatnonzero(cp == ord(","))
        raw_starts = np.concatenate([[0], breaks + 1])
        raw_ends = np.concatenate([breaks, [len(text)]])
        first = np.searchsorted(word_starts, raw_starts, side="left")
        n_words = np.searchsorted(word_starts, raw_ends, side="left") - first
        full = n_words > 0
        paragraph = _paragraphs(cp, breaks, full)
        first, n_words = first[full], n_words[full]
        first_end = int(raw_ends[0])
        raw_starts = raw_starts[full]
        self.starts = word_starts[first]
        self.ends = word_ends[first + n_words - 1]
        self.n_words = n_words
        n = len(n_words)
        matched = np.zeros(n, dtype=bool)
        line_of = self._line_of
        records, quoted = _openings(text, first_end, breaks, cp, word_starts)
        del cp
        matched[line_of(raw_starts, records)] = True
        n_commas = np.searchsorted(commas, self.ends) - np.searchsorted(commas, self.starts)
        # CSV: two commas or more, fields of two words or fewer on average (not prose with commas)
        matched |= (n_commas >= 2) & (n_words <= 2 * (n_commas + 1))
        for i in line_of(raw_starts, quoted).tolist():
            if not matched[i] and n_words[i] <= RECORD_WORDS:
                last = text[word_starts[first[i] + n_words[i] - 1] : self.ends[i]]
                matched[i] = _SENTENCE_END.search(last) is None
        matched &= n_words <= RECORD_WORDS
        if matched.any():
            # a paragraph of mostly prose lines is prose: its record-like lines (a wrapped line
            # opening with a quote, or with commas) do not join a block of records beside it;
            # but a run of MIN_LINES record lines within one paragraph (a log pasted under
            # prose without a blank line) stays records, whatever the prose around it
            n_lines = np.bincount(paragraph)
            majority = 2 * np.bincount(paragraph, weights=matched)[paragraph] >= n_lines[paragraph]
            new_run = np.ones(n, dtype=bool)
            new_run[1:] = (matched[1:] != matched[:-1]) | (paragraph[1:] != paragraph[:-1])
            run = np.cumsum(new_run) - 1
            matched &= majority | (np.bincount(run)[run] >= MIN_LINES)
        self.is_record = matched

    @staticmethod
    def _line_of(raw_starts: np.ndarray, positions: list[int]) -> np.ndarray:
        """The lines (indices into the non-empty lines) that start at ``positions`` (line
        starts; those of blank lines dropped)."""
        pos = np.asarray(positions, dtype=np.int64)
        i = np.searchsorted(raw_starts, pos, side="left")
        ok = i < len(raw_starts)
        ok[ok] = raw_starts[i[ok]] == pos[ok]
        return i[ok]


def record_blocks(text: str) -> list[tuple[int, int]]:
    """The blocks of record lines of ``text``, as ``(start, end)`` character spans from the
    first character of a block's first line to the last of its last line, in text order.

    A line is a record when it has at most :data:`RECORD_WORDS` words and is shaped as one
    (``key = value`` or ``key: value``, starting with a bracket, bullet, digit or ``#``, tab- or
    pipe-separated, holding two commas or more and at most two words per field (CSV), or starting
    with a quote and not ending as a sentence), and stands in a paragraph (lines between blank
    lines) of which at least half the lines are records: a wrapped line of prose that opens with
    a quote or holds commas is prose, even right after a block. Each non-empty line gets the
    share of records among the :data:`WINDOW` non-empty lines on either side of it and itself.
    A block starts where that share reaches :data:`RECORD_SHARE` or :data:`MIN_LINES` record
    lines follow one another (blank lines aside), holds the lines between such starts while the
    share stays at :data:`LEAVE_SHARE` or above and no more than :data:`MAX_GAP` other lines
    follow one another, and takes in the record lines right before and after them; it is kept
    when it holds at least :data:`MIN_LINES` non-empty lines. Hard-wrapped prose holds none (37 Project
    Gutenberg books: only the contents of two), nor do one-paragraph passages;
    ``"'a3f..' = 'b71..'"`` lines, logs, CSV and a numbered list of eight items or more are
    blocks. Reads every line of the text once (linear time).

    Raises nothing of its own; ``text`` is a ``str`` (checked by the caller).
    """
    lines, blocks = _record_lines(text)
    return [(int(lines.starts[a]), int(lines.ends[b - 1])) for a, b in blocks]


def _record_lines(text: str) -> tuple[_Lines | None, list[tuple[int, int]]]:
    """The lines of ``text`` (None when it has fewer than :data:`MIN_LINES`) and its blocks of
    records as ``[first, last + 1)`` line indices (:func:`record_blocks`)."""
    if sum(1 for _ in islice(_LINE.finditer(text), MIN_LINES)) < MIN_LINES:
        return None, []  # fewer than MIN_LINES lines of any kind, at once
    lines = _Lines(text)
    rec = lines.is_record
    n = len(rec)
    if rec.sum() < MIN_LINES:
        return lines, []
    cum = np.concatenate([[0], np.cumsum(rec, dtype=np.int64)])
    i = np.arange(n)
    lo, hi = np.maximum(i - WINDOW, 0), np.minimum(i + WINDOW + 1, n)
    share = (cum[hi] - cum[lo]) / (hi - lo)
    in_run = np.zeros(n, dtype=bool)  # in MIN_LINES or more record lines in a row
    for a, b in _runs(rec):
        if b - a >= MIN_LINES:
            in_run[a:b] = True
    core = (share >= RECORD_SHARE) | in_run
    keep = (share >= LEAVE_SHARE) | in_run
    for a, b in _runs(~rec):
        if b - a > MAX_GAP:
            keep[a:b] = False  # a paragraph between two blocks is not part of them
    blocks = []
    for a, b in _runs(keep):
        cores = np.flatnonzero(core[a:b]) + a
        if not len(cores):
            continue
        # from the first core line to the last, widened over the record lines right before and
        # after them (not over prose lines that merely look like records nearby)
        first, last = int(cores[0]), int(cores[-1]) + 1
        gaps = np.flatnonzero(~rec[a:first])
        first = a + (int(gaps[-1]) + 1 if len(gaps) else 0)
        gaps = np.flatnonzero(~rec[last:b])
        last = last + int(gaps[0]) if len(gaps) else b
        recs = np.flatnonzero(rec[first:last]) + first
        if len(recs) and recs[-1] - recs[0] + 1 >= MIN_LINES:
            blocks.append((int(recs[0]), int(recs[-1]) + 1))
    return lines, blocks


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """The runs of True of a bool array, as ``[start, end)`` index pairs."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


def looks_line_structured(text: str) -> bool:
    """Whether ``text`` holds a block of records, one a line (:func:`record_blocks`)."""
    return bool(_record_lines(text)[1])


def line_units(text: str, max_words: int, backend: str = "rules") -> list[tuple[int, int]]:
    """One unit per non-empty line of ``text`` (its spaces at both ends left out; lines end at
    every :data:`LINE_BREAKS` character); a line of more than ``max_words`` words is cut as
    prose (:func:`longctx.text.chunk_words`, ``split_lines=False``, sentence splitter
    ``backend``). Returns ``(start, end)`` character spans in text order, covering every
    non-space character once.

    Raises nothing of its own; ``text`` is a ``str`` (checked by the caller)."""
    lines = _Lines(text)
    return _units_of_lines(text, lines, 0, len(lines.starts), max_words, backend)


def _units_of_lines(
    text: str, lines: _Lines, a: int, b: int, max_words: int, backend: str
) -> list[tuple[int, int]]:
    """:func:`line_units` of the lines ``a`` to ``b - 1``."""
    starts, ends = lines.starts[a:b].tolist(), lines.ends[a:b].tolist()
    long = np.flatnonzero(lines.n_words[a:b] > max_words).tolist()
    out: list[tuple[int, int]] = []
    pos = 0
    for i in long:
        out.extend(zip(starts[pos:i], ends[pos:i]))
        s, e = starts[i], ends[i]
        out.extend(
            (s + x, s + y)
            for x, y in chunk_words(text[s:e], max_words, split_lines=False, backend=backend)
        )
        pos = i + 1
    out.extend(zip(starts[pos:], ends[pos:]))
    return out


def chunk_regions(text: str, max_words: int, chunk_prose, backend: str = "rules"):
    """The units of ``text`` block by block: the lines of each of its :func:`record_blocks`
    (:func:`line_units`) and ``chunk_prose(piece)`` (a function ``str -> list of (start, end)``)
    of the text before, between and after them, moved to offsets into ``text``. A text without
    a block of records is ``chunk_prose(text)``. Returns ``(start, end)`` spans in text order.

    Raises what ``chunk_prose`` raises."""
    lines, blocks = _record_lines(text)
    if not blocks:
        return chunk_prose(text)
    out: list[tuple[int, int]] = []
    pos = 0
    for a, b in [*blocks, (None, None)]:
        end = len(text) if a is None else int(lines.starts[a])
        if _NONSPACE.search(text, pos, end) is not None:
            out.extend((pos + x, pos + y) for x, y in chunk_prose(text[pos:end]))
        if a is not None:
            out.extend(_units_of_lines(text, lines, a, b, max_words, backend))
            pos = int(lines.ends[b - 1])
    return out
