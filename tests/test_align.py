"""Sentence-to-token alignment: exact offsets on hand-made cases, EASY (Algorithm 1) on SmolLM2."""

from __future__ import annotations

import numpy as np
import pytest

from longctx.align import (
    easy_boundaries,
    easy_token_spans,
    offset_token_spans,
    sentence_token_spans,
)
from longctx.text import split_sentences


def _check_partition(spans, n_tokens):
    assert spans[0][0] == 0 and spans[-1][1] == n_tokens
    assert all(a <= b for a, b in spans)
    assert all(spans[i][1] == spans[i + 1][0] for i in range(len(spans) - 1))


def _decoded_matches(tok, ids, spans, text, sentences):
    return [
        tok.decode(ids[a:b]).strip() == text[s:e].strip()
        for (a, b), (s, e) in zip(spans, sentences)
    ]


def test_leading_space_tokens_go_to_the_next_sentence():
    # "A b. The c."  tokens: A | " b" | . | " The" | " c" | .
    offsets = [(0, 1), (1, 3), (3, 4), (4, 8), (8, 10), (10, 11)]
    assert offset_token_spans([(0, 4), (5, 11)], offsets) == [(0, 3), (3, 6)]


def test_straddling_token_goes_to_the_sentence_of_its_first_character():
    # "Hi there.The end."  tokens: Hi | " there" | ".T" | he | " end" | .
    text = "Hi there.The end."
    offsets = np.array([(0, 2), (2, 8), (8, 10), (10, 12), (12, 16), (16, 17)])
    sents = [(0, 9), (9, 17)]
    assert offset_token_spans(sents, offsets) == [(0, 3), (3, 6)]
    assert offset_token_spans(sents, offsets, text=text) == [(0, 3), (3, 6)]


def test_whitespace_tokens_go_to_the_preceding_sentence_and_edges_are_covered():
    # "  A.\n\nB.  "  tokens: "  " | A | . | "\n\n" | B | . | "  "
    text = "  A.\n\nB.  "
    offsets = [(0, 2), (2, 3), (3, 4), (4, 6), (6, 7), (7, 8), (8, 10)]
    sents = [(2, 4), (6, 8)]
    expected = [(0, 4), (4, 7)]
    assert offset_token_spans(sents, offsets) == expected
    assert offset_token_spans(sents, offsets, text=text) == expected


def test_sentence_inside_one_token_gets_an_empty_span():
    # "x.y" is one token holding three one-character "sentences"
    assert offset_token_spans([(0, 1), (1, 2), (2, 3)], [(0, 3)]) == [(0, 1), (1, 1), (1, 1)]
    assert offset_token_spans([(0, 1), (2, 3)], []) == [(0, 0), (0, 0)]
    assert offset_token_spans([], [(0, 1)]) == []


def test_text_finds_first_non_space_when_spans_include_whitespace():
    # Spans that partition the text, space included: " The" starts in the first span's space.
    text = "A b. The c."
    offsets = [(0, 1), (1, 3), (3, 4), (4, 8), (8, 10), (10, 11)]
    sents = [(0, 5), (5, 11)]
    assert offset_token_spans(sents, offsets, text=text) == [(0, 3), (3, 6)]
    assert offset_token_spans(sents, offsets) == [(0, 4), (4, 6)]  # documented without text


def test_crlf_and_unicode_with_the_real_tokenizer(smollm2_tokenizer):
    tok = smollm2_tokenizer
    text = (
        "First line ends here.\r\nSecond one — naïve café, 日本語です。\r\n\r\n"
        "Emoji 🎉 party time! Last sentence…  "
    )
    parts = ["First line ends here.", "Second one — naïve café, 日本語です。"]
    parts += ["Emoji 🎉 party time!", "Last sentence…"]
    sents = [(text.index(p), text.index(p) + len(p)) for p in parts]
    assert sents[1] == (23, 54)  # character offsets, not bytes
    ids, spans = sentence_token_spans(text, sents, tok)
    _check_partition(spans, len(ids))
    assert all(_decoded_matches(tok, ids, spans, text, sents))
    assert "\r\n" in tok.decode(ids[spans[0][0] : spans[0][1]])  # CRLF trails sentence 0
    ids2, easy = sentence_token_spans(text, sents, tok, method="easy")
    assert ids2 == ids
    assert all(_decoded_matches(tok, ids, easy, text, sents))


def test_offsets_exact_on_alice(smollm2_tokenizer, alice_text):
    tok = smollm2_tokenizer
    text = alice_text[:60_000]
    sents = split_sentences(text)
    ids, spans = sentence_token_spans(text, sents, tok, method="offsets")
    assert len(spans) == len(sents)
    _check_partition(spans, len(ids))
    assert all(b > a for a, b in spans)
    assert all(_decoded_matches(tok, ids, spans, text, sents))


def test_easy_agrees_with_offsets_on_alice(smollm2_tokenizer, alice_text):
    tok = smollm2_tokenizer
    text = alice_text[:60_000]
    sents = split_sentences(text)
    ids, exact = sentence_token_spans(text, sents, tok, method="offsets")
    _, easy = sentence_token_spans(text, sents, tok, method="easy")
    _check_partition(easy, len(ids))
    assert all(_decoded_matches(tok, ids, easy, text, sents))
    # Same sentences; EASY leaves the whitespace tokens between sentences to the next one.
    for (_, b), (_, d) in zip(exact, easy):
        assert tok.decode(ids[min(b, d) : max(b, d)]).strip() == ""


def test_easy_paper_candidates_on_space_joined_sentences(smollm2_tokenizer, alice_text):
    """Algorithm 1 with Concat(P) = sentences joined by a space, on a text built that way."""
    tok = smollm2_tokenizer
    sentences = [
        " ".join(alice_text[a:b].split()) for a, b in split_sentences(alice_text[5_000:30_000])
    ]
    text = " ".join(sentences)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    spans = easy_token_spans(sentences, ids, tok)
    assert [tok.decode(ids[a:b]).strip() for a, b in spans] == sentences


def test_easy_restores_the_candidate_when_nothing_matches(smollm2_tokenizer):
    tok = smollm2_tokenizer
    ids = tok("One two three. Four five six.", add_special_tokens=False)["input_ids"]
    targets = ["Completely different.", "Nothing alike here."]
    candidates = [3, 7]
    assert easy_boundaries(targets, ids, tok, candidates=candidates) == candidates
    # wiggling: a too-short first guess is moved right until the decoded text matches
    assert (
        easy_boundaries(["One two three.", "Four five six."], ids, tok, candidates=[1, 7])[0] == 4
    )
    spans = easy_token_spans(targets, ids, tok, tolerance=0)
    _check_partition(spans, len(ids))


def test_auto_uses_easy_for_slow_tokenizers(smollm2_tokenizer):
    class Slow:
        is_fast = False

        def __call__(self, *a, **k):
            k.pop("return_offsets_mapping", None)
            return smollm2_tokenizer(*a, **k)

        def decode(self, *a, **k):
            return smollm2_tokenizer.decode(*a, **k)

    text = "Alice sat down. The Rabbit ran.\n\nShe followed it."
    sents = split_sentences(text)
    ids, spans = sentence_token_spans(text, sents, Slow())
    assert spans == easy_token_spans(
        [text[a:b] for a, b in sents], ids, smollm2_tokenizer, text=text, sentence_spans=sents
    )
    with pytest.raises(ValueError, match="fast tokenizer"):
        sentence_token_spans(text, sents, Slow(), method="offsets")
    ids3, spans3 = sentence_token_spans(text, None, smollm2_tokenizer)
    assert ids3 == ids and len(spans3) == len(sents)


def test_errors_name_the_argument(smollm2_tokenizer):
    offs = [(0, 1), (1, 2)]
    with pytest.raises(ValueError, match="sorted and non-overlapping"):
        offset_token_spans([(0, 5), (3, 8)], offs)
    with pytest.raises(ValueError, match="start < end"):
        offset_token_spans([(0, 0)], offs)
    with pytest.raises(ValueError, match="start < end"):
        offset_token_spans([(-1, 2)], offs)
    with pytest.raises(TypeError, match="sentences"):
        offset_token_spans("abc", offs)
    with pytest.raises(ValueError, match="sentences"):
        offset_token_spans([(0, 1.5)], offs)
    with pytest.raises(ValueError, match="offsets"):
        offset_token_spans([(0, 2)], [1, 2, 3])
    with pytest.raises(ValueError, match="offsets"):
        offset_token_spans([(0, 2)], [(1, 2), (0, 1)])
    with pytest.raises(ValueError, match="past the end of text"):
        offset_token_spans([(0, 9)], offs, text="ab")
    with pytest.raises(TypeError, match="sentences"):
        easy_token_spans("one. two.", [1, 2], smollm2_tokenizer)
    with pytest.raises(TypeError, match=r"sentences\[1\]"):
        easy_token_spans(["a", 3], [1, 2], smollm2_tokenizer)
    with pytest.raises(ValueError, match="tolerance"):
        easy_token_spans(["a"], [1, 2], smollm2_tokenizer, tolerance=-1)
    with pytest.raises(ValueError, match="token_ids"):
        easy_token_spans(["a"], [[1, 2]], smollm2_tokenizer)
    with pytest.raises(ValueError, match="together"):
        easy_token_spans(["a"], [1], smollm2_tokenizer, text="a")
    with pytest.raises(ValueError, match="method"):
        sentence_token_spans("A b.", [(0, 4)], smollm2_tokenizer, method="regex")
    with pytest.raises(TypeError, match="text"):
        sentence_token_spans(b"A b.", [(0, 4)], smollm2_tokenizer)
    assert easy_token_spans([], [1, 2], smollm2_tokenizer) == []
