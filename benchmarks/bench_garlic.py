"""GARLIC Dynamic Graph Search on NarrativeQA summaries: cost of the search and answer recall.

Wang, Xiang, Gui, He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.2.

For each of ``--n-docs`` NarrativeQA summaries (../shared/data/narrativeqa_summaries, test split;
documents with at least ``--per-doc`` questions whose answer occurs verbatim in the summary), the
HWDAG is built once with ``longctx.garlic.build_hwdag`` (SmolLM2-135M-Instruct, MiniLM
embeddings; cached under ``--cache``, so reruns skip it), then each question is searched:

- cost: decision steps, tokens the model ran during the search (``tokens_run``) against the final
  prompt's tokens, and against a search that re-encodes the whole prompt at every step
  (``reencode=True``, on the first ``--n-reencode`` questions); seconds per query;
- recall: the fraction of questions whose answer string (any gold answer, case-insensitive) lies
  in the retrieved text. GARLIC's retrieved text is every visited node (IPs and chunks; level-1
  text reached through visited IPs is what the IPs summarize, so ``garlic_chunks`` counts only the
  visited chunks themselves). MixPR (``longctx.MixPRIndex``, local mode) and BM25 (rank_bm25 over
  the summary's sentences) select under the same budget: the SmolLM2 tokens of GARLIC's visited
  node texts for that question.

Usage::

    PYTHONPATH=. python benchmarks/bench_garlic.py --n-docs 5 --per-doc 10
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_WORD = re.compile(r"\w+")


def items(n_docs: int, per_doc: int, rng: random.Random):
    rows = [json.loads(line) for line in open(DATA / "narrativeqa_summaries" / "test.jsonl")]
    by_doc: dict[str, list] = {}
    for r in rows:
        answers = [a for a in r["answer"] if a.strip() and a.lower() in r["passage"].lower()]
        if answers:
            by_doc.setdefault(r["passage"], []).append((r["question"], answers))
    docs = [d for d in sorted(by_doc) if len(by_doc[d]) >= per_doc]
    docs = rng.sample(docs, len(docs))[:n_docs]  # a prefix-stable choice: reruns reuse graphs
    return [(d, rng.sample(by_doc[d], per_doc)) for d in docs]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-docs", type=int, default=5)
    p.add_argument("--per-doc", type=int, default=10)
    p.add_argument("--n-reencode", type=int, default=5)
    p.add_argument("--n-answer", type=int, default=3, help="questions also answered (2nd turn)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--build-max-new-tokens", type=int, default=160, help="per summary batch")
    p.add_argument("--device", default=None)
    p.add_argument("--cache", default=str(Path.home() / ".cache" / "longctx" / "bench_garlic"))
    args = p.parse_args(argv)

    from rank_bm25 import BM25Okapi

    from longctx.embeddings import get_encoder
    from longctx.garlic import build_hwdag
    from longctx.garlic.search import GarlicSearcher
    from longctx.mixpr import MixPRIndex
    from longctx.models import load_causal_lm
    from longctx.selection import select_top
    from longctx.text import split_sentences
    from longctx.tokens import hf_token_counter

    rng = random.Random(args.seed)
    work = items(args.n_docs, args.per_doc, rng)
    model, tok = load_causal_lm(device=args.device)
    enc = get_encoder(None)
    count = hf_token_counter(tok)
    rows, builds = [], []
    n_done = 0
    t_all = time.perf_counter()
    for doc, qas in work:
        out = Path(args.cache) / hashlib.sha256(doc.encode()).hexdigest()[:16]
        t = time.perf_counter()
        graph = build_hwdag(
            doc, model, tok, out_dir=out, encoder=enc, max_new_tokens=args.build_max_new_tokens
        )
        print(f"graph: {[len(x) for x in graph.levels]} nodes per level, "
              f"{time.perf_counter() - t:.0f} s", file=sys.stderr)  # fmt: skip
        builds.append(
            (time.perf_counter() - t, [len(x) for x in graph.levels], count(doc), graph.info)
        )
        searcher = GarlicSearcher(graph, model, tok, encoder=enc)
        sents = split_sentences(doc)
        stexts = [doc[a:b] for a, b in sents]
        scounts = np.asarray([max(1, count(s)) for s in stexts])
        bm = BM25Okapi([_WORD.findall(s.lower()) or [""] for s in stexts])
        mix = MixPRIndex.from_texts([doc], token_counter=count)
        for q, answers in qas:
            t = time.perf_counter()
            r = searcher.search(q, answer=n_done < args.n_answer)
            sec = time.perf_counter() - t
            row = {
                "steps": r.info["steps"],
                "visited": len(r.info["visited"]),
                "tokens_run": r.info["tokens_run"],
                "final": r.info["final_prompt_tokens"],
                "sec": sec,
                "stop": r.info["stop_reason"],
                "answer": r.info["answer"],
                "gold": answers,
            }
            if n_done < args.n_reencode:
                t = time.perf_counter()
                r2 = searcher.search(q, answer=False, reencode=True)
                row["re_tokens"] = r2.info["tokens_run"]
                row["re_sec"] = time.perf_counter() - t
                row["search_sec"] = r.timings["search"]
                assert r2.info["visited"] == r.info["visited"]
            visited = [v["text"] for v in r.info["visited_nodes"]]
            budget = max(1, sum(count(v) for v in visited))
            row["budget"] = budget
            sel = {
                "garlic": "\n".join(visited),
                "garlic_chunks": "\n".join(h.text for h in r.hits),
            }
            bi = select_top(
                np.asarray(bm.get_scores(_WORD.findall(q.lower()))),
                token_budget=budget,
                token_counts=scounts,
            )
            sel["bm25"] = "\n".join(stexts[i] for i in sorted(bi))
            sel["mixpr"] = "\n".join(
                h.text for h in mix.search(q, token_budget=budget, mode="local").hits
            )
            for m, text in sel.items():
                row[m] = any(a.lower() in text.lower() for a in answers)
            rows.append(row)
            n_done += 1
            print(json.dumps({k: v for k, v in row.items() if k != "gold"}), file=sys.stderr)
            if n_done % 5 == 0:
                print(f"{n_done} questions, {time.perf_counter() - t_all:.0f} s", file=sys.stderr)

    print(f"GARLIC on NarrativeQA summaries: {len(work)} documents, {len(rows)} questions "
          f"(seed {args.seed}), SmolLM2-135M-Instruct on {model.device}, MiniLM embeddings")  # fmt: skip
    print("\nbuild (cached after the first run):")
    print(f"{'doc tokens':>10} {'nodes/level':>14} {'generated':>9} {'seconds':>8}")
    for sec, levels, n_tok, info in builds:
        print(f"{n_tok:>10} {str(levels):>14} {info.get('tokens_generated', 0):>9} "
              f"{info.get('seconds', sec):>8.1f}")  # fmt: skip
    a = {k: np.asarray([r[k] for r in rows], dtype=float) for k in
         ("steps", "visited", "tokens_run", "final", "sec", "budget")}  # fmt: skip
    print("\nsearch cost (mean over questions):")
    print(f"  decision steps            {a['steps'].mean():.2f}")
    print(f"  nodes visited             {a['visited'].mean():.2f}")
    print(f"  tokens run (cached)       {a['tokens_run'].mean():.1f}")
    print(f"  final prompt tokens       {a['final'].mean():.1f}")
    print(f"  tokens run / final prompt {np.mean(a['tokens_run'] / a['final']):.3f} "
          f"(max {np.max(a['tokens_run'] / a['final']):.3f})")  # fmt: skip
    re_rows = [r for r in rows if "re_tokens" in r]
    if re_rows:
        rt = np.asarray([r["re_tokens"] for r in re_rows], float)
        ct = np.asarray([r["tokens_run"] for r in re_rows], float)
        rs = np.asarray([r["re_sec"] for r in re_rows])
        cs = np.asarray([r["search_sec"] for r in re_rows])
        print(f"  re-encode baseline ({len(re_rows)} q): tokens run {rt.mean():.1f} "
              f"({np.mean(rt / ct):.2f}x cached), search seconds {rs.mean():.2f} vs "
              f"{cs.mean():.2f} cached")  # fmt: skip
    print(f"  seconds per query (search, answer on {min(args.n_answer, len(rows))}) "
          f"{a['sec'].mean():.2f}")  # fmt: skip
    stops: dict[str, int] = {}
    for r in rows:
        stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    print(f"  stop reasons {stops}")
    print(f"\nanswer recall at GARLIC's token count (mean budget {a['budget'].mean():.0f} "
          "SmolLM2 tokens):")  # fmt: skip
    for m in ("garlic", "garlic_chunks", "mixpr", "bm25"):
        print(f"  {m:<14} {np.mean([r[m] for r in rows]):.3f}")
    for r in rows[: args.n_answer]:
        print(f"\nanswer: {r['answer']!r}  gold: {r['gold']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
