"""Two builds of one corpus at once (``tests/corpus/_build_race.py``: build A held inside its
build until build B finished or waits for it), in two processes (spawn) and in two threads,
MixPR (one index, 2 shards) and diversity; then the corpus is loaded and compared with a fresh
build of each build's documents. Prints one line per run.

    PYTHONPATH=. python benchmarks/studies/race_corpus_builds.py [--runs 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tests.corpus._build_race import (
    doc_sets,
    fresh_state,
    race_processes,
    race_threads,
    same,
    write_folder,
)

CASES = [("mixpr", None), ("mixpr", 2), ("diversity", None)]


def one(kind: str, method: str, shards, seed: int) -> str:
    from longctx.corpus import build_indexes
    from tests.corpus._build_race import build_options, corpus_state

    base, set1, set2 = doc_sets(seed)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        folder, out = tmp / "docs", tmp / "out"
        write_folder(folder, base)
        build_indexes(str(folder), method, str(out), **build_options(method, shards))
        if kind == "processes":
            code_a, code_b, waited = race_processes(folder, out, method, shards, seed)
            errs = f"exit codes A {code_a}, B {code_b}"
        else:
            errors, waited = race_threads(folder, out, method, shards, seed)
            errs = f"errors {[(n, type(e).__name__, str(e)[:80]) for n, e in errors]}"
        state = corpus_state(out, method)
        f1 = fresh_state(tmp / "f1", set1, method, shards)
        f2 = fresh_state(tmp / "f2", set2, method, shards)
        if state[0] == "error":
            verdict = f"LOAD FAILS: {state[1][:160]}"
        else:
            ids = [Path(d).name for d, _ in state[1]]
            verdict = (
                f"loads {ids}; equals fresh build of set 1 (A): {same(state, f1, bool(shards))}, "
                f"of set 2 (B, the later): {same(state, f2, bool(shards))}"
            )
        return f"{kind:9s} {method}{'/' + str(shards) + ' shards' if shards else ''}: B waited {waited}; {errs}; {verdict}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for run in range(args.runs):
        for kind in ("processes", "threads"):
            for method, shards in CASES:
                print(f"run {run}: {one(kind, method, shards, run)}", flush=True)


if __name__ == "__main__":
    main()
