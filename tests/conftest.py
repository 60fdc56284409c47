"""Shared fixtures. Tests never reach the network: HF_HUB_OFFLINE is forced here too."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch/OpenMP thread per process (this one, and the interpreters, kernels and Ray workers
# it starts, which inherit it): the suite's models are tiny or small and their ops short, and a
# second thread costs more to wake than it saves: 6-9 s against 0.3 s for a tiny-model YOURA
# test, SmolLM2 decoding 8-20 s against 2 s, measured interleaved on the shared 2-core machine
# under load (on an idle one the bench's MiniLM batches take ~1.25x longer with one thread).
# Speed only: a test that compares two computations makes both under this same setting.
os.environ.setdefault("OMP_NUM_THREADS", "1")
if "torch" in sys.modules:  # imported before this file (by a plugin): the variable came too late
    sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def alice_text() -> str:
    """The bundled Alice's Adventures in Wonderland (Gutenberg #11, header kept)."""
    from longctx.io import sample_text

    return sample_text("alice")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data, or skip the test cleanly when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's fast tokenizer (from the longctx cache; ~5 s the very first time)."""
    from tests._tiny_models import smollm2_tokenizer as _load

    return _load()


@pytest.fixture(scope="session")
def tiny_model(smollm2_tokenizer):
    """A random 2-layer Llama (hidden 64, 4 heads / 2 KV heads, eager, float32) with SmolLM2's
    vocabulary, from ``tests._tiny_models.tiny_llama``."""
    from tests._tiny_models import tiny_llama

    return tiny_llama(len(smollm2_tokenizer))
