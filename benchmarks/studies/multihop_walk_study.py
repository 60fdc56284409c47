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

    PYTHONPATH=$PWD python benchmarks/studies/multihop_walk_study.py --data ../shared/data \\
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
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument(
        "--data", type=Path, default=Path("../shared/data"),
        help="the benchmark data folder (default: ../shared/data)",
    )  # fmt: skip
    ap.add_argument(
        "--cache", type=Path, default=None,
        help="folder caching the --dense embeddings (default: none, embedded every run)",
    )  # fmt: skip
    ap.add_argument(
        "--questions", type=int, default=100, help="questions of the task used (default: 100)"
    )
    ap.add_argument(
        "--tune", type=int, default=50,
        help="the first N questions tune the settings, the rest are held out (default: 50)",
    )  # fmt: skip
    ap.add_argument("--dense", action="store_true", help="MiniLM and the hybrid too")
    ap.add_argument("--grid", action="store_true", help="grid search on the tuning half")
    ap.add_argument(
        "--speed", type=int, default=0,
        help="also time the walk on N Gutenberg passages (default: 0, not timed)",
    )  # fmt: skip
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
        S["mixpr"].append(mix.score(q.query, "local")[0])
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
        (
            "- no seeds but the first hop's",
            replace(base, phrase_seed=0.0, head_weight=0.0, link_boost=0.0),
            "mixpr",
            False,
        ),
        ("- no head edges (head_weight 0)", replace(base, head_weight=0.0), "mixpr", False),
        ("- no link boost (link_boost 0)", replace(base, link_boost=0.0), "mixpr", False),
        ("- heads and links off", replace(base, head_weight=0.0, link_boost=0.0), "mixpr", False),
        ("- back to own heads allowed", replace(base, skip_own_heads=False), "mixpr", False),
        ("- score = mass with restart", replace(base, score="mass"), "mixpr", False),
        ("  lexical_weight 0 (walk alone)", replace(base, lexical_weight=0.0), "mixpr", False),
        ("  lexical_weight 1", replace(base, lexical_weight=1.0), "mixpr", False),
        ("- index terms instead of phrases", replace(base, term_share=1.0), "mixpr", False),
        ("+ index terms beside phrases (0.3)", replace(base, term_share=0.3), "mixpr", False),
        ("  max_df 0.01", replace(base, max_df=0.01), "mixpr", False),
        ("  max_df 0.2", replace(base, max_df=0.2), "mixpr", False),
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
    S["mixpr-bare"] = [mix_bare.score(q.query, "local")[0] for q in qs]
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
        print()
        speed(args, base, corpus)


def grid(run_walk, args, has_dense: bool) -> None:
    """Best settings on the tuning half (R@2 + R@5), printed."""
    space = {
        "head_weight": (4.0, 8.0, 16.0, 32.0),
        "link_boost": (2.0, 4.0, 8.0, 16.0),
        "alpha": (0.3, 0.5, 0.7),
        "seed_top": (3, 5, 10),
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


def speed(args, walk: MultiHopWalk, corpus) -> None:
    """Build and query times on about ``args.speed`` passages of two kinds: Gutenberg
    paragraphs (few names) and copies of the HotpotQA passages whose capitalised words are
    suffixed per copy (Wikipedia's density of names, no phrase shared across copies). CPU
    seconds of this process (the machine is shared), query medians over 20 questions."""
    import re

    from longctx.eval.tasks import gutenberg_haystack
    from longctx.text import chunk_words

    text = gutenberg_haystack(args.data, args.speed * 400)
    gut = [text[a:b] for a, b in chunk_words(text, 120, min_words=80)][: args.speed]
    copies = -(-args.speed // len(corpus.passages))
    wiki = [
        re.sub(r"\b([A-Z][a-z]+)", lambda m, k=k: m.group(1) + "q" * (k + 1), p)
        for k in range(copies)
        for p in corpus.passages
    ][: args.speed]
    for name, units in (("Gutenberg paragraphs", gut), ("HotpotQA copies", wiki)):
        t0 = time.process_time()
        mix = MixPRIndex.from_texts(units, chunk=False)
        t_mix = time.process_time() - t0
        t0 = time.process_time()
        ranker = MultiHopRanker(PhraseGraph.from_texts(units), walk)
        t_walk = time.process_time() - t0
        first_s, walk_s = [], []
        for q in corpus.questions[:20]:
            t0 = time.process_time()
            first = mix.score(q.query, "local")[0]
            t1 = time.process_time()
            ranker.scores(q.query, first)
            walk_s.append(time.process_time() - t1)
            first_s.append(t1 - t0)
        g = ranker.graph
        print(
            f"{name}: {len(units)} passages, {sum(len(u.split()) for u in units)} words, "
            f"{g.n_phrases} phrases, {g.mentions.nnz} mentions; build CPU s: MixPR "
            f"{t_mix:.2f}, phrase graph + walk {t_walk:.2f}; query CPU ms (median): MixPR "
            f"{1000 * np.median(first_s):.1f}, walk {1000 * np.median(walk_s):.1f}"
        )


if __name__ == "__main__":
    main()
