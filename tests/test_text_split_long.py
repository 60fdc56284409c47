"""split_long_spans: units longer than a token budget or a model window, cut on word boundaries."""

import re

import numpy as np
import pytest

from longctx.text import split_long_spans, split_sentences
from longctx.tokens import count_tokens


def _check_cover(text, spans, pieces):
    """Pieces start and end on non-space characters, stay inside their span, and cover every
    non-space character of the spans exactly once."""
    covered = np.zeros(len(text), dtype=np.int64)
    for a, b in pieces:
        assert a < b and not text[a].isspace() and not text[b - 1].isspace()
        assert a == 0 or text[a - 1].isspace() or any(a == s for s, _ in spans)
        assert b == len(text) or text[b].isspace() or any(b == e for _, e in spans)
        covered[a:b] += 1
    for a, b in spans:
        for i in range(a, b):
            if not text[i].isspace():
                assert covered[i] == 1, i
    assert covered.max() <= 1


def test_long_text_without_punctuation_is_cut_into_near_equal_pieces():
    rng = np.random.default_rng(0)
    words = ["alpha", "be", "gamma", "delta", "epsilonic", "zo", "eta", "theta"]
    text = " ".join(rng.choice(words, size=36_000))  # ~200 KB, no sentence end
    assert len(text) > 195_000
    spans = split_sentences(text)
    assert len(spans) == 1  # one "sentence": the whole file
    pieces = split_long_spans(text, spans, 256)
    counts = [count_tokens(text[a:b]) for a, b in pieces]
    assert max(counts) <= 256
    total = count_tokens(text)  # "epsilonic" is 3 tokens: over 36,000
    # ceil(tokens / max_tokens), or a piece or two more where 3-token words overshoot a cut
    assert -(-total // 256) <= len(pieces) <= -(-total // 256) + 2
    assert max(counts) - min(counts) <= 6  # near-equal (a word is up to 3 tokens)
    assert max(b - a for a, b in pieces) < 3_000
    _check_cover(text, spans, pieces)


def test_short_spans_are_kept_and_order_preserved():
    text = "One two three. Four five six seven eight nine ten eleven. Twelve."
    spans = split_sentences(text)
    pieces = split_long_spans(text, spans, 4)
    assert pieces[0] == spans[0] and pieces[-1] == spans[-1]
    assert [text[a:b] for a, b in pieces[1:-1]] == [
        "Four five six",
        "seven eight nine",
        "ten eleven.",
    ]
    assert pieces == sorted(pieces)
    _check_cover(text, spans, pieces)
    assert split_long_spans(text, spans, 100) == spans


def test_a_single_word_longer_than_the_limit_stays_whole():
    text = "short " + "x" * 50 + " tail words here"
    spans = [(0, len(text))]
    pieces = split_long_spans(text, spans, 3, token_counter=len)  # tokens = characters
    assert text[pieces[1][0] : pieces[1][1]] == "x" * 50
    for a, b in pieces:
        assert len(text[a:b]) <= 3 or " " not in text[a:b]
    _check_cover(text, spans, pieces)


@pytest.mark.parametrize("seed", range(5))
def test_random_texts_any_counter(seed):
    rng = np.random.default_rng(seed)
    vocab = ["a", "bb", "ccc,", "dddd", "e.", "ffffff", "g-h", "i\n", "jj\r\n"]
    text = "  " + " ".join(rng.choice(vocab, size=600)) + " "
    spans = [m.span() for m in re.finditer(r"\S(?:.*?\S)?(?=\s*\n|\s*$)", text, re.S)]
    spans = spans or [(2, len(text) - 1)]
    for max_tokens, counter in [(7, None), (20, len), (1, None)]:
        pieces = split_long_spans(text, spans, max_tokens, token_counter=counter)
        c = counter or count_tokens
        for a, b in pieces:
            assert c(text[a:b]) <= max_tokens or len(text[a:b].split()) == 1
        _check_cover(text, spans, pieces)


def test_errors():
    with pytest.raises(TypeError, match="text"):
        split_long_spans(b"bytes", [], 3)
    with pytest.raises(ValueError, match="max_tokens"):
        split_long_spans("a b", [(0, 3)], 0)
    with pytest.raises(ValueError, match="outside the text"):
        split_long_spans("a b", [(0, 9)], 2)
    with pytest.raises(ValueError, match="pairs"):
        split_long_spans("a b", [(0,)], 2)
    assert split_long_spans("", [], 5) == []


def test_model_tokens_with_a_real_tokenizer(smollm2_tokenizer):
    from longctx.tokens import hf_token_counter

    counter = hf_token_counter(smollm2_tokenizer)
    text = " ".join(["antidisestablishmentarianism", "of", "the", "cat's", "well-being"] * 300)
    spans = [(0, len(text))]
    pieces = split_long_spans(text, spans, 64, token_counter=counter)
    assert len(pieces) > 1
    assert all(counter(text[a:b]) <= 64 for a, b in pieces)
    _check_cover(text, spans, pieces)
