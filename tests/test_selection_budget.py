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
