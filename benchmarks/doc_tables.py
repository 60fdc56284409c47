"""The figures of the README and of docs/, generated from one source each: ``docs/bench.json``
(the last full ``longctx bench`` run), ``docs/bench-garlic.json`` (GARLIC's NarrativeQA run),
``docs/figures.json`` (figures no bench run holds, each with its date, exact command and
conditions), ``docs/bench-apps.json`` (the guides' two apps: ``benchmarks/bench_apps.py --out``)
and ``docs/test-suite.json`` (the size of the test suite and its last timed run).

Spans of ``docs/figures.json`` need no code: ``<!-- fig: ENTRY-source -->`` renders an entry's
script, date and conditions, ``<!-- fig: ENTRY-PART -->`` its ``show[PART]`` template
(:meth:`str.format` over the entry's fields). ``<!-- fig: apps-APP-PART -->`` renders a row of
``docs/bench-apps.json`` (:data:`APPS`). Every row of the README's "Speed" table names its source
this way or in its text (``tests/test_docs_figures.py``).

A table or paragraph sits between ``<!-- generated: NAME ... -->`` and ``<!-- /generated -->``;
a figure inside a sentence or a table cell between ``<!-- fig: NAME -->`` and ``<!-- /fig -->``
(it may wrap onto more lines; ``--write`` renders it on one). ``tests/test_docs_figures.py``
fails when a page's block or span is not what this script renders (a stale page).

    python benchmarks/doc_tables.py --write                 # after a new bench.json / figures.json
    python benchmarks/doc_tables.py --check                 # exit 1 naming the stale pages
    python benchmarks/doc_tables.py --count-tests --write   # recount the tests (the lead, last)
    python benchmarks/doc_tables.py                         # print the blocks and spans
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: ``(page, block name)`` of every generated block.
PAGES = (
    (ROOT / "README.md", "recall-summary"),
    (DOCS / "index.md", "recall-summary"),
    (DOCS / "benchmarks.md", "bench-main"),
    (DOCS / "benchmarks.md", "bench-costs"),
    (DOCS / "benchmarks.md", "bench-sizes"),
    (DOCS / "benchmarks.md", "bench-babi-rss"),
    (DOCS / "guide" / "install.md", "test-suite"),
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


#: a figure span; its body may wrap onto more lines but holds no other marker (``<!--``)
INLINE = re.compile(
    r"(<!-- fig: (?P<name>[\w-]+) -->)(?P<body>(?:(?!<!--).)*?)(<!-- /fig -->)", re.S
)
#: the opening and closing marker of a figure span, counted apart (a marker :data:`INLINE` does
#: not pair is a span never checked: ``tests/test_docs_figures.py``)
SPAN_OPEN, SPAN_CLOSE = "<!-- fig: ", "<!-- /fig -->"


def load(name: str) -> dict:
    return json.loads((DOCS / name).read_text(encoding="utf-8"))


def all_pages() -> list[Path]:
    """README.md and every Markdown page under docs/: where blocks and spans may sit."""
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _cells(rows) -> dict:
    return {(r["task"], r["budget"], r["method"]): r for r in rows}


def _triple(cells, task, budgets, method) -> str | None:
    vals = [cells.get((task, b, method), {}).get("recall") for b in budgets]
    if any(v is None for v in vals):
        return None
    return " / ".join(f"{v:.2f}" for v in vals)


def recall_summary() -> str:
    """The README's and the home page's table: MixPR, MixPR over MiniLM's hits (the hybrid
    that embeds nothing: ``mixpr-seeded``) and fused with them (``mixpr-fused``), the hybrid
    that embeds MixPR's units, BM25, MiniLM and GARLIC (135M), with the multi-hop walk on the
    pooled passages."""
    bench = load("bench.json")
    cells = _cells(bench["results"])
    garlic = _cells(load("bench-garlic.json")["results"])
    n = bench["settings"]["n_questions"]
    n_garlic = load("bench-garlic.json")["settings"]["n_questions"]
    out = [
        "| task (budgets) | MixPR | MixPR over MiniLM's hits | fused with MiniLM "
        "(`keep_firsts`) | MixPR hybrid (embeds its units) | BM25 | MiniLM | GARLIC (135M) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ours = ("mixpr", "mixpr-seeded", "mixpr-fused", "mixpr-hybrid")
    for label, task, budgets in SUMMARY_ROWS:
        row = [_triple(cells, task, budgets, m) or "" for m in ours]
        if task == "hotpotqa-corpus":
            walk = _triple(cells, task, budgets, "mixpr-multihop")
            walk_h = _triple(cells, task, budgets, "mixpr-multihop-hybrid")
            row[0] = f"{row[0]} (multi-hop walk: {walk})"
            row[3] = f"{row[3]} (with the walk: {walk_h})"
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


def _harness_table(header: str) -> str:
    """The table of :func:`longctx.eval.harness.markdown` (``docs/bench.json``) whose header row
    starts with ``header``."""
    sys.path.insert(0, str(ROOT))
    from longctx.eval.harness import markdown

    lines = markdown(load("bench.json")).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end]) + "\n"


def bench_main() -> str:
    """The Benchmarks page's table: every task x budget x method of ``docs/bench.json``
    (:func:`longctx.eval.harness.markdown`'s first table)."""
    return _harness_table("| task | budget |")


def test_suite() -> str:
    """The install guide's paragraph on the test suite (``docs/test-suite.json``)."""
    t = load("test-suite.json")
    run = t["timed_run"]
    return (
        f"`make test` runs {t['tests']:,} tests (counted {t['counted']} with `pytest "
        f"--collect-only -q`). The last timed run of the whole suite ({run['how']}, "
        f"{run['date']}) took {run['seconds']} s for {run['tests']:,} tests, about "
        f"{round(run['seconds'] / 60)} minutes; much longer on a busy machine.\n"
    )


def bench_costs() -> str:
    """The Benchmarks page's cost per method: build seconds a document, query seconds a question
    and peak RSS, the harness's own table of ``docs/bench.json``."""
    return _harness_table("| method | build s / doc")


#: the methods of the Benchmarks page's per-size table and their labels there (the methods that
#: use MiniLM read its vectors from ``--cache`` when it holds them: ``settings.conditions``)
SIZE_METHODS = {
    "mixpr": "mixpr",
    "mixpr-hybrid": "mixpr-hybrid (MiniLM embeds its units, or reads them from `--cache`)",
    "mixpr-paper": "mixpr-paper",
    "mixpr-multihop": "mixpr-multihop",
    "bm25": "bm25",
    "minilm": "minilm (its build embeds the sentences, or reads them from `--cache`)",
    "mmr": "mmr (MiniLM's vectors, as minilm)",
}


def _mean(rows, key: str) -> float:
    return sum(r[key] for r in rows) / len(rows)


def _babi_128k(rows, method: str) -> list[dict]:
    """``method``'s rows of bAbI qa1, qa2 and qa3 at 128k tokens and 5%, in that order."""
    task = re.compile(r"babilong-qa[123]@128k")
    rows = [r for r in rows if r["method"] == method and r["budget"] == 0.05]
    return sorted((r for r in rows if task.fullmatch(r["task"])), key=lambda r: r["task"])


def bench_sizes() -> str:
    """The Benchmarks page's seconds per document size (``docs/bench.json``): a SQuAD article
    (its 5% budget: one build, 12 questions) and a 128k-token bAbI haystack (the mean over
    qa1, qa2 and qa3 at 5%: each question its own document), mean seconds; then the run's
    conditions and the hybrid's three bAbI builds (the first embeds the haystack's units, the
    later ones find most of them cached) and its cold SQuAD build (``mixpr-hybrid-cold`` of
    ``docs/figures.json``)."""
    bench = load("bench.json")
    rows = bench["results"]
    out = [
        "| method | SQuAD article: build | SQuAD: per query | bAbI 128k: build "
        "| bAbI 128k: per query |",
        "|---|---|---|---|---|",
    ]
    for m, label in SIZE_METHODS.items():
        squad = [r for r in rows if (r["task"], r["budget"], r["method"]) == ("squad", 0.05, m)]
        babi = _babi_128k(rows, m)
        out.append(
            f"| {label} | {_mean(squad, 'build_s'):.3f} | {_mean(squad, 'query_s'):.3f} | "
            f"{_mean(babi, 'build_s'):.2f} | {_mean(babi, 'query_s'):.3f} |"
        )
    hybrid = ", ".join(
        f"{r['task'].split('@')[0].split('-')[1]} {r['build_s']:.2f} s"
        for r in _babi_128k(rows, "mixpr-hybrid")
    )
    out += [
        "",
        f"Conditions of the run: {bench_conditions()}. The mixpr-hybrid builds on bAbI 128k: "
        f"{hybrid} (the same Gutenberg haystack under each subtask's facts: the first build "
        "embeds its units, the later ones find most of them cached); its SQuAD build with an "
        f"empty `--cache`: {hybrid_cold_build()} a SQuAD article "
        f"({figure_span('mixpr-hybrid-cold-source')}).",
    ]
    return "\n".join(out) + "\n"


def bench_babi_rss() -> str:
    """The Benchmarks page's peak RSS per method on bAbI's haystacks (``docs/bench.json``): the
    most over qa1-qa3 at each size, MB."""
    bench = load("bench.json")
    rows = [r for r in bench["results"] if r["task"].startswith("babilong-") and "peak_rss_mb" in r]
    methods = [m for m in bench["settings"]["methods"] if any(r["method"] == m for r in rows)]
    out = ["| method | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for tokens in sorted(bench["settings"]["babilong_tokens"], reverse=True):
        size = f"@{tokens // 1000}k"
        peaks = [
            max(r["peak_rss_mb"] for r in rows if r["method"] == m and r["task"].endswith(size))
            for m in methods
        ]
        out.append(
            f"| peak RSS MB, bAbI {tokens // 1000}k | "
            + " | ".join(f"{p:.0f}" for p in peaks)
            + " |"
        )
    return "\n".join(out) + "\n"


RENDER = {
    "recall-summary": recall_summary,
    "bench-main": bench_main,
    "test-suite": test_suite,
    "bench-costs": bench_costs,
    "bench-sizes": bench_sizes,
    "bench-babi-rss": bench_babi_rss,
}


# -- figures inside sentences and table cells ------------------------------------------------------
def _g(v) -> str:
    return f"{v:g}"


def _range(vals) -> str:
    lo, hi = min(vals), max(vals)
    return f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"


def _figure(name: str) -> dict:
    return load("figures.json")["figures"][name]


def squad_5pct() -> str:
    cells = _cells(load("bench.json")["results"])
    r = {m: cells[("squad", 0.05, m)]["recall"] for m in ("mixpr", "bm25", "minilm")}
    return (
        f"SQuAD at 5%: {r['mixpr']:.2f} against BM25 {r['bm25']:.2f} and MiniLM {r['minilm']:.2f}"
    )


def _cell(task: str, budget, method: str) -> str:
    """The recall of one ``docs/bench.json`` cell, 2 decimals."""
    return f"{_cells(load('bench.json')['results'])[(task, budget, method)]['recall']:.2f}"


def _at(task: str, budgets, method: str) -> str:
    return " / ".join(_cell(task, b, method) for b in budgets)


def hotpot_pooled() -> str:
    """MixPR's, BM25's and MiniLM's R@2 / R@5 on the pooled HotpotQA passages."""
    t, ks = "hotpotqa-corpus", (2, 5)
    return (
        f"R@2 / R@5 {_at(t, ks, 'mixpr')} without a model, where BM25 has {_at(t, ks, 'bm25')} "
        f"and MiniLM {_at(t, ks, 'minilm')}"
    )


def hotpot_walk() -> str:
    """The multi-hop walk's R@2 / R@5 / R@10 on the pooled HotpotQA passages, without and with
    MiniLM, beside BM25, MixPR (default and ``mixpr-pagerank``), MiniLM and the hybrid."""
    t, ks = "hotpotqa-corpus", (2, 5, 10)
    r = {m: _at(t, ks, m) for m in (
        "mixpr-multihop", "bm25", "mixpr", "mixpr-pagerank", "mixpr-multihop-hybrid", "minilm",
        "mixpr-hybrid",
    )}  # fmt: skip
    return (
        f"{r['mixpr-multihop']} without embeddings (BM25 {r['bm25']}, MixPR's default "
        f"{r['mixpr']}, `mixpr-pagerank` {r['mixpr-pagerank']}) and "
        f"{r['mixpr-multihop-hybrid']} with MiniLM (MiniLM {r['minilm']}, the hybrid "
        f"{r['mixpr-hybrid']})"
    )


def bench_conditions() -> str:
    """The conditions of the ``longctx bench`` run in ``docs/bench.json``."""
    return load("bench.json")["settings"]["conditions"]


def hotpot_untitled() -> str:
    """The same without the passages' title lines: MixPR against MiniLM."""
    t, ks = "hotpotqa-corpus-untitled", (2, 5)
    return f"{_at(t, ks, 'mixpr')} against MiniLM's {_at(t, ks, 'minilm')}"


def hybrid_narrativeqa() -> str:
    """The hybrid that embeds its units against MiniLM on NarrativeQA at 20%."""
    hybrid, minilm = (_cell("narrativeqa", 0.2, m) for m in ("mixpr-hybrid", "minilm"))
    return f"NarrativeQA at 20%: {hybrid} against {minilm}"


def multilexsum() -> str:
    """Multi-LexSum's ROUGE-L at 20%: the lead (BM25's column: no query), truncation, MixPR's
    PageRank and MMR."""
    r = {m: _cell("multilexsum", 0.2, m) for m in ("bm25", "truncate", "mixpr-pagerank", "mmr")}
    return (
        f"Multi-LexSum ROUGE-L at 20%: lead (BM25 column, no query) {r['bm25']}, truncation "
        f"{r['truncate']}, MixPR PageRank {r['mixpr-pagerank']}, MMR {r['mmr']}"
    )


def babi_multihop() -> str:
    """MixPR's and BM25's recall range over bAbI qa2 and qa3 (the chains of two and three
    facts) at every size and budget of ``docs/bench.json``."""
    bench = load("bench.json")
    rows = [r for r in bench["results"] if re.match(r"babilong-qa[23]@", r["task"])]
    sizes = bench["settings"]["babilong_tokens"]
    mixpr = _range([r["recall"] for r in rows if r["method"] == "mixpr"])
    bm25 = _range([r["recall"] for r in rows if r["method"] == "bm25"])
    return (
        f"bAbI qa2 and qa3 in {min(sizes) // 1000}k-{max(sizes) // 1000}k tokens {mixpr} at "
        f"every budget, where BM25 finds {bm25}"
    )


def mixpr_10m() -> str:
    g = _figure("mixpr-growth")
    i = g["words_millions"].index(10)
    build, query = _g(g["build_s"][i]), _g(g["query_ms_median"][i])
    return f"10M words: {build} s to build, {query} ms a query (median)"


def mixpr_growth_build() -> str:
    g = _figure("mixpr-growth")
    return " / ".join(f"{_g(v)} s" for v in g["build_s"]) + f" ({_g(g['peak_rss_gb'][-1])} GB)"


def mixpr_growth_query() -> str:
    return " / ".join(f"{_g(v)} ms" for v in _figure("mixpr-growth")["query_ms_median"]) + (
        " (medians)"
    )


def mixpr_growth_short() -> str:
    g = _figure("mixpr-growth")
    words = " / ".join(f"{w}M" for w in g["words_millions"])
    build = " / ".join(_g(v) for v in g["build_s"])
    query = " / ".join(_g(v) for v in g["query_ms_median"])
    return (
        f"{words} words: {build} s to build, {query} ms a query (medians; {g['date']}, "
        f"`{g['script'].split()[0]}`)"
    )


def mixpr_insert() -> str:
    f = _figure("mixpr-insert")
    return f"{_g(f['insert_s'])} s / {_g(f['delete_s'])} s"


def bench_date() -> str:
    """The date of the ``longctx bench`` run in ``docs/bench.json``."""
    return load("bench.json")["settings"]["date"]


def _squad_costs(method: str) -> tuple[float, float]:
    """``(build s, query s)`` of ``method`` on SQuAD at 5% in ``docs/bench.json``."""
    r = _cells(load("bench.json")["results"])[("squad", 0.05, method)]
    return r["build_s"], r["query_s"]


def _squad_cost(method: str, which: int) -> str:
    """``method``'s build (``which`` 0) or query (1) seconds on SQuAD at 5%, 3 decimals."""
    return f"{_squad_costs(method)[which]:.3f} s"


#: span -> ``(method, 0 build | 1 query)`` of :func:`_squad_cost`
SQUAD_COSTS = {
    "mixpr-squad-build": ("mixpr", 0),
    "mixpr-squad-query": ("mixpr", 1),
    "mmr-squad-query": ("mmr", 1),
}


def bench_source() -> str:
    """The command, date and conditions of ``docs/bench.json``: a Speed row's source."""
    return f"`longctx bench` (`docs/bench.json`), {bench_date()}, {bench_conditions()}"


def _spread(runs, unit: str, fmt=_g) -> str:
    """``runs`` (one list a run, one value a size) as ``lo-hi unit`` a size (``fmt`` each; one
    value where the runs agree), ``" / "`` between sizes."""
    out = []
    for vals in zip(*runs):
        lo, hi = fmt(min(vals)), fmt(max(vals))
        out.append(f"{lo} {unit}" if lo == hi else f"{lo}-{hi} {unit}")
    return " / ".join(out)


def _cents(v) -> str:
    return f"{v:.2f}"


def _tenths(v) -> str:
    return f"{v:.1f}"


def mixpr_vs_bm25_build() -> str:
    f = _figure("mixpr-vs-bm25")
    mixpr = _spread(f["mixpr_build_s"], "s", _cents)
    return f"{mixpr} (bm25s {_spread(f['bm25s_build_s'], 's', _cents)})"


def mixpr_vs_bm25_query() -> str:
    f = _figure("mixpr-vs-bm25")
    mixpr = _spread(f["mixpr_query_ms_median"], "ms")
    return f"{mixpr} (bm25s {_spread(f['bm25s_query_ms_median'], 'ms')}; medians)"


def _per_run(values) -> list:
    """One value a run (a single size) as :func:`_spread`'s runs."""
    return [[v] for v in values]


def _runs(entry: str, field: str, unit: str, fmt=_g) -> str:
    """``field`` of the ``docs/figures.json`` entry ``entry``, one value a run, as ``lo-hi
    unit`` (:func:`_spread`)."""
    return _spread(_per_run(_figure(entry)[field]), unit, fmt)


def mixpr_mmap_open() -> str:
    f = _figure("mixpr-mmap")
    mb = _spread(_per_run(f["open_resident_mb"]), "MB")
    return f"open {_spread(_per_run(f['open_s']), 's')}, {mb} resident"


def mixpr_mmap_query() -> str:
    f = _figure("mixpr-mmap")
    first = _spread(_per_run(f["first_query_ms"]), "ms")
    return f"first {first}, then {_spread(_per_run(f['next_query_ms']), 'ms')}"


def mixpr_paragraphs_build() -> str:
    return _runs("mixpr-paragraphs", "build_s", "s", _cents)


def mixpr_paragraphs_query() -> str:
    runs = _figure("mixpr-paragraphs")["query_ms_median"]
    return _runs("mixpr-paragraphs", "query_ms_median", "ms", _tenths) + (
        " (medians)" if len(runs) > 1 else " (median)"
    )


def _thousandths(v) -> str:
    return f"{v:.3f}"


def hybrid_cold_build() -> str:
    """The hybrid's SQuAD build with an empty ``--cache`` (``mixpr-hybrid-cold``), a run each."""
    return _runs("mixpr-hybrid-cold", "build_s", "s", _cents)


def hybrid_cold_query() -> str:
    return _runs("mixpr-hybrid-cold", "query_s", "s", _thousandths)


def _source(command: str, date: str, conditions: str | None = None) -> str:
    """A Speed row's source: the script of ``command`` (``longctx bench`` for the CLI's), the
    date and the conditions; the exact command stays in its JSON file."""
    words = command.split()
    script = " ".join(words[:2]) if words[0] == "longctx" else words[0]
    return f"`{script}`, {date}" + (f", {conditions}" if conditions else "")


# -- figures of docs/figures.json by template, and every entry's source ----------------------------
#: fields computed from an entry's measured ones (never typed into ``docs/figures.json``):
#: entry -> {field: function of the entry}
DERIVED = {
    "explain-bridges": {
        "explain_on_ms_ratio": lambda f: f"{f['explain_on_ms'] / f['explain_off_ms']:.1f}",
    },
}


def figure_fields(key: str) -> dict:
    """The fields of the ``docs/figures.json`` entry ``key`` with its :data:`DERIVED` ones: what
    its ``show`` templates format."""
    f = load("figures.json")["figures"][key]
    return {**f, **{k: fn(f) for k, fn in DERIVED.get(key, {}).items()}}


def figure_entry(name: str) -> str | None:
    """The ``docs/figures.json`` entry a span ``name`` renders from: the longest entry ``KEY``
    with ``name`` ``KEY`` or ``KEY-...`` (``None`` for none)."""
    figures = load("figures.json")["figures"]
    return next(
        (
            k
            for k in sorted(figures, key=len, reverse=True)
            if name == k or name.startswith(k + "-")
        ),
        None,
    )


def source_span(name: str) -> str:
    """The name of the span that renders the source of the figure span ``name``: its
    ``docs/figures.json`` entry's ``KEY-source``, ``apps-APP-source`` for an app's span,
    ``bench-source`` for the figures of ``docs/bench.json``."""
    if name.startswith("apps-"):
        return "apps-" + name[len("apps-") :].partition("-")[0] + "-source"
    key = figure_entry(name)
    return "bench-source" if key is None else f"{key}-source"


def figure_span(name: str) -> str:
    """The span ``NAME-PART`` of the ``docs/figures.json`` entry ``NAME``: ``PART`` ``source``
    renders its script, date and conditions (:func:`_source`); any other ``PART`` the entry's
    ``show[PART]`` template (:meth:`str.format` over :func:`figure_fields`). ``KeyError`` for an
    unknown span."""
    key = figure_entry(name)
    if key is None or name == key:
        raise KeyError(name)
    f, part = figure_fields(key), name[len(key) + 1 :]
    if part == "source":
        return _source(f["script"], f["date"], f.get("conditions"))
    return f["show"][part].format(**f)


def inline_names() -> set[str]:
    """Every span name this script renders."""
    figures = load("figures.json")["figures"]
    names = set(INLINE_RENDER)
    for key, f in figures.items():
        names.add(f"{key}-source")
        names.update(f"{key}-{part}" for part in f.get("show", {}))
    apps = load("bench-apps.json")["results"]
    names.update(f"apps-{app}-{part}" for app in apps for part in [*APPS, "source"])
    return names


def render_inline(name: str) -> str:
    """The text of the span ``name`` (``KeyError`` for a name this script does not render)."""
    if name in INLINE_RENDER:
        return INLINE_RENDER[name]()
    if name.startswith("apps-"):
        return apps_span(name)
    return figure_span(name)


# -- the guides' two apps: docs/bench-apps.json (benchmarks/bench_apps.py --out) -------------------
HYBRID_AT_TOKENS = "hybrid @ app's tokens"
MIXPR_AT_TOKENS = "mixpr @ app's tokens"
HYBRID_CHUNKS = "hybrid (app's chunks)"
MIXPR_CHUNKS = "mixpr (app's chunks)"


def _found(r: dict, row: str) -> str:
    """``found/asked`` of ``row`` of an app's results."""
    v = r["retrievers"][row]
    return f"{v['found']}/{len(v['per_question'])}"


def _app_hybrid(r: dict) -> str:
    rows = r["retrievers"]
    return (
        f"the hybrid builds in {rows['hybrid']['build_s']:.2f} s (plain MixPR "
        f"{rows['mixpr']['build_s']:.2f} s) and answers in "
        f"{rows[HYBRID_AT_TOKENS]['ms_per_query']} ms (MixPR "
        f"{rows[MIXPR_AT_TOKENS]['ms_per_query']} ms, both asked for the app's tokens; the app "
        f"{rows['app']['ms_per_query']} ms, whose retrieval the hybrid's includes)"
    )


#: ``part`` of an ``apps-<app>-<part>`` span -> its text from that app's results.
APPS = {
    "embed": lambda r: (
        f"{r['chunks']:,} chunks embedded in {r['retrievers']['app']['build_s']:.0f} s on the "
        f"script's first run, {r.get('embed_date') or 'date not recorded'}"
    ),
    "hybrid": _app_hybrid,
    "tokens": lambda r: (
        f"{_found(r, HYBRID_AT_TOKENS)} (the app {_found(r, 'app')}, MixPR "
        f"{_found(r, MIXPR_AT_TOKENS)})"
    ),
    "units": lambda r: f"{_found(r, 'hybrid')}, where MixPR finds {_found(r, 'mixpr')}",
    "grain": lambda r: (
        f"{_found(r, HYBRID_CHUNKS)} in a top 5 (the app {_found(r, 'app')}; MixPR over the "
        f"same chunks {_found(r, MIXPR_CHUNKS)}), built in "
        f"{r['retrievers'][HYBRID_CHUNKS]['build_s']:.2f} s over the {r['chunks']:,} chunks"
    ),
    "fused": lambda r: (
        f"{_found(r, 'fusion (recipe)')} questions in its top 5, where the app's top 5 finds "
        f"{_found(r, 'app')}"
    ),
    "fusion": lambda r: (
        f"{_found(r, 'fusion (recipe)')}, where the app's top 5 finds {_found(r, 'app')} and "
        f"the framework's fusion at its defaults (top 5) {_found(r, 'fusion (defaults)')}"
    ),
}


def apps_span(name: str) -> str:
    """The span ``apps-<app>-<part>`` (:data:`APPS`) from ``docs/bench-apps.json``;
    ``apps-<app>-source`` names the command and the date of the run (``KeyError`` for an
    unknown part or app)."""
    bench = load("bench-apps.json")
    app, _, part = name[len("apps-") :].partition("-")
    if part == "source":
        return _source(bench["settings"]["command"], bench["settings"]["date"])
    return APPS[part](bench["results"][app])


INLINE_RENDER = {
    **{name: functools.partial(_squad_cost, *how) for name, how in SQUAD_COSTS.items()},
    "bench-date": bench_date,
    "squad-5pct": squad_5pct,
    "babi-multihop": babi_multihop,
    "hotpot-pooled": hotpot_pooled,
    "hotpot-untitled": hotpot_untitled,
    "hotpot-walk": hotpot_walk,
    "bench-conditions": bench_conditions,
    "hybrid-narrativeqa": hybrid_narrativeqa,
    "multilexsum": multilexsum,
    "mixpr-growth-10m": mixpr_10m,
    "mixpr-growth-build": mixpr_growth_build,
    "mixpr-growth-query": mixpr_growth_query,
    "mixpr-growth-short": mixpr_growth_short,
    "mixpr-insert": mixpr_insert,
    "bench-source": bench_source,
    "mixpr-vs-bm25-build": mixpr_vs_bm25_build,
    "mixpr-vs-bm25-query": mixpr_vs_bm25_query,
    "mixpr-mmap-open": mixpr_mmap_open,
    "mixpr-mmap-query": mixpr_mmap_query,
    "mixpr-paragraphs-build": mixpr_paragraphs_build,
    "mixpr-paragraphs-query": mixpr_paragraphs_query,
    "mixpr-hybrid-cold-build": hybrid_cold_build,
    "mixpr-hybrid-cold-query": hybrid_cold_query,
}


def spans(text: str) -> list[tuple[str, str]]:
    """``(name, body)`` of every inline figure span of a page."""
    return [(m["name"], m["body"]) for m in INLINE.finditer(text)]


def count_tests() -> int:
    """Collect the test suite (``pytest --collect-only -q``, no test run) and write the count
    and today's date into ``docs/test-suite.json``; returns the count."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = re.search(r"^(\d+) tests? collected", out.stdout, re.M)
    if out.returncode != 0 or found is None:
        raise SystemExit(f"pytest --collect-only failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    n = int(found.group(1))
    path = DOCS / "test-suite.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(tests=n, counted=datetime.date.today().isoformat())
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return n


def blocks(text: str) -> list[tuple[str, str]]:
    """``(name, body)`` of every generated block of a page."""
    return [(m["name"], m["body"]) for m in BLOCK.finditer(text)]


def rewrite(text: str) -> str:
    """``text`` with every generated block and figure span rendered again (``KeyError`` for a
    name this script does not render)."""
    text = BLOCK.sub(lambda m: m.group(1) + RENDER[m["name"]]() + m.group(4), text)
    return INLINE.sub(lambda m: m.group(1) + render_inline(m["name"]) + m.group(4), text)


def stale_pages() -> list[Path]:
    """The pages (:func:`all_pages`) whose blocks or spans :func:`rewrite` would change;
    ``SystemExit`` naming the page of a block or span this script does not render."""
    stale = []
    for page in all_pages():
        text = page.read_text(encoding="utf-8")
        try:
            new = rewrite(text)
        except KeyError as e:
            raise SystemExit(f"{page.relative_to(ROOT)}: no block or figure named {e}") from None
        if new != text:
            stale.append(page)
    return stale


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Render the README's and docs' generated blocks and figure spans from "
        "docs/bench*.json, docs/figures.json and docs/test-suite.json; without an option, "
        "print them."
    )
    p.add_argument("--write", action="store_true", help="rewrite the stale pages in place")
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 naming each stale page (a block or span not what its source renders)",
    )
    p.add_argument(
        "--count-tests",
        action="store_true",
        help="collect the test suite and write the count into docs/test-suite.json (the lead, "
        "last; with --write the install guide then states it)",
    )
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.count_tests:
        print(f"docs/test-suite.json: {count_tests()} tests")
    if args.write:
        for page in stale_pages():
            page.write_text(rewrite(page.read_text(encoding="utf-8")), encoding="utf-8")
            print(f"rewrote {page.relative_to(ROOT)}")
    if args.check:
        stale = stale_pages()
        for page in stale:
            print(f"stale: {page.relative_to(ROOT)} (run python benchmarks/doc_tables.py --write)")
        return 1 if stale else 0
    if not (args.write or args.count_tests):
        for name, render in {**RENDER, **INLINE_RENDER}.items():
            print(f"<!-- {name} -->\n{render()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
