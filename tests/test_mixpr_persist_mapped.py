"""Format 3 of a saved MixPR index (``save(path, mappable=True)``), opened memory-mapped
(``load(path, mmap=True)``) or read: same hits as the built index, read-only maps, inserts that
never write the files, and every damaged array refused with a PersistError naming its file."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from longctx.mixpr import MixPRIndex
from longctx.mixpr.persist_mapped import MappedTexts, MappedVocabulary
from longctx.persist import PersistError
from longctx.persist.npy import mapped_base

FIXTURES = Path(__file__).parent / "fixtures" / "saved_format2"

TEXTS = [
    "The white rabbit ran past Alice with a pocket watch. She followed it down the hole.\n\n"
    "At the bottom a small door opened onto a garden of roses. " * 3,
    "Captain Ahab lost his leg to the white whale. The crew of the Pequod hunted it for years.",
    "Ünïcödé prose — with accents and the garden again: café, naïve, façade. 東京 の 庭園",
    "Sherlock Holmes found the missing boot at the Northumberland Hotel.",
]
QUESTIONS = ["Who had a pocket watch?", "What did Ahab lose?", "café façade", "garden roses"]


def _hits(index, q, **kw):
    return [(h.source, h.start, h.end, h.text, h.score) for h in index.search(q, k=4, **kw).hits]


@pytest.fixture
def saved(tmp_path):
    index = MixPRIndex.from_texts(TEXTS, ids=["a", "b", "c", "d"], max_words=12)
    index.save(tmp_path / "ix", mappable=True)
    return index, tmp_path / "ix"


def _digests(d: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


@pytest.mark.parametrize("mmap", [True, False])
def test_format3_round_trip_same_hits(saved, mmap):
    index, d = saved
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["format_version"] == 3
    assert "texts.json" not in manifest["files"] and "E_data.npy" in manifest["files"]
    back = MixPRIndex.load(d, mmap=mmap)
    assert isinstance(back.texts, MappedTexts)
    assert back.texts == index.texts and back.doc_ids == index.doc_ids
    for q in QUESTIONS:
        assert _hits(back, q) == _hits(index, q)
        assert _hits(back, q, mode="global") == _hits(index, q, mode="global")


def test_mapped_arrays_are_read_only_maps(saved):
    _, d = saved
    back = MixPRIndex.load(d, mmap=True)
    st = back._state
    E = st.table.embeddings()
    back.search("garden", k=2)  # the push walk reads E by rows: the stored ones
    rows = st.block._rows()
    for a in (E.data, E.indices, st.starts, st.unit_source, st.graph.colsum, rows.data):
        assert not a.flags.writeable
        assert mapped_base(a) is not None
    assert mapped_base(MixPRIndex.load(d)._state.starts) is None  # mmap=False: in memory
    with pytest.raises(ValueError, match="read-only"):
        E.data[0] = 2.0


def test_insert_and_delete_on_a_mapped_index_never_write_its_files(saved, tmp_path):
    index, d = saved
    before = _digests(d)
    back = MixPRIndex.load(d, mmap=True)
    new = "The Time Traveller's machine vanished from the laboratory one night."
    back.insert([new], ids=["e"])
    index.insert([new], ids=["e"])
    back.delete(["b"])
    index.delete(["b"])
    for q in QUESTIONS + ["What happened to the machine?"]:
        assert _hits(back, q) == _hits(index, q)
    assert _digests(d) == before
    back.save(tmp_path / "again", mappable=True)  # a mapped index saves (to another folder)
    again = MixPRIndex.load(tmp_path / "again", mmap=True)
    assert _hits(again, "machine laboratory") == _hits(index, "machine laboratory")


def test_threshold_graph_and_unit_vectors_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    vec = rng.normal(size=(8, 5)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    for kw in ({"graph": "threshold"}, {"unit_vectors": vec}):
        texts = [f"unit {i} about topic {i % 3} with words alpha beta {i}" for i in range(8)]
        index = MixPRIndex.from_texts(texts, chunk=False, **kw)
        index.save(tmp_path / "x", mappable=True)
        for mmap in (True, False):
            back = MixPRIndex.load(tmp_path / "x", mmap=mmap)
            qv = vec[3] if "unit_vectors" in kw else None
            extra = {"query_vector": qv} if qv is not None else {}
            assert _hits(back, "topic 1 alpha", **extra) == _hits(index, "topic 1 alpha", **extra)
        shutil.rmtree(tmp_path / "x")


def test_format2_still_loads_and_mmap_says_to_save_again(tmp_path):
    d = tmp_path / "old"
    shutil.copytree(FIXTURES / "mixpr", d)
    plain = MixPRIndex.load(d)
    with pytest.warns(UserWarning, match="format 2, which cannot be mapped"):
        mapped = MixPRIndex.load(d, mmap=True)
    assert mapped.texts == plain.texts
    q = "what is in the index"
    assert _hits(mapped, q) == _hits(plain, q)


def test_mmap_none_maps_format3_and_reads_format2_without_a_warning(saved, tmp_path):
    """``mmap=None`` (what a shard's load asks for): a format-3 folder mapped, a format-2 one
    read, no warning either way; another value is a TypeError naming ``mmap``."""
    import warnings

    from longctx.corpus.shards.shard import MixPRShard

    _, d = saved
    old = tmp_path / "old"
    shutil.copytree(FIXTURES / "mixpr", old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mapped_base(MixPRIndex.load(d, mmap=None)._state.starts) is not None
        plain = MixPRIndex.load(old, mmap=None)
        assert mapped_base(MixPRShard.load(d).index._state.starts) is not None
    assert mapped_base(plain._state.starts) is None
    assert plain.texts == MixPRIndex.load(old).texts
    with pytest.raises(TypeError, match="mmap must be None, True or False"):
        MixPRIndex.load(d, mmap="yes")
    with pytest.raises(TypeError, match=r"got 1 \(builtins.int\)"):
        MixPRIndex.load(d, mmap=1)
    # numpy's bool is a bool (session 16 loaded it; the check of session 17 refused it)
    assert mapped_base(MixPRIndex.load(d, mmap=np.True_)._state.starts) is not None
    assert mapped_base(MixPRIndex.load(d, mmap=np.False_)._state.starts) is None


def test_mapped_vocabulary_finds_every_term_and_no_other(saved):
    index, d = saved
    vocab = MixPRIndex.load(d, mmap=True)._state.table.vocabulary
    assert isinstance(vocab, MappedVocabulary)
    terms = index._state.table.terms()
    assert [vocab.get(t) for t in terms] == list(range(len(terms)))
    assert list(vocab) == terms
    for missing in ("", "zzzzzz", "\U0010ffff", terms[0] + "x", 3):
        assert vocab.get(missing) is None and missing not in vocab


# -- damaged files -------------------------------------------------------------------------------
def _poke(path: Path, fn) -> None:
    """Change an ``.npy`` member in place (same size: only the value checks can see it)."""
    a = np.load(path, mmap_mode="r+")
    fn(a)
    a.flush()
    del a


@pytest.mark.parametrize(
    ("name", "fn", "match"),
    [
        ("E_indices.npy", lambda a: a.__setitem__(0, 10**6), "out of range"),
        ("E_indptr.npy", lambda a: a.__setitem__(1, a[-1]), "not monotone|not sorted"),
        ("E_data.npy", lambda a: a.__setitem__(0, np.nan), "non-finite"),
        ("E_data.npy", lambda a: a.__setitem__(0, 7.0), "above"),
        ("E_rows_indices.npy", lambda a: a.__setitem__(0, 10**6), "out of range"),
        ("E_rows_data.npy", lambda a: a.__setitem__(0, -0.5), "below"),
        ("colsum.npy", lambda a: a.__setitem__(0, -1.0), "below"),
        ("df.npy", lambda a: a.__setitem__(0, 10**9), "above"),
        ("text_offsets.npy", lambda a: a.__setitem__(1, a[-1] + 5), "offsets"),
        ("text_chars.npy", lambda a: a.__setitem__(0, 1), "does not fit its bytes"),
        ("starts.npy", lambda a: a.__setitem__(1, 10**9), "outside text"),
        ("unit_source.npy", lambda a: a.__setitem__(0, 3), "document order|unit_index"),
        ("term_offsets.npy", lambda a: a.__setitem__(2, a[1]), "offsets must increase"),
    ],
)
def test_damaged_array_refused_at_open(saved, name, fn, match):
    _, d = saved
    _poke(d / name, fn)
    with pytest.raises(PersistError, match=match):
        MixPRIndex.load(d, mmap=True)
    with pytest.raises(PersistError, match="SHA-256"):  # read whole: the digest sees it first
        MixPRIndex.load(d)


def test_unsorted_indices_refused(saved):
    _, d = saved
    indptr = np.load(d / "E_indptr.npy")
    j = int(np.flatnonzero(np.diff(indptr) >= 2)[0])  # a term of two units or more
    a = int(indptr[j])
    _poke(d / "E_indices.npy", lambda x: x.__setitem__(slice(a, a + 2), x[a : a + 2][::-1]))
    with pytest.raises(PersistError, match="not sorted"):
        MixPRIndex.load(d, mmap=True)


@pytest.mark.parametrize(
    ("name", "old", "new", "match"),
    [
        ("colsum.npy", b"'<f8'", b"'|O' ", "holds dtype object"),
        ("colsum.npy", b"'<f8'", b"'<i8'", "holds dtype int64"),
        ("colsum.npy", b"'fortran_order': False", b"'fortran_order': True ", "Fortran"),
        ("colsum.npy", b"\x93NUMPY", b"\x93NUMPZ", "not a valid .npy"),
        ("E_data.npy", b"'shape': (", b"'shape': (2, ", "dimension"),
    ],
)
def test_wrong_header_refused(saved, name, old, new, match):
    _, d = saved
    raw = (d / name).read_bytes()
    assert old in raw
    raw = raw.replace(old, new, 1)
    end = raw.index(b"\n")  # the header's end: its padding keeps the file's size
    grown = len(new) - len(old)
    raw = raw[: end - grown] + raw[end:] if grown > 0 else raw
    (d / name).write_bytes(raw)
    with pytest.raises(PersistError, match=match):
        MixPRIndex.load(d, mmap=True)


def test_truncated_or_grown_file_refused(saved):
    _, d = saved
    np.save(d / "E_data.npy", np.load(d / "E_data.npy").astype(np.float32))
    with pytest.raises(PersistError, match="E_data.npy.*the save wrote"):
        MixPRIndex.load(d, mmap=True)


def test_counts_checked_at_first_insert_when_mapped(saved):
    _, d = saved
    _poke(d / "counts_data.npy", lambda a: a.__setitem__(0, 2.5))
    back = MixPRIndex.load(d, mmap=True)  # the counts are not read by queries
    assert back.search("garden", k=2).hits
    with pytest.raises(PersistError, match="whole numbers"):
        back.insert(["another text about gardens"], ids=["z"])
    with pytest.raises(PersistError):
        MixPRIndex.load(d)


def test_bad_utf8_text_refused_when_read(saved):
    _, d = saved
    offsets = np.load(d / "text_offsets.npy")
    at = int(offsets[2])  # the third text (non-ASCII)
    _poke(d / "text_bytes.npy", lambda a: a.__setitem__(at, 0xFF))
    with pytest.raises(PersistError, match="text 2 is not valid UTF-8"):
        MixPRIndex.load(d, mmap=True).texts[2]  # (a corpus of passages decodes at open)
    blob = np.frombuffer("abc€d".encode(), np.uint8)
    texts = MappedTexts(blob, np.array([0, 3, 8]), np.array([3, 2]), "here")
    assert texts[0] == "abc" and texts[-1] == "€d" and texts[:] == ("abc", "€d")
    bad = MappedTexts(blob, np.array([0, 3, 8]), np.array([3, 4]), "here")
    assert bad[0] == "abc"
    with pytest.raises(PersistError, match="here: text 1 holds 2 characters"):
        bad[1]
    with pytest.raises(IndexError):
        texts[2]


def test_damaged_terms_are_not_found_never_misread(saved):
    index, d = saved
    offsets = np.load(d / "term_offsets.npy")
    _poke(d / "term_bytes.npy", lambda a: a.__setitem__(slice(0, int(offsets[-1])), 0xFF))
    back = MixPRIndex.load(d, mmap=True)
    assert back._state.table.vocabulary.get("garden") is None
    with pytest.raises(PersistError, match="not valid UTF-8"):
        list(back._state.table.vocabulary)


def test_give_back_free_memory_on_glibc():
    import platform
    import sys

    from longctx._rss import give_back_free_memory

    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    assert give_back_free_memory() is glibc


# -- the chunked checks, across block boundaries ------------------------------------------------
def test_check_compressed_agrees_with_scipy_across_blocks(monkeypatch):
    import scipy.sparse as sp
    from hypothesis import given, settings
    from hypothesis import strategies as st

    import longctx.persist.npy as npy

    monkeypatch.setattr(npy, "SCAN_ITEMS", 7)  # many blocks, rows split across them

    @settings(max_examples=60, deadline=None)
    @given(
        n=st.integers(1, 12),
        m=st.integers(1, 9),
        density=st.floats(0.0, 1.0),
        seed=st.integers(0, 2**16),
        damage=st.sampled_from(["none", "range", "order", "duplicate"]),
    )
    def check(n, m, density, seed, damage):
        a = sp.csr_array(sp.random(n, m, density=density, random_state=seed))
        a.sort_indices()
        indptr, indices = a.indptr.copy(), a.indices.copy()
        lengths = np.diff(indptr)
        if damage == "range":
            if len(indices):
                indices[seed % len(indices)] = m
            else:
                damage = "none"
        elif damage in ("order", "duplicate"):
            rows = np.flatnonzero(lengths >= 2)
            if not len(rows):
                damage = "none"
            else:
                at = int(indptr[rows[seed % len(rows)]])
                if damage == "order":
                    indices[at], indices[at + 1] = indices[at + 1], indices[at]
                else:
                    indices[at + 1] = indices[at]
        if damage == "none":
            npy.check_compressed(indptr, indices, n, m, "here")
        else:
            with pytest.raises(PersistError, match="here"):
                npy.check_compressed(indptr, indices, n, m, "here")

    check()


def test_check_values_bounds_in_blocks(monkeypatch):
    import longctx.persist.npy as npy

    monkeypatch.setattr(npy, "SCAN_ITEMS", 4)
    a = np.linspace(0.0, 1.0, 23)
    npy.check_values(a, "here", low=0.0, high=1.0, finite=True)
    for bad, match in ((np.nan, "non-finite"), (-1.0, "below"), (2.0, "above")):
        b = a.copy()
        b[17] = bad
        with pytest.raises(PersistError, match=match):
            npy.check_values(b, "here", low=0.0, high=1.0, finite=True)


# -- a save replacing the folder that a loaded index maps ---------------------------------------
def _deleted_maps(d: Path) -> list[str]:
    """The files under ``d``'s parent that this process maps and that are now deleted."""
    with open("/proc/self/maps") as fh:
        return [ln for ln in fh if str(d.parent) in ln and ln.rstrip().endswith("(deleted)")]


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs /proc/self/maps")
def test_a_save_replacing_the_folder_never_changes_an_index_that_maps_it(tmp_path):
    """A save writes a new folder and renames it into place; the old folder's files are then
    deleted, never rewritten in place: an index that maps them keeps answering exactly as
    before (the maps hold the deleted files), while other threads save two other indexes over
    the folder again and again, and a fresh load sees the last save."""
    import threading

    d = tmp_path / "ix"
    a = MixPRIndex.from_texts(TEXTS, ids=["a", "b", "c", "d"], max_words=12)
    b = MixPRIndex.from_texts([t.upper() for t in TEXTS[::-1]], max_words=9)
    c = MixPRIndex.from_texts(TEXTS[:2], max_words=5)
    a.save(d)
    mapped = MixPRIndex.load(d, mmap=True)
    want = {q: _hits(a, q) for q in QUESTIONS}
    assert all(_hits(mapped, q) == want[q] for q in QUESTIONS)
    stop = threading.Event()
    errors: list[BaseException] = []

    def saver(index):
        try:
            while not stop.is_set():
                index.save(d)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=saver, args=(x,)) for x in (b, c)]
    for t in threads:
        t.start()
    try:
        for _ in range(40):
            for q in QUESTIONS:
                assert _hits(mapped, q) == want[q]
            assert mapped.texts == a.texts and mapped.doc_ids == a.doc_ids
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors, errors
    assert _deleted_maps(d), "the saves did not replace the mapped folder"
    mapped.insert(["A new text about the white whale and the garden."], ids=["e"])
    a.insert(["A new text about the white whale and the garden."], ids=["e"])
    assert _hits(mapped, "white whale garden") == _hits(a, "white whale garden")
    last = MixPRIndex.load(d, mmap=True)
    assert last.texts in (b.texts, c.texts)
