"""check_budget_fits: a token budget smaller than every unit is an error, not an empty result."""

import numpy as np
import pytest

from longctx.selection import check_budget_fits, select_top


def test_budget_smaller_than_the_shortest_unit():
    counts = np.array([9, 7, 12])
    with pytest.raises(
        ValueError, match=r"^budget 1 is smaller than the shortest unit \(7 tokens\)$"
    ):
        check_budget_fits(1, counts)
    assert select_top(np.ones(3), token_budget=6, token_counts=counts).size == 0  # what it guards
    check_budget_fits(7, counts)  # the shortest unit fits: no error
    check_budget_fits(1, [])  # nothing to choose from: the caller reports that


def test_bad_budget_is_named():
    with pytest.raises(ValueError, match="token_budget"):
        check_budget_fits(0, [3])
    with pytest.raises(TypeError, match="token_budget"):
        check_budget_fits("5", [3])


def test_indexes_refuse_a_budget_below_every_unit_before_scoring():
    """MixPRIndex and DiversityIndex raise BudgetTooSmallError (a ValueError naming the shortest
    unit) instead of returning an empty selection; YouraIndex does the same (tests/test_youra)."""
    from longctx import BudgetTooSmallError, DiversityIndex, MixPRIndex
    from longctx.embeddings import get_encoder
    from tests.test_diversity import HashEncoder

    text = "The cat sat on the mat today. The dog barked at the moon all night long. " * 5
    mix = MixPRIndex.from_texts(text)
    shortest = int(mix.token_counts.min())
    with pytest.raises(BudgetTooSmallError, match=rf"shortest unit \({shortest} tokens\)") as e:
        mix.search("Where did the cat sit?", token_budget=shortest - 1)
    assert e.value.token_budget == shortest - 1 and e.value.shortest == shortest
    assert mix.search("Where did the cat sit?", token_budget=shortest).hits  # fits: a hit
    div = DiversityIndex.from_texts(text, get_encoder(HashEncoder()))
    with pytest.raises(BudgetTooSmallError):
        div.search("Where did the cat sit?", token_budget=1)
    with pytest.raises(BudgetTooSmallError):  # a ratio below the shortest unit too
        div.search("Where did the cat sit?", ratio=0.001)


def test_one_off_diversify_cuts_units_to_the_budget():
    from longctx import diversify
    from longctx.embeddings import get_encoder
    from longctx.tokens import count_tokens
    from tests.test_diversity import HashEncoder

    text = " ".join(["alpha beta gamma delta"] * 200)  # one 800-token "sentence"
    hits = diversify(text, "gamma", token_budget=30, encoder=get_encoder(HashEncoder()))
    assert hits and sum(count_tokens(h.text) for h in hits) <= 30
    assert all(text[h.start : h.end] == h.text for h in hits)


def test_unit_token_cap():
    from longctx.selection import unit_token_cap

    assert unit_token_cap(128, None) == 128
    assert unit_token_cap(128, 40) == 40
    assert unit_token_cap(None, 300) == 300
    assert unit_token_cap(None, None) is None
    assert unit_token_cap(128, 1) == 128  # no word fragments: budget 1 is checked as it is
    assert unit_token_cap(None, 5) is None
    with pytest.raises(ValueError, match="token_budget"):
        unit_token_cap(128, 0)
