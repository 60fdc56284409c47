import re

import pytest

from longctx.text import chunk_words, split_sentences


def _nonspace_positions(text):
    return [m.start() for m in re.finditer(r"\S", text)]


def _covered(spans):
    out = []
    for a, b in spans:
        out.extend(range(a, b))
    return out


def _assert_exact_cover(text, spans):
    # sorted, non-overlapping, stripped, and every non-space char inside exactly one span
    assert all(a < b for a, b in spans)
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    assert all(not text[a].isspace() and not text[b - 1].isspace() for a, b in spans)
    covered = [i for i in _covered(spans) if not text[i].isspace()]
    assert covered == _nonspace_positions(text)


ABBREV = (
    "Dr. Smith went to Washington, D.C. on Monday. He met e.g. the U.S. president there. "
    'Mr. Jones said "Hi!" and left. The U.S. Army is big. It cost $3.50 in total.'
)


def test_split_sentences_abbreviations():
    spans = split_sentences(ABBREV)
    got = [ABBREV[a:b] for a, b in spans]
    assert got == [
        "Dr. Smith went to Washington, D.C. on Monday.",
        "He met e.g. the U.S. president there.",
        'Mr. Jones said "Hi!" and left.',
        "The U.S. Army is big.",
        "It cost $3.50 in total.",
    ]


@pytest.mark.parametrize("text", ["", "   \n\t ", "one", "  Hello world.  Bye.  ", "a.\r\n\r\nb."])
def test_split_sentences_edge_cases(text):
    spans = split_sentences(text)
    _assert_exact_cover(text, spans)


def test_split_sentences_book_covers_every_char(alice_text):
    spans = split_sentences(alice_text)
    assert len(spans) > 1000
    _assert_exact_cover(alice_text, spans)


def test_split_sentences_bad_arguments():
    with pytest.raises(TypeError, match="text"):
        split_sentences(b"bytes")
    with pytest.raises(ValueError, match="backend"):
        split_sentences("Hi.", backend="spacy")


def test_split_sentences_stanza_without_models_is_clear():
    try:
        import stanza  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="stanza"):
            split_sentences("Hello there. Bye.", backend="stanza")
    else:  # pragma: no cover - stanza is not a dependency
        pytest.skip("stanza installed")


def test_chunk_words_limits_and_cover(alice_text):
    chunks = chunk_words(alice_text, max_words=32)
    _assert_exact_cover(alice_text, chunks)
    counts = [len(alice_text[a:b].split()) for a, b in chunks]
    assert max(counts) <= 32 and min(counts) >= 1


def test_chunk_words_newlines_then_equal_pieces():
    line1 = " ".join(f"w{i}" for i in range(10))
    line2 = " ".join(f"x{i}" for i in range(70))  # 70 words on one line -> 3 pieces of 23/24
    text = line1 + "\n" + line2
    chunks = chunk_words(text, max_words=32)
    pieces = [text[a:b] for a, b in chunks]
    assert pieces[0] == line1
    sizes = [len(p.split()) for p in pieces[1:]]
    assert sizes == [23, 24, 23] or sorted(sizes) == [23, 23, 24]
    assert " ".join(pieces[1:]) == line2


def test_chunk_words_short_sentences_untouched():
    text = "The cat sat on the mat. Then the dog ran away."
    assert [text[a:b] for a, b in chunk_words(text)] == [
        "The cat sat on the mat.",
        "Then the dog ran away.",
    ]


def test_chunk_words_bad_max_words():
    with pytest.raises(ValueError, match="max_words"):
        chunk_words("hello", max_words=0)
    with pytest.raises(TypeError, match="max_words"):
        chunk_words("hello", max_words=2.5)


# A hard-wrapped paragraph (Gutenberg style): one 50-word sentence over lines of ~60 characters.
WRAPPED = (
    "Prince Andrew looked at Natasha across the crowded ballroom and\n"
    "thought that if she came to him first and then to her cousin, she\n"
    "would be his wife, and he could not say why this idea struck\n"
    "him so strongly on that bright evening in the city of St Petersburg."
)


def test_chunk_words_split_lines_false_gives_equal_pieces_not_line_fragments():
    n_words = len(WRAPPED.split())
    assert n_words == 50
    paper = [WRAPPED[a:b] for a, b in chunk_words(WRAPPED, max_words=32)]
    assert paper == WRAPPED.split("\n")  # the paper's newline step: one chunk per line
    spans = chunk_words(WRAPPED, max_words=32, split_lines=False)
    _assert_exact_cover(WRAPPED, spans)
    pieces = [WRAPPED[a:b] for a, b in spans]
    assert [len(p.split()) for p in pieces] == [25, 25]
    assert pieces[0].startswith("Prince Andrew") and pieces[1].endswith("St Petersburg.")
    assert "\n" in pieces[0]  # line breaks stay inside a piece


def test_chunk_words_split_lines_false_keeps_short_sentences_and_cover(alice_text):
    text = "The cat sat\non the mat. Then the dog ran away."
    got = [text[a:b] for a, b in chunk_words(text, split_lines=False)]
    assert got == ["The cat sat\non the mat.", "Then the dog ran away."]
    spans = chunk_words(alice_text, max_words=32, split_lines=False)
    _assert_exact_cover(alice_text, spans)
    assert max(len(alice_text[a:b].split()) for a, b in spans) <= 32
    # fewer, longer units than the paper's newline step on hard-wrapped text
    assert len(spans) < len(chunk_words(alice_text, max_words=32))


def test_chunk_words_bad_split_lines():
    with pytest.raises(TypeError, match="split_lines"):
        chunk_words("hello", split_lines=1)


def test_chunk_words_split_lines_false_still_cuts_at_blank_lines():
    # nupunkt sees one 40-word "sentence" (no final stop before the blank line): cut at the
    # paragraph break, never at the single line break inside the first paragraph.
    para1 = "CHAPTER ONE THE\nBEGINNING OF ALL THINGS"
    para2 = " ".join(["word"] * 34) + "."
    text = para1 + "\n\n" + para2
    got = [text[a:b] for a, b in chunk_words(text, max_words=32, split_lines=False)]
    assert got[0] == para1
    assert [len(p.split()) for p in got[1:]] == [17, 17]
    paper = [text[a:b] for a, b in chunk_words(text, max_words=32)]
    assert paper[:2] == ["CHAPTER ONE THE", "BEGINNING OF ALL THINGS"]


@pytest.mark.parametrize("text", ["猫.\n\nA。?", "b.\n\nA later line", "Mr.\n\nSmith came"])
def test_rules_a_blank_line_after_an_initial_or_abbreviation_ends_the_sentence(text):
    # the abbreviation / initial rule swallowed the blank line (a unit crossed a paragraph, and
    # chunk_many, which joins texts by blank lines, disagreed with chunk)
    spans = split_sentences(text, "rules")
    cut = text.index("\n\n")
    assert len(spans) == 2 and spans[0][1] <= cut < spans[1][0]


def test_chunk_many_equals_chunk_on_the_example_hypothesis_found():
    from longctx.mixpr import MixPRConfig

    cfg = MixPRConfig(max_words=4)
    texts = ["猫.", "猫.", "A。?"]
    assert cfg.chunk_many(texts) == [cfg.chunk(t) for t in texts]
