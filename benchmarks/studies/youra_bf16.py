"""YOURA in bfloat16 against float32 on CPU: do the reaction-score ranks agree, and is it faster?

The same model (SmolLM2-135M-Instruct, default preset) is loaded in float32 and in bfloat16 and
scores the sentences of real texts for real questions:

- Gutenberg: War and Peace, CHAPTER I (three questions) and Pride and Prejudice, Chapter I (two);
- NarrativeQA: the summaries of the first ``--narrativeqa`` stories (their first question);
- SQuAD v2.0 dev: the first ten paragraphs of its first article joined (three answerable questions).

For each (text, question): Spearman correlation of the sentence scores, overlap of the top-10
sentences (top-k with fewer sentences), and seconds of the first query on the text in each dtype
(a cold window cache: context pass + query pass; texts alternate float32 / bfloat16 so machine
load hits both). ``ranks agree`` means Spearman >= 0.95 and top-10 overlap >= 8/10 on every pair.

Usage::

    PYTHONPATH=. python benchmarks/studies/youra_bf16.py --max-window 2048
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
WP_QUERIES = [
    "Who is Anna Pavlovna Scherer?",
    "What did Prince Andrew think of his wife?",
    "Who is Prince Vasili's son?",
]
PP_QUERIES = ["Who has taken Netherfield Park?", "How many daughters do the Bennets have?"]


def _chapter(path: Path, start: str, end: str) -> str:
    text = path.read_text(encoding="utf-8")
    a = text.index(start)
    return text[a : text.index(end, a + len(start))].strip()


def cases(n_narrativeqa: int = 3) -> list[tuple[str, str, list[str]]]:
    """``(name, text, questions)`` of the benchmark."""
    g = DATA / "gutenberg"
    out = [
        ("War and Peace ch. I", _chapter(g / "2600-0.txt", "\u201cWell, Prince, so Genoa", "CHAPTER II"), WP_QUERIES),
        ("Pride and Prejudice ch. I", _chapter(g / "pg1342.txt", "Chapter I.]", "CHAPTER II."),
         PP_QUERIES),
    ]  # fmt: skip
    seen = []
    with open(DATA / "narrativeqa_summaries" / "test.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["passage"] not in [p for p, _ in seen]:
                seen.append((row["passage"], row["question"]))
            if len(seen) >= n_narrativeqa:
                break
    out += [(f"NarrativeQA summary {i}", p, [q]) for i, (p, q) in enumerate(seen)]
    squad = json.loads((DATA / "squad" / "dev-v2.0-first5.json").read_text(encoding="utf-8"))
    art = squad["data"][0]
    paras = art["paragraphs"][:10]
    qs = [q["question"] for p in paras for q in p["qas"] if not q.get("is_impossible")][:3]
    out.append((f"SQuAD {art['title']} (10 paragraphs)", "\n\n".join(p["context"] for p in paras),
                qs))  # fmt: skip
    return out


def main(argv=None) -> int:
    import os

    import numpy as np
    import torch
    from scipy.stats import spearmanr

    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--max-window", type=int, default=2048)
    p.add_argument("--narrativeqa", type=int, default=3)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    scorers = {}
    for dt in ("float32", "bfloat16"):
        model, tok = load_causal_lm(device="cpu", dtype=dt)
        scorers[dt] = ReactionScorer(model, tok, max_window=args.max_window)
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    print(
        f"{'text':<34} {'tokens':>6} {'question':<42} {'spearman':>8} {'top-10':>6} "
        f"{'f32 s':>6} {'bf16 s':>6}"
    )
    rhos, tops, t32, t16 = [], [], 0.0, 0.0
    for name, text, qs in cases(args.narrativeqa):
        n_tok = len(scorers["float32"].encode_context(text)[0])
        for j, q in enumerate(qs):
            res, secs = {}, {}
            for dt in ("float32", "bfloat16"):
                t = time.perf_counter()
                res[dt] = np.array([s.score for s in scorers[dt].score_sentences(text, q)])
                secs[dt] = time.perf_counter() - t
            a, b = res["float32"], res["bfloat16"]
            k = min(10, len(a))
            rho = float(spearmanr(a, b).statistic) if len(a) > 2 else 1.0
            top = len(
                set(np.argsort(-a, kind="stable")[:k]) & set(np.argsort(-b, kind="stable")[:k])
            )
            rhos.append(rho)
            tops.append(top / k)
            cold = "" if j else "*"
            if j == 0:
                t32 += secs["float32"]
                t16 += secs["bfloat16"]
            print(
                f"{name[:34]:<34} {n_tok:>6} {q[:42]:<42} {rho:>8.4f} {top:>3}/{k:<2} "
                f"{secs['float32']:>5.1f}{cold:1} {secs['bfloat16']:>5.1f}{cold:1}"
            )
    agree = min(rhos) >= 0.95 and min(tops) >= 0.8
    print(
        f"\nSpearman min {min(rhos):.4f} mean {np.mean(rhos):.4f}; top-10 overlap min "
        f"{min(tops):.2f} mean {np.mean(tops):.2f}; ranks agree: {agree}\n"
        f"first queries (* cold cache: context + query pass): float32 {t32:.1f} s, "
        f"bfloat16 {t16:.1f} s, speed-up {t32 / t16:.2f}x\n"
        f"load average at end: {open('/proc/loadavg').read().split()[:3]}; "
        f"torch threads {torch.get_num_threads()}, cores {os.cpu_count()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
