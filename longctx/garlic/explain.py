"""Why GARLIC's search visited a chunk: the path of nodes from the top level that led to it,
the parts of the score that chose it and where the search stopped.

GARLIC (``../shared/papers/004_781b27fa367f089e.txt``, sec. 3.2.2) picks the next node by
``(1 - alpha) z + alpha sim``: ``z = E^T a`` the attention the LLM paid to the visited nodes
(``a``: each visited node's attention to the question times its position), carried along the
graph's edges ``E`` (parent rows -> child columns), and ``sim`` the embedding similarity to the
question, each normalized over the unvisited nodes (:mod:`longctx.garlic.search`). A chunk's
*parent on the path* is the visited node that sent it the most of ``z``, ``E_pc a_p``; following
parents back gives the path from a top-level node. Read after the search from its record, for
the returned chunks only.
"""

from __future__ import annotations

from longctx.explain import make_explanation

__all__ = ["explain_visits"]


def explain_visits(searcher, result, alpha: float) -> dict:
    """Explanations of the visited chunks of a search, keyed by ``(source, start, end)`` as
    :class:`~longctx.types.Passage` gives them.

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
        ``(source, start, end) -> explanation``: parts ``top_level`` (a node of the top level,
        read first, score 1) or ``attention`` (``(1 - alpha) z``) and ``similarity``
        (``alpha sim``); ``path`` (node ids and levels from the top level to the chunk),
        ``visit`` (its position in visit order, 0 first), ``attention`` (its own attention to
        the question), ``stop_reason`` and ``steps`` (where the search stopped).
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

    src_pos = searcher.source_positions()
    stop = {"stop_reason": result.info.get("stop_reason"), "steps": result.info.get("steps")}
    out = {}
    for t, p in enumerate(order):
        if g.levels[p] != 1 or g.starts[p] < 0:
            continue
        nid = g.ids[p]
        if t < n_top:
            score, parts = 1.0, {"top_level": 1.0}
        else:
            e = chosen[nid]
            score = float(e["score"])
            sim = alpha * float(e["similarity"])
            parts = {"attention": score - sim, "similarity": sim}
        key = (int(src_pos[g.sources[p]]), int(g.starts[p]), int(g.ends[p]))
        out[key] = make_explanation(
            "garlic", None, score, parts, path=path(p), visit=t, attention=att[nid], **stop
        )
    return out
