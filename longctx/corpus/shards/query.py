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
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from longctx.checks import check_choice, check_query
from longctx.filters import compile_filter
from longctx.mixpr.router import MODES
from longctx.mixpr.scoring import normalized_query_vector
from longctx.mixpr.seeds import Seed, local_seeds, seed_source, warn_if_none_found

__all__ = ["ShardedUnits", "prepare_query", "query_vector_of", "seed_keys"]

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
    keys = np.concatenate([np.zeros(0, np.int64), *(k for k, _ in got.values())])
    keys = keys.astype(np.int64, copy=False)
    weights = np.concatenate([np.zeros(0), *(w for _, w in got.values())])
    warn_if_none_found(seeds, len(keys))
    order = np.argsort(keys, kind="stable")
    return keys[order], weights[order]


def prepare_query(owner, query, mode, query_vector, filters, seeds=None, kept=False):
    """``(mode, qvec, timings, seeds)`` of a search of the sharded index ``owner``: checks, the
    router's choice, the query vector or the seeds' units (``(keys, weights)``, in place of the
    query vector, as :class:`~longctx.mixpr.index.MixPRIndex` takes them; local queries only,
    and global ones too with ``kept``, ``keep_firsts=True``: the app's first hit is kept)."""
    check_query(query, "query")
    check_choice(mode, "mode", MODES)
    seeds = seed_source(seeds)
    compile_filter(filters)  # a bad filter raises before any work
    g = owner._global
    if query_vector is not None and g.get("dim") is None:
        raise ValueError("query_vector needs an index built with encoder= or unit_vectors=")
    timings = {}
    if mode == "auto":
        t0 = time.perf_counter()
        mode = owner.route(query) if g["n_units"] else "local"
        timings["route"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    seeds = local_seeds(seeds) if (mode == "local" or kept) and g["n_units"] else None
    if seeds is not None:  # (a callable is asked for a local query only, unless kept)
        keys = seed_keys(owner._run, owner._shard_of, seeds)
        timings["seeds"] = time.perf_counter() - t0
        return mode, None, timings, keys
    qvec = None
    if mode == "local" and g.get("dim") is not None and g["n_units"]:
        t0 = time.perf_counter()
        qvec = query_vector_of(owner, query, query_vector)
        timings["embed_query"] = time.perf_counter() - t0
    return mode, qvec, timings, None


def query_vector_of(owner, query: str, query_vector=None) -> np.ndarray:
    """The query's normalized dense vector for the sharded index ``owner`` (hybrid: its
    encoder embeds ``query`` unless ``query_vector`` is given)."""
    encoder = owner._encoder
    name = {"name": getattr(encoder, "name", None)}
    return normalized_query_vector(encoder, name, owner._global["dim"], query, query_vector)
