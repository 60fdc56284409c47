"""``longctx.youra.explain``: a YOURA hit names its window, the attention its tokens got before
and after the question and the parts of its reaction score, each recomputed from the scorer."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from longctx.youra import ReactionScorer, YouraIndex  # noqa: E402
from tests._youra_helpers import TEXTS  # noqa: E402
from tests.test_youra import CONTEXT, QUERY  # noqa: E402


@pytest.fixture
def tok(smollm2_tokenizer):
    return smollm2_tokenizer


@pytest.fixture
def model(tiny_model):
    return tiny_model


@pytest.mark.parametrize(
    "kw",
    [
        {"normalize": "none", "aggregate": "mean", "prior_tokens": 4},
        {"normalize": "none", "aggregate": "gmean", "prior_tokens": 0},
        {"normalize": "ratio", "aggregate": "mean", "prior_tokens": 8},
    ],
    ids=["none-mean-prior", "none-gmean", "ratio-mean"],
)
def test_parts_and_attention_match_the_scorer(model, tok, kw):
    scorer = ReactionScorer(model, tok, **kw)
    index = YouraIndex.from_texts([CONTEXT, *TEXTS], scorer)
    index.warm()  # every search reads the same (stored) window caches
    plain = index.search(QUERY, k=4)
    r = index.search(QUERY, k=4, explain=True)
    assert plain.hits == r.hits  # the same selection and scores
    keep: dict = {}
    index.score_units(QUERY, keep=keep)
    for h in r.hits:
        e = h.explanation
        json.dumps(e)
        assert e["method"] == "youra" and e["score"] == h.score
        assert math.isclose(math.fsum(e["parts"].values()), h.score, rel_tol=1e-9, abs_tol=1e-12)
        t0, t1 = e["tokens"]
        w0, w1 = e["window"]["tokens"]
        assert w0 <= t0 < t1 <= w1 or t1 - t0 == 1
        vec = keep["vectors"][h.source]
        before, after = keep["before"][h.source], keep["after"][h.source]
        assert e["reaction"] == pytest.approx(float(np.mean(vec[t0:t1])), rel=1e-9)
        assert e["attention_before"] == pytest.approx(float(np.mean(before[t0:t1])), rel=1e-9)
        if kw["normalize"] == "none":  # eq. 1: the reaction is |before - after| per token
            np.testing.assert_allclose(vec[t0:t1], np.abs(before - after)[t0:t1], rtol=1e-5)
        if kw["aggregate"] == "mean":
            scale = e["scale"]
            own = float(np.sum(vec[t0:t1])) / (t1 - t0 + kw["prior_tokens"]) * scale
            assert e["parts"]["tokens"] == pytest.approx(own, rel=1e-9)
            assert (e["parts"]["prior"] > 0) == (kw["prior_tokens"] > 0)
        else:
            logs = e["log_parts"]
            assert math.exp(logs["tokens"] + logs["prior"]) * e["scale"] == pytest.approx(h.score)


def test_off_by_default(model, tok):
    index = YouraIndex.from_texts(CONTEXT, ReactionScorer(model, tok))
    assert all(h.explanation is None for h in index.search(QUERY, k=2).hits)
    with pytest.raises(TypeError, match="explain"):
        index.search(QUERY, k=2, explain="no")
