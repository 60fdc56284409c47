"""count_tokens never undercounts: long words, digits, random strings, CJK, Thai (calibrated on
SmolLM2's tokenizer)."""

from __future__ import annotations

import random
import string

import pytest

from longctx.diversity import DiversityIndex
from longctx.embeddings import get_encoder
from longctx.mixpr import MixPRIndex
from longctx.selection import BudgetTooSmallError
from longctx.tokens import count_tokens, hf_token_counter
from tests._intl_texts import JA, TH, ZH
from tests.test_diversity import HashEncoder

_RNG = random.Random(0)
URL = "https://example.com/" + "".join(
    _RNG.choice(string.ascii_letters + string.digits) for _ in range(500)
)


def test_counts_of_the_issue():
    assert count_tokens(ZH[:100]) >= 100  # each CJK character at least one token
    assert count_tokens(JA) >= len(JA)
    assert count_tokens(TH) >= len(TH) // 2
    assert len(URL) == 520 and count_tokens(URL) > 100
    assert count_tokens("a" * 5_000_000) >= 5_000_000 // 4
    assert count_tokens("") == 0 and count_tokens(" ") == 0 and count_tokens("\n") == 1
    assert count_tokens("The cat sat on the mat.") == 7  # plain English unchanged


@pytest.mark.parametrize(
    "text",
    [
        ZH,
        JA,
        TH,
        URL,
        "https://en.wikipedia.org/wiki/Giant_panda?utm_source=x&id=8c1f2e7a9b3d4f60",
        "def f(x):\n    return x**2 + 1  # 123456789",
        "🎉😀 ok 👍🏽",
        "한국어 문장입니다",
        "Привет мир, как дела?",
    ],
)
def test_never_below_smollm2(smollm2_tokenizer, text):
    assert count_tokens(text) >= hf_token_counter(smollm2_tokenizer)(text)


def test_english_stays_close_to_smollm2(smollm2_tokenizer, alice_text):
    text = alice_text[20_000:60_000]
    real = hf_token_counter(smollm2_tokenizer)(text)
    assert 0.9 * real <= count_tokens(text) <= 1.15 * real


def test_token_budget_never_returns_a_giant_word():
    text = "Short words here. " + "x" * 5_000_000 + " More short words."
    index = MixPRIndex.from_texts(text)
    result = index.search("short words", token_budget=60)
    assert sum(len(h.text) for h in result.hits) < 1000
    with pytest.raises(BudgetTooSmallError):
        MixPRIndex.from_texts("x" * 5_000_000).search("x", token_budget=60)
    div = DiversityIndex.from_texts(text, get_encoder(HashEncoder()))
    assert sum(len(h.text) for h in div.search(token_budget=60).hits) <= 60 * 4
