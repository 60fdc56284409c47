"""Why GARLIC's search visited a chunk: the path of nodes from the top level that led to it,
the parts of the score that chose it and where the search stopped.

GARLIC (Wang, Xiang, Gui and He, "GARLIC: LLM-Guided Dynamic Progress Control with
Hierarchical Weighted Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.2.2) picks the next node by
``(1 - alpha) z + alpha sim``: ``z = E^T a`` the attention the LLM paid to the visited nodes
(``a``: each visited node's attention to the question times its position), carried along the
graph's edges ``E`` (parent rows -> child columns), and ``sim`` the embedding similarity to the
question, each normalized over the unvisited nodes (:mod:`longctx.garlic.search`). A chunk's
*parent on the path* is the visited node that sent it the most of ``z``, ``E_pc a_p``; following
parents back gives the path from a top-level node. Read after the search from its record, for
the visited nodes only (:func:`explain_nodes`, :func:`explain_visits`); a chunk *reached* under
a visited information point (:meth:`~longctx.garlic.search.GarlicSearcher.reached_passages`)
gets the explanation of the visited node it was reached from plus the edges down to it
(:func:`explain_reached`).
"""

from __future__ import annotations

from longctx.explain import make_explanation

__all__ = ["explain_nodes", "explain_visits", "explain_reached"]


def explain_nodes(searcher, result, alpha: float) -> dict:
    """Explanations of every visited node of a search (chunks and information points), by id.

    Parameters
    ----------
    searcher : GarlicSearcher
    result : SearchResult
        Its :meth:`~longctx.garlic.search.GarlicSearcher.search` result (``info["visited"]``,
        ``info["visited_nodes"]``, ``trace``).
    alpha : float
        The mix the search used.

    Returns
    -------
    dict
        ``node id -> explanation`` (:func:`longctx.explain.make_explanation`, JSON-ready):
        parts ``top_level`` (a node of the top level, read first, score 1) or ``attention``
        (``(1 - alpha) z``) and ``similarity`` (``alpha sim``); ``path`` (node ids and levels
        from the top level to the node), ``visit`` (its position in visit order, 0 first),
        ``attention`` (its own attention to the question), ``stop_reason`` and ``steps`` (where
        the search stopped).
    """
    g = searcher.graph
    visited = list(result.info["visited"])
    pos = {nid: p for p, nid in enumerate(g.ids)}
    order = [pos[nid] for nid in visited]
    att = {n["id"]: float(n["attention"]) for n in result.info["visited_nodes"]}
    # a: the position-weighted attention of each visited node (question = position 1)
    a = {p: att[g.ids[p]] * (t + 2) for t, p in enumerate(order)}
    chosen = {e["node"]: e for e in result.trace if e.get("node") is not None}
    n_top = len(g.top)
    parent: dict[int, int | None] = {}
    for t, p in enumerate(order):
        if t < n_top:
            parent[p] = None
            continue
        best, best_w = None, 0.0
        for q in order[:t]:  # the visited nodes when p was chosen
            lo, hi = g.edges.indptr[q], g.edges.indptr[q + 1]
            hit = (g.edges.indices[lo:hi] == p).nonzero()[0]
            w = float(g.edges.data[lo + hit[0]]) * a[q] if len(hit) else 0.0
            if w > best_w:
                best, best_w = q, w
        parent[p] = best

    def path(p: int) -> list[dict]:
        out = []
        while p is not None and len(out) <= len(order):
            out.append({"node": g.ids[p], "level": int(g.levels[p])})
            p = parent[p]
        return out[::-1]

    stop = {"stop_reason": result.info.get("stop_reason"), "steps": result.info.get("steps")}
    out = {}
    for t, p in enumerate(order):
        nid = g.ids[p]
        if t < n_top:
            score, parts = 1.0, {"top_level": 1.0}
        else:
            e = chosen[nid]
            score = float(e["score"])
            sim = alpha * float(e["similarity"])
            parts = {"attention": score - sim, "similarity": sim}
        out[nid] = make_explanation(
            "garlic", None, score, parts, path=path(p), visit=t, attention=att[nid], **stop
        )
    return out


def explain_visits(searcher, result, nodes: dict) -> dict:
    """The visited chunks' explanations (``nodes``: :func:`explain_nodes`), keyed by
    ``(source, start, end)`` as :class:`~longctx.types.Passage` gives them."""
    g = searcher.graph
    src_pos = searcher.source_positions()
    pos = {nid: p for p, nid in enumerate(g.ids)}
    out = {}
    for nid in result.info["visited"]:
        p = pos[nid]
        if g.levels[p] == 1 and g.starts[p] >= 0:
            out[(int(src_pos[g.sources[p]]), int(g.starts[p]), int(g.ends[p]))] = nodes[nid]
    return out


def explain_reached(searcher, score: float, via: int, down: list[int], nodes: dict) -> dict:
    """Why a chunk was reached (:meth:`~longctx.garlic.search.GarlicSearcher.reached_passages`).

    Parameters
    ----------
    searcher : GarlicSearcher
    score : float
        The reached passage's score (``1 - rank / n`` by reach order).
    via : int
        Graph position of the visited node the chunk was reached from (the chunk itself when
        it was visited).
    down : list of int
        Graph positions from ``via`` (excluded) down to the chunk (included), along the graph's
        edges; empty when the chunk was visited.
    nodes : dict
        :func:`explain_nodes` of the search.

    Returns
    -------
    dict
        :func:`longctx.explain.make_explanation` with the one part ``reach`` (the score: the
        chunk's rank in reach order), ``via`` (the visited node: ``node``, ``level``, ``visit``,
        ``score`` and the ``parts`` that chose it), ``path`` (the visited node's path from the
        top level, then the edges down to the chunk, each step with ``"visited"``),
        ``stop_reason`` and ``steps``.
    """
    g = searcher.graph
    e = nodes[g.ids[via]]
    path = [{**n, "visited": True} for n in e["path"]]
    path += [{"node": g.ids[p], "level": int(g.levels[p]), "visited": False} for p in down]
    return make_explanation(
        "garlic",
        "reached",
        score,
        {"reach": score},
        via={
            "node": g.ids[via],
            "level": int(g.levels[via]),
            "visit": e["visit"],
            "score": e["score"],
            "parts": e["parts"],
        },
        path=path,
        stop_reason=e["stop_reason"],
        steps=e["steps"],
    )
