"""``longctx.diversity.explain``: MMR / FPS hits say their relevance, the redundancy penalty
they had when picked and the pick it was measured against; recomputed by hand (eq. 1 / 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from longctx.diversity import DiversityIndex
from longctx.embeddings import get_encoder
from tests.test_diversity import HashEncoder
from tests.test_diversity_index import BOOK


@pytest.mark.parametrize("method", ["mmr", "fps"])
@pytest.mark.parametrize("window", [None, 1])
def test_pick_explanations_match_the_objective_by_hand(method, window):
    index = DiversityIndex.from_texts(BOOK, get_encoder(HashEncoder()))
    lam = 0.6
    r = index.search("Where did the cat sit?", k=5, method=method, lambda_=lam, window=window,
                     order="score", explain=True)  # fmt: skip
    e = index.embeddings.astype(np.float64)
    e /= np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    q = index.rewards("Where did the cat sit?")
    units = [(s, a) for s, a, _ in index.spans()]
    picks = [units.index((h.source, h.start)) for h in r.hits]
    for t, (h, i) in enumerate(zip(r.hits, picks)):
        x = h.explanation
        json.dumps(x)
        assert x["method"] == method and x["pick"] == t and x["parts"] == {"relevance": h.score}
        assert x["objective"]["relevance"] == pytest.approx(lam * q[i], abs=1e-6)
        prior = picks[:t] if window is None else picks[max(0, t - window) : t]
        if not prior:
            assert x["against"] is None
            continue
        cos = e[prior] @ e[i]
        j = prior[int(np.argmax(cos))]
        assert x["against"]["unit"] == j and x["against"]["cosine"] == pytest.approx(
            cos.max(), abs=1e-5
        )
        if method == "mmr":
            want = -(1 - lam) * cos.max()
            assert x["objective"]["redundancy"] == pytest.approx(want, abs=1e-5)
        else:
            want = (1 - lam) * np.sqrt(max(2 - 2 * cos.max(), 0.0))
            assert x["objective"]["diversity"] == pytest.approx(want, abs=1e-5)
        # the greedy picked the best objective among the units still free
        free = [u for u in range(len(units)) if u not in picks[:t]]
        W = e[prior]
        best = max(
            lam * q[u] + ((-(1 - lam) * (W @ e[u]).max()) if method == "mmr"
                          else (1 - lam) * np.sqrt(max(2 - 2 * (W @ e[u]).max(), 0.0)))
            for u in free
        )  # fmt: skip
        assert x["objective"]["value"] == pytest.approx(best, abs=1e-5)


def test_off_by_default_and_checked():
    index = DiversityIndex.from_texts(BOOK, get_encoder(HashEncoder()))
    assert all(h.explanation is None for h in index.search("fish", k=3).hits)
    with pytest.raises(TypeError, match="explain"):
        index.search("fish", k=3, explain=1)
