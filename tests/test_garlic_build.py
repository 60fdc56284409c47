"""GARLIC part 1: building, capturing and storing the HWDAG (tiny random Llama, SmolLM2 tokenizer)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from longctx.garlic import HWDAG, build_hwdag, chunk_text, parse_ips  # noqa: E402
from longctx.garlic.build import (  # noqa: E402
    build_prompt,
    generate_with_capture,
    ip_edge_weights,
)
from longctx.garlic.prompts import parse_list_items  # noqa: E402
from longctx.persist import PersistError  # noqa: E402
from tests._persist_helpers import restamp  # noqa: E402
from tests._tiny_models import smollm2_tokenizer, tiny_llama  # noqa: E402

STORY = (
    "Tom Kitten lived with his mother, Mrs. Tabitha Twitchit, and his sisters. "
    "One day she expected fine company for tea. She fetched the kittens indoors to wash them. "
    "Tom was fat and burst several buttons off his clothes. His mother sewed them on again. "
    "She turned them into the garden to keep them out of the way. "
) * 3 + (
    "\n\nThe Puddle-Ducks came marching along the high road, pit pat paddle pat! "
    "They stopped and stared up at the kittens on the wall. "
    "Mr. Drake Puddle-Duck picked up the clothes and put them on himself. "
) * 3


@pytest.fixture(scope="module")
def tok():
    return smollm2_tokenizer()


@pytest.fixture(scope="module")
def model():
    return tiny_llama(49152, seed=3)


@pytest.fixture(scope="module")
def full_graph(model, tok):
    return small_build(model, tok)


def bullet_forcer(tok, answer: str):
    """Logits processor making any model write ``answer`` then stop (EOS)."""
    script = tok(answer, add_special_tokens=False)["input_ids"]
    eos = tok.eos_token_id

    def proc(generated, logits):
        out = torch.full_like(logits, -1e9)
        out[script[len(generated)] if len(generated) < len(script) else eos] = 0.0
        return out

    return proc


ANSWER = "Sure:\n* Tom Kitten bursts buttons.\n*   \n* The ducks take the clothes.\n"


def assert_same_graph(a: HWDAG, b: HWDAG, atol: float = 1e-5) -> None:
    """Same nodes, texts, batches and edge pattern; edge weights equal to ``atol`` (batched
    decoding pads prompts differently, so weights may differ in the last float bits)."""
    assert a.nodes == b.nodes and a.texts == b.texts and a.batches == b.batches
    ea, eb = a.edges.tocoo(), b.edges.tocoo()
    assert ea.shape == eb.shape
    assert sorted(zip(ea.row.tolist(), ea.col.tolist())) == sorted(
        zip(eb.row.tolist(), eb.col.tolist())
    )
    np.testing.assert_allclose(a.edges.toarray(), b.edges.toarray(), atol=atol, rtol=0)


def small_build(model, tok, **kw):
    args = dict(
        chunk_tokens=40,
        batch_tokens=130,
        max_new_tokens=30,
        encoder=lambda texts: np.array([[len(t), t.count(" ") + 1.0] for t in texts]),
        logits_processor=bullet_forcer(tok, ANSWER),
        force_bullets=False,  # the scripted answer has a preamble line
    )
    args.update(kw)
    return build_hwdag(STORY, model, tok, **args)


def test_parse_ips_bullets_blank_and_preamble():
    text = "Here is the summary:\n* First point.\n  *  Second point  \n*\n* \nnot a bullet\n*Third"
    spans = parse_ips(text)
    assert [text[a:b] for a, b in spans] == ["First point.", "Second point", "Third"]
    assert parse_ips("no bullets at all\njust text") == []
    text = "Summary points:\n1. Mark Hunter runs a radio.\n2) Nora helps.\n- \n- Harry.\n3.5 kg"
    assert [text[a:b] for a, b in parse_list_items(text)] == [
        "Mark Hunter runs a radio.",
        "Nora helps.",
        "Harry.",
    ]


def test_chunks_have_exact_offsets(tok):
    long_sentence = " ".join(f"word{i}" for i in range(200))  # no sentence boundary inside
    text = STORY + "\n\n" + long_sentence + ". The end."
    chunks = chunk_text(text, tok, chunk_tokens=50)
    assert len(chunks) > 5
    prev_end = 0
    for a, b, n in chunks:
        assert a >= prev_end and b > a
        assert text[a:b].strip() == text[a:b]
        assert n == len(tok(text[a:b], add_special_tokens=False)["input_ids"])
        assert n <= 60
        prev_end = b
    # every non-space character is in some chunk
    covered = np.zeros(len(text), bool)
    for a, b, _ in chunks:
        covered[a:b] = True
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())


def test_prompt_ranges_hold_node_tokens(tok):
    nodes = ["Tom Kitten is fat.", "The ducks\ncame   along."]
    ids, ranges = build_prompt(tok, nodes, bullets=True)
    assert [tok.decode(ids[a:b]) for a, b in ranges] == [
        "Tom Kitten is fat.",
        "The ducks came along.",
    ]
    full = tok.decode(ids)
    assert "Summary the following information." in full and "* Tom Kitten is fat." in full
    assert full.rstrip().endswith("assistant")


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_capture_equals_eager_attention_maps(tok, model, impl):
    run_model = model if impl == "eager" else tiny_llama(49152, seed=3, attn_implementation=impl)
    nodes = ["Tom Kitten bursts his buttons.", "Mrs. Twitchit sews them back.", "Ducks walk."]
    ids, ranges = build_prompt(tok, nodes, bullets=False)
    proc = bullet_forcer(tok, ANSWER)
    gen, node_att = generate_with_capture(
        run_model,
        ids,
        ranges,
        max_new_tokens=40,
        eos_token_ids=[tok.eos_token_id],
        logits_processor=proc,
    )
    assert node_att.shape == (len(gen), 3) and len(gen) > 10
    # reference: full eager attention maps of the same sequence
    seq = torch.tensor([ids + gen])
    with torch.no_grad():
        out = model(seq, output_attentions=True)
    att = torch.stack([a[0] for a in out.attentions]).mean(dim=(0, 1)).double().numpy()
    p = len(ids)
    ref = np.stack([att[p : p + len(gen), a:b].mean(axis=1) for a, b in ranges], axis=1)
    np.testing.assert_allclose(node_att, ref, atol=1e-5, rtol=0)
    # edge weights: per IP, mean over its tokens, normalized
    text, spans, w = ip_edge_weights(tok, gen, node_att)
    assert [text[a:b] for a, b in spans] == [
        "Tom Kitten bursts buttons.",
        "The ducks take the clothes.",
    ]
    ends = np.array([len(tok.decode(gen[: i + 1])) for i in range(len(gen))])
    starts = np.concatenate([[0], ends[:-1]])
    for j, (a, b) in enumerate(spans):
        sel = (starts < b) & (ends > a)
        e = ref[sel].mean(axis=0)
        np.testing.assert_allclose(w[j], e / e.sum(), atol=1e-5)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_build_structure(full_graph):
    g = full_graph
    assert len(g.levels) >= 3 and g.embeddings.shape == (len(g), 2)
    # level 1: exact spans into the source
    for i in g.levels[0]:
        n = g.nodes[i]
        assert STORY[n.start : n.end] == n.text and n.level == 1
    # every parent row sums to 1 and points only into its own batch, one level below
    sums = np.asarray(g.edges.sum(axis=1)).ravel()
    for node in g.nodes:
        kids, w = g.children(node.id)
        if node.level == 1:
            assert len(kids) == 0
            continue
        assert sums[node.id] == pytest.approx(1.0)
        batch = g.batches[node.batch]
        assert sorted(kids.tolist()) == sorted(batch["inputs"])
        assert node.id in batch["outputs"]
        assert all(g.nodes[k].level == node.level - 1 for k in kids)
        assert np.all(w > 0)
    # top: the output of exactly one batch, and it is what top() reports
    top = g.levels[-1]
    assert len({g.nodes[i].batch for i in top}) == 1
    assert g.top() == top
    # every lower node has a parent (the DAG reaches all chunks from the top)
    has_parent = set(g.edges.indices.tolist())
    assert all(i in has_parent for lvl in g.levels[:-1] for i in lvl)
    # IP texts come from parsing: no blank bullets, no preamble
    assert {g.nodes[i].text for i in g.levels[1]} == {
        "Tom Kitten bursts buttons.",
        "The ducks take the clothes.",
    }
    assert g.info["tokens_generated"] == sum(b["n_generated"] for b in g.batches) > 0


def test_save_load_and_bad_dirs(tok, model, full_graph, tmp_path):
    g = full_graph
    g.save(tmp_path / "g")
    h = HWDAG.load(tmp_path / "g")
    assert h == g and h.levels == g.levels and h.info == g.info
    # another format version -> PersistError naming the manifest
    m = tmp_path / "g" / "manifest.json"
    d = json.loads(m.read_text())
    d["format_version"] = 99
    m.write_text(json.dumps(d))
    with pytest.raises(PersistError, match="manifest.json"):
        HWDAG.load(tmp_path / "g")
    # half-written: no manifest
    m.unlink()
    with pytest.raises(PersistError, match="manifest.json"):
        HWDAG.load(tmp_path / "g")
    with pytest.raises(PersistError, match="manifest.json"):
        small_build(model, tok, out_dir=tmp_path / "g")


def test_interrupted_build_resumes_to_the_same_graph(tok, model, full_graph, tmp_path):
    full = full_graph
    assert len(full.batches) >= 4

    class Stop(Exception):
        pass

    def stop_after_two(k, rec):
        if k == 1:
            raise Stop

    out = tmp_path / "ckpt"
    with pytest.raises(Stop):
        small_build(model, tok, out_dir=out, on_batch=stop_after_two)
    with pytest.raises(PersistError, match="interrupted"):
        HWDAG.load(out)  # a checkpoint is not a finished graph
    seen = []
    resumed = small_build(model, tok, out_dir=out, on_batch=lambda k, r: seen.append(k))
    assert seen[0] == 2  # batches 0 and 1 were not generated again
    assert resumed.info["resumed_batches"] == 2
    assert_same_graph(resumed, full)
    assert HWDAG.load(out) == resumed
    # a finished out_dir is loaded, not rebuilt
    again = small_build(model, tok, out_dir=out, on_batch=lambda k, r: seen.append(-1))
    assert again == resumed and -1 not in seen
    # other settings -> a clear error, not a silent mix
    with pytest.raises(ValueError, match="batch_tokens"):
        small_build(model, tok, out_dir=out, batch_tokens=120)


def test_bad_input_fails_before_generation(tok, model):
    def never(generated, logits):
        raise AssertionError("generation started")

    kw = dict(encoder=False, logits_processor=never, batch_tokens=200, max_new_tokens=20)
    kw["chunk_tokens"] = 50
    with pytest.raises(ValueError, match=r"texts\[1\] must contain some non-whitespace text"):
        build_hwdag(["fine text.", "  \n"], model, tok, **kw)
    with pytest.raises(ValueError, match="binary"):
        build_hwdag("abc\x00\x01\x02def", model, tok, **kw)
    with pytest.raises(TypeError, match="texts"):
        build_hwdag(b"bytes", model, tok, **kw)
    no_template = copy.deepcopy(tok)
    no_template.chat_template = None
    with pytest.raises(ValueError, match="chat template"):
        build_hwdag(STORY, model, no_template, **kw)
    small = tiny_llama(49152, max_positions=256)
    with pytest.raises(ValueError, match="window of 256"):
        build_hwdag(STORY, small, tok, **kw)
    with pytest.raises(ValueError, match="chunk_tokens"):
        build_hwdag(STORY, model, tok, **{**kw, "chunk_tokens": 500})
    with pytest.raises(ValueError, match="max_levels"):
        build_hwdag(STORY, model, tok, max_levels=1, **kw)


def test_finished_out_dir_with_other_texts_is_refused(tok, model, tmp_path):
    """#28: a finished graph in out_dir is returned only when it holds the texts given (its
    checkpoint's text digest is in another file than its texts): forged texts, consistent
    with their chunks, are a PersistError naming graph.json's field 'texts'."""
    out = tmp_path / "g"
    small_build(model, tok, out_dir=out, encoder=False)
    path = out / "graph.json"
    g = json.loads(path.read_text("utf-8"))
    g["texts"] = [t.replace("Tom", "Bob") for t in g["texts"]]
    for node in g["nodes"]:
        node["text"] = node["text"].replace("Tom", "Bob")
    path.write_text(json.dumps(g), "utf-8")
    restamp(out)  # the forger fixes the digests too
    assert "Bob" in HWDAG.load(out).texts[0]  # consistent in itself
    with pytest.raises(PersistError, match=r"graph\.json.*field 'texts'"):
        small_build(model, tok, out_dir=out, encoder=False)
