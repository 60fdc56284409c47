"""Text without spaces between words (Chinese, Japanese, Thai): sentence splitting, MixPR units and
terms, Diversity's sentences, accent folding; and English splits and chunks left unchanged."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace

import numpy as np
import pytest

from longctx.diversity import DiversityIndex
from longctx.embeddings import get_encoder
from longctx.mixpr import MixPRIndex
from longctx.mixpr.config import PRESETS
from longctx.terms import char_bigrams, fold_accents_ascii, fold_accents_unicode
from longctx.text import MAX_SPACELESS_SENTENCE_CHARS, chunk_words, split_sentences
from tests._intl_texts import JA, TH, ZH
from tests.test_diversity import HashEncoder


def _check_partition(text, spans):
    """Spans start and end on non-space characters, in order, without overlap, and cover every
    non-space character of the text."""
    covered = np.zeros(len(text), dtype=np.int64)
    last = 0
    for a, b in spans:
        assert last <= a < b <= len(text)
        assert not text[a].isspace() and not text[b - 1].isspace()
        covered[a:b] += 1
        last = b
    assert covered.max(initial=0) <= 1
    assert all(covered[i] == 1 for i, c in enumerate(text) if not c.isspace())


@pytest.mark.parametrize(
    ("text", "first", "n"),
    [
        (ZH, "长城是中国古代的军事防御工程，全长两万多公里。", 11),
        (JA, "富士山は日本で一番高い山で、標高は三千七百七十六メートルです。", 10),
    ],
)
def test_cjk_text_is_split_at_sentence_marks(text, first, n):
    spans = split_sentences(text)
    _check_partition(text, spans)
    sents = [text[a:b] for a, b in spans]
    assert sents[0] == first and len(sents) == n
    # every sentence ends with its mark (and closing quote), none holds two
    assert all(s[-1] in "。！？」" for s in sents)
    assert all(sum(s.count(c) for c in "。！？") == 1 for s in sents)


def test_japanese_closing_quote_stays_with_its_sentence():
    spans = split_sentences(JA)
    assert "「きれいですね」と友達が言いました。" in [JA[a:b] for a, b in spans]


def test_thai_is_split_at_spaces_between_thai_runs():
    spans = split_sentences(TH)
    _check_partition(TH, spans)
    sents = [TH[a:b] for a, b in spans]
    assert sents[:2] == [
        "ประเทศไทยตั้งอยู่ในภูมิภาคเอเชียตะวันออกเฉียงใต้",
        "กรุงเทพมหานครเป็นเมืองหลวงของประเทศ",
    ]
    assert len(sents) == 9 and not any(" " in s for s in sents)


@pytest.mark.parametrize("text", [ZH, JA, TH])
def test_50kb_without_punctuation_is_many_bounded_units(text):
    # no sentence marks, no spaces, no line breaks: 50 KB in one run
    bare = "".join(c for c in text if c not in "。！？，、；「」\n ")
    big = (bare * (50_000 // len(bare.encode()) + 1))[:17_000]
    spans = split_sentences(big)
    _check_partition(big, spans)
    assert len(spans) >= len(big) // MAX_SPACELESS_SENTENCE_CHARS
    assert max(b - a for a, b in spans) <= MAX_SPACELESS_SENTENCE_CHARS
    # no cut puts a Thai vowel or tone mark at the start of a piece
    import unicodedata

    assert all(unicodedata.category(big[a])[0] != "M" for a, _ in spans)
    chunks = chunk_words(big)
    _check_partition(big, chunks)
    assert len(chunks) >= len(spans)


def test_mixpr_chinese_query_finds_the_panda_passage_with_exact_offsets():
    index = MixPRIndex.from_texts(ZH)
    assert index.n_units >= 11
    result = index.search("熊猫吃什么？", k=2)
    assert result.mode == "local"  # the query's bigrams (熊猫) occur in the text
    texts = [h.text for h in result.hits]
    assert "大熊猫的食物几乎全部是竹子，每天要吃十几公斤的竹叶和竹笋！" in texts
    for h in result.hits:
        assert ZH[h.start : h.end] == h.text


def test_mixpr_japanese_query_finds_mount_fuji_with_exact_offsets():
    index = MixPRIndex.from_texts(JA, preset="paper")
    result = index.search("富士山の標高は？", k=1)
    (hit,) = result.hits
    assert hit.text == "富士山は日本で一番高い山で、標高は三千七百七十六メートルです。"
    assert JA[hit.start : hit.end] == hit.text and result.mode == "local"


def test_mixpr_thai_query_reaches_the_elephant_passage():
    result = MixPRIndex.from_texts(TH).search("ช้างกินอะไร", k=1)
    assert result.hits[0].text == "ช้างไทยกินหญ้าและผลไม้เป็นอาหาร"


def test_diversity_sentences_of_cjk_text_come_from_the_splitter():
    index = DiversityIndex.from_texts([ZH, JA], get_encoder(HashEncoder()))
    for s, text in enumerate((ZH, JA)):
        assert [(a, b) for src, a, b in index.spans() if src == s] == split_sentences(text)
    res = index.search(k=4)
    for h in res.hits:
        assert (ZH, JA)[h.source][h.start : h.end] == h.text


def test_cjk_terms_are_character_bigrams_and_accents_fold_on_latin_only():
    assert char_bigrams("熊猫吃什么？") == ["熊猫", "猫吃", "吃什", "什么"]
    assert char_bigrams("猫 and 犬") == ["猫", "犬"]
    analyzer = PRESETS["default"].vectorizer().build_analyzer()
    terms = analyzer("大熊猫 eats bamboo shoots")
    assert {"大熊", "熊猫", "eat", "bamboo", "shoot"} <= set(terms)
    assert fold_accents_unicode("で") == "で" != fold_accents_unicode("て")
    assert fold_accents_unicode("Natásha café Ελλάδα Ёлка") == "Natasha cafe Ελλαδα Елка"
    assert fold_accents_unicode("ไม่ใช่") == "ไม่ใช่"  # Thai tone marks kept
    assert fold_accents_ascii("café で") == "cafe で"
    # Japanese で and て are different terms in MixPR
    vec = PRESETS["default"].vectorizer()
    vec.fit(["駅で弁当", "駅て弁当"])
    assert "駅で" in vec.vocabulary_ and "駅て" in vec.vocabulary_


def _digest(obj) -> str:
    return hashlib.sha1(json.dumps(obj).encode()).hexdigest()


def test_english_splits_chunks_and_terms_unchanged(alice_text):
    """Pinned on the bundled Alice before CJK support: English must not move (benchmarks). The
    default preset's chunks are pinned at the 32 words and the nupunkt sentences it had then (it
    now has 64 words and the "rules" splitter)."""
    spans = split_sentences(alice_text)
    assert len(spans) == 1478
    assert _digest(spans) == "377629600a120e98f46ff7f45fedd8df3f7a20fe"
    default = replace(PRESETS["default"], max_words=32, sentences="auto").chunk(alice_text)
    paper = PRESETS["paper"].chunk(alice_text)
    assert (len(default), len(paper)) == (1850, 2511)
    assert (
        _digest(default) == "ec8741679acb1d4b0fd2492092f7b71db5573690"
        and _digest(paper) == "7e5ac2c9ed5348dce9e05ec79ee51553470434fc"
    )
