"""benchmarks/bench_gpu.py runs end to end in its small shape on CPU (no download, seconds)."""

from __future__ import annotations

import pytest

from tests._fixtures import load_script

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _load():
    return load_script("benchmarks/bench_gpu.py")


def test_bench_gpu_small_runs_and_prints_its_tables(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bench = _load()
    argv = ["--small", "--device", "cpu", "--sizes", "128", "256", "--batches", "1", "2"]
    argv += ["--max-new-tokens", "4", "--recorder-tokens", "64"]
    status = bench.main(argv)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "small (tiny Llama)" in out and "n/a:" not in out
    youra = out.split("YOURA first query")[1].split("GARLIC build")[0]
    rows = [line.split() for line in youra.splitlines()[2:] if line.strip()]
    assert [r[0] for r in rows] == ["128", "256"]
    assert all(r[4].endswith("x") and float(r[4][:-1]) > 0 for r in rows)
    garlic = out.split("GARLIC build")[1].split("attention recorder")[0]
    assert "tokens/s" in garlic and "GARLIC search:" in garlic and "tokens run" in garlic
    recorder = out.split("attention recorder")[1]
    assert "all" in recorder and "last" in recorder and "ms/layer" in recorder


def test_synthetic_tokenizer_is_word_level_with_offsets_and_chat_template():
    bench = _load()
    tok = bench.synthetic_tokenizer(100)
    text = bench.synthetic_text(40, 100, seed=1)
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    assert len(enc["input_ids"]) == 40  # two sentences of 19 words and a period
    assert all(text[a:b] for a, b in enc["offset_mapping"])
    assert max(enc["input_ids"]) < 100 and tok.unk_token_id not in enc["input_ids"]
    chat = tok.apply_chat_template([{"role": "user", "content": "w20 w21"}], tokenize=False)
    assert "<|im_start|>user\nw20 w21<|im_end|>" in chat
