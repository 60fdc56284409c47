"""``longctx bench``: every method against the usual baselines on real data
(:mod:`longctx.eval`)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from longctx.cli.parsing import _HelpFormatter
from longctx.eval import METHOD_NAMES, TASKS

# every method but the opt-in ones (fps; youra and garlic run an LLM over every document)
DEFAULT_METHODS = tuple(m for m in METHOD_NAMES if m not in ("fps", "youra", "garlic"))

logger = logging.getLogger(__name__)


def _int_list(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(v.replace("_", "")) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected integers separated by commas, got {text!r}"
        ) from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return vals


def add_parser(sub) -> argparse.ArgumentParser:
    b = sub.add_parser(
        "bench",
        help="compare every method with BM25, MiniLM, truncation and random on real data",
        description="Run every method and the usual baselines on the same real data under the\n"
        "same token budgets; prints a markdown table, writes bench.json and PNG plots.",
        formatter_class=_HelpFormatter,
    )
    b.add_argument(
        "--data",
        type=Path,
        required=True,
        metavar="FOLDER",
        help="the benchmark data folder (required; no default): babi/en/, gutenberg/, "
        "squad/, hotpotqa/, narrativeqa_summaries/, multilexsum/; where each comes from: "
        "docs/guide/bench.md",
    )
    b.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS), help="tasks to run")
    b.add_argument(
        "--methods",
        nargs="+",
        choices=METHOD_NAMES,
        default=list(DEFAULT_METHODS),
        help="methods to compare (youra and garlic run the LLM over every document: slow on "
        "CPU; garlic's graphs are cached under --cache)",
    )
    b.add_argument(
        "--quick",
        action="store_true",
        help="4 questions per task, one 8k-token bAbI haystack, a corpus task over 4 examples' "
        "passages, no worker processes",
    )
    b.add_argument("--questions", type=int, help="questions per task (overrides --quick's)")
    b.add_argument(
        "--babilong-tokens",
        type=_int_list,
        metavar="N[,N...]",
        help="bAbI haystack sizes in tokens, each its own tasks (babilong-qa1@16k, ...); "
        "default 16000,128000 (--quick: 8000)",
    )
    b.add_argument(
        "--babilong-questions",
        type=_int_list,
        metavar="N[,N...]",
        help="questions per bAbI subtask for each size (one value: all sizes); default 60,10 "
        "for the full run, else --questions",
    )
    b.add_argument(
        "--isolate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run each method in its own worker process and report its own peak RSS "
        "(default: on for full runs, off with --quick)",
    )
    b.add_argument(
        "--garlic-max-tokens",
        type=int,
        default=20_000,
        help="garlic: documents longer than this (tokens) are reported as skipped (its graph "
        "build runs the LLM over the whole document)",
    )
    b.add_argument(
        "--garlic-batch-size",
        type=int,
        help="garlic: summarization prompts decoded together per forward pass, across the "
        "task's documents (default: the device's, 8 on CPU)",
    )
    b.add_argument(
        "--garlic-bullets",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="garlic: force every summary line to start with '* ' (the paper's format) while "
        "building; --no-garlic-bullets lets the model write freely (fallback parsing)",
    )
    b.add_argument("--seed", type=int, default=0, help="seed of question sampling and haystacks")
    b.add_argument("--out", type=Path, default=Path("bench-results"), help="output folder")
    b.add_argument(
        "--cache",
        type=Path,
        help="folder caching sentence embeddings, token counts and GARLIC graphs between runs "
        "(keep it outside the repository)",
    )
    b.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    b.add_argument(
        "--conditions",
        metavar="TEXT",
        help="the machine's conditions during the run, written into bench.json's "
        "settings.conditions (the docs print it beside the run's seconds), e.g. 'shared "
        "machine, load 5-9, warm --cache'; default: the 1-minute load average measured at the "
        "start and at the end and whether --cache held files at the start",
    )
    b.add_argument(
        "--answer",
        nargs="?",
        const=True,
        metavar="MODEL",
        help="also answer each question from each selection with a local LLM (the packaged "
        "SmolLM2, or MODEL: a local path) and report QA F1; slow on CPU",
    )
    return b


def _garlic_build_options(args: argparse.Namespace) -> dict:
    """``build_hwdag`` keywords from the CLI; the checks are the core's
    (:func:`longctx.garlic.decode.check_batch_size`)."""
    from longctx.garlic.decode import check_batch_size

    out = {"max_new_tokens": 160, "force_bullets": bool(args.garlic_bullets)}
    if args.garlic_batch_size is not None:
        try:
            out["batch_size"] = check_batch_size(args.garlic_batch_size)
        except (TypeError, ValueError) as e:
            raise ValueError(f"--garlic-batch-size: {e}") from None
    return out


def _load_average() -> float | None:
    """The 1-minute load average (``None`` where the platform has none, e.g. Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _cache_state(cache: Path | None) -> str:
    """``"no --cache"``, ``"empty --cache"`` or ``"warm --cache"`` (the folder holds files)."""
    if cache is None:
        return "no --cache"
    cache = Path(cache)
    warm = cache.is_dir() and any(p.is_file() for p in cache.rglob("*"))
    return "warm --cache" if warm else "empty --cache"


def measured_conditions(load_start: float | None, load_end: float | None, cache: str) -> str:
    """``settings.conditions`` when ``--conditions`` is not given: the 1-minute load average at
    the start and at the end of the run and the state of ``--cache`` at its start
    (:func:`_cache_state`), e.g. ``"load average 0.4 at the start, 5.2 at the end, empty
    --cache"``."""
    if load_start is None or load_end is None:
        return f"load average not measured, {cache}"
    return f"load average {load_start:.1f} at the start, {load_end:.1f} at the end, {cache}"


def run(args: argparse.Namespace) -> int:
    from longctx.eval import markdown, plot, save
    from longctx.eval import run as run_bench

    if not Path(args.data).is_dir():
        raise ValueError(
            f"--data {str(args.data)!r} is not a folder (give the benchmark data folder: "
            "babi/en/, gutenberg/, squad/, ...; see docs/guide/bench.md)"
        )
    if args.questions is not None and args.questions < 1:
        raise ValueError(f"--questions must be >= 1, got {args.questions}")
    if args.garlic_max_tokens < 1:
        raise ValueError(f"--garlic-max-tokens must be >= 1, got {args.garlic_max_tokens}")
    if args.conditions is not None and not args.conditions.strip():
        raise ValueError("--conditions must not be empty (leave it out to record the load)")
    cache, load_start = _cache_state(args.cache), _load_average()
    t0 = time.perf_counter()
    result = run_bench(
        args.data,
        tasks=args.tasks,
        methods=args.methods,
        quick=args.quick,
        n_questions=args.questions,
        seed=args.seed,
        cache_dir=args.cache,
        answer=args.answer,
        babilong_tokens=args.babilong_tokens,
        babilong_questions=args.babilong_questions,
        isolate=args.isolate,
        method_options={
            "garlic": {
                "max_doc_tokens": args.garlic_max_tokens,
                "build": _garlic_build_options(args),
            }
        },
    )
    result["settings"]["seconds"] = round(time.perf_counter() - t0, 1)
    result["settings"]["conditions"] = (
        args.conditions.strip()
        if args.conditions is not None
        else measured_conditions(load_start, _load_average(), cache)
    )
    logger.info("conditions of the run: %s", result["settings"]["conditions"])
    print(markdown(result))
    path = save(result, args.out)
    written = [path] + ([] if args.no_plots else plot(result, args.out))
    print(
        f"\n{result['settings']['seconds']} s; wrote " + ", ".join(str(p) for p in written),
        file=sys.stderr,
    )
    return 0
