"""Units that follow a text's lines when the text is made of short records: log lines, hash or
``key = value`` assignments, CSV rows, lists. MixPR's chunker (:func:`longctx.text.chunk_words`)
cuts prose into sentences; text without sentence punctuation is one long "sentence" that the
default chunker (``split_lines=False``) cuts into equal word pieces, each holding some twenty
records, so one unit links to some forty others and the walk spreads over the whole text
(Hash-Hop at 0.1M tokens: hops found below what 100 random units give,
``docs/notes/mixpr-scale.md``). :func:`looks_line_structured` tells the two kinds of text apart
and :func:`line_units` keeps one record per unit.
"""

from __future__ import annotations

import re

from longctx.text import chunk_words

__all__ = ["line_units", "looks_line_structured"]

#: Lines looked at to decide (the first ones of the text): the decision costs the same on a
#: text of any length.
SAMPLE_LINES = 200
#: Fewest non-empty lines a line-structured text has.
MIN_LINES = 8
#: Share of the sampled lines that must look like records.
RECORD_SHARE = 0.8
#: Most words a record line has (longer lines are prose, or wrapped).
RECORD_WORDS = 40

_RECORD = re.compile(
    r"""^\s*(?:
        [^\s=:]{1,80}\s*(?:=>|->|:=|=|:)\s*\S      # key = value, key: value, k => v
      | [\[\(\{<'"`#\-\*\+\d|]                     # quoted, bracketed, bullet, number, comment
      | \S+(?:\t|\s*\|\s*)                         # tab- or pipe-separated
      | [^,\n]*,[^,\n]*,                           # two commas: CSV
    )""",
    re.VERBOSE,
)


def looks_line_structured(text: str) -> bool:
    """Whether ``text`` is made of short records, one a line: at least :data:`MIN_LINES`
    non-empty lines among its first :data:`SAMPLE_LINES`, and at least :data:`RECORD_SHARE`
    of them of at most :data:`RECORD_WORDS` words and shaped as a record (``key = value`` or
    ``key: value``, starting with a quote, bracket, bullet, digit or ``#``, tab- or
    pipe-separated, or holding two commas). Hard-wrapped prose (Project Gutenberg) and
    one-paragraph passages are not; ``"'a3f..' = 'b71..'"`` lines, logs and CSV are. Reads the
    first :data:`SAMPLE_LINES` lines only."""
    lines = []
    for m in re.finditer(r"[^\n]+", text):
        line = m.group()
        if line.strip():
            lines.append(line)
            if len(lines) >= SAMPLE_LINES:
                break
    if len(lines) < MIN_LINES:
        return False
    records = sum(1 for line in lines if len(line.split()) <= RECORD_WORDS and _RECORD.match(line))
    return records >= RECORD_SHARE * len(lines)


def line_units(text: str, max_words: int, backend: str = "rules") -> list[tuple[int, int]]:
    """One unit per non-empty line (its spaces at both ends left out); a line of more than
    ``max_words`` words is cut as prose (:func:`longctx.text.chunk_words`,
    ``split_lines=False``, sentence splitter ``backend``). Returns ``(start, end)`` character
    spans in text order, covering every non-space character once.

    Raises nothing of its own; ``text`` is a ``str`` (checked by the caller)."""
    out: list[tuple[int, int]] = []
    for m in re.finditer(r"[^\n]*\S[^\n]*", text):
        a, b = m.span()
        line = m.group()
        lead = len(line) - len(line.lstrip())
        a2, b2 = a + lead, a + len(line.rstrip())
        if len(line.split()) <= max_words:
            out.append((a2, b2))
        else:
            out.extend(
                (a2 + x, a2 + y)
                for x, y in chunk_words(text[a2:b2], max_words, split_lines=False, backend=backend)
            )
    return out
