"""Dense seeds (``MixPRIndex.search(seeds=...)``): another retriever's hits as the walk's restart,
mapped to units by their character spans, with no embedding call (issue 45)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest

from longctx.mixpr import MixPRIndex, Seed
from longctx.mixpr import seeds as seeds_mod
from longctx.mixpr.seeds import (
    MAX_SEEDS,
    check_seeds,
    hit_seed,
    pick_parent,
    rank_weight,
    seed_units,
)

TEXTS = [
    "The harbour master counted the ships at dawn. The gulls circled above the grey pier. "
    "A lantern swung from the mast of the oldest boat. Fishermen mended their nets in silence.",
    "Deep in the forest the owl watched the clearing. The fox crossed the frozen stream. "
    "Snow covered the path to the woodcutter's hut. Smoke rose from its crooked chimney.",
    "The professor wrote equations on the blackboard. His students copied every symbol. "
    "Chalk dust drifted through the afternoon light. The bell rang and nobody moved.",
]


@pytest.fixture(scope="module")
def index():
    return MixPRIndex.from_texts(TEXTS, ids=["sea", "wood", "school"], max_words=8)


def _brute(index, doc, a, b):
    """The units of ``doc`` overlapping ``[a, b)`` and their overlaps, by a pass over all."""
    out = {}
    for j in range(index.n_units):
        if int(index.unit_source[j]) != doc:
            continue
        ov = min(int(index.ends[j]), b) - max(int(index.starts[j]), a)
        if ov > 0:
            out[j] = ov
    return out


def test_seed_units_are_the_overlapped_units_weighted_by_shared_characters(index):
    st = index._state
    rng = np.random.default_rng(0)
    for _ in range(200):
        d = int(rng.integers(len(TEXTS)))
        a = int(rng.integers(len(TEXTS[d]) - 1))
        b = int(rng.integers(a + 1, len(TEXTS[d]) + 1))
        units, w = seed_units(
            [Seed(index.doc_ids[d], a, b, 2.0)], st.positions, st.texts, st.unit_source,
            st.starts, st.ends,
        )  # fmt: skip
        want = _brute(index, d, a, b)
        assert units.tolist() == sorted(want)
        tot = sum(want.values())
        np.testing.assert_allclose(w, [2.0 * want[j] / tot for j in sorted(want)])


def test_seeds_on_one_unit_add_up_and_a_whole_document_spreads(index):
    st = index._state
    args = (st.positions, st.texts, st.unit_source, st.starts, st.ends)
    units, w = seed_units([Seed("wood", 0, 10, 1.0), Seed("wood", 0, 10, 0.5)], *args)
    assert units.tolist() == [int(np.flatnonzero(index.unit_source == 1)[0])]
    assert w.tolist() == [1.5]
    units, w = seed_units([Seed("school")], *args)
    assert units.tolist() == np.flatnonzero(index.unit_source == 2).tolist()
    assert w.sum() == pytest.approx(1.0)


def test_a_seed_is_located_by_its_text_when_offsets_are_missing_or_stale(index, caplog):
    st = index._state
    args = (st.positions, st.texts, st.unit_source, st.starts, st.ends)
    phrase = "The fox crossed the frozen stream."
    a = TEXTS[1].index(phrase)
    want, _ = seed_units([Seed("wood", a, a + len(phrase))], *args)
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.seeds"):
        got, _ = seed_units([Seed("wood", None, None, 1.0, phrase)], *args)
        stale, _ = seed_units([Seed("wood", 0, len(phrase), 1.0, phrase)], *args)
        none, _ = seed_units([Seed("wood", None, None, 1.0, "no such words"), Seed("nope")], *args)
    assert got.tolist() == want.tolist() == stale.tolist()
    assert none.tolist() == []
    assert "1 of documents the index does not hold, 1 not found" in caplog.text


@pytest.mark.parametrize(
    ("seeds", "err", "match"),
    [
        ("sea", TypeError, "seeds must be a sequence"),
        ([("sea", 5, 2)], ValueError, r"seeds\[0\]: end \(2\) must be greater"),
        ([("sea", 5, None)], ValueError, "both start and end"),
        ([("sea", -1, 4)], ValueError, r"seeds\[0\].start must be >= 0"),
        ([("sea", 0, 4, float("nan"))], ValueError, "finite"),
        ([("sea", 0, 4, -1.0)], ValueError, ">= 0"),
        ([(3, 0, 4)], TypeError, "doc_id must be a str"),
        ([{"doc_id": "sea", "bogus": 1}], TypeError, r"seeds\[0\]: not a seed"),
        ([("sea",)] * (MAX_SEEDS + 1), ValueError, "at most"),
    ],
)
def test_bad_seeds_are_refused_naming_the_seed(index, seeds, err, match):
    with pytest.raises(err, match=match):
        check_seeds(seeds)
    with pytest.raises(err, match=match):
        index.search("ships", k=2, seeds=seeds)


def test_seeds_pull_the_walk_to_units_the_query_shares_no_term_with(index):
    q = "Where were the ships counted?"
    plain = index.search(q, k=3, mode="local")
    assert {h.source for h in plain.hits} == {0}
    chalk = TEXTS[2].index("Chalk dust")
    seeded = index.search(q, k=3, mode="local", seeds=[("school", chalk, chalk + 20, 1.0)])
    texts = [h.text for h in seeded.hits]
    assert any("Chalk dust" in t for t in texts)
    assert "seeds" in seeded.timings
    # the index is not changed by a seeded search
    again = index.search(q, k=3, mode="local")
    assert [(h.source, h.start) for h in again.hits] == [(h.source, h.start) for h in plain.hits]


def test_seeds_respect_filters_and_global_queries_ignore_them():
    ix = MixPRIndex.from_texts(
        TEXTS, ids=["sea", "wood", "school"], metadatas=[{"k": 0}, {"k": 1}, {"k": 1}],
        max_words=8,
    )  # fmt: skip
    chalk = TEXTS[2].index("Chalk dust")
    seeds = [("school", chalk, chalk + 20, 1.0)]
    r = ix.search("the ships", k=3, mode="local", seeds=seeds, filters={"k": 0})
    assert {h.source for h in r.hits} == {0}
    g = ix.search("summarize everything", k=3, mode="global", seeds=seeds)
    assert g.hits == ix.search("summarize everything", k=3, mode="global").hits


def test_a_hybrid_index_given_seeds_makes_no_embedding_call():
    calls = []

    def enc(texts):
        calls.append(len(texts))
        rng = np.random.default_rng(len(calls))
        return rng.normal(size=(len(texts), 4))

    ix = MixPRIndex.from_texts(TEXTS, ids=["sea", "wood", "school"], encoder=enc, max_words=8)
    built = list(calls)
    r = ix.search("the ships", k=2, mode="local", seeds=[("sea", 0, 30, 1.0)])
    assert calls == built and r.hits


def test_hit_seed_rule():
    held = {"book", "chunk-1"}.__contains__
    assert hit_seed(held, 0, "chunk-1", "book", 5, 9, "text") == Seed("chunk-1", None, None, 1.0)
    assert hit_seed(held, 1, "c2", "book", 5, 9, "text") == Seed("book", 5, 9, 0.5, "text")
    assert hit_seed(held, 2, "c2", "book", None, None, "text") == Seed(
        "book", None, None, rank_weight(2), "text"
    )
    assert hit_seed(held, 0, "c2", "other", 5, 9, "t") is None
    assert rank_weight(3) == 0.25


def test_hit_seed_with_candidate_parents_picks_the_page_that_holds_the_hit():
    """Several documents of one source (a loader's pages): the held ones are candidates, in
    order; the first holding the hit's text at ``start`` is its parent (issue 45)."""
    pages = {"p0": "alpha beta gamma", "p1": "delta epsilon zeta", "p2": "eta beta theta"}
    held = {"p0", "p2"}.__contains__
    read = []

    def text_of(c):
        read.append(c)
        return pages[c]

    got = hit_seed(held, 0, None, ("p0", "p1", "p2"), 4, 8, "beta", text_of)
    assert got == Seed("p2", 4, 8, 1.0, "beta") and read == ["p0", "p2"]
    got = hit_seed(held, 0, None, ("p0", "p2"), None, None, "beta", text_of)
    assert got == Seed("p0", 6, 10, 1.0, "beta")  # no offset: the first that contains it
    assert hit_seed(held, 0, None, ("p0", "p2"), 0, 4, "zeta", text_of) is None
    read.clear()  # one parent: no text read here (seed_units checks the span)
    assert hit_seed(held, 1, None, ("p2",), 4, 8, "beta", text_of) == Seed("p2", 4, 8, 0.5, "beta")
    assert hit_seed(held, 1, None, "p2", 4, 8, "beta", text_of) == Seed("p2", 4, 8, 0.5, "beta")
    assert read == []
    assert hit_seed(held, 0, None, ("p1",), 4, 8, "beta", text_of) is None
    assert hit_seed(held, 0, None, ("p1", "p2"), 4, 8, "beta") == Seed("p2", 4, 8, 1.0, "beta")


class _Counted(str):
    """A page text that counts the full-text searches made in it."""

    finds = 0

    def find(self, *args):
        _Counted.finds += 1
        return super().find(*args)


def test_a_thousand_pages_cost_one_check_per_page_and_no_search():
    texts = [_Counted(f"Page {i} of the ledger. " * 20) for i in range(1000)]
    ids = [f"p{i}" for i in range(1000)]
    read = []

    def text_of(c):
        read.append(c)
        return texts[int(c[1:])]

    _Counted.finds = 0
    for page in (3, 500, 999):
        text = texts[page][24:60]
        assert pick_parent(ids, text_of, 24, str(text)) == (f"p{page}", 24)
    assert len(read) == 4 + 501 + 1000 and _Counted.finds == 0


def test_the_text_search_fallback_is_bounded(monkeypatch, caplog):
    texts = {f"p{i}": "word " * 100 + ("needle here " if i == 9 else "") for i in range(10)}
    assert pick_parent(list(texts), texts.__getitem__, None, "needle here") == ("p9", 500)
    monkeypatch.setattr(seeds_mod, "MAX_LOCATE_CHARS", 5 * 500)
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.seeds"):
        assert pick_parent(list(texts), texts.__getitem__, None, "needle here") is None
    assert "none of its 10 candidate documents (5 not searched" in caplog.text
    # a candidate past the bound is skipped, the next ones still searched (review, session 16)
    long = {"big": "word " * 1000, **{f"p{i}": texts[f"p{i}"] for i in range(8, 10)}}
    assert pick_parent(list(long), long.__getitem__, None, "needle here") == ("p9", 500)


def test_the_hybrid_score_is_mixprs_plus_the_seeds_walk_each_by_its_maximum(index):
    """issue 45: the seeds restart a walk of their own, added to MixPR's own score, each divided
    by its maximum, so a few seeded units do not swamp the walk (a fixed share of one restart
    did): MixPR's best unit and the best seed each weigh 1."""
    q = "Where were the ships counted?"
    chalk = TEXTS[2].index("Chalk dust")
    seeds = [("school", chalk, chalk + 20, 1.0), ("wood", 0, 20, 0.5)]
    plain, _, _ = index.score(q, "local")
    # a question that reaches no unit: the seeds' walk alone (its best unit at 1)
    only, used, _ = index.score("zzzz qqqq", "local", seeds=seeds)
    assert used == "local" and only.max() == pytest.approx(1.0)
    j = int(np.flatnonzero((index.unit_source == 2) & (index.starts <= chalk))[-1])
    assert only[j] == only.max()  # the best seed's unit
    hybrid, used, _ = index.score(q, "local", seeds=seeds)
    np.testing.assert_allclose(hybrid, plain / plain.max() + only, atol=1e-12)
    # a 50-fold seed score changes nothing: the seeds' walk is divided by its maximum
    heavy, _, _ = index.score(q, "local", seeds=[(d, a, b, 50 * w) for d, a, b, w in seeds])
    np.testing.assert_allclose(heavy, hybrid, atol=1e-12)


def test_the_seeded_search_keeps_mixprs_best_hit_and_adds_the_seeds(index):
    q = "Where were the ships counted?"
    plain = index.search(q, k=1, mode="local").hits[0]
    chalk = TEXTS[2].index("Chalk dust")
    seeds = [("school", chalk, chalk + 20, 1.0)]
    hits = index.search(q, k=2, mode="local", seeds=seeds).hits
    assert (plain.source, plain.start) in {(h.source, h.start) for h in hits}
    assert any("Chalk dust" in h.text for h in hits)


def test_on_the_multihop_walk_the_seeds_weigh_passages_and_the_first_hop_is_mixprs():
    """issue 45: on a corpus of passages (the multi-hop walk) the seeds are the walk's passage
    weights (HippoRAG 2's dense passage scores), and its first hop is MixPR's own score: adding
    the seeds' walk there too would count the seeds twice."""
    from tests.test_mixpr_multihop import BRIDGE, BRIDGE_Q

    ids = [f"p{i}" for i in range(len(BRIDGE))]
    ix = MixPRIndex.from_texts(BRIDGE, ids=ids, chunk=False)
    seeds = [(ids[-1], None, None, 1.0), (ids[2], None, None, 0.5)]
    r = ix.search(BRIDGE_Q, k=3, mode="local", seeds=seeds)
    assert r.trace[0]["walk"] == "multihop"
    got, _, _ = ix.score(BRIDGE_Q, "local", seeds=seeds)
    st = ix._state
    keep: dict = {}
    ix._score(st, BRIDGE_Q, "local", None, None, None, None, keep)  # plain: MixPR's first hop
    plain_first = keep["session"]["scores"]
    plain_first = plain_first.dense() if hasattr(plain_first, "dense") else plain_first
    dense = np.zeros(ix.n_units)
    dense[[len(BRIDGE) - 1, 2]] = [1.0, 0.5]
    want = st.ranker().scores(BRIDGE_Q, plain_first, dense)
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("sharded", [False, True])
def test_a_callable_is_asked_for_the_seeds_of_a_local_query_only(sharded):
    """``seeds=`` a callable: called once for a local query, never for a global one (the app's
    retriever and its query embedding are spared); its seeds act as the same list would."""
    if sharded:
        from longctx.corpus.shards import ShardedMixPRIndex

        ix = ShardedMixPRIndex.from_texts(
            TEXTS, ids=["sea", "wood", "school"], max_words=8, shards=2, use_ray=False
        )
    else:
        ix = MixPRIndex.from_texts(TEXTS, ids=["sea", "wood", "school"], max_words=8)
    seeds = [Seed("school", 0, 90, 1.0)]
    calls = []

    def ask():
        calls.append(1)
        return seeds

    ix.search("Give me a summary of the whole text", k=2, seeds=ask)
    ix.search("the owl", k=2, mode="global", seeds=ask)
    assert calls == []
    got = ix.search("Where did the fox cross?", k=3, seeds=ask)
    assert calls == [1]
    want = ix.search("Where did the fox cross?", k=3, seeds=seeds)
    assert [(h.source, h.start, h.score) for h in got.hits] == [
        (h.source, h.start, h.score) for h in want.hits
    ]
    assert "seeds" in got.timings
    with pytest.raises(TypeError, match=r"seeds\(\)\[0\]"):
        ix.search("Where did the fox cross?", k=3, seeds=lambda: [42])


class _CountingTexts(Sequence):
    """Texts with stored ``lengths`` that count the texts read (decoded)."""

    def __init__(self, texts):
        self._t = list(texts)
        self.lengths = np.array([len(t) for t in texts], dtype=np.int64)
        self.reads = 0

    def __len__(self):
        return len(self._t)

    def __getitem__(self, i):
        self.reads += 1
        return self._t[i]


def test_a_whole_document_seed_reads_the_stored_length_not_the_text(index, tmp_path):
    """A whole-document seed needs the document's length only: a sequence that keeps
    ``lengths`` (a mapped index's texts) is not read, and the units and weights are those of
    the plain texts (issue 45 review)."""
    st = index._state
    seeds = check_seeds([Seed("wood", score=1.0), Seed("sea", None, None, 0.5)])
    texts = _CountingTexts(TEXTS)
    got = seed_units(seeds, st.positions, texts, st.unit_source, st.starts, st.ends)
    want = seed_units(seeds, st.positions, list(TEXTS), st.unit_source, st.starts, st.ends)
    assert texts.reads == 0
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=0, atol=0)
    assert len(got[0]) == int((st.unit_source != 2).sum())
    index.save(tmp_path / "ix")
    mapped = MixPRIndex.load(tmp_path / "ix", mmap=True)
    decoded = []
    real = mapped._state.texts._text
    mapped._state.texts._text = lambda i: decoded.append(i) or real(i)
    mst = mapped._state
    got = seed_units(seeds, mst.positions, mst.texts, mst.unit_source, mst.starts, mst.ends)
    assert decoded == []
    np.testing.assert_array_equal(got[0], want[0])


def test_a_seed_past_two_to_the_31_is_clipped_to_its_units(index):
    """Offsets are accepted without an upper bound and clipped to the document's units; the
    index holds its units' offsets as int32 where they fit (issue 46), so the overlap is
    computed in int64 (numpy 2 refuses a Python int past int32 beside an int32 array)."""
    doc = index.doc_ids[1]
    far = index.search("Where were the ships counted?", k=3, mode="local",
                       seeds=[Seed(doc, 0, 2**40, 1.0)])  # fmt: skip
    whole = index.search("Where were the ships counted?", k=3, mode="local",
                         seeds=[Seed(doc, None, None, 1.0)])  # fmt: skip
    assert [h.start for h in far.hits] == [h.start for h in whole.hits]
    assert [h.score for h in far.hits] == pytest.approx([h.score for h in whole.hits])


def test_a_sharded_search_retried_after_a_shard_died_asks_the_app_once(monkeypatch):
    """A search retried after a shard's actor died (``_with_retry``) reuses the seeds the
    app's retriever gave: it is asked (and embeds the query) once (review, session 16)."""
    from longctx.corpus.shards import ShardedMixPRIndex
    from longctx.corpus.shards import index as sharded_mod

    ix = ShardedMixPRIndex.from_texts(
        TEXTS, ids=["sea", "wood", "school"], max_words=8, shards=2, use_ray=False
    )
    calls, died = [], []
    real = ix._search_once

    def dies_once(*a):
        if not died:
            died.append(1)
            a[-1]()  # the seeds asked, then the shard dies
            raise sharded_mod.ShardDied([0])
        return real(*a)

    monkeypatch.setattr(ix, "_search_once", dies_once)
    monkeypatch.setattr(ix, "_restart", lambda shards: None)

    def ask():
        calls.append(1)
        return [Seed("school", 0, 90, 1.0)]

    got = ix.search("Where did the fox cross?", k=3, seeds=ask)
    assert died == [1] and calls == [1] and got.hits


def _warnings(caplog):
    return [r for r in caplog.records if r.levelno >= logging.WARNING and "seeds" in r.name]


def test_seeds_none_of_which_is_found_warn_the_user_to_act(caplog):
    """An app that read the corpus with other line endings gives seeds whose text is in no
    document: the search is MixPR's own, and a WARNING says why and what to do (an INFO line
    only when some are found)."""
    crlf = [t.replace(". ", ".\r\n") for t in TEXTS]
    idx = MixPRIndex.from_texts(crlf, ids=["sea", "wood", "school"], max_words=8)
    q = "Who crossed the frozen stream?"
    app = [Seed(d, 0, 60, 1.0, t[:60]) for d, t in zip(["sea", "wood"], TEXTS)]  # "\n" only
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.seeds"):
        got = idx.search(q, k=2, seeds=app)
    assert [(h.start, h.end) for h in got.hits] == [
        (h.start, h.end) for h in idx.search(q, k=2).hits
    ]
    (w,) = _warnings(caplog)
    assert "none of the 2 seeds was found" in w.getMessage()
    assert "newline=''" in w.getMessage() and "CorpusIndex.text" in w.getMessage()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.seeds"):
        idx.search(q, k=2, seeds=[*app, Seed("wood", 0, 60, 1.0, crlf[1][:60])])
    assert _warnings(caplog) == []
    assert "1 not found in their document" not in caplog.text  # 2 of 3 not found: INFO
    assert "2 not found in their document" in caplog.text


def test_sharded_seeds_none_of_which_is_found_warn_once(caplog):
    from longctx.corpus.shards.index import ShardedMixPRIndex

    idx = ShardedMixPRIndex.from_texts(TEXTS, ids=["sea", "wood", "school"], shards=2)
    app = [Seed("sea", None, None, 1.0, "not\r\nthere"), Seed("elsewhere", 0, 5, 1.0)]
    with caplog.at_level(logging.INFO, logger="longctx"):
        idx.search("Who crossed the frozen stream?", k=2, mode="local", seeds=app)
    (w,) = _warnings(caplog)
    assert "none of the 2 seeds was found" in w.getMessage()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="longctx"):
        idx.search("Who crossed the frozen stream?", k=2, mode="local", seeds=[*app, Seed("wood")])
    assert _warnings(caplog) == []
