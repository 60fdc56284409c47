"""What ``explain=True`` adds to a sharded MixPR search (:mod:`longctx.corpus.shards.explain`),
against the same search without it, at ``k=10`` and ``k=100``; and the same for one index.

Usage::

    python benchmarks/bench_explain_shards.py [--words 1] [--shards 4] [--repeats 5]
        [--data ../shared/data] [--old-explain FILE]

Corpus: the generator of ``benchmarks/bench_mixpr_growth.py`` (Gutenberg books taken whole),
``--words`` million words, as a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex` of
``--shards`` shards in this process and as one :class:`~longctx.mixpr.MixPRIndex`. Each of the
growth bench's local questions is searched with and without ``explain=True``, the two
interleaved, ``--repeats`` times; the table gives medians of the whole search and of
``timings["explain"]`` (the explanations alone), and that per hit. ``--old-explain``: a copy of
``longctx/mixpr/explain.py`` from before the block split (``git show REV:longctx/mixpr/explain.py``)
whose ``explain_hits`` is timed against the current one on the same kept scoring sessions
(one index). Figures on a shared machine are noisy: read them as ratios within one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_mixpr_growth import QUESTIONS, corpus  # noqa: E402


def _ms(values) -> float:
    return round(1000 * statistics.median(values), 3)


def time_searches(index, k: int, repeats: int) -> dict:
    """Medians over the questions and repeats: plain search, explained search, the explain
    stage; the two searches interleaved question by question."""
    plain, explained, stage = [], [], []
    for q in QUESTIONS:  # warm-up
        index.search(q, k=k, mode="local", explain=True)
    for _ in range(repeats):
        for q in QUESTIONS:
            t0 = time.perf_counter()
            a = index.search(q, k=k, mode="local")
            t1 = time.perf_counter()
            b = index.search(q, k=k, mode="local", explain=True)
            t2 = time.perf_counter()
            assert [h.score for h in a.hits] == [h.score for h in b.hits]
            plain.append(t1 - t0)
            explained.append(t2 - t1)
            stage.append(b.timings["explain"])
    return {
        "k": k,
        "plain_ms": _ms(plain),
        "explain_ms": _ms(explained),
        "ratio": round(statistics.median(explained) / statistics.median(plain), 2),
        "explain_stage_ms": _ms(stage),
        "explain_stage_us_per_hit": round(1e6 * statistics.median(stage) / k, 1),
    }


def old_vs_new(index, old_path: Path, k: int, repeats: int) -> dict:
    """``explain_hits`` of the old module against the current one on the same sessions."""
    import numpy as np

    from longctx.mixpr import explain as new
    from longctx.mixpr.hits import dense_scores

    spec = importlib.util.spec_from_file_location("old_explain", old_path)
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    st = index._state
    cases = []
    for q in QUESTIONS:
        keep: dict = {}
        scores, used, _, walk = index._score(st, q, "local", None, None, [], keep=keep)
        dense = dense_scores(scores)
        hits = np.sort(np.argsort(-dense, kind="stable")[:k])
        cases.append((keep, used, walk, hits, dense))
    t_old, t_new = [], []
    for _ in range(repeats):
        for keep, used, walk, hits, dense in cases:
            t0 = time.perf_counter()
            a = old.explain_hits(st, keep, used, walk, hits, dense)
            t1 = time.perf_counter()
            b = new.explain_hits(st, keep, used, walk, hits, dense)
            t2 = time.perf_counter()
            t_old.append(t1 - t0)
            t_new.append(t2 - t1)
            for x, y in zip(a, b):
                for part, v in x["parts"].items():
                    assert abs(v - y["parts"][part]) < 1e-12, part
                assert [t["term"] for t in x["terms"]] == [t["term"] for t in y["terms"]]
    return {"k": k, "old_ms": _ms(t_old), "new_ms": _ms(t_new)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--words", type=float, default=1.0, help="million words")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    p.add_argument("--old-explain", type=Path, default=None)
    args = p.parse_args(argv)
    from longctx.corpus.shards.index import ShardedMixPRIndex
    from longctx.mixpr import MixPRIndex

    docs = corpus(args.data, int(args.words * 1e6))
    texts, ids = [t for _, t in docs], [d for d, _ in docs]
    out: dict = {"words": args.words, "documents": len(docs), "shards": args.shards}
    sharded = ShardedMixPRIndex.from_texts(texts, ids=ids, shards=args.shards)
    out["units"] = sharded.n_units
    out["sharded"] = [time_searches(sharded, k, args.repeats) for k in (10, 100)]
    sharded.close()
    del sharded
    one = MixPRIndex.from_texts(texts, ids=ids)
    out["one_index"] = [time_searches(one, k, args.repeats) for k in (10, 100)]
    if args.old_explain is not None:
        out["one_index_old_vs_new"] = [
            old_vs_new(one, args.old_explain, k, args.repeats) for k in (10, 100)
        ]
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
