"""A sharded MixPR index walks the factored graph only: the thresholded graph of
``graph="threshold"`` (the ``"paper"`` preset) is refused by name when it is built and when it
is loaded, never walked as the factored one."""

from __future__ import annotations

import json
import shutil

import pytest

from longctx.corpus.shards import ShardedMixPRIndex
from longctx.io import sample_text
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError

TEXTS = [sample_text("alice")[i * 8000 : (i + 1) * 8000] for i in range(3)]


@pytest.mark.parametrize("params", [{"preset": "paper"}, {"graph": "threshold"}])
def test_sharded_index_refuses_the_thresholded_graph_at_build(params):
    with pytest.raises(ValueError, match="graph='factored'"):
        ShardedMixPRIndex.from_texts(TEXTS, shards=2, **params)
    # the paper's other settings on the factored graph are a sharded index's to run
    index = ShardedMixPRIndex.from_texts(TEXTS, shards=2, preset="paper", graph="factored")
    assert index.search("Who was the White Rabbit?", k=5).hits


@pytest.mark.parametrize("params", [{"preset": "paper"}, {"graph": "threshold"}])
def test_sharded_corpus_refuses_the_thresholded_graph_before_any_work(tmp_path, params, capsys):
    from longctx.cli import main
    from longctx.corpus import build_indexes

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "text": t}) + "\n" for i, t in
                            enumerate(TEXTS)))  # fmt: skip
    out = tmp_path / "corpus"
    with pytest.raises(ValueError, match="graph='threshold'.*sharded") as info:
        build_indexes([str(docs)], "mixpr", str(out), shards=2, use_ray=False, **params)
    # what to do, for a CLI user (no --graph flag) and from Python
    assert "without --shards" in str(info.value) and "graph='factored'" in str(info.value)
    assert not out.exists()
    capsys.readouterr()
    argv = ["index", str(docs), "--method", "mixpr", "--preset", "paper", "--shards", "2"]
    assert main([*argv, "--out", str(out), "--sequential"]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "graph='threshold'" in err
    assert "build the corpus without --shards" in err
    assert "Traceback" not in err
    assert not out.exists()


def test_sharded_index_refuses_a_thresholded_shard_at_load(tmp_path):
    index = ShardedMixPRIndex.from_texts(TEXTS, shards=2)
    out = tmp_path / "sharded"
    index.save(out)
    assert ShardedMixPRIndex.load(out).n_units == index.n_units
    # shard 0 replaced by an index of the same documents with the paper's thresholded graph
    shard = MixPRIndex.load(out / "shard-0")
    texts = [index.document(d)[0] for d in shard.doc_ids]
    paper = MixPRIndex.from_texts(texts, ids=list(shard.doc_ids), preset="paper")
    shutil.rmtree(out / "shard-0")
    paper.save(out / "shard-0")
    with pytest.raises(PersistError, match="graph='threshold'"):
        ShardedMixPRIndex.load(out)
