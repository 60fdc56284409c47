"""Run every method on every task under the same budgets; figures to JSON, markdown and PNG.

Budgets are shares of each document's tokens (the retrieval ratio is their inverse), counted with
one token counter for every method (the SmolLM2 tokenizer by default). Per task x method x budget:
``recall`` (task metric, see :mod:`longctx.eval.metrics`), ``share`` (gold-span tasks), the
tokens actually selected, ``build_s`` (per document, once) and ``query_s`` (per question), and
the method's peak memory.

Memory: with ``isolate=True`` (the default of full runs) each method runs in its own worker
process (``spawn``, one at a time) that holds nothing of the other methods. Before each task the
worker resets its peak-RSS mark (``/proc/self/clear_refs``, Linux) and reports ``base_rss_mb``
(its RSS then: interpreter, libraries, the tokenizer, caches of earlier tasks) and
``peak_rss_mb`` (``VmHWM``: the highest RSS while the method built and searched that task's
documents). Where the mark cannot be reset, ``peak_rss_mb`` is the worker's whole-life peak
(``ru_maxrss``). Without isolation the same figures come from the harness's own process and
include what earlier methods left in memory.

A budget smaller than every unit of a method (:class:`longctx.selection.BudgetTooSmallError`)
is an empty selection, a miss, counted in ``budget_too_small``.

Corpus tasks (:data:`~longctx.eval.tasks.CORPUS_TASKS`, e.g. ``hotpotqa-corpus``): each method
builds one index over the pool of passages (``build_s``: that one build) and ranks the whole
pool for every question (``query_s``: one ranking, cut at every ``k``); the "budgets" are ``k``
passages (:data:`BUDGETS`), ``recall`` is passage recall@k (``|top-k ∩ gold| / |gold|``) and
``all`` the share of questions with every gold passage in the top ``k``. A method without a
ranking of whole passages is reported as skipped.
"""

from __future__ import annotations

import datetime
import json
import logging
import multiprocessing
import pickle
import resource
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from longctx.eval import metrics
from longctx.eval.methods import Context, Doc
from longctx.eval.registry import get_methods
from longctx.eval.tasks import CORPUS_TASKS, TASKS, load_task, passage_recall, size_label

logger = logging.getLogger(__name__)

#: budgets per task: shares of the document's tokens (float), or for a corpus task the number
#: of passages ``k`` (int)
BUDGETS = {
    "babilong": (0.05, 0.1, 0.2),
    "squad": (0.05, 0.1, 0.2),
    "hotpotqa": (0.1, 0.2, 0.4),
    "narrativeqa": (0.1, 0.2, 0.4),
    "multilexsum": (0.1, 0.2, 0.4),
    "hotpotqa-corpus": (2, 5, 10),
    "hotpotqa-corpus-untitled": (2, 5, 10),
}
#: ``--quick`` pools the paragraphs of this many examples for a corpus task (not the 100; the
#: questions' own examples are always in the pool)
QUICK_CORPUS_POOL = 4
#: ``--quick``: 4 questions a task (a bAbI subtask), one 8k-token haystack, no worker processes
QUICK = {"n_questions": 4, "babilong_tokens": (8_000,), "babilong_questions": None}
#: full run: 60 questions a task; bAbI at 16k (60 per subtask) and 128k tokens (10 per subtask)
FULL = {"n_questions": 60, "babilong_tokens": (16_000, 128_000), "babilong_questions": (60, 10)}


def _status_mb(field: str) -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset this process's peak-RSS mark (Linux ``clear_refs``); False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_rss_mb(reset_ok: bool = False) -> float:
    hwm = _status_mb("VmHWM") if reset_ok else None
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def default_token_counter():
    """The SmolLM2 tokenizer's token count (packaged model; nothing downloaded)."""
    from longctx.models import load_tokenizer
    from longctx.tokens import hf_token_counter

    return hf_token_counter(load_tokenizer(None))


def _task_runs(
    tasks, n_q, babilong_tokens, babilong_questions, quick_pool=None
) -> list[tuple[str, str, int, dict]]:
    """``(task, scope, n_questions, load_task kwargs)`` per task run (a bAbI size is one run)."""
    runs = []
    for task in tasks:
        if task == "babilong":
            qs = babilong_questions or (n_q,) * len(babilong_tokens)
            if len(qs) == 1:
                qs = tuple(qs) * len(babilong_tokens)
            if len(qs) != len(babilong_tokens):
                raise ValueError(
                    f"babilong_questions gives {len(qs)} counts for {len(babilong_tokens)} sizes"
                )
            for n_tok, q in zip(babilong_tokens, qs):
                runs.append((task, f"babilong-{size_label(n_tok)}", int(q), {"n_tokens": n_tok}))
        elif task in CORPUS_TASKS and quick_pool is not None:
            runs.append((task, task, n_q, {"pool": quick_pool}))
        else:
            runs.append((task, task, n_q, {}))
    return runs


def _run_method(spec: dict) -> dict:
    """Run one method over every task run of ``spec`` (in a worker process or in-process).

    Returns ``{"cells": {(task, budget): {figure: [values]}}, "memory": {scope: {...}},
    "tasks": [task names in order]}``.
    """
    counter = spec["token_counter"] or default_token_counter()
    answer = spec["answer"]
    answer_fn = answer if callable(answer) else (answer_with(answer) if answer else None)
    (m,) = get_methods([spec["method"]])
    cells: dict = defaultdict(lambda: defaultdict(list))
    memory, order, encoder = {}, [], None
    for task, scope, n_q, kw in spec["runs"]:
        if task == "babilong":
            kw = {**kw, "token_counter": counter}
        ctx = Context(
            token_counter=counter,
            encoder_factory=spec["encoder_factory"],
            seed=spec["seed"],
            cache_dir=spec["cache_dir"],
            scope=scope,
            options=spec["options"],
            _encoder=encoder,
        )
        reset_ok = _reset_peak()
        base = _status_mb("VmRSS") or _peak_rss_mb()
        t_task = time.perf_counter()
        if task in CORPUS_TASKS:
            corpus = load_task(task, Path(spec["data"]), n_q, spec["seed"], **kw)
            _run_corpus(m, ctx, corpus, cells)
            order.append(task)
            groups = []
        else:
            groups = list(load_task(task, Path(spec["data"]), n_q, spec["seed"], **kw))
        # one call with every document the method will build (GARLIC decodes them together);
        # its seconds are shared out among those documents' build times
        ready = [
            g[0].text for g in groups if m.skip_reason(ctx, ctx.count_document(g[0].text)) is None
        ]
        t0 = time.perf_counter()
        if ready:
            m.prepare(ctx, ready)
        prep_share = (time.perf_counter() - t0) / max(1, len(ready))
        for examples in groups:
            doc = Doc(examples[0].text, ctx)
            n_tok = ctx.count_document(doc.text)
            name = examples[0].task
            if name not in order:
                order.append(name)
            budgets = BUDGETS[task]
            reason = m.skip_reason(ctx, n_tok)
            if reason is not None:
                for b in budgets:
                    cells[(name, b)]["skipped"].append(reason)
                continue
            t0 = time.perf_counter()
            state = m.build(doc)
            build_s = time.perf_counter() - t0 + prep_share
            sizes = [max(1, int(b * n_tok)) for b in budgets]
            for b in budgets:
                cells[(name, b)]["build_s"].append(build_s)
            for ex in examples:
                picks = m.select_budgets(state, ex.query, sizes)
                for b, budget, (spans, sec) in zip(budgets, sizes, picks):
                    cell = cells[(name, b)]
                    cell["query_s"].append(sec)
                    if spans is None:  # the budget is below every unit of the method: a miss
                        spans = []
                        cell["too_small"].append(1)
                    sel_tok = sum(ctx.count(doc.text[a:c]) for a, c in spans)
                    for k, v in metrics.score(ex, doc.text, spans).items():
                        cell[k].append(v)
                    if answer_fn is not None and ex.query is not None and ex.answers:
                        context = metrics.selected_text(doc.text, spans)
                        cell["qa_f1"].append(
                            metrics.qa_f1(answer_fn(context, ex.query), ex.answers)
                        )
                    cell["selected_tokens"].append(sel_tok)
                    cell["doc_tokens"].append(n_tok)
                    cell["over_budget"].append(int(sel_tok > budget))
            del state
        ctx.save_cache()
        memory[scope] = {
            "base_rss_mb": round(base, 1),
            # (the kernel's RSS counters are batched per CPU: VmHWM can read a few pages under
            # the VmRSS read just after the reset; the peak is at least the base)
            "peak_rss_mb": round(max(_peak_rss_mb(reset_ok), base), 1),
            "peak_reset": reset_ok,
            "seconds": round(time.perf_counter() - t_task, 2),
        }
        ctx._counts.clear()
        encoder = ctx._encoder
        logger.info("%s on %s: %.1f s", spec["method"], scope, memory[scope]["seconds"])
    return {"cells": {k: dict(v) for k, v in cells.items()}, "memory": memory, "tasks": order}


def _run_corpus(m, ctx: Context, corpus, cells) -> None:
    """One corpus task for method ``m``: one build over the pool, one ranking per question cut
    at every ``k`` of :data:`BUDGETS` (figures into ``cells``, as :func:`_run_method`)."""
    ks = BUDGETS[corpus.task]
    if m.corpus_skip is not None:
        for k in ks:
            cells[(corpus.task, k)]["skipped"].append(m.corpus_skip)
        return
    t0 = time.perf_counter()
    state = m.build_corpus(list(corpus.passages), ctx)
    build_s = time.perf_counter() - t0
    for k in ks:
        cells[(corpus.task, k)]["build_s"].append(build_s)
    for q in corpus.questions:
        t0 = time.perf_counter()
        ranked = [int(i) for i in m.rank(state, q.query, max(ks))]
        sec = time.perf_counter() - t0
        if len(set(ranked)) != len(ranked) or not all(
            0 <= i < len(corpus.passages) for i in ranked
        ):
            raise RuntimeError(f"{m.name}: ranking of {q.qid!r} repeats or leaves the corpus")
        for k in ks:
            cell = cells[(corpus.task, k)]
            cell["query_s"].append(sec)
            cell["recall"].append(passage_recall(ranked[:k], q.gold))
            cell["all"].append(float(set(q.gold) <= set(ranked[:k])))
    del state


def _scope_of(task_name: str) -> str:
    if task_name.startswith("babilong-") and "@" in task_name:
        return "babilong-" + task_name.split("@", 1)[1]
    return task_name


def _row(task_name, mname, b, cell, mem) -> dict:
    row = {"task": task_name, "method": mname, "budget": b, "n": len(cell.get("recall", []))}
    row.update({k: mem[k] for k in ("peak_rss_mb", "base_rss_mb") if k in mem})
    if cell.get("skipped"):
        row["skipped"] = len(cell["skipped"])
        row["skip_reason"] = cell["skipped"][0]
    if not cell.get("recall"):
        row["recall"] = None
        return row
    row.update(
        {
            "recall": float(np.mean(cell["recall"])),
            "build_s": float(np.mean(cell["build_s"])),
            "query_s": float(np.mean(cell["query_s"])),
        }
    )
    if cell.get("all"):  # a corpus task: k passages, no token budget
        row["all"] = float(np.mean(cell["all"]))
        return row
    row["ratio"] = float(np.sum(cell["doc_tokens"]) / max(1, np.sum(cell["selected_tokens"])))
    row["over_budget"] = int(np.sum(cell["over_budget"]))
    if cell.get("too_small"):
        row["budget_too_small"] = int(np.sum(cell["too_small"]))
    if cell.get("share"):
        row["share"] = float(np.mean(cell["share"]))
    if cell.get("qa_f1"):
        row["qa_f1"] = float(np.mean(cell["qa_f1"]))
    return row


def run(
    data,
    *,
    tasks=TASKS,
    methods=("mixpr", "bm25", "minilm", "mmr", "truncate", "random"),
    quick: bool = False,
    n_questions: int | None = None,
    seed: int = 0,
    token_counter=None,
    encoder_factory=None,
    cache_dir=None,
    answer=None,
    babilong_tokens=None,
    babilong_questions=None,
    isolate: bool | None = None,
    method_options: dict | None = None,
) -> dict:
    """Run the benchmark; returns ``{"settings": ..., "results": [row, ...]}``.

    Parameters
    ----------
    data : path
        The data folder (``shared/data`` layout: babi/, gutenberg/, squad/, ...).
    tasks, methods : sequences of names (:data:`~longctx.eval.TASKS`, :data:`METHOD_NAMES`)
    quick : bool
        A few questions per task, one 8k-token bAbI haystack, no worker processes (CI); else
        :data:`FULL`.
    n_questions : int, optional
        Questions per task (per bAbI subtask), overriding ``quick``'s.
    seed : int
    token_counter : callable ``str -> int``, optional
        Budget counter for every method (default: the SmolLM2 tokenizer).
    encoder_factory : callable, optional
        Returns the sentence encoder (default: ``longctx.embeddings.get_encoder``, MiniLM).
    cache_dir : path, optional
        Sentence embeddings, document token counts and GARLIC graphs are kept there between
        runs (never in the repository). Without it an isolated run uses a temporary folder.
    answer : None, True, str or callable ``(context, question) -> str``
        Also answer every question from each selection with a local LLM and score the answer
        with LongBench's QA F1 (``qa_f1`` in the rows): ``True`` for the packaged SmolLM2, a str
        for any causal LM path (:func:`answer_with`), or your own callable. Slow on CPU (a few
        seconds an answer).
    babilong_tokens : sequence of int, optional
        bAbI haystack sizes in tokens (default ``(16000, 128000)``; quick ``(8000,)``); each size
        is its own set of tasks (``babilong-qa1@16k``, ...).
    babilong_questions : sequence of int, optional
        Questions per bAbI subtask for each size (one value: every size). Default: ``(60, 10)``
        for the full run's two sizes, else ``n_questions``.
    isolate : bool, optional
        Each method in its own worker process, for per-method peak memory (module docstring).
        Default: True for full runs (in-process, logged, when an argument cannot be pickled),
        False with ``quick``. ``True`` requires picklable arguments.
    method_options : dict, optional
        Per-method settings, e.g. ``{"garlic": {"max_doc_tokens": 4000}}``
        (:class:`~longctx.eval.garlic.GarlicMethod`).

    Raises
    ------
    FileNotFoundError
        ``data`` (or a task's file in it) is missing, named.
    ValueError
        Unknown task or method names, bad sizes, unpicklable arguments with ``isolate``.
    """
    sizes = QUICK if quick else FULL
    n_q = n_questions or sizes["n_questions"]
    get_methods(methods)  # names checked before any work
    bad = [t for t in tasks if t not in BUDGETS]
    if bad:
        raise ValueError(f"task must be one of {sorted(BUDGETS)}, got {bad}")
    b_tokens = tuple(int(t) for t in (babilong_tokens or sizes["babilong_tokens"]))
    if any(t < 500 for t in b_tokens):
        raise ValueError(f"babilong_tokens must be >= 500, got {list(b_tokens)}")
    b_questions = babilong_questions
    if b_questions is None and babilong_tokens is None and n_questions is None:
        b_questions = sizes["babilong_questions"]
    runs = _task_runs(tasks, n_q, b_tokens, b_questions, QUICK_CORPUS_POOL if quick else None)
    spec = {
        "data": str(Path(data)),
        "runs": runs,
        "seed": seed,
        "token_counter": token_counter,
        "encoder_factory": encoder_factory,
        "cache_dir": None if cache_dir is None else str(cache_dir),
        "options": dict(method_options or {}),
        "answer": answer,
    }
    from longctx.eval.tasks import check_data

    check_data(Path(data))
    want = (not quick) if isolate is None else bool(isolate)
    if want:
        try:
            pickle.dumps(spec)
        except Exception as e:  # noqa: BLE001
            if isolate:
                raise ValueError(
                    "isolate=True runs each method in a worker process: token_counter, "
                    "encoder_factory, answer and method_options must be picklable "
                    f"(module-level functions), or pass isolate=False ({e})"
                ) from None
            logger.info("arguments not picklable (%s): methods run in this process", e)
            want = False
    isolate = want
    tmp = None
    if isolate and cache_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="longctx-bench-")
        spec["cache_dir"] = tmp.name
    outs = {}
    try:
        for mname in methods:
            t0 = time.perf_counter()
            mspec = {**spec, "method": mname}
            if isolate:
                ctx = multiprocessing.get_context("spawn")
                with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
                    outs[mname] = pool.submit(_run_method, mspec).result()
            else:
                outs[mname] = _run_method(mspec)
            logger.info("method %s done in %.1f s", mname, time.perf_counter() - t0)
    finally:
        if tmp is not None:
            tmp.cleanup()
    task_order = list(dict.fromkeys(t for o in outs.values() for t in o["tasks"]))
    rows = []
    for task_name in task_order:
        base = "babilong" if task_name.startswith("babilong-") else task_name
        for mname in methods:
            out = outs[mname]
            mem = out["memory"].get(_scope_of(task_name), {})
            for b in BUDGETS[base]:
                cell = out["cells"].get((task_name, b))
                if cell is not None:
                    rows.append(_row(task_name, mname, b, cell, mem))
    memory = {m: o["memory"] for m, o in outs.items()}
    return {
        "settings": {
            "date": datetime.date.today().isoformat(),  # the pages quote it (doc_tables.py)
            "tasks": list(tasks),
            "methods": list(methods),
            "quick": quick,
            "n_questions": n_q,
            "seed": seed,
            "budgets": {t: list(BUDGETS[t]) for t in tasks},
            "babilong_tokens": list(b_tokens),
            "babilong_questions": [r[2] for r in runs if r[0] == "babilong"],
            "isolate": isolate,
            "memory": "peak_rss_mb: VmHWM of the method's own worker process during the task "
            "(mark reset at the task's start); base_rss_mb: its RSS at that start"
            if isolate
            else "peak_rss_mb / base_rss_mb of the harness process (all methods in one process)",
            "token_counter": getattr(token_counter, "__qualname__", "smollm2")
            if token_counter
            else "smollm2",
            "answer": None
            if answer is None
            else (getattr(answer, "__qualname__", "custom") if callable(answer) else str(answer)),
        },
        "memory": memory,
        "results": rows,
    }


def answer_with(model=True, *, max_new_tokens: int = 32):
    """A ``(context, question) -> answer`` function over a local causal LM (``True``: the
    packaged SmolLM2-135M-Instruct; a str: a local path or cached name), greedy decoding through
    the model's chat template. The model is loaded on the first call."""
    state = {}

    def answer(context: str, question: str) -> str:
        import torch

        if not state:
            from longctx.models import load_causal_lm

            state["model"], state["tok"] = load_causal_lm(None if model is True else model)
        m, tok = state["model"], state["tok"]
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": f"{context}\n\nAnswer briefly: {question}"}],
            tokenize=False,
            add_generation_prompt=True,
        )
        ids = tok(prompt, return_tensors="pt", add_special_tokens=False).to(m.device)
        with torch.inference_mode():
            out = m.generate(**ids, max_new_tokens=max_new_tokens, do_sample=False)
        return tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True).strip()

    return answer


def _cell_text(r: dict | None) -> str:
    if r is None:
        return ""
    if r.get("recall") is None:
        return "skipped"
    v = f"{r['recall']:.2f}"
    if "share" in r:
        v += f" ({r['share']:.2f})"
    if "all" in r:
        v += f" ({r['all']:.2f})"
    return v


def _budget_label(b) -> str:
    """``0.1 -> "10%"`` (a share of the document's tokens), ``5 -> "k=5"`` (passages)."""
    return f"k={b}" if isinstance(b, int) else f"{b:.0%}"


def markdown(result: dict) -> str:
    """Tables: a row per task x budget, a column per method (recall; share in brackets, or for a
    corpus task at ``k=`` passages the share of questions with every gold passage; "skipped"
    with the reasons below); QA F1 when answered; seconds and peak memory per method; peak
    memory per task x method."""
    rows = result["results"]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    keys = list(dict.fromkeys((r["task"], r["budget"]) for r in rows))
    cell = {(r["task"], r["budget"], r["method"]): r for r in rows}
    out = ["| task | budget | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for task, b in keys:
        vals = [_cell_text(cell.get((task, b, m))) for m in methods]
        out.append(f"| {task} | {_budget_label(b)} | " + " | ".join(vals) + " |")
    reasons = {}
    for r in rows:
        if r.get("skip_reason"):
            reasons.setdefault((r["method"], r["skip_reason"]), []).append(r["task"])
    if reasons:
        out.append("")
        for (m, why), ts in reasons.items():
            ts = list(dict.fromkeys(ts))
            out.append(f"- {m} skipped on {', '.join(ts)}: {why}")
    if any("qa_f1" in r for r in rows):
        out.append("")
        out.append("LLM answer from the selection, QA F1:")
        out.append("")
        out.append("| task | budget | " + " | ".join(methods) + " |")
        out.append("|---|---|" + "---|" * len(methods))
        for task, b in keys:
            vals = [
                f"{cell[(task, b, m)]['qa_f1']:.2f}"
                if "qa_f1" in cell.get((task, b, m), {})
                else ""
                for m in methods
            ]
            out.append(f"| {task} | {_budget_label(b)} | " + " | ".join(vals) + " |")
    out.append("")
    out.append("| method | build s / doc | query s / question | peak RSS MB (max over tasks) |")
    out.append("|---|---|---|---|")
    for m in methods:
        rs = [r for r in rows if r["method"] == m and r.get("recall") is not None]
        peaks = [r["peak_rss_mb"] for r in rows if r["method"] == m and "peak_rss_mb" in r]
        peak = f"{max(peaks):.0f}" if peaks else ""
        if not rs:
            out.append(f"| {m} | skipped | skipped | {peak} |")
            continue
        out.append(
            f"| {m} | {np.mean([r['build_s'] for r in rs]):.3f} | "
            f"{np.mean([r['query_s'] for r in rs]):.4f} | {peak} |"
        )
    corpus_rows = [r for r in rows if r["task"] in CORPUS_TASKS and r.get("recall") is not None]
    if corpus_rows:
        out.append("")
        out.append("Corpus tasks: one build over the pool, one ranking per question:")
        out.append("")
        out.append("| task | method | passages build s | query ms / question |")
        out.append("|---|---|---|---|")
        for task, m in dict.fromkeys((r["task"], r["method"]) for r in corpus_rows):
            r = next(x for x in corpus_rows if x["task"] == task and x["method"] == m)
            out.append(f"| {task} | {m} | {r['build_s']:.2f} | {1000 * r['query_s']:.1f} |")
    mem = result.get("memory") or {}
    scopes = list(dict.fromkeys(s for m in methods for s in mem.get(m, {})))
    if scopes:
        out.append("")
        out.append(
            "Peak RSS MB per task (base RSS of the process at the task's start in brackets):"
        )
        out.append("")
        out.append("| task | " + " | ".join(methods) + " |")
        out.append("|---|" + "---|" * len(methods))
        for sc in scopes:
            vals = []
            for m in methods:
                f = mem.get(m, {}).get(sc)
                vals.append(f"{f['peak_rss_mb']:.0f} ({f['base_rss_mb']:.0f})" if f else "")
            out.append(f"| {sc} | " + " | ".join(vals) + " |")
    return "\n".join(out)


def plot(result: dict, out_dir: Path) -> list[Path]:
    """``recall.png`` (recall against budget, a panel per task, a line per method; skipped
    methods have no line) and ``seconds.png`` (build and query seconds per method). Returns the
    paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in result["results"] if r.get("recall") is not None]
    tasks = list(dict.fromkeys(r["task"] for r in result["results"]))
    methods = list(dict.fromkeys(r["method"] for r in result["results"]))
    ncol = min(len(tasks), 6)
    nrow = -(-len(tasks) // ncol)
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(3.0 * ncol, 2.8 * nrow), squeeze=False, sharey=True
    )
    for ax, task in zip(axes.flat, tasks):
        for i, m in enumerate(methods):
            pts = sorted(
                (r["budget"], r["recall"]) for r in rows if r["task"] == task and r["method"] == m
            )
            if pts:
                ax.plot(
                    [p[0] if isinstance(p[0], int) else p[0] * 100 for p in pts],
                    [p[1] for p in pts],
                    marker="o",
                    label=m,
                    color=f"C{i}",
                )
        ax.set_title(task, fontsize=9)
        corpus = _scope_of(task) in CORPUS_TASKS
        ax.set_xlabel("k (passages)" if corpus else "budget (% of tokens)", fontsize=8)
        ax.set_ylim(-0.02, 1.02)
    for ax in axes.flat[len(tasks) :]:
        ax.axis("off")
    for r in range(nrow):
        axes[r][0].set_ylabel("recall")
    handles = [
        plt.Line2D([], [], color=f"C{i}", marker="o", label=m) for i, m in enumerate(methods)
    ]
    fig.legend(handles=handles, loc="lower center", ncol=len(methods), fontsize=8)
    fig.tight_layout(rect=(0, 0.06 if nrow > 1 else 0.1, 1, 1))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p1 = out_dir / "recall.png"
    fig.savefig(p1, dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3))
    ms = [m for m in methods if any(r["method"] == m for r in rows)]
    build = [np.mean([r["build_s"] for r in rows if r["method"] == m]) for m in ms]
    query = [np.mean([r["query_s"] for r in rows if r["method"] == m]) for m in ms]
    x = np.arange(len(ms))
    ax.bar(x - 0.2, build, 0.4, label="build / document")
    ax.bar(x + 0.2, query, 0.4, label="query")
    ax.set_xticks(x, ms, rotation=30, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p2 = out_dir / "seconds.png"
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return [p1, p2]


def save(result: dict, out_dir: Path) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "bench.json"
    path.write_text(json.dumps(result, indent=1), "utf-8")
    return path
