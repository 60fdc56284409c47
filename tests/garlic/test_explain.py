"""``longctx.garlic.explain``: each visited chunk names the path from the top level that led
to it (the parent that sent it the most of ``z = E^T a``), the parts of the score that chose
it and where the search stopped; checked against the search's own trace."""

from __future__ import annotations

import json
import math

import pytest

from longctx.embeddings import CallableEncoder
from longctx.garlic.search import GarlicSearcher
from tests.garlic._graphs import STORY, hash_embed, make_graph

QUESTION = "Where did Tom Kitten lose his clothes?"


@pytest.fixture(scope="module")
def searcher(smollm2_tokenizer, tiny_model):
    graph = make_graph((STORY,), tokenizer=smollm2_tokenizer)
    return GarlicSearcher(
        graph, tiny_model, smollm2_tokenizer, encoder=CallableEncoder(hash_embed), max_new_tokens=4
    )


def test_paths_parts_and_stop(searcher):
    plain = searcher.search(QUESTION, stop_patience=50, answer=False)
    r = searcher.search(QUESTION, stop_patience=50, answer=False, explain=True)
    assert plain.hits == r.hits and all(h.explanation is None for h in plain.hits)
    g = searcher.graph
    pos = {nid: p for p, nid in enumerate(g.ids)}
    visited = list(r.info["visited"])
    att = {n["id"]: n["attention"] for n in r.info["visited_nodes"]}
    top = {g.ids[int(p)] for p in g.top}
    chosen = {e["node"]: e for e in r.trace if e.get("node") is not None}
    assert r.hits and any(len(h.explanation["path"]) > 1 for h in r.hits)
    for h in r.hits:
        e = h.explanation
        json.dumps(e)
        assert e["method"] == "garlic" and e["score"] == h.score
        assert math.isclose(sum(e["parts"].values()), h.score, rel_tol=1e-12, abs_tol=1e-15)
        assert e["stop_reason"] == r.info["stop_reason"]
        path = [n["node"] for n in e["path"]]
        assert path[0] in top and e["path"][-1]["level"] == 1
        assert visited.index(path[-1]) == e["visit"]
        # each step of the path: an edge of the graph, from a node visited earlier
        for a, b in zip(path, path[1:]):
            assert visited.index(a) < visited.index(b)
            assert g.edges[pos[a], pos[b]] > 0
        if len(path) > 1:  # the parent sent the most of z = E^T a among the nodes visited before
            b = pos[path[-1]]
            before = visited[: visited.index(path[-1])]

            def sent(q, b=b):
                return float(g.edges[pos[q], b]) * att[q] * (visited.index(q) + 2)

            assert sent(path[-2]) == max(sent(q) for q in before)
            c = chosen[path[-1]]
            assert e["parts"]["similarity"] == pytest.approx(searcher.alpha * c["similarity"])
