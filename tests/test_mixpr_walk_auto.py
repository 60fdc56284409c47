"""``walk="auto"``, the default (issue 37): the phrase graph per index for a corpus of passages,
the multi-hop walk per query when it names one of its phrases, the choice in the result's
trace; head phrases from headings, title lines, file names and metadata."""

from __future__ import annotations

import time

import numpy as np
import pytest

from longctx.mixpr import MixPRIndex
from longctx.mixpr.phrases import (
    PhraseGraph,
    file_title,
    heading_lines,
    title_phrases,
    unit_heads,
)
from longctx.mixpr.router import PASSAGE_UNITS_PER_DOCUMENT, choose_walk, plan_walk
from tests.test_mixpr_multihop import BRIDGE, BRIDGE_Q


def _walk(result) -> dict:
    steps = [t for t in result.trace if t.get("stage") == "route"]
    assert len(steps) == 1, result.trace
    return steps[0]


@pytest.mark.parametrize(
    "walk, n_docs, n_units, phrases, corpus",
    [
        ("auto", 1, 500, False, "one document"),
        ("auto", 1, 1, False, "one document"),
        ("auto", 991, 991, True, "passages"),
        ("auto", 10, 10 * int(PASSAGE_UNITS_PER_DOCUMENT), True, "passages"),
        ("auto", 10, 10 * int(PASSAGE_UNITS_PER_DOCUMENT) + 1, False, "long documents"),
        ("pagerank", 991, 991, False, "passages"),
        ("multihop", 1, 500, True, "one document"),
    ],
)
def test_plan_walk(walk, n_docs, n_units, phrases, corpus):
    plan = plan_walk(walk, n_docs, n_units)
    assert plan["phrases"] is phrases and plan["corpus"] == corpus
    # the rule is a ratio: ten times the corpus, the same plan
    assert plan_walk(walk, 10 * n_docs, 10 * n_units)["phrases"] is phrases or n_docs == 1


def test_choose_walk_rules():
    plan = plan_walk("auto", 100, 100)
    assert choose_walk(plan, "local", ["kiss and tell"], 1)["walk"] == "multihop"
    assert choose_walk(plan, "local", ["france"], 0)["walk"] == "multihop"
    assert choose_walk(plan, "local", [], 0)["walk"] == "pagerank"
    assert choose_walk(plan, "global", ["france"], 1)["walk"] == "pagerank"
    assert choose_walk(plan, "global-fallback", ["france"], 1)["walk"] == "multihop"
    assert choose_walk(plan_walk("multihop", 100, 100), "local")["walk"] == "multihop"
    assert choose_walk(plan_walk("auto", 1, 100), "local", ["x"], 1)["walk"] == "pagerank"
    with pytest.raises(ValueError, match="walk"):
        plan_walk("sideways", 2, 2)


def test_default_takes_the_multihop_walk_on_passages_and_says_so():
    ids = [t.split("\n")[0] for t in BRIDGE]
    auto = MixPRIndex.from_texts(BRIDGE, ids=ids, chunk=False)
    assert auto.config.walk == "auto" and auto._state.phrases is not None
    r = auto.search(BRIDGE_Q, k=2)
    step = _walk(r)
    assert step["walk"] == "multihop" and "kiss and tell" in step["named"]
    assert {auto.doc_ids[h.source] for h in r.hits} == {"Kiss and Tell", "Shirley Temple"}
    # the same ranking as the multihop preset for that query
    mh = MixPRIndex.from_texts(BRIDGE, ids=ids, chunk=False, preset="multihop")
    np.testing.assert_allclose(auto.score(BRIDGE_Q)[0], mh.score(BRIDGE_Q)[0], atol=1e-12)
    # a query that names nothing: the PageRank walk, as walk="pagerank" ranks it
    q = "which actress was a diplomat?"
    plain = MixPRIndex.from_texts(BRIDGE, ids=ids, chunk=False, walk="pagerank")
    assert _walk(auto.search(q, k=2))["walk"] == "pagerank"
    np.testing.assert_allclose(auto.score(q)[0], plain.score(q)[0], atol=1e-12)
    # an explicit walk wins
    assert _walk(plain.search(BRIDGE_Q, k=2))["walk"] == "pagerank"
    assert _walk(mh.search(q, k=2))["walk"] == "multihop"
    # a global query keeps PageRank
    assert _walk(auto.search("Summarize the whole document", k=2))["walk"] == "pagerank"
    assert _walk(auto.search(BRIDGE_Q, k=2, whole_documents=True))["walk"] == "multihop"


def test_one_document_builds_no_phrase_graph_and_ranks_as_pagerank():
    text = "\n\n".join(BRIDGE * 4)
    auto = MixPRIndex.from_texts(text)
    plain = MixPRIndex.from_texts(text, walk="pagerank")
    assert auto._state.phrases is None and auto._state.walk_plan["corpus"] == "one document"
    np.testing.assert_array_equal(auto.score(BRIDGE_Q)[0], plain.score(BRIDGE_Q)[0])
    r = auto.search(BRIDGE_Q, k=3)
    assert _walk(r) == {**_walk(r), "walk": "pagerank", "reason": "one document"}


def test_inserts_and_deletes_rank_as_a_fresh_build():
    ids = [t.split("\n")[0] for t in BRIDGE]
    # one document, then passages inserted: the phrase graph appears once it is a corpus
    ix = MixPRIndex.from_texts(BRIDGE[:1], ids=ids[:1], chunk=False)
    assert ix._state.phrases is None
    ix.insert(BRIDGE[1:], ids=ids[1:])
    fresh = MixPRIndex.from_texts(BRIDGE, ids=ids, chunk=False)
    assert ix._state.phrases is not None
    np.testing.assert_allclose(ix.score(BRIDGE_Q)[0], fresh.score(BRIDGE_Q)[0], atol=1e-12)
    ix.delete(ids[3:])
    small = MixPRIndex.from_texts(BRIDGE[:3], ids=ids[:3], chunk=False)
    np.testing.assert_allclose(ix.score(BRIDGE_Q)[0], small.score(BRIDGE_Q)[0], atol=1e-12)
    # back to one document: no phrase graph
    ix.delete(ids[1:3])
    assert ix._state.phrases is None


MD = "# Shirley Temple\n\nAn actress.\n\n## Diplomacy\n\nShe was Chief of Protocol.\n"
RST = "Kiss and Tell\n=============\n\nA 1945 film.\n\nCast\n----\n\nShirley Temple.\n"
HTML = "<html><title>Meet Corliss Archer</title><h2 class='x'><b>Radio</b> show</h2><p>..</p>"


def test_heading_lines_of_markdown_rst_and_html():
    assert [h for _, h in heading_lines(MD)] == ["Shirley Temple", "Diplomacy"]
    assert [h for _, h in heading_lines(RST)] == ["Kiss and Tell", "Cast"]
    assert [h for _, h in heading_lines(HTML)] == ["Meet Corliss Archer", "Radio"]
    assert heading_lines("no heading here\njust text") == []
    assert title_phrases("Kiss and Tell (1945 film)") == [
        "kiss and tell 1945 film",
        "kiss and tell",
    ]
    assert title_phrases("## [Shirley Temple](https://x.org/a_b)") == ["shirley temple"]


@pytest.mark.parametrize(
    "name, title",
    [
        ("docs/Shirley_Temple.md", "Shirley Temple"),
        ("https://en.wikipedia.org/wiki/Kiss_and_Tell_(1945_film)", "Kiss and Tell (1945 film)"),
        ("C:\\notes\\chief-of-protocol.txt", "chief of protocol"),
        ("17", None),
        ("3f2b9c1e-aaaa-bbbb-cccc-0123456789ab", None),
        ("", None),
    ],
)
def test_file_title(name, title):
    assert file_title(name) == title


def test_unit_heads_from_the_document_structure():
    texts = [MD, "an untitled passage about nothing", "Plain text naming no one at all."]
    starts = [0, MD.index("## Diplomacy"), 0, 0]
    ends = [MD.index("## Diplomacy"), len(MD), len(texts[1]), len(texts[2])]
    heads = unit_heads(
        texts, [0, 0, 1, 2], starts, ends, doc_ids=["a.md", "notes/Corliss_Archer.txt", "7"],
        metadatas=[{}, {}, {"title": "Meet Millie"}],
    )  # fmt: skip
    assert heads[0] == ["shirley temple", "a"] or heads[0][0] == "shirley temple"
    assert "diplomacy" in heads[1] and "shirley temple" in heads[1]
    assert heads[2] == ["corliss archer"]
    assert heads[3] == ["meet millie"]
    with pytest.raises(ValueError, match="heads"):
        PhraseGraph.from_texts(["a", "b"], heads=[["x"]])


def test_file_names_head_untitled_passages():
    """A passage with no title line whose file name names it is reached from a mention."""
    texts = [
        "The woman who starred in Kiss and Tell later became a diplomat, Shirley Temple.",
        "She served as Chief of Protocol of the United States from 1976.",
        "Busch drew comics in Germany.",
    ]
    ids = ["films/Kiss_and_Tell.txt", "people/Shirley_Temple.txt", "people/Wilhelm_Busch.txt"]
    ix = MixPRIndex.from_texts(texts, ids=ids, chunk=False)
    g = ix._state.phrases
    col = g.lookup(["shirley temple"])
    assert len(col) and g.heads[[1], col].sum() == 1
    r = ix.search("Which office did the star of Kiss and Tell hold?", k=2)
    assert _walk(r)["walk"] == "multihop"
    assert {ix.doc_ids[h.source] for h in r.hits} == set(ids[:2])


@pytest.mark.parametrize(
    "unit",
    ["<h1" * 50 + "x", "#" * 200 + "\n", "a\n" + "=" * 300 + "x\n", "<title>" + "y" * 400],
)
def test_heading_lines_linear(unit):
    """1x and 4x the input (1 and 4 MB, both past the CPU caches): about 4x the time, not 16x
    (no quadratic backtracking); best of 7 interleaved runs each."""

    small, large = (unit * (c // len(unit)) for c in (1_000_000, 4_000_000))
    best = [1e9, 1e9]
    for _ in range(7):  # interleaved, so a busy machine slows both alike
        for i, text in enumerate((small, large)):
            t0 = time.perf_counter()
            heading_lines(text)
            best[i] = min(best[i], time.perf_counter() - t0)
    assert best[1] / max(best[0], 1e-6) < 8, best


def test_sharded_default_keeps_pagerank():
    from longctx.corpus.shards.index import ShardedMixPRIndex

    ix = ShardedMixPRIndex.from_texts(BRIDGE, shards=2, chunk=False)
    try:
        assert ix.config.walk == "pagerank"
        assert ix.search(BRIDGE_Q, k=2).hits
    finally:
        close = getattr(ix, "close", None)
        if close:
            close()


def test_default_matches_the_multihop_preset_on_hotpotqa_corpus(shared_data):
    """``hotpotqa-corpus`` (20 questions): the default's R@5 within a point of the preset's."""
    from longctx.eval.tasks import load_task, passage_recall

    corpus = load_task("hotpotqa-corpus", shared_data, 20)
    passages = list(corpus.passages)
    auto = MixPRIndex.from_texts(passages, chunk=False)
    mh = MixPRIndex.from_texts(passages, chunk=False, preset="multihop")
    rec = {"auto": [], "mh": []}
    for q in corpus.questions:
        for name, ix in (("auto", auto), ("mh", mh)):
            s = ix.score(q.query, "auto")[0]
            rec[name].append(passage_recall(np.argsort(-s, kind="stable")[:5].tolist(), q.gold))
    assert np.mean(rec["auto"]) >= np.mean(rec["mh"]) - 0.01, rec
