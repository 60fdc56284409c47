"""benchmarks/bench_mixpr_growth.py's quality columns: the needles are planted where it says,
the same at every size (fixed seed), and counted only when their own paragraph is returned."""

from __future__ import annotations

from longctx.io import sample_text
from longctx.mixpr import MixPRIndex
from tests._fixtures import load_script


def _bench():
    return load_script("benchmarks/bench_mixpr_growth.py")


def test_needles_are_planted_and_found():
    b = _bench()
    facts, questions = b.needle_facts(6, 3)
    assert (facts, questions) == b.needle_facts(6, 3)  # the same facts at every size
    assert len(facts) == 12 and len(questions) == 9
    assert len(set(facts)) == len(facts)
    text = sample_text("alice")
    docs = [(f"d{i}", text[i * 30000 : (i + 1) * 30000]) for i in range(4)]
    planted, spans = b.plant(docs, facts)
    assert b.plant(docs, facts) == (planted, spans)
    for f, (d, a, z) in zip(facts, spans):
        assert planted[d][1][a:z] == f
    # the haystack itself is unchanged around the needles
    added = sum(len(f) + 4 for f in facts)  # each fact a paragraph of its own
    assert sum(len(t) for _, t in planted) == sum(len(t) for _, t in docs) + added
    index = MixPRIndex.from_texts([t for _, t in planted], ids=[d for d, _ in planted])
    got = b.needle_recall(index, questions, spans)
    assert got["needle_r100"] == 1.0 and got["needle_r10"] == 1.0
    assert got["chain_r100"] == 1.0
    # a needle whose paragraph is not returned is not counted
    moved = [(d, a + 100_000, z + 100_000) for d, a, z in spans]
    assert b.needle_recall(index, questions, moved)["needle_r100"] == 0.0
