"""``keep_firsts=True`` over the shards of a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex`:
the fusion that keeps each retriever's first hit (MixPR's own best unit and the app's first)
and orders the rest by the seeded scores, as :meth:`MixPRIndex.search(seeds=...,
keep_firsts=True) <longctx.mixpr.index.MixPRIndex.search>` does within one index
(:func:`longctx.mixpr.seeds.first_units`, :func:`~longctx.mixpr.seeds.keep_first_units`).

The scores live in the shards' blocks (one scoring session each), so the driver asks them in
two rounds, each costing a few numbers per shard, never a pass over the units it gathers:

1. :func:`block_firsts`: each block's own best unit (MixPR's scores without the seeds, taken
   from the seeded walk where it holds them, :func:`longctx.mixpr.seeds.own_scores`; otherwise
   the driver runs the plain walk in a second session and asks again), whether its filter keeps
   the app's first unit, and its largest seeded score;
2. :func:`block_raise`: the kept units raised above every score of the corpus (the values one
   index gives them), their real scores sent back for the hits.

The selection over the shards (:func:`~longctx.corpus.shards.selection.select_over_shards`)
then picks from the raised scores as one index picks from them; the hits report the real
scores and ``info["ranking"]`` the raised order (:func:`~longctx.mixpr.seeds.kept_ranking`).

Not in MixPR's paper (Alonso and Millidge, arXiv:2412.06078): the rule of
``docs/notes/mixpr-recall.md``, "Each retriever's first hit kept".
"""

from __future__ import annotations

import logging

import numpy as np

from longctx.mixpr.hits import values_at
from longctx.mixpr.seeds import (
    best_unit,
    firsts_in_order,
    kept_ranking,
    own_scores,
    raise_units,
    raised_values,
    top_score,
    top_seed,
)

__all__ = [
    "BLOCK_CALLS",
    "block_firsts",
    "block_raise",
    "keep_firsts_over_shards",
    "kept_hits",
    "plain_walk_firsts",
]

logger = logging.getLogger(__name__)


def block_firsts(block, sid, used: str, seed_key, plain: bool, hybrid: bool = False):
    """One block's part of round 1: ``(own best, seed kept, top)``.

    ``own best``: ``(value, key)`` of the block's best unit by MixPR's own scores (the seeded
    walk's, :func:`~longctx.mixpr.seeds.own_scores`; ``plain``: the session ran the plain
    walk, its scores are MixPR's own; ``hybrid``: the index holds unit vectors), ``None`` for
    none above 0, or ``"walk"`` when the session does not hold them (the driver walks again).
    ``seed kept``: whether the block holds unit ``seed_key`` (a corpus key, or ``None``) and
    its filter keeps it (``None``: not held). ``top``: the block's largest score (the seeded
    ones). A sharded index always walks PageRank (no multi-hop walk on shards)."""
    s = block._s(sid)
    scores = s["scores"]
    own = scores if plain else own_scores(s, scores, used, "pagerank", hybrid)
    best = "walk" if own is None else best_unit(own, block.keys)
    kept = None
    if seed_key is not None:
        at = int(np.searchsorted(block.keys, seed_key))
        if at < len(block.keys) and block.keys[at] == seed_key:
            kept = s["mask"] is None or bool(s["mask"].at(np.array([at]))[0])
    return best, kept, top_score(scores)


def block_raise(block, sid, raised: dict) -> dict:
    """One block's part of round 2: the units of ``raised`` (``{corpus key: value}``) it holds
    get those values in the session's scores (:func:`~longctx.mixpr.seeds.raise_units`);
    returns ``{key: real score}`` of those units, for the hits."""
    s = block._s(sid)
    keys = np.fromiter(raised, np.int64, len(raised))
    at = np.searchsorted(block.keys, keys)
    ok = at < len(block.keys)
    ok[ok] = block.keys[at[ok]] == keys[ok]
    if not ok.any():
        return {}
    pos, held = at[ok].astype(np.int64), keys[ok]
    real = values_at(s["scores"], pos)
    s["scores"] = raise_units(
        s["scores"], dict(zip(pos.tolist(), (raised[k] for k in held.tolist())))
    )
    return dict(zip(held.tolist(), real.tolist()))


#: Block calls of this module, by name (:meth:`~longctx.corpus.shards.shard.MixPRShard.block_call`
#: runs them on the shard's block, in this process or in its Ray actor).
BLOCK_CALLS = {"block_firsts": block_firsts, "block_raise": block_raise}


def keep_firsts_over_shards(scorer, sid, used: str, keys, hybrid: bool, walk_again) -> dict | None:
    """Raise the kept units in the session's scores over every block (rounds 1 and 2, see the
    module docstring); returns ``{corpus key: real score}`` of the raised units, or ``None``
    when none is (no own best, no kept seed unit).

    Parameters
    ----------
    scorer : :class:`~longctx.mixpr.scoring.Scorer`
        Its backend's blocks hold session ``sid``, scored with the seeds (a local query) or
        without them (a global one).
    used : str
        The mode the scoring used.
    keys : ((m,) int64 ascending, (m,) float64)
        The seeds' units (corpus keys) and weights (:func:`~longctx.corpus.shards.query.
        seed_keys`, the filter not applied).
    hybrid : bool
        The shards hold unit vectors (the plain walk restarts on the query's nearest units too).
    walk_again : callable ``() -> list``
        Runs the plain walk (without the seeds) in a session of its own and returns each block's
        :func:`block_firsts` there (closing it): for a hybrid index or where only the seeds
        reached a unit.
    """
    blocks = scorer.backend
    seed_key = top_seed(keys)
    got = blocks.map("block_firsts", sid, used, seed_key, False, hybrid)
    own = [b for b, _, _ in got]
    if any(b == "walk" for b in own):
        own = [b for b, _, _ in walk_again()]
    own = [b for b in own if b is not None]
    # own: the largest value, ties to the smaller key (the earlier unit of one index)
    best = min(own, key=lambda b: (-b[0], b[1]))[1] if own else None
    firsts = firsts_in_order(best, seed_key if any(k for _, k, _ in got) else None)
    if not firsts:
        return None
    raised = raised_values(firsts, max(t for _, _, t in got))
    real = {}
    for part in blocks.map("block_raise", sid, raised):
        real.update(part)
    logger.debug("MixPR sharded keep_firsts: units %s kept first", firsts)
    return real


def plain_walk_firsts(scorer, query: str, used: str, filters, qvec_of=None) -> list:
    """Each block's :func:`block_firsts` after the plain walk (no seeds; ``qvec_of``: ``() ->``
    the query's dense vector, for a hybrid index, else ``None``) in a session of its own, closed
    here: MixPR's own scores where the seeded session does not hold them."""
    qvec = None if qvec_of is None else qvec_of()
    sid = scorer.new_session()
    try:
        scorer.open(sid, filters)
        used, _ = scorer.score(sid, query, used, qvec, filters)
        return scorer.backend.map("block_firsts", sid, used, None, True)
    finally:
        scorer.backend.map("close", sid)


def kept_hits(chosen, real: dict | None):
    """``(chosen with real scores, info)`` of a selection from the raised scores: the real
    score of each raised unit, and ``{"ranking": ...}`` (the raised order,
    :func:`~longctx.mixpr.seeds.kept_ranking`; ``{}`` without ``real``). ``chosen``: the
    ``(block, local, key, score)`` of :func:`~longctx.corpus.shards.selection.
    select_over_shards`."""
    if real is None:
        return chosen, {}
    ranking = kept_ranking([c[3] for c in chosen])
    return [(b, loc, key, real.get(key, score)) for b, loc, key, score in chosen], {
        "ranking": ranking
    }
