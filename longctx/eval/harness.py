"""Run every method on every task under the same budgets; figures to JSON, markdown and PNG.

Budgets are shares of each document's tokens (the retrieval ratio is their inverse), counted with
one token counter for every method (the SmolLM2 tokenizer by default). Per task x method x budget:
``recall`` (task metric, see :mod:`longctx.eval.metrics`), ``share`` (gold-span tasks), the
tokens actually selected, ``build_s`` (per document, once) and ``query_s`` (per question), and
the process's peak RSS after the method ran. A budget smaller than every unit of a method
(:class:`longctx.selection.BudgetTooSmallError`) is an empty selection, a miss, counted in
``budget_too_small``.
"""

from __future__ import annotations

import json
import logging
import resource
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from longctx.eval import metrics
from longctx.eval.methods import Context, Doc, get_methods
from longctx.eval.tasks import load_task
from longctx.selection import BudgetTooSmallError

logger = logging.getLogger(__name__)

#: budgets (share of the document's tokens) per task
BUDGETS = {
    "babilong": (0.05, 0.1, 0.2),
    "squad": (0.05, 0.1, 0.2),
    "hotpotqa": (0.1, 0.2, 0.4),
    "narrativeqa": (0.1, 0.2, 0.4),
    "multilexsum": (0.1, 0.2, 0.4),
}
QUICK = {"n_questions": 4, "babilong_tokens": 8_000}
FULL = {"n_questions": 60, "babilong_tokens": 16_000}


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def default_token_counter():
    """The SmolLM2 tokenizer's token count (packaged model; nothing downloaded)."""
    from longctx.models import load_tokenizer
    from longctx.tokens import hf_token_counter

    return hf_token_counter(load_tokenizer(None))


def run(
    data,
    *,
    tasks=("babilong", "squad", "hotpotqa", "narrativeqa", "multilexsum"),
    methods=("mixpr", "bm25", "minilm", "mmr", "truncate", "random"),
    quick: bool = False,
    n_questions: int | None = None,
    seed: int = 0,
    token_counter=None,
    encoder_factory=None,
    cache_dir=None,
    answer=None,
) -> dict:
    """Run the benchmark; returns ``{"settings": ..., "results": [row, ...]}``.

    Parameters
    ----------
    data : path
        The data folder (``shared/data`` layout: babi/, gutenberg/, squad/, ...).
    tasks, methods : sequences of names (:data:`~longctx.eval.TASKS`, :data:`METHOD_NAMES`)
    quick : bool
        A few questions per task and 8k-token haystacks (CI); else 60 and 16k.
    n_questions : int, optional
        Questions per task (per bAbI subtask), overriding ``quick``'s.
    seed : int
    token_counter : callable ``str -> int``, optional
        Budget counter for every method (default: the SmolLM2 tokenizer).
    encoder_factory : callable, optional
        Returns the sentence encoder (default: ``longctx.embeddings.get_encoder``, MiniLM).
    cache_dir : path, optional
        Sentence embeddings are kept there between runs (never in the repository).
    answer : None, True, str or callable ``(context, question) -> str``
        Also answer every question from each selection with a local LLM and score the answer
        with LongBench's QA F1 (``qa_f1`` in the rows): ``True`` for the packaged SmolLM2, a str
        for any causal LM path (:func:`answer_with`), or your own callable. Slow on CPU (a few
        seconds an answer).

    Raises
    ------
    FileNotFoundError
        ``data`` (or a task's file in it) is missing, named.
    ValueError
        Unknown task or method names.
    """
    answer_fn = answer if callable(answer) else (answer_with(answer) if answer else None)
    sizes = QUICK if quick else FULL
    n_q = n_questions or sizes["n_questions"]
    method_objs = get_methods(methods)
    counter = token_counter or default_token_counter()
    ctx = Context(
        token_counter=counter, encoder_factory=encoder_factory, seed=seed, cache_dir=cache_dir
    )
    rows = []
    for task in tasks:
        kw = {"n_tokens": sizes["babilong_tokens"]} if task == "babilong" else {}
        docs = list(load_task(task, Path(data), n_q, seed, **kw))
        budgets = BUDGETS[task]
        acc = defaultdict(lambda: defaultdict(list))
        t_task = time.perf_counter()
        for examples in docs:
            doc = Doc(examples[0].text, ctx)
            n_tok = int(counter(doc.text))
            for m in method_objs:
                t0 = time.perf_counter()
                state = m.build(doc)
                build_s = time.perf_counter() - t0
                for b in budgets:
                    budget = max(1, int(b * n_tok))
                    cell = acc[(examples[0].task, m.name, b)]
                    cell["build_s"].append(build_s)
                    for ex in examples:
                        t0 = time.perf_counter()
                        try:
                            spans = m.select(state, ex.query, budget)
                        except BudgetTooSmallError:  # no unit fits: an empty selection, a miss
                            spans = []
                            cell["too_small"].append(1)
                        cell["query_s"].append(time.perf_counter() - t0)
                        sel_tok = sum(int(counter(doc.text[a:c])) for a, c in spans)
                        for k, v in metrics.score(ex, doc.text, spans).items():
                            cell[k].append(v)
                        if answer_fn is not None and ex.query is not None and ex.answers:
                            context = metrics.selected_text(doc.text, spans)
                            pred = answer_fn(context, ex.query)
                            cell["qa_f1"].append(metrics.qa_f1(pred, ex.answers))
                        cell["selected_tokens"].append(sel_tok)
                        cell["doc_tokens"].append(n_tok)
                        cell["over_budget"].append(int(sel_tok > budget))
                acc_rss = _peak_rss_mb()
                for b in budgets:
                    acc[(examples[0].task, m.name, b)]["peak_rss_mb"] = [acc_rss]
        for (task_name, mname, b), cell in acc.items():
            row = {
                "task": task_name,
                "method": mname,
                "budget": b,
                "n": len(cell["recall"]),
                "recall": float(np.mean(cell["recall"])),
                "ratio": float(
                    np.sum(cell["doc_tokens"]) / max(1, np.sum(cell["selected_tokens"]))
                ),
                "build_s": float(np.mean(cell["build_s"])),
                "query_s": float(np.mean(cell["query_s"])),
                "over_budget": int(np.sum(cell["over_budget"])),
                "peak_rss_mb": float(cell["peak_rss_mb"][0]),
            }
            if cell.get("too_small"):
                row["budget_too_small"] = int(np.sum(cell["too_small"]))
            if cell.get("share"):
                row["share"] = float(np.mean(cell["share"]))
            if cell.get("qa_f1"):
                row["qa_f1"] = float(np.mean(cell["qa_f1"]))
            rows.append(row)
        logger.info("task %s done in %.1f s", task, time.perf_counter() - t_task)
    ctx.save_cache()
    return {
        "settings": {
            "tasks": list(tasks),
            "methods": list(methods),
            "quick": quick,
            "n_questions": n_q,
            "seed": seed,
            "budgets": {t: list(BUDGETS[t]) for t in tasks},
            "babilong_tokens": sizes["babilong_tokens"],
            "token_counter": getattr(counter, "__qualname__", "custom"),
            "answer": None if answer_fn is None else getattr(answer_fn, "__qualname__", "custom"),
        },
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


def markdown(result: dict) -> str:
    """One table: a row per task x budget, a column per method (recall; share in brackets)."""
    rows = result["results"]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    keys = list(dict.fromkeys((r["task"], r["budget"]) for r in rows))
    cell = {(r["task"], r["budget"], r["method"]): r for r in rows}
    out = ["| task | budget | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for task, b in keys:
        vals = []
        for m in methods:
            r = cell.get((task, b, m))
            if r is None:
                vals.append("")
                continue
            v = f"{r['recall']:.2f}"
            if "share" in r:
                v += f" ({r['share']:.2f})"
            vals.append(v)
        out.append(f"| {task} | {b:.0%} | " + " | ".join(vals) + " |")
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
            out.append(f"| {task} | {b:.0%} | " + " | ".join(vals) + " |")
    out.append("")
    out.append("| method | build s / doc | query s / question | peak RSS MB |")
    out.append("|---|---|---|---|")
    for m in methods:
        rs = [r for r in rows if r["method"] == m]
        out.append(
            f"| {m} | {np.mean([r['build_s'] for r in rs]):.3f} | "
            f"{np.mean([r['query_s'] for r in rs]):.4f} | {max(r['peak_rss_mb'] for r in rs):.0f} |"
        )
    return "\n".join(out)


def plot(result: dict, out_dir: Path) -> list[Path]:
    """``recall.png`` (recall against budget, a panel per task, a line per method) and
    ``seconds.png`` (build and query seconds per method). Returns the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["results"]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 3), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for m in methods:
            pts = sorted(
                (r["budget"], r["recall"]) for r in rows if r["task"] == task and r["method"] == m
            )
            if pts:
                ax.plot([p[0] * 100 for p in pts], [p[1] for p in pts], marker="o", label=m)
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("budget (% of tokens)")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("recall")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    p1 = out_dir / "recall.png"
    fig.savefig(p1, dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3))
    build = [np.mean([r["build_s"] for r in rows if r["method"] == m]) for m in methods]
    query = [np.mean([r["query_s"] for r in rows if r["method"] == m]) for m in methods]
    x = np.arange(len(methods))
    ax.bar(x - 0.2, build, 0.4, label="build / document")
    ax.bar(x + 0.2, query, 0.4, label="query")
    ax.set_xticks(x, methods, rotation=30, fontsize=8)
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
