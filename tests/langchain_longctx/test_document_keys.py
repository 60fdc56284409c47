"""LangChain MixPRRetriever's keys of documents without id (``"source{position}"``, primed when
a delete has moved the positions): one id never names two documents, and a folder saved
before ``keys.json`` existed loads with the keys its index holds."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_longctx import MixPRRetriever

T = [
    "Alice saw the white rabbit run past.",
    "The Queen shouted off with his head.",
    "The Cheshire cat grinned widely.",
    "Tea party with the Hatter and the hare.",
]


def _state(r):
    return [d.page_content for d in r.documents], list(r._keys), r.index.doc_ids


def test_an_id_that_is_a_generated_key_is_refused_before_any_change():
    r = MixPRRetriever.from_documents([Document(page_content=T[0]), Document(page_content=T[1])])
    r.delete(["source0"])
    assert r.add_documents([Document(page_content=T[2])]) == ["source1'"]
    before = _state(r)
    # before: taken as "source1''", and delete(["source1'"]) then removed both documents
    with pytest.raises(ValueError, match="source1'"):
        r.add_documents([Document(page_content=T[3], id="source1'")])
    with pytest.raises(ValueError, match="source1'"):
        r.add_documents([Document(page_content=T[3])], ids=["source1'"])
    assert _state(r) == before
    assert r.delete(["source1'"]) is True
    assert [d.page_content for d in r.documents] == [T[1]]


def test_a_generated_key_skips_an_id_added_in_the_same_call():
    r = MixPRRetriever.from_documents([Document(page_content=T[0]), Document(page_content=T[1])])
    r.delete(["source0"])  # the next document without id is named "source1": taken
    added = r.add_documents(
        [Document(page_content=T[2]), Document(page_content=T[3], id="source1'")]
    )
    # before: the first was primed to "source1'", the second's own id, which became
    # "source1''" (and a delete of "source1'" removed both)
    assert added == ["source1''", "source1'"]
    assert r.delete(["source1'"]) is True
    assert [d.page_content for d in r.documents] == [T[1], T[2]]


def test_delete_never_removes_an_own_id_and_a_generated_key_together():
    from langchain_longctx._persist import loading

    # the state add_documents made before: a document named by its own id "source1'" and one
    # without id keyed "source1'" (a folder saved then loads it so)
    docs = [Document(page_content=T[1]), Document(page_content=T[2]),
            Document(page_content=T[3], id="source1'")]  # fmt: skip
    with loading(keys=["source1", "source1'", "source1''"]):
        r = MixPRRetriever(documents=docs, k=3)
    assert r.delete(["source1'"]) is True
    assert [d.page_content for d in r.documents] == [T[1], T[2]]  # before: [T[1]]
    assert r.delete(["source1'"]) is True  # now the key of the document without id
    assert [d.page_content for d in r.documents] == [T[1]]


def _without_keys_json(folder):
    """``folder`` (a saved MixPRRetriever) as longctx 0.1 wrote it: no ``keys.json``."""
    import json

    (folder / "keys.json").unlink()
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"].remove("keys.json")
    del manifest["digests"]["keys.json"]
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_a_save_without_keys_json_after_a_delete_loads(tmp_path):
    r = MixPRRetriever.from_documents(
        [Document(page_content=T[0]), Document(page_content=T[1], id="q"),
         Document(page_content=T[2]), Document(page_content="  ")], k=3,
    )  # fmt: skip
    r.delete(["source0"])  # the documents without id are now at positions 1 and 2
    assert r._keys == ["q", "source2", "source3"]
    r.save(tmp_path / "old")
    _without_keys_json(tmp_path / "old")
    # before: the keys recomputed from the positions ("source1"): PersistError "damaged"
    loaded = MixPRRetriever.load(tmp_path / "old")
    # the indexed ones as the index holds them; the one without text named by its position,
    # primed where the index took the name
    assert loaded._keys == ["q", "source2", "source2'"]
    view = lambda x: [(d.id, d.page_content) for d in x.invoke("cat queen")]  # noqa: E731
    assert view(loaded) == view(r)
    assert loaded.add_documents([Document(page_content=T[3])]) == ["source3"]
    assert loaded.delete(["source2"]) is True
    assert [d.page_content for d in loaded.documents] == [T[1], "  ", T[3]]


def test_a_save_without_keys_json_is_checked(tmp_path):
    import json

    from longctx.persist import PersistError

    r = MixPRRetriever.from_documents([Document(page_content=T[0]), Document(page_content=T[1])])
    r.save(tmp_path / "a")
    _without_keys_json(tmp_path / "a")
    assert MixPRRetriever.load(tmp_path / "a")._keys == ["source0", "source1"]
    docs = tmp_path / "a" / "documents.json"
    saved = json.loads(docs.read_text())
    for bad, match in [({"id": "x"}, "'source0' where saved document 0"),
                       ({"page_content": "Other text."}, "does not hold the texts")]:  # fmt: skip
        _rewrite_documents(tmp_path / "a", [{**saved[0], **bad}, saved[1]])
        with pytest.raises(PersistError, match=match):
            MixPRRetriever.load(tmp_path / "a")
    _rewrite_documents(tmp_path / "a", saved[:1])
    with pytest.raises(PersistError, match="holds 2 documents for 1"):
        MixPRRetriever.load(tmp_path / "a")


def _rewrite_documents(folder, documents):
    """Replace ``documents.json`` in a saved folder, its manifest's digest updated."""
    import hashlib
    import json

    raw = json.dumps(documents).encode()
    (folder / "documents.json").write_bytes(raw)
    manifest = json.loads((folder / "manifest.json").read_text())
    digest = {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
    manifest["digests"]["documents.json"] = digest
    (folder / "manifest.json").write_text(json.dumps(manifest))
