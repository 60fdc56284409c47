"""LangChain adapters for longctx (``pip install longctx-rag[langchain]``)."""

from __future__ import annotations

import importlib

_LAZY = {
    "LongctxEmbeddings": "langchain_longctx.embeddings",
    "MixPRRetriever": "langchain_longctx.mixpr_retriever",
    "YouraCompressor": "langchain_longctx.youra_compressor",
    "YouraRetriever": "langchain_longctx.youra_retriever",
    "DiversityCompressor": "langchain_longctx.diversity_compressor",
    "GarlicRetriever": "langchain_longctx.garlic_retriever",
    "CorpusRetriever": "langchain_longctx.corpus_retriever",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'langchain_longctx' has no attribute {name!r}")


def __dir__():
    return __all__
