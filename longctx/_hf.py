"""Small helpers around Hugging Face libraries, shared by the model and embedding loaders."""

from __future__ import annotations

import inspect
from contextlib import contextmanager


def cache_keyword(model) -> str:
    """The keyword a model's forward takes its KV cache by: ``cache`` where it has one
    (transformers >= 5.2x deprecates ``past_key_values``), else ``past_key_values``."""
    try:
        params = inspect.signature(model.forward).parameters
    except (AttributeError, TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


@contextmanager
def quiet_hf_loading():
    """Silence transformers' "Loading weights" progress bars while loading a model.

    Restores the user's setting afterwards; does nothing if transformers is not installed.
    """
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - models extra not installed
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
