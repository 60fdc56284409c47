"""YOURA's paper setting against its default preset, BM25, MiniLM, lead and random (issue 13).

Part 1, answer recall. Tasks of ``longctx.eval`` (SQuAD v2.0 dev articles, NarrativeQA summaries,
HotpotQA distractor; ``--seed`` picks the questions, default 0; the default preset was chosen on
other questions: ``benchmarks/studies/youra_dump.py`` / ``youra_study.py`` with seed 1 and
HotpotQA rows 50-59). Every method selects the document's sentences (``longctx.text.split_sentences``) under
10% and 20% of the document's SmolLM2 tokens, greedy by score; the figures are the harness's
(``longctx.eval.metrics.score``: SQuAD answer in the selection, NarrativeQA answer-token recall
>= 0.6, HotpotQA every supporting sentence selected, with the mean share of them in brackets).

- ``youra-paper``: ``YouraIndex(preset="paper")``: eq. 1 as written, last layer, gmean;
- ``youra``: the default preset (instruction baseline, ratio of attention shares, all layers,
  mean): see ``longctx/youra/__init__.py``, "Presets";
- ``bm25``, ``minilm``, ``random``: ``longctx.eval.methods``; ``lead``: the first sentences.

YOURA runs SmolLM2-135M-Instruct on CPU with 2048-token windows (``--max-window``), as the
harness's ``youra`` method.

Part 2, position artifacts on long texts (``--books``): for three Gutenberg books, ``--book-chars``
characters of story text (from 20% into the book, past the front matter) and five generic
questions; each question's picks at 10% of the tokens; per scoring window, the share of the picked
tokens divided by the window's share of the text, averaged over the questions (position artifacts
are the same for every question, content effects are not). Printed: the largest and smallest
ratio over windows (1.0 everywhere = no position effect; within [0.5, 2] is the issue's target)
and the share of picks that start in the last 10% of their window (0.10 expected).

Usage::

    PYTHONPATH=. python benchmarks/bench_youra_recall.py  # 20 questions a task
    PYTHONPATH=. python benchmarks/bench_youra_recall.py --squad 0 --narrativeqa 0 \\
        --hotpotqa 0 --books
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
BOOKS = ("pg1342.txt", "2701-0.txt", "pg1661.txt")  # Pride and Prejudice, Moby Dick, Holmes
BOOK_QUESTIONS = (
    "Who is the main character?",
    "Where does this take place?",
    "What does the narrator think about money?",
    "How does the weather change?",
    "Who is angry, and why?",
)
FRACTIONS = (0.1, 0.2)


def youra_indexes(max_window: int):
    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer

    model, tok = load_causal_lm(device="cpu")
    return {
        "youra-paper": ReactionScorer(model, tok, preset="paper", max_window=max_window),
        "youra": ReactionScorer(model, tok, max_window=max_window),
    }


def recall_table(counts: dict, seed: int, max_window: int) -> None:
    from longctx.eval import tasks
    from longctx.eval.harness import default_token_counter
    from longctx.eval.methods import Context, Doc, get_methods
    from longctx.eval.metrics import score
    from longctx.selection import select_top
    from longctx.youra import YouraIndex

    ctx = Context(token_counter=default_token_counter(), seed=seed)
    base = {m.name: m for m in get_methods(["bm25", "minilm", "random"])}
    scorers = youra_indexes(max_window)
    names = ["youra-paper", "youra", "bm25", "minilm", "lead", "random"]
    res: dict = {}
    secs = dict.fromkeys(names, 0.0)
    t_all = time.perf_counter()
    for task in ("squad", "narrativeqa", "hotpotqa"):
        n, n_docs = counts[task]
        if not n:
            continue
        groups = list(getattr(tasks, task)(DATA, n, seed))
        if n_docs:  # the shortest documents (CPU time goes with tokens)
            groups = sorted(groups, key=lambda g: len(g[0].text))[:n_docs]
        for group in groups:
            doc = Doc(group[0].text, ctx)
            total = int(doc.counts.sum())
            states = {}
            for name, m in base.items():
                t = time.perf_counter()
                states[name] = m.build(doc)
                secs[name] += time.perf_counter() - t
            indexes = {k: YouraIndex.from_texts(doc.text, s) for k, s in scorers.items()}
            for ex in group:
                for frac in FRACTIONS:
                    budget = max(1, round(frac * total))
                    picks = {}
                    for name, m in base.items():
                        t = time.perf_counter()
                        picks[name] = m.select(states[name], ex.query, budget)
                        secs[name] += time.perf_counter() - t
                    lead = select_top(
                        -np.arange(len(doc.sentences), dtype=float),
                        token_budget=budget,
                        token_counts=doc.counts,
                    )
                    picks["lead"] = doc.spans(lead)
                    for name, index in indexes.items():
                        t = time.perf_counter()
                        try:
                            r = index.search(ex.query, token_budget=budget)
                            picks[name] = [(h.start, h.end) for h in r.hits]
                        except ValueError:  # the budget is below every sentence: none fits
                            picks[name] = []
                        secs[name] += time.perf_counter() - t
                    for name, spans in picks.items():
                        res.setdefault((task, frac, name), []).append(score(ex, ex.text, spans))
            print(
                f"{task} {group[0].doc_id}: {time.perf_counter() - t_all:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        _print_table(res, names, secs, seed, max_window)


def _print_table(res, names, secs, seed, max_window) -> None:
    print(
        f"\nanswer recall, SmolLM2 tokens, seed {seed}, YOURA "
        f"max_window={max_window} (SmolLM2-135M-Instruct, CPU)\n"
    )
    print("| task | budget | n | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for task in ("squad", "narrativeqa", "hotpotqa"):
        for frac in FRACTIONS:
            cells = []
            for name in names:
                rows = res.get((task, frac, name), [])
                r = np.mean([x["recall"] for x in rows]) if rows else float("nan")
                cell = f"{r:.2f}"
                if rows and "share" in rows[0]:
                    cell += f" ({np.mean([x['share'] for x in rows]):.2f})"
                cells.append(cell)
            k = len(res.get((task, frac, "bm25"), []))
            if not k:
                continue
            print(f"| {task} | {frac:.0%} | {k} | " + " | ".join(cells) + " |")
    print(
        "\nseconds in selection (all questions, both budgets): "
        + ", ".join(f"{k} {v:.0f}" for k, v in secs.items()),
        flush=True,
    )


def window_shares(index, query: str, frac: float):
    """Per window of the index's single text: (share of picked tokens) / (share of tokens), and
    the share of picks starting in the last 10% of their window."""
    lay = index._layouts[0]
    counts = lay.token_counts
    budget = max(1, round(frac * int(counts.sum())))
    r = index.search(query, token_budget=budget)
    picked = [h.index for h in r.hits]
    starts = np.asarray([lay.token_spans[i][0] for i in picked])
    w = np.asarray(picked)
    total = len(lay.ids)
    ratios, tail = [], 0
    for t0, t1 in lay.windows:
        inside = (starts >= t0) & (starts < t1)
        ratios.append((counts[w[inside]].sum() / counts[w].sum()) / ((t1 - t0) / total))
        tail += int(np.sum(starts[inside] - t0 >= 0.9 * (t1 - t0)))
    return np.asarray(ratios), tail / max(1, len(picked))


def books_table(chars: int, max_window: int) -> None:
    from longctx.youra import YouraIndex

    scorers = youra_indexes(max_window)
    print(
        f"\npick share per window / text share per window, 10% budget, {chars} characters from "
        f"20% into each book, max_window={max_window}, mean over {len(BOOK_QUESTIONS)} questions\n"
    )
    print("| book | windows | method | max | min | picks in last 10% of window |")
    print("|---|---|---|---|---|---|")
    for name in BOOKS:
        text = (DATA / "gutenberg" / name).read_text(encoding="utf-8-sig")
        start = len(text) // 5
        start = text.index("\n\n", start) + 2
        text = text[start : start + chars]
        for method, scorer in scorers.items():
            index = YouraIndex.from_texts(text, scorer)
            shares, tails = [], []
            for q in BOOK_QUESTIONS:
                s, tl = window_shares(index, q, 0.1)
                shares.append(s)
                tails.append(tl)
            mean = np.mean(shares, axis=0)
            print(
                f"| {name} | {len(mean)} | {method} | {mean.max():.2f} | {mean.min():.2f} | "
                f"{np.mean(tails):.2f} |",
                flush=True,
            )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--squad", type=int, default=20, help="SQuAD questions (0: none)")
    p.add_argument("--squad-docs", type=int, default=0, help="only the N shortest articles")
    p.add_argument("--narrativeqa", type=int, default=20, help="NarrativeQA questions")
    p.add_argument("--hotpotqa", type=int, default=20, help="HotpotQA questions")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-window", type=int, default=2048)
    p.add_argument("--books", action="store_true", help="part 2: pick share per window")
    p.add_argument("--book-chars", type=int, default=24000)
    args = p.parse_args(argv)
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}", file=sys.stderr)
        return 1
    counts = {
        "squad": (args.squad, args.squad_docs),
        "narrativeqa": (args.narrativeqa, 0),
        "hotpotqa": (args.hotpotqa, 0),
    }
    if any(n for n, _ in counts.values()):
        recall_table(counts, args.seed, args.max_window)
    if args.books:
        books_table(args.book_chars, args.max_window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
