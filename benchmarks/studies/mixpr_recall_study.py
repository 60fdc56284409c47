"""Why MixPR's recall stops growing with the budget (issue 22), and the candidates that fix it.

Loads the tasks of ``longctx bench`` (same data, seed, questions, SmolLM2-token budgets and
metrics: ``longctx.eval``), builds one :class:`longctx.MixPRIndex` per document and, per question,
the pieces of its ranking: the walk's scores, the direct TF-IDF cosine of every unit to the query,
the coverage, BM25 on the same units and (``--dense``) MiniLM cosine on the same units. Prints

- diagnosis figures: where the gold units rank in MixPR's order and in BM25's, how much of each
  budget goes to units that hold no query term, how much of the walk's mass sits on them;
- recall per task and budget for the candidate rankings (numpy blends of the pieces) next to
  the shipped ranking of each preset (``MixPRIndex.search``).

Run (from the repository root, ~2-6 min on 2 busy cores)::

    PYTHONPATH=$PWD python benchmarks/studies/mixpr_recall_study.py --data ../shared/data \
        --cache /tmp/mixpr-recall-cache [--dense] [--babi-questions 20,10]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from longctx.eval import metrics
from longctx.eval.harness import BUDGETS, default_token_counter
from longctx.eval.methods import Context
from longctx.eval.tasks import load_task
from longctx.mixpr import MixPRIndex
from longctx.selection import select_top


def gold_units(index, ex, text):
    """Units holding a gold span (half of its characters) or a reference answer."""
    st, en = index.starts, index.ends
    out = set()
    if ex.gold_spans:
        for g0, g1 in ex.gold_spans:
            ov = np.minimum(en, g1) - np.maximum(st, g0)
            out.update(np.flatnonzero(ov * 2 >= (g1 - g0)).tolist())
    else:
        for i in range(index.n_units):
            if metrics.answer_in_selection(ex.answers, text[st[i] : en[i]]):
                out.add(i)
    return out


def pieces(index: MixPRIndex, query: str, bm25=None, analyzer=None, dense=None, qvec=None):
    """Per-unit parts of the ranking for one query (the shipped default's local path)."""
    res = {}
    s, mode, _ = index.score(query, "auto")
    res["walk"] = s
    res["mode"] = mode
    parts = index._lexical_parts(query)
    res.update(parts)
    if bm25 is not None:
        res["bm25"] = np.asarray(bm25.get_scores(analyzer(query)), dtype=np.float64)
    if dense is not None:
        res["dense"] = dense @ qvec
    return res


def norm(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max() if x.size else 0.0
    return x / m if m > 0 else x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--tasks", nargs="+", default=["squad", "narrativeqa", "hotpotqa", "babilong"])
    ap.add_argument("--questions", type=int, default=60)
    ap.add_argument("--babi-tokens", default="16000,128000")
    ap.add_argument("--babi-questions", default="60,10")
    ap.add_argument("--dense", action="store_true", help="MiniLM on MixPR's units too")
    ap.add_argument("--presets", nargs="*", default=["default", "paper"])
    args = ap.parse_args()
    from rank_bm25 import BM25Okapi

    counter = default_token_counter()
    runs = []
    for t in args.tasks:
        if t == "babilong":
            toks = [int(x) for x in args.babi_tokens.split(",")]
            qs = [int(x) for x in args.babi_questions.split(",")]
            for n_tok, q in zip(toks, qs):
                runs.append((t, f"babilong-{n_tok // 1000}k", q, {"n_tokens": n_tok}))
        else:
            runs.append((t, t, args.questions, {}))
    recall = defaultdict(list)  # (task, variant, budget) -> [recall]
    diag = defaultdict(list)
    timing = defaultdict(list)
    for task, scope, nq, kw in runs:
        if task == "babilong":
            kw = {**kw, "token_counter": counter}
        ctx = Context(token_counter=counter, cache_dir=args.cache, scope=f"mixpr-units-{scope}")
        for examples in load_task(task, args.data, nq, 0, **kw):
            text = examples[0].text
            name = examples[0].task
            n_tok = ctx.count_document(text)
            sizes = [(b, max(1, int(b * n_tok))) for b in BUDGETS[task]]
            t0 = time.perf_counter()
            index = MixPRIndex.from_texts(text, token_counter=counter)
            timing[(name, "build")].append(time.perf_counter() - t0)
            counts = index.token_counts
            units = [text[a:b] for a, b in zip(index.starts.tolist(), index.ends.tolist())]
            analyzer = index._vectorizer.build_analyzer()
            bm25 = BM25Okapi([analyzer(u) or ["<empty>"] for u in units])
            dense = ctx.embed(units) if args.dense else None
            others = {
                p: MixPRIndex.from_texts(text, token_counter=counter, preset=p)
                for p in args.presets
                if p != "default"
            }
            for ex in examples:
                qvec = None
                if dense is not None:
                    qvec = np.asarray(ctx.encoder.embed_query(ex.query), np.float32)
                P = pieces(index, ex.query, bm25, analyzer, dense, qvec)
                walk, cos, matched = P["walk"], P["cos"], P["cos"] > 0
                gold = gold_units(index, ex, text)
                variants = {"shipped:default": walk, "bm25@units": P["bm25"], "cos@units": cos}
                for beta in (0.25, 0.5, 1.0, 2.0):
                    variants[f"walk+{beta}cos"] = norm(walk) + beta * norm(cos)
                    variants[f"walk+{beta}bm25"] = norm(walk) + beta * norm(P["bm25"])
                if dense is not None:
                    variants["minilm@units"] = P["dense"]
                    for g in (0.5, 1.0, 2.0):
                        d = np.maximum(P["dense"], 0)
                        variants[f"walk+.5cos+{g}dense"] = (
                            norm(walk) + 0.5 * norm(cos) + g * norm(d)
                        )
                variants = {v: (sc, index) for v, sc in variants.items()}
                for p, other in others.items():
                    variants[f"shipped:{p}"] = (other.score(ex.query, "auto")[0], other)
                for vname, (sc, ix) in variants.items():
                    for b, budget in sizes:
                        try:
                            idx = select_top(sc, token_budget=budget, token_counts=ix.token_counts)
                        except ValueError:
                            idx = []
                        spans = [(int(ix.starts[i]), int(ix.ends[i])) for i in idx]
                        recall[(name, vname, b)].append(metrics.score(ex, text, spans)["recall"])
                # diagnosis
                if gold:
                    for key, sc in (("mixpr", walk), ("bm25", P["bm25"])):
                        order = np.argsort(-sc, kind="stable")
                        rank = np.empty(len(sc), np.int64)
                        rank[order] = np.arange(len(sc))
                        diag[(name, f"gold rank {key}")].append(min(rank[list(gold)]))
                        diag[(name, f"gold matched {key}")].append(
                            float(np.mean([matched[g] for g in gold]))
                        )
                diag[(name, "walk mass on matched")].append(float(walk[matched].sum() / walk.sum()))
                diag[(name, "matched units share")].append(float(matched.mean()))
                for b, budget in sizes:
                    for key, sc in (("mixpr", walk), ("bm25", P["bm25"])):
                        idx = select_top(sc, token_budget=budget, token_counts=counts)
                        zero = counts[idx][~matched[idx]].sum() / max(1, counts[idx].sum())
                        diag[(name, f"budget share on no-term units {key} @{b}")].append(zero)
            ctx.save_cache()
    names = list(dict.fromkeys(k[0] for k in recall))
    vnames = list(dict.fromkeys(k[1] for k in recall))
    print("\n## recall (same units, SmolLM2-token budgets)\n")
    for name in names:
        bs = sorted({k[2] for k in recall if k[0] == name})
        print(f"{name}: budgets {bs}")
        for v in vnames:
            vals = [recall.get((name, v, b)) for b in bs]
            if vals[0] is None:
                continue
            print(f"  {v:28s} " + " ".join(f"{np.mean(x):.3f}" for x in vals))
    print("\n## diagnosis\n")
    for (name, key), vals in diag.items():
        v = np.asarray(vals, dtype=float)
        if key.startswith("gold rank"):
            print(f"{name:22s} {key:44s} median {np.median(v):.0f} mean {v.mean():.1f}")
        else:
            print(f"{name:22s} {key:44s} mean {v.mean():.3f}")
    for (name, what), vals in timing.items():
        print(f"{name:22s} {what} s/doc {np.mean(vals):.3f}")


if __name__ == "__main__":
    main()
