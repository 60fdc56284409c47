"""A paired statement of the held-out fusion check (issue 45): per question, ``mixpr-fused``'s
recall minus that of the better single retriever of the cell (``mixpr`` or ``minilm``, the one
with the higher mean recall there; ties to ``mixpr``), with a paired bootstrap over the
questions (10,000 resamples, fixed seed) of its mean: each cell's mean difference and 95%
percentile interval. Nothing is tuned here: it restates the check of
``docs/notes/mixpr-recall.md`` ("Each retriever's first hit kept") question by question.

The methods run as ``longctx bench`` runs them (:func:`longctx.eval.harness._run_method`, in this
process, one after the other, on the same questions: the per-question figures the bench averages).

Run (the held-out check: seed 0 at 100 questions on the four tasks, seed 4 on SQuAD and
NarrativeQA; ``--cache``: the MiniLM sentence vectors kept between runs)::

    PYTHONPATH=. nice -n 5 python benchmarks/studies/fusion_paired.py --data ../shared/data \\
        --questions 100 --seed 0 --cache /tmp/fz/cache
    PYTHONPATH=. nice -n 5 python benchmarks/studies/fusion_paired.py --data ../shared/data \\
        --questions 100 --seed 4 --tasks squad narrativeqa --cache /tmp/fz/cache

Prints one markdown table.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

METHODS = ("mixpr", "minilm", "mixpr-fused")
#: Bootstrap resamples and the generator's seed (fixed: the table is reproducible).
RESAMPLES = 10_000
BOOT_SEED = 0


def paired_bootstrap(diff, resamples: int = RESAMPLES, seed: int = BOOT_SEED):
    """``(mean, low, high)``: the mean of ``diff`` (``(n,)`` per-question differences) and the
    2.5th / 97.5th percentiles of its mean over ``resamples`` resamples of the questions with
    replacement (``numpy.random.default_rng(seed)``)."""
    diff = np.asarray(diff, dtype=np.float64)
    if not len(diff):
        raise ValueError("diff is empty: no question to resample")
    rng = np.random.default_rng(seed)
    at = rng.integers(0, len(diff), size=(resamples, len(diff)))
    means = diff[at].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(diff.mean()), float(low), float(high)


def per_question(data, tasks, n_questions: int, seed: int, cache) -> dict:
    """``{method: {(task, budget): [recall per question]}}`` of :data:`METHODS`, as
    ``longctx bench`` computes them (same questions, same order for every method)."""
    from longctx.eval.harness import _run_method, _task_runs

    spec = {
        "data": str(Path(data)),
        "runs": _task_runs(tasks, n_questions, (16000,), None),
        "seed": seed,
        "token_counter": None,
        "encoder_factory": None,
        "cache_dir": None if cache is None else str(cache),
        "options": {},
        "answer": None,
    }
    out = {}
    for m in METHODS:
        cells = _run_method({**spec, "method": m})["cells"]
        out[m] = {key: list(c["recall"]) for key, c in cells.items() if c.get("recall")}
    return out


def rows(recalls: dict, seed: int) -> list[dict]:
    """One row per cell: the three means, which single retriever is better, and the paired
    bootstrap of fused minus it."""
    out = []
    for key, fused in recalls["mixpr-fused"].items():
        mixpr, minilm = recalls["mixpr"][key], recalls["minilm"][key]
        if not len(fused) == len(mixpr) == len(minilm):
            raise RuntimeError(f"{key}: the methods answered different questions")
        better = "mixpr" if np.mean(mixpr) >= np.mean(minilm) else "minilm"
        diff = np.asarray(fused) - np.asarray(recalls[better][key])
        mean, low, high = paired_bootstrap(diff)
        out.append(
            {
                "task": key[0],
                "budget": key[1],
                "seed": seed,
                "n": len(diff),
                "mixpr": float(np.mean(mixpr)),
                "minilm": float(np.mean(minilm)),
                "fused": float(np.mean(fused)),
                "better": better,
                "mean": mean,
                "low": low,
                "high": high,
                "worse": int((diff < 0).sum()),
                "better_q": int((diff > 0).sum()),
            }
        )
    return out


def markdown(table: list[dict]) -> str:
    head = (
        "| task | budget | seed | n | mixpr | minilm | mixpr-fused | better single | "
        "fused - better (mean) | 95% interval | questions worse / better |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in table:
        b = f"k={r['budget']}" if isinstance(r["budget"], int) else f"{r['budget']:.0%}"
        lines.append(
            f"| {r['task']} | {b} | {r['seed']} | {r['n']} | {r['mixpr']:.2f} | "
            f"{r['minilm']:.2f} | {r['fused']:.2f} | {r['better']} | {r['mean']:+.3f} | "
            f"[{r['low']:+.3f}, {r['high']:+.3f}] | {r['worse']} / {r['better_q']} |"
        )
    return "\n".join(lines)


def main(argv=None):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fusion_study import study_arguments

    p = study_arguments(" ".join(__doc__.split("\n\n")[0].split()))
    args = p.parse_args(argv)
    recalls = per_question(args.data, args.tasks, args.questions, args.seed, args.cache)
    print(markdown(rows(recalls, args.seed)), flush=True)


if __name__ == "__main__":
    main()
