"""``longctx.eval`` / ``longctx bench``: metrics by hand, tasks from the shared data, and the
``--quick`` run end to end (skipped without ../shared/data)."""

from __future__ import annotations

import json
import re

import pytest

from longctx.cli import main
from longctx.eval import metrics
from longctx.eval.tasks import Example, load_task


def test_metrics_by_hand():
    assert metrics.normalize("The  Eiffel Tower!") == "eiffel tower"
    assert metrics.answer_in_selection(["Eiffel Tower"], "I saw the eiffel tower.")
    assert not metrics.answer_in_selection(["Tower"], "Towers everywhere")
    assert metrics.answer_token_recall(["a high school student"], "high school") == pytest.approx(
        2 / 3
    )
    assert metrics.gold_coverage([(0, 10), (20, 30)], [(0, 6), (25, 40)]) == [1.0, 1.0]
    assert metrics.gold_coverage([(0, 10)], [(0, 4)]) == [0.0]
    assert metrics.qa_f1("the red car", ["a red car"]) == 1.0
    assert 0 < metrics.rouge_l("the cat sat on the mat", "the cat sat") < 1
    ex = Example("hotpotqa", "d", "abcdefghij" * 3, "q?", gold_spans=((0, 10), (20, 30)))
    assert metrics.score(ex, ex.text, [(0, 10)]) == {"recall": 0.0, "share": 0.5}


def test_tasks_load_with_exact_gold_spans(shared_data):
    docs = list(load_task("hotpotqa", shared_data, 3))
    assert len(docs) == 3
    for (ex,) in docs:
        assert ex.gold_spans and all(ex.text[a:b].strip() == ex.text[a:b] for a, b in ex.gold_spans)
    docs = list(load_task("babilong", shared_data, 2, n_tokens=4000, token_counter=len))
    assert len(docs) == 6 and {d[0].task for d in docs} == {
        "babilong-qa1@4k",
        "babilong-qa2@4k",
        "babilong-qa3@4k",
    }
    # with a counter the haystack is cut to about n_tokens of its tokens (here: characters),
    # without one at 4.5 characters a token; the same questions and facts either way
    uncut = list(load_task("babilong", shared_data, 2, n_tokens=4000))
    assert [len(u[0].text) - len(d[0].text) for u, d in zip(uncut, docs)] == [14000] * 6
    for examples in docs:
        ex = examples[0]
        facts = [ex.text[a:b] for a, b in ex.gold_spans]
        assert all(f.endswith(".") and len(f.split()) < 12 for f in facts)
    squad = next(iter(load_task("squad", shared_data, 10)))
    assert all(ex.answers and ex.query.endswith("?") for ex in squad)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        list(load_task("squad", shared_data / "nowhere", 1))
    with pytest.raises(ValueError, match="task"):
        load_task("trivia", shared_data, 1)


def test_bench_quick_end_to_end(shared_data, tmp_path, capsys):
    argv = [
        "bench",
        "--data",
        str(shared_data),
        "--quick",
        "--questions",
        "2",
        "--out",
        str(tmp_path / "out"),
        "--cache",
        str(tmp_path / "cache"),
        "--methods",
        "mixpr",
        "bm25",
        "minilm",
        "mmr",
        "truncate",
        "random",
    ]
    assert main(argv) == 0
    table = capsys.readouterr().out
    assert "| task | budget | mixpr | bm25 | minilm | mmr | truncate | random |" in table
    data = json.loads((tmp_path / "out" / "bench.json").read_text())
    rows = [r for r in data["results"] if not r["task"].startswith("hotpotqa-corpus")]
    assert {r["task"] for r in rows} >= {"squad", "hotpotqa", "narrativeqa", "multilexsum"}
    assert all(r["over_budget"] == 0 for r in rows if r["method"] != "truncate")
    assert all(0 <= r["recall"] <= 1 and r["ratio"] >= 1 for r in rows)
    # the corpus task (--quick: the pool of 4 examples' paragraphs) ranks passages at k
    corpus = {
        (r["method"], r["budget"]): r for r in data["results"] if r["task"] == "hotpotqa-corpus"
    }
    assert corpus[("truncate", 5)]["recall"] is None and corpus[("truncate", 5)]["skipped"] == 1
    assert corpus[("bm25", 10)]["recall"] >= corpus[("bm25", 2)]["recall"] > 0
    assert "| hotpotqa-corpus | k=5 |" in table
    assert "| hotpotqa-corpus-untitled | k=5 |" in table
    # MixPR's multi-hop lead (BABILong qa2/qa3 at 5%) is visible even on 2 questions
    mix = {(r["task"], r["budget"]): r["recall"] for r in rows if r["method"] == "mixpr"}
    assert mix[("babilong-qa1@8k", 0.05)] == 1.0
    assert mix[("babilong-qa2@8k", 0.05)] == 1.0
    assert (tmp_path / "out" / "recall.png").stat().st_size > 1000
    assert (tmp_path / "cache" / "sentence-embeddings-babilong-8k.npz").is_file()
    assert data["settings"]["babilong_tokens"] == [8000] and not data["settings"]["isolate"]
    # the conditions it measured: the load average and the cache, empty at the start
    assert re.fullmatch(
        r"load average \d+\.\d at the start, \d+\.\d at the end, empty --cache",
        data["settings"]["conditions"],
    )
    assert all(r["peak_rss_mb"] >= r["base_rss_mb"] > 0 for r in rows)


def test_hotpotqa_corpus_pools_unique_passages(shared_data):
    from longctx.eval.tasks import Corpus, passage_recall

    corpus = load_task("hotpotqa-corpus", shared_data, 100)
    assert isinstance(corpus, Corpus) and len(corpus.questions) == 100
    # ten paragraphs an example, duplicates by title merged: about 1,000 unique passages
    assert 950 <= len(corpus.passages) <= 1000
    assert len(set(corpus.titles)) == len(corpus.titles) == len(corpus.passages)
    assert all(
        p.startswith(t + "\n") and len(p) > len(t) + 20
        for t, p in zip(corpus.titles, corpus.passages)
    )
    raw = json.loads((shared_data / "hotpotqa" / "dev-distractor-first100.json").read_text())
    for q, r in zip(corpus.questions, raw):
        gold_titles = {t for t, _ in r["supporting_facts"]}
        assert q.query == r["question"] and {corpus.titles[i] for i in q.gold} == gold_titles
        assert len(q.gold) == 2 and q.kind in ("bridge", "comparison")
    # fewer questions ask over the same pool
    few = load_task("hotpotqa-corpus", shared_data, 3)
    assert few.passages == corpus.passages and few.questions == corpus.questions[:3]
    assert passage_recall([5, 1, 9], (1, 2)) == 0.5
    with pytest.raises(ValueError, match="n_questions"):
        load_task("hotpotqa-corpus", shared_data, 0)


def test_hotpotqa_offset_asks_later_examples_over_the_same_pool(shared_data):
    full = load_task("hotpotqa-corpus", shared_data, 100)
    later = load_task("hotpotqa-corpus", shared_data, 40, offset=60)
    assert later.passages == full.passages and later.questions == full.questions[60:]
    small = load_task("hotpotqa-corpus", shared_data, 2, pool=1, offset=5)
    assert small.questions == full.questions[5:7]  # the pool grows to hold their paragraphs
    docs = [ex for d in load_task("hotpotqa", shared_data, 2, offset=60) for ex in d]
    first = [ex for d in load_task("hotpotqa", shared_data, 62) for ex in d]
    assert [ex.query for ex in docs] == [ex.query for ex in first[60:]]
    with pytest.raises(ValueError, match="offset"):
        load_task("hotpotqa-corpus", shared_data, 3, offset=-1)


def test_corpus_task_ranks_the_pool(shared_data):
    from longctx.eval import markdown, run

    result = run(
        shared_data,
        tasks=["hotpotqa-corpus"],
        methods=["bm25", "random", "youra", "mixpr-multihop"],
        n_questions=10,
        token_counter=len,
        isolate=False,
    )
    cell = {(r["method"], r["budget"]): r for r in result["results"]}
    assert cell[("bm25", 10)]["n"] == 10 and cell[("bm25", 5)]["all"] <= cell[("bm25", 5)]["recall"]
    # BM25 over the 991 passages beats a random ranking by far
    assert cell[("bm25", 5)]["recall"] > 0.5 > cell[("random", 5)]["recall"] + 0.3
    assert (
        cell[("youra", 2)]["recall"] is None
        and "no corpus index" in cell[("youra", 2)]["skip_reason"]
    )
    # the multi-hop walk finds the second passage BM25 misses
    assert cell[("mixpr-multihop", 5)]["recall"] > cell[("bm25", 5)]["recall"]
    table = markdown(result)
    assert "| hotpotqa-corpus | k=2 |" in table and "| hotpotqa-corpus | bm25 |" in table


def test_multihop_method_fills_a_budget_on_a_document(shared_data):
    from longctx.eval import run

    result = run(
        shared_data,
        tasks=["squad"],
        methods=["mixpr-multihop"],
        n_questions=5,
        token_counter=lambda s: len(s.split()),
        isolate=False,
    )
    rows = result["results"]
    assert len(rows) == 3 and all(r["over_budget"] == 0 and r["n"] == 5 for r in rows)
    assert rows[-1]["recall"] >= 0.6  # SQuAD's answers are single-hop: the first hop counts


def test_bench_needs_data(tmp_path, capsys, monkeypatch):
    # no silent default (such as a ../shared/data that happens to be there): --data is required
    (tmp_path / "shared" / "data").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "shared")
    with pytest.raises(SystemExit) as exc:
        main(["bench", "--quick"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--data" in err[0] and "required" in err[0]
    assert not (tmp_path / "shared" / "bench-results").exists()


def test_bench_records_its_conditions(tmp_path, capsys):
    """``longctx bench`` writes ``settings.conditions`` (docs/bench.json's Speed rows print it):
    ``--conditions TEXT`` as given, else the load average and the state of ``--cache`` it
    measured."""
    from longctx.cli import bench

    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    assert "--conditions TEXT" in capsys.readouterr().out
    assert bench._cache_state(None) == "no --cache"
    assert bench._cache_state(tmp_path / "missing") == "empty --cache"
    (tmp_path / "c" / "sub").mkdir(parents=True)
    assert bench._cache_state(tmp_path / "c") == "empty --cache"
    (tmp_path / "c" / "sub" / "v.npz").write_bytes(b"x")
    assert bench._cache_state(tmp_path / "c") == "warm --cache"
    assert bench.measured_conditions(0.42, 5.17, "warm --cache") == (
        "load average 0.4 at the start, 5.2 at the end, warm --cache"
    )
    assert bench.measured_conditions(None, 1.0, "no --cache") == (
        "load average not measured, no --cache"
    )
    data = tmp_path / "data"
    data.mkdir()
    assert main(["bench", "--data", str(data), "--quick", "--conditions", " "]) == 2
    assert "--conditions must not be empty" in capsys.readouterr().err


def test_bench_bad_data_is_one_line(tmp_path, capsys):
    assert main(["bench", "--data", str(tmp_path / "missing"), "--quick"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing" in err[0]


def test_answers_are_scored_with_qa_f1(shared_data):
    from longctx.eval import markdown, run

    def oracle(context, question):  # "answers" with the selection's first words
        return " ".join(context.split()[:3])

    calls = []

    def fake(context, question):
        calls.append(question)
        return "Denver Broncos"

    result = run(
        shared_data,
        tasks=["squad"],
        methods=["truncate"],
        n_questions=5,
        token_counter=lambda s: len(s.split()),
        answer=fake,
    )
    rows = result["results"]
    assert calls and all("qa_f1" in r and 0 <= r["qa_f1"] <= 1 for r in rows)
    assert "QA F1" in markdown(result)
    assert oracle("a b c d", "q") == "a b c"


def test_budget_below_every_unit_is_a_counted_miss(shared_data):
    """A method whose index refuses the budget (BudgetTooSmallError) scores recall 0 for that
    question and the row counts it, instead of the benchmark stopping."""
    from longctx.eval import run

    result = run(
        shared_data,
        tasks=["squad"],
        methods=["mixpr"],
        n_questions=2,
        token_counter=lambda s: 1000,  # every chunk "costs" more than any budget
    )
    rows = result["results"]
    assert rows and all(r["recall"] == 0 and r["budget_too_small"] == r["n"] for r in rows)


def test_isolated_methods_report_their_own_memory(shared_data, tmp_path):
    from longctx.eval import run
    from longctx.tokens import count_tokens

    with pytest.raises(ValueError, match="picklable"):
        run(
            shared_data,
            tasks=["hotpotqa"],
            methods=["random"],
            token_counter=lambda s: 1,
            isolate=True,
        )
    result = run(
        shared_data,
        tasks=["hotpotqa"],
        methods=["random"],
        n_questions=2,
        token_counter=count_tokens,
        isolate=True,
    )
    rows = result["results"]
    assert result["settings"]["isolate"] and len(rows) == 3
    mem = result["memory"]["random"]["hotpotqa"]
    # a fresh worker: interpreter and numpy, far below the test process that imported torch
    assert 20 < mem["base_rss_mb"] <= mem["peak_rss_mb"] == rows[0]["peak_rss_mb"]
    assert all(r["n"] == 2 and 0 <= r["recall"] <= 1 for r in rows)


def _forcer(tok, answer):
    """Logits processor making any model write ``answer`` then stop (a tiny random model
    otherwise writes no bullet points, so no graph level above the chunks)."""
    import torch

    script = tok(answer, add_special_tokens=False)["input_ids"]

    def proc(generated, logits):
        out = torch.full_like(logits, -1e9)
        out[script[len(generated)] if len(generated) < len(script) else tok.eos_token_id] = 0.0
        return out

    return proc


def test_garlic_in_the_harness_tiny_model(shared_data, tmp_path):
    pytest.importorskip("torch")
    from longctx.embeddings import CallableEncoder
    from longctx.eval import markdown, run
    from tests._tiny_models import smollm2_tokenizer, tiny_llama
    from tests.garlic._graphs import hash_embed

    tok = smollm2_tokenizer()
    options = {
        "garlic": {
            "model": tiny_llama(49152, seed=3),
            "tokenizer": tok,
            "encoder": CallableEncoder(hash_embed),
            "max_doc_tokens": 2500,
            "build": {
                "chunk_tokens": 150,
                "batch_tokens": 700,
                "max_new_tokens": 12,
                "logits_processor": _forcer(tok, "* The story.\n* Its people.\n"),
            },
            "search": {"max_new_tokens": 4, "max_context_tokens": 600},
        }
    }

    def go():
        return run(
            shared_data,
            tasks=["hotpotqa", "squad"],
            methods=["garlic", "bm25"],
            n_questions=1,
            cache_dir=tmp_path / "cache",
            encoder_factory=lambda: CallableEncoder(hash_embed),
            method_options=options,
            isolate=False,
        )

    result = go()
    rows = {(r["task"], r["method"], r["budget"]): r for r in result["results"]}
    hp = [rows[("hotpotqa", "garlic", b)] for b in (0.1, 0.2, 0.4)]
    assert all(r["n"] == 1 and r["over_budget"] == 0 and r["ratio"] > 1 for r in hp)
    # every SQuAD article is longer than 2500 tokens: skipped, with the reason, not blank
    sq = rows[("squad", "garlic", 0.05)]
    assert (
        sq["recall"] is None and sq["skipped"] == 5 and "max_doc_tokens=2500" in sq["skip_reason"]
    )
    assert rows[("squad", "bm25", 0.05)]["recall"] is not None
    table = markdown(result)
    assert "| squad | 5% | skipped |" in table and "garlic skipped on squad" in table
    graphs = list((tmp_path / "cache" / "garlic").iterdir())
    assert len(graphs) == 1  # one HotpotQA document, its graph kept for reruns
    again = go()
    rows2 = {(r["task"], r["method"], r["budget"]): r for r in again["results"]}
    assert [rows2[("hotpotqa", "garlic", b)]["recall"] for b in (0.1, 0.2, 0.4)] == [
        r["recall"] for r in hp
    ]
    assert rows2[("hotpotqa", "garlic", 0.1)]["build_s"] < hp[0]["build_s"]
