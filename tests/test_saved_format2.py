"""Indexes saved before the re-layout of issue 39 (main 700bc63: a MixPRIndex of format 2, a
ShardedMixPRIndex, a sharded MixPR corpus; tests/fixtures/saved_format2/make_fixtures.py) load
unchanged and answer as they did when they were saved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from longctx.corpus import CorpusIndex
from longctx.corpus.shards import ShardedMixPRIndex
from longctx.mixpr import MixPRIndex

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "saved_format2"
EXPECTED = json.loads((FIXTURES / "queries.json").read_text())


def hits(index, q):
    return [[h.source, h.start, h.end, h.score] for h in index.search(q, k=4).hits]


def same(got, want):
    assert [g[:3] for g in got] == [w[:3] for w in want]
    assert [g[3] for g in got] == pytest.approx([w[3] for w in want], rel=1e-9, abs=1e-12)


@pytest.fixture
def saved(tmp_path):
    """A copy of the fixtures (a load must not be able to change the checked-in files)."""
    out = tmp_path / "saved"
    shutil.copytree(FIXTURES, out)
    return out


def test_stored_format_names_are_those_of_the_saved_files(saved):
    """The names a save stores are data, not module paths: they did not move with the modules."""
    assert json.loads((saved / "mixpr" / "manifest.json").read_text())["format"] == "longctx.mixpr"
    assert json.loads((saved / "mixpr" / "manifest.json").read_text())["format_version"] == 2
    assert json.loads((saved / "shards" / "shards.json").read_text())["format"] == (
        "longctx.mixpr.shards"
    )
    assert json.loads((saved / "corpus" / "corpus.json").read_text())["format"] == "longctx.corpus"


def test_a_mixpr_index_of_format_2_loads_and_answers_as_saved(saved):
    index = MixPRIndex.load(saved / "mixpr")
    # saved before push_df_power existed: it ranks by the push rule it was saved with
    assert "push_df_power" not in json.loads((saved / "mixpr" / "config.json").read_text())
    assert index.config.push_df_power == 1.0
    assert index.config.fold_decomposed is False  # and folds accents as it was built
    assert index.doc_ids == ("ch0", "ch1", "ch2", "ch3")
    assert index.metadatas[2] == {"n": 2}
    for q, want in zip(EXPECTED["queries"], EXPECTED["mixpr"]):
        same(hits(index, q), want)


def test_a_sharded_index_and_a_sharded_corpus_load_and_answer_as_saved(saved):
    with ShardedMixPRIndex.load(saved / "shards", use_ray=False) as index:
        assert index.doc_ids == ("ch0", "ch1", "ch2", "ch3") and len(index.shard_sizes()) == 2
        for q, want in zip(EXPECTED["queries"], EXPECTED["shards"]):
            same(hits(index, q), want)
    with CorpusIndex.from_corpus(saved / "corpus", use_ray=False) as corpus:
        assert isinstance(corpus.index, ShardedMixPRIndex)
        for q, want in zip(EXPECTED["queries"], EXPECTED["shards"]):
            same(hits(corpus.index, q), want)


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0.dev0", "9.0", "not a version", None])
def test_the_version_a_save_names_is_recorded_and_never_checked(tmp_path, saved, version):
    """A save records ``longctx.__version__`` (now 0.2.0.dev0); a load reads the format version
    only, so a folder naming any longctx version (or none) loads (the fixtures name 0.1.0)."""
    import longctx
    from tests._persist_helpers import edit_json, mixpr_index

    assert json.loads((saved / "mixpr" / "manifest.json").read_text())["longctx_version"] == "0.1.0"
    index = mixpr_index()
    index.save(tmp_path / "i")
    manifest = tmp_path / "i" / "manifest.json"
    assert json.loads(manifest.read_text())["longctx_version"] == longctx.__version__

    def rename(m):
        if version is None:
            del m["longctx_version"]
        else:
            m["longctx_version"] = version

    edit_json(manifest, rename)
    q = "What did the cat do?"
    assert hits(index, q) and hits(MixPRIndex.load(tmp_path / "i"), q) == hits(index, q)
