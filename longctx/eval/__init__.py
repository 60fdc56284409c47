"""``longctx.eval``: every method against the usual baselines on real data (``longctx bench``).

See :mod:`longctx.eval.tasks` (data), :mod:`longctx.eval.methods` (the compared methods),
:mod:`longctx.eval.metrics` and :mod:`longctx.eval.harness` (running, tables, plots).
"""

from longctx.eval.harness import BUDGETS, markdown, plot, run, save
from longctx.eval.registry import METHOD_NAMES
from longctx.eval.tasks import TASKS, Example, load_task

__all__ = [
    "BUDGETS",
    "METHOD_NAMES",
    "TASKS",
    "Example",
    "load_task",
    "markdown",
    "plot",
    "run",
    "save",
]
