"""Sentence splitting and chunking stay linear on every punctuation pattern.

nupunkt scans, for each sentence mark, the rest of the whitespace-free run it stands in: a run of
``k`` marks and ``n`` characters costs ``k * n`` (``'."' * 100_000`` took 43 s). The text nupunkt
sees has at most ``2 * DENSE_RUN_KEEP`` marks in any run longer than ``DENSE_RUN_CHARS``, so that
cost is at most ``DENSE_RUN_CHARS`` per character: checked below by counting it (no timings),
plus one megabyte end to end.
"""

from __future__ import annotations

import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.text import (
    DENSE_RUN_CHARS,
    DENSE_RUN_KEEP,
    _guard_dense_runs,
    _guard_punct_runs,
    chunk_words,
    split_sentences,
)

PATTERNS = ['."', ".)", ".]", ".'", "!)", "!!!!!!!!a", '?"', "..", "a.", '."a', "…)", ".»", "!?"]
_MARK = re.compile("[.!?\u2026]")


def _nupunkt_cost(text: str) -> int:
    """Characters nupunkt's candidate scan reads: for each whitespace-free run, its number of
    sentence marks times its length."""
    return sum(
        len(_MARK.findall(m.group())) * (m.end() - m.start()) for m in re.finditer(r"\S+", text)
    )


def _guarded(text: str) -> str:
    return _guard_dense_runs(_guard_punct_runs(text))


def _check_partition(text, spans):
    covered = np.zeros(len(text), dtype=np.int64)
    last = 0
    for a, b in spans:
        assert last <= a < b <= len(text)
        covered[a:b] += 1
        last = b
    nonspace = np.array([not c.isspace() for c in text], dtype=bool)
    assert (covered[nonspace] == 1).all() and covered.max() <= 1


def test_each_pattern_of_the_issue_costs_linear_work():
    for pattern in PATTERNS:
        text = pattern * (100_000 // len(pattern))
        guarded = _guarded(text)
        assert len(guarded) == len(text)
        # only sentence marks were replaced (by commas or, in runs of ! and ?, spaces)
        changed = [i for i, (x, y) in enumerate(zip(text, guarded)) if x != y]
        assert all(_MARK.match(text[i]) and guarded[i] in ", " for i in changed)
        assert _nupunkt_cost(text) > 1000 * len(text)  # what nupunkt was given before
        assert _nupunkt_cost(guarded) <= DENSE_RUN_CHARS * len(text), pattern


def test_a_megabyte_of_quoted_periods_splits():
    """``'."' * 100_000`` took 43 s and a megabyte would take about 15 minutes; now it is a
    fraction of a second per megabyte."""
    text = '."' * 500_000
    spans = split_sentences(text)
    _check_partition(text, spans)
    chunks = chunk_words(text, sentences=spans)
    _check_partition(text, chunks)


def test_ordinary_text_is_not_touched(alice_text):
    assert _guard_dense_runs(alice_text) == alice_text
    url = "see https://example.com/a.b?c=d.e&f=g.h!i " * 50
    assert _guard_dense_runs(url) == url  # runs under the limits are left alone


def test_dense_run_keeps_its_first_and_last_marks():
    text = "Hi. " + "a." * 300 + " Next one."
    guarded = _guard_dense_runs(text)
    run = guarded[4:604]
    assert run.count(".") == 2 * DENSE_RUN_KEEP
    assert run.startswith("a." * DENSE_RUN_KEEP) and run.endswith("a." * DENSE_RUN_KEEP)
    assert guarded[:4] == "Hi. " and guarded[604:] == " Next one."


def test_spaceless_queries_chunk_linearly():
    """The MixPR query of the issue (16,000 characters of "猫。" / "ก ") through the chunker."""
    for text, n_units in [("猫。" * 8000, 8000), ("ก " * 8000, 1)]:
        spans = split_sentences(text)
        _check_partition(text, spans)
        chunks = chunk_words(text, sentences=spans)
        _check_partition(text, chunks)
        assert len(spans) >= n_units


_PUNCT = ".!?…\"')]}»”’*,;:-"
_ALPHABET = _PUNCT + "aA  \n。"
patterns = st.text(alphabet=_ALPHABET, min_size=1, max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, size=st.sampled_from([20_000, 200_000]))
def test_fuzzed_punctuation_costs_linear_work(pattern, size):
    text = (pattern * (size // len(pattern) + 1))[:size]
    assert _nupunkt_cost(_guarded(text)) <= DENSE_RUN_CHARS * len(text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, size=st.sampled_from([300, 5_000]))
def test_fuzzed_punctuation_splits_into_a_partition(pattern, size):
    text = (pattern * (size // len(pattern) + 1))[:size]
    spans = split_sentences(text)
    _check_partition(text, spans)
    _check_partition(text, chunk_words(text, 8, sentences=spans))


def test_keep_is_at_most_half_the_limit():
    assert 2 * DENSE_RUN_KEEP < DENSE_RUN_CHARS


def test_the_rules_splitter_is_linear_on_every_pattern():
    """The ``"rules"`` backend (MixPR's default chunker) is one regular-expression pass whose
    runs of marks are matched whole (possessive, and never from inside a run): a megabyte of
    each of the issue's patterns splits into a partition (a quadratic pass would not finish)."""
    for pattern in [*PATTERNS, ". ", "?!", ".\n\n", "Mr. "]:
        text = pattern * (1_000_000 // len(pattern))
        _check_partition(text, split_sentences(text, "rules"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=patterns, size=st.sampled_from([300, 5_000]))
def test_fuzzed_punctuation_splits_into_a_partition_by_rules(pattern, size):
    text = (pattern * (size // len(pattern) + 1))[:size]
    spans = split_sentences(text, "rules")
    _check_partition(text, spans)
    _check_partition(text, chunk_words(text, 8, sentences=spans))


def test_rules_sentences_keep_abbreviations_and_initials():
    text = (
        "Mr. Smith met Dr. J. R. Tolkien at 5 p.m. in St. Albans. He said “Hi!” Then: “Go.” "
        "3 cats came.\n\nA new paragraph without a full stop\n\nAnd another. é is lower. "
        "“Hi!” he said. Says I. Then so... on."
    )
    got = [text[a:b] for a, b in split_sentences(text, "rules")]
    assert got == [
        "Mr. Smith met Dr. J. R. Tolkien at 5 p.m. in St. Albans.",
        "He said “Hi!”",
        "Then: “Go.”",
        "3 cats came.",
        "A new paragraph without a full stop",
        "And another.",
        "é is lower.",
        "“Hi!” he said.",
        "Says I.",
        "Then so... on.",
    ]
