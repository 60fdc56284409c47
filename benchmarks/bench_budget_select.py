"""Token-budget selection before / after (session 20): MixPR budget queries at ``--words`` words.

Corpus: the growth table's Gutenberg books (``bench_mixpr_growth.corpus``, as
``bench_vs_bm25.py``), indexed twice (``preset="default"``: the walk the router picks;
``preset="pagerank"``: the PageRank walk, dense scores), saved under ``--cache`` and reused.
Each of the 20 growth-table questions is asked with budgets 1,000 / 3,000 / 10,000 tokens,
``unique_texts`` off and on, by the selection of ``--before`` (a copy of an older
``longctx/selection.py``, put in place of ``longctx.mixpr.hits``'s ``select_top`` and
``select_distinct``) and by the current one, interleaved (the two alternate first), ``--repeats``
times; the figure is the CPU time of the whole ``search`` (``time.process_time``), median over
repeats and questions. The hits of the two must be identical (asserted).

Usage: ``python benchmarks/bench_budget_select.py --before /tmp/selection_before.py``
(e.g. ``git show <rev>:longctx/selection.py > /tmp/selection_before.py``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import longctx.mixpr.hits as hits  # noqa: E402
from longctx import selection  # noqa: E402
from longctx.mixpr import MixPRIndex  # noqa: E402

BUDGETS = (1000, 3000, 10000)


def load_before(path: Path):
    spec = importlib.util.spec_from_file_location("selection_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.SparseScores = selection.SparseScores  # the scores the index makes
    return mod


def index_for(preset: str, words: int, data: Path, cache: Path) -> MixPRIndex:
    path = cache / f"mixpr-{preset}-{words}"
    if path.exists():
        return MixPRIndex.load(path)
    from bench_mixpr_growth import corpus

    docs = corpus(data, words)
    idx = MixPRIndex.from_texts([t for _, t in docs], ids=[i for i, _ in docs], preset=preset)
    idx.save(path)
    return idx


def use(mod) -> None:
    hits.select_top, hits.select_distinct = mod.select_top, mod.select_distinct


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True)
    p.add_argument("--words", type=int, default=1_000_000)
    p.add_argument("--data", type=Path, default=Path("../shared/data"))
    p.add_argument("--cache", type=Path, default=Path("/tmp/budget_aside"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--presets", default="default,pagerank")
    args = p.parse_args(argv)
    from bench_mixpr_growth import QUESTIONS

    before, after = load_before(args.before), selection
    out = {}
    for preset in args.presets.split(","):
        idx = index_for(preset, args.words, args.data, args.cache)
        n_units = len(idx.token_counts)
        for budget in BUDGETS:
            for unique in (False, True):
                t = {"before": [], "after": []}
                for q in QUESTIONS:
                    per = {"before": [], "after": []}
                    for r in range(args.repeats):
                        pair = [("before", before), ("after", after)]
                        got = {}
                        for name, mod in pair if r % 2 == 0 else pair[::-1]:
                            use(mod)
                            c0 = time.process_time()
                            res = idx.search(q, token_budget=budget, unique_texts=unique)
                            per[name].append(time.process_time() - c0)
                            got[name] = [(h.index, h.score) for h in res.hits]
                        assert got["before"] == got["after"], (preset, budget, unique, q)
                    for name in per:
                        t[name].append(statistics.median(per[name]))
                cell = {k: round(1000 * statistics.median(v), 2) for k, v in t.items()}
                cell["ratio"] = round(cell["before"] / max(cell["after"], 1e-9), 2)
                out[f"{preset} budget={budget} unique_texts={unique}"] = cell
                print(preset, n_units, budget, unique, cell, flush=True)
    use(after)
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
