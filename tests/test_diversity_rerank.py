"""rerank: MMR / FPS over another method's best-scored units (``--diversify``)."""

import numpy as np
import pytest

from longctx import BudgetTooSmallError
from longctx.diversity import DiversityIndex, rerank
from longctx.diversity.rerank import candidate_pool
from longctx.embeddings import get_encoder
from tests.test_diversity import HashEncoder
from tests.test_diversity_index import CountingEncoder


def _doc(n=60, seed=0):
    rng = np.random.default_rng(seed)
    words = ["cat", "mat", "dog", "night", "soup", "turtle", "sing", "sea", "fish", "moon"]
    sents = [" ".join(rng.choice(words, size=6)) + "." for _ in range(n)]
    text = " ".join(sents)
    spans, pos = [], 0
    for s in sents:
        spans.append((pos, pos + len(s)))
        pos += len(s) + 1
    scores = rng.random(n)
    counts = np.full(n, 7)
    return text, spans, scores, counts


def test_candidate_pool():
    scores = np.array([0.1, 0.9, 0.5, 0.9, 0.2])
    counts = np.array([5, 5, 5, 5, 5])
    assert candidate_pool(scores, counts, k=1, pool=2).tolist() == [1, 3]  # ties: earlier first
    # best units until they hold pool * budget = 12 tokens: 3 units (15 tokens)
    assert candidate_pool(scores, counts, token_budget=6, pool=2).tolist() == [1, 3, 2]
    assert len(candidate_pool(scores, counts, k=9, pool=10)) == 5  # all units when fewer


def test_pool_as_large_as_the_text_equals_mmr_over_every_unit():
    text, spans, scores, counts = _doc()
    enc = get_encoder(HashEncoder())
    full = DiversityIndex.from_units([text], [spans], enc, token_counts=counts)
    want = full.search(rewards=scores, k=5, lambda_=0.5)
    got = rerank(text, spans, scores, counts, encoder=enc, k=5, pool=len(spans), keep=0)
    assert [(h.start, h.end, h.index) for h in got.hits] == [
        (h.start, h.end, h.index) for h in want.hits
    ]
    assert all(h.text == text[h.start : h.end] for h in got.hits)
    assert [h.score for h in got.hits] == [float(scores[h.index]) for h in got.hits]


def test_only_the_pool_is_embedded_and_the_budget_holds():
    text, spans, scores, counts = _doc()
    enc = CountingEncoder()
    res = rerank(text, spans, scores, counts, encoder=get_encoder(enc), token_budget=21, pool=2)
    assert res.info == {"pool": 6, "units": 60} and enc.calls == 6  # 42 tokens of 7-token units
    assert sum(counts[h.index] for h in res.hits) <= 21
    assert {h.index for h in res.hits} <= set(np.argsort(-scores)[:6].tolist())
    with pytest.raises(BudgetTooSmallError):
        rerank(text, spans, scores, counts, encoder=get_encoder(enc), token_budget=3)
    with pytest.raises(ValueError, match="scores"):
        rerank(text, spans, scores[:-1], counts, encoder=get_encoder(enc), k=2)
    with pytest.raises(ValueError, match="pool"):
        rerank(text, spans, scores, counts, encoder=get_encoder(enc), k=2, pool=0)
