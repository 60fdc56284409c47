"""The pieces of MixPR's build path (issue 46: a build no slower than bm25s's): the batched term
counts equal the per-unit analysis, the unit texts slice as a list would, the stemmer of
distinct words gives the stems of the cached one."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRConfig, MixPRIndex
from longctx.mixpr.state import _LazyTexts
from longctx.mixpr.tfidf import TfidfSettings, _count_each, _count_rows

# words with precomposed and decomposed accents, "İ" (lower-cased to i + U+0307), curly quotes,
# a byte-order mark, CJK and Thai (with its tone marks, kept with their letters), stop words,
# and the batch's separator characters themselves
_WORDS = [
    "the", "Natásha", "ÉTÉ", "naïve", "running", "runs", "’tis", "“Yes,”", "\ufeffbook", "中文字",
    "ไม่ใช่", "œuvre", "x", "42", "A.B.", "\x00", "\x01", "\ue000", "…", "ﬁne", "Σοφία",
    "ΟΔΥΣΣΕΥΣ", "Σ", "Straße", "qe\u0301yz", "İstanbul", "DİYARBAKIR", "\u0301", "e\u0301\u0327",
]  # fmt: skip
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
    lazy = _LazyTexts(texts, src, starts, ends)
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


def test_a_unit_with_a_combining_mark_has_one_folding_alone_and_in_a_block():
    # was: a unit already in NFKD kept its mark alone (the folding's early return) but not in a
    # block of units where another one folded, so a query with its words missed it
    texts = ["the qe\u0301yz opened", "a bright été day"]
    s = SETTINGS["default"]
    assert _rows(s, texts, _count_rows)[0] == [("open", 1.0), ("qeyz", 1.0)]
    assert _rows(s, texts, _count_each)[0] == [("open", 1.0), ("qeyz", 1.0)]
    assert _rows(s, texts[:1], _count_each)[0] == [("open", 1.0), ("qeyz", 1.0)]
    texts = ["Natásha", "İstanbul"]  # "İ".lower() is "i" + U+0307, a combining mark
    assert _rows(s, texts, _count_rows)[1] == [("istanbul", 1.0)]
    assert _rows(s, texts, _count_each)[1] == [("istanbul", 1.0)]


def test_an_index_saved_before_fold_decomposed_keeps_its_folding():
    # its vocabulary was built by blocks of 512 units with the earlier folding: its queries
    # and inserts keep that folding (persist.ADDED_FIELDS gives it to a config without the field)
    from longctx.mixpr.persist import ADDED_FIELDS

    assert ADDED_FIELDS["fold_decomposed"] is False
    s = TfidfSettings(MixPRConfig(fold_decomposed=False))
    texts = ["the qe\u0301yz opened", "a bright été day"]
    assert _rows(s, texts, _count_rows)[0] == [("open", 1.0), ("qeyz", 1.0)]
    assert _rows(s, texts, _count_each)[0] == [("open", 1.0), ("qe", 1.0), ("yz", 1.0)]
    assert _rows(s, ["Natásha", "İstanbul"], _count_each)[1] == [("stanbul", 1.0)]


@pytest.mark.parametrize("mappable", [True, False])
def test_a_saved_index_keeps_the_folding_it_was_built_with(tmp_path, mappable):
    from tests._persist_helpers import edit_json

    texts = ["the qe\u0301yz opened", "a quiet garden"]
    MixPRIndex.from_texts(texts, chunk=False).save(tmp_path / "new", mappable=mappable)
    assert MixPRIndex.load(tmp_path / "new").config.fold_decomposed is True
    # saved before the field: its vocabulary holds "qe" and "yz", its queries still find them
    old = MixPRIndex.from_texts(texts, chunk=False, fold_decomposed=False)
    assert {"qe", "yz"} <= set(old.terms.vocabulary)
    old.save(tmp_path / "old", mappable=mappable)
    edit_json(
        tmp_path / "old" / "config.json",
        lambda c: {k: v for k, v in c.items() if k != "fold_decomposed"},
    )
    back = MixPRIndex.load(tmp_path / "old")
    assert back.config.fold_decomposed is False
    hits = back.search("qe\u0301yz", k=1).hits
    assert [h.source for h in hits] == [0] and hits[0].score > 0


def test_fold_decomposed_is_checked():
    with pytest.raises(TypeError, match="fold_decomposed"):
        MixPRConfig(fold_decomposed=1)


# -- a unit's terms in the build and as a query: the same, and the query finds the unit first --
_BASES = ["zorba", "kilim", "tavla", "simit", "lokum", "ayran", "pide", "kebap", "halva", "meze"]
_FORMS = [  # a unit's own word written with a precomposed or decomposed mark, or with "İ"
    lambda w: w,
    lambda w: w.replace("a", "á", 1).replace("o", "ö", 1),
    lambda w: w.replace("a", "a\u0301", 1).replace("o", "o\u0308", 1),
    lambda w: "İ" + w,
    lambda w: w.upper().replace("I", "İ"),
    lambda w: "i\u0307" + w.replace("e", "e\u0327", 1),
]
_FILLERS = ["garden", "stone", "Natásha", "naïve", "qe\u0301yz", "DİYARBAKIR", "river"]
_UNIT = st.tuples(st.integers(0, len(_FORMS) - 1), st.lists(st.sampled_from(_FILLERS), max_size=3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(units=st.lists(_UNIT, min_size=2, max_size=len(_BASES)), pick=st.integers(0, 9))
@example(units=[(2, []), (1, [])], pick=0)  # a decomposed accent beside a precomposed one
@example(units=[(3, []), (1, [])], pick=0)  # "İ", lower-cased to i + U+0307
# the multi-hop walk (taken when the query names a passage's capitalized head) may rank a
# passage on a named entity above the one holding every query term: the lexical walk checks
# the analysis alone
@example(
    units=[(0, ["Natásha"]), (0, ["DİYARBAKIR"]), (0, ["DİYARBAKIR", "garden", "Natásha"])], pick=8
)
def test_a_units_terms_in_the_build_are_its_terms_as_a_query(units, pick):
    texts = [
        " ".join([_FORMS[form](_BASES[i]), *fillers]) for i, (form, fillers) in enumerate(units)
    ]
    index = MixPRIndex.from_texts(texts, chunk=False, walk="pagerank")
    table = index.terms
    analyze = table.settings.analyzer  # the query's analyzer
    terms = {j: t for t, j in table.vocabulary.items()}
    counts = sp.csr_array(table.counts)
    for i, text in enumerate(texts):
        assert sorted(terms[int(j)] for j in counts[[i]].indices) == sorted(set(analyze(text)))
    i = pick % len(texts)
    assert [h.source for h in index.search(texts[i], k=1).hits] == [i]


def test_shards_fold_as_one_index_and_a_units_text_finds_it():
    # each shard folds its own blocks; the merged vocabulary is the single index's
    from longctx.corpus.shards import ShardedMixPRIndex

    texts = [" ".join([f(b), "garden"]) for b, f in zip(_BASES, _FORMS + _FORMS)]
    single = MixPRIndex.from_texts(texts, chunk=False, walk="pagerank")
    with ShardedMixPRIndex.from_texts(texts, shards=2, chunk=False) as sharded:
        assert sorted(sharded._global["stats"].vocabulary) == sorted(single.terms.vocabulary)
        for i, text in enumerate(texts):
            assert [h.source for h in sharded.search(text, k=1).hits] == [i], text
            assert [h.source for h in single.search(text, k=1).hits] == [i], text
