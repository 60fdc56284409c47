"""The first query after an open against the next ones (issue 46): a saved MixPR index opened
in a fresh process per trial, read or memory-mapped, the questions in order, each timed by
``time.process_time`` (CPU ms) with the process's minor page faults (``ru_minflt``); the first
question again at the end (the same work with the process warm). Checkouts can be compared in
alternating processes (``--checkouts A B``: each trial runs every checkout in turn).

Usage::

    python benchmarks/studies/mixpr_first_query.py [--data ../shared/data] [--words 10]
        [--work /tmp/first-query] [--trials 6] [--mmap] [--rotate] [--checkouts DIR ...]

The corpus and the questions are ``bench_vs_bm25.py``'s (the growth table's books cut at the
word budget; its first 10 questions, k = 10); the index is built and saved once under
``--work`` (format 3, which opens read or mapped) by the first checkout and reused. Prints,
per checkout, the medians over the trials of: the first query's CPU ms and faults, the
median of the next ones, their ratio (``bench_vs_bm25.py``'s measure, in CPU time), the
first question asked again and the first query over it (the cost of being first alone).
Each trial asks question 0 first, or with ``--rotate`` trial ``i`` asks question ``i mod 10``
first and the others in order after it (:func:`rotated`, as ``bench_vs_bm25.py``'s opens; its
``--trials`` then defaults to 10, one per question, and a count that is no multiple of 10 is
said on stderr: some questions would be first more often than others).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Questions asked per trial (``bench_vs_bm25.py``'s first ten).
N_QUESTIONS = 10


def rotated(n: int, first: int) -> list[int]:
    """``first, first + 1, ..., n - 1, 0, ..., first - 1``, then ``first`` again: the order of
    ``bench_vs_bm25.rotated``, kept here because a trial runs in the checkout it measures, and
    a checkout from before session 20 has no such function."""
    return [(first + j) % n for j in range(n)] + [first]


def trial_count(trials: int | None, rotate: bool) -> int:
    """``--trials``, by default one per question with ``--rotate`` (else 6); with ``--rotate``
    a count that is no multiple of :data:`N_QUESTIONS` is said on stderr."""
    if trials is None:
        return N_QUESTIONS if rotate else 6
    extra = trials % N_QUESTIONS
    if rotate and extra:
        which = "question 0" if extra == 1 else f"questions 0-{extra - 1}"
        print(
            f"# note: {trials} trials with --rotate ask {which} first once more than the "
            f"others (use a multiple of {N_QUESTIONS})",
            file=sys.stderr,
        )
    return trials


def _trial(work: Path, mmap: bool, first: int = 0) -> dict:
    """In this (fresh) process: open the saved index, ask the questions from question
    ``first`` on (:func:`rotated`), then the first again."""
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    import bench_vs_bm25 as bench

    bench._imports("mixpr")
    from longctx.mixpr import MixPRIndex

    qs = bench._questions(N_QUESTIONS)

    def faults() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    c0 = time.process_time()
    index = MixPRIndex.load(work / "saved", mmap=mmap)
    open_ms = 1000 * (time.process_time() - c0)
    rows = []
    for q in [qs[i] for i in rotated(len(qs), first)]:
        f0, c0 = faults(), time.process_time()
        index.search(q, k=10)
        rows.append((1000 * (time.process_time() - c0), faults() - f0))
    nxt = statistics.median(r[0] for r in rows[1:-1])
    return {
        "open_ms": open_ms,
        "first_ms": rows[0][0],
        "first_faults": rows[0][1],
        "next_ms": nxt,
        "ratio": rows[0][0] / nxt,
        "again_ms": rows[-1][0],
        "again_ratio": rows[0][0] / rows[-1][0],
    }


def _build(data: Path, words: float, work: Path) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    sys.path.insert(0, str(REPO))
    import bench_vs_bm25 as bench

    from longctx.mixpr import MixPRIndex

    work.mkdir(parents=True, exist_ok=True)
    info = bench.prepare(data, words, work)
    docs = json.loads((work / "docs.json").read_text("utf-8"))
    MixPRIndex.from_texts([t for _, t in docs], ids=[i for i, _ in docs]).save(work / "saved")
    print(f"# built and saved {words:g}M words: {info}", file=sys.stderr)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--words", type=float, default=10)
    ap.add_argument("--work", type=Path, default=Path("/tmp/longctx-first-query"))
    ap.add_argument(
        "--trials", type=int, default=None, help="default 6, or 10 (one per question) with --rotate"
    )
    ap.add_argument("--mmap", action="store_true", help="open memory-mapped")
    ap.add_argument(
        "--rotate",
        action="store_true",
        help="trial i asks question i mod 10 first (bench_vs_bm25.py's opens); else question 0",
    )
    ap.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--checkouts", nargs="+", type=Path, default=[REPO])
    ap.add_argument("--trial", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    work = args.work / f"{args.words:g}M"
    if args.trial:
        print(json.dumps(_trial(work, args.mmap, args.first)))
        return
    trials = trial_count(args.trials, args.rotate)
    if not (work / "saved").is_dir():
        _build(args.data, args.words, work)
    runs: dict = {str(c): [] for c in args.checkouts}
    for t in range(trials):
        for c in args.checkouts:
            cmd = [sys.executable, __file__, "--trial", "--words", f"{args.words:g}"]
            cmd += ["--first", str(t % N_QUESTIONS if args.rotate else 0)]
            cmd += ["--work", str(args.work)] + (["--mmap"] if args.mmap else [])
            out = subprocess.run(
                cmd, cwd=c, capture_output=True, text=True, env={"PYTHONPATH": str(c)}
            )
            if out.returncode:
                sys.exit(f"{c}: {out.stderr.strip()[-500:]}")
            runs[str(c)].append(json.loads(out.stdout.strip().splitlines()[-1]))
    form = "mapped" if args.mmap else "read"
    print(f"| checkout ({args.words:g}M words, {form}) | open CPU ms | first CPU ms (faults) | "
          "next CPU ms | first / next (each trial) | first again | first / again |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for c, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        each = ", ".join(f"{r['ratio']:.2f}" for r in rs)
        print(
            f"| {c} | {med['open_ms']:.1f} | {med['first_ms']:.2f} ({med['first_faults']:.0f}) | "
            f"{med['next_ms']:.2f} | **{med['ratio']:.2f}** ({each}) | {med['again_ms']:.2f} | "
            f"{med['again_ratio']:.2f} |"
        )


if __name__ == "__main__":
    main()
