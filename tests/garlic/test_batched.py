"""GARLIC build: batched decoding equals one-at-a-time decoding; the bullet logits processor;
``batch_size`` checks (tiny random Llama, SmolLM2 tokenizer, float32)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from longctx.garlic import build_hwdag, build_hwdags, parse_ips  # noqa: E402
from longctx.garlic.build import _eos_ids, build_prompt  # noqa: E402
from longctx.garlic.decode import (  # noqa: E402
    BulletLogitsProcessor,
    check_batch_size,
    default_batch_size,
    generate_batch_with_capture,
    generate_with_capture,
    ip_edge_weights,
)
from tests._tiny_models import smollm2_tokenizer, tiny_llama  # noqa: E402

DOC_A = (
    "Tom Kitten lived with his mother, Mrs. Tabitha Twitchit, and his sisters. "
    "One day she expected fine company for tea. She fetched the kittens indoors to wash them. "
    "Tom was fat and burst several buttons off his clothes. His mother sewed them on again. "
) * 3
DOC_B = (
    "The Puddle-Ducks came marching along the high road, pit pat paddle pat! "
    "They stopped and stared up at the kittens on the wall. "
    "Mr. Drake Puddle-Duck picked up the clothes and put them on himself. "
) * 2

NODES = [
    ["Tom Kitten bursts his buttons.", "Mrs. Twitchit sews them back.", "Ducks walk."],
    ["A short one."],
    ["The ducks came marching along the high road, pit pat paddle pat! They stared."] * 3,
]


@pytest.fixture(scope="module")
def tok():
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def model():
    return tiny_llama(49152, seed=3)


def newline_every(n: int, tok):
    """Per-row processor (old style) pushing a newline every ``n`` tokens, so that the bullet
    processor has line starts to handle."""
    nl = tok("\n", add_special_tokens=False)["input_ids"][0]

    def proc(generated, logits):
        if len(generated) % n == n - 1:
            logits = logits.clone()
            logits[nl] = logits.max() + 10.0
        return logits

    return proc


def test_batched_equals_one_at_a_time_with_an_early_eos(tok, model):
    prompts = [build_prompt(tok, nodes, bullets=False) for nodes in NODES]
    assert len({len(ids) for ids, _ in prompts}) == 3  # rows of different lengths
    eos = tok.eos_token_id
    bullets = BulletLogitsProcessor(tok, [eos])
    # an end of sequence in row 1 only, after 2 tokens: the row whose logits are row 1's then
    seen = {}

    def record(generated, logits):
        if len(generated) == 2:
            seen["ref"] = logits.clone()
        return logits

    generate_batch_with_capture(
        model, [prompts[1]], max_new_tokens=3, logits_processors=[record, bullets]
    )

    def stop_row_1(generated, logits):
        if len(generated) == 2 and torch.allclose(logits, seen["ref"], atol=1e-3):
            out = torch.full_like(logits, -1e9)
            out[eos] = 0.0
            return out
        return logits

    kw = dict(max_new_tokens=12, eos_token_ids=[eos], logits_processors=[stop_row_1, bullets])
    alone = [generate_batch_with_capture(model, [p], **kw)[0] for p in prompts]
    together = generate_batch_with_capture(model, prompts, **kw)
    assert len(alone[1][0]) == 2 and len(alone[0][0]) == len(alone[2][0]) == 12
    for (g1, a1), (g2, a2), (_, ranges) in zip(alone, together, prompts):
        assert g1 == g2
        assert a2.shape == (len(g1), len(ranges))
        np.testing.assert_allclose(a2, a1, atol=1e-5, rtol=0)
    # the one-prompt helper is the same decoding
    g, a = generate_with_capture(
        model, *prompts[0], max_new_tokens=12, eos_token_ids=[eos], logits_processor=bullets
    )
    assert g == alone[0][0]
    np.testing.assert_allclose(a, alone[0][1], atol=1e-6, rtol=0)


def _same_graph(a, b, atol=1e-5):
    assert a.nodes == b.nodes and a.texts == b.texts and a.batches == b.batches
    assert a.edges.shape == b.edges.shape
    assert (a.edges != 0).toarray().tolist() == (b.edges != 0).toarray().tolist()
    np.testing.assert_allclose(a.edges.toarray(), b.edges.toarray(), atol=atol, rtol=0)


BUILD = dict(
    chunk_tokens=40,
    batch_tokens=90,
    max_new_tokens=16,
    encoder=False,
)


@pytest.fixture(scope="module")
def one_at_a_time(tok, model):
    return build_hwdag([DOC_A, DOC_B], model, tok, batch_size=1, **BUILD)


def test_batched_build_equals_one_at_a_time(tok, model, one_at_a_time):
    g1 = one_at_a_time
    assert len(g1.batches) >= 4 and g1.info["batch_size"] == 1
    assert len(g1.levels) >= 3
    g4 = build_hwdag([DOC_A, DOC_B], model, tok, batch_size=4, **BUILD)
    _same_graph(g4, g1)
    # one graph per document, decoded together, equals that document built alone
    for doc, g in zip([DOC_A, DOC_B], build_hwdags([DOC_A, DOC_B], model, tok, batch_size=8,
                                                   **BUILD)):  # fmt: skip
        _same_graph(g, build_hwdag(doc, model, tok, batch_size=1, **BUILD))


def test_resumed_batched_build_equals_uninterrupted(tok, model, one_at_a_time, tmp_path):
    class Stop(Exception):
        pass

    def stop(k, rec):
        if k == 2:
            raise Stop

    out = tmp_path / "g"
    with pytest.raises(Stop):
        build_hwdag([DOC_A, DOC_B], model, tok, batch_size=4, out_dir=out, on_batch=stop, **BUILD)
    seen = []
    resumed = build_hwdag([DOC_A, DOC_B], model, tok, batch_size=2, out_dir=out,
                          on_batch=lambda k, r: seen.append(k), **BUILD)  # fmt: skip
    assert resumed.info["resumed_batches"] == 3 and seen[0] == 3
    _same_graph(resumed, one_at_a_time)
    # build_hwdags writes graphs that build_hwdag loads as finished
    dirs = [tmp_path / "a", tmp_path / "b"]
    (ga, _) = build_hwdags([DOC_A, DOC_B], model, tok, out_dirs=dirs, **BUILD)
    again = build_hwdag(DOC_A, model, tok, out_dir=dirs[0], on_batch=lambda k, r: seen.append(-1),
                        **BUILD)  # fmt: skip
    assert again == ga and -1 not in seen


def test_bullet_processor_always_gives_parseable_ips(tok, caplog):
    for seed in (0, 1, 2):
        m = tiny_llama(49152, seed=seed)
        eos = _eos_ids(m, tok)
        bullets = BulletLogitsProcessor(tok, eos)
        prompts = [build_prompt(tok, nodes, bullets=False) for nodes in NODES]
        out = generate_batch_with_capture(m, prompts, max_new_tokens=30, eos_token_ids=eos,
                                          logits_processors=[newline_every(6, tok), bullets])  # fmt: skip
        for gen, att in out:
            text = tok.decode(gen)
            lines = text.split("\n")
            assert len(lines) >= 2
            assert all(line.startswith("* ") and line[2:].strip() for line in lines[:-1])
            assert lines[-1] == "" or lines[-1].startswith("*")
            with caplog.at_level(logging.WARNING, logger="longctx.garlic.decode"):
                caplog.clear()
                _, spans, w = ip_edge_weights(tok, gen, att)
            assert not caplog.records  # no fallback parsing
            assert len(spans) == len(parse_ips(text)) >= len(lines) - 1
            np.testing.assert_allclose(w.sum(axis=1), 1.0)
    # the rule itself: the answer starts with the bullet, a new line with the bullet or EOS
    star = tok("*", add_special_tokens=False)["input_ids"][0]
    nl = tok("\n", add_special_tokens=False)["input_ids"][0]
    word = tok(" Tom", add_special_tokens=False)["input_ids"][0]
    p = BulletLogitsProcessor(tok, [2], vocab_size=49152)
    scores = torch.zeros(4, 49152)
    ids = torch.tensor([[nl, nl, star], [star, word, nl], [nl, star, star], [star, word, word]])
    allowed = [set(torch.nonzero(r > -1e30).ravel().tolist()) for r in p(ids[:, :3], scores)]
    assert allowed[1] == {star, 2}
    assert word in allowed[0] and nl not in allowed[0] and star not in allowed[0]
    assert nl in allowed[3] and 2 in allowed[3]
    first = p(torch.zeros((1, 0), dtype=torch.long), torch.zeros(1, 49152))
    assert torch.nonzero(first[0] > -1e30).ravel().tolist() == [star]


def test_force_bullets_on_a_build_and_batch_size_checks(tok, model):
    g = build_hwdag(DOC_B, model, tok, batch_size=2, **{**BUILD, "max_new_tokens": 24},
                    logits_processor=newline_every(5, tok))  # fmt: skip
    for b in g.batches:
        assert all(line.startswith("* ") for line in b["text"].split("\n") if line)
    assert g.info["config"]["force_bullets"] is True

    def never(generated, logits):
        raise AssertionError("generation started")

    for bad, err in [(0, ValueError), (-3, ValueError), ("8", TypeError), (2.5, TypeError)]:
        with pytest.raises(err, match="batch_size"):
            build_hwdag(DOC_A, model, tok, batch_size=bad, logits_processor=never, **BUILD)
    with pytest.raises(TypeError, match="force_bullets"):
        build_hwdag(DOC_A, model, tok, force_bullets="yes", logits_processor=never, **BUILD)
    assert default_batch_size(model) == 8 and check_batch_size(None, model) == 8
    assert check_batch_size(3) == 3


def test_growing_cache_layer_matches_dynamic_layer():
    """The decoding cache writes each step into a pre-sized buffer; what attention reads
    (keys, values, length) after updates, row selection and crops equals ``DynamicLayer``'s."""
    from transformers.cache_utils import DynamicLayer

    from longctx.garlic.decode import _growing_cache

    g = torch.Generator().manual_seed(0)
    grow, ref = _growing_cache(extra=2).layer_class_to_replicate(), DynamicLayer()
    steps = [5, 1, 1, 1, 3]  # the prefill, then one-token steps past the spare room
    for i, n in enumerate(steps):
        k = torch.randn(3, 2, n, 4, generator=g)
        v = torch.randn(3, 2, n, 4, generator=g)
        if i == 3:  # a row finished: both caches drop it
            keep = torch.tensor([0, 2])
            grow.batch_select_indices(keep)
            ref.batch_select_indices(keep)
        if i >= 3:
            k, v = k[:2], v[:2]
        got, want = grow.update(k, v), ref.update(k, v)
        for a, b in zip(got, want):
            assert torch.equal(a, b)
        assert grow.get_seq_length() == ref.get_seq_length() == sum(steps[: i + 1])
    grow.crop(-2)
    ref.crop(-2)
    assert torch.equal(grow.keys, ref.keys) and grow.get_seq_length() == ref.get_seq_length()
    grow.reset()
    assert grow.get_seq_length() == 0


def test_prompt_lookup_drafts():
    """Drafts: what followed the most recent earlier match of the longest suffix (8 tokens
    down to 1), continued cyclically into itself; the length adapts to what was accepted."""
    from longctx.garlic.lookup import PromptLookup

    p = PromptLookup([5, 1, 2, 9, 7, 1, 2, 3, 4], 8)
    assert p.draft([], 3) == []  # (2, 3, 4), (3, 4), (4,) never occurred before
    assert p.draft([1, 2], 3) == [3, 4, 1]  # (4, 1, 2) is new; (1, 2) last followed by 3 4 1
    p = PromptLookup([8, 1, 2, 9, 5, 1, 2, 7], 8)
    assert p.draft([5, 1, 2], 2) == [7, 5]  # the 3-gram (5, 1, 2) wins over the later (1, 2)
    p = PromptLookup([4], 8)
    assert p.draft([6, 7, 6, 7], 5) == [6, 7, 6, 7, 6]  # a repeated phrase repeats again
    # a line saying one phrase twice: (1, 2, 3) last led to 20, the longer (10 1 2 3 20 1 2 3) to 30
    line = [10, 1, 2, 3, 20, 1, 2, 3, 30]
    assert PromptLookup(line, 8).draft(line[:8], 3) == [30, 10, 1]
    assert p.k == 4
    p.adapt(4, 4)
    assert p.k == 8
    p.adapt(8, 8)
    assert p.k == 8  # at most max_k
    p.adapt(0, 8)
    assert p.k == 2
    p.adapt(3, 5)
    assert p.k == 4


def test_prompt_lookup_decoding_equals_plain_decoding(tok, model, caplog):
    """Draft tokens change nothing but the number of passes: same tokens, same node attention,
    alone or batched, with processors, an early end and the token limit inside a draft."""
    prompts = [build_prompt(tok, nodes, bullets=False) for nodes in NODES]
    rep = tok("the cat sat on the mat. " * 12, add_special_tokens=False)["input_ids"]
    prompts.append((rep, [(0, 30), (30, len(rep))]))
    eos = _eos_ids(model, tok)
    first = {}

    def one_row_ends(generated, logits):
        """The row whose first word differs from row 0's may end after its first line; the
        others run to the token limit (the random model repeats itself: long drafts)."""
        if len(generated) == 2:
            first.setdefault("row0", generated[1])
        if generated[1:2] == [first.get("row0")] or len(generated) < 7:
            logits = logits.clone()
            logits[eos] = -1e9
        return logits

    kw = dict(max_new_tokens=19, eos_token_ids=eos, logits_processors=[
        newline_every(7, tok), one_row_ends, BulletLogitsProcessor(tok, eos)])  # fmt: skip
    ref = [generate_batch_with_capture(model, [p], **kw)[0] for p in prompts]
    assert sorted(len(g) for g, _ in ref) == [7, 19, 19, 19]  # one early end, three at the limit
    for k, together in [(4, False), (4, True), (63, True)]:
        with caplog.at_level(logging.DEBUG, logger="longctx.garlic.decode"):
            caplog.clear()
            if together:
                got = generate_batch_with_capture(model, prompts, prompt_lookup_num_tokens=k, **kw)
            else:
                got = [generate_batch_with_capture(model, [p], prompt_lookup_num_tokens=k,
                                                   **kw)[0] for p in prompts]  # fmt: skip
        for (g1, a1), (g2, a2) in zip(ref, got):
            assert g2 == g1
            np.testing.assert_allclose(a2, a1, atol=1e-5, rtol=0)
        passes = [int(r.getMessage().split(" in ")[1].split()[0]) for r in caplog.records
                  if "passes" in r.getMessage()]  # fmt: skip
        assert passes and sum(passes) < sum(len(g) for g, _ in ref)  # drafts were accepted


def test_prompt_lookup_checks(tok, model):
    from longctx.garlic.decode import DEFAULT_PROMPT_LOOKUP, check_prompt_lookup

    assert check_prompt_lookup(None) == DEFAULT_PROMPT_LOOKUP == 32
    assert check_prompt_lookup(0) == 0 and check_prompt_lookup(63) == 63

    def never(generated, logits):
        raise AssertionError("generation started")

    for bad, err in [(-1, ValueError), (64, ValueError), ("4", TypeError), (True, TypeError)]:
        with pytest.raises(err, match="prompt_lookup_num_tokens"):
            build_hwdag(DOC_A, model, tok, prompt_lookup_num_tokens=bad, logits_processor=never,
                        **BUILD)  # fmt: skip
    g = build_hwdag(DOC_B, model, tok, prompt_lookup_num_tokens=0, **BUILD)
    assert g.info["prompt_lookup_num_tokens"] == 0
    _same_graph(g, build_hwdag(DOC_B, model, tok, **BUILD))
