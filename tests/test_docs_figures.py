"""The docs' figures come from one source (issue 38: the home page said HotpotQA at 40% MixPR 0.53
where the README and the Benchmarks page said 0.77).

- The recall tables between ``<!-- generated: NAME -->`` and ``<!-- /generated -->`` markers
  (README, home page, Benchmarks page) are exactly what ``benchmarks/doc_tables.py`` renders from
  ``docs/bench.json`` and ``docs/bench-garlic.json``.
- Every figure the home page and the README's "Which method when", "Recall, measured" and "Speed"
  sections state is held by a source: the bench JSON files or the notes' own text
  (``docs/notes/*.md``, ``docs/studies/*.md``, ``benchmarks/MIXPR_DEFAULTS.md``).
- The built API pages show no raw reStructuredText (``.. code-block::``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FIGURE = re.compile(r"(?<![\w.:/-])(\d+\.\d+)(?![\w.]*\d)")


def _doc_tables():
    from tests._fixtures import load_script

    return load_script("benchmarks/doc_tables.py")


def test_generated_tables_are_what_their_source_renders():
    tables = _doc_tables()
    for page, name in tables.PAGES:
        found = dict(tables.blocks(page.read_text(encoding="utf-8")))
        assert name in found, f"{page.name}: no generated {name} table"
        assert found[name] == tables.RENDER[name](), (
            f"{page.name}: the {name} table differs from docs/bench*.json: run "
            "python benchmarks/doc_tables.py --write"
        )


#: The fields of a bench result a page may quote, and the decimals it quotes them at.
JSON_FIELDS = {"recall": (2,), "share": (2,), "qa_f1": (2,), "build_s": (2, 3), "query_s": (3, 4)}


def _json_figures(rows, out: set) -> None:
    for r in rows:
        for key, digits in JSON_FIELDS.items():
            v = r.get(key)
            if isinstance(v, float):
                out.update(f"{v:.{d}f}" for d in digits)
                if key == "query_s":
                    out.add(f"{v * 1000:.1f}")  # a query in ms


def _dated_figures(value, out: set) -> None:
    """The decimals of ``docs/figures.json`` (each entry dated, naming its script), as a page
    may write them: as stored, at one and at two decimals."""
    if isinstance(value, dict):
        for v in value.values():
            _dated_figures(v, out)
    elif isinstance(value, list):
        for v in value:
            _dated_figures(v, out)
    elif isinstance(value, float):
        out.update((str(value), f"{value:.1f}", f"{value:.2f}"))


def source_figures() -> set[str]:
    """Every figure a page may state: the bench JSON files' recalls (2 decimals) and seconds
    (:data:`JSON_FIELDS`), the dated figures of ``docs/figures.json`` and the figures written in
    the notes and studies."""
    out: set[str] = set()
    for f in DOCS.glob("bench*.json"):
        rows = json.loads(f.read_text(encoding="utf-8"))["results"]
        if isinstance(rows, list):  # bench-apps.json holds the apps' rows by name
            _json_figures(rows, out)
    _dated_figures(json.loads((DOCS / "figures.json").read_text(encoding="utf-8")), out)
    notes = [
        *DOCS.glob("notes/*.md"),
        *DOCS.glob("studies/*.md"),
        ROOT / "benchmarks" / "MIXPR_DEFAULTS.md",
    ]
    for f in notes:
        text = f.read_text(encoding="utf-8")
        out.update(FIGURE.findall(text))
        out.update("0" + x for x in re.findall(r"(?<![\d])(\.\d+)", text))  # ".93" written short
    return out


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def stated_figures(text: str) -> list[str]:
    """The decimal figures a page states, outside code, links' targets and arXiv ids."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"arXiv:\d+\.\d+", "", text)
    return FIGURE.findall(text)


PAGES = {
    "docs/index.md": lambda t: t,
    "README.md": lambda t: "".join(
        _section(t, s) for s in ("Which method when", "Recall, measured", "Speed")
    ),
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_stated_figure_has_a_source(page):
    sources = source_figures()
    text = PAGES[page]((ROOT / page).read_text(encoding="utf-8"))
    figures = stated_figures(text)
    assert len(figures) >= 20, page  # the check reads the page's figures
    missing = sorted({f for f in figures if f not in sources})
    assert not missing, f"{page} states figures no source holds: {missing}"


def test_a_figure_without_a_source_is_caught():
    sources = source_figures()
    assert "0.77" in sources and "0.53" in sources
    made_up = "HotpotQA at 40%: MixPR 0.5317, 1M tokens in 4.613 s"
    assert [f for f in stated_figures(made_up) if f not in sources] == ["0.5317", "4.613"]
    # a table row's figures are read too (the README's multi-hop row of issue 38 had a query
    # time that no note held; a note of session 16 now states 5.6 ms for another query)
    assert stated_figures("| MixPR multi-hop | 1.0 s | 5.6 ms | 10k passages |") == ["1.0", "5.6"]
    row = "| MixPR multi-hop | 1.0 s | 5.6173 ms | 10k passages |"
    assert [f for f in stated_figures(row) if f not in sources] == ["5.6173"]


# -- one source for every figure (issue 45) -------------------------------------------------------
def _outside_generated(text: str) -> str:
    """``text`` without its generated blocks and figure spans."""
    tables = _doc_tables()
    text = tables.BLOCK.sub("", text)
    return tables.INLINE.sub("", text)


def unpaired_span_markers(text: str) -> bool:
    """Whether ``text`` holds a figure span's marker that no span pairs (a marker the freshness
    check would never see: an opening one without its close, a name with other characters)."""
    tables = _doc_tables()
    n = len(tables.spans(text))
    return text.count(tables.SPAN_OPEN) != n or text.count(tables.SPAN_CLOSE) != n


def test_every_block_and_span_of_every_page_is_fresh():
    """README.md and every page of docs/: each generated block and each ``<!-- fig: NAME -->``
    span is what ``benchmarks/doc_tables.py`` renders from the results files now, and every
    span marker is part of a span (as many ``<!-- fig:`` and ``<!-- /fig -->`` as spans)."""
    tables = _doc_tables()
    n_spans = 0
    for page in tables.all_pages():
        text = page.read_text(encoding="utf-8")
        assert not unpaired_span_markers(text), f"{page.name}: a figure span marker is unpaired"
        for name, _ in tables.spans(text):
            assert name in tables.inline_names(), f"{page.name}: unknown figure span {name!r}"
        for name, _ in tables.blocks(text):
            assert name in tables.RENDER, f"{page.name}: unknown generated block {name!r}"
        n_spans += len(tables.spans(text))
        assert tables.rewrite(text) == text, (
            f"{page.relative_to(ROOT)}: a generated block or figure is stale: run "
            "python benchmarks/doc_tables.py --write"
        )
    assert n_spans >= 10


def test_a_stale_span_is_caught():
    tables = _doc_tables()
    stale = (
        "MixPR (<!-- fig: mixpr-growth-10m -->10M words: 10 s to build, 39 ms a query<!-- /fig -->)"
    )
    fresh = tables.rewrite(stale)
    assert fresh != stale and "10 s to build" not in fresh
    assert tables.rewrite(fresh) == fresh


def test_a_wrapped_or_unpaired_span_is_caught():
    tables = _doc_tables()
    wrapped = (
        "MixPR (<!-- fig: mixpr-growth-10m -->10M words: 10 s to build,\n"
        "39 ms a query<!-- /fig -->)"
    )
    assert tables.spans(wrapped) and not unpaired_span_markers(wrapped)
    fresh = tables.rewrite(wrapped)
    assert fresh != wrapped and "10 s to build" not in fresh and tables.rewrite(fresh) == fresh
    for bad in (
        "a <!-- fig: mixpr-growth-10m -->10M words, never closed",
        "a <!-- fig: mixpr growth -->x<!-- /fig -->",  # not a span name
        "a <!-- fig: mixpr-growth-10m -->x <!-- fig: bench-date -->y<!-- /fig -->",
    ):
        assert unpaired_span_markers(bad), bad


def test_figures_files_are_dated_and_name_their_script():
    figures = json.loads((DOCS / "figures.json").read_text(encoding="utf-8"))["figures"]
    for name, fig in figures.items():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", fig["date"]), name
        script = fig["script"].split()[0]
        if script == "longctx":  # the CLI: a command it has
            from longctx.cli import build_parser

            command = fig["script"].split()[1]
            assert command in build_parser()._subparsers._group_actions[0].choices, name
        else:
            assert (ROOT / script).is_file(), f"{name}: {script} is not in the repository"
        for part, template in fig.get("show", {}).items():
            fields = _doc_tables().figure_fields(name)
            assert template.format(**fields), f"{name}: show[{part}] renders nothing"
    apps = json.loads((DOCS / "bench-apps.json").read_text(encoding="utf-8"))["settings"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", apps["date"])
    assert (ROOT / apps["command"].split()[0]).is_file()
    suite = json.loads((DOCS / "test-suite.json").read_text(encoding="utf-8"))
    assert suite["tests"] > 0 and re.fullmatch(r"\d{4}-\d{2}-\d{2}", suite["counted"])


OVERVIEW_PAGES = ["README.md", "docs/index.md", *sorted(
    str(p.relative_to(ROOT)) for p in (DOCS / "guide").glob("*.md")
)]  # fmt: skip


@pytest.mark.parametrize("page", OVERVIEW_PAGES)
def test_test_count_and_bm25_babi_figures_live_in_one_place(page):
    """The size of the test suite is stated only in the install guide's generated block, and
    bAbI's BM25 range only through the ``babi-multihop`` span (from docs/bench.json)."""
    text = _outside_generated((ROOT / page).read_text(encoding="utf-8"))
    assert not re.search(r"\b\d[\d,]* tests\b", text), page
    assert "BM25 finds" not in text, page


def test_the_multihop_walk_is_described_as_the_default_everywhere():
    for page in ("README.md", "docs/index.md"):
        row = next(
            line for line in (ROOT / page).read_text(encoding="utf-8").splitlines()
            if line.startswith("| **MixPR** |")
        )  # fmt: skip
        assert "by default" in row and 'names they share (`preset="multihop"`)' not in row, page
    import longctx.mixpr

    assert 'taken by default\n   (``walk="auto"``)' in longctx.mixpr.__doc__


def test_budget_unit_is_the_same_in_help_json_and_docs(capsys):
    from longctx.cli import main

    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        assert "words and punctuation" not in page.read_text(encoding="utf-8"), page
    with pytest.raises(SystemExit):
        main(["retrieve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "SmolLM2's tokens, counted without a model (longctx.tokens.count_tokens)" in help_text
    argv = ["retrieve", "--sample", "alice", "-q", "the Mock Turtle", "--budget", "60"]
    assert main([*argv, "--format", "json"]) == 0
    unit = json.loads(capsys.readouterr().out)["budget"]["unit"]
    assert unit == "longctx.tokens.count_tokens (SmolLM2 tokens)"
    assert "SmolLM2's tokens, no model needed" in (DOCS / "guide" / "cli.md").read_text("utf-8")


def test_install_guide_demo_claim_matches_the_demo(capsys):
    """The install guide says how many of the demo's passages name the Mock Turtle's song."""
    from longctx.cli import main

    argv = ["retrieve", "--sample", "alice", "--query", "What did the Mock Turtle sing about?"]
    assert main([*argv, "--k", "5", "--format", "json"]) == 0
    passages = json.loads(capsys.readouterr().out)["passages"]
    naming = [p for p in passages if "Turtle Soup" in " ".join(p["text"].split())]
    assert len(passages) == 5 and len(naming) == 1
    guide = " ".join((DOCS / "guide" / "install.md").read_text(encoding="utf-8").split())
    assert "prints five passages" in guide and "one of them naming it" in guide


# -- every Speed row names its source (issue 45) --------------------------------------------------
DATE = r"\d{4}-\d{2}-\d{2}"
#: a script of the repository (or a ``longctx`` command) and the date of its run
SCRIPT_SOURCE = re.compile(rf"`(?P<script>benchmarks/[\w/]+\.py|longctx \w+)[^`]*`, {DATE}\b")
#: a figure no script of the repository measured: the issue that states it and its date
ISSUE_SOURCE = re.compile(rf"issue \d+, {DATE}\b")
SOURCE_SPAN = re.compile(r"<!-- fig: (?P<name>[\w-]+-source) -->")
#: a measured figure: every decimal number (both ends of a range: "1.2-1.5x", "9.37-9.99") and a
#: whole number, or a range of them, with a unit ("955 s", "101-138 ms", "2x")
MEASURED = re.compile(
    r"\d[\d,]*\.\d+"
    r"|\b\d[\d,]*(?:\s*-\s*\d[\d,]*)?\s*(?:ms|s|min|minutes|h|GB|MB|KB|x|%|tokens/s)(?![\w/])"
)


def _row_cells(row: str) -> list[str]:
    """The cells of a Markdown table row (``|`` at both ends optional, ``\\|`` escaped)."""
    body = row.strip()[1:]
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def speed_table(readme: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The header cells and the ``(line, cells)`` rows of the README's "Speed" table: every line
    of the section that starts with ``|`` (spaces or none after it) after the header and its
    ``|---|`` line."""
    lines = [ln for ln in _section(readme, "Speed").splitlines() if ln.lstrip().startswith("|")]
    header, rule, *rows = lines
    assert re.fullmatch(r"\|?(\s*:?-+:?\s*\|)+\s*:?-*:?\s*", rule.strip()), rule
    return _row_cells(header), [(r, _row_cells(r)) for r in rows]


def _script_exists(script: str) -> bool:
    if script.startswith("longctx "):
        from longctx.cli import build_parser

        commands = build_parser()._subparsers._group_actions[0].choices
        return script.split()[1] in commands
    return (ROOT / script).is_file()


def source_cell_ok(cell: str, spans: list[str]) -> bool:
    """Whether a Speed row's source cell names the source of the row's figures. The cell starts
    with one of these forms:

    - a ``<!-- fig: NAME-source -->`` span (the command, date and conditions of a
      ``docs/figures.json`` entry, of ``docs/bench.json`` or of ``docs/bench-apps.json``);
    - `` `benchmarks/SCRIPT.py ...`, YYYY-MM-DD `` or `` `longctx COMMAND ...`, YYYY-MM-DD ``:
      a script of the repository (it must exist) or a ``longctx`` command, and the run's date;
    - ``issue N, YYYY-MM-DD``: a figure no script of the repository measured, named by the issue
      that states it and the figure's date (the README's app's-model row: issue 32's figure);

    or it says "source not found". Every figure span of the row also needs its own source span
    in the cell (``doc_tables.source_span``): a span of ``docs/figures.json`` entry ``E`` is
    sourced by ``E-source`` only."""
    tables = _doc_tables()
    given = {m["name"] for m in SOURCE_SPAN.finditer(cell)}
    if not {tables.source_span(n) for n in spans} <= given:
        return False
    if "source not found" in cell:
        return True
    if SOURCE_SPAN.match(cell):
        return True
    script = SCRIPT_SOURCE.match(cell)
    return bool(script and _script_exists(script["script"])) or bool(ISSUE_SOURCE.match(cell))


def unsourced_speed_rows(readme: str) -> list[str]:
    """The rows of README's "Speed" table that state a figure (a figure span or a bare
    :data:`MEASURED` figure in any cell but the source, the "document" cell included) without a
    source cell that names its source (:func:`source_cell_ok`)."""
    tables = _doc_tables()
    header, rows = speed_table(readme)
    src = header.index("source")
    bad = []
    for line, cells in rows:
        if len(cells) != len(header):
            bad.append(line)
            continue
        others = [c for i, c in enumerate(cells) if i != src]
        spans = [name for c in others for name, _ in tables.spans(c)]
        plain = [re.sub(r"\]\([^)]*\)", "]", tables.INLINE.sub("", c)) for c in others]
        bare = [f for c in plain for f in MEASURED.findall(c)]
        if (spans or bare) and not source_cell_ok(cells[src], spans):
            bad.append(line)
    return bad


def test_every_speed_row_names_its_source():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    header, rows = speed_table(readme)
    assert "source" in header and len(rows) >= 15  # the check reads the table's rows
    assert unsourced_speed_rows(readme) == []


HEAD = "## Speed\n\n| method | build | per query | document | source |\n|---|---|---|---|---|\n"


def _unsourced(*rows: str) -> list[str]:
    return unsourced_speed_rows(HEAD + "\n".join(rows) + "\n")


def test_a_speed_row_without_its_source_is_caught():
    bare = "| MixPR hybrid | 1.7 s | 0.017 s | a SQuAD article | |"
    dated = bare.replace("| |", "| `benchmarks/bench_apps.py`, 2026-11-29 |")
    cli = bare.replace("| |", "| `longctx bench --tasks squad`, 2026-11-29, shared machine |")
    issue = bare.replace("| |", "| issue 32, 2026-11-26 (11,233 units in 166 s) |")
    span = (
        "| MixPR | <!-- fig: mixpr-squad-build -->0.006 s<!-- /fig --> | "
        "<!-- fig: mixpr-squad-query -->0.002 s<!-- /fig --> | a SQuAD article (4-7k tokens) | |"
    )
    sourced = span.replace("| |", "| <!-- fig: bench-source -->x<!-- /fig --> |")
    assert _unsourced(dated, cli, issue, sourced) == []
    caught = [
        bare,
        span,
        "|MixPR | 9.37 s | | a doc | |",  # no space after the pipe
        "| MixPR | | | a 100k-word document, built in 955 s | |",  # the document cell
        "| MixPR | 9.37-9.99 | | doc | |",  # a range without a unit
        "| MixPR | 1.2-1.5x | | doc | |",
        "| MixPR | | 101-138 ms | doc | |",  # whole numbers with a unit
        "| MixPR | 955 s | | doc | |",
        bare.replace("| |", "| `benchmarks/bench_nothing.py`, 2026-11-29 |"),  # no such script
        bare.replace("| |", "| `benchmarks/bench_apps.py` |"),  # no date
        bare.replace("| |", "| issue 32's figure, 2026-11-26; `benchmarks/bench_apps.py` |"),
        bare.replace("| |", "| 2026-11-26 |"),
        bare.replace("| 0.017 s | a SQuAD article | |", "| 0.017 s (source not found) | doc | |"),
        # a span sourced by another entry's source, or by a script instead of its own
        span.replace("| |", "| <!-- fig: mixpr-growth-source -->x<!-- /fig --> |"),
        span.replace("| |", "| `benchmarks/bench_apps.py`, 2026-11-29 |"),
        "| MixPR | 1.7 s | 0.017 s | doc |",  # a cell short
    ]  # fmt: skip
    assert _unsourced(*caught) == caught
    assert _unsourced(bare.replace("| |", "| (undated, source not found) |")) == []
    assert _unsourced("| MixPR | none | | 2048-token windows, k=100, 4-7k tokens | |") == []


# -- the reviewer's findings on issue 45 ----------------------------------------------------------
def _speed_sources(readme: str) -> list[str]:
    """The source spans of the README's Speed table's rows."""
    header, rows = speed_table(readme)
    src = header.index("source")
    return [m["name"] for _, cells in rows for m in SOURCE_SPAN.finditer(cells[src])]


def test_every_speed_source_states_its_conditions():
    """A Speed row's source renders the run's script, date and conditions (a loaded run of
    ``longctx bench`` said so nowhere); ``docs/bench.json`` records its conditions."""
    tables = _doc_tables()
    names = _speed_sources((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "bench-source" in names and len(names) >= 10
    for name in set(names):
        script_date, *conditions = tables.render_inline(name).split(f", {DATE_OF[name]}")
        assert conditions and conditions[0].startswith(", ") and len(conditions[0]) > 4, name
    settings = json.loads((DOCS / "bench.json").read_text(encoding="utf-8"))["settings"]
    assert settings["conditions"] in tables.bench_source()


class _Dates(dict):
    """The date a source span renders: its entry's date (``docs/figures.json``) or its run's."""

    def __missing__(self, name):
        tables = _doc_tables()
        if name == "bench-source":
            return tables.bench_date()
        if name.startswith("apps-"):
            return json.loads((DOCS / "bench-apps.json").read_text("utf-8"))["settings"]["date"]
        return tables.figure_fields(tables.figure_entry(name))["date"]


DATE_OF = _Dates()


def test_the_hybrid_speed_row_is_the_cold_build():
    """The README's hybrid row on SQuAD is the run with an empty ``--cache`` (its own entry of
    docs/figures.json), not the full run's build that read MiniLM's vectors from a warm cache;
    the Benchmarks page says which of its builds were cold."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(ln for ln in readme.splitlines() if ln.startswith("| MixPR hybrid |"))
    assert "fig: mixpr-hybrid-cold-build" in row and "fig: mixpr-hybrid-cold-source" in row
    assert "(MiniLM embeds the units)" not in row
    tables = _doc_tables()
    cold = tables.figure_fields("mixpr-hybrid-cold")
    assert "empty --cache" in cold["conditions"] and cold["script"].startswith("longctx bench")
    assert min(cold["build_s"]) > tables._squad_costs("mixpr-hybrid")[0]  # not the warm one
    sizes = tables.bench_sizes()
    assert "warm --cache" in sizes and "empty `--cache`" in sizes and "qa1 13.65 s" in sizes


def test_benchmarks_prose_figures_of_the_pooled_hotpotqa_are_spans():
    """The Benchmarks page's bullet on the multi-hop walk quoted mixpr-pagerank's R@k as MixPR's
    and a hybrid figure of no run: its figures are now a span of docs/bench.json."""
    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    bullet = text[text.index("- **The multi-hop walk**") :].split("\n- ")[0]
    head = _outside_generated(bullet).split("On single documents")[0]
    assert "fig: hotpot-walk" in bullet and not re.search(r"\.\d\d", head), head
    walk = _doc_tables().hotpot_walk()
    assert "MixPR's default 0.75 / 0.92 / 0.99" in walk and "the hybrid 0.74 / 0.91 / 0.99" in walk


def test_median_figures_say_median():
    """A span that renders a ``*_median`` field of docs/figures.json says "median" (the Speed
    table's rows are means unless they say so)."""
    tables = _doc_tables()
    figures = json.loads((DOCS / "figures.json").read_text(encoding="utf-8"))["figures"]
    checked = 0
    for name in sorted(tables.inline_names()):
        key = tables.figure_entry(name)
        if key is None or name.endswith("-source"):
            continue
        medians = [v for f, vals in figures[key].items() if "median" in f for v in _flat(vals)]
        text = tables.render_inline(name)
        shown = [v for v in medians if re.search(rf"(?<![\d.]){re.escape(f'{v:g}')}(?![\d])", text)]
        if shown and " ms" in text:
            checked += 1
            assert "median" in text, f"{name}: {text}"
    assert checked >= 5


def _flat(v) -> list:
    return [x for item in v for x in _flat(item)] if isinstance(v, list) else [v]


def test_every_per_size_method_that_embeds_says_how():
    """The Benchmarks page's per-size table labels each method that uses MiniLM's vectors with
    where they came from (its build, or the ``--cache``)."""
    from longctx.eval.registry import get_methods

    tables = _doc_tables()
    for method, label in tables.SIZE_METHODS.items():
        (m,) = get_methods([method])
        if m.needs_encoder:
            assert label != method and ("--cache" in label or "minilm" in label), method
    sizes = tables.bench_sizes()
    assert "| mmr (MiniLM's vectors, as minilm) |" in sizes


def test_doc_tables_command_line(capsys, monkeypatch, tmp_path):
    tables = _doc_tables()
    with pytest.raises(SystemExit) as exc:
        tables.main(["--chek"])
    assert exc.value.code == 2 and "--chek" in capsys.readouterr().err
    assert tables.main(["--check"]) == 0
    page = tmp_path / "page.md"
    page.write_text("(<!-- fig: bench-date -->1999-01-01<!-- /fig -->)\n", encoding="utf-8")
    monkeypatch.setattr(tables, "ROOT", tmp_path)
    monkeypatch.setattr(tables, "all_pages", lambda: [page])
    assert tables.main(["--check"]) == 1
    assert "stale: page.md" in capsys.readouterr().out
    assert tables.main(["--write"]) == 0 and tables.main(["--check"]) == 0
    assert tables.bench_date() in page.read_text(encoding="utf-8")
    page.write_text("<!-- fig: no-such-figure -->x<!-- /fig -->\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="page.md: no block or figure named 'no-such-figure'"):
        tables.main(["--check"])


def test_derived_figures_are_computed_not_typed():
    tables = _doc_tables()
    figures = json.loads((DOCS / "figures.json").read_text(encoding="utf-8"))["figures"]
    for key, derived in tables.DERIVED.items():
        assert not set(derived) & set(figures[key]), f"{key}: a derived field is typed in"
    f = figures["explain-bridges"]
    ratio = f"{f['explain_on_ms'] / f['explain_off_ms']:.1f}"
    assert tables.render_inline("explain-bridges-cost").startswith(f"about {ratio} times")


def test_the_apps_counts_and_embedding_dates_come_from_bench_apps():
    """The README's fused counts are spans of docs/bench-apps.json; each app's embedding time
    renders the date of the run that measured it (a field of the file), not the file's date."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = _outside_generated(_section(readme, "Which method when"))
    assert not re.findall(r"\b\d+/\d+\b", section)
    assert "fig: apps-llamaindex-fused" in readme and "fig: apps-langchain-fused" in readme
    tables = _doc_tables()
    apps = json.loads((DOCS / "bench-apps.json").read_text(encoding="utf-8"))["results"]
    for app, r in apps.items():
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["embed_date"]), app
        assert tables.render_inline(f"apps-{app}-embed").endswith(f"first run, {r['embed_date']}")


def test_bench_apps_remembers_when_it_embedded(tmp_path):
    from tests._fixtures import load_script

    apps = load_script("benchmarks/bench_apps.py")
    assert apps._embed_date(tmp_path, "langchain_chunks") is None
    assert apps._remember_seconds(tmp_path, "langchain_chunks", 955.3) == 955.3
    today = __import__("datetime").date.today().isoformat()
    assert apps._embed_date(tmp_path, "langchain_chunks") == today
    assert apps._remember_seconds(tmp_path, "langchain_chunks", 0.2) == 955.3  # cached since
