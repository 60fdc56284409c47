"""The query's side of a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex` that needs the
shards' documents: the units' texts for a router (:class:`ShardedUnits`), and another
retriever's hits as seeds of the walk (``ShardedMixPRIndex.search(seeds=...)``, :func:`seed_keys`):
each :class:`~longctx.mixpr.seeds.Seed` names a document, so it goes to the shard that
holds it, which maps it to its units (:func:`longctx.mixpr.seeds.seed_units`, binary searches
in the shard's unit offsets) and returns their corpus-wide keys (its block's), as one
:class:`~longctx.mixpr.index.MixPRIndex` over the same documents numbers its units. The cost
grows with the seeds and the units they overlap, not with the corpus."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from longctx.mixpr.seeds import Seed

__all__ = ["ShardedUnits", "seed_keys"]

logger = logging.getLogger(__name__)


class ShardedUnits(Sequence):
    """The corpus's unit texts, fetched from their shards on demand (for routers that read the
    first and last units)."""

    def __init__(self, owner):
        self._o = owner

    def __len__(self):
        return self._o.n_units

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        o = self._o
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        g = o._global
        pos = int(np.searchsorted(g["offsets"], i, side="right")) - 1
        doc = o._order[pos]
        s = o._shard_of[doc]
        return o._run({s: ("unit_text", (doc, i - int(g["offsets"][pos])))})[s]


def seed_keys(
    run: Callable[[dict], dict], shard_of: Mapping[str, int], seeds
) -> tuple[np.ndarray, np.ndarray]:
    """``(keys (m,) int64 ascending, weights (m,) float64)``: the corpus-wide units the seeds
    overlap and their restart weights.

    Parameters
    ----------
    run : callable
        ``{shard: (method, args)} -> {shard: result}`` (the index's shard calls).
    shard_of : mapping str -> int
        Document id -> its shard.
    seeds : list of Seed
        Checked (:func:`longctx.mixpr.seeds.check_seeds`). Seeds of documents the index does
        not hold are left out (one INFO log line).
    """
    by_shard: dict[int, list[Seed]] = {}
    unknown = 0
    for s in seeds:
        i = shard_of.get(s.doc_id)
        if i is None:
            unknown += 1
        else:
            by_shard.setdefault(i, []).append(s)
    if unknown:
        logger.info(
            "MixPR seeds: %d of %d name documents the index does not hold", unknown, len(seeds)
        )
    got = run({i: ("seed_units", (ss,)) for i, ss in by_shard.items()}) if by_shard else {}
    if not got:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    keys = np.concatenate([k for k, _ in got.values()]).astype(np.int64, copy=False)
    weights = np.concatenate([w for _, w in got.values()])
    order = np.argsort(keys, kind="stable")
    return keys[order], weights[order]
