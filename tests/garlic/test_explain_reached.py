"""``GarlicSearcher.reached_passages`` with ``explain=True``: a chunk reached under a visited
information point names that node, the node's own path from the top level (as
``info["explanations"]`` gives it) and the edges down to the chunk; every visited node, not only
the chunks, is explained in ``info["explanations"]``."""

from __future__ import annotations

import json
import math

import pytest

from longctx.embeddings import CallableEncoder
from longctx.garlic.search import GarlicSearcher
from tests.garlic._graphs import STORY, hash_embed, make_graph

QUESTION = "Where did Tom Kitten lose his clothes?"


class _StopAtOnce(GarlicSearcher):
    def _margin(self, logits):
        return 1.0  # "enough" at the first decision: only the top level (IPs) is visited


@pytest.fixture(scope="module")
def graph(smollm2_tokenizer):
    return make_graph((STORY,), tokenizer=smollm2_tokenizer)


def _check_reached(s, r):
    g = s.graph
    pos = {nid: p for p, nid in enumerate(g.ids)}
    nodes = r.info["explanations"]
    passages = s.reached_passages(r)
    assert passages
    for h in passages:
        e = h.explanation
        assert json.loads(json.dumps(e)) == e
        assert e["method"] == "garlic" and e["walk"] == "reached" and e["score"] == h.score
        assert math.isclose(sum(e["parts"].values()), h.score, rel_tol=1e-12, abs_tol=1e-15)
        via = nodes[e["via"]["node"]]
        assert e["via"]["parts"] == via["parts"] and e["via"]["visit"] == via["visit"]
        assert e["stop_reason"] == r.info["stop_reason"]
        visited_part = [n for n in e["path"] if n["visited"]]
        assert [{"node": n["node"], "level": n["level"]} for n in visited_part] == via["path"]
        down = [n["node"] for n in e["path"][len(visited_part) - 1 :]]
        for a, b in zip(down, down[1:]):  # each step down: an edge of the graph
            assert g.edges[pos[a], pos[b]] > 0
        last = pos[e["path"][-1]["node"]]
        assert (g.starts[last], g.ends[last], g.levels[last]) == (h.start, h.end, 1)
    return passages


def test_reached_under_information_points(graph, tiny_model, smollm2_tokenizer):
    s = _StopAtOnce(graph, tiny_model, smollm2_tokenizer, encoder=CallableEncoder(hash_embed),
                    max_new_tokens=2)  # fmt: skip
    plain = s.search(QUESTION, answer=False)
    assert all(p.explanation is None for p in s.reached_passages(plain))
    r = s.search(QUESTION, answer=False, explain=True)
    assert r.hits == ()  # only IPs were visited
    assert set(r.info["explanations"]) == set(r.info["visited"])
    passages = _check_reached(s, r)
    assert all(not p.explanation["path"][-1]["visited"] for p in passages)
    assert [p.score for p in passages] == [p.score for p in s.reached_passages(plain)]


def test_every_visited_node_explained(graph, tiny_model, smollm2_tokenizer):
    s = GarlicSearcher(graph, tiny_model, smollm2_tokenizer, encoder=CallableEncoder(hash_embed),
                       max_new_tokens=2)  # fmt: skip
    r = s.search(QUESTION, stop_patience=50, answer=False, explain=True)
    assert set(r.info["explanations"]) == set(r.info["visited"])
    passages = _check_reached(s, r)
    # a chunk is explained by the visited node it was first reached under (its reach rank)
    first = {}
    for nid in r.info["visited"]:
        for p in s.reached_chunks([nid]):
            first.setdefault(p, nid)
    pos = {nid: p for p, nid in enumerate(s.graph.ids)}
    for h in passages:
        assert first[pos[h.explanation["path"][-1]["node"]]] == h.explanation["via"]["node"]
    # the visited chunks: explained in info as their hits say
    assert r.hits
    for h in r.hits:
        nid = h.explanation["path"][-1]["node"]
        assert r.info["explanations"][nid] == h.explanation
