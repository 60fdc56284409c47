"""The text ids' costs at a save, a load and the first ``unique_texts`` query, two checkouts
interleaved (session 21, the text ids review: a save never makes the ids; saved ones are
checked against the texts, at the open with ``mmap=False``, at their first use with
``mmap=True``).

Each repeat runs one process per checkout (``--before`` and ``--after``, each a repository
root put first on ``PYTHONPATH``), alternating which goes first. A process loads the same
format-3 index of ``--words`` words (the growth table's Gutenberg books,
``bench_mixpr_growth.corpus``, built once by the ``--after`` side and saved without ids under
``--cache``: a state that holds no ids, as a build's) and measures, in CPU ms
(``time.process_time``; wall in the JSON too):

- ``save``: ``save`` of that state (``--before`` made the ids there);
- ``make``: ``_State.text_ids()`` (the pass), then ``save held``: a save of the state holding
  them (both sides write them);
- ``open read`` / ``open mapped``: ``MixPRIndex.load`` of the folder with the ids
  (``mmap=False`` / ``True``), then ``q1`` its first ``unique_texts`` query (``token_budget``
  1,000, the first growth-table question) and ``q2`` the next (another question);
- ``q1 no ids (mapped)``: the first such query over the folder saved without them.

Usage: ``python benchmarks/bench_text_ids_save.py --before /tmp/main --after . --repeats 5``.
The hits of the two sides must be identical (asserted).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, 1000 * (time.process_time() - c0), 1000 * (time.perf_counter() - w0)


def build(folder: Path, data: Path, words: int) -> None:
    _side_package()
    from bench_mixpr_growth import corpus

    from longctx.mixpr import MixPRIndex

    docs = corpus(data, words)
    MixPRIndex.from_texts([t for _, t in docs], ids=[i for i, _ in docs]).save(folder)


def _side_package():
    """Import ``longctx`` from the checkout on ``PYTHONPATH`` (before ``bench_mixpr_growth``
    puts this checkout first on ``sys.path``), and check it is that one."""
    import longctx

    root = Path(os.environ["PYTHONPATH"].split(os.pathsep)[0]).resolve()
    assert Path(longctx.__file__).resolve().is_relative_to(root), (longctx.__file__, root)
    sys.path.insert(0, str(HERE))


def worker(cache: Path) -> dict:
    _side_package()
    from bench_mixpr_growth import QUESTIONS

    from longctx.mixpr import MixPRIndex

    cpu, wall, hits = {}, {}, {}

    def put(name, fn):
        out, cpu[name], wall[name] = _timed(fn)
        return out

    idx = MixPRIndex.load(cache)
    idx.search(QUESTIONS[2], token_budget=1000)  # the process's imports, not timed
    assert idx._state.__dict__.get("_text_ids", idx._state.__dict__.get("_ids")) is None
    with tempfile.TemporaryDirectory(prefix="uniq2-") as tmp:
        plain, held = Path(tmp) / "plain", Path(tmp) / "held"
        put("save", lambda: idx.save(plain))
        put("make", idx._state.text_ids)
        put("save held", lambda: idx.save(held))
        for mode, mmap in (("read", False), ("mapped", True)):
            back = put(f"open {mode}", lambda mmap=mmap: MixPRIndex.load(held, mmap=mmap))
            for q, question in (("q1", QUESTIONS[0]), ("q2", QUESTIONS[1])):
                r = put(
                    f"{q} {mode}",
                    lambda b=back, t=question: b.search(t, token_budget=1000, unique_texts=True),
                )
                hits[f"{q} {mode}"] = [(h.source, h.start, h.score) for h in r.hits]
        back = MixPRIndex.load(plain, mmap=True)
        r = put(
            "q1 no ids (mapped)",
            lambda: back.search(QUESTIONS[0], token_budget=1000, unique_texts=True),
        )
        hits["q1 no ids"] = [(h.source, h.start, h.score) for h in r.hits]
        files = sorted(p.name for p in plain.iterdir() if p.name == "text_ids.npy")
    return {"cpu": cpu, "wall": wall, "hits": hits, "plain has ids": bool(files)}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--before", type=Path, required=True)
    p.add_argument("--after", type=Path, default=Path("."))
    p.add_argument("--words", type=int, default=1_000_000)
    p.add_argument("--data", type=Path, default=Path("../shared/data"))
    p.add_argument("--cache", type=Path, default=Path("/tmp/text_ids_save"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--build", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.build:
        build(args.worker, args.data, args.words)
        return {}
    if args.worker is not None:
        print(json.dumps(worker(args.worker)))
        return {}
    sides = {"before": args.before.resolve(), "after": args.after.resolve()}
    folder = args.cache / f"mixpr-{args.words}"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--before", "."]
    if not folder.exists():  # built and saved (without ids) by the --after side
        env = {**os.environ, "PYTHONPATH": str(sides["after"])}
        flags = ["--build", "--words", str(args.words), "--data", str(args.data.resolve())]
        subprocess.run([*cmd, *flags, "--worker", str(folder)], check=True, env=env)
    runs = {name: [] for name in sides}
    for r in range(args.repeats):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        for name in order:
            env = {**os.environ, "PYTHONPATH": str(sides[name])}
            out = subprocess.run(
                [*cmd, "--worker", str(folder)], check=True, env=env, capture_output=True, text=True
            ).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
            print(r, name, json.dumps(runs[name][-1]["cpu"]), flush=True)
    for a, b in zip(runs["before"], runs["after"]):
        assert a["hits"] == b["hits"], "the two sides' hits differ"
    table = {}
    for key in runs["after"][0]["cpu"]:
        cell = {n: round(statistics.median(x["cpu"][key] for x in runs[n]), 1) for n in runs}
        cell["ratio"] = round(cell["before"] / max(cell["after"], 1e-9), 2)
        table[key] = cell
    table["plain save has text_ids.npy"] = {n: runs[n][0]["plain has ids"] for n in runs}
    return table


if __name__ == "__main__":
    out = main()
    if out:
        print(json.dumps(out, indent=1))
