"""The multi-hop walk (issue 30) on ``hotpotqa-corpus``: baselines, the walk, an ablation, and
held-out figures.

Loads the corpus task of ``longctx bench`` (the 100 shared HotpotQA examples' paragraphs pooled,
991 passages, each ``title\\ntext`` one unit; passage recall@k, :mod:`longctx.eval.tasks`),
computes per question the first-hop rankings (BM25 as the harness runs it, MixPR ``chunk=False``,
and with ``--dense`` MiniLM and the MixPR hybrid), then the walk of
:mod:`longctx.mixpr.multihop` in the variants of :data:`VARIANTS` (the ablation). Settings were
chosen on the first half of the questions (``--tune``, default 50); the table gives that half,
the held-out half and all 100.

``--grid`` prints the best settings of a small grid on the tuning half only (what chose the
defaults). ``--speed N`` also times a query of the walk on N passages (Gutenberg paragraphs of
about 100 words: the "10k passages <= 50 ms" target) and the builds.

Run (from the repository root; ~1 min without ``--dense`` on 2 busy cores, the first ``--dense``
run embeds 991 passages, ~2 min, cached in ``--cache``)::

    PYTHONPATH=$PWD python benchmarks/multihop_walk_study.py --data ../shared/data \\
        --cache /tmp/multihop-cache [--dense] [--grid] [--speed 10000]
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from longctx.eval.methods import Context, bm25_index
from longctx.eval.tasks import load_task, passage_recall
from longctx.mixpr import MixPRIndex
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.multihop import MultiHopRanker, MultiHopWalk
from longctx.mixpr.phrases import PhraseExtractor, PhraseGraph

KS = (2, 5, 10)

#: the walk's variants: name -> (walk settings over the default, first hop, seeds used)
#: first hop: "mixpr" (MixPR's own local score), "bm25" or "tfidf" (the TF-IDF cosine)
VARIANTS: dict[str, tuple[dict, str]] = {}


def recall_table(rank_fn, questions, ks=KS) -> np.ndarray:
    """``(n_questions, len(ks))`` passage recall of ``rank_fn(question_index) -> scores``."""
    out = np.zeros((len(questions), len(ks)))
    for i, q in enumerate(questions):
        order = np.argsort(-np.asarray(rank_fn(i), dtype=np.float64), kind="stable")[: max(ks)]
        out[i] = [passage_recall(order[:k].tolist(), q.gold) for k in ks]
    return out


def fmt(rec: np.ndarray, tune: int) -> str:
    parts = []
    for sl in (slice(0, tune), slice(tune, None), slice(None)):
        r = rec[sl]
        parts.append(" ".join(f"{100 * v:5.1f}" for v in r.mean(axis=0)) if len(r) else "")
    return " | ".join(parts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--tune", type=int, default=50, help="the first N questions tune")
    ap.add_argument("--dense", action="store_true", help="MiniLM and the hybrid too")
    ap.add_argument("--grid", action="store_true", help="grid search on the tuning half")
    ap.add_argument("--speed", type=int, default=0, help="time the walk on N passages")
    args = ap.parse_args(argv)

    corpus = load_task("hotpotqa-corpus", args.data, args.questions)
    passages = list(corpus.passages)
    qs = corpus.questions
    n = len(passages)
    print(f"{n} passages, {len(qs)} questions ({args.tune} tune / {len(qs) - args.tune} held out)")

    # -- builds (timed) -------------------------------------------------------------------------
    t0 = time.perf_counter()
    mix = MixPRIndex.from_texts(passages, chunk=False)
    t_mix = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = PhraseGraph.from_texts(passages)
    t_graph = time.perf_counter() - t0
    E = MixPRConfig().vectorizer().fit_transform(passages)
    bm25, analyzer = bm25_index(passages)
    print(
        f"build: MixPR chunk=False {t_mix:.2f} s; phrase graph {t_graph:.2f} s "
        f"({len(graph.vocabulary)} phrases, {graph.mentions.nnz} mentions) (noisy)"
    )

    # -- first-hop scores per question ----------------------------------------------------------
    S = {"bm25": [], "mixpr": [], "tfidf": []}
    for q in qs:
        S["bm25"].append(np.asarray(bm25.get_scores(analyzer(q.query)), dtype=np.float64))
        S["mixpr"].append(mix.score(q.query, "auto")[0])
        S["tfidf"].append(mix._lexical_parts(q.query)["cos"])
    dense = None
    if args.dense:
        ctx = Context(token_counter=len, cache_dir=args.cache, scope="hotpotqa-corpus")
        U = ctx.embed(passages)
        ctx.save_cache()
        Qv = np.stack([np.asarray(ctx.encoder.embed_query(q.query), dtype=np.float32) for q in qs])
        dense = [U @ v for v in Qv]
        S["minilm"] = dense
        hyb = MixPRIndex.from_texts(passages, chunk=False, unit_vectors=U)
        S["hybrid"] = [hyb.score(q.query, "local", query_vector=v)[0] for q, v in zip(qs, Qv)]
    rows = []
    for name in ("bm25", "tfidf", "mixpr", "minilm", "hybrid"):
        if name in S:
            rows.append((name, recall_table(lambda i, s=S[name]: s[i], qs)))

    ex = PhraseExtractor()

    def run_walk(walk: MultiHopWalk, first: str, use_dense: bool, extractor=ex, g=graph):
        ranker = MultiHopRanker(g, walk, extractor=extractor, E=E)
        return recall_table(
            lambda i: ranker.scores(qs[i].query, S[first][i], dense[i] if use_dense else None),
            qs,
        )

    if args.grid:
        grid(run_walk, args, dense is not None)
        return

    base = MultiHopWalk()
    variants = [
        ("walk (default; first hop MixPR)", base, "mixpr", False),
        ("walk, first hop BM25", base, "bm25", False),
        ("walk, first hop TF-IDF cosine", base, "tfidf", False),
        ("- no phrase seeds (query's names)", replace(base, phrase_seed=0.0), "mixpr", False),
        ("- no passage seeds (first hop)", replace(base, lexical_seed=0.0), "mixpr", False),
        ("- no head edges (head_weight 0)", replace(base, head_weight=0.0), "mixpr", False),
        ("- no link boost (link_boost 0)", replace(base, link_boost=0.0), "mixpr", False),
        ("- heads and links off", replace(base, head_weight=0.0, link_boost=0.0), "mixpr", False),
        ("- back to own heads allowed", replace(base, skip_own_heads=False), "mixpr", False),
        ("- score = mass with restart", replace(base, score="mass"), "mixpr", False),
        ("+ lexical_weight 0.5", replace(base, lexical_weight=0.5), "mixpr", False),
        ("- index terms instead of phrases", replace(base, term_share=1.0), "mixpr", False),
        ("+ index terms beside phrases (0.3)", replace(base, term_share=0.3), "mixpr", False),
        ("  alpha 0.3", replace(base, alpha=0.3), "mixpr", False),
        ("  alpha 0.7", replace(base, alpha=0.7), "mixpr", False),
        ("  seed_top 10", replace(base, seed_top=10), "mixpr", False),
    ]
    for name, walk, first, use_dense in variants:
        rows.append((name, run_walk(walk, first, use_dense)))
    no_sub = PhraseExtractor(subspans=False)
    rows.append(
        (
            "- no sub-spans",
            run_walk(base, "mixpr", False, no_sub, PhraseGraph.from_texts(passages, no_sub)),
        )
    )
    # passages without their title line: heads are then each text's first capitalised span
    bare = [p.partition("\n")[2] for p in passages]
    mix_bare = MixPRIndex.from_texts(bare, chunk=False)
    S["mixpr-bare"] = [mix_bare.score(q.query, "auto")[0] for q in qs]
    rows.append(("no titles: MixPR", recall_table(lambda i: S["mixpr-bare"][i], qs)))
    rows.append(
        (
            "no titles: walk",
            run_walk(base, "mixpr-bare", False, ex, PhraseGraph.from_texts(bare, ex)),
        )
    )
    if dense is not None:
        hb = replace(base, dense_seed=1.0)
        rows.append(("hybrid walk (first hop MixPR, dense seeds)", run_walk(hb, "mixpr", True)))
        rows.append(("hybrid walk, first hop MixPR hybrid", run_walk(hb, "hybrid", True)))
        rows.append(("hybrid walk, first hop MiniLM", run_walk(hb, "minilm", True)))
        rows.append(
            ("- hybrid walk, dense_seed 0.5", run_walk(replace(hb, dense_seed=0.5), "mixpr", True))
        )
        rows.append(
            ("- hybrid walk, dense_seed 2", run_walk(replace(hb, dense_seed=2.0), "mixpr", True))
        )
        rows.append(
            (
                "+ hybrid walk, dense_weight 0.25",
                run_walk(replace(hb, dense_weight=0.25), "mixpr", True),
            )
        )
    head = "R@2   R@5   R@10"
    print(f"\n{'ranking':48s} | tune {head} | held-out {head} | all {head}")
    for name, rec in rows:
        print(f"{name:48s} | {fmt(rec, args.tune)}")

    if args.speed:
        speed(args, base)


def grid(run_walk, args, has_dense: bool) -> None:
    """Best settings on the tuning half (R@2 + R@5), printed."""
    space = {
        "head_weight": (2.0, 4.0, 8.0, 16.0, 32.0),
        "link_boost": (0.0, 2.0, 4.0, 8.0, 16.0),
        "score": ("mass", "propagated"),
        "lexical_weight": (0.0, 0.25),
    }
    results = []
    keys = list(space)
    for vals in itertools.product(*space.values()):
        walk = MultiHopWalk(**dict(zip(keys, vals)))
        rec = run_walk(walk, "mixpr", False)[: args.tune].mean(axis=0)
        results.append((rec[0] + rec[1], vals, rec))
    results.sort(key=lambda r: -r[0])
    for _, vals, rec in results[:15]:
        print(dict(zip(keys, vals)), " ".join(f"{100 * v:.1f}" for v in rec))


def speed(args, walk: MultiHopWalk) -> None:
    """Build and query seconds on ``args.speed`` Gutenberg paragraphs (~100 words each)."""
    from longctx.eval.tasks import gutenberg_haystack
    from longctx.text import chunk_words

    text = gutenberg_haystack(args.data, args.speed * 700)
    spans = chunk_words(text, 100)
    units = [text[a:b] for a, b in spans][: args.speed]
    t0 = time.perf_counter()
    mix = MixPRIndex.from_texts(units, chunk=False)
    t_mix = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = PhraseGraph.from_texts(units)
    t_graph = time.perf_counter() - t0
    E = MixPRConfig().vectorizer().fit_transform(units)
    ranker = MultiHopRanker(g, walk, E=E)
    queries = [
        "Where did Captain Ahab lose his leg?",
        "Who did Elizabeth Bennet marry?",
        "What did Pierre Bezukhov do in Moscow?",
        "Why did Dorothea marry Casaubon?",
    ]
    times, walks = [], []
    for q in queries * 3:
        t0 = time.perf_counter()
        first = mix.score(q, "local")[0]
        t1 = time.perf_counter()
        ranker.scores(q, first)
        t2 = time.perf_counter()
        times.append(t2 - t0)
        walks.append(t2 - t1)
    print(
        f"\n{len(units)} passages: MixPR chunk=False build {t_mix:.2f} s, phrase graph "
        f"{t_graph:.2f} s ({len(g.vocabulary)} phrases); query (MixPR first hop + walk) median "
        f"{1000 * np.median(times):.1f} ms, walk alone {1000 * np.median(walks):.1f} ms (noisy)"
    )


if __name__ == "__main__":
    main()
