"""``longctx.mixpr.phrases`` and ``longctx.mixpr.multihop``: phrases found by hand, the graph's
arrays, inserts and deletes, the walk's second hop, its checks, and (shared data) the lift on
hotpotqa-corpus."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from longctx.mixpr.multihop import MultiHopRanker, MultiHopWalk
from longctx.mixpr.phrases import PhraseExtractor, PhraseGraph

FILM = (
    "Kiss and Tell (1945 film)\nKiss and Tell is a 1945 American comedy film starring then "
    "17-year-old Shirley Temple as Corliss Archer."
)
ACTRESS = (
    "Shirley Temple\nShirley Temple Black was an American actress, singer, dancer and "
    "diplomat, who served as Chief of Protocol of the United States."
)
RADIO = "Meet Millie\nMeet Millie is a radio comedy about a woman who held a government job."
SEQUEL = (
    "A Kiss for Corliss\nA Kiss for Corliss is a 1949 American comedy film, the sequel to the "
    "film Kiss and Tell, with David Niven."
)
NIVEN = "David Niven\nDavid Niven was a British actor, soldier and novelist."
UNITS = [FILM, ACTRESS, RADIO, SEQUEL, NIVEN]
QUESTION = (
    "What government position was held by the woman who portrayed Corliss Archer in the film "
    "Kiss and Tell?"
)


def test_phrases_are_capitalised_spans_and_their_subspans():
    ex = PhraseExtractor()
    got = ex.phrases(
        "Roger O. Egeberg met the No. 2 Squadron RAAF in St. Louis; Poison's album. "
        "The Beatles and Ludwig van Beethoven. He left Élodie Café."
    )
    for p in ("roger o egeberg", "egeberg", "2 squadron raaf", "st louis", "poison", "beatles"):
        assert p in got
    assert "ludwig van beethoven" in got and "van beethoven" not in got  # no connector edge
    assert "elodie cafe" in got  # accents folded
    assert not {"the", "he", "no", "o"} & set(got)  # sentence starts and initials alone
    assert ex.phrases("no names here at all.") == []
    assert "shirley temple" in ex.phrases(ACTRESS)  # sub-span of "Shirley Temple Black"
    assert "shirley temple" not in PhraseExtractor(subspans=False).phrases(ACTRESS[15:])


def test_heads_are_the_title_line_or_the_first_span():
    ex = PhraseExtractor()
    assert ex.heads(FILM) == ["kiss and tell 1945 film", "kiss and tell"]
    assert ex.heads("Brown County, Kansas\nA county.") == ["brown county kansas", "brown county"]
    # no title line: the first capitalised span
    assert ex.heads("Shirley Temple Black served in Prague.") == ["shirley temple black"]
    assert ex.heads("nothing capitalised") == []


def test_query_candidates_need_a_capitalised_word():
    ex = PhraseExtractor()
    got = ex.query_candidates(QUESTION)
    assert "kiss and tell" in got and "corliss archer" in got
    assert "government" not in got and "woman" not in got
    assert "government" in ex.query_candidates(QUESTION, any_case=True)


def test_graph_arrays_and_checks():
    g = PhraseGraph.from_texts(UNITS)
    assert g.mentions.shape == g.heads.shape == (5, g.n_phrases)
    j = g.vocabulary.index("shirley temple")
    assert g.heads[[1]].toarray()[0, j] == 1 and g.mentions[[0]].toarray()[0, j] == 1
    assert g.df[j] == 2
    assert g.lookup(["shirley temple", "nobody", "shirley temple"]).tolist() == [j]
    with pytest.raises(TypeError, match="texts"):
        PhraseGraph.from_texts(FILM)
    with pytest.raises(ValueError, match="repeat"):
        PhraseGraph(["a", "a"], g.mentions[:, :2], g.heads[:, :2])
    with pytest.raises(ValueError, match="heads has shape"):
        PhraseGraph(g.vocabulary, g.mentions, g.heads[:2])
    bad = g.mentions.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="mentions must hold finite"):
        PhraseGraph(g.vocabulary, bad, g.heads)
    with pytest.raises(TypeError, match="scipy.sparse"):
        PhraseGraph(g.vocabulary, g.mentions.toarray(), g.heads)


def test_extend_and_without_match_a_fresh_build():
    ranker = MultiHopRanker(PhraseGraph.from_texts(UNITS))
    grown = PhraseGraph.from_texts(UNITS[:2]).extend(UNITS[2:])
    assert grown.vocabulary == ranker.graph.vocabulary
    assert (grown.mentions != ranker.graph.mentions).nnz == 0
    assert (grown.heads != ranker.graph.heads).nnz == 0
    first = np.array([1.0, 0.0, 0.6, 0.4, 0.0])
    # deleting units 2 and 4 ranks the rest as a fresh build of the three
    cut = MultiHopRanker(ranker.graph.without([2, 4]))
    fresh = MultiHopRanker(PhraseGraph.from_texts([UNITS[i] for i in (0, 1, 3)]))
    np.testing.assert_allclose(
        cut.scores(QUESTION, first[[0, 1, 3]]), fresh.scores(QUESTION, first[[0, 1, 3]]), atol=1e-9
    )
    with pytest.raises(ValueError, match="rows"):
        ranker.graph.without([7])


def test_walk_reaches_the_second_hop():
    ranker = MultiHopRanker.from_texts(UNITS)
    # a lexical first hop: the film first, then the passages that share the question's words
    # (the radio show: "woman", "held", "government")
    first = np.array([1.0, 0.0, 0.6, 0.5, 0.0])
    scores = ranker.scores(QUESTION, first)
    order = np.argsort(-scores).tolist()
    assert order[:2] == [0, 1]  # the film, then the actress it names (no word of the question)
    assert np.argsort(-first).tolist()[1] == 2  # where the first hop had the radio show
    # without the heads and links the actress is no longer second
    flat = MultiHopRanker.from_texts(UNITS, MultiHopWalk(head_weight=0, link_boost=0))
    assert np.argsort(-flat.scores(QUESTION, first)).tolist()[1] != 1
    # the query's names alone seed the walk too
    assert np.argsort(-ranker.scores(QUESTION)).tolist()[0] == 0


def test_allowed_units_filter_seeds_and_results():
    ranker = MultiHopRanker.from_texts(UNITS)
    first = np.array([1.0, 0.0, 0.6, 0.5, 0.0])
    allowed = np.array([False, True, True, True, True])
    s = ranker.scores(QUESTION, first, allowed=allowed)
    assert s[0] == 0.0 and s[1:].max() > 0
    # the film is no seed, but its name still leads the walk to the actress it mentions
    assert s[1] > 0
    with pytest.raises(ValueError, match="allowed"):
        ranker.scores(QUESTION, first, allowed=[1, 0, 1, 1, 1])


def test_walk_mass_is_a_distribution():
    ranker = MultiHopRanker.from_texts(UNITS, MultiHopWalk(max_iter=200, tol=0.0))
    w = ranker.query_phrases(QUESTION)
    assert w.min() >= 0 and w[ranker.graph.vocabulary.index("kiss and tell")] > 0
    assert w[ranker.graph.vocabulary.index("kiss")] == 0  # only the longest match
    r_u = np.array([0.5, 0, 0, 0, 0])
    mass, arrived = ranker._iterate(r_u, np.zeros(len(ranker._cols)), np.zeros(5))
    # passage mass plus what sits on phrases is 1; a passage's mass is at least its restart
    assert 0 < mass.sum() <= 1.0 + 1e-9 and (mass >= arrived - 1e-12).all()


def test_scores_without_seeds_and_bad_input():
    ranker = MultiHopRanker.from_texts(UNITS)
    np.testing.assert_array_equal(ranker.scores("what?", np.zeros(5)), np.zeros(5))
    assert ranker.scores("what?").tolist() == [0.0] * 5
    with pytest.raises(ValueError, match=r"first_hop must have shape \(5,\)"):
        ranker.scores(QUESTION, [1.0, 2.0])
    with pytest.raises(ValueError, match="dense must be finite"):
        ranker.scores(QUESTION, np.ones(5), [np.inf] * 5)
    with pytest.raises(ValueError, match="query"):
        ranker.scores("", np.ones(5))
    with pytest.raises(ValueError, match="alpha"):
        MultiHopWalk(alpha=0)
    with pytest.raises(ValueError, match="score"):
        MultiHopWalk(score="best")
    with pytest.raises(ValueError, match="needs E"):
        MultiHopRanker.from_texts(UNITS, MultiHopWalk(term_share=0.5))
    with pytest.raises(ValueError, match="one row per unit"):
        MultiHopRanker.from_texts(UNITS, MultiHopWalk(term_share=0.5), E=sp.eye(3, format="csr"))
    with pytest.raises(TypeError, match="PhraseGraph"):
        MultiHopRanker(UNITS)


def test_terms_as_nodes_are_a_linear_walk_too():
    from longctx.mixpr.config import MixPRConfig

    E = MixPRConfig().vectorizer().fit_transform(UNITS)
    ranker = MultiHopRanker.from_texts(UNITS, MultiHopWalk(term_share=0.3), E=E)
    s = ranker.scores(QUESTION, np.array([1.0, 0.0, 0.6, 0.5, 0.0]))
    assert s.shape == (5,) and np.isfinite(s).all() and s.argmax() == 0


def test_hotpotqa_corpus_lift(shared_data):
    """The walk over the 991 pooled passages beats BM25 and MixPR by far (20 questions; the
    full figures are in docs/notes/multihop.md)."""
    from longctx.eval.methods import bm25_index
    from longctx.eval.tasks import load_task, passage_recall
    from longctx.mixpr import MixPRIndex

    corpus = load_task("hotpotqa-corpus", shared_data, 20)
    passages = list(corpus.passages)
    mix = MixPRIndex.from_texts(passages, chunk=False, walk="pagerank")
    ranker = MultiHopRanker.from_texts(passages)
    bm25, analyzer = bm25_index(passages)
    rec = {"bm25": [], "mixpr": [], "walk": []}
    for q in corpus.questions:
        first = mix.score(q.query, "local")[0]
        for name, s in (
            ("bm25", bm25.get_scores(analyzer(q.query))),
            ("mixpr", first),
            ("walk", ranker.scores(q.query, first)),
        ):
            rec[name].append(passage_recall(np.argsort(-s, kind="stable")[:5].tolist(), q.gold))
    r5 = {k: float(np.mean(v)) for k, v in rec.items()}
    assert r5["walk"] >= r5["bm25"] + 0.1 and r5["walk"] >= r5["mixpr"] + 0.05, r5


# -- the walk inside MixPRIndex (walk="multihop", preset "multihop") ----------------------------
BRIDGE = [
    "Kiss and Tell\nKiss and Tell is a 1945 American comedy film starring Shirley Temple as "
    "Corliss Archer.",
    "Meet Corliss Archer\nMeet Corliss Archer is an American radio comedy about a teenager.",
    "Shirley Temple\nShirley Temple Black was an American actress, singer, dancer and later "
    "diplomat, who served as Chief of Protocol of the United States.",
    "Chief of Protocol\nThe Chief of Protocol of the United States is an ambassador who advises "
    "the President on matters of diplomatic protocol.",
    "Wilhelm Busch\nWilhelm Busch was a German humorist, poet, illustrator and painter.",
]
BRIDGE_Q = "What government position was held by the woman who starred in Kiss and Tell?"


def test_the_multihop_preset_reaches_the_bridge_passage(tmp_path):
    from longctx.mixpr import MixPRIndex

    ids = [t.split("\n")[0] for t in BRIDGE]
    plain = MixPRIndex.from_texts(BRIDGE, ids=ids, chunk=False, preset="pagerank")
    walk = MixPRIndex.from_texts(BRIDGE, ids=ids, chunk=False, preset="multihop")
    assert walk.config.walk == "multihop" and plain.config.walk == "pagerank"

    def top2(ix):
        return {ix.doc_ids[h.source] for h in ix.search(BRIDGE_Q, k=2).hits}

    assert "Shirley Temple" not in top2(plain)
    assert top2(walk) == {"Kiss and Tell", "Shirley Temple"}
    # saved and loaded (the phrase graph is rebuilt from the units' texts), it ranks alike
    walk.save(tmp_path / "w")
    loaded = MixPRIndex.load(tmp_path / "w")
    a, b = walk.search(BRIDGE_Q, k=5), loaded.search(BRIDGE_Q, k=5)
    assert [(h.source, h.start) for h in a.hits] == [(h.source, h.start) for h in b.hits]
    np.testing.assert_allclose([h.score for h in a.hits], [h.score for h in b.hits], atol=1e-12)
    # a filter that excludes the bridge passage: it is never returned
    got = walk.search(BRIDGE_Q, k=3, filters=lambda md: md.get("skip") is None)
    assert got.hits
    walk.update([BRIDGE[2]], ids=["Shirley Temple"], metadatas=[{"skip": True}])
    got = walk.search(BRIDGE_Q, k=3, filters=lambda md: md.get("skip") is None)
    assert "Shirley Temple" not in {walk.doc_ids[h.source] for h in got.hits}


def test_multihop_settings_are_checked_and_saved(tmp_path):
    from longctx.mixpr import MixPRConfig, MixPRIndex

    with pytest.raises(ValueError, match="walk"):
        MixPRConfig(walk="random")
    with pytest.raises(ValueError, match="multihop"):
        MixPRConfig(walk="multihop", multihop={"no_such": 1})
    with pytest.raises(ValueError, match="alpha"):
        MixPRConfig(walk="multihop", multihop={"alpha": 0})
    ix = MixPRIndex.from_texts(BRIDGE, chunk=False, preset="multihop", multihop={"seed_top": 3})
    ix.save(tmp_path / "x")
    assert MixPRIndex.load(tmp_path / "x").config.multihop_walk().seed_top == 3
