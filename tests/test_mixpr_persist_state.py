"""A save writes one version of the index: the state it read once, even when a write swaps the
index's state meanwhile (test_concurrency's saves beside writes failed a load now and then:
ids of one version beside the texts of another)."""

from __future__ import annotations

from longctx.mixpr import MixPRIndex
from longctx.mixpr.persist import index_json


def test_index_json_describes_the_state_the_save_read():
    index = MixPRIndex.from_texts(["alpha beta gamma.", "delta epsilon zeta."], ids=["a", "b"])
    st = index._state
    index.insert(["eta theta iota."], ids=["c"])  # a write: a new state swapped in
    files, units = index_json(index, "here", st)
    assert files["documents"]["ids"] == ["a", "b"]
    assert units["unit_source"].max() == 1  # the units of the state read: two texts
    now, _ = index_json(index, "here", index._state)
    assert now["documents"]["ids"] == ["a", "b", "c"]
