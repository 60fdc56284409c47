"""Argument checks: query length limit, short excerpts in errors, lone surrogates; sentence
splitting on runs of ! and ?."""

from __future__ import annotations

import pytest

from longctx.checks import MAX_QUERY_CHARS, check_choice, check_query, check_text, excerpt
from longctx.diversity import DiversityIndex
from longctx.embeddings import get_encoder
from longctx.mixpr import MixPR, MixPRIndex
from longctx.text import split_sentences
from tests.test_diversity import HashEncoder


@pytest.fixture(scope="module")
def index():
    return MixPRIndex.from_texts("The cat sat on the mat. The dog chased the cat. Fish swim.")


def test_query_length_limit_names_query(index):
    long = "cat " * (MAX_QUERY_CHARS // 4 + 1)
    with pytest.raises(ValueError, match="query is .* characters long, over the limit") as e:
        index.search(long)
    assert len(str(e.value)) < 400
    with pytest.raises(ValueError, match="query"):
        MixPR().retrieve("The cat sat.", long)
    div = DiversityIndex.from_texts("The cat sat. The dog ran.", get_encoder(HashEncoder()))
    with pytest.raises(ValueError, match="query"):
        div.search(long, k=1)
    assert index.search("cat " * (MAX_QUERY_CHARS // 4 - 1), k=1).hits  # at the limit: answered
    with pytest.raises(ValueError, match="over the limit of 10"):
        check_query("a long question", max_chars=10)


def test_errors_quote_a_short_excerpt():
    with pytest.raises(ValueError) as e:
        check_text(" " * 5_000_000, "text")
    assert len(str(e.value)) < 300 and "5,000,000 characters" in str(e.value)
    with pytest.raises(ValueError) as e:
        check_choice("x" * 1_000_000, "mode", ("auto", "local"))
    assert len(str(e.value)) < 300
    assert excerpt("short") == "'short'"


def test_lone_surrogate_is_a_clear_error_before_tokenizers(index):
    with pytest.raises(
        ValueError, match=r"query holds a lone surrogate \(U\+D800\) at character 3"
    ):
        index.search("cat\ud800")
    with pytest.raises(ValueError, match=r"texts\[0\] holds a lone surrogate"):
        MixPRIndex.from_texts(["bad \udcff text"])
    with pytest.raises(ValueError, match="text holds a lone surrogate"):
        split_sentences("a\udc80b")


@pytest.mark.parametrize("run", ["!", "?", "!?", "?!."])
def test_punctuation_runs_split_linearly_and_keep_offsets(run):
    text = "Hello there" + run * (200_000 // len(run)) + " Next one. And the last?"
    spans = split_sentences(text)  # was quadratic: 106 s for 200 KB of "!?"
    assert [text[a:b] for a, b in spans][1:] == ["Next one.", "And the last?"]
    assert spans[0] == (0, len("Hello there") + len(run) * (200_000 // len(run)))
    short = "Wow!!! Really?! Yes."
    assert [short[a:b] for a, b in split_sentences(short)] == ["Wow!!!", "Really?!", "Yes."]
