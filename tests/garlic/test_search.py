"""GARLIC Dynamic Graph Search on a tiny random Llama and hand-written graphs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from longctx.embeddings import CallableEncoder
from longctx.garlic.search import GarlicSearcher, as_search_graph
from tests.garlic._graphs import STORY, hash_embed, make_graph

QUESTION = "Where did Tom Kitten lose his clothes?"


@pytest.fixture(scope="module")
def graph(smollm2_tokenizer):
    return make_graph((STORY,), tokenizer=smollm2_tokenizer)


@pytest.fixture(scope="module")
def searcher(graph, tiny_model, smollm2_tokenizer):
    return GarlicSearcher(
        graph, tiny_model, smollm2_tokenizer, encoder=CallableEncoder(hash_embed), max_new_tokens=4
    )


@pytest.fixture(scope="module")
def full_result(searcher):
    return searcher.search(QUESTION, stop_patience=50)


def _full_pass(model, ids):
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    lp = torch.log_softmax(out.logits[0, -1].float(), -1)
    att = torch.stack([a[0].float() for a in out.attentions]).mean(dim=(0, 1))  # (n, n)
    return lp, att


def test_cached_search_equals_full_recompute(searcher, full_result, tiny_model):
    """Margins and attention scores of the KV-cached search equal those of one full eager pass
    over each step's whole prompt (attention maps averaged over layers and heads)."""
    r = full_result
    assert r.info["stop_reason"] == "empty_frontier"
    g = searcher.graph
    pos = {nid: p for p, nid in enumerate(g.ids)}
    prefix, (qs, qe), suffix = searcher.prompt_pieces(QUESTION)
    order = [pos[n] for n in r.info["visited"]]
    n_top = len(g.top)
    yes, no = searcher._yes_id, searcher._no_id
    for entry in r.trace:
        k = n_top + entry["step"]
        ids, spans = list(prefix), []
        for p in order[:k]:
            t = searcher.node_token_ids(p)
            spans.append((len(ids), len(ids) + len(t)))
            ids += t
        lp, att = _full_pass(tiny_model, ids + suffix)
        assert entry["prompt_tokens"] == len(ids) + len(suffix)
        assert abs(float(lp[yes] - lp[no]) - entry["margin"]) < 1e-4
        a = [float(att[s:e, qs:qe].mean()) for s, e in spans]
        if entry["step"] == 0:
            np.testing.assert_allclose(entry["attention"], a, atol=1e-4, rtol=0)
        else:
            assert abs(entry["attention"] - a[-1]) < 1e-4
            assert abs(entry["weighted_attention"] - a[-1] * (k + 1)) < 1e-4


def test_next_node_rule(searcher, full_result):
    """Each chosen node maximizes (1 - alpha) z + alpha sim over the unvisited nodes, with
    z = E^T a (a: position-weighted attention) and both terms normalized to sum 1."""
    g = searcher.graph
    r = full_result
    pos = {nid: p for p, nid in enumerate(g.ids)}
    sim = np.clip(g.embeddings @ hash_embed([QUESTION])[0], 0, None)
    att = {n["id"]: n["attention"] for n in r.info["visited_nodes"]}
    visited = list(r.info["visited"])
    n_top = len(g.top)
    for entry in r.trace[1:]:
        k = n_top + entry["step"] - 1
        a = np.zeros(len(g))
        for i, nid in enumerate(visited[:k]):
            a[pos[nid]] = att[nid] * (i + 2)
        free = np.ones(len(g), bool)
        free[[pos[n] for n in visited[:k]]] = False
        z = np.where(free, g.edges.T @ a, 0)
        s = np.where(free, sim, 0)
        total = 0.5 * (z / z.sum() if z.sum() else z) + 0.5 * (s / s.sum())
        total[~free] = -1
        assert g.ids[int(np.argmax(total))] == entry["node"] == visited[k]
        assert abs(total.max() - entry["score"]) < 1e-6


def test_tokens_run_and_reencode(searcher, full_result):
    r = full_result
    assert r.info["tokens_run"] == r.trace[-1]["tokens_run"]
    assert r.info["final_prompt_tokens"] <= r.info["tokens_run"]
    assert r.info["tokens_run"] <= 1.2 * r.info["final_prompt_tokens"]
    assert r.info["steps"] == len(r.trace) == len(r.info["visited"]) - len(searcher.graph.top) + 1
    re = searcher.search(QUESTION, stop_patience=50, reencode=True)
    assert re.info["visited"] == r.info["visited"]
    np.testing.assert_allclose(
        [t["margin"] for t in re.trace], [t["margin"] for t in r.trace], atol=1e-4
    )
    assert re.info["tokens_run"] > 2 * r.info["tokens_run"]


def test_hits_are_visited_chunks_with_exact_spans(full_result):
    hits = full_result.hits
    assert len(hits) == 7  # every chunk was visited before the frontier emptied
    assert [h.start for h in hits] == sorted(h.start for h in hits)
    for h in hits:
        assert STORY[h.start : h.end] == h.text
    ips = [n for n in full_result.info["visited_nodes"] if n["level"] == 2]
    assert [n["position"] for n in ips] == [2, 3, 4]


class _Scripted(GarlicSearcher):
    """Margins from a script, to test the stop rules independently of the random model."""

    script: list = []

    def _margin(self, logits):
        return self.script.pop(0) if self.script else -1.0


def _scripted(graph, model, tok, script, **kw):
    s = _Scripted(graph, model, tok, encoder=CallableEncoder(hash_embed), max_new_tokens=2, **kw)
    s.script = list(script)
    return s


def test_stop_patience(graph, tiny_model, smollm2_tokenizer):
    r = _scripted(graph, tiny_model, smollm2_tokenizer, [1.0]).search(QUESTION)
    assert r.info["stop_reason"] == "yes" and r.info["steps"] == 1
    assert r.hits == () and len(r.info["visited"]) == 3
    r = _scripted(graph, tiny_model, smollm2_tokenizer, [1.0, -1.0, 2.0, 3.0]).search(
        QUESTION, stop_patience=3
    )
    assert r.info["stop_reason"] == "yes" and r.info["steps"] == 4
    assert [t["decision"] for t in r.trace] == ["Yes", "No", "Yes", "Yes"]
    assert len(r.hits) == 3


def test_max_context_tokens_stop(searcher, full_result):
    limit = full_result.trace[2]["prompt_tokens"]
    r = searcher.search(QUESTION, stop_patience=50, max_context_tokens=limit, answer=False)
    assert r.info["stop_reason"] == "max_context_tokens"
    assert r.info["final_prompt_tokens"] == limit
    assert r.info["visited"] == full_result.info["visited"][:5]
    assert r.info["answer"] is None


def test_empty_frontier_with_attention_only(graph, tiny_model, smollm2_tokenizer):
    """alpha=0: only children of visited nodes can be reached; an IP graph whose edges all point
    to one chunk leaves the others unreachable."""
    import scipy.sparse as sp

    g = make_graph((STORY,), tokenizer=smollm2_tokenizer)
    e = g.edges.toarray()
    e[e > 0] = 0
    e[7:, 0] = 1.0
    g.edges = sp.csr_array(e)
    s = GarlicSearcher(g, tiny_model, smollm2_tokenizer, encoder=CallableEncoder(hash_embed),
                       alpha=0.0, stop_patience=9)  # fmt: skip
    r = s.search(QUESTION, answer=False)
    assert r.info["stop_reason"] == "empty_frontier"
    assert r.info["visited"][3:] == ["d0-c0"]


def test_answer_is_generated_from_the_cache(searcher):
    r = searcher.search(QUESTION, max_new_tokens=3)
    assert isinstance(r.info["answer"], str)
    assert 0 < r.info["answer_tokens"] <= 3


def test_bad_input(searcher, graph, tiny_model, smollm2_tokenizer):
    with pytest.raises(ValueError, match="query"):
        searcher.search("   ")
    with pytest.raises(ValueError, match="max_context_tokens"):
        searcher.search("why " * 400, max_context_tokens=300)
    with pytest.raises(ValueError, match="top level"):
        searcher.search(QUESTION, max_context_tokens=100)
    with pytest.raises(ValueError, match="alpha"):
        searcher.search(QUESTION, alpha=1.5)
    with pytest.raises(ValueError, match="stop_patience"):
        searcher.search(QUESTION, stop_patience=0)
    bad = make_graph((STORY,), tokenizer=smollm2_tokenizer)
    for n in bad.nodes.values():
        if n["level"] == 1:
            n["n_tokens"] *= 3
    with pytest.raises(ValueError, match="another tokenizer"):
        GarlicSearcher(bad, tiny_model, smollm2_tokenizer, encoder=CallableEncoder(hash_embed)
                       ).search(QUESTION)  # fmt: skip
    other_dim = CallableEncoder(lambda t: hash_embed(t, dim=16))
    with pytest.raises(ValueError, match="encoder"):
        GarlicSearcher(graph, tiny_model, smollm2_tokenizer, encoder=other_dim).search(QUESTION)


def test_search_graph_view(graph):
    g = as_search_graph(graph)
    assert len(g) == 10 and list(g.levels) == [1] * 7 + [2] * 3
    assert list(g.top) == [7, 8, 9]
    np.testing.assert_allclose(g.edges.sum(axis=1)[7:], 1.0)


def test_overlong_query_is_refused_before_any_model_pass(searcher):
    from longctx.checks import MAX_QUERY_CHARS

    with pytest.raises(ValueError, match="query is .* over the limit"):
        searcher.search("why " * (MAX_QUERY_CHARS // 4 + 1))


def test_reached_chunks_descend_from_information_points(searcher, graph, tiny_model):
    """A search that stops on the top level (information points only) still maps to source
    text: the chunks under each visited IP, heavier edges first, each chunk once."""
    g = searcher.graph
    ips = [p for p in range(len(g.ids)) if g.levels[p] == 2]
    first = ips[0]
    lo, hi = g.edges.indptr[first], g.edges.indptr[first + 1]
    kids, w = g.edges.indices[lo:hi], g.edges.data[lo:hi]
    want = [int(k) for k in kids[np.argsort(-w, kind="stable")] if g.levels[k] == 1]
    assert searcher.reached_chunks([g.ids[first]]) == want
    every = searcher.reached_chunks([g.ids[p] for p in ips])
    assert every[: len(want)] == want and len(every) == len(set(every))
    assert all(g.levels[p] == 1 for p in every)
    with pytest.raises(ValueError, match="visited_ids"):
        searcher.reached_chunks(["no such node"])

    class _StopAtOnce(GarlicSearcher):
        def _margin(self, logits):
            return 1.0  # "enough" at the first decision

    s = _StopAtOnce(
        graph, tiny_model, searcher.tokenizer, encoder=CallableEncoder(hash_embed),
        max_new_tokens=2,
    )  # fmt: skip
    r = s.search(QUESTION)
    assert r.hits == ()  # only IPs were visited
    passages = s.reached_passages(r)
    assert passages and all(STORY[p.start : p.end] == p.text for p in passages)
    assert max(p.score for p in passages) == 1.0
