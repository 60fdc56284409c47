"""``longctx`` command line: ``longctx retrieve PATH --query "..."``, ``longctx index PATH``,
``longctx search CORPUS --query "..."``.

Each method lives in its own module of this package exposing
``run(text: str, query: str, args: argparse.Namespace) -> SearchResult | list[Passage]`` and
``score_units(text, query, args) -> (spans, scores, token_counts)`` (for ``--diversify``);
:mod:`~longctx.cli.retrieve` checks the arguments (before any heavy work), reads the file,
dispatches to that module and prints. This module builds the parser and runs a subcommand's
handler; :mod:`~longctx.cli.parsing` holds the parser's shared pieces, :mod:`~longctx.cli.console`
the one-line messages on stderr, :mod:`~longctx.cli.errors` :class:`CliError`.

Every failure is one line on stderr (``longctx: error: ...``) and exit status 2; warnings and the
core's log messages are shown once each as ``longctx: warning: ...`` (``--quiet`` hides them,
``--verbose`` adds the INFO messages, such as the routers' decisions). Progress bars are drawn only
when stderr is a terminal, or with ``--progress``.

Subcommands: one ``_add_<name>(subparsers)`` function builds each one and sets its handler
(``args.handler(args) -> int``), so a new subcommand is one more function.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from longctx import __version__
from longctx.cli.console import _console, _first_line
from longctx.cli.errors import CliError
from longctx.cli.parsing import _add_output_options, _HelpFormatter, _Parser, _positive_int
from longctx.cli.retrieve import (
    DEFAULT_K,
    DEFAULT_MODEL_NAME,
    METHODS,
    OFFSETS,
    PROGRESS_MIN_CHARS,
    _add_retrieve,
)

__all__ = [
    "main",
    "build_parser",
    "CliError",
    "METHODS",
    "DEFAULT_K",
    "PROGRESS_MIN_CHARS",
    "OFFSETS",
    "DEFAULT_MODEL_NAME",
]


def build_parser() -> argparse.ArgumentParser:
    """The ``longctx`` parser; each subcommand's namespace carries ``handler(args) -> int``."""
    parser = _Parser(
        prog="longctx",
        description="Long-context retrieval: keep only the parts that matter.",
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"longctx {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_retrieve(sub)
    _add_index(sub)
    _add_search(sub)
    _add_ask(sub)
    _add_bench(sub)
    return parser


def _add_ask(sub) -> None:
    from longctx.cli import ask

    ask.add_parser(sub, _positive_int)
    sub.choices["ask"].set_defaults(handler=ask.main, verbose=False)


def _add_index(sub) -> None:
    from longctx.cli import index

    index.add_parser(sub, _positive_int)
    sub.choices["index"].set_defaults(handler=index.run)


def _add_search(sub) -> None:
    from longctx.cli import search

    search.add_parser(sub, _positive_int, _add_output_options)
    sub.choices["search"].set_defaults(handler=search.run)


def _add_bench(sub) -> argparse.ArgumentParser:
    from longctx.cli import bench

    b = bench.add_parser(sub)
    _add_output_options(b)
    b.set_defaults(handler=_bench)
    return b


def _bench(args) -> int:
    from longctx.cli import bench

    try:
        return bench.run(args)
    except (ValueError, FileNotFoundError) as exc:
        raise CliError(str(exc)) from None


def _error(message: str) -> int:
    print(f"longctx: error: {_first_line(message)}", file=sys.stderr)
    return 2


def _silence_stdout() -> None:
    """After the reader of stdout went away (``longctx ... | head``): send what Python still
    flushes at exit to /dev/null, so that no "Broken pipe" traceback follows."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, or 2 after one line on stderr)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "quiet", False) and getattr(args, "verbose", False):
        return _error("give at most one of --quiet and --verbose")
    with _console(args):
        try:
            status = args.handler(args)
            sys.stdout.flush()  # a closed pipe (| head) fails here, not at interpreter exit
            return status
        except BrokenPipeError:
            _silence_stdout()
            return 1
        except CliError as exc:
            return _error(str(exc))
        except KeyboardInterrupt:
            return _error("interrupted")
        except MemoryError as exc:  # a size the user chose (the paper's graph on a long text)
            return _error(_first_line(str(exc)) or "out of memory")
        except Exception as exc:  # a bug: still one line, the traceback with --verbose
            if args.verbose:
                traceback.print_exc()
            return _error(
                f"unexpected {type(exc).__name__}: {_first_line(str(exc))} "
                "(run with --verbose for the traceback and please report it)"
            )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
