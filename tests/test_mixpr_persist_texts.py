"""The texts of a format-3 MixPR index (:mod:`longctx.mixpr.persist_texts`): the checkpoint
table a save writes, :meth:`MappedTexts.text_slice` equal to slicing the text whatever the
bounds, a hit decoded from the checkpoints around it (no whole text decoded), and folders saved
before the table existed (issue 46) loading and answering as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import longctx.mixpr.persist_mapped as persist_mapped
from longctx.mixpr import MixPRIndex
from longctx.mixpr.hits import text_slice
from longctx.mixpr.persist_texts import TEXT_STEP, MappedTexts, text_checkpoints
from longctx.persist import PersistError
from tests._persist_helpers import restamp

# long enough for checkpoints at the default step: ASCII, 2-, 3- and 4-byte characters
TEXTS = [
    "The white rabbit ran past Alice with a pocket watch. She followed it down the hole. " * 40,
    "Ünïcödé prose, café and façade, 東京の庭園 and 🐇 rabbits in the garden of roses. " * 45,
    "A short text about a whale.",
    "Captain Ahab lost his leg to the white whale; the Pequod hunted it for years. " * 30,
]
QUESTIONS = ["Who had a pocket watch?", "café façade rabbits", "Ahab whale", "garden roses"]


def _hits(index, q, k=6):
    return [(h.source, h.start, h.end, h.text, h.score) for h in index.search(q, k=k).hits]


def _mapped(texts, step, table=True):
    enc = [t.encode() for t in texts]
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in enc])]).astype(np.int64)
    blob = np.frombuffer(b"".join(enc), np.uint8)
    lengths = np.array([len(t) for t in texts], np.int64)
    cp = text_checkpoints(texts, step) if table else None
    return MappedTexts(blob, offsets, lengths, "bytes here", cp, step, "cp here")


@pytest.fixture(scope="module")
def built():
    return MixPRIndex.from_texts(TEXTS, ids=["a", "b", "c", "d"], max_words=12)


@pytest.fixture
def saved(tmp_path, built):
    built.save(tmp_path / "ix")
    return tmp_path / "ix"


def test_checkpoints_are_the_byte_offsets_of_every_step_th_character():
    texts = ["ab€c" * 5, "short", "", "x" * 9, "🐇é" * 4]
    cp = text_checkpoints(texts, 4)
    want = [len(t[:j].encode()) for t in texts for j in range(4, len(t), 4)]
    assert cp.dtype == np.int64 and cp.tolist() == want
    assert len(want) == 4 + 1 + 0 + 2 + 1  # (L - 1) // 4 each: none at a text's end
    assert text_checkpoints(["a" * 100], 10).tolist() == list(range(10, 100, 10))


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(max_size=60), min_size=1, max_size=4),
    step=st.integers(1, 9),
    d=st.integers(-4, 3),
    start=st.none() | st.integers(-70, 70),
    end=st.none() | st.integers(-70, 70),
    table=st.booleans(),
)
def test_text_slice_equals_slicing_the_text(texts, step, d, start, end, table):
    """Any text, step, bounds (``None``, negative, past the end), with or without a table."""
    m = _mapped(texts, step, table)
    if not -len(texts) <= d < len(texts):
        with pytest.raises(IndexError):
            m.text_slice(d, start, end)
        return
    assert m.text_slice(d, start, end) == texts[d][start:end]
    assert text_slice(m, d, start, end) == text_slice(texts, d, start, end)


def test_a_slice_decodes_the_checkpoints_around_it_not_the_text():
    t = "é" * 5000 + "needle" + "ü" * 5000
    m = _mapped([t], 1024)
    assert m.text_slice(0, 5000, 5006) == "needle"
    assert not m._cache  # nothing decoded whole
    decoded = []
    m._blob = _Spy(m._blob, decoded)
    assert m.text_slice(0, 3000, 3010) == "é" * 10
    assert decoded == [2 * 1024]  # one step of 2-byte characters
    assert m[0] == t and 0 in m._cache  # whole access as before (and kept)
    assert m.text_slice(0, 4990, 5010) == t[4990:5010]


class _Spy:
    """A blob recording the size of each slice read from it."""

    def __init__(self, a, log):
        self.a, self.log = a, log

    def __getitem__(self, s):
        out = self.a[s]
        self.log.append(len(out))
        return out


@pytest.mark.parametrize("mmap", [True, False], ids=["mapped", "read"])
def test_saved_hits_come_from_the_checkpoints_with_the_built_hits(built, saved, mmap):
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["text_step"] == TEXT_STEP and "text_checkpoints.npy" in manifest["files"]
    assert len(np.load(saved / "text_checkpoints.npy")) == sum(
        (len(t) - 1) // TEXT_STEP for t in TEXTS
    )
    back = MixPRIndex.load(saved, mmap=mmap)
    for q in QUESTIONS:
        assert _hits(back, q) == _hits(built, q)
    assert set(back._state.texts._cache) <= {2}  # only the short text (under one step)
    assert [back._state.unit_text(i) for i in range(back.n_units)] == [
        built._state.unit_text(i) for i in range(built.n_units)
    ]


def _without_checkpoints(d: Path) -> None:
    """``d`` as a format-3 save from before issue 46: no table, no step in the manifest."""
    (d / "text_checkpoints.npy").unlink()
    m = json.loads((d / "manifest.json").read_text())
    m["files"].remove("text_checkpoints.npy")
    m["digests"].pop("text_checkpoints.npy")
    m.pop("text_step")
    (d / "manifest.json").write_text(json.dumps(m, indent=1))


@pytest.mark.parametrize("mmap", [True, False], ids=["mapped", "read"])
def test_a_format3_folder_saved_before_the_table_loads_and_answers(built, saved, mmap):
    """An optional member, not a new format version: a folder without it (and without
    ``text_step``) loads, answers the same hits, and decodes the hits' whole texts."""
    _without_checkpoints(saved)
    back = MixPRIndex.load(saved, mmap=mmap)
    assert back._state.texts._cp is None
    for q in QUESTIONS:
        assert _hits(back, q) == _hits(built, q)
    assert len(back._state.texts._cache) >= 2  # the fallback: whole texts decoded and kept
    back.save(saved)  # saved again: the table is written
    assert json.loads((saved / "manifest.json").read_text())["text_step"] == TEXT_STEP
    again = MixPRIndex.load(saved, mmap=mmap)
    assert again._state.texts._cp is not None and _hits(again, QUESTIONS[1]) == _hits(
        built, QUESTIONS[1]
    )


def test_the_step_is_read_from_the_manifest(built, tmp_path, monkeypatch):
    """A save with another step (the module constant) loads with its own step."""
    monkeypatch.setattr(persist_mapped, "TEXT_STEP", 7)
    built.save(tmp_path / "ix")
    monkeypatch.undo()
    assert json.loads((tmp_path / "ix" / "manifest.json").read_text())["text_step"] == 7
    back = MixPRIndex.load(tmp_path / "ix", mmap=True)
    assert back._state.texts._cp.step == 7
    assert all(_hits(back, q) == _hits(built, q) for q in QUESTIONS)


def test_a_table_of_the_wrong_length_is_refused_at_open(saved):
    cp = np.load(saved / "text_checkpoints.npy")
    np.save(saved / "text_checkpoints.npy", cp[:-1])
    restamp(saved)
    for mmap in (True, False):
        with pytest.raises(PersistError, match=r"text_checkpoints\.npy.*checkpoints, the texts"):
            MixPRIndex.load(saved, mmap=mmap)


def test_a_corpus_of_short_texts_holds_no_table_and_an_empty_table_is_checked():
    """Texts of at most one step: an empty table, nothing held for it (a corpus of passages);
    an empty table where a text is longer is refused all the same."""
    m = _mapped(["short", "texts", "only"], 8)
    assert m._cp is None and m.text_slice(1, 1, 3) == "ex"
    enc = b"a longer text here"
    with pytest.raises(PersistError, match="cp here: 0 checkpoints.*call for 2"):
        MappedTexts(
            np.frombuffer(enc, np.uint8), np.array([0, len(enc)]), np.array([len(enc)]), "b",
            np.zeros(0, np.int64), 8, "cp here",
        )  # fmt: skip


def test_a_router_reads_the_units_from_the_checkpoints(built, saved):
    """The units a router sees (``_LazyTexts``) are sliced as hits are: no text decoded whole."""
    seen = []

    def router(query, chunks):
        seen.extend([chunks[0], chunks[len(chunks) - 1]])
        return "local"

    back = MixPRIndex.load(saved, mmap=True, router=router)
    back.search(QUESTIONS[0], k=2, mode="auto")
    assert seen == [built._state.unit_text(0), built._state.unit_text(built.n_units - 1)]
    assert set(back._state.texts._cache) <= {2}
