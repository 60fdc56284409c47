"""MixPR's line units, decided per region (issue 44, item 7).

Before: only ``\\n`` ended a line, and a text was judged by its first 200 lines, so records
separated by CR, U+2028, U+2029, U+0085, form feed or vertical tab became units of 20 records,
and a 180-line numbered list before Alice cut the whole book at every line (1,595 -> 2,955
units). Now every line break :meth:`str.splitlines` knows ends a line, and each block of record
lines is found where it stands: its lines are units, the prose around it keeps prose units.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from longctx import sample_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.lines import (
    LINE_BREAKS,
    MIN_LINES,
    chunk_regions,
    line_units,
    looks_line_structured,
    record_blocks,
)

CFG = MixPRConfig()
ALICE = sample_text("alice")
RECORDS = [f"key_{i} = value number {i}" for i in range(300)]
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _units(text: str) -> list[str]:
    return [text[a:b] for a, b in CFG.chunk(text)]


def _alice_units(offset: int = 0) -> list[tuple[int, int]]:
    return [(a + offset, b + offset) for a, b in CFG.chunk(ALICE)]


def test_the_breaks_are_those_of_splitlines():
    assert sorted(set(BREAKS) - {"\r\n"}) == sorted(LINE_BREAKS)
    assert all(len(("a" + b + "b").splitlines()) == 2 for b in BREAKS)


@pytest.mark.parametrize("sep", BREAKS, ids=[f"U+{ord(b[-1]):04X}" for b in BREAKS])
def test_every_line_break_of_splitlines_ends_a_record(sep):
    text = sep.join(RECORDS) + sep
    assert _units(text) == RECORDS  # was 15 units of 20 records for all but \n and \r\n
    assert record_blocks(text) == [(0, len(text) - len(sep))]


def test_records_by_u2028_in_an_index_keep_exact_offsets():
    text = "\u2028".join(RECORDS)
    index = MixPRIndex.from_texts([text, "One more document, in prose."])
    units = [u for u in index.units() if u.source == 0]
    assert [u.text for u in units] == RECORDS
    hit = index.search("key_123 = value number 123", k=1).hits[0]
    assert hit.text == RECORDS[123] and text[hit.start : hit.end] == hit.text


def test_a_list_before_prose_keeps_the_prose_units():
    # issue 44: a 180-line numbered list before Alice cut the whole book at every line
    items = [f"{i}. item number {i} of the list" for i in range(1, 181)]
    head = "\n".join(items) + "\n\n"
    text = head + ALICE
    units = CFG.chunk(text)
    assert [text[a:b] for a, b in units[:180]] == items
    assert units[180:] == _alice_units(len(head))
    assert not looks_line_structured(ALICE) and looks_line_structured(text)
    short = sum(len(text[a:b].split()) <= 3 for a, b in units)
    assert short == sum(len(ALICE[a:b].split()) <= 3 for a, b in _alice_units())


def test_prose_records_prose():
    cut = ALICE.index("\r\n\r\n", len(ALICE) // 2) + 4
    log = [
        f"2024-05-0{i % 9 + 1} 12:00:{i % 60:02d} INFO worker-{i} started job {i * 7}"
        for i in range(40)
    ]
    block = "\n".join(log) + "\n\n"
    text = ALICE[:cut] + block + ALICE[cut:]
    units = CFG.chunk(text)
    before = CFG.chunk(ALICE[:cut])
    after = [(a + cut + len(block), b + cut + len(block)) for a, b in CFG.chunk(ALICE[cut:])]
    assert units == before + [(cut + a, cut + b) for a, b in line_units(block, 32)] + after
    assert [text[a:b] for a, b in units[len(before) : len(before) + 40]] == log


def test_a_block_in_the_middle_and_a_longer_line_inside_it():
    # a non-record line inside a block of records does not end it; a line over max_words is
    # cut as prose; short runs of record-like lines in prose are prose
    rec = [f"{i},Name {i},City {i % 4}" for i in range(30)]
    rec[10] = "a note about the next rows " * 3
    rec[20] = " ".join(["word"] * 70)
    text = "\n".join(rec)
    units = _units(text)
    assert units[:10] == rec[:10] and units[10] == rec[10].strip()
    assert all(len(u.split()) <= CFG.max_words for u in units)
    assert " ".join(units[20:22]).split() == rec[20].split() and units[22:] == rec[21:]
    prose = (
        "The cat sat on the mat, said she.\n" * 3
        + "1. one\n2. two\n3. three\n"
        + "Then more prose.\n" * 5
    )
    assert record_blocks(prose) == []


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\u2028"], ids=["LF", "CRLF", "U+2028"])
def test_a_paragraph_after_a_block_is_prose_though_a_line_of_it_looks_like_a_record(nl):
    # a wrapped line opening with a quote, or holding commas, in a paragraph of prose right
    # after a block was taken into the block (and its paragraph cut at every line)
    para = [
        "‘I wish I hadn’t cried so much!’ said Alice, as she swam about, trying",
        "to find her way out. ‘I shall be punished for it now, I suppose, by",
        "of cherry-tart, custard, pine-apple, roast turkey, toffee, and hot",
        "being drowned in my own tears! That WILL be a queer thing, to be sure!",
        "However, everything is queer to-day, and Alice went on.",
    ]
    recs = nl.join(RECORDS[:10])
    text = recs + nl + nl + nl.join(para)
    assert record_blocks(text) == [(0, len(recs))]
    units = [text[a:b] for a, b in CFG.chunk(text)]
    assert units[:10] == RECORDS[:10] and para[0] not in units and para[2] not in units
    spaced = (nl + nl).join(RECORDS[:10])  # a record a paragraph: still a block
    assert record_blocks(spaced) == [(0, len(spaced))]


def test_a_run_of_records_under_prose_without_a_blank_line_stays_a_block():
    # the paragraph rule above cleared every record line of a paragraph of mostly prose, so a
    # log pasted under wrapped prose with no blank line lost its block (review, session 16)
    prose = "the quick brown fox jumps over the lazy dog and then it runs far away"
    recs = [f"key_{i} = {i * 7919:08x}" for i in range(12)]
    for text in ("\n".join([prose] * 20 + recs), "\n".join([prose] * 20 + recs + [prose] * 20)):
        start = text.index(recs[0])
        assert record_blocks(text) == [(start, start + len("\n".join(recs)))]


def test_gutenberg_dialogue_and_commas_are_prose(shared_data):
    # blocks of one-line dialogue and comma-rich hard-wrapped prose are not records
    for name in ("pg1260.txt", "pg174.txt", "pg768.txt", "203-0.txt", "2600-0.txt"):
        text = (shared_data / "gutenberg" / name).read_text("utf-8")
        assert record_blocks(text) == [], name


# -- property: any mix of record blocks and prose -----------------------------------------------
_PROSE = [p for p in ALICE.split("\r\n\r\n") if len(p.split("\r\n")) >= 3 and len(p.split()) > 40]
_PROSE = _PROSE[:40]
_REC_KINDS = [
    lambda i: f"'{i:08x}' = '{i * 7:08x}'",
    lambda i: f"{i},name {i},city {i % 3}",
    lambda i: f"- item {i}",
    lambda i: f"[{i}] event {i} done",
]
blocks = st.lists(
    st.one_of(
        st.tuples(st.just("rec"), st.integers(0, 3), st.integers(MIN_LINES, 40)),
        st.tuples(st.just("prose"), st.integers(0, len(_PROSE) - 1), st.integers(1, 3)),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=blocks, sep=st.sampled_from(BREAKS))
# a paragraph right after a block whose first line opens with a quote, or whose third line holds
# five commas, was taken into the block: its wrapped lines became units (found by hypothesis)
@example(blocks=[("rec", 0, 8), ("rec", 0, 8), ("prose", 15, 1)], sep="\n")
@example(blocks=[("rec", 0, 8), ("prose", 31, 1)], sep="\n")
@example(blocks=[("rec", 0, 8), ("prose", 31, 1)], sep="\r\n")
def test_blocks_of_records_keep_their_lines_and_prose_stays_prose(blocks, sep):
    parts, records, proses = [], [], []
    for kind, which, size in blocks:
        if kind == "rec":
            lines = [_REC_KINDS[which](len(records) + i) for i in range(size)]
            records.extend(lines)
            parts.append(sep.join(lines))
        else:
            para = "\r\n\r\n".join(_PROSE[(which + j) % len(_PROSE)] for j in range(size))
            proses.append(para)
            parts.append(para)
    text = (sep + sep).join(parts)
    spans = CFG.chunk(text)
    got = [text[a:b] for a, b in spans]
    # exact offsets, in order, covering every non-space character once
    assert all(0 <= a < b <= len(text) for a, b in spans)
    assert all(b1 <= a2 for (_, b1), (a2, _) in zip(spans, spans[1:]))
    assert "".join("".join(g.split()) for g in got) == "".join(text.split())
    # every record line (of a block of MIN_LINES or more) is a unit of its own
    units = set(got)
    assert all(r in units for r in records)
    # prose keeps prose units: no unit is a single wrapped line of a paragraph
    for para in proses:
        lines = [ln.strip() for ln in para.split("\r\n") if len(ln.split()) > 4]
        joined = np.array([ln in units for ln in lines])
        assert joined.mean() < 0.5, para[:80]


def test_chunk_regions_moves_the_prose_units_to_offsets_in_the_text():
    text = "Intro, in prose.\n" + "\n".join(RECORDS[:10]) + "\n\n  Outro, in prose.  "

    def whole(piece):  # the prose chunker: one unit per piece, without its spaces
        return [(len(piece) - len(piece.lstrip()), len(piece.rstrip()))]

    got = [text[a:b] for a, b in chunk_regions(text, 32, whole)]
    assert got == ["Intro, in prose.", *RECORDS[:10], "Outro, in prose."]
    assert chunk_regions("no records here\n" * 9, 32, whole) == whole("no records here\n" * 9)


# -- the openings of lines, tried only where the pattern may match (issue 46: the build) -------
def _openings_by_finditer(text: str, first_end: int):
    """The pattern over the whole text (the code before issue 46): the reference."""
    from longctx.mixpr.lines import _OPENING

    found = ([], [])
    m = _OPENING.match("\n" + text[:first_end])
    if m is not None:
        found[m.lastgroup == "quoted"].append(0)
    for m in _OPENING.finditer(text):
        found[m.lastgroup == "quoted"].append(m.start() + 1)
    return found


def _openings_now(text: str):
    from longctx.mixpr.lines import _openings, line_breaks
    from longctx.text import _space_words

    cp, breaks = line_breaks(text)
    first_end = int(breaks[0]) if len(breaks) else len(text)
    return _openings(text, first_end, breaks, cp, _space_words(text)[0]), first_end


_LINE_PIECES = [
    "a", "key", " ", "\t", "=", ":", "->", "=>", ":=", "|", "-", "*", "+", "1", "\u0663", "[",
    "(", "{", "<", "#", "“", "‘", "'", '"', "`", "é", "—", "x.", "end.", "\u00a0",
] + BREAKS  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_LINE_PIECES), max_size=60).map("".join))
def test_openings_equal_the_pattern_over_the_whole_text(text):
    got, first_end = _openings_now(text)
    assert got == _openings_by_finditer(text, first_end)


def test_openings_of_a_book_equal_the_pattern_over_the_whole_text():
    got, first_end = _openings_now(ALICE)
    records, quoted = got
    assert (records, quoted) == _openings_by_finditer(ALICE, first_end)
    assert len(records) > 10 and len(quoted) > 100  # a contents list, and dialogue
