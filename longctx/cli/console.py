"""Warnings and log messages of one CLI run as one-line messages on stderr (each shown once), and
the Hugging Face progress bars and chatter following ``--progress`` / ``--quiet``."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings


# ---------------------------------------------------------------------- warnings and logging
class _ConsoleHandler(logging.Handler):
    """Each log message once, on one line: ``longctx: warning: ...`` / ``longctx: info: ...``."""

    def __init__(self, stream, seen: set):
        super().__init__()
        self.stream = stream
        self.seen = seen

    def emit(self, record: logging.LogRecord) -> None:
        try:
            level = "warning" if record.levelno >= logging.WARNING else "info"
            _print_once(self.stream, self.seen, level, record.getMessage())
        except Exception:  # pragma: no cover - never let logging break a run
            self.handleError(record)


def _first_line(message: str) -> str:
    lines = [ln.strip() for ln in str(message).strip().splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _print_once(stream, seen: set, level: str, message: str) -> None:
    line = f"longctx: {level}: {_first_line(message)}"
    if line not in seen:
        seen.add(line)
        print(line, file=stream, flush=True)


@contextlib.contextmanager
def _console(args):
    """For one CLI run: route the ``longctx`` logger and Python warnings to one-line stderr
    messages (each shown once), per ``--quiet`` / ``--verbose``; restore everything after."""
    stream = sys.stderr
    seen: set[str] = set()
    log = logging.getLogger("longctx")
    handler = _ConsoleHandler(stream, seen)
    saved = (log.level, log.propagate)
    if args.quiet:
        log.setLevel(logging.ERROR + 1)
    else:
        log.setLevel(logging.INFO if args.verbose else logging.WARNING)
    log.propagate = False
    log.addHandler(handler)
    env_saved = {k: os.environ.get(k) for k in ("HF_HUB_DISABLE_PROGRESS_BARS",)}
    args._restore = []
    try:
        with warnings.catch_warnings():
            if args.quiet:
                warnings.simplefilter("ignore")
            else:
                warnings.simplefilter("once")
                for cat in (DeprecationWarning, PendingDeprecationWarning, ImportWarning):
                    warnings.filterwarnings("ignore", category=cat)

            def show(message, category, filename, lineno, file=None, line=None):
                _print_once(stream, seen, "warning", str(message))

            warnings.showwarning = show
            yield
    finally:
        for restore in args._restore:
            restore()
        log.removeHandler(handler)
        log.setLevel(saved[0])
        log.propagate = saved[1]
        for k, v in env_saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _setup_third_party(args) -> None:
    """Hugging Face progress bars and chatter follow ``args.progress`` and ``--quiet`` for this
    run (restored by :func:`_console`)."""
    if not args.progress:
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    if args.method != "youra" and "transformers" not in sys.modules:
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    bars, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()

    def restore() -> None:
        hf_logging.enable_progress_bar() if bars else hf_logging.disable_progress_bar()
        hf_logging.set_verbosity(verbosity)

    args._restore.append(restore)
    if not args.progress:
        hf_logging.disable_progress_bar()
    if args.quiet:
        hf_logging.set_verbosity_error()
