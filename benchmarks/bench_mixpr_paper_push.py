"""The paper preset's walk by power iteration and by forward push on the thresholded graph, on
War and Peace + Monte Cristo (85,877 units): query time, walk steps, entries read and whether the
top 100 agree, for one or more ``push_threshold`` values.

Usage::

    python benchmarks/bench_mixpr_paper_push.py [--data ../shared/data] [--rounds 3]
        [--thresholds 1e-8]

Every index is built with ``preset="paper"`` (its own solver, the power iteration, and
``solver="push"`` at each threshold);
each round asks the first 8 questions of ``bench_mixpr.WAR_AND_PEACE_QUESTIONS`` (k = 100, local
mode) of every index in turn, after one warm-up query each, so a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    from bench_mixpr import WAR_AND_PEACE_QUESTIONS

    from longctx.mixpr import MixPRIndex

    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--thresholds", default="1e-8", help="push_threshold values, comma separated")
    args = ap.parse_args()
    g = args.data / "gutenberg"
    texts = [(g / f).read_text("utf-8-sig") for f in ("2600-0.txt", "pg1184.txt")]
    qs = WAR_AND_PEACE_QUESTIONS[:8]
    settings = {"power": {"solver": "power"}}
    for t in args.thresholds.split(","):
        settings[f"push {float(t):g}"] = {"solver": "push", "push_threshold": float(t)}
    index = {}
    for name, kw in settings.items():
        t0 = time.perf_counter()
        index[name] = MixPRIndex.from_texts(texts, preset="paper", **kw)
        build = time.perf_counter() - t0
        index[name].search(qs[0], k=100)
        print(f"{name}: build {build:.2f} s, {index[name].n_units:,} units, "
              f"{index[name].graph.nnz:,} graph entries", flush=True)  # fmt: skip
    times = {k: [] for k in index}
    recs = {k: [] for k in index}
    hits = {k: {} for k in index}
    for r in range(args.rounds):
        for name in index:
            for q in qs:
                t0 = time.perf_counter()
                res = index[name].search(q, k=100)
                times[name].append(time.perf_counter() - t0)
                if r == 0:
                    recs[name].append(next(t for t in res.trace if t.get("stage") == "walk"))
                    hits[name][q] = {h.start for h in res.hits}
    print("\n| solver | query ms (mean / median) | steps | entries read (median) | residual (max) "
          "| top 100 as the power iteration's |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name in index:
        t = times[name]
        steps = [x["steps"] for x in recs[name]]
        read = [x["read"] for x in recs[name] if "read" in x]
        same = sum(hits[name][q] == hits["power"][q] for q in qs)
        low = min(len(hits[name][q] & hits["power"][q]) for q in qs)
        print(
            f"| {name} | {1000 * statistics.mean(t):.1f} / {1000 * statistics.median(t):.1f} | "
            f"{min(steps)}-{max(steps)} | {f'{statistics.median(read):,.0f}' if read else '-'} | "
            f"{max(x['residual'] for x in recs[name]):.1e} | {same} of {len(qs)} (min "
            f"overlap {low}) |"
        )


if __name__ == "__main__":
    main()
