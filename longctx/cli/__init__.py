"""``longctx`` command line: ``longctx retrieve PATH --query "..."``.

Each method lives in its own module of this package exposing
``run(text: str, query: str, args: argparse.Namespace) -> list[Passage]``; this module parses and
checks the arguments (before any heavy work), reads the file, dispatches and prints.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from longctx.io import InputError, read_text_file, sample_text

# method name -> module implementing run(text, query, args)
METHODS = {
    "mixpr": "longctx.cli.mixpr",
    "youra": "longctx.cli.youra",
    "mmr": "longctx.cli.diversity",
    "fps": "longctx.cli.diversity",
}

# Inputs at least this many characters long show a progress bar on stderr (per method: a
# language model is far slower per character than TF-IDF).
PROGRESS_MIN_CHARS = {"mixpr": 200_000, "youra": 10_000, "mmr": 50_000, "fps": 50_000}


def _positive_int(name: str):
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {value!r}") from None
        if n < 1:
            raise argparse.ArgumentTypeError(f"{name} must be >= 1, got {n}")
        return n

    return parse


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (``longctx: error: ...``), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"longctx: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="longctx", description="Long-context retrieval: keep only the parts that matter."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "retrieve",
        help="select the passages of a long text that matter for a query",
        description="Select the passages of a long text that matter for a query, printed in "
        "document order with their character positions and scores.",
    )
    r.add_argument("path", nargs="?", help="UTF-8 text file (or use --sample)")
    r.add_argument("--sample", choices=["alice"], help="use a bundled public-domain text")
    r.add_argument("--query", "-q", required=True, help="the question (or task) to retrieve for")
    r.add_argument("--method", "-m", choices=sorted(set(METHODS)), default="mixpr")
    size = r.add_mutually_exclusive_group()
    size.add_argument("--k", type=_positive_int("--k"), help="number of passages (default 100)")
    size.add_argument(
        "--budget", type=_positive_int("--budget"), help="token budget for the selected passages"
    )
    r.add_argument("--format", choices=["text", "json"], default="text")
    r.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    g = r.add_argument_group("mixpr")
    g.add_argument(
        "--mode",
        choices=["auto", "local", "global"],
        default="auto",
        help="local: personalized PageRank; global: PageRank; auto: the router decides",
    )
    g.add_argument("--max-words", type=_positive_int("--max-words"), default=32)
    g = r.add_argument_group("youra")
    g.add_argument("--model", help="local path or cached name of a causal LM (default: SmolLM2)")
    g.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    g.add_argument(
        "--baseline",
        choices=["paper", "instruction"],
        default="paper",
        help="reaction baseline: eq. 1 of the paper, or the authors' instruction suffix",
    )
    g.add_argument("--layers", choices=["last", "all"], default="last", help="attention layers")
    g.add_argument(
        "--max-window",
        type=_positive_int("--max-window"),
        help="model tokens per scoring window (default: the model's window); smaller is faster "
        "on CPU",
    )
    g = r.add_argument_group("mmr / fps / --diversify")
    g.add_argument("--lambda", dest="lambda_", type=float, default=0.5, help="MMR/FPS lambda")
    g.add_argument("--window", type=_positive_int("--window"), help="MMR recent-selection window")
    g.add_argument(
        "--diversify", action="store_true", help="apply MMR to the chosen method's scores"
    )
    from longctx.cli import bench

    bench.add_parser(sub)
    return parser


def _error(message: str) -> int:
    print(f"longctx: error: {message}", file=sys.stderr)
    return 2


def _print_passages(passages, args, n_chars: int) -> None:
    if args.format == "json":
        out = {
            "method": args.method,
            "query": args.query,
            "n_chars": n_chars,
            "passages": [p.to_dict() for p in passages],
        }
        json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return
    for p in passages:
        print(f"[{p.index}] chars {p.start}-{p.end}  score={p.score:.6g}")
        print(p.text)
        print()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "bench":
        from longctx.cli import bench

        try:
            return bench.run(args)
        except (ValueError, FileNotFoundError) as exc:
            return _error(str(exc))
    if not args.query.strip():
        return _error("--query must not be empty")
    if (args.path is None) == (args.sample is None):
        return _error("give exactly one of PATH and --sample")
    if not 0.0 <= args.lambda_ <= 1.0:
        return _error(f"--lambda must be in [0, 1], got {args.lambda_}")
    try:
        text = read_text_file(args.path) if args.path else sample_text(args.sample)
    except InputError as exc:
        return _error(str(exc))
    except OSError as exc:
        return _error(f"cannot read PATH: {exc}")
    args.progress = not args.no_progress and len(text) >= PROGRESS_MIN_CHARS[args.method]
    if args.k is None and args.budget is None:
        args.k = 100
    try:
        module = importlib.import_module(METHODS[args.method])
    except ModuleNotFoundError as exc:
        return _error(
            f"--method {args.method} needs a missing package ({exc.name}): "
            "pip install 'longctx[all]'"
        )
    try:
        if args.diversify and args.method not in ("mmr", "fps"):
            from longctx.cli.diversity import diversify_units

            spans, scores, token_counts = module.score_units(text, args.query, args)
            passages = diversify_units(text, spans, scores, token_counts, args.query, args)
        else:
            passages = module.run(text, args.query, args)
    except (ValueError, TypeError, RuntimeError, NotImplementedError) as exc:
        return _error(str(exc))
    _print_passages(passages, args, len(text))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
