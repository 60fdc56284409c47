"""What a MixPR query costs through the adapters, beside the core's own search (the brief of
the adapters' query overhead, issue 45's apps).

Cells (each: the six questions of ``bench_apps.py``, or the growth table's 20 questions at
``--words`` million words):

- ``core``: :meth:`longctx.MixPRIndex.search` on the LlamaIndex retriever's own index, with the
  retriever's arguments (``k=5``, ``unique_texts=True``); ``core budget``: the same asked for
  ``--budget`` tokens;
- ``llamaindex`` / ``langchain``: ``MixPRRetriever.retrieve`` / ``invoke`` over the apps' four
  books as the apps build them (``bench_apps.py``: one ``Document`` per book), ``k=5``;
- ``... budget``: the same asked for ``--budget`` tokens (the apps' ``@ app's tokens`` rows:
  a few hundred hits);
- ``llamaindex chunks``: ``from_defaults(docstore=..., chunk_nodes=False)`` over the LlamaIndex
  app's ``SentenceSplitter`` nodes in a docstore (no vectors: nothing is embedded);
  ``langchain chunks``: ``chunk_documents=False`` over the LangChain app's splits;
- ``... corpus``: ``CorpusRetriever.from_corpus`` over a corpus of the four books built by
  :func:`longctx.corpus.build_indexes` (MixPR, one index);
- with ``--words``: ``core`` / ``llamaindex`` / ``langchain`` at that many million words
  (``bench_mixpr_growth.corpus``, the corpus ``bench_vs_bm25.py`` builds).

Per cell: CPU milliseconds per query (``time.process_time``: the machine is shared), the
median of ``--passes`` passes over the questions, the cells interleaved within a pass; and
one profiled pass (``cProfile``) whose cumulative times of the adapter's steps are reported
per query (profiling inflates them: read them as shares).

Before / after: ``--before TREE`` (a checkout of the code to compare, e.g. the base commit)
runs this script in child processes alternately under ``PYTHONPATH=TREE`` and under this
checkout, ``--repeat`` times each, prints both medians and their ratio, and fails unless every
returned node / document (id, text, metadata, score, relationships, offsets) is the same
(``--keep DIR`` keeps each run's figures and results as JSON).

Run: ``PYTHONPATH=. python benchmarks/bench_adapter_overhead.py [--words 1] [--before TREE]``.

Measured 2026-11-29 (``--before`` the base commit 077082f, ``--repeat 3 --passes 3 --words 1
--profile``, a 2-core machine shared with four other sessions, load 2.3-4.2; CPU ms per query,
before -> after): core 1.71 -> 1.66; LlamaIndex 3.36 -> 2.06, its budget of 5,000 tokens
(about 230 hits) 50.0 -> 8.6, over a docstore 3.59 -> 3.19, corpus 4.45 -> 2.16; LangChain
2.30 -> 1.81 (noise: its MixPR path did not change), budget 6.69 -> 6.31, corpus 2.09 -> 1.89;
at 1M words (51,262 units) core 2.25 -> 1.97, LlamaIndex 9.81 -> 2.42, LangChain 2.54 -> 2.24.
The frameworks' own layer (profiled ``retrieve`` minus ``_retrieve``, ``invoke`` minus
``_get_relevant_documents``): about 0.2-0.3 ms (LlamaIndex's instrumentation dispatcher) and
0.1-0.2 ms (LangChain's callback manager) a query. Results equal before / after (88 queries).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HERE = Path(__file__).resolve().parent
_PATH = list(sys.path)
sys.path.insert(0, str(HERE))

import bench_apps  # noqa: E402
import bench_mixpr_growth  # noqa: E402

# bench_mixpr_growth puts this checkout first on the path: a child measuring another tree
# (PYTHONPATH) imports longctx and the adapters from that tree
sys.path[:] = [str(HERE), *_PATH]

K = 5
#: the adapters' steps whose cumulative profiled time is reported (function names)
STEPS = (
    "retrieve", "_retrieve", "invoke", "_get_relevant_documents", "search", "_sync_docstore",
    "hit_to_node", "hit_to_document", "as_related_node_info", "hash", "with_unique_ids",
    "model_copy", "text",
)  # fmt: skip


def _li_dump(out) -> list:
    return [
        {
            "id": n.node.node_id,
            "score": n.score,
            "text": n.node.get_content(),
            "metadata": n.node.metadata,
            "start": n.node.start_char_idx,
            "end": n.node.end_char_idx,
            "excluded": [n.node.excluded_llm_metadata_keys, n.node.excluded_embed_metadata_keys],
            "relationships": {
                str(k): v.model_dump() if hasattr(v, "model_dump") else repr(v)
                for k, v in n.node.relationships.items()
            },
            "ref_doc_id": n.node.ref_doc_id,
        }
        for n in out
    ]


def _lc_dump(out) -> list:
    return [{"id": d.id, "text": d.page_content, "metadata": d.metadata} for d in out]


def _corpus_dir(books, work: Path) -> Path:
    from longctx.corpus import build_indexes

    src = work / "books"
    src.mkdir()
    for name, _, text in books:
        (src / name).write_text(text, encoding="utf-8")
    build_indexes(str(src), "mixpr", str(work / "corpus"), progress=False)
    return work / "corpus"


def app_cells(work: Path, budget: int) -> dict:
    """``{cell: (ask(question) -> result, dump(result) -> list)}`` over the apps' books."""
    from langchain_core.documents import Document as LCDocument
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from llama_index.core import Document
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.storage.docstore import SimpleDocumentStore

    import langchain_longctx as lc
    import llamaindex_longctx as li

    books = bench_apps._books()
    docs = [Document(text=t, doc_id=name, metadata={"title": title}) for name, title, t in books]
    lr = li.MixPRRetriever.from_documents(docs, similarity_top_k=K)
    lrb = li.MixPRRetriever.from_documents(docs, token_budget=budget)
    store = SimpleDocumentStore()
    # the app's splitter, with ids made from the documents' (the default's are random)
    store.add_documents(SentenceSplitter(id_func=lambda i, doc: f"{doc.doc_id}:{i}")(docs))
    lrc = li.MixPRRetriever.from_defaults(docstore=store, chunk_nodes=False, similarity_top_k=K)
    cdocs = [LCDocument(page_content=t, metadata={"source": name}) for name, _, t in books]
    cr = lc.MixPRRetriever.from_documents(cdocs, k=K)
    splits = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=200, add_start_index=True
    ).split_documents(cdocs)
    crc = lc.MixPRRetriever(documents=splits, chunk_documents=False, k=K)
    corpus = _corpus_dir(books, work)
    lco = li.CorpusRetriever.from_corpus(corpus, similarity_top_k=K)
    cco = lc.CorpusRetriever.from_corpus(corpus, k=K)
    index = lr.index
    return {
        "core": (lambda q: index.search(q, k=K, unique_texts=True), None),
        "core budget": (lambda q: index.search(q, token_budget=budget, unique_texts=True), None),
        "llamaindex": (lr.retrieve, _li_dump),
        "langchain": (cr.invoke, _lc_dump),
        "llamaindex budget": (lrb.retrieve, _li_dump),
        "langchain budget": (lambda q: cr.invoke(q, token_budget=budget), _lc_dump),
        "llamaindex chunks": (lrc.retrieve, _li_dump),
        "langchain chunks": (crc.invoke, _lc_dump),
        "llamaindex corpus": (lco.retrieve, _li_dump),
        "langchain corpus": (cco.invoke, _lc_dump),
    }


def words_cells(words: float) -> dict:
    """The 1M-word cells: ``core`` / ``llamaindex`` / ``langchain`` at ``words`` million words."""
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document

    import langchain_longctx as lc
    import llamaindex_longctx as li

    docs = bench_mixpr_growth.corpus(bench_apps.DATA.parent, int(words * 1e6))
    lr = li.MixPRRetriever.from_documents(
        [Document(text=t, id_=i) for i, t in docs], similarity_top_k=K
    )
    cr = lc.MixPRRetriever.from_documents([LCDocument(page_content=t, id=i) for i, t in docs], k=K)
    index = lr.index
    tag = f"{words:g}M"
    return {
        f"core {tag}": (lambda q: index.search(q, k=K, unique_texts=True), None),
        f"llamaindex {tag}": (lr.retrieve, _li_dump),
        f"langchain {tag}": (cr.invoke, _lc_dump),
    }


def _profile(ask, questions) -> dict:
    """Cumulative profiled ms per query of :data:`STEPS` over one pass."""
    prof = cProfile.Profile()
    prof.enable()
    for q in questions:
        ask(q)
    prof.disable()
    out: dict = {}
    for (_, _, name), row in pstats.Stats(prof).stats.items():
        if name in STEPS:
            out[name] = out.get(name, 0.0) + row[3] * 1000 / len(questions)
    return {k: round(v, 3) for k, v in sorted(out.items())}


def child(args) -> dict:
    import llamaindex_longctx
    import longctx

    QUESTIONS = bench_mixpr_growth.QUESTIONS
    with tempfile.TemporaryDirectory(prefix="bench_adapter_overhead-") as tmp:
        groups = [(app_cells(Path(tmp), args.budget), [q for q, _ in bench_apps.QUESTIONS])]
        if args.words:
            groups.append((words_cells(args.words), QUESTIONS[: args.questions]))
        cpu: dict = {}
        results: dict = {}
        profiles: dict = {}
        for cells, qs in groups:
            for name, (ask, dump) in cells.items():  # warm-up, and the results compared
                ask(qs[0])
                if dump is not None:
                    results[name] = [dump(ask(q)) for q in qs]
            for _ in range(args.passes):
                for name, (ask, _) in cells.items():
                    c0 = time.process_time()
                    for q in qs:
                        ask(q)
                    cpu.setdefault(name, []).append(1000 * (time.process_time() - c0) / len(qs))
            if args.profile:
                profiles.update({name: _profile(ask, qs) for name, (ask, _) in cells.items()})
    return {
        "code": [longctx.__file__, llamaindex_longctx.__file__],
        "cpu_ms": {k: statistics.median(v) for k, v in cpu.items()},
        "results": results,
        "profiles": profiles,
    }


def _run_child(tree: Path, args, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, __file__, "--child", str(out), "--passes", str(args.passes)]
    cmd += ["--budget", str(args.budget), "--questions", str(args.questions)]
    cmd += ["--words", str(args.words)] if args.words else []
    cmd += ["--profile"] if args.profile else []
    subprocess.run(cmd, env=env, check=True)
    return json.loads(out.read_text())


def _same(a, b) -> list[str]:
    """The cells whose results differ (compared as JSON)."""
    norm = lambda x: json.loads(json.dumps(x, sort_keys=True, default=repr))  # noqa: E731
    return [c for c in sorted(set(a) | set(b)) if norm(a.get(c)) != norm(b.get(c))]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--before", type=Path, help="a checkout to compare with (child processes)")
    p.add_argument("--repeat", type=int, default=3, help="child runs of each tree, alternated")
    p.add_argument("--passes", type=int, default=5, help="passes over the questions per run")
    p.add_argument("--budget", type=int, default=5000, help="tokens of the budget cells")
    p.add_argument("--words", type=float, default=0.0, help="also at this many million words")
    p.add_argument("--questions", type=int, default=20, help="questions at --words")
    p.add_argument("--profile", action="store_true", help="one profiled pass per cell")
    p.add_argument("--json", type=Path, help="write every figure to this file")
    p.add_argument("--keep", type=Path, help="keep each run's figures and results in this folder")
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        args.child.write_text(json.dumps(child(args), default=repr))
        return
    here = HERE.parent
    trees = [("after", here)] if args.before is None else [("before", args.before), ("after", here)]
    runs: dict = {name: [] for name, _ in trees}
    with tempfile.TemporaryDirectory() as tmp:
        keep = args.keep or Path(tmp)
        keep.mkdir(parents=True, exist_ok=True)
        for r in range(args.repeat):
            for name, tree in trees:
                runs[name].append(_run_child(tree, args, keep / f"{name}{r}.json"))
                code = runs[name][-1]["code"]
                if not all(Path(c).resolve().is_relative_to(tree.resolve()) for c in code):
                    sys.exit(f"the {name} run imported {code}, not the code of {tree}")
                print(f"# run {r} {name} done, load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    table = {}
    for cell in runs["after"][0]["cpu_ms"]:
        row = {n: statistics.median(run["cpu_ms"][cell] for run in runs[n]) for n in runs}
        table[cell] = row
        figures = "  ".join(f"{n} {v:8.2f}" for n, v in row.items())
        ratio = f"  after/before {row['after'] / row['before']:.2f}" if "before" in row else ""
        print(f"{cell:24s} {figures} CPU ms/query{ratio}")
    if args.profile:
        for n in runs:
            for cell, steps in runs[n][-1]["profiles"].items():
                print(f"profile {n:6s} {cell:24s} {steps}")
    diff = _same(runs["before"][0]["results"], runs["after"][0]["results"]) if args.before else []
    if args.json:
        args.json.write_text(json.dumps({"cpu_ms": table, "differ": diff}, indent=1))
    if diff:
        sys.exit(f"results differ before / after in: {diff}")
    if args.before:
        n = sum(len(v) for v in runs["after"][0]["results"].values())
        print(f"# results equal before / after: {n} queries' nodes / documents compared")


if __name__ == "__main__":
    main()
