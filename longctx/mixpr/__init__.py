"""MixPR: mixture-of-PageRanks retrieval over sparse TF-IDF chunk graphs.

Source: Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time, Sparse
GraphRAG", 2024, arXiv:2412.06078, sec. 4 (eq. 2 personalized PageRank, eq. 3
``A = normalize(E^T E)``, personalization vector, dynamic alpha) and appendix A.2 (threshold .27,
18 iterations, alpha .6, the zero-shot router prompt).

Pipeline of the paper (``preset="paper"``; all sparse, never an ``n x n`` dense matrix; the
``"default"`` preset changes the settings listed in :class:`MixPR`):

1. chunks (``longctx.text.chunk_words``, N=32 words) + the query appended as the last chunk(s);
2. TF-IDF embeddings (scikit-learn), L2-normalized rows;
3. ``S = E E^T`` computed in row blocks (upper triangle only, then mirrored), entries ``< threshold``
   dropped per block; ``A = S D^{-1}`` (each column divided by its sum: column-stochastic);
4. personalized PageRank (local queries, ``alpha=0.6``) or PageRank (global queries, ``alpha=0``);
5. top-k / token budget in chronological order (``longctx.selection.select_top``).

Files: ``graph.py`` (similarity graph, column normalization, personalized PageRank),
``router.py`` (local / global routers), ``config.py`` (:class:`MixPRConfig`, :data:`PRESETS`),
``tfidf.py`` (term counts, corpus-wide statistics), ``query.py`` (the query's edges),
``scoring.py`` (the one scoring pipeline over blocks of units: the walk, every reduction),
``index.py`` (:class:`MixPRIndex`, built once per corpus), ``persist.py`` (saving and loading an
index, validation of saved files), ``shards.py`` (:class:`ShardedMixPRIndex`: one index split
into shards, in this process or Ray actors; ``shard.py`` one shard, ``shard_backends.py`` where
shards live, ``shards_persist.py`` their files), ``pipeline.py`` (:class:`MixPR`, one call).
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
from longctx.mixpr.shards import ShardedMixPRIndex

__all__ = [
    "MixPR",
    "MixPRIndex",
    "ShardedMixPRIndex",
    "MixPRConfig",
    "PRESETS",
    "KeywordRouter",
    "LLMRouter",
    "ROUTER_PROMPT",
    "personalized_pagerank",
    "similarity_graph",
    "column_normalize",
]
