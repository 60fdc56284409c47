"""``chunk_words`` on text without sentence punctuation (issue 44, item 5).

Such text is one long "sentence" that the chunker cuts into paragraphs or lines, then into
equal word pieces. It held each paragraph as a regular-expression match (about 130 bytes of the
engine's stack per character) and every word of it as a ``(start, end)`` tuple: a 20 MB line of
words took 2.98 GB where the same words as sentences took 0.43 GB. The words are now two int64
arrays and the paragraphs are found between blank-line matches. Checked here: the spans equal
those of the previous code (kept below as the reference), and peak memory (tracemalloc, which is
deterministic) stays within 2x of the same words as sentences at 1x and 4x the size.
"""

from __future__ import annotations

import random
import re
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.text import (
    _LINE_RE,
    _grapheme_clusters,
    _partition_to_spans,
    _word_spans,
    chunk_words,
    split_sentences,
    word_re,
)

# -- the previous implementation of the long-sentence step (the reference) --------------------
_OLD_PARAGRAPH_RE = re.compile(r"\S(?:[^\n]|\n(?![ \t\f\v\r]*\n))*")


def _old_equal_word_pieces(words, max_words):
    n = len(words)
    n_pieces = -(-n // max_words)
    cuts = np.linspace(0, n, n_pieces + 1).round().astype(int)
    return [(words[a][0], words[b - 1][1]) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def _old_chunk_words(text, max_words, sentences, split_lines):
    """``chunk_words`` before issue 44 (without ``min_words``, which it did not touch)."""
    if not sentences:
        return []
    wre = word_re(text)
    clusters = _grapheme_clusters(text)
    word_starts = np.asarray([a for a, _ in _word_spans(text, wre, clusters)], dtype=np.int64)
    sent = np.asarray(sentences, dtype=np.int64)
    n_words = np.searchsorted(word_starts, sent[:, 1]) - np.searchsorted(word_starts, sent[:, 0])
    chunks = []
    for (a, b), n in zip(sentences, n_words.tolist()):
        if n <= max_words:
            chunks.append((a, b))
            continue
        for line in (_LINE_RE if split_lines else _OLD_PARAGRAPH_RE).finditer(text, a, b):
            words = _word_spans(text, wre, clusters, line.start(), line.end())
            if not words:
                continue
            if len(words) <= max_words:
                chunks.append((words[0][0], words[-1][1]))
            else:
                chunks.extend(_old_equal_word_pieces(words, max_words))
    return chunks


_PIECES = [
    "word", "the cat", "Natásha", "e\u0301", " \u0301", "熊猫吃竹子", "ประเทศไทย", "👩\u200d💻",
    "🇫🇷", "42", "a.", "Mr.", "x,y", "!", "?",
]  # fmt: skip
_SPACES = [
    " ", "  ", "\n", "\n\n", "\n \t\n", "\r\n", "\r\n\r\n", "\r", "\t", "\x0b", "\x0c",
    "\u2028", "\u3000", "\x1c", "\n\u2028\n", "",
]  # fmt: skip
texts = st.lists(st.sampled_from(_PIECES + _SPACES), max_size=80).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, max_words=st.integers(1, 5), split_lines=st.booleans(), data=st.data())
def test_spans_equal_the_previous_code(text, max_words, split_lines, data):
    # the splitter's sentences, and arbitrary cuts (a sentence may then start inside a word)
    cuts = data.draw(st.lists(st.integers(0, max(len(text), 1)), max_size=6))
    for sentences in (split_sentences(text, "rules"), _partition_to_spans(text, cuts)):
        got = chunk_words(text, max_words, sentences=sentences, split_lines=split_lines)
        assert got == _old_chunk_words(text, max_words, sentences, split_lines)


def test_spans_equal_the_previous_code_on_a_long_line():
    rng = random.Random(3)
    words = ["".join(rng.choice("abcdeé") for _ in range(rng.randint(1, 9))) for _ in range(4000)]
    text = " ".join(words) + "\n\n" + "\n".join(words[:300]) + "\n \n" + "熊猫 " * 50
    for split_lines in (False, True):
        sentences = split_sentences(text, "rules")
        got = chunk_words(text, 32, sentences=sentences, split_lines=split_lines)
        assert got == _old_chunk_words(text, 32, sentences, split_lines)
        assert all(1 <= len(text[a:b].split()) <= 32 for a, b in got)


# -- memory: within 2x of the same words as sentences, at 1x and 4x ---------------------------
def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _shapes(n_words: int) -> dict[str, str]:
    rng = random.Random(0)
    vocab = [
        "".join(rng.choice("abcdefghij") for _ in range(rng.randint(2, 9))) for _ in range(3000)
    ]
    words = [rng.choice(vocab) for _ in range(n_words)]
    return {
        "sentences": " ".join(
            " ".join(words[i : i + 20]).capitalize() + "." for i in range(0, n_words, 20)
        ),
        "one line": " ".join(words),
        "lines of 60 words": "\n".join(" ".join(words[i : i + 60]) for i in range(0, n_words, 60)),
    }


@pytest.mark.parametrize("split_lines", [False, True])
def test_unpunctuated_text_costs_what_sentences_cost(split_lines):
    ratios = {}
    for scale in (1, 4):
        shapes = _shapes(25_000 * scale)
        peaks = {
            name: _peak(lambda t=t: chunk_words(t, 32, split_lines=split_lines, backend="rules"))
            for name, t in shapes.items()
        }
        for name in ("one line", "lines of 60 words"):
            ratios[name, scale] = peaks[name] / peaks["sentences"]
    # before (split_lines=False): 10.2x at 1x, 9.7x at 4x, one line and lines of 60 words alike
    assert max(ratios.values()) <= 2.0, ratios
