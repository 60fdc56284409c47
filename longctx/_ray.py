"""Starting Ray the way every longctx Ray user needs it (corpus builds, MixPR shards).

Ray puts the driver's current folder first on every worker's ``sys.path``; run from a folder that
holds a ``longctx/`` directory (a checkout, say), the workers would import that folder instead of
the installed package. A Ray started here therefore has each worker import longctx when it starts
(``worker_process_setup_hook``, :data:`RUNTIME_ENV`), before that folder is on its path. Ray's
"Token authentication is enabled" notice is shown only when longctx logs at INFO
(``longctx ... --verbose``; :func:`quiet_ray_start`).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager

__all__ = ["RUNTIME_ENV", "quiet_ray_start"]


def _import_longctx() -> None:
    """Worker start-up hook: import longctx (the corpus and MixPR modules) while the worker's
    ``sys.path`` does not yet hold the driver's current folder, which Ray puts first before the
    first task runs; later imports of ``longctx`` find it in ``sys.modules``."""
    import longctx.corpus.build  # noqa: F401
    import longctx.corpus.shards.index  # noqa: F401


#: The ``runtime_env`` of every Ray longctx starts.
RUNTIME_ENV = {"worker_process_setup_hook": f"{__name__}._import_longctx"}

#: Ray's loggers whose notices at start-up are shown only at INFO level (``--verbose``)
_RAY_NOTICE_LOGGERS = ("ray._private.authentication.authentication_token_setup",)


@contextmanager
def quiet_ray_start():
    """Ray's start-up notices (the token authentication one) hidden unless longctx logs at INFO;
    the loggers' levels are restored after."""
    if logging.getLogger("longctx").isEnabledFor(logging.INFO):
        yield
        return
    saved = [(lg, lg.level) for lg in map(logging.getLogger, _RAY_NOTICE_LOGGERS)]
    for lg, _ in saved:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in saved:
            lg.setLevel(level)
