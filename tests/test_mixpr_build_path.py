"""The pieces of MixPR's build path (issue 46: a build no slower than bm25s's): the batched term
counts equal the per-unit analysis, the unit texts slice as a list would, the stemmer of
distinct words gives the stems of the cached one."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRConfig
from longctx.mixpr.build import _BlockTexts
from longctx.mixpr.tfidf import TfidfSettings, _count_each, _count_rows

# words with precomposed accents, curly quotes, a byte-order mark, CJK and Thai (with its tone
# marks, kept with their letters), stop words, and the batch's separator characters themselves
_WORDS = [
    "the", "Natásha", "ÉTÉ", "naïve", "running", "runs", "’tis", "“Yes,”", "\ufeffbook", "中文字",
    "ไม่ใช่", "œuvre", "x", "42", "A.B.", "\x00", "\x01", "\ue000", "…", "ﬁne", "Σοφία",
    "ΟΔΥΣΣΕΥΣ", "Σ", "Straße",
]  # fmt: skip
# (no combining mark, nor "İ", which lowers to i + U+0307: there the build's folding by blocks
# of units and a unit's own differ, as before; test_a_block_with_a_combining_mark_... pins it)
_SPACES = [" ", "\n", "\n\n", "\t", "\u00a0"]
units = st.lists(st.sampled_from(_WORDS + _SPACES), max_size=12).map("".join)
SETTINGS = {
    name: TfidfSettings(MixPRConfig(**kw))
    for name, kw in {
        "default": {},
        "ascii folding, no stemmer": {"strip_accents": "ascii", "stemmer": None},
        "no folding": {"strip_accents": None},
    }.items()
}


def _rows(settings, texts, count):
    vocab: dict[str, int] = {}
    indptr, indices, counts = count(settings, texts, vocab)
    terms = {j: t for t, j in vocab.items()}
    return [
        sorted((terms[int(j)], float(c)) for j, c in zip(indices[a:b], counts[a:b]))
        for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())
    ]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(units, min_size=1, max_size=20), name=st.sampled_from(sorted(SETTINGS)))
def test_batched_counts_equal_the_per_unit_analysis(texts, name):
    s = SETTINGS[name]
    assert s.batch is not None
    assert _rows(s, texts, _count_rows) == _rows(s, texts, _count_each)


def test_batched_counts_of_a_book_like_block():
    rng = np.random.default_rng(0)
    words = [w for w in _WORDS if w not in ("\x00",)]
    texts = [" ".join(rng.choice(words, size=30).tolist()) for _ in range(600)]
    s = SETTINGS["default"]
    got = _rows(s, texts, _count_rows)
    assert got == _rows(s, texts, _count_each)
    assert any(("natasha", 1.0) in r or ("natasha", 2.0) in r for r in got)  # folded, stemmed


def test_block_texts_slice_as_a_list():
    texts = ("Alpha beta. Gamma delta.", "Epsilon zeta eta.")
    src, starts, ends = np.array([0, 0, 1]), np.array([0, 12, 0]), np.array([11, 24, 17])
    lazy = _BlockTexts(texts, src, starts, ends)
    full = [lazy[i] for i in range(len(lazy))]
    assert full == ["Alpha beta.", "Gamma delta.", "Epsilon zeta eta."]
    for sl in (slice(None), slice(1, None), slice(0, 2), slice(None, None, -1), slice(5, 9)):
        assert lazy[sl] == full[sl]
    assert lazy.lengths.tolist() == [11, 12, 17]


def test_distinct_stemmer_gives_the_cached_stemmers_stems():
    analyzer = MixPRConfig().vectorizer().analyzer
    words = ["running", "runs", "ran", "generously", "naïve", "cats", "cat"]
    assert analyzer.distinct_stemmer()(words) == analyzer.stem_words(words)
    assert MixPRConfig(stemmer=None).vectorizer().analyzer.distinct_stemmer() is None


def test_a_block_with_a_combining_mark_keeps_its_folding_by_blocks_of_units():
    # a unit already in NFKD keeps its mark alone (the folding's early return), not in a block
    # of units where another one folds: the build's folding, kept as it was (by blocks of 512
    # units), while the per-unit analysis of a query folds the unit alone
    texts = ["the qe\u0301yz opened", "a bright été day"]
    s = SETTINGS["default"]
    assert _rows(s, texts, _count_rows)[0] == [("open", 1.0), ("qeyz", 1.0)]
    assert _rows(s, texts, _count_each)[0] == [("open", 1.0), ("qe", 1.0), ("yz", 1.0)]
    assert _rows(s, texts[:1], _count_rows) == _rows(s, texts[:1], _count_each)
    texts = ["Natásha", "İstanbul"]  # "İ".lower() is "i" + U+0307, a combining mark
    assert _rows(s, texts, _count_rows)[1] == [("istanbul", 1.0)]
    assert _rows(s, texts, _count_each)[1] == [("stanbul", 1.0)]
