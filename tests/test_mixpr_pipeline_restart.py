"""The paper-literal pipeline (``MixPR(preset="paper")``, ``fit_query=True``: the query appended
before the TF-IDF fit, one-hot restart on its last sentence) when that sentence reaches no chunk:
the restart moves to the query sentences with edges, as :class:`~longctx.mixpr.MixPRIndex`'s
bordered walk does (:func:`longctx.mixpr.query.restart_reaching_units`, the MixPR paper sec. 4
"Personalization vector": the query nodes are the walk's start nodes). Before, the pipeline's
mass stayed on the isolated query node and it returned five chunks scored 0.0 with
``mode="local"``."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import scipy.sparse as sp

from longctx.io import sample_text
from longctx.mixpr import MixPR, MixPRIndex
from longctx.mixpr.graph import column_normalize, personalized_pagerank, similarity_graph
from longctx.mixpr.query import restart_reaching_units

SENTENCE = "The White Rabbit took a watch out of its waistcoat-pocket."
NOISE = "zzzz qqqq xyzzy."
MOVED = "restart moved"


@pytest.fixture(scope="module")
def alice():
    return sample_text("alice")


def _moved(caplog) -> bool:
    return any(MOVED in r.getMessage() for r in caplog.records if r.name.endswith("pipeline"))


def test_a_last_sentence_that_matches_nothing_restarts_on_the_others(alice, caplog):
    paper = MixPR(preset="paper")
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.pipeline"):
        got = paper.search(alice, f"{SENTENCE} {NOISE}", k=5, mode="local")
    assert got.mode == "local"
    assert min(h.score for h in got.hits) > 1e-3  # before: 0.0 (noise)
    assert _moved(caplog)
    want = paper.search(alice, SENTENCE, k=5, mode="local")
    # the query is its sentence that reaches the text (the noise only shifts the IDF a little)
    assert [h.start for h in got.hits] == [h.start for h in want.hits]
    np.testing.assert_allclose([h.score for h in got.hits], [h.score for h in want.hits], rtol=1e-3)
    assert any("WAISTCOAT-POCKET" in h.text for h in got.hits)
    # the same kind of answer as the built index's bordered walk for the same query
    index = MixPRIndex.from_texts(alice, preset="paper")
    built = index.search(f"{SENTENCE} {NOISE}", k=5, mode="local")
    assert [(h.start, h.end) for h in got.hits] == [(h.start, h.end) for h in built.hits]


def test_a_restart_that_reaches_the_text_is_kept(alice, caplog):
    """The paper's restart stays when its query node has an edge: no move, no log, and the
    pipeline's scores are those of the paper's one-hot restart."""
    paper = MixPR(preset="paper")
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.pipeline"):
        got = paper.search(alice, f"{NOISE} {SENTENCE}", k=5, mode="local")
    assert not _moved(caplog)
    want = paper.search(alice, SENTENCE, k=5, mode="local")
    assert [h.start for h in got.hits] == [h.start for h in want.hits]


def test_no_query_sentence_with_an_edge_still_falls_back_to_pagerank(alice, caplog):
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.pipeline"):
        got = MixPR(preset="paper").search(alice, f"qqqq xyzzy wibble. {NOISE}", k=5, mode="local")
    assert got.mode == "global-fallback"
    assert not _moved(caplog)


def test_restart_reaching_units_takes_a_sparse_query_block():
    """The pipeline gives its graph's query-query block, sparse and thresholded: the same
    answers as the dense cosines, and the caller's matrix is left as it is."""
    p = np.array([0.0, 0.0, 1.0])
    q = np.eye(3)
    q[0, 2] = q[2, 0] = 0.5
    bcol = np.array([0.3, 0.0, 0.0])
    s = sp.csr_array(q)
    before = s.copy()
    assert restart_reaching_units(p, s, bcol, 0.27) is p  # joined to a node with an edge
    np.testing.assert_array_equal(s.toarray(), before.toarray())
    q[0, 2] = q[2, 0] = 0.1  # below the threshold: no edge, so moved
    moved = restart_reaching_units(p, sp.csr_array(q), np.array([0.3, 0.2, 0.0]), 0.27)
    np.testing.assert_array_equal(moved, [0.5, 0.5, 0.0])
    # joined through a chain of query nodes (2 -> 1 -> 0), only 0 linked: kept
    chain = sp.csr_array(([0.4, 0.4, 0.4, 0.4], ([0, 1, 1, 2], [1, 0, 2, 1])), shape=(3, 3))
    assert restart_reaching_units(p, chain, bcol, 0.27) is p
    assert restart_reaching_units(p, chain.toarray(), bcol, 0.27) is p


@pytest.fixture
def at_threshold():
    """A chunk and two query nodes whose graph (:func:`similarity_graph`, float32 products
    compared with the threshold in float32) keeps the query-query edge at ``float32(0.7)``,
    just below ``0.7`` in float64: ``(E, threshold)``. The last query node (the restart) has no
    edge to the chunk; the first has one."""
    thr = 0.7
    assert float(np.float32(thr)) < thr  # a threshold that float32 rounds down
    E = sp.csr_array(np.array([[0.0, 1.0, 0.0], [0.7, np.sqrt(0.51), 0.0], [1.0, 0.0, 0.0]]))
    S = similarity_graph(E, thr)
    assert 0 < S[1, 2] < thr  # kept by the graph, below the threshold in float64
    return E, thr


def test_a_query_edge_kept_at_the_threshold_in_float32_joins_the_restart(at_threshold, caplog):
    """The pipeline's graph keeps the query-query edge at ``float32(0.7)``; the restart node
    reaches the chunk through it, so the paper's restart stays. Before, the pipeline compared
    the graph's float64 copies with ``0.7`` again: the edge was no edge there, and the restart
    moved to the other query node (a float32/float64 window)."""
    E, thr = at_threshold
    paper = MixPR(preset="paper", threshold=thr)
    paper.embed = lambda texts: E  # the chunk, then the two query nodes
    paper.query_chunks = lambda q: ["the first query node", "the last query node"]
    with caplog.at_level(logging.INFO, logger="longctx.mixpr.pipeline"):
        scores, mode = paper.rank_with_mode(["the chunk"], "a query", "local")
    assert mode == "local" and not _moved(caplog)
    cfg = paper.config
    A = column_normalize(similarity_graph(E, thr))
    want = personalized_pagerank(
        A, np.array([0.0, 0.0, 1.0]), cfg.alpha_local, cfg.max_iter, cfg.tol
    )
    np.testing.assert_allclose(scores, want[:1], rtol=1e-12)  # the walk of the paper's restart


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_restart_reaching_units_at_the_threshold_keeps_the_walks_edges(dtype):
    """The built index's bordered walk keeps a query-query cosine ``>= thr`` (float64 ``Q``
    compared with the float ``thr``: ``np.where(Q >= thr, Q, 0)``), and so does
    :func:`restart_reaching_units` given the same ``Q``, at the threshold and one ulp below it,
    in float64 and float32 ``Q`` (compared in ``Q``'s dtype by both)."""
    p = np.array([0.0, 1.0])
    bcol = np.array([0.3, 0.0])
    thr = 0.27
    at = dtype(thr)
    below = np.nextafter(at, dtype(0))
    for v in (at, below):
        Q = np.array([[1.0, v], [v, 1.0]], dtype)
        walk_edge = bool(np.where(Q >= thr, Q, 0.0)[1, 0] > 0)
        kept = restart_reaching_units(p, Q, bcol, thr) is p
        assert kept == walk_edge == (v == at), (dtype, v)
