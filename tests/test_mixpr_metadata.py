"""A document's metadata in a MixPRIndex: a deep, read-only copy taken at insert (so filter
masks cached on it stay true), and strings a save could not write refused at insert."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from longctx.mixpr import MixPRIndex

TEXTS = ["The whale rose from the sea.", "Holmes followed the hound across the moor."]


def _docs(index, flt):
    return sorted(int(i) for i in np.unique(index.unit_source[index.unit_mask(flt)]))


def test_nested_metadata_is_copied_and_read_only():
    tags = ["sea"]
    md = [{"tags": tags, "info": {"pages": [1, 2]}}, {"tags": ["crime"]}]
    index = MixPRIndex.from_texts(TEXTS, ids=["a", "b"], metadatas=md)
    flt = {"tags": {"$contains": "moor"}}
    assert _docs(index, flt) == []  # the mask is now cached
    tags.append("moor")  # the caller's list: not the index's
    md[0]["info"]["pages"].append(3)
    assert index.metadatas[0] == {"tags": ["sea"], "info": {"pages": [1, 2]}}
    assert _docs(index, flt) == _docs(index, {"tags": {"$contains": "moor"}}) == []
    with pytest.raises(TypeError, match="read-only"):
        index.metadatas[0]["tags"].append("moor")
    with pytest.raises(TypeError, match="read-only"):
        index.metadatas[0]["info"]["pages"][0] = 9
    with pytest.raises(TypeError, match="read-only"):
        index.metadatas[0]["info"]["x"] = 1
    lst = index.metadatas[1]["tags"]
    for change in (
        lambda: lst.extend(["x"]),
        lambda: lst.insert(0, "x"),
        lambda: lst.pop(),
        lambda: lst.remove("crime"),
        lambda: lst.clear(),
        lambda: lst.sort(),
        lambda: lst.__iadd__(["x"]),
        lambda: lst.__delitem__(0),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert index.metadatas[1] == {"tags": ["crime"]}
    # copies made from it are ordinary, editable values
    plain = copy.deepcopy(index.metadatas[0])
    plain["tags"].append("x")
    assert type(plain) is dict and type(plain["tags"]) is list
    back = pickle.loads(pickle.dumps(index.metadatas[0]))
    assert back == index.metadatas[0] and type(back["info"]["pages"]) is list


def test_metadata_inserted_later_is_copied_too(tmp_path):
    index = MixPRIndex.from_texts(TEXTS, ids=["a", "b"])
    md = {"tags": ["x"]}
    index.insert(["Alice followed the white rabbit."], ids=["c"], metadatas=[md])
    md["tags"].append("y")
    assert index.metadatas[2] == {"tags": ["x"]}
    index.save(tmp_path / "i")
    loaded = MixPRIndex.load(tmp_path / "i")
    assert loaded.metadatas == index.metadatas
    with pytest.raises(TypeError, match="read-only"):
        loaded.metadatas[2]["tags"].append("z")


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"ids": ["a", "b\ud800"]}, r"ids\[1\] holds a lone surrogate \(U\+D800\)"),
        ({"metadatas": [{}, {"k": "v\udfff"}]}, r"metadatas\[1\] \(document '1'\)\['k'\]"),
        ({"metadatas": [{"k\ud801": 1}, {}]}, r"metadatas\[0\] \(document '0'\) key"),
        ({"metadatas": [{"k": [{"n": ["\ud800"]}]}, {}]}, r"\['k'\]\[0\]\['n'\]\[0\]"),
    ],
)
def test_lone_surrogates_in_ids_and_metadata_are_named_at_build(kw, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        MixPRIndex.from_texts(TEXTS, **kw)
    index = MixPRIndex.from_texts(TEXTS, ids=["0", "1"])
    before = (index.doc_ids, index.metadatas, index.n_units)
    ins = {"ids": ["2", "3"], **kw}
    with pytest.raises(ValueError, match="lone surrogate"):
        index.insert(["One more text.", "And another."], **ins)
    assert (index.doc_ids, index.metadatas, index.n_units) == before
    index.save(tmp_path / "ok")  # nothing unwritable got in


def test_metadata_nested_too_deep_is_named_at_build():
    deep: list = []
    for _ in range(60):
        deep = [deep]
    with pytest.raises(ValueError, match=r"metadatas\[0\] \(document '0'\).*levels deep"):
        MixPRIndex.from_texts(TEXTS[:1], metadatas=[{"d": deep}])


def test_snapshot_keeps_its_version_while_the_index_changes():
    index = MixPRIndex.from_texts(TEXTS, ids=["a", "b"], metadatas=[{"v": 1}, {"v": 1}])
    snap = index.snapshot()
    index.update(["The whale sank below the waves."], ids=["a"], metadatas=[{"v": 2}])
    index.delete(["b"])
    assert snap.doc_ids == ("a", "b") and snap.metadatas[0] == {"v": 1}
    hits = snap.search("whale sea", k=2).hits
    assert hits and all(h.text in TEXTS[h.source] for h in hits)
    snap.insert(["A new note."], ids=["c"])
    assert index.doc_ids == ("a",) and index.metadatas[0] == {"v": 2}
