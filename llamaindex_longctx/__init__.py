"""LlamaIndex adapters for longctx (``pip install longctx-rag[llamaindex]``)."""

from __future__ import annotations

import importlib

_LAZY = {
    "LongctxEmbedding": "llamaindex_longctx.embedding",
    "CorpusRetriever": "llamaindex_longctx.corpus_retriever",
    "MixPRRetriever": "llamaindex_longctx.mixpr_retriever",
    "RankFusionRetriever": "llamaindex_longctx.fusion_retriever",
    "YouraPostprocessor": "llamaindex_longctx.youra_postprocessor",
    "YouraRetriever": "llamaindex_longctx.youra_retriever",
    "DiversityPostprocessor": "llamaindex_longctx.diversity_postprocessor",
    "GarlicIndex": "llamaindex_longctx.garlic_index",
    "load_garlic_index": "llamaindex_longctx.garlic_index",
}

__all__ = sorted(_LAZY)

# GarlicIndex registers its struct type with llama-index-core on import, so that
# load_index_from_storage reloads it (and any other index persisted beside it).
importlib.import_module("llamaindex_longctx.garlic_index")


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'llamaindex_longctx' has no attribute {name!r}")


def __dir__():
    return __all__
