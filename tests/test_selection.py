import numpy as np
import pytest

from longctx.selection import select_top


def test_select_top_k_document_order_and_ties():
    scores = np.array([0.1, 0.9, 0.5, 0.9, 0.2])
    assert select_top(scores, k=2).tolist() == [1, 3]
    assert select_top(scores, k=3).tolist() == [1, 2, 3]
    assert select_top(scores, k=10).tolist() == [0, 1, 2, 3, 4]


def test_select_top_budget_never_exceeded_and_skips_big_units():
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    counts = np.array([5, 10, 3, 2])
    idx = select_top(scores, token_budget=10, token_counts=counts)
    assert idx.tolist() == [0, 2, 3]
    assert counts[idx].sum() <= 10


def test_select_top_argument_errors():
    with pytest.raises(ValueError, match="exactly one"):
        select_top(np.ones(3))
    with pytest.raises(ValueError, match="k"):
        select_top(np.ones(3), k=0)
    with pytest.raises(ValueError, match="token_counts"):
        select_top(np.ones(3), token_budget=5)
    with pytest.raises(ValueError, match="shape"):
        select_top(np.ones(3), token_budget=5, token_counts=np.ones(2))


def test_top_k_equals_stable_sort_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        scores = rng.integers(0, 5, n).astype(float)  # many ties
        k = int(rng.integers(1, n + 3))
        ref = np.sort(np.argsort(-scores, kind="stable")[:k])
        assert select_top(scores, k=k).tolist() == ref.tolist()
