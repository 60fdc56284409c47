"""GARLIC search with the real SmolLM2-135M-Instruct and MiniLM on a short story (slow)."""

from __future__ import annotations

import pytest

STORY = (
    "Once upon a time there were three little kittens, and their names were Mittens, Tom Kitten, "
    "and Moppet. Their mother, Mrs. Tabitha Twitchit, expected friends to tea, so she fetched the "
    "kittens indoors to wash and dress them before the fine company arrived. She dressed Tom in "
    "smart clothes, but he was very fat and he burst several buttons. Then she turned the kittens "
    "out into the garden to be out of the way while she made hot buttered toast. Tom lost his "
    "clothes on the garden wall, and three Puddle-Ducks came along the road. Mr. Drake "
    "Puddle-Duck picked up the clothes and put them on himself, and the ducks marched away."
)


@pytest.mark.slow
def test_smollm2_search_and_answer(tmp_path):
    from longctx.garlic import GarlicSearcher, build_hwdag
    from longctx.models import load_causal_lm

    model, tok = load_causal_lm(device="cpu")
    graph = build_hwdag(STORY, model, tok, max_new_tokens=200)
    s = GarlicSearcher(graph, model, tok, max_new_tokens=16)
    r = s.search("Where did the mother send her kittens while she made toast?")
    assert r.info["stop_reason"] in ("yes", "max_context_tokens", "empty_frontier")
    assert r.info["tokens_run"] <= 1.2 * r.info["final_prompt_tokens"]
    assert isinstance(r.info["answer"], str) and r.info["answer"]
    assert all(STORY[h.start : h.end] == h.text for h in r.hits)
    assert all(isinstance(t["margin"], float) for t in r.trace)
