"""The check of a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex`'s shard restarted
from its stored copy after its Ray actor died (:func:`check_restarted`): it must hold what the
index loaded or saved, never another corpus's documents."""

from __future__ import annotations

import numpy as np

from longctx.corpus.shards.backends import ShardDied, _where
from longctx.persist import PersistError

__all__ = ["check_restarted"]


def check_restarted(index, i: int) -> None:
    """The restarted shard ``i`` of ``index`` holds what its stored copy held when the index
    loaded or saved it: the same documents (ids, lengths, text digests), settings, units and
    terms. Otherwise (the corpus was rebuilt or changed there since) its actor is stopped and
    a :class:`~longctx.persist.PersistError` names the shard: the index must be loaded again,
    never answer from another corpus's shard.

    Raises
    ------
    RuntimeError
        The actor died again.
    PersistError
        The shard holds other documents than the index.
    """
    old = index._stats[i]
    want = index._stored_digests.get(i)
    try:
        now = index._run({i: ("term_stats", ())})[i]
        got = index._run({i: ("identity", ())})[i] if want is not None else None
    except ShardDied:
        raise RuntimeError(f"the Ray actor of shard {i} died again after a restart") from None
    same = (
        list(now["doc_ids"]) == list(old["doc_ids"])
        and list(now["chars"]) == list(old["chars"])
        and int(now["n_units"]) == int(old["n_units"])
        and (now["config"], now["chunk"], now["dim"]) == (old["config"], old["chunk"], old["dim"])
        and now["terms"] == old["terms"]
        and np.array_equal(now["df"], old["df"])
        and (want is None or got == want)
    )
    if not same:
        index._backend.drop(i)
        raise PersistError(
            f"shard {i} ({_where(index._sources[i])}) changed on disk since this index loaded "
            "it (the corpus was rebuilt or changed there): its restarted copy holds other "
            "documents than the index; load the index again"
        )
