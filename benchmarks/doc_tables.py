"""The recall tables of the README, the home page and the Benchmarks page, generated from one
source: ``docs/bench.json`` (the last full ``longctx bench`` run) and ``docs/bench-garlic.json``
(GARLIC's NarrativeQA run).

Each table sits between ``<!-- generated: NAME ... -->`` and ``<!-- /generated -->`` in its page;
``tests/test_docs_figures.py`` fails when a page's table is not what this script renders.

    python benchmarks/doc_tables.py --write   # after copying a new bench.json into docs/
    python benchmarks/doc_tables.py           # print the tables
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: ``(page, table name)`` of every generated table.
PAGES = (
    (ROOT / "README.md", "recall-summary"),
    (DOCS / "index.md", "recall-summary"),
    (DOCS / "benchmarks.md", "bench-main"),
)

BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[\w-]+)[^>]*-->\n)(?P<body>.*?)(<!-- /generated -->)", re.S
)

#: The summary's rows: ``(label, task, budgets)``; budgets are shares, or ``k`` for a corpus.
SUMMARY_ROWS = (
    ("SQuAD (5 / 10 / 20%)", "squad", (0.05, 0.1, 0.2)),
    ("NarrativeQA (10 / 20 / 40%)", "narrativeqa", (0.1, 0.2, 0.4)),
    ("HotpotQA, all facts (10 / 20 / 40%)", "hotpotqa", (0.1, 0.2, 0.4)),
    ("bAbI qa2 in 16k tokens (5 / 10 / 20%)", "babilong-qa2@16k", (0.05, 0.1, 0.2)),
    ("bAbI qa3 in 128k tokens (5 / 10 / 20%)", "babilong-qa3@128k", (0.05, 0.1, 0.2)),
    ("HotpotQA pooled, 991 passages: R@2 / R@5 / R@10", "hotpotqa-corpus", (2, 5, 10)),
)


def load(name: str) -> dict:
    return json.loads((DOCS / name).read_text(encoding="utf-8"))


def _cells(rows) -> dict:
    return {(r["task"], r["budget"], r["method"]): r for r in rows}


def _triple(cells, task, budgets, method) -> str | None:
    vals = [cells.get((task, b, method), {}).get("recall") for b in budgets]
    if any(v is None for v in vals):
        return None
    return " / ".join(f"{v:.2f}" for v in vals)


def recall_summary() -> str:
    """The README's and the home page's table: MixPR, its hybrid, BM25, MiniLM and GARLIC
    (135M), with the multi-hop walk on the pooled passages."""
    bench = load("bench.json")
    cells = _cells(bench["results"])
    garlic = _cells(load("bench-garlic.json")["results"])
    n = bench["settings"]["n_questions"]
    n_garlic = load("bench-garlic.json")["settings"]["n_questions"]
    out = [
        "| task (budgets) | MixPR | MixPR hybrid | BM25 | MiniLM | GARLIC (135M) |",
        "|---|---|---|---|---|---|",
    ]
    for label, task, budgets in SUMMARY_ROWS:
        row = [_triple(cells, task, budgets, m) or "" for m in ("mixpr", "mixpr-hybrid")]
        if task == "hotpotqa-corpus":
            walk = _triple(cells, task, budgets, "mixpr-multihop")
            walk_h = _triple(cells, task, budgets, "mixpr-multihop-hybrid")
            row = [f"{row[0]} (multi-hop walk: {walk})", f"{row[1]} (with the walk: {walk_h})"]
        row += [_triple(cells, task, budgets, m) or "" for m in ("bm25", "minilm")]
        g = _triple(garlic, task, budgets, "garlic")
        row.append(f"{g} ({n_garlic} questions)" if g else "")
        out.append(f"| {label} | " + " | ".join(row) + " |")
    out.append("")
    babi = ", ".join(
        f"{q} per subtask at {t // 1000}k tokens"
        for q, t in zip(
            bench["settings"]["babilong_questions"], bench["settings"]["babilong_tokens"]
        )
    )
    out.append(
        f"{n} questions a task (bAbI: {babi}); GARLIC on the first "
        f"{n_garlic} NarrativeQA questions (`docs/bench-garlic.json`; MixPR "
        f"{_triple(garlic, 'narrativeqa', (0.1, 0.2, 0.4), 'mixpr')} on those)."
    )
    return "\n".join(out) + "\n"


def bench_main() -> str:
    """The Benchmarks page's table: every task x budget x method of ``docs/bench.json``
    (:func:`longctx.eval.harness.markdown`'s first table)."""
    sys.path.insert(0, str(ROOT))
    from longctx.eval.harness import markdown

    lines = markdown(load("bench.json")).splitlines()
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table) + "\n"


RENDER = {"recall-summary": recall_summary, "bench-main": bench_main}


def blocks(text: str) -> list[tuple[str, str]]:
    """``(name, body)`` of every generated block of a page."""
    return [(m["name"], m["body"]) for m in BLOCK.finditer(text)]


def rewrite(text: str) -> str:
    """``text`` with every generated block rendered again."""
    return BLOCK.sub(lambda m: m.group(1) + RENDER[m["name"]]() + m.group(4), text)


def main(argv: list[str]) -> int:
    if "--write" in argv:
        for page, _ in PAGES:
            text = page.read_text(encoding="utf-8")
            new = rewrite(text)
            if new != text:
                page.write_text(new, encoding="utf-8")
                print(f"rewrote {page.relative_to(ROOT)}")
        return 0
    for name, render in RENDER.items():
        print(f"<!-- {name} -->\n{render()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
