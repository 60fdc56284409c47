"""``longctx.explain`` and ``longctx.mixpr.explain``: every hit says why it was retrieved, and
what it says is the quantity it names (recomputed by hand, summed, and removed)."""

from __future__ import annotations

import json
import math

import networkx as nx
import numpy as np
import pytest

from longctx.explain import SUM_TOLERANCE, explanation_text, make_explanation
from longctx.mixpr import MixPRIndex
from longctx.types import META_EXPLANATION, hit_metadata
from tests.test_mixpr_multihop import BRIDGE, BRIDGE_Q

ALICE = [
    "Alice found a bottle on the table. The bottle said drink me, and Alice drank it.",
    "The white rabbit ran past Alice with a pocket watch and a pair of gloves.",
    "The pocket watch was two days wrong, said the hatter, and the rabbit was late.",
    "A tea party with the hatter and the march hare under a tree.",
    "The queen shouted off with her head at the croquet game with flamingos.",
    "Alice grew tall after the cake and cried a pool of tears in the hall.",
]
IDS = [t.split("\n")[0] for t in BRIDGE]


def _sum_ok(expl):
    total = math.fsum(expl["parts"].values())
    assert abs(total - expl["score"]) <= SUM_TOLERANCE * max(1.0, abs(expl["score"]))
    assert math.isclose(math.fsum(expl["shares"].values()), 1.0, abs_tol=1e-9)


def test_make_explanation_refuses_parts_that_miss_the_score():
    e = make_explanation("mixpr", "pagerank", 1.0, {"a": 0.25, "b": 0.75}, terms=[])
    assert e["shares"] == {"a": 0.25, "b": 0.75}
    with pytest.raises(ValueError, match="sum to"):
        make_explanation("mixpr", "pagerank", 1.0, {"a": 0.25})


def test_explain_is_off_by_default_and_checked():
    index = MixPRIndex.from_texts(ALICE, walk="pagerank")
    r = index.search("pocket watch", k=2)
    assert all(h.explanation is None for h in r.hits)
    assert META_EXPLANATION not in hit_metadata(r.hits[0], "mixpr")
    with pytest.raises(TypeError, match="explain"):
        index.search("pocket watch", k=2, explain="yes")
    on = index.search("pocket watch", k=2, explain=True)
    # the same hits and scores: the explanation is read after the walk, never changes it
    assert [(h.start, h.score) for h in on.hits] == [(h.start, h.score) for h in r.hits]
    assert on.hits == r.hits and "explain" in on.timings


@pytest.mark.parametrize(
    "params",
    [{}, {"solver": "power"}, {"lexical_weight": 0.0}, {"coverage_power": 0.0}],
    ids=["default-push", "power", "no-lexical", "no-coverage"],
)
def test_walk_parts_add_up_and_unsettled_is_within_the_residual(params):
    index = MixPRIndex.from_texts(ALICE, walk="pagerank", **params)
    r = index.search("Who ran with the pocket watch, the rabbit?", k=4, mode="local", explain=True)
    walk = [t for t in r.trace if t.get("stage") == "walk"][0]
    for h in r.hits:
        e = h.explanation
        assert e["method"] == "mixpr" and e["walk"] == "pagerank" and e["score"] == h.score
        _sum_ok(e)
        json.dumps(e)  # JSON-ready as it travels into framework metadata
        assert meta_is(h)
        # what the walk left unsettled is at most its L1 residual (in probability units)
        parts = e["parts"]
        walk_only = parts["walk"] + parts["restart_lexical"] + parts["unsettled"]
        if walk_only > 0:
            assert abs(parts["unsettled"]) <= walk["residual"] * 10
        shares = [t["share"] for t in e["terms"]]
        assert shares == sorted(shares, reverse=True)
    text = explanation_text(r.by_score()[0].explanation)
    assert "restart_lexical" in text and "terms" in text


def meta_is(h) -> bool:
    return hit_metadata(h, "mixpr")[META_EXPLANATION] is h.explanation


def test_top_term_and_seed_recomputed_by_hand_with_networkx():
    """On a small graph: the walk's probabilities are networkx's PageRank of ``S = E W E^T``
    with the index's restart, and the top term's and the top seed's contributions are the
    terms of the fixed-point equation computed from them."""
    index = MixPRIndex.from_texts(ALICE, walk="pagerank", solver="power", tol=1e-13,
                                  lexical_weight=0.0, max_iter=10000)  # fmt: skip
    query = "the rabbit and the pocket watch"
    keep: dict = {}
    st = index._state
    scores, used, _, _ = index._score(st, query, "local", None, None, [], keep=keep)
    assert used == "local"
    p = keep["session"]["p"]
    g = index.graph
    E = g.E.toarray()
    W = np.asarray(g.term_weights)
    S = E @ np.diag(W) @ E.T
    a = index.config.alpha_local
    G = nx.from_numpy_array(S, create_using=nx.DiGraph)
    pr = nx.pagerank(G, alpha=1 - a, personalization=dict(enumerate(p)), tol=1e-15,
                     max_iter=10000, weight="weight")  # fmt: skip
    x = np.array([pr[i] for i in range(len(p))])
    np.testing.assert_allclose(scores, x, atol=1e-9)
    r = index.search(query, k=len(ALICE), mode="local", explain=True)
    terms = index.terms.terms()
    D = S.sum(axis=0)
    checked = 0
    for h in r.hits:
        i = next(u for u in range(index.n_units) if index.starts[u] == h.start
                 and index.unit_source[u] == h.source)  # fmt: skip
        e = h.explanation
        _sum_ok(e)
        assert abs(e["parts"]["unsettled"]) < 1e-9
        assert math.isclose(e["parts"]["restart_lexical"], a * p[i], abs_tol=1e-12)
        if e["terms"]:
            top = e["terms"][0]
            t = terms.index(top["term"])
            by_hand = (1 - a) * E[i, t] * W[t] * float((E[:, t] * x / D).sum())
            assert math.isclose(top["score"], by_hand, rel_tol=1e-6, abs_tol=1e-12)
            # it is the largest of the hit's terms
            others = [(1 - a) * E[i, u] * W[u] * float((E[:, u] * x / D).sum())
                      for u in np.flatnonzero(E[i])]  # fmt: skip
            assert math.isclose(top["score"], max(others), rel_tol=1e-6)
            checked += 1
        if e["seeds"]:
            j = e["seeds"][0]["unit"]
            assert j != i and p[j] > 0
            by_hand = (1 - a) * S[i, j] / D[j] * x[j]
            assert math.isclose(e["seeds"][0]["score"], by_hand, rel_tol=1e-6)
    assert checked >= 3


def test_hybrid_restart_names_its_dense_part():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(len(ALICE), 8)).astype(np.float32)
    index = MixPRIndex.from_texts(ALICE, chunk=False, unit_vectors=vecs, walk="pagerank")
    # the query's vector is unit 4's (the queen): the words match the rabbit's units only
    r = index.search("rabbit pocket watch", k=6, mode="local", query_vector=vecs[4], explain=True)
    by_src = {h.source: h.explanation for h in r.hits}
    for e in by_src.values():
        _sum_ok(e)
    assert by_src[4]["parts"]["restart_dense"] > 0
    assert by_src[4]["parts"]["restart_lexical"] == pytest.approx(0.0, abs=1e-12)
    assert by_src[1]["parts"]["restart_lexical"] > 0


def test_global_mode_explains_the_pagerank():
    index = MixPRIndex.from_texts(ALICE, walk="pagerank")
    r = index.search("summarize the whole story", k=2, mode="global", explain=True)
    for h in r.hits:
        assert h.explanation["walk"] == "global"
        assert h.explanation["parts"] == {"pagerank": h.score}


def _bridge_hit(index, query=BRIDGE_Q, k=3):
    r = index.search(query, k=k, explain=True)
    return {index.doc_ids[h.source]: h for h in r.hits}


def test_multihop_names_the_bridge_phrase_and_removing_it_drops_the_score():
    index = MixPRIndex.from_texts(BRIDGE, ids=IDS, chunk=False, preset="multihop")
    hits = _bridge_hit(index)
    e = hits["Shirley Temple"].explanation
    assert e["walk"] == "multihop"
    _sum_ok(e)
    json.dumps(e)
    top = e["paths"][0]
    assert top["path"][0] == "question" and top["path"][-1] == "hit"
    assert top["path"][1]["doc_id"] == "Kiss and Tell" and top["path"][1]["seed"]
    assert top["path"][2] == {"phrase": "shirley temple"}
    assert top["share"] > 0.5
    # the paths' scores are parts of the walk's part
    assert sum(p["score"] for p in e["paths"]) <= e["parts"]["walk_phrases"] + 1e-12
    # remove the bridge name from the seed passage: the second hop loses its score
    cut = [BRIDGE[0].replace("starring Shirley Temple as", "starring a girl as"), *BRIDGE[1:]]
    without = MixPRIndex.from_texts(cut, ids=IDS, chunk=False, preset="multihop")
    r = without.search(BRIDGE_Q, k=5)
    after = {without.doc_ids[h.source]: h.score for h in r.hits}.get("Shirley Temple", 0.0)
    assert after < 0.5 * hits["Shirley Temple"].score


def test_multihop_question_phrase_path():
    index = MixPRIndex.from_texts(BRIDGE, ids=IDS, chunk=False, preset="multihop")
    e = _bridge_hit(index)["Kiss and Tell"].explanation
    _sum_ok(e)
    assert e["paths"][0]["path"] == ["question", {"phrase": "kiss and tell"}, "hit"]
    assert e["parts"]["walk_question_phrases"] > 0


def test_multihop_hybrid_names_the_dense_part_of_a_seed():
    vecs = np.eye(len(BRIDGE), dtype=np.float32)  # each passage its own direction
    index = MixPRIndex.from_texts(BRIDGE, ids=IDS, chunk=False, preset="multihop",
                                  unit_vectors=vecs)  # fmt: skip
    r = index.search(BRIDGE_Q, k=3, query_vector=vecs[0], explain=True)  # near "Kiss and Tell"
    nodes = [
        p["path"][1]
        for h in r.hits
        for p in h.explanation["paths"]
        if len(p["path"]) == 4 and p["path"][1]["seed"]
    ]
    assert nodes
    for node in nodes:
        share = node["seed_dense_share"]
        assert (share > 0) == (node["doc_id"] == "Kiss and Tell") and 0 <= share <= 1
    for h in r.hits:
        _sum_ok(h.explanation)


def test_explanation_text_names_windows_paths_and_picks():
    yo = make_explanation("youra", "instruction", 1.0, {"tokens": 0.75, "prior": 0.25},
                          window={"index": 2, "tokens": [0, 9]}, attention_before=0.5,
                          attention_after=0.25)  # fmt: skip
    assert "window 2, attention 0.5 -> 0.25" in explanation_text(yo)
    ga = make_explanation("garlic", None, 0.5, {"attention": 0.25, "similarity": 0.25},
                          path=[{"node": "ip-1", "level": 2}, {"node": "c-3", "level": 1}],
                          stop_reason="yes")  # fmt: skip
    assert "path ip-1 -> c-3 (stopped: yes)" in explanation_text(ga)
    mm = make_explanation("mmr", None, 0.5, {"relevance": 0.5},
                          against={"doc_id": "d2", "index": 4, "cosine": 0.9})  # fmt: skip
    assert "redundant with d2#4" in explanation_text(mm)


@pytest.mark.parametrize("solver", ["push", "power"])
def test_the_seeds_walk_shows_as_its_own_part(solver):
    """``seeds=`` (another retriever's hits, :mod:`longctx.mixpr.seeds`) restart a walk of their
    own, added to MixPR's score, each divided by its maximum: the seeded unit's part
    ``seeds_walk`` is its share of that walk, and every other part is MixPR's own divided by
    MixPR's best score."""
    ids = [f"d{i}" for i in range(len(ALICE))]
    index = MixPRIndex.from_texts(ALICE, ids=ids, chunk=False, walk="pagerank", solver=solver)
    query, seeds = "rabbit pocket watch", [("d4", None, None, 1.0)]  # the queen: no query word
    n = len(ALICE)
    r = index.search(query, k=n, mode="local", seeds=seeds, explain=True)
    plain = index.search(query, k=n, mode="local", explain=True)
    by_src = {h.source: h.explanation for h in r.hits}
    mine = {h.source: h.explanation for h in plain.hits}
    for e in (*by_src.values(), *mine.values()):
        if e["score"] > 0:
            _sum_ok(e)
    top = max(h.score for h in plain.hits)
    assert by_src[4]["parts"]["seeds_walk"] == pytest.approx(1.0)  # the seed holds its walk's top
    assert mine[4]["parts"]["restart_lexical"] == 0.0  # without the seed: no restart there
    assert by_src[1]["parts"]["restart_lexical"] > 0
    for part in ("restart_lexical", "walk", "lexical", "dangling"):
        assert by_src[1]["parts"][part] == pytest.approx(mine[1]["parts"][part] / top, abs=1e-12)


def _units_of(index, doc: int) -> list:
    return [u for u in range(index.n_units) if index.unit_source[u] == doc]


@pytest.mark.parametrize(
    "params, filters",
    [({}, None), ({"solver": "power"}, {"n": {"$gte": 1}}), ({"preset": "multihop"}, None)],
    ids=["push", "power-filtered", "multihop"],
)
def test_a_document_hit_is_explained_by_its_best_unit_and_names_its_units(params, filters):
    """``whole_documents=True``: a document scores its best unit's score, so its parts are that
    unit's explanation's (they add up to the document's score); ``units`` names the document's
    units the search scored above 0 (kept by the filter), best first, with their share of the
    document's score."""
    from longctx.explain import explanation_text

    docs = [" ".join(ALICE[i : i + 3]) for i in range(0, len(ALICE), 2)] + [BRIDGE[2]]
    mds = [{"n": i} for i in range(len(docs))]
    index = MixPRIndex.from_texts(docs, metadatas=mds, max_words=12, **params)
    q = "Who ran with the pocket watch, the rabbit?"
    kw = dict(k=3, mode="local", filters=filters)
    r = index.search(q, whole_documents=True, explain=True, **kw)
    plain = index.search(q, whole_documents=True, **kw)
    assert [(h.source, h.index, h.score) for h in r.hits] == [
        (h.source, h.index, h.score) for h in plain.hits
    ] and "explain" in r.timings
    scores, _, _ = index.score(q, mode="local", filters=filters)
    units = index.search(q, k=index.n_units, mode="local", filters=filters, explain=True)
    by_unit = {(h.source, h.index): h.explanation for h in units.hits}
    assert len(r.hits) == 3
    walks = {h.explanation["walk"] for h in r.hits}
    assert walks == ({"multihop"} if params.get("preset") else {"pagerank"})
    for h in r.hits:
        e = h.explanation
        _sum_ok(e)
        best = by_unit[(h.source, h.index)]
        assert (
            e["parts"] == best["parts"]
            and e["walk"] == best["walk"] == units.hits[0].explanation["walk"]
        )
        assert e["unit"]["index"] == h.index and e["unit"]["doc_id"] == index.doc_ids[h.source]
        mine = _units_of(index, h.source)
        scored = sorted((-scores[u], u) for u in mine if scores[u] > 0)
        assert e["units_scored"] == len(scored)
        assert [u["unit"] for u in e["units"]] == [u for _, u in scored[:5]]
        assert e["units"][0]["unit"] == e["unit"]["unit"] and e["units"][0]["share"] == 1.0
        for u in e["units"]:
            assert u["score"] == pytest.approx(scores[u["unit"]], abs=1e-12)
            assert u["share"] == pytest.approx(scores[u["unit"]] / h.score)
        json.dumps(e)
    assert "units #" in explanation_text(r.hits[0].explanation)


def test_a_fallback_the_multihop_walk_leaves_is_explained_by_its_pagerank():
    """A filtered question that reaches no kept unit falls back to the PageRank; the multi-hop
    walk runs and finds nothing either, so the scores stay the fallback's: their explanation
    is the PageRank (part ``"pagerank"``), not the multi-hop walk's parts, which summed to 0
    and raised (review 18)."""
    from longctx.mixpr.seeds import Seed
    from tests._fixtures import SEED_BOOK, SEED_OTHER

    docs = [SEED_BOOK, SEED_OTHER, SEED_OTHER + " " + SEED_BOOK[:200]]
    mds = [{"p": 0}, {"p": 1}, {"p": 0}]
    index = MixPRIndex.from_texts(docs, ids=["a", "b", "c"], metadatas=mds)
    q = "Fishermen mended their nets in silence."
    for seeds in (None, [Seed("a", score=1.0)]):
        kw = dict(k=4, filters={"p": 1}, seeds=seeds)
        r = index.search(q, explain=True, **kw)
        plain = index.search(q, **kw)
        assert r.mode == "global-fallback" and r.trace[0]["walk"] == "multihop"
        assert r.hits and [h.score for h in r.hits] == [h.score for h in plain.hits]
        for h in r.hits:
            assert h.explanation["parts"] == {"pagerank": h.score} and h.score > 0
            _sum_ok(h.explanation)
        d = index.search(q, k=1, filters={"p": 1}, seeds=seeds, whole_documents=True, explain=True)
        assert d.hits[0].explanation["parts"] == {"pagerank": d.hits[0].score}
