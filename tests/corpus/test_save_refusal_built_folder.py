"""Which folder of a corpus's ``indexes/`` a refusal says a build replaces: decided by what the
corpus's ``corpus.json`` says its builds write, not by the folder's name alone.

Acceptance never depended on the name: every folder inside ``indexes/`` is refused (but a core
index's own ``indexes/<name>``, saved under the lock). The wording did: a user's
``indexes/backup-0123456789`` in a MixPR corpus (a dated backup) or ``indexes/mixpr`` in a
corpus of one index per document was said to be "replaced whole" by the next ``longctx
index``, which never writes it; and the folders a build does write are still said to be
replaced. Without a readable ``corpus.json`` the names decide (:data:`BUILT_FOLDER`)."""

from __future__ import annotations

import json

import pytest

from longctx.corpus import build_indexes
from longctx.corpus.documents import safe_component
from longctx.persist import SaveTargetError
from longctx.persist.corpus_manifest import CorpusManifest, DocumentEntry, text_sha256
from longctx.persist.marks import CORPUS_MANIFEST, check_outside_corpus

DOCS = [("a", "Mary went to the kitchen. She got the milk there.")]
REPLACED = "would delete what is saved there"
LEFT = "a rebuild leaves"


def _refusal(target) -> str:
    target.mkdir(parents=True, exist_ok=True)
    with pytest.raises(SaveTargetError) as err:
        check_outside_corpus(target, "persist_dir")
    return str(err.value)


def _per_document_corpus(out):
    """A corpus of one index per document (diversity), as its ``corpus.json`` lists it."""
    entry = DocumentEntry("a", f"indexes/{safe_component('a')}", "done",
                          text_sha256=text_sha256(DOCS[0][1]))  # fmt: skip
    (out / "indexes").mkdir(parents=True)
    data = CorpusManifest("diversity", {}, "0" * 64, [entry]).to_json()
    (out / CORPUS_MANIFEST).write_text(json.dumps(data), "utf-8")
    return out


def test_a_mixpr_corpus_replaces_its_index_and_shards_only(tmp_path):
    out = tmp_path / "c"
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False)
    for built in ("mixpr", "shard-7"):  # a rebuild with shards writes shard-<i>
        assert REPLACED in _refusal(out / "indexes" / built / "mine"), built
    # named as a document's folder (<slug>-<10 hex digits>), which a MixPR build never writes
    message = _refusal(out / "indexes" / "backup-0123456789" / "mine")
    assert REPLACED not in message and f"{LEFT} 'indexes/backup-0123456789' alone" in message


def test_a_corpus_of_one_index_per_document_replaces_its_documents_folders(tmp_path):
    out = _per_document_corpus(tmp_path / "c")
    mine = safe_component("a")
    assert REPLACED in _refusal(out / "indexes" / mine / "sub")
    for name in ("mixpr", "shard-0"):  # a MixPR corpus's names: not this corpus's builds
        message = _refusal(out / "indexes" / name / "sub")
        assert REPLACED not in message and f"{LEFT} 'indexes/{name}' alone" in message, name


def test_a_manifest_too_large_to_read_for_the_wording_falls_back_to_the_names(
    tmp_path, monkeypatch
):
    import longctx.persist.marks as marks

    out = _per_document_corpus(tmp_path / "c")
    monkeypatch.setattr(marks, "MAX_BUILT_BYTES", 10)
    assert REPLACED in _refusal(out / "indexes" / "mixpr" / "sub")  # by its name
