"""The shards' terms merged with numpy (longctx.corpus.shards.terms) equal the dict merge of
longctx.mixpr.tfidf.merge_term_stats: the same sorted terms, frequencies, counts and maps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longctx.corpus.shards.terms import MAX_WIDTH, TermBlob, merge_shard_terms
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.persist_mapped import MappedVocabulary
from longctx.mixpr.tfidf import TfidfSettings, merge_term_stats

SETTINGS = TfidfSettings(MixPRConfig())


def _blob(terms) -> TermBlob:
    enc = [t.encode("utf-8") for t in terms]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in enc])]).astype(np.int64)
    return TermBlob(np.frombuffer(b"".join(enc), np.uint8), offsets)


def _same(parts):
    want, wmaps = merge_term_stats(SETTINGS, parts)
    got, gmaps = merge_shard_terms(SETTINGS, [(_blob(t), *rest) for t, *rest in parts])
    assert got.terms() == want.terms()
    assert np.array_equal(got.df, want.df) and np.array_equal(got.cf, want.cf)
    assert got.n_units == want.n_units
    assert all(np.array_equal(a, b) for a, b in zip(gmaps, wmaps))
    for t in want.terms():
        assert got.vocabulary.get(t) == want.vocabulary[t]
    return got


TERM = st.text(st.characters(min_codepoint=1, max_codepoint=0x10FFFF, exclude_categories=["Cs"]),
               min_size=1, max_size=12)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(TERM, min_size=0, max_size=30, unique=True), min_size=1, max_size=4),
       st.randoms(use_true_random=False))  # fmt: skip
def test_the_numpy_merge_equals_the_dict_merge(shards, rnd):
    parts = []
    for terms in shards:
        terms = sorted(terms) if rnd.random() < 0.5 else terms  # any order
        df = np.array([rnd.randint(0, 3) for _ in terms], dtype=np.int64)  # 0: a term no unit holds
        cf = df * 1.5
        parts.append((terms, df, cf, rnd.randint(0, 9)))
    if not any((p[1] > 0).any() for p in parts):
        return
    _same(parts)


def test_merge_of_hashes_and_its_vocabulary():
    a = ["x9", "aa", "b", "\u00e9t\u00e9", "zz\U0001f600"]
    b = ["b", "aa", "ab", "\u00e9", "zz"]
    got = _same(
        [(a, np.array([1, 2, 0, 1, 3]), np.ones(5), 4), (b, np.ones(5, int), np.ones(5), 5)]
    )
    assert isinstance(got.vocabulary, MappedVocabulary) and got.vocabulary.get("b") == 2
    assert got.vocabulary.get("x9") is not None and got.vocabulary.get("absent") is None
    assert got.df[got.vocabulary["aa"]] == 3 and got.n_units == 9


@pytest.mark.parametrize("odd", ["t" * (MAX_WIDTH + 1), "nul\x00inside"])
def test_long_or_nul_terms_take_the_dict_merge(odd):
    parts = [(["a", odd], np.ones(2, int), np.ones(2), 1), (["b"], np.ones(1, int), np.ones(1), 1)]
    got = _same(parts)
    assert isinstance(got.vocabulary, dict) and odd in got.vocabulary


def test_term_blob_of_a_table_and_equality():
    from longctx.mixpr import MixPRIndex

    ix = MixPRIndex.from_texts(["the garden of roses", "a rose garden at night"])
    blob = TermBlob.of(ix._state.table)
    assert list(blob) == ix._state.table.terms() and len(blob) == ix._state.table.n_terms
    assert blob == TermBlob(blob.blob.copy(), blob.offsets.copy())
    assert blob != _blob(["other"])


def test_term_blob_of_a_mapped_vocabulary_reads_its_arrays(tmp_path):
    """A mapped index's terms: the arrays its vocabulary reads (``term_arrays``, no copy), the
    same terms as the built index, errors naming the folder's ``term_bytes.npy``."""
    from longctx.mixpr import MixPRIndex
    from longctx.persist.npy import mapped_base

    ix = MixPRIndex.from_texts(["the garden of roses", "a rose garden at night"])
    ix.save(tmp_path / "ix")
    vocab = MixPRIndex.load(tmp_path / "ix", mmap=True)._state.table.vocabulary
    assert isinstance(vocab, MappedVocabulary)
    blob = TermBlob.of(MixPRIndex.load(tmp_path / "ix", mmap=True)._state.table)
    assert blob == TermBlob.of(ix._state.table)
    assert mapped_base(blob.blob) is not None
    assert blob.where == repr(str(tmp_path / "ix" / "term_bytes.npy"))
    data, offsets, where = vocab.term_arrays()
    assert bytes(data[offsets[0] : offsets[1]]).decode() == ix._state.table.terms()[0]
    assert where == str(tmp_path / "ix")
