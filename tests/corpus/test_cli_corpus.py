"""``longctx index --method mixpr`` / ``longctx search`` as a newcomer runs them (issue 38): whole
passages (``--whole-documents``) ranked as the Python route ranks them, no model library
imported, a local sharded corpus searched without Ray."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from longctx.cli import main
from longctx.mixpr import MixPRIndex
from tests.test_mixpr_multihop import QUESTION, UNITS

#: The titled passages of the multi-hop tests, each ``title\ntext``, plus longer filler passages
#: (several MixPR chunks each without ``--whole-documents``).
FILLER = (
    "Harbour Town\n"
    + " ".join(
        f"The harbour town held market number {i} by the old grey quay every week."
        for i in range(30)
    ),
    "River Lune\n"
    + " ".join(
        f"The river ran past mill {i} and under the bridge near the chapel." for i in range(30)
    ),
)
PASSAGES = [*UNITS, *FILLER]
IDS = [f"p{i}" for i in range(len(PASSAGES))]


def _jsonl(tmp_path):
    path = tmp_path / "passages.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(IDS, PASSAGES)), "utf-8"
    )
    return path


def _search(capsys, corpus, query, k):
    capsys.readouterr()
    assert main(["search", str(corpus), "-q", query, "--k", str(k), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["passages"]


def test_whole_documents_multihop_cli_ranks_as_python(tmp_path, capsys):
    src = _jsonl(tmp_path)
    out = tmp_path / "mh"
    argv = ["index", str(src), "--method", "mixpr", "--preset", "multihop", "--out", str(out)]
    assert main([*argv, "--whole-documents", "--no-progress"]) == 0
    got = _search(capsys, out, QUESTION, 5)
    # every hit is a whole passage, as the Python route returns it
    assert all(p["start"] == 0 and p["text"] == PASSAGES[IDS.index(p["doc_id"])] for p in got)
    py = MixPRIndex.from_texts(PASSAGES, ids=IDS, chunk=False, preset="multihop")
    want = py.search(QUESTION, k=5)
    best = lambda ps: sorted(ps, key=lambda p: -p["score"])  # noqa: E731
    assert [p["doc_id"] for p in best(got)] == [want.info["doc_ids"][want.hits.index(h)]
                                                for h in want.by_score()]  # fmt: skip
    assert [p["score"] for p in best(got)] == pytest.approx([h.score for h in want.by_score()])
    assert best(got)[0]["doc_id"] in ("p0", "p1")  # the film or the actress: the two hops
    # LangChain's route (chunk_documents=False, the multihop preset): the same ranking
    from langchain_core.documents import Document

    from langchain_longctx import MixPRRetriever
    from longctx.mixpr import MixPR

    lc = MixPRRetriever(
        documents=[Document(page_content=t, id=i) for i, t in zip(IDS, PASSAGES)],
        chunk_documents=False,
        mixpr=MixPR(preset="multihop"),
        k=5,
    ).invoke(QUESTION)
    assert sorted(d.id for d in lc) == sorted(p["doc_id"] for p in got)
    by_id = {p["doc_id"]: p["score"] for p in got}
    assert [d.metadata["longctx_score"] for d in lc] == pytest.approx([by_id[d.id] for d in lc])
    # without the option the long passages are cut into chunks, and --help says when to use it
    assert main([*argv[:-1], str(tmp_path / "chunked"), "--no-progress"]) == 0
    assert MixPRIndex.load(tmp_path / "chunked" / "indexes" / "mixpr").n_units > len(PASSAGES)
    assert MixPRIndex.load(out / "indexes" / "mixpr").n_units == len(PASSAGES)


def test_index_help_says_what_whole_documents_is_for_and_mixpr_is_in_process(capsys):
    with pytest.raises(SystemExit):
        main(["index", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--whole-documents" in text and "--preset multihop" in text and "passages" in text
    assert "mixpr builds one index over every document in this process" in text
    assert "one index per document, in parallel on Ray" in text  # diversity / GARLIC only


def test_whole_documents_needs_mixpr(tmp_path, capsys):
    src = _jsonl(tmp_path)
    argv = ["index", str(src), "--out", str(tmp_path / "x"), "--whole-documents"]
    assert main([*argv, "--method", "diversity"]) == 2
    assert "--whole-documents applies to --method mixpr only" in capsys.readouterr().err
    assert main(argv) == 2
    assert "--whole-documents needs --method" in capsys.readouterr().err


_RUN = """
import json, sys
from longctx.cli import main
argv = json.loads(sys.argv[1])
for a in argv:
    rc = main(a)
    assert rc == 0, (a, rc)
heavy = ("torch", "transformers", "sentence_transformers", "ray")
print(json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def _loaded_after(argvs) -> list[str]:
    """The model (and Ray) modules a fresh interpreter holds after running ``argvs`` through the
    console entry point's ``main``."""
    r = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_mixpr_index_and_search_import_no_model_library(tmp_path):
    books = tmp_path / "books"
    books.mkdir()
    for i, t in enumerate(PASSAGES):
        (books / f"{i}.txt").write_text(t, "utf-8")
    out = str(tmp_path / "c")
    loaded = _loaded_after(
        [
            ["index", str(books), "--method", "mixpr", "--out", out, "--no-progress"],
            ["search", out, "-q", "Who played Corliss Archer?", "-k", "3"],
        ]
    )
    assert loaded == []  # no torch, transformers, sentence_transformers (nor Ray)


def test_local_sharded_corpus_is_searched_without_ray(tmp_path, capsys):
    src = _jsonl(tmp_path)
    one, four = str(tmp_path / "one"), str(tmp_path / "four")
    base = ["index", str(src), "--method", "mixpr", "--no-progress"]
    assert main([*base, "--out", one]) == 0
    assert main([*base, "--out", four, "--shards", "4", "--sequential"]) == 0
    q = "Which comedy film starred Shirley Temple?"
    loaded = _loaded_after([["search", four, "-q", q, "--k", "4"]])
    assert "ray" not in loaded  # no Ray started (nor imported) for a local corpus
    a, b = _search(capsys, one, q, 4), _search(capsys, four, q, 4)
    assert [(p["doc_id"], p["start"], p["end"]) for p in a] == [
        (p["doc_id"], p["start"], p["end"]) for p in b
    ]
    assert [p["score"] for p in a] == pytest.approx([p["score"] for p in b])


def test_search_takes_a_token_budget_as_retrieve_does(tmp_path, capsys):
    """``longctx search --budget T``: the core's token budget (one of --k / --budget), the
    JSON ``budget`` as retrieve's; a budget under every unit is one error line."""
    src = _jsonl(tmp_path)
    out = tmp_path / "c"
    assert main(["index", str(src), "--method", "mixpr", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    argv = ["search", str(out), "-q", QUESTION, "--format", "json"]
    assert main([*argv, "--budget", "60"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["budget"] == {
        "token_budget": 60,
        "unit": "longctx.tokens.count_tokens (SmolLM2 tokens)",
    }
    from longctx.tokens import count_tokens

    assert got["passages"] and sum(count_tokens(p["text"]) for p in got["passages"]) <= 60
    py = MixPRIndex.from_texts(PASSAGES, ids=IDS).search(QUESTION, token_budget=60)
    assert [(p["start"], p["end"]) for p in got["passages"]] == [(h.start, h.end) for h in py.hits]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["budget"] == {"k": 10}
    assert main([*argv, "--budget", "1"]) == 2
    assert "give a larger --budget" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--budget", "5", "--k", "2"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_help_of_search_bench_and_quiet_everywhere(capsys):
    """search's examples one a line (they ran into one), bench's --help without "(default:
    None)", and --quiet on every subcommand (index and ask lacked it)."""
    from longctx.cli import build_parser

    with pytest.raises(SystemExit):
        main(["search", "--help"])
    text = capsys.readouterr().out
    assert "examples:\n  longctx index books/ --method mixpr --out corpus\n  longctx search" in text
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    text = capsys.readouterr().out
    assert "(default: None)" not in text and "--conditions" in text
    parser = build_parser()
    for argv in (["index", "f.txt", "--out", "o"], ["ask", "f.txt", "--graph", "g", "-q", "x"],
                 ["search", "c", "-q", "x"], ["retrieve", "f.txt", "-q", "x"]):  # fmt: skip
        assert parser.parse_args([*argv, "--quiet"]).quiet is True
        assert parser.parse_args(argv).quiet is False
