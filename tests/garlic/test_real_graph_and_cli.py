"""GARLIC search on a graph built by part 1 (``build_hwdag``, tiny model), saved and loaded, and
the ``longctx ask`` / ``retrieve --method garlic`` commands over it."""

from __future__ import annotations

import json

import pytest

from longctx.embeddings import CallableEncoder
from longctx.garlic import HWDAG, build_hwdag
from longctx.garlic.search import GarlicSearcher, as_search_graph
from tests.garlic._graphs import hash_embed
from tests.test_garlic_build import ANSWER, bullet_forcer
from tests.test_garlic_build import STORY as _LONG

_A, _B = _LONG.split("\n\n")[:2]
STORY = _A[: len(_A) // 6] + "\n\n" + _B  # one batch of part 1's test story

Q = "What did the ducks do with the clothes?"


@pytest.fixture(scope="module")
def built(tmp_path_factory, smollm2_tokenizer, tiny_model):
    model = tiny_model
    graph = build_hwdag(
        STORY, model, smollm2_tokenizer, chunk_tokens=40, batch_tokens=130, max_new_tokens=30,
        encoder=hash_embed, logits_processor=bullet_forcer(smollm2_tokenizer, ANSWER),
    )  # fmt: skip
    d = tmp_path_factory.mktemp("g") / "graph"
    graph.save(d)
    return model, graph, d


def test_search_over_built_graph(built, smollm2_tokenizer):
    model, graph, d = built
    loaded = HWDAG.load(d)
    g = as_search_graph(loaded)
    assert len(g) == len(graph) and sorted(g.top.tolist()) == sorted(graph.top())
    assert g.model_info["vocab_size"] == 49152
    s = GarlicSearcher(loaded, model, smollm2_tokenizer, encoder=CallableEncoder(hash_embed),
                       max_new_tokens=2)  # fmt: skip
    r = s.search(Q, max_context_tokens=400)
    assert r.info["stop_reason"] in ("max_context_tokens", "empty_frontier", "yes")
    assert r.info["visited"][: len(g.top)] == [int(g.ids[p]) for p in g.top]
    for h in r.hits:
        assert STORY[h.start : h.end] == h.text
    assert r.info["tokens_run"] <= 1.2 * r.info["final_prompt_tokens"]


def test_graph_from_another_model_is_refused(built, smollm2_tokenizer):
    from tests._tiny_models import tiny_llama

    _, graph, _ = built
    other = tiny_llama(49152, n_layers=3)
    with pytest.raises(ValueError, match="another model"):
        GarlicSearcher(graph, other, smollm2_tokenizer, encoder=CallableEncoder(hash_embed)
                       ).search(Q)  # fmt: skip


@pytest.fixture
def cli(built, smollm2_tokenizer, monkeypatch, tmp_path):
    import longctx.cli.ask as ask

    model, _, d = built
    monkeypatch.setattr(ask, "_model", lambda name, device: (model, smollm2_tokenizer))
    monkeypatch.setattr(ask, "_encoder", lambda spec: CallableEncoder(hash_embed))
    path = tmp_path / "story.txt"
    path.write_text(STORY, encoding="utf-8")
    return str(path), str(d)


def test_cli_ask_json(cli, capsys):
    from longctx.cli import main

    path, d = cli
    rc = main(["ask", path, "--graph", d, "-q", Q, "--format", "json",
               "--max-context-tokens", "400", "--max-new-tokens", "2"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert set(out) >= {"answer", "stop_reason", "visited", "trace", "tokens_run",
                        "final_prompt_tokens"}  # fmt: skip
    assert out["tokens_run"] >= out["final_prompt_tokens"] > 0
    assert len(out["trace"]) >= 1 and out["trace"][0]["step"] == 0
    rc = main(["ask", path, "--graph", d, "-q", Q, "--max-context-tokens", "400",
               "--max-new-tokens", "2"])  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 0 and text.startswith("answer:") and "step 0: top level" in text


def test_cli_retrieve_garlic(cli, capsys):
    from longctx.cli import main

    path, d = cli
    rc = main(["retrieve", path, "--method", "garlic", "--graph", d, "-q", Q,
               "--max-context-tokens", "400", "--format", "json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    for p in out["passages"]:
        assert STORY[p["start"] : p["end"]] == p["text"]


def test_cli_retrieve_garlic_explain(cli, capsys):
    from longctx.cli import main

    path, d = cli
    argv = ["retrieve", path, "--method", "garlic", "--graph", d, "-q", Q,
            "--max-context-tokens", "400"]  # fmt: skip
    assert main([*argv, "--format", "json", "--explain"]) == 0
    passages = json.loads(capsys.readouterr().out)["passages"]
    assert passages
    for p in passages:
        e = p["explanation"]
        assert e["method"] == "garlic" and e["walk"] == "reached"
        assert abs(sum(e["parts"].values()) - p["score"]) <= 1e-9
        assert e["path"][0]["visited"] and e["path"][-1]["level"] == 1
        assert (
            e["via"]["node"] == e["path"][len([n for n in e["path"] if n["visited"]]) - 1]["node"]
        )
    assert main([*argv, "--explain"]) == 0
    text = capsys.readouterr().out
    assert (
        text.count("why: reach 100%") == len(passages)
        and "; path " in text
        and "(stopped: " in text
    )


def test_cli_bad_input(cli, capsys, tmp_path):
    from longctx.cli import main

    path, d = cli
    assert main(["ask", path, "--graph", d, "-q", "  "]) == 2
    assert "--query must not be empty" in capsys.readouterr().err
    other = tmp_path / "other.txt"
    other.write_text("A different story about a fox.", encoding="utf-8")
    assert main(["ask", str(other), "--graph", d, "-q", Q]) == 2
    assert "another text" in capsys.readouterr().err
    assert main(["ask", path, "--graph", d, "-q", "why " * 9000]) == 2
    assert "over the limit of 16,000" in capsys.readouterr().err  # the query length limit
    argv = ["ask", path, "--graph", d, "-q", "why " * 3000, "--max-context-tokens", "500"]
    assert main(argv) == 2
    assert "max_context_tokens" in capsys.readouterr().err
    assert main(["retrieve", path, "--method", "garlic", "-q", Q]) == 2
    assert "--graph" in capsys.readouterr().err
