"""Shared fixtures. Tests never reach the network: HF_HUB_OFFLINE is forced here too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

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
