"""A corpus's own JSON files (``corpus.json``, ``shards.json``, the writer's mark) are written
only when their load would read them: ``Storage.write_json`` checked neither the byte limit nor
the values bound that ``Storage.read_json`` enforces."""

from __future__ import annotations

import pytest

from longctx.corpus.storage import Storage
from longctx.persist import MAX_JSON_DEPTH


@pytest.fixture(params=["local", "memory"])
def storage(request, tmp_path):
    if request.param == "local":
        return Storage(tmp_path / "corpus")
    return Storage(f"memory://longctx-test-write-json-{id(tmp_path)}")


def _exists(storage: Storage, rel: str) -> bool:
    if storage.local is not None:
        return (storage.local / rel).exists()
    return storage.fs.exists(storage._remote(rel))


def test_write_json_refuses_what_read_json_refuses(storage, monkeypatch):
    from longctx.persist import format as fmt

    storage.write_json("corpus.json", {"documents": [{"id": "a"}]})
    assert storage.read_json("corpus.json") == {"documents": [{"id": "a"}]}
    monkeypatch.setattr(fmt, "MAX_JSON_VALUES", 50)
    many = {"documents": [{} for _ in range(60)]}
    with pytest.raises(ValueError, match=r"cannot save .*shards\.json.*JSON values.*not"):
        storage.write_json("shards.json", many)
    assert not _exists(storage, "shards.json")  # nothing written
    with pytest.raises(ValueError, match="over the limit of 100 that a load accepts"):
        storage.write_json("corpus.json", {"documents": ["x" * 200]}, limit=100)
    deep: list = [1]
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_JSON_DEPTH}"):
        storage.write_json("corpus.json", deep)
    assert storage.read_json("corpus.json") == {"documents": [{"id": "a"}]}  # the old one kept
    text = ",".join(["a"] * 200)  # commas in a string are not values
    storage.write_json("corpus.json", {"documents": [{"id": text}]})
    assert storage.read_json("corpus.json") == {"documents": [{"id": text}]}


def test_a_writer_mark_stays_readable():
    """The mark's ``what`` is cut as its reader cuts it: a mark stays under the bytes read."""
    from longctx.persist.marks import MAX_MARK_BYTES, writer_record

    record = writer_record("a save of " + "x" * 10_000)
    assert len(record["what"]) == 100
    import json

    assert len(json.dumps(record, indent=1)) < MAX_MARK_BYTES
