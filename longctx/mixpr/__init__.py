"""MixPR: mixture-of-PageRanks retrieval over sparse TF-IDF chunk graphs.

Source: Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time, Sparse
GraphRAG", 2024, arXiv:2412.06078, sec. 4 (eq. 2 personalized PageRank, eq. 3
``A = normalize(E^T E)``, personalization vector, dynamic alpha) and appendix A.2 (threshold .27,
18 iterations, alpha .6, the zero-shot router prompt).

Pipeline (the paper's with ``preset="paper"``; the ``"default"`` preset changes the settings
listed in :class:`MixPR`):

1. chunks (``longctx.text.chunk_words``; N=32 words in the paper, 64 by default) + the query
   split the same way;
2. TF-IDF embeddings ``E`` (scikit-learn's weights; :class:`~longctx.mixpr.tfidf.TermTable` keeps
   the term counts, so documents can be inserted and deleted), L2-normalized rows;
3. the unit graph: the paper's ``S = E E^T`` thresholded (``graph="threshold"``, the paper
   preset; its size grows with the square of the text) or, by default, ``S = E W E^T`` kept as
   its factor (:class:`~longctx.mixpr.graph.FactoredGraph`: a walk step is two passes over
   ``E``, linear in the text); ``A = S D^{-1}`` (column-stochastic);
4. personalized PageRank (local queries) or PageRank (global queries, ``alpha=0``), matrix-free
   (:mod:`longctx.mixpr.scoring`: one pipeline for one index and for shards); the multi-hop
   walk over units and the names they share (:mod:`longctx.mixpr.multihop`), taken by default
   (``walk="auto"``) over a corpus of short documents for a question that names one of their
   phrases (``walk="multihop"`` / ``preset="multihop"`` force it, ``walk="pagerank"`` turns it
   off; the result's ``trace`` says which walk and why);
5. top-k / token budget in chronological order (``longctx.selection.select_top``), with metadata
   filters (:mod:`longctx.filters`).

Files: ``graph.py`` (graphs, column normalization, personalized PageRank), ``router.py`` (local /
global routers), ``config.py`` (:class:`MixPRConfig`, :data:`PRESETS`), ``tfidf.py`` (term
counts), ``query.py`` (the query's edges), ``scoring.py`` (the scoring pipeline over blocks of
units), ``index.py`` (:class:`MixPRIndex`: build once, insert / update / delete, search) with
``state.py`` (its immutable state), ``build.py`` (the state built and changed) and
``validation.py`` (ids and metadata), ``persist.py`` (saving and loading, validation of saved
files), ``pipeline.py`` (:class:`MixPR`,
one call), ``phrases.py`` and ``multihop.py`` (the multi-hop walk). A sharded index (shards held
in this process or by Ray actors) is part of a corpus's lifecycle: :mod:`longctx.corpus.shards`
(``longctx.mixpr.ShardedMixPRIndex`` still works, deprecated in 0.2; it is removed in 0.3).
"""

# ``X as X``: also importable from ``longctx.mixpr`` as before the split, not in ``__all__``.
from longctx.mixpr.config import PERSONALIZATIONS as PERSONALIZATIONS
from longctx.mixpr.config import PRESETS, MixPRConfig
from longctx.mixpr.config import QUESTION_STOP_WORDS as QUESTION_STOP_WORDS
from longctx.mixpr.config import STOP_WORD_NAMES as STOP_WORD_NAMES
from longctx.mixpr.graph import column_normalize, personalized_pagerank, similarity_graph
from longctx.mixpr.index import MixPRIndex
from longctx.mixpr.pipeline import MixPR
from longctx.mixpr.router import MODES as MODES
from longctx.mixpr.router import ROUTER_PROMPT, KeywordRouter, LLMRouter
from longctx.mixpr.seeds import Seed

__all__ = [
    "MixPR",
    "MixPRIndex",
    "MixPRConfig",
    "PRESETS",
    "KeywordRouter",
    "LLMRouter",
    "ROUTER_PROMPT",
    "Seed",
    "personalized_pagerank",
    "similarity_graph",
    "column_normalize",
]


def __getattr__(name: str):
    # Deprecated in 0.2, removed in 0.3 (issue 39): the sharded index moved to
    # longctx.corpus.shards, which uses this package and is never imported by it.
    if name == "ShardedMixPRIndex":
        import warnings

        warnings.warn(
            "longctx.mixpr.ShardedMixPRIndex: deprecated in longctx 0.2, removed in 0.3; import it "
            "from longctx.corpus.shards",
            DeprecationWarning,
            stacklevel=2,
        )
        from longctx.corpus.shards.index import ShardedMixPRIndex

        return ShardedMixPRIndex
    if name == "shards":  # the module, as after ``import longctx.mixpr`` before the move
        import importlib

        return importlib.import_module("longctx.mixpr.shards")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
