"""The parser's pieces every subcommand uses: one-line usage errors, ``(default: ...)`` in the
help, positive integers, the options of messages on stderr."""

from __future__ import annotations

import argparse

#: the unit a CLI budget counts in, as `retrieve` and `search` print it in their JSON
BUDGET_UNIT = "longctx.tokens.count_tokens (SmolLM2 tokens)"


# ----------------------------------------------------------------------------------- parsing
class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (``longctx: error: ...``), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"longctx: error: {message} (see '{self.prog} --help')\n")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Appends ``(default: ...)`` to every option whose help does not already state its default;
    an option whose default is None must say in words what it defaults to."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (
            "default" in text
            or action.default in (None, argparse.SUPPRESS)
            or isinstance(action, (argparse._HelpAction, argparse._VersionAction))
        ):
            return text
        if action.default is False:
            return text + " (default: off)"
        return text + " (default: %(default)s)"


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


def _add_quiet(parser) -> None:
    """``--quiet``: the same option in every subcommand."""
    parser.add_argument(
        "--quiet", action="store_true", help="print no warnings or notes, only errors and results"
    )


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    """Options every subcommand takes (warnings, log messages and progress bars)."""
    g = parser.add_argument_group("messages on stderr")
    _add_quiet(g)
    g.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print the methods' decisions (INFO log messages) and tracebacks of errors",
    )
    g.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="draw progress bars on stderr (default: only when stderr is a terminal and the text "
        "is long)",
    )
