"""MixPR side by side with BM25 (issue 46): bm25s, LlamaIndex's ``BM25Retriever`` (which wraps
bm25s) and rank_bm25 (LangChain's ``BM25Retriever`` engine), over the same units, in one run.

Usage::

    python benchmarks/bench_vs_bm25.py [--data ../shared/data] [--words 1,10] [--k 10]
        [--systems mixpr,bm25s,llamaindex,rank_bm25] [--mmap] [--opens 10] [--json out.json]

Corpus: the growth table's Gutenberg books (``bench_mixpr_growth.corpus``: every book once, in
``INDEX.tsv`` order, then again as new documents, cut at the word budget). MixPR builds from
the documents (its chunking is part of its build); its units (``MixPRConfig().chunk_arrays``,
the units the index holds) are written out once and the others index those very texts.

Each system runs in its own processes, one after the other, so their memory is their own:

- *build*: the index from the texts (MixPR: ``MixPRIndex.from_texts(documents)``; bm25s:
  ``bm25s.tokenize`` with English stop words and the Snowball stemmer, then ``BM25().index``;
  LlamaIndex: one ``TextNode`` per unit and ``BM25Retriever.from_defaults`` with the Snowball
  stemmer; rank_bm25: ``BM25Okapi`` over ``str.split`` tokens, as LangChain's retriever),
  wall time and, in brackets, the process's CPU time (the memory sampler's thread included);
  *peak* the most resident memory above the process's base (taken once the texts are read)
  while building (sampled every 5 ms, and ``ru_maxrss`` when it rose), *held* the resident
  memory above base once built and queried (the texts are kept, as the caller keeps them:
  MixPR's index refers to the same strings, the others hold tokens and ids);
- *query*: median over the questions (``--questions``, the growth table's, k = ``--k``) after
  one warm-up query, the query's own analysis included; wall time and, in brackets, CPU time
  (on a loaded machine a long query waits for the CPU more than a short one: compare CPU);
- *save* (time, bytes on disk) and *open*, in ``--opens`` fresh processes per system and form
  (by default as many as the questions, so that each is asked first once: with fewer, the
  figure depends on which questions are first; ``MixPRIndex.load``; bm25s ``BM25.load`` with
  and without ``mmap=True``; LlamaIndex ``from_persist_dir``; the forms of a system alternate
  open by open): resident memory above that process's base (imports done) after the open,
  then the questions, open ``i`` asking question ``i`` (mod ``--questions``) first, then the
  others in order, then question ``i`` again. Per open: *first* the first query, *next* the
  median of the others (each once), *again* the first question asked again, warm; the ratios
  *first / next* (the goal "the first query after an open within 2x of the next ones") and
  *first / again* (the cost of being first alone, the question's own weight taken out), each
  within its open. The table and the goal lines give the medians over the opens; ``q0 first /
  next`` is the open that asked question 0 first alone: this bench's measure before session
  20 (one open, always question 0 first, so it mixed the cost of being first with question
  0's weight). The JSON keeps every open (``"each"``) and that one (``"single_open"``).
  rank_bm25 has no save format (LangChain pickles it): ``-``.

``--mmap`` passes the memory-mapping option of ``MixPRIndex.load`` (a keyword named ``mmap``
or ``mmap_mode``, found with :func:`inspect.signature`) when it has one; the table says when it
has none. Timings on a shared machine are noisy: the systems run one after the other, so
compare ratios within one run, and repeat.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_youra import PeakRSS  # noqa: E402

SYSTEMS = ("mixpr", "bm25s", "llamaindex", "rank_bm25")


def rss_bytes() -> int:
    """Resident memory of this process now (VmRSS)."""
    return PeakRSS.rss()


def max_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class PeakSampler(PeakRSS):
    """The most resident memory while the ``with`` block runs: sampled every 5 ms
    (``bench_youra.PeakRSS``), and the process's ``ru_maxrss`` when it rose in the block."""

    def __init__(self):
        super().__init__(interval=0.005)

    def __enter__(self):
        self._before = max_rss_bytes()
        return super().__enter__()

    def __exit__(self, *exc):
        super().__exit__(*exc)
        after = max_rss_bytes()
        if after > self._before:
            self.peak = max(self.peak, after)


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


# -- the systems ----------------------------------------------------------------------------
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


class MixPRSystem:
    name = "longctx MixPR (defaults)"

    def build(self, docs, units):
        from longctx.mixpr import MixPRIndex

        self.index = MixPRIndex.from_texts([t for _, t in docs], ids=[i for i, _ in docs])
        if self.index.n_units != len(units):
            raise RuntimeError(f"MixPR made {self.index.n_units} units, expected {len(units)}")

    def query(self, q, k):
        return [(h.source, h.start) for h in self.index.search(q, k=k).hits]

    def save(self, path):
        self.index.save(path)

    def save_mapped(self, path):
        """Format 3 (``mappable=True``: plain ``.npy`` files) beside the default save, at
        ``PATH-mapped``, for the memory-mapped open; ``False`` where ``save`` has no such
        option, or where the default save writes format 3 already (issue 46: the mapped open
        then reads the default save)."""
        from longctx.mixpr import MixPRIndex

        option = inspect.signature(MixPRIndex.save).parameters.get("mappable")
        if option is None or option.default is True:
            return False
        self.index.save(f"{path}-mapped", mappable=True)
        return True

    def open(self, path, mmap):
        from longctx.mixpr import MixPRIndex

        kw = {}
        if mmap:
            name = mmap_keyword()
            if name is None:
                raise RuntimeError("MixPRIndex.load has no memory-mapping option")
            kw[name] = True
            if Path(f"{path}-mapped").is_dir():
                path = f"{path}-mapped"
        self.index = MixPRIndex.load(path, **kw)


def mmap_keyword() -> str | None:
    """The memory-mapping keyword of ``MixPRIndex.load`` (``mmap`` / ``mmap_mode``), if any."""
    from longctx.mixpr import MixPRIndex

    params = inspect.signature(MixPRIndex.load).parameters
    return next((n for n in ("mmap", "mmap_mode") if n in params), None)


class BM25sSystem:
    name = "bm25s"

    def build(self, docs, units):
        import bm25s

        self.stemmer = _stemmer()
        tokens = bm25s.tokenize(units, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.index = bm25s.BM25()
        self.index.index(tokens, show_progress=False)

    def query(self, q, k):
        import bm25s

        toks = bm25s.tokenize(
            [q], stopwords="en", stemmer=self.stemmer, return_ids=False, show_progress=False
        )
        docs, _ = self.index.retrieve(toks, k=k, show_progress=False)
        return docs[0].tolist()

    def save(self, path):
        self.index.save(str(path))

    def open(self, path, mmap):
        import bm25s

        self.stemmer = _stemmer()
        self.index = bm25s.BM25.load(str(path), mmap=mmap)


class LlamaIndexSystem:
    name = "LlamaIndex BM25Retriever"

    def build(self, docs, units):
        from llama_index.core.schema import TextNode
        from llama_index.retrievers.bm25 import BM25Retriever

        nodes = [TextNode(text=u, id_=str(i)) for i, u in enumerate(units)]
        self.index = BM25Retriever.from_defaults(
            nodes=nodes, stemmer=_stemmer(), language="english", similarity_top_k=10
        )

    def query(self, q, k):
        self.index.similarity_top_k = k
        return [n.node.node_id for n in self.index.retrieve(q)]

    def save(self, path):
        self.index.persist(str(path))

    def open(self, path, mmap):
        from llama_index.retrievers.bm25 import BM25Retriever

        self.index = BM25Retriever.from_persist_dir(str(path))


class RankBM25System:
    name = "rank_bm25 (LangChain's engine)"

    def build(self, docs, units):
        from rank_bm25 import BM25Okapi

        self.index = BM25Okapi([u.split() for u in units])

    def query(self, q, k):
        import numpy as np

        scores = self.index.get_scores(q.split())
        return np.argsort(-scores, kind="stable")[:k].tolist()

    save = open = None


CLASSES = {
    "mixpr": MixPRSystem,
    "bm25s": BM25sSystem,
    "llamaindex": LlamaIndexSystem,
    "rank_bm25": RankBM25System,
}


def _imports(system: str) -> None:
    """Import the system's libraries before the base memory is read."""
    import numpy  # noqa: F401

    if system == "mixpr":
        import longctx.mixpr  # noqa: F401
    elif system == "bm25s":
        import bm25s  # noqa: F401
        import Stemmer  # noqa: F401
    elif system == "llamaindex":
        import llama_index.retrievers.bm25  # noqa: F401
    else:
        import rank_bm25  # noqa: F401


def _questions(n: int) -> list[str]:
    from bench_mixpr_growth import QUESTIONS

    return QUESTIONS[:n]


# -- one system, one phase, in this process ---------------------------------------------------
def run_build(system: str, work: Path, k: int, n_q: int) -> dict:
    _imports(system)
    docs = json.loads((work / "docs.json").read_text("utf-8"))
    units = json.loads((work / "units.json").read_text("utf-8"))
    gc.collect()
    base = rss_bytes()
    sys_ = CLASSES[system]()
    with PeakSampler() as peak:
        t0, c0 = time.perf_counter(), time.process_time()
        sys_.build(docs, units)
        build_s = time.perf_counter() - t0
        build_cpu_s = time.process_time() - c0  # includes the 5 ms sampler thread's share
    qs = _questions(n_q)
    sys_.query(qs[0], k)  # warm-up (MixPR makes its graph's views on its first query)
    times, cpu = _timed_queries(sys_, qs, k)
    gc.collect()
    held = rss_bytes() - base  # the texts still held, as the caller holds them
    del docs, units
    out = {
        "build_s": build_s,
        "build_cpu_s": build_cpu_s,
        "query_ms": 1000 * statistics.median(times),
        "query_cpu_ms": 1000 * statistics.median(cpu),
        "peak_gb": (peak.peak - base) / 2**30,
        "held_gb": held / 2**30,
    }
    if sys_.save is not None:
        path = work / f"saved-{system}"
        shutil.rmtree(path, ignore_errors=True)
        t0 = time.perf_counter()
        sys_.save(path)
        out["save_s"] = time.perf_counter() - t0
        out["disk_mb"] = dir_bytes(path) / 1e6
        if hasattr(sys_, "save_mapped"):
            shutil.rmtree(f"{path}-mapped", ignore_errors=True)
            t0 = time.perf_counter()
            if sys_.save_mapped(path):
                out["save_mapped_s"] = time.perf_counter() - t0
                out["disk_mapped_mb"] = dir_bytes(Path(f"{path}-mapped")) / 1e6
    return out


def rotated(n: int, first: int) -> list[int]:
    """The order in which an open asks ``n`` questions when it asks question ``first`` first:
    ``first, first + 1, ..., n - 1, 0, ..., first - 1``, then ``first`` again (warm).

    Parameters
    ----------
    n : int
        Number of questions (>= 2: a first one and at least one next one).
    first : int
        The question asked first, ``0 <= first < n``.

    Returns
    -------
    list of int
        ``n + 1`` question numbers: each question once, the first one again at the end.

    Raises
    ------
    ValueError
        ``n < 2`` or ``first`` outside ``[0, n)``.
    """
    if n < 2:
        raise ValueError(f"n must be at least 2 (a first question and a next one), got {n}")
    if not 0 <= first < n:
        raise ValueError(f"first must be in [0, {n}), got {first}")
    return [(first + j) % n for j in range(n)] + [first]


def first_query_figures(wall: list, cpu: list) -> dict:
    """One open's first-query figures from the seconds of the queries asked in
    :func:`rotated` order (``n + 1`` values, the last one the first question again).

    *first* is the first query, *next* the median of the ``n - 1`` queries after it (the
    others, each once), *again* the first question asked again at the end, warm. The ratios
    ``first / next`` (issue 46's measure: the cost of being first and of the first question's
    own weight together) and ``first / again`` (the cost of being first alone: the same
    question, same work, with the process warm); in ms, wall and CPU.

    Raises
    ------
    ValueError
        Fewer than 3 timings, or wall and CPU timings of different lengths.
    """
    if len(wall) < 3 or len(wall) != len(cpu):
        raise ValueError(
            f"wall and cpu must hold the same n + 1 >= 3 timings, got {len(wall)} and {len(cpu)}"
        )
    out = {}
    for tag, t in (("", wall), ("_cpu", cpu)):
        first, nxt, again = t[0], statistics.median(t[1:-1]), t[-1]
        out[f"first{tag}_ms"] = 1000 * first
        out[f"next{tag}_ms"] = 1000 * nxt
        out[f"again{tag}_ms"] = 1000 * again
        out[f"first_over_next{tag}"] = first / nxt if nxt > 0 else None
        out[f"first_over_again{tag}"] = first / again if again > 0 else None
    return out


#: The figures of one open summarised over the opens, by their median.
OPEN_FIGURES = (
    "open_s",
    "open_rss_gb",
    *(f"{a}{t}_ms" for a in ("first", "next", "again") for t in ("", "_cpu")),
    *(f"first_over_{b}{t}" for b in ("next", "again") for t in ("", "_cpu")),
)


def summarize_opens(opens: list[dict]) -> dict:
    """The opens of one system and form, each asking another question first, summarised.

    Returns the median over the opens of every :data:`OPEN_FIGURES` figure (each ratio taken
    within its own open, then the median of the ratios), ``"opens"`` (how many) and
    ``"first_questions"``; plus ``"single_open"``: the open that asked question 0 first, alone
    (the measure of this bench before session 20: one open, question 0 first, against the
    median of questions 1 to n - 1), ``None`` when no open asked question 0 first. Failed
    opens (``"error"``) are left out and counted in ``"failed"``; ``{"error": ...}`` when all
    failed.
    """
    ok = [o for o in opens if "error" not in o]
    if not ok:
        return {"error": opens[0]["error"] if opens else "no open"}
    out = {"opens": len(ok), "failed": len(opens) - len(ok)}
    out["first_questions"] = [o.get("first_question") for o in ok]
    for key in OPEN_FIGURES:
        vals = [o[key] for o in ok if o.get(key) is not None]
        out[key] = statistics.median(vals) if vals else None
    single = next((o for o in ok if o.get("first_question") == 0), None)
    out["single_open"] = None if single is None else {
        key: single.get(key)
        for key in ("first_ms", "next_ms", "first_cpu_ms", "next_cpu_ms", "first_over_next",
                    "first_over_next_cpu")
    }  # fmt: skip
    return out


def run_open(system: str, work: Path, k: int, n_q: int, mmap: bool, first: int = 0) -> dict:
    """Open the saved index in this (fresh) process and ask the questions in :func:`rotated`
    order from question ``first``: the open's time and resident memory, and
    :func:`first_query_figures`."""
    _imports(system)
    qs = _questions(n_q)
    order = rotated(len(qs), first)
    gc.collect()
    base = rss_bytes()
    sys_ = CLASSES[system]()
    t0 = time.perf_counter()
    sys_.open(work / f"saved-{system}", mmap)
    open_s = time.perf_counter() - t0
    resident = rss_bytes() - base
    wall, cpu = _timed_queries(sys_, [qs[i] for i in order], k)
    return {
        "first_question": first,
        "open_s": open_s,
        "open_rss_gb": resident / 2**30,
        **first_query_figures(wall, cpu),
    }


def _timed_queries(sys_, qs, k) -> tuple[list, list]:
    """Wall and CPU seconds of each query (CPU time is what a loaded machine distorts least:
    a long query waits for the CPU more often than a short one)."""
    wall, cpu = [], []
    for q in qs:
        t0, c0 = time.perf_counter(), time.process_time()
        sys_.query(q, k)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def prepare(data: Path, words: float, work: Path) -> dict:
    """Write the documents and MixPR's units of ``words`` million words into ``work``."""
    from bench_mixpr_growth import corpus

    from longctx.mixpr import MixPRConfig

    docs = corpus(data, int(words * 1e6))
    src, starts, ends = MixPRConfig.from_preset("default").chunk_arrays([t for _, t in docs])
    units = [docs[d][1][a:b] for d, a, b in zip(src.tolist(), starts.tolist(), ends.tolist())]
    (work / "docs.json").write_text(json.dumps(docs), "utf-8")
    (work / "units.json").write_text(json.dumps(units), "utf-8")
    return {"documents": len(docs), "units": len(units)}


def _opens(args, system: str, base: list) -> dict:
    """``--opens`` fresh-process opens of each form of ``system`` (read; memory-mapped for
    bm25s, and for MixPR with ``--mmap``), open ``i`` asking question ``i mod --questions``
    first; the forms alternate open by open, so a change of the machine's load falls on each
    alike. Returns ``{label: summarize_opens(...) plus "each": the opens' own figures}``."""
    forms = {"": []}
    if system == "bm25s" or (system == "mixpr" and args.mmap and mmap_keyword()):
        forms[", mmap"] = []
    for i in range(args.opens):
        first = str(i % args.questions)
        for label, got in forms.items():
            extra = ["--map"] if label else []
            cmd = ["--phase", "open", "--system", system, "--first", first, *extra, *base]
            got.append(_child(args, *cmd))
    return {label: {**summarize_opens(got), "each": got} for label, got in forms.items()}


def _child(args, *extra) -> dict:
    cmd = [sys.executable, __file__, "--data", str(args.data), "--k", str(args.k)]
    cmd += ["--questions", str(args.questions), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        tail = out.stderr.strip().splitlines()[-1:] or [f"exit code {out.returncode}"]
        print(out.stderr[-2000:], file=sys.stderr)
        return {"error": tail[0]}
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the table --------------------------------------------------------------------------------
def _fmt(v, fmt) -> str:
    return "-" if v is None else fmt.format(v)


def _pair(o: dict, key: str, fmt: str, cpu_label: str = "") -> str:
    """``o[key]`` and, in brackets, its CPU-time twin (``first_ms`` -> ``first_cpu_ms``,
    ``first_over_next`` -> ``first_over_next_cpu``), ``-`` for a missing one."""
    cpu = key.replace("_ms", "_cpu_ms") if key.endswith("_ms") else f"{key}_cpu"
    return f"{_fmt(o.get(key), fmt)} ({cpu_label}{_fmt(o.get(cpu), fmt)})"


#: The open table's cells of the queries' medians over the opens: (figure, format).
_QUERY_CELLS = (
    ("first_ms", "{:.1f}"),
    ("next_ms", "{:.1f}"),
    ("first_over_next", "{:.2f}"),
    ("first_over_again", "{:.2f}"),
)


def first_questions_apart(rows: dict) -> dict:
    """``{(system, form label): why}`` for each open row whose opens asked other questions
    first than most rows' (a failed open leaves its question out; of rows as common, the one
    with the most opens is the reference): its medians would be over other questions, so they
    are not printed (session 20 review: such a row showed them beside a header counting the
    most opens of any row)."""
    asked = {
        (name, label): tuple(sorted(o.get("first_questions") or []))
        for name, r in rows.items()
        for label, o in r.get("open", {}).items()
        if "error" not in o
    }
    if not asked:
        return {}
    counts = Counter(asked.values())
    ref = max(counts, key=lambda t: (counts[t], len(t)))
    out = {}
    for key, t in asked.items():
        without = sorted((Counter(ref) - Counter(t)).elements())
        more = sorted((Counter(t) - Counter(ref)).elements())
        why = [f"without question {', '.join(map(str, without))} first"] if without else []
        why += [f"question {', '.join(map(str, more))} first more often"] if more else []
        if why:
            out[key] = "; ".join(why) + " (an open failed)" * bool(without)
    return out


def print_tables(size: float, info: dict, rows: dict) -> None:
    print(f"\n## {size:g}M words, {info['units']:,} units ({info['documents']} documents)\n")
    print("| system | build s (CPU s) | query ms (CPU ms) | peak GB over base | held GB |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        b = r.get("build", {})
        if "error" in b:
            print(f"| {name} | failed: {b['error']} | | | |")
            continue
        print(
            f"| {name} | {b['build_s']:.2f} ({_fmt(b.get('build_cpu_s'), '{:.2f}')}) | "
            f"{b['query_ms']:.1f} "
            f"({_fmt(b.get('query_cpu_ms'), '{:.1f}')}) | {b['peak_gb']:+.2f} | "
            f"{b['held_gb']:+.2f} |"
        )
    print(
        "\nHeld: like with like, neither counts the texts (read before the base and kept by "
        "the caller: MixPR's index refers to them, bm25s keeps its scores and vocabulary); "
        "both count what their allocator kept of the queries' temporaries."
    )
    apart = first_questions_apart(rows)
    print(
        "\nOpened in fresh processes (open i asking question i first, then the others in "
        "order, then question i again; *opens*: the row's opens, and those that failed, left "
        "out): medians over the opens. *open s*, "
        "*resident after open*: the open; *first*: the first query; *then*: the median of the "
        "next ones (each other question once); *first / next*: the first query over the median "
        "of the next ones, within each open (the goal's measure, wall and CPU); *first / "
        "again*: the first query over the same question asked again at the end of that open "
        "(the cost of being first alone); *q0 first / next*: one open asking question 0 first "
        "(this bench's measure before session 20: it also holds question 0's own weight). A "
        "row whose opens asked other questions first than the other rows' (an open failed) "
        "shows no median of its queries: it would be over other questions."
    )
    print("\n| system | save s | on disk MB | open s | resident after open GB | first ms (CPU) "
          "| then ms (CPU) | first / next (CPU) | first / again (CPU) | q0 first / next (CPU) "
          "| opens |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        b = r.get("build", {})
        for label, o in r.get("open", {}).items():
            if "error" in o:
                print(f"| {name}{label} | | | failed: {o['error']} | | | | | | | 0 |")
                continue
            mapped = "mmap" in label and "save_mapped_s" in b  # format 3, saved beside
            save_s = b.get("save_mapped_s" if mapped else "save_s")
            disk = b.get("disk_mapped_mb" if mapped else "disk_mb")
            q0 = o.get("single_open") or {}
            queries = [_pair(o, key, form) for key, form in _QUERY_CELLS]
            if (name, label) in apart:
                queries = ["-", "-", f"no median: {apart[name, label]}", "-"]
            failed = f" ({o['failed']} failed)" if o.get("failed") else ""
            print(
                f"| {name}{label} | {_fmt(save_s, '{:.2f}')} | {_fmt(disk, '{:.0f}')} | "
                f"{o['open_s']:.2f} | {o['open_rss_gb']:+.3f} | {' | '.join(queries)} | "
                f"{_pair(q0, 'first_over_next', '{:.2f}')} | {o.get('opens', 0)}{failed} |"
            )
    m, b = rows.get("mixpr", {}).get("build", {}), rows.get("bm25s", {}).get("build", {})
    if "query_ms" in m and "query_ms" in b:
        print(
            f"\nMixPR / bm25s: query {m['query_ms'] / b['query_ms']:.2f}x "
            f"(CPU {m.get('query_cpu_ms', 0) / max(b.get('query_cpu_ms', 0), 1e-9):.2f}x; "
            f"goal <= 2), build "
            f"{m['build_s'] / b['build_s']:.2f}x (CPU "
            f"{m.get('build_cpu_s', 0) / max(b.get('build_cpu_s', 0), 1e-9):.2f}x; goal <= 1), peak "
            f"{m['peak_gb'] / max(b['peak_gb'], 1e-9):.2f}x (goal <= 2), held "
            f"{m['held_gb'] / max(b['held_gb'], 1e-9):.2f}x (goal <= 2)"
        )
    for key, name in (("mixpr", "MixPR"), ("bm25s", "bm25s")):
        for label, o in rows.get(key, {}).get("open", {}).items():
            if (key, label) in apart:
                print(f"{name}{label}: first query / next: no median: {apart[key, label]}")
                continue
            if o.get("first_over_next") is None:
                continue
            q0 = o.get("single_open") or {}
            nxt = _pair(o, "first_over_next", "{:.2f}x", "CPU ")
            again = _pair(o, "first_over_again", "{:.2f}x", "CPU ")
            one = _pair(q0, "first_over_next", "{:.2f}x", "CPU ")
            print(
                f"{name}{label}: first query / next {nxt} (goal <= 2; median of {o['opens']} "
                f"opens, each asking another question first), first / the same question again "
                f"{again}; question 0 first, one open: {one}"
            )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--words", default="1,10", help="millions of words, comma-separated")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--mmap", action="store_true", help="also open MixPR memory-mapped")
    ap.add_argument(
        "--opens",
        type=int,
        help="fresh-process opens of each saved index, open i asking question i first "
        "(default: --questions, every question first once)",
    )
    ap.add_argument("--json", type=Path, help="write every figure to this file")
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--phase", choices=("prepare", "build", "open"), help=argparse.SUPPRESS)
    ap.add_argument("--system", choices=SYSTEMS, help=argparse.SUPPRESS)
    ap.add_argument("--size", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--map", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.phase == "prepare":
        print(json.dumps(prepare(args.data, args.size, args.work)))
        return
    if args.phase == "build":
        print(json.dumps(run_build(args.system, args.work, args.k, args.questions)))
        return
    if args.phase == "open":
        opened = run_open(args.system, args.work, args.k, args.questions, args.map, args.first)
        print(json.dumps(opened))
        return
    if args.questions < 2:
        ap.error(
            f"--questions must be at least 2 (a first one and a next one), got {args.questions}"
        )
    if args.questions > len(_questions(args.questions)):
        ap.error(
            f"--questions must be at most {len(_questions(args.questions))}, the questions known"
        )
    if args.opens is None:
        args.opens = args.questions
    if args.opens < 1:
        ap.error(f"--opens must be at least 1, got {args.opens}")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    for s in systems:
        if s not in SYSTEMS:
            ap.error(f"unknown system {s!r} (known: {', '.join(SYSTEMS)})")
    if args.mmap and "mixpr" in systems and mmap_keyword() is None:
        print("# MixPRIndex.load has no memory-mapping option: --mmap opens it as usual")
    results = {}
    for size in [float(w) for w in args.words.split(",")]:
        with tempfile.TemporaryDirectory(prefix="bench_vs_bm25-") as tmp:
            work = Path(tmp)
            base = ["--work", str(work), "--size", str(size)]
            info = _child(args, "--phase", "prepare", *base)
            if "error" in info:
                sys.exit(f"preparing {size}M words failed: {info['error']}")
            rows = {}
            for s in systems:
                row = {"build": _child(args, "--phase", "build", "--system", s, *base)}
                print(f"# {size:g}M words, {s}: {row['build']}", file=sys.stderr, flush=True)
                row["open"] = {}
                if s != "rank_bm25" and "error" not in row["build"]:
                    row["open"] = _opens(args, s, base)
                rows[s] = row
            print_tables(size, info, rows)
            results[str(size)] = {"info": info, "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
