"""GARLIC on the real SmolLM2-135M-Instruct (slow: loads and runs the model on a short story)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

STORY = (
    "Once upon a time there were four little Rabbits, and their names were Flopsy, Mopsy, "
    "Cotton-tail, and Peter. They lived with their Mother in a sand-bank, underneath the root of "
    "a very big fir-tree. One morning old Mrs. Rabbit said, you may go into the fields or down the "
    "lane, but don't go into Mr. McGregor's garden: your Father had an accident there; he was put "
    "in a pie by Mrs. McGregor. Flopsy, Mopsy, and Cotton-tail, who were good little bunnies, went "
    "down the lane to gather blackberries. But Peter, who was very naughty, ran straight away to "
    "Mr. McGregor's garden, and squeezed under the gate! First he ate some lettuces and some French "
    "beans; and then he ate some radishes. And then, feeling rather sick, he went to look for some "
    "parsley. But round the end of a cucumber frame, whom should he meet but Mr. McGregor! "
    "Mr. McGregor was on his hands and knees planting out young cabbages, but he jumped up and ran "
    "after Peter, waving a rake and calling out, Stop thief! Peter was most dreadfully frightened; "
    "he rushed all over the garden, for he had forgotten the way back to the gate. He lost one of "
    "his shoes among the cabbages, and the other shoe amongst the potatoes."
)


@pytest.mark.slow
def test_smollm2_builds_a_bullet_graph(tmp_path):
    from longctx.garlic import HWDAG, build_hwdag
    from longctx.models import load_causal_lm

    model, tok = load_causal_lm()
    g = build_hwdag(
        STORY, model, tok, out_dir=tmp_path / "g", encoder=False, chunk_tokens=90,
        batch_tokens=190, max_new_tokens=24,
    )  # fmt: skip
    assert len(g.levels) >= 3 and len(g.levels[0]) >= 3
    for i in g.levels[0]:
        n = g.nodes[i]
        assert STORY[n.start : n.end] == n.text
    # every IP is one non-empty line of its batch's answer
    for b in g.batches:
        for i in b["outputs"]:
            assert g.nodes[i].text.strip() and "\n" not in g.nodes[i].text
            assert g.nodes[i].text in b["text"]
    sums = np.asarray(g.edges.sum(axis=1)).ravel()
    assert np.allclose(sums[[n.id for n in g.nodes if n.level > 1]], 1.0)
    assert len({g.nodes[i].batch for i in g.levels[-1]}) == 1
    assert HWDAG.load(tmp_path / "g") == g
