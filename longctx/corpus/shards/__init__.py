"""A MixPR corpus: one index over every document, or the documents split into shards (in this
process or one Ray actor per shard) searched as one index.

Modules: :mod:`~longctx.corpus.shards.index` (:class:`ShardedMixPRIndex`: build, search, insert
/ update / delete, save / load), :mod:`~longctx.corpus.shards.shard` (:class:`MixPRShard`, one
shard, and the shard assignment), :mod:`~longctx.corpus.shards.backends` (shards in this process
or on Ray actors), :mod:`~longctx.corpus.shards.persist` (``shards.json`` and the shards'
folders), :mod:`~longctx.corpus.shards.build` (a sharded corpus of ``longctx index --shards N``)
and :mod:`~longctx.corpus.shards.single` (a MixPR corpus as one index). The MixPR maths they use
(the scoring pipeline over blocks of units, the walks) is in :mod:`longctx.mixpr`.
"""

from __future__ import annotations

from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.corpus.shards.shard import MixPRShard

__all__ = ["ShardedMixPRIndex", "MixPRShard"]
