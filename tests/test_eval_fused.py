"""``mixpr-fused`` in ``longctx bench``: MixPR over the ``minilm`` baseline's sentences, fused
with it by reciprocal rank (the guides' fusion recipe, issue 45)."""

from __future__ import annotations

import numpy as np
import pytest

from longctx.embeddings import CallableEncoder
from longctx.eval.fused import MixPRFusedMethod, _asked
from longctx.eval.methods import Context, Doc, _query_embedding
from longctx.fusion import reciprocal_rank_fusion
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.garlic._graphs import hash_embed

QUERY = "Where did the fox cross the frozen stream?"


@pytest.fixture
def doc():
    ctx = Context(
        token_counter=lambda s: len(s.split()), encoder_factory=lambda: CallableEncoder(hash_embed)
    )
    return Doc(SEED_BOOK + SEED_OTHER, ctx)


def test_the_selection_is_the_core_rule_over_both_budget_lists(doc):
    m = MixPRFusedMethod()
    state = m.build(doc)
    index = state[0]
    assert index.n_units == len(doc.sentences)  # MixPR over the app's units, one each
    budget = int(doc.counts[:4].sum())
    spans = m.select(state, QUERY, budget)
    mixpr = np.asarray(index.score(QUERY)[0], dtype=float)
    dense = doc.embeddings @ _query_embedding(doc, QUERY)
    lists = [_asked(s, doc.counts, budget) for s in (mixpr, dense)]
    fused = [k for k, _ in reciprocal_rank_fusion(lists)]
    taken, used = [], 0
    for i in fused:  # the fused order fills the budget
        if used + doc.counts[i] <= budget:
            taken.append(i)
            used += doc.counts[i]
    assert spans == doc.spans(sorted(taken))
    assert sum(doc.counts[doc.sentences.index(s)] for s in spans) <= budget
    assert lists[0][0] in taken and lists[1][0] in taken


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
