"""``longctx index``: build a GARLIC graph from the command line (tiny random Llama on disk)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from longctx.cli import main  # noqa: E402
from longctx.garlic import HWDAG  # noqa: E402
from tests._tiny_models import smollm2_tokenizer, tiny_llama  # noqa: E402

TEXT = (
    "Peter Rabbit squeezed under the gate of Mr. McGregor's garden. He ate some lettuces. "
    "Then he felt rather sick and went to look for some parsley. "
) * 8


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    import torch

    d = tmp_path_factory.mktemp("tiny_chat_lm")
    model = tiny_llama(49152, seed=5)
    # untied random output layer: a tied random model only repeats the last prompt token ("\n")
    model.config.tie_word_embeddings = False
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        model.lm_head.weight = torch.nn.Parameter(torch.randn(49152, 64))
    model.save_pretrained(d)
    smollm2_tokenizer().save_pretrained(d)
    return d


def test_index_builds_resumable_graph(model_dir, tmp_path, capsys):
    src = tmp_path / "story.txt"
    src.write_text(TEXT, "utf-8")
    out = tmp_path / "graph"
    args = [
        "index", str(src), "--out", str(out), "--model", str(model_dir), "--chunk-tokens", "40",
        "--batch-tokens", "130", "--max-new-tokens", "6", "--no-embeddings", "--format", "json",
        "--no-progress",
    ]  # fmt: skip
    assert main(args) == 0
    res = json.loads(capsys.readouterr().out)
    g = HWDAG.load(out)
    assert res["levels"] == [len(x) for x in g.levels] and res["levels"][0] >= 4
    assert res["edges"] == g.edges.nnz > 0
    assert 0 < res["tokens_generated"] <= 6 * len(g.batches)
    assert res["seconds"] > 0
    # a second run finds the finished graph: nothing generated
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["tokens_generated"] == 0


def test_index_bad_input(model_dir, tmp_path, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", "utf-8")
    assert main(["index", str(empty), "--out", str(tmp_path / "g")]) == 2
    assert "empty" in capsys.readouterr().err
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"abc\x00\x01")
    assert main(["index", str(binary), "--out", str(tmp_path / "g")]) == 2
    assert "binary" in capsys.readouterr().err
    src = tmp_path / "story.txt"
    src.write_text(TEXT, "utf-8")
    # window of the tiny model is 8192: 6000 + 4000 does not fit
    code = main(
        ["index", str(src), "--out", str(tmp_path / "g"), "--model", str(model_dir),
         "--max-new-tokens", "4000", "--no-embeddings"]
    )  # fmt: skip
    assert code == 2
    assert "window" in capsys.readouterr().err
    assert not (tmp_path / "g").exists()


def test_index_batch_size_and_bullets(model_dir, tmp_path, capsys):
    src = tmp_path / "story.txt"
    src.write_text(TEXT, "utf-8")
    base = ["index", str(src), "--model", str(model_dir), "--chunk-tokens", "40",
            "--batch-tokens", "130", "--max-new-tokens", "6", "--no-embeddings", "--no-progress"]  # fmt: skip
    # the rule is the core's: its message names batch_size
    assert main([*base, "--out", str(tmp_path / "bad"), "--batch-size", "0"]) == 2
    assert "batch_size" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    assert main([*base, "--out", str(tmp_path / "bad"), "--prompt-lookup", "64"]) == 2
    assert "prompt_lookup_num_tokens" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
    assert main([*base, "--out", str(tmp_path / "g"), "--batch-size", "3", "--no-bullets",
                 "--prompt-lookup", "0"]) == 0  # fmt: skip
    g = HWDAG.load(tmp_path / "g")
    assert g.info["batch_size"] == 3 and g.info["config"]["force_bullets"] is False
    assert g.info["prompt_lookup_num_tokens"] == 0
