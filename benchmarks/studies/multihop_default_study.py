"""``walk="auto"`` (issue 37) on ``hotpotqa-corpus`` and ``hotpotqa-corpus-untitled``: the
default against the PageRank walk and the multi-hop preset, in Python (``chunk=False``), through
both frameworks' retrievers (whole passages) and through the CLI (``longctx index --method
mixpr`` over one file per passage, then ``longctx search --format json``); R@2 / R@5 / R@10 on
all questions and on the bench's first 60. ``docs/notes/multihop-default.md`` holds the
figures. Run from the repository root (a few minutes on 2 busy cores)::

    PYTHONPATH=$PWD python benchmarks/studies/multihop_default_study.py --data ../shared/data \\
        [--questions 100] [--skip-frameworks] [--skip-cli]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
from pathlib import Path

import numpy as np

from longctx.eval.tasks import load_task, passage_recall
from longctx.mixpr import MixPRIndex

KS = (2, 5, 10)
TASKS = ("hotpotqa-corpus", "hotpotqa-corpus-untitled")


def report(label: str, orders, corpus) -> None:
    rec = np.array(
        [
            [passage_recall(list(o)[:k], q.gold) for k in KS]
            for o, q in zip(orders, corpus.questions)
        ]
    )
    print(
        f"{label:60s}",
        " ".join(f"{100 * v:5.1f}" for v in rec.mean(0)),
        "| first 60:",
        " ".join(f"{100 * v:5.1f}" for v in rec[:60].mean(0)),
        flush=True,
    )


def python_rows(corpus) -> None:
    passages = list(corpus.passages)
    for name, kw in (
        ("pagerank", {"walk": "pagerank"}),
        ("default", {}),
        ("multihop", {"preset": "multihop"}),
    ):
        ix = MixPRIndex.from_texts(passages, chunk=False, **kw)
        orders = [
            np.argsort(-ix.score(q.query)[0], kind="stable").tolist() for q in corpus.questions
        ]
        report(f"{corpus.task} python {name}", orders, corpus)


def framework_rows(corpus) -> None:
    from llama_index.core.schema import TextNode

    from langchain_longctx import MixPRRetriever as LangChainRetriever
    from llamaindex_longctx import MixPRRetriever as LlamaIndexRetriever

    passages, ids = list(corpus.passages), list(corpus.titles)
    pos = {t: i for i, t in enumerate(ids)}
    nodes = [TextNode(text=p, id_=t) for p, t in zip(passages, ids)]
    li = LlamaIndexRetriever(nodes=nodes, chunk_nodes=False, similarity_top_k=10)
    lc = LangChainRetriever.from_texts(passages, ids=ids, chunk_documents=False, k=10)
    orders = []
    for q in corpus.questions:
        got = sorted(li.retrieve(q.query), key=lambda n: -n.score)
        orders.append([pos[n.node.node_id] for n in got])
    report(f"{corpus.task} llamaindex default", orders, corpus)
    orders = []
    for q in corpus.questions:
        got = sorted(lc.invoke(q.query), key=lambda d: -d.metadata["longctx_score"])
        orders.append([pos[d.metadata["longctx_source_id"]] for d in got])
    report(f"{corpus.task} langchain default", orders, corpus)


def cli_rows(corpus, extra: list[str], whole: bool = False) -> None:
    from longctx.cli import main

    tmp = Path(tempfile.mkdtemp())
    names = [f"p{i:04d}.txt" for i in range(len(corpus.passages))]
    if whole:  # whole passages through the corpus API (chunk=False), searched by the CLI
        from longctx.corpus import build_indexes

        build_indexes(list(zip(names, corpus.passages)), "mixpr", str(tmp / "ix"), progress=False,
                      chunk=False)  # fmt: skip
    else:
        (tmp / "docs").mkdir()
        for n, p in zip(names, corpus.passages):
            (tmp / "docs" / n).write_text(p, encoding="utf-8")
        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(["index", str(tmp / "docs"), "--method", "mixpr", "--out", str(tmp / "ix"),
                       "--no-progress", *extra])  # fmt: skip
        assert rc == 0
    orders, walks = [], {}
    for q in corpus.questions:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["search", str(tmp / "ix"), "-q", q.query, "--k", "30", "--format", "json"])
        d = json.loads(out.getvalue())
        for t in d.get("trace", []):
            walks[t.get("walk")] = walks.get(t.get("walk"), 0) + 1
        hits = sorted(d["passages"], key=lambda p: -p["score"])
        orders.append(list(dict.fromkeys(int(d["doc_ids"][p["source"]][1:5]) for p in hits)))
    label = "whole passages" if whole else (" ".join(extra) or "default")
    report(f"{corpus.task} cli {label} {walks}", orders, corpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "data"
    )
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--skip-frameworks", action="store_true")
    ap.add_argument("--skip-cli", action="store_true")
    args = ap.parse_args()
    for task in TASKS:
        corpus = load_task(task, args.data, args.questions)
        python_rows(corpus)
        if not args.skip_frameworks:
            framework_rows(corpus)
        if not args.skip_cli:
            cli_rows(corpus, [])
            cli_rows(corpus, ["--preset", "multihop"])
            cli_rows(corpus, [], whole=True)


if __name__ == "__main__":
    main()
