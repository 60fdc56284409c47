"""``mixpr-fused`` in ``longctx bench``: MixPR over the ``minilm`` baseline's sentences, seeded
by the baseline's list for the same budget (the guides' fusion recipe, issue 45)."""

from __future__ import annotations

import numpy as np
import pytest

from longctx.embeddings import CallableEncoder
from longctx.eval.fused import MixPRFusedMethod, _asked
from longctx.eval.methods import Context, Doc, _query_embedding, passage_seeds
from longctx.mixpr.seeds import keep_first_units
from longctx.selection import select_top
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.garlic._graphs import hash_embed

QUERY = "Where did the fox cross the frozen stream?"


@pytest.fixture
def doc():
    ctx = Context(
        token_counter=lambda s: len(s.split()), encoder_factory=lambda: CallableEncoder(hash_embed)
    )
    return Doc(SEED_BOOK + SEED_OTHER, ctx)


def test_the_selection_keeps_each_first_then_mixpr_seeded_by_the_app_list(doc):
    m = MixPRFusedMethod()
    state = m.build(doc)
    index = state[0]
    assert index.n_units == len(doc.sentences)  # MixPR over the app's units, one each
    budget = int(doc.counts[:4].sum())
    spans = m.select(state, QUERY, budget)
    app = _asked(doc.embeddings @ _query_embedding(doc, QUERY), doc.counts, budget)
    seeded = index.score(QUERY, seeds=passage_seeds(app))[0]
    plain = index.score(QUERY)[0]
    firsts = [int(np.argmax(plain)), app[0]]
    kept = keep_first_units(seeded, firsts)
    want = select_top(kept, token_budget=budget, token_counts=doc.counts)
    assert spans == doc.spans(want.tolist())
    assert sum(doc.counts[doc.sentences.index(s)] for s in spans) <= budget
    assert set(firsts) <= set(want.tolist())  # MixPR's first and the app's first are kept
    # the app's list enters through the walk: its best unit gains
    assert seeded[app[0]] > plain[app[0]] / plain.max()


def test_n_seeds_takes_the_app_best_units_of_its_list_as_seeds(doc):
    m = MixPRFusedMethod()
    m.n_seeds = 2
    state = m.build(doc)
    index = state[0]
    budget = int(doc.counts[:6].sum())
    app = _asked(doc.embeddings @ _query_embedding(doc, QUERY), doc.counts, budget)
    assert len(app) > 2  # the budget's list is longer than the seeds
    few = index.search(QUERY, token_budget=budget, seeds=passage_seeds(app[:2]), keep_firsts=True)
    assert m.select(state, QUERY, budget) == doc.spans(sorted(h.source for h in few.hits))
    assert m.select(state, QUERY, budget) != MixPRFusedMethod().select(state, QUERY, budget)
    # keep_firsts=False: the seeded order alone (here it drops a kept first)
    query, budget = "Who sang the song at the inn?", int(doc.counts[:2].sum())
    app = _asked(doc.embeddings @ _query_embedding(doc, query), doc.counts, budget)
    kept = m.select(state, query, budget)
    m.keep_firsts = False
    plain = index.search(query, token_budget=budget, seeds=passage_seeds(app[:2]))
    assert m.select(state, query, budget) == doc.spans(sorted(h.source for h in plain.hits))
    assert m.select(state, query, budget) != kept


def test_the_baseline_is_asked_for_the_result_size_at_most_ten():
    m = MixPRFusedMethod()
    assert [m.seed_count(k) for k in (2, 5, 10, 25)] == [2, 5, 10, 10]
    m.n_seeds = None
    assert m.seed_count(25) == 25


def test_the_corpus_ranking_keeps_each_first_then_the_seeded_order(doc):
    m = MixPRFusedMethod()
    passages = doc.sentence_texts
    state = m.build_corpus(passages, doc.ctx)
    index, ctx, vectors = state
    app = np.argsort(-(vectors @ np.asarray(ctx.encoder.embed_query(QUERY)))).tolist()[:4]
    ranked = m.rank(state, QUERY, 4)
    plain = index.score(QUERY)[0]
    assert ranked[0] == int(np.argmax(plain)) and app[0] in ranked[:2]
    seeded = index.score(QUERY, seeds=passage_seeds(app))[0]
    rest = [i for i in np.argsort(-seeded, kind="stable").tolist() if i not in ranked[:2]]
    assert ranked[2:] == rest[:2]


def test_seeds_weigh_by_rank_one_document_each():
    seeds = passage_seeds([7, 2, 9])
    assert [(s.doc_id, s.start, s.end) for s in seeds] == [("7", None, None), ("2", None, None),
                                                            ("9", None, None)]  # fmt: skip
    assert [s.score for s in seeds] == pytest.approx([1.0, 0.5, 1 / 3])


def test_a_passage_pool_ranks_k_distinct_passages_fused(doc):
    m = MixPRFusedMethod()
    passages = doc.sentence_texts
    state = m.build_corpus(passages, doc.ctx)
    ranked = m.rank(state, QUERY, 3)
    assert len(ranked) == len(set(ranked)) == 3
    assert all(0 <= i < len(passages) for i in ranked)


def test_the_method_is_in_the_bench_after_the_seeded_hybrid():
    from longctx.eval import METHOD_NAMES
    from longctx.eval.registry import get_methods

    assert METHOD_NAMES.index("mixpr-fused") == METHOD_NAMES.index("mixpr-seeded") + 1
    assert [m.name for m in get_methods(["mixpr-fused", "minilm"])] == ["mixpr-fused", "minilm"]
    with pytest.raises(ValueError, match="mixpr-fused"):
        get_methods(["no-such-method"])


def test_the_fused_method_runs_on_squad(shared_data):
    from longctx.eval import run

    result = run(
        shared_data, tasks=["squad"], methods=["mixpr-fused"], n_questions=3,
        token_counter=lambda s: len(s.split()), isolate=False,
        encoder_factory=lambda: CallableEncoder(hash_embed),
    )  # fmt: skip
    rows = result["results"]
    assert len(rows) == 3 and all(r["n"] >= 3 and r["over_budget"] == 0 for r in rows)
