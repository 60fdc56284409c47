"""A shard restarted from its stored copy (what a dead Ray actor gets) must hold what the index
loaded or saved: a corpus rebuilt at the same place since is a PersistError naming the shard,
never hits from the new text nor a raw error from set_global. The in-process backend stands in
for Ray: LocalShards.drop makes a shard's calls raise ShardDied, as a dead actor's do, and the
search then goes through the same restart and check."""

from __future__ import annotations

import pytest

from longctx.corpus.shards.backends import ShardDied
from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.io import sample_text
from longctx.persist import PersistError

OLD = [
    "The castle stood on the hill and the dragon slept below it.",
    "A knight rode to the castle to fight the dragon at dawn.",
    "The whale rose from the sea and the captain watched it.",
    "Sailors mended the nets while the ship waited in the harbour.",
]


def _new_corpus(big: bool):
    if big:  # a larger vocabulary: the old column map would index past the new one
        t = sample_text("alice")
        return [t[i * 5000 : (i + 1) * 5000] for i in range(4)]
    return [t.replace("dragon", "wyvern") + " castle dragon knight" for t in OLD]


@pytest.mark.parametrize("big", [False, True])
def test_a_restart_from_a_rebuilt_corpus_is_a_named_error(tmp_path, big):
    root = tmp_path / "ix"
    ShardedMixPRIndex.from_texts(OLD, ids=list("abcd"), shards=2).save(root)
    index = ShardedMixPRIndex.load(root, use_ray=False)
    want = index.search("castle dragon knight", k=3)
    # the corpus is rebuilt at the same place while the index is loaded
    ShardedMixPRIndex.from_texts(_new_corpus(big), ids=list("abcd"), shards=2).save(root)
    victim = index.shard_of("a")
    index._backend.drop(victim)  # its actor dies
    with pytest.raises(ShardDied):
        index._run({victim: ("term_stats", ())})
    with pytest.raises(PersistError, match=f"shard {victim} .*changed on disk.*load the index"):
        index.search("castle dragon knight", k=3)
    with pytest.raises(PersistError, match=f"shard {victim} "):  # and again, not other hits
        index.search("castle dragon knight", k=3)
    again = ShardedMixPRIndex.load(root, use_ray=False)  # loading again reads the new corpus
    assert again.search("castle dragon knight", k=3).hits != want.hits


def test_a_restart_from_the_unchanged_copy_answers_as_before(tmp_path):
    root = tmp_path / "ix"
    ShardedMixPRIndex.from_texts(OLD, ids=list("abcd"), shards=2).save(root)
    index = ShardedMixPRIndex.load(root, use_ray=False)
    want = index.search("castle dragon knight", k=3)
    index._backend.drop(index.shard_of("c"))
    got = index.search("castle dragon knight", k=3)
    assert [(h.source, h.start, h.text) for h in got.hits] == [
        (h.source, h.start, h.text) for h in want.hits
    ]
    # saved after a change: the new stored copy is the one a restart must find
    index.insert(["The dragon flew over the castle walls."], ids=["e"])
    index.save(root)
    want = index.search("castle dragon knight", k=3)
    index._backend.drop(index.shard_of("e"))
    assert index.search("castle dragon knight", k=3).hits == want.hits


def test_metadata_changed_on_disk_is_caught_too(tmp_path):
    root = tmp_path / "ix"
    mds = [{"n": i} for i in range(4)]
    ShardedMixPRIndex.from_texts(OLD, ids=list("abcd"), metadatas=mds, shards=2).save(root)
    index = ShardedMixPRIndex.load(root, use_ray=False)
    other = [{"n": 10 + i} for i in range(4)]
    ShardedMixPRIndex.from_texts(OLD, ids=list("abcd"), metadatas=other, shards=2).save(root)
    index._backend.drop(0)
    with pytest.raises(PersistError, match="shard 0 "):
        index.search("castle dragon knight", k=3, filters={"n": {"$lt": 4}})


def test_the_restart_itself_refuses_a_rebuilt_shard(tmp_path):
    root = tmp_path / "ix"
    ShardedMixPRIndex.from_texts(OLD, ids=list("abcd"), shards=2).save(root)
    index = ShardedMixPRIndex.load(root, use_ray=False)
    ShardedMixPRIndex.from_texts(_new_corpus(False), ids=list("abcd"), shards=2).save(root)
    with pytest.raises(PersistError, match="shard 0 "):
        with index._lock:
            index._restart([0])
