"""Attention-head subsets for YOURA's default preset (issue 13): does a "retrieval head" subset,
chosen on some questions, rank the answer sentences of other questions better than the mean
over all heads?

Retrieval heads: Wu, Wang, Xiao, Peng, Fu, "Retrieval Head Mechanistically Explains Long-Context
Factuality", 2024, arXiv:2404.15574 (https://arxiv.org/abs/2404.15574). Heads chosen by their
attention from the query to the gold text on a handful of real questions: Zhang, Yin, Yen, Chen,
Ye, "Query-Focused Retrieval Heads Improve Long-Context Reasoning and Re-ranking" (QRHead), 2025,
arXiv:2506.09944 (https://arxiv.org/abs/2506.09944), sec. 3.

Two steps:

``dump``: one model pass per window and question, recording per (layer, head) the column sums
of the instruction suffix rows (``S``) and of the query rows (``Q``, the default template
``" " + query + "\\n\\nAnswer:"``) over the window's context tokens, ``(layers * heads,
n_tokens) float32`` (row ``layer * heads + head``), to one ``.npz`` per document::

    PYTHONPATH=. python benchmarks/studies/youra_heads_study.py dump --task squad --n 20 --seed 1
    PYTHONPATH=. python benchmarks/studies/youra_heads_study.py dump --task narrativeqa --n 20 --seed 1
    PYTHONPATH=. python benchmarks/studies/youra_heads_study.py dump --task hotpotqa --n 10 --offset 50
    PYTHONPATH=. python benchmarks/studies/youra_heads_study.py dump --task ../shared/data/gutenberg/2600-0.txt \\
        --chars 100000 --question "Why is Prince Andrew going to the war?||leading here does not suit"

``study`` (no model pass): the default preset's scoring (ratio of attention shares over the
window median, mean over a sentence's tokens shrunk with ``prior_tokens=8``) from the column sums
averaged over a head subset. For each head alone and each question, the rank of the question's
best gold sentence as a fraction of the document's sentences (0 = first); heads are ranked by
that fraction averaged over the selection questions (``rank``), or by the QRHead-style
attention mass, the query's share minus the suffix's share on the gold sentences' tokens
(``mass``). The best ``K`` heads are chosen with one task left out and scored on it, and chosen
on all tasks and scored on the book questions (rank of the marked answer sentence)::

    PYTHONPATH=. python benchmarks/studies/youra_heads_study.py study /tmp/youra_heads

The study questions are those of ``youra_dump.py`` (seed 1, HotpotQA rows 50-59), not the
reported table's (seed 0).
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from youra_dump import add_document_arguments, documents  # noqa: E402

PRIOR_TOKENS = 8
RATIO_EPS = 0.1


# -- dump ---------------------------------------------------------------------------------------
def dump_doc(scorer, text: str, questions, path: Path) -> float:
    """Record per-head ``S`` and ``Q`` of every window of ``text``; returns seconds."""
    import torch
    from transformers import DynamicCache

    from longctx.attention import record_attention_stats

    lay = scorer._make_layout(text, None)
    qids = [scorer._query_ids(q) for q, _, _ in questions]
    S, Q = [], [[] for _ in questions]
    t = time.perf_counter()
    with torch.inference_mode(), record_attention_stats(scorer.model, "all") as rec:

        def grab(c):
            out = [rec.column_sums(la)[0][:, :c].cpu().numpy() for la in rec.layers]
            rec.reset()
            return np.concatenate(out).astype(np.float32)

        for t0, t1 in lay.windows:
            ids = list(lay.ids[t0:t1])
            with rec.paused():
                cache = scorer._forward(ids)
            cache = scorer._forward(scorer._suffix_ids, cache)
            S.append(grab(len(ids)))
            kv = [(x.keys.clone(), x.values.clone()) for x in cache.layers]
            for k, q in enumerate(qids):
                cc = DynamicCache(
                    ddp_cache_data=[(a.clone(), b.clone()) for a, b in kv],
                    config=scorer.model.config,
                )
                scorer._forward(q, cc)
                Q[k].append(grab(len(ids)))
    np.savez_compressed(
        path,
        S=np.concatenate(S, axis=1),
        Q=np.stack([np.concatenate(x, axis=1) for x in Q]),
        windows=np.asarray(lay.windows),
        token_spans=np.asarray(lay.token_spans),
        sentences=np.asarray(lay.sentences),
        meta=json.dumps({"text": text, "questions": questions}),
    )
    return time.perf_counter() - t


def dump(args) -> int:
    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer

    model, tok = load_causal_lm(device="cpu")
    scorer = ReactionScorer(model, tok, max_window=args.max_window)
    scorer._setup()
    for path, text, qs in documents(args):
        if not path.exists():
            secs = dump_doc(scorer, text, qs, path)
            print(f"{path.name}: {len(qs)} questions, {len(text)} chars, {secs:.1f} s", flush=True)
    return 0


# -- study --------------------------------------------------------------------------------------
def load(path):
    z = np.load(path, allow_pickle=False)
    d = {k: z[k] for k in z.files if k != "meta"}
    d["meta"] = json.loads(str(z["meta"]))
    d["task"] = Path(path).name.split("-")[0]
    return d


def shares(d, k, rows):
    """Per window, the query's and the suffix's attention shares over the head subset ``rows``."""
    S = d["S"][rows].astype(np.float64).mean(0)
    Q = d["Q"][k][rows].astype(np.float64).mean(0)
    for w0, w1 in d["windows"]:
        yield w0, w1, Q[w0:w1] / Q[w0:w1].sum(), S[w0:w1] / S[w0:w1].sum()


def ratio_vector(d, k, rows):
    """The default preset's per-token values, ``(n_tokens,) float64``."""
    out = np.empty(d["S"].shape[1])
    for w0, w1, q, s in shares(d, k, rows):
        e = RATIO_EPS / (w1 - w0)
        r = (q + e) / (s + e)
        out[w0:w1] = r / np.median(r)
    return out


def sentence_scores(d, vec):
    out = np.empty(len(d["token_spans"]))
    for i, (t0, t1) in enumerate(d["token_spans"]):
        if t1 <= t0:
            t0 = max(t0 - 1, 0)
            t1 = t0 + 1
        out[i] = (vec[t0:t1].sum() + PRIOR_TOKENS) / (t1 - t0 + PRIOR_TOKENS)
    return out


def gold(d, k):
    """Indices of question ``k``'s gold sentences: those overlapping its gold character spans,
    else those holding one of its answers or its marker (whitespace-insensitive)."""
    text = d["meta"]["text"]
    _, answers, spans = d["meta"]["questions"][k]
    sents = d["sentences"]
    if spans:
        return sorted(
            {i for a, b in spans for i, (s0, s1) in enumerate(sents) if s0 < b and a < s1}
        )

    def norm(x):
        return re.sub(r"\s+", " ", x)

    return [
        i for i, (s0, s1) in enumerate(sents) if any(norm(a) in norm(text[s0:s1]) for a in answers)
    ]


def best_rank(scores, g) -> int:
    """1-based rank of the best-ranked of the sentences ``g``."""
    order = np.argsort(-scores, kind="stable")
    rank = np.empty(len(scores), dtype=int)
    rank[order] = np.arange(1, len(scores) + 1)
    return int(rank[g].min())


def head_table(questions, n_heads):
    """``(n_questions, n_heads)`` rank fractions (lower is better) and attention masses
    (higher is better) of every head alone."""
    frac = np.zeros((len(questions), n_heads))
    mass = np.zeros((len(questions), n_heads))
    for i, (d, k, g) in enumerate(questions):
        n = len(d["sentences"])
        gold_tok = np.zeros(d["S"].shape[1], dtype=bool)
        for j in g:
            t0, t1 = d["token_spans"][j]
            gold_tok[t0:t1] = True
        for h in range(n_heads):
            frac[i, h] = (best_rank(sentence_scores(d, ratio_vector(d, k, [h])), g) - 1) / max(
                n - 1, 1
            )
            mass[i, h] = sum(
                float((q - s)[gold_tok[w0:w1]].sum()) for w0, w1, q, s in shares(d, k, [h])
            )
    return frac, mass


def choose(frac, mass, tasks, use, criterion, K):
    """The ``K`` best heads on the questions ``use`` (each task weighted equally)."""
    table = frac if criterion == "rank" else -mass
    per_task = [table[use & (tasks == t)].mean(0) for t in sorted(set(tasks[use]))]
    return np.argsort(np.mean(per_task, axis=0), kind="stable")[:K]


def study(args) -> int:
    docs = [load(p) for p in sorted(glob.glob(str(Path(args.dir) / "*.npz")))]
    tasks_docs = [d for d in docs if d["task"] != "book"]
    books = [d for d in docs if d["task"] == "book"]
    questions = [(d, k, gold(d, k)) for d in tasks_docs for k in range(len(d["meta"]["questions"]))]
    questions = [x for x in questions if x[2]]
    tasks = np.array([d["task"] for d, _, _ in questions])
    n_heads = docs[0]["S"].shape[0]
    print(
        f"{len(questions)} questions with gold sentences:",
        {t: int((tasks == t).sum()) for t in sorted(set(tasks))},
        f"{n_heads} heads",
    )
    frac, mass = head_table(questions, n_heads)

    def mean_frac(heads, sel):
        return np.mean(
            [
                (best_rank(sentence_scores(d, ratio_vector(d, k, heads)), g) - 1)
                / max(len(d["sentences"]) - 1, 1)
                for (d, k, g), s in zip(questions, sel)
                if s
            ]
        )

    def book_ranks(heads):
        out = []
        for d in books:
            for k in range(len(d["meta"]["questions"])):
                g = gold(d, k)
                out.append(
                    best_rank(sentence_scores(d, ratio_vector(d, k, heads)), g) if g else None
                )
        return out

    all_heads = np.arange(n_heads)
    names = sorted(set(tasks))
    print("held-out task: mean rank fraction of the best gold sentence (0 = first); books: ranks")
    print("heads".ljust(14), " ".join(t[:10].rjust(10) for t in names), " books")
    row = [mean_frac(all_heads, tasks == t) for t in names]
    print("all".ljust(14), " ".join(f"{x:10.4f}" for x in row), "", book_ranks(all_heads))
    for criterion in ("rank", "mass"):
        for K in args.k:
            row = [
                mean_frac(choose(frac, mass, tasks, tasks != t, criterion, K), tasks == t)
                for t in names
            ]
            heads = choose(frac, mass, tasks, np.ones(len(tasks), bool), criterion, K)
            print(
                f"{criterion} K={K}".ljust(14),
                " ".join(f"{x:10.4f}" for x in row),
                "",
                book_ranks(heads),
            )
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    add_document_arguments(sub.add_parser("dump"), "/tmp/youra_heads")
    s = sub.add_parser("study")
    s.add_argument("dir", help="a folder of dumps (one window size)")
    s.add_argument("--k", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    args = p.parse_args(argv)
    return dump(args) if args.cmd == "dump" else study(args)


if __name__ == "__main__":
    sys.exit(main())
