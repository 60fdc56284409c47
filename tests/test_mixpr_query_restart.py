"""The bordered walk (``personalization="query"``, the paper preset) when the query sentence it
restarts on reaches no unit (review 19, F4): the restart moves to the query nodes with edges
(:func:`longctx.mixpr.query.restart_reaching_units`). Before, all the walk's mass stayed on the
isolated query node, the units' masses only decayed from the uniform start (``~1e-9`` after the
paper's 18 steps) and the search still said ``mode="local"``: hits of no meaning."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from longctx.io import sample_text
from longctx.mixpr import MixPRIndex
from longctx.mixpr.query import restart_reaching_units

SENTENCE = "The White Rabbit took a watch out of its waistcoat-pocket."
NOISE = "zzzz qqqq xyzzy."


@pytest.fixture(scope="module")
def paper_index():
    text = sample_text("alice")
    return MixPRIndex.from_texts(
        [text[i * 5000 : (i + 1) * 5000] for i in range(6)], preset="paper"
    )


def test_a_last_sentence_that_matches_nothing_restarts_on_the_others(paper_index, caplog):
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.scoring"):
        got = paper_index.search(f"{SENTENCE} {NOISE}", k=5, mode="local", explain=True)
    want = paper_index.search(SENTENCE, k=5, mode="local")
    assert got.mode == "local"
    # the query is its sentence that reaches the text (before: five units scored 0.0)
    assert [(h.source, h.index) for h in got.hits] == [(h.source, h.index) for h in want.hits]
    np.testing.assert_allclose([h.score for h in got.hits], [h.score for h in want.hits], rtol=1e-6)
    assert min(h.score for h in got.hits) > 1e-3
    for h in got.hits:  # the explanation follows the restart the walk used
        shares = h.explanation["shares"]
        assert abs(shares.get("unsettled", 0.0)) < 0.01, shares
    assert max(h.explanation["shares"]["question"] for h in got.hits) > 0.5
    assert any("restart moved" in r.getMessage() for r in caplog.records)


def test_a_restart_that_reaches_the_text_is_kept(paper_index, caplog):
    """The paper's restart stays whenever its query node has an edge: a query whose last
    sentence matches is scored as before (the noise sentence first changes nothing)."""
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.scoring"):
        got = paper_index.search(f"{NOISE} {SENTENCE}", k=5, mode="local")
    want = paper_index.search(SENTENCE, k=5, mode="local")
    assert [(h.source, h.index) for h in got.hits] == [(h.source, h.index) for h in want.hits]
    assert not any("restart moved" in r.getMessage() for r in caplog.records)


def test_restart_reaching_units():
    p = np.array([0.0, 0.0, 1.0])
    no_q = np.eye(3)  # self-similarities only
    # the restart node has an edge to a unit: kept as it is
    assert restart_reaching_units(p, no_q, np.array([0.0, 0.0, 0.4]), 0.27) is p
    # no query node has one: kept (the caller's global fallback handles nnz == 0)
    assert restart_reaching_units(p, no_q, np.zeros(3), 0.27) is p
    # joined by a query-query edge to a node with unit edges: the walk reaches the text
    q = np.eye(3)
    q[0, 2] = q[2, 0] = 0.5
    assert restart_reaching_units(p, q, np.array([0.3, 0.0, 0.0]), 0.27) is p
    # the same edge below the threshold is no edge: moved, evenly over the linked nodes
    q[0, 2] = q[2, 0] = 0.1
    moved = restart_reaching_units(p, q, np.array([0.3, 0.2, 0.0]), 0.27)
    np.testing.assert_array_equal(moved, [0.5, 0.5, 0.0])
    # a threshold of 0 keeps no zero cosine as an edge
    moved = restart_reaching_units(p, np.eye(3), np.array([0.3, 0.0, 0.0]), 0.0)
    np.testing.assert_array_equal(moved, [1.0, 0.0, 0.0])


def test_a_sharded_index_moves_the_restart_as_one_index_does():
    """The shards' driver is the same scorer: the sharded walk restarts as the one index's."""
    from longctx.corpus.shards.index import ShardedMixPRIndex

    text = sample_text("alice")
    texts = [text[i * 5000 : (i + 1) * 5000] for i in range(6)]
    kw = {"personalization": "query", "graph": "factored", "solver": "power"}
    want = MixPRIndex.from_texts(texts, **kw).search(SENTENCE, k=5, mode="local")
    with ShardedMixPRIndex.from_texts(texts, shards=2, **kw) as sharded:
        got = sharded.search(f"{SENTENCE} {NOISE}", k=5, mode="local")
    assert got.mode == "local"
    assert [(h.source, h.index) for h in got.hits] == [(h.source, h.index) for h in want.hits]
    np.testing.assert_allclose([h.score for h in got.hits], [h.score for h in want.hits], rtol=1e-6)
