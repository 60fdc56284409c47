"""The CLI's one error type (the lowest module of :mod:`longctx.cli`: it imports none of it)."""

from __future__ import annotations

__all__ = ["CliError"]


class CliError(Exception):
    """A failure to report as one line on stderr, exit status 2."""
