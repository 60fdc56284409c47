"""LlamaIndex adapters for longctx (``pip install longctx[llamaindex]``)."""

from __future__ import annotations

import importlib

_LAZY = {
    "MixPRRetriever": "llamaindex_longctx.mixpr_retriever",
    "YouraPostprocessor": "llamaindex_longctx.youra_postprocessor",
    "YouraRetriever": "llamaindex_longctx.youra_retriever",
    "DiversityPostprocessor": "llamaindex_longctx.diversity_postprocessor",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'llamaindex_longctx' has no attribute {name!r}")


def __dir__():
    return __all__
