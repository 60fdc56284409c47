"""One wording per refusal of a save into a corpus (new user's pass, 2026-11-29).

- An index never loaded from the corpus, saved into its ``indexes/mixpr``, ``indexes/shard-0``
  or ``indexes/backup`` (the core) or its ``indexes`` (sharded), is refused with "this index
  was not loaded from the corpus at ...": before, the advice was "load the corpus again and
  repeat the changes", wrong for an index that never was.
- A rebuild (``longctx index``) writes only its own index folders: ``indexes/backup``, saved by
  an index loaded from the corpus, survives it. So the core keeps accepting that save, and a
  refusal of a folder there says which rule refuses it (not "a later `longctx index` would
  delete" it, said only for a folder a build replaces).
- Every message names the target as the user gave it and the corpus's resolved folder.
"""

from __future__ import annotations

import pytest

from longctx.corpus import build_indexes, load_corpus
from longctx.corpus.documents import safe_component
from longctx.corpus.shards import ShardedMixPRIndex
from longctx.corpus.shards.shard import shard_dir
from longctx.corpus.shards.single import MIXPR_INDEX
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError, SaveTargetError, marks
from tests.corpus import _build_race as race

DOCS = [
    ("a", "Mary went to the kitchen. She got the milk there."),
    ("b", "John walked in the garden. The roses were red."),
]
MORE = [("c", "Sandra took the apple to the office.")]


def _corpus(where, shards=None, docs=DOCS):
    build_indexes(docs, "mixpr", where, **race.build_options("mixpr", shards))
    return where


_files = race.corpus_files


def _fresh_core():
    return MixPRIndex.from_texts([t for _, t in DOCS], ids=[d for d, _ in DOCS])


@pytest.mark.parametrize(
    ("shards", "where"),
    [(None, "indexes/mixpr"), (2, "indexes/shard-0"), (None, "indexes/backup")],
)
def test_a_fresh_core_index_is_told_it_was_not_loaded_from_the_corpus(
    tmp_path, monkeypatch, shards, where
):
    monkeypatch.chdir(tmp_path)
    out = _corpus(tmp_path / "c1", shards)
    before = _files(out)
    given = f"c1/{where}"  # relative, as a user types it
    with pytest.raises(PersistError, match="this index was not loaded from the corpus") as err:
        _fresh_core().save(given)
    message = str(err.value)
    assert message.startswith(repr(given))  # the path as given ...
    assert repr(str(out.resolve())) in message  # ... and the corpus's resolved folder
    assert "`longctx index` / `build_indexes`" in message and "save elsewhere" in message
    assert "load the corpus again" not in message  # it never was
    assert not isinstance(err.value, SaveTargetError)
    assert _files(out) == before


def test_a_fresh_sharded_index_is_told_the_same(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = _corpus(tmp_path / "c2", 2)
    before = _files(out)
    fresh = ShardedMixPRIndex.from_texts([t for _, t in DOCS], ids=["x", "y"], use_ray=False)
    try:
        with pytest.raises(PersistError, match="not loaded from the corpus") as err:
            fresh.save("c2/indexes")
    finally:
        fresh.close()
    message = str(err.value)
    assert message.startswith("'c2/indexes'") and repr(str(out.resolve())) in message
    assert "load the corpus again" not in message
    assert _files(out) == before


def test_an_outdated_index_is_told_to_load_again_in_the_same_convention(tmp_path, monkeypatch):
    """Core and sharded: the path as given and the corpus's resolved folder (before: the
    index root's absolute path alone)."""
    monkeypatch.chdir(tmp_path)
    one, sharded = _corpus(tmp_path / "c1"), _corpus(tmp_path / "c2", 2)
    core = MixPRIndex.load("c1/indexes/mixpr")
    shard_index = ShardedMixPRIndex.load("c2/indexes", use_ray=False)
    try:
        _corpus(one, None, DOCS + MORE)  # rebuilds after the loads
        _corpus(sharded, 2, DOCS + MORE)
        for index, given, out in (
            (core, "c1/indexes/mixpr", one),
            (shard_index, "c2/indexes", sharded),
        ):
            with pytest.raises(PersistError, match="after this index read it") as err:
                index.save(given)
            message = str(err.value)
            assert message.startswith(f"{given!r}: the corpus at {str(out.resolve())!r} ")
            assert "a rebuild of this corpus" in message and "load the corpus again" in message
    finally:
        shard_index.close()


def test_a_backup_in_indexes_survives_a_rebuild_and_the_frameworks_say_why_they_refuse(tmp_path):
    """A loaded, unchanged core index saved to ``indexes/backup`` is accepted (under the corpus's
    lock): a rebuild leaves that folder alone. A retriever's persist there is refused, with
    the rule that refuses it, not a deletion that does not happen."""
    from langchain_longctx import MixPRRetriever

    out = _corpus(tmp_path / "c1")
    backup = out / "indexes" / "backup"
    MixPRIndex.load(out / "indexes" / "mixpr").save(backup)
    _corpus(out, None, DOCS + MORE)  # a rebuild that changes the corpus's index
    assert MixPRIndex.load(backup).doc_ids == ("a", "b")  # left as saved
    assert next(iter(load_corpus(out, use_ray=False).values())).doc_ids == ("a", "b", "c")
    before = _files(out)
    with pytest.raises(SaveTargetError, match="a rebuild leaves 'indexes/backup' alone") as err:
        MixPRRetriever.from_texts([t for _, t in DOCS]).save(backup)
    message = str(err.value)
    assert "would delete" not in message and "a retriever's persist is not one" in message
    assert repr(str(backup)) in message and repr(str(out.resolve())) in message
    with pytest.raises(SaveTargetError, match="'indexes/mixpr' .* would delete what is saved"):
        MixPRRetriever.from_texts([t for _, t in DOCS]).save(out / "indexes" / "mixpr")
    assert _files(out) == before


def test_the_folders_a_build_writes_are_the_ones_said_to_be_replaced():
    """:data:`longctx.persist.marks.BUILT_FOLDER` (floor 1) names the folders the corpus layer
    (floor 3) writes in ``indexes/``: the one MixPR index, shards, a document's index."""
    built = [MIXPR_INDEX.split("/", 1)[1], shard_dir(0), shard_dir(4095)]
    built += [safe_component(d) for d in ("a", "backup", "a long id with spaces/and slashes")]
    assert MIXPR_INDEX.startswith(f"{marks.INDEX_ROOT}/")
    for name in built:
        assert marks.BUILT_FOLDER.match(name), name
    for name in ("backup", "mine", "longctx_mixpr", "shard-x", "mixpr2", "old-12345"):
        assert not marks.BUILT_FOLDER.match(name), name
