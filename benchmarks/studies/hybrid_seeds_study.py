"""How strongly the app's retriever should seed MixPR's walk (issue 45): ``mixpr-seeded``
(:class:`longctx.eval.methods.MixPRSeededMethod`) with ``n_seeds`` MiniLM sentences and
``dense_restart`` (the seeds' share of the restart: ``r / (1 + r)``), against ``mixpr`` and
``minilm``, on ``longctx bench``'s document tasks and the passage pool.

Superseded (issue 45): this studied the former rule, the seeds as ``dense_restart``'s share of
MixPR's restart. Seeds now restart a walk of their own, added to MixPR's score, and
``dense_restart`` no longer applies to them, so every variant here ranks the same;
``benchmarks/studies/seeded_rule_study.py`` compares the rules.

Run: ``PYTHONPATH=. python benchmarks/studies/hybrid_seeds_study.py --data ../shared/data
[--questions 20] [--cache /tmp/hy_bench/cache]``; prints one markdown table (recall per cell).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

VARIANTS = {  # name -> (n_seeds, dense_restart)
    "seeds5 r3": (5, 3.0),
    "seeds5 r1": (5, 1.0),
    "seeds5 r0.5": (5, 0.5),
    "seeds10 r1": (10, 1.0),
}


def main(argv=None):
    import longctx.eval.harness as harness
    from longctx.eval import markdown, run
    from longctx.eval.methods import MixPRSeededMethod, get_methods

    p = argparse.ArgumentParser()
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--cache", type=Path, default=Path("/tmp/hy_bench/cache"))
    p.add_argument("--tasks", nargs="+", default=["squad", "narrativeqa", "hotpotqa"])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS))
    args = p.parse_args(argv)

    def methods(names):
        out = []
        for n in names:
            if n in VARIANTS:
                k, r = VARIANTS[n]
                m = MixPRSeededMethod(dense_restart=r)
                m.n_seeds, m.name = k, n
                out.append(m)
            else:
                out += get_methods([n])
        return out

    harness.get_methods = methods
    result = run(
        args.data, tasks=args.tasks, methods=["minilm", "mixpr", *args.variants],
        n_questions=args.questions, cache_dir=args.cache, isolate=False,
    )  # fmt: skip
    print(markdown(result))


if __name__ == "__main__":
    main()
