"""longctx: long-context retrieval methods (YOURA, MixPR, MMR/FPS diversity, GARLIC).

The core is framework-free; ``llamaindex_longctx`` and ``langchain_longctx`` adapt it. Heavy pieces
(the torch model layer) are imported lazily, so ``import longctx`` stays cheap.
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0.dev0"

# public name -> module that defines it; resolved on first access (PEP 562)
_LAZY = {
    "Passage": "longctx.types",
    "SearchResult": "longctx.types",
    "METADATA_KEYS": "longctx.types",
    "RetrievalIndex": "longctx.index",
    "PersistError": "longctx.persist",
    "SaveTargetError": "longctx.persist",
    "split_sentences": "longctx.text",
    "chunk_words": "longctx.text",
    "count_tokens": "longctx.tokens",
    "read_text_file": "longctx.io",
    "sample_text": "longctx.io",
    "InputError": "longctx.io",
    "select_top": "longctx.selection",
    "BudgetTooSmallError": "longctx.selection",
    "unit_token_cap": "longctx.selection",
    "personalized_pagerank": "longctx.mixpr",
    "MixPR": "longctx.mixpr",
    "MixPRIndex": "longctx.mixpr",
    "MixPRConfig": "longctx.mixpr",
    "load_causal_lm": "longctx.models",
    "ReactionScorer": "longctx.youra",
    "ScoredSpan": "longctx.youra",
    "YouraIndex": "longctx.youra",
    "mmr_select": "longctx.diversity",
    "fps_select": "longctx.diversity",
    "order_selection": "longctx.diversity",
    "diversify": "longctx.diversity",
    "DiversityIndex": "longctx.diversity",
    "get_encoder": "longctx.embeddings",
    "load_tokenizer": "longctx.models",
    "HWDAG": "longctx.garlic",
    "build_hwdag": "longctx.garlic",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'longctx' has no attribute {name!r}")


def __dir__():
    return __all__
