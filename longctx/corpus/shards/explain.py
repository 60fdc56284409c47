"""Why a sharded MixPR search returned each hit (``ShardedMixPRIndex.search(explain=True)``):
the explanations :meth:`MixPRIndex.search(explain=True) <longctx.mixpr.index.MixPRIndex.search>`
gives for the same corpus, from the same pieces (:func:`longctx.mixpr.explain.explain_walk`),
gathered over the shards while the search's scoring session is still open on them.

Two round trips after the selection, both sized by the hits, never by the corpus:

1. each shard holding hits sends what its hits hold (:func:`~longctx.mixpr.explain.walk_hit_facts`:
   their rows of ``E``, walk mass, restart probability, cosines);
2. every shard sends its part of the walk's inflow through the hits' terms (the entries of
   those terms' columns in its units) and its best restart units for each hit, described
   (:func:`~longctx.mixpr.explain.walk_inflow`); the driver sums the inflows (the walk's
   reduction over the shards, as each walk step sums ``E_s^T v_s``), keeps the best seeds
   over the shards (ties to the earlier unit, as one index) and composes the explanations
   (:func:`~longctx.mixpr.explain.compose_walk`) with the corpus's term weights and names.

So a hit's parts, terms and seeds are those of one index over the same documents up to the
float rounding of the walk (the sharded walk equals one index's within ~1e-15: its scores,
hence its parts); ``seeds`` name corpus-wide unit numbers (``unit``), as one index numbers its
units. A bordered walk (``personalization="query"``) sends its query nodes' columns with the
inflow, summed the same way (:func:`~longctx.mixpr.explain.query_columns`), and the driver
makes its part ``"question"`` from them and the query
(:func:`~longctx.mixpr.explain.query_node_flow`). A global query's hits, and a local query's
that fell back to global, are explained by their PageRank (the part ``"pagerank"``).
"""

from __future__ import annotations

import time

import numpy as np

from longctx.explain import check_explain
from longctx.mixpr.explain import (
    compose_walk,
    global_explanations,
    hit_rows,
    join_facts,
    merge_seeds,
    query_node_flow,
    seeds_only,
    term_namer,
)

__all__ = ["check_sharded_explain", "explain_chosen"]


def check_sharded_explain(index, explain, mode: str) -> bool:
    """``explain`` (a bool, else ``TypeError`` naming it: :func:`longctx.explain.check_explain`)
    for a query routed to ``mode``: every walk of a sharded index is explained (the factored
    graph, restarting on the units or on the query nodes), a global query or a local one that
    falls back to global by its PageRank, as :meth:`MixPRIndex.search
    <longctx.mixpr.index.MixPRIndex.search>` explains them."""
    return check_explain(explain)


def explain_chosen(index, sid, used: str, chosen: list, timings: dict, query=None) -> list[dict]:
    """The explanations of a sharded search's hits, in the order of ``chosen``; the seconds
    they took go to ``timings["explain"]``.

    Parameters
    ----------
    index : ShardedMixPRIndex
    sid : session id
        The search's scoring session, still open on every live shard.
    used : str
        The mode the search used (``"local"``, ``"global"``, ``"global-fallback"``).
    chosen : list of ``(block, local unit, corpus key, score)``
        The hits (:func:`~longctx.corpus.shards.selection.select_over_shards`).
    query : str, optional
        The query: a bordered walk's (``personalization="query"``) query nodes are made again
        from it (:func:`~longctx.mixpr.explain.query_node_flow`).

    Returns
    -------
    list of dict
        One explanation per hit (:mod:`longctx.explain`; the parts of
        :func:`~longctx.mixpr.explain.explain_walk`).

    Raises
    ------
    longctx.corpus.shards.backends.ShardDied
        A shard's actor died (the search is tried again).
    """
    t0 = time.perf_counter()
    out = _explain(index, sid, used, chosen, query)
    timings["explain"] = time.perf_counter() - t0
    return out


def _explain(index, sid, used: str, chosen: list, query) -> list[dict]:
    scores = [float(c[3]) for c in chosen]
    if used != "local" or not chosen:
        return global_explanations(scores)
    g = index._global
    live = g["live"]
    by_shard: dict[int, list[int]] = {}
    for h, c in enumerate(chosen):
        by_shard.setdefault(live[c[0]], []).append(h)
    shards = sorted(by_shard)
    order = [h for s in shards for h in by_shard[s]]  # the hits as the shards send them
    got = index._run(
        {
            s: ("explain_facts", (sid, np.asarray([chosen[h][1] for h in by_shard[s]], np.int64)))
            for s in shards
        }
    )
    facts = join_facts([got[s] for s in shards])
    in_order = [scores[h] for h in order]
    if facts["seeds_only"]:
        return seeds_only(scores)
    terms = np.unique(facts["indices"])
    W = g["weights"]
    wt = W[terms] if W is not None else np.ones(len(terms))
    keys = np.asarray([chosen[h][2] for h in order], np.int64)
    rows = hit_rows(facts, terms, wt)
    parts = index._run({s: ("explain_inflow", (sid, terms, rows, keys)) for s in live})
    u = np.zeros(len(parts[live[0]][0]))  # terms (and a bordered walk's query columns)
    for s in live:  # the walk's reduction over the shards, in shard order
        u += parts[s][0]
    d = sum(parts[s][1] for s in live)
    u = query_node_flow(index.config, g["stats"], query, facts, u)  # a bordered walk's
    seeds = [[(v, unit) for v, _, unit in hit] for hit in merge_seeds([parts[s][2] for s in live])]
    made = compose_walk(
        index.config, facts, terms, u, d, wt, seeds, term_namer(g["stats"]), in_order
    )
    out: list = [None] * len(chosen)
    for e, h in zip(made, order):
        out[h] = e
    return out
