"""Starting Ray the way every longctx Ray user needs it (corpus builds, MixPR shards): the one
module that calls ``ray.init``. It imports no other longctx module: the caller names the modules
its workers need (``preload``), as data.

Ray puts the driver's current folder first on every worker's ``sys.path``; run from a folder that
holds a ``longctx/`` directory (a checkout, say), the workers would import that folder instead of
the installed package. A Ray started here therefore has each worker import longctx, and the
modules the caller named, when it starts (``worker_process_setup_hook``, :func:`runtime_env`),
before that folder is on its path; later imports of ``longctx.*`` are found through the package
imported then. Ray's "Token authentication is enabled" notice is shown only when longctx logs at
INFO (``longctx ... --verbose``; :func:`quiet_ray_start`).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from contextlib import contextmanager

__all__ = [
    "PRELOAD_ENV",
    "RAY_CONNECT_TIMEOUT_S",
    "check_ray_address",
    "quiet_ray_start",
    "runtime_env",
    "start_ray",
]

logger = logging.getLogger(__name__)

#: The environment variable (set on every worker through the ``runtime_env``) naming the longctx
#: modules a worker imports at start-up, comma-separated.
PRELOAD_ENV = "LONGCTX_RAY_PRELOAD"
#: Seconds a Ray cluster's address has to accept a connection before ``ray.init`` is called
#: (:func:`check_ray_address`); ``LONGCTX_RAY_CONNECT_TIMEOUT_S`` overrides it. Ray itself
#: retries an address that does not answer for many minutes (a mistyped ``--ray-address
#: bogus:1``: about 60 warning lines, then an error after 828 s, issue 44).
RAY_CONNECT_TIMEOUT_S = 10.0


def _import_longctx() -> None:
    """Worker start-up hook: import ``longctx`` and the modules named in :data:`PRELOAD_ENV`
    while the worker's ``sys.path`` does not yet hold the driver's current folder, which Ray puts
    first before the first task runs; later imports of ``longctx`` find it in ``sys.modules``."""
    import importlib

    importlib.import_module("longctx")
    for name in os.environ.get(PRELOAD_ENV, "").split(","):
        if name:
            importlib.import_module(name)


def use_ray_for(use_ray: bool | None, ray_address: str | None, what: str) -> bool:
    """Whether a build runs on Ray: ``use_ray`` ``None`` means "if Ray is installed",
    ``True`` (or a ``ray_address``) requires it, ``False`` never uses it. ``what`` names the
    work for the log line said when Ray is missing (e.g. ``"12 shards"``).

    Raises
    ------
    ModuleNotFoundError
        Ray is required (``use_ray=True`` or a ``ray_address``) and not installed.
    """
    if use_ray is False:
        return False
    try:
        import ray  # noqa: F401
    except ModuleNotFoundError:
        if use_ray or ray_address is not None:
            raise ModuleNotFoundError(
                "Ray is not installed: pip install 'longctx-rag[ray]'", name="ray"
            ) from None
        logger.info(
            "Ray is not installed (pip install 'longctx-rag[ray]'): building %s in this process",
            what,
        )
        return False
    return True


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address (``"head:6379"``, ``"ray://head:10001"``,
    ``"[::1]:6379"``); ``None`` for the addresses Ray resolves itself (``"auto"``, ``"local"``,
    a plugin's ``"scheme://..."``)."""
    rest = address.strip()
    if rest in ("auto", "local"):
        return None
    if "://" in rest:
        scheme, rest = rest.split("://", 1)
        if scheme != "ray":  # another client scheme of a Ray plugin: Ray's to resolve
            return None
    rest = rest.rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"ray_address must be 'auto', 'HOST:PORT' or 'ray://HOST:PORT' (a port in "
            f"1-65535), got {address!r}"
        )
    return host.strip("[]"), int(port)


def check_ray_address(address: str, timeout: float | None = None) -> None:
    """Check that a Ray cluster's address answers before ``ray.init`` joins it: its host is
    resolved and a TCP connection to its port opened within ``timeout`` seconds (default
    :data:`RAY_CONNECT_TIMEOUT_S`), so a mistyped address is one clear error within seconds,
    not minutes of Ray's retries. ``"auto"``, ``"local"`` and other schemes than ``ray://``
    are left to Ray.

    Raises
    ------
    ValueError
        ``address`` is empty, or a ``"HOST:PORT"`` / ``"ray://HOST:PORT"`` without a port.
    ConnectionError
        The host is unknown, refuses the connection, or does not answer within ``timeout``;
        the message names the address.
    """
    if not isinstance(address, str) or not address.strip():
        raise ValueError(f"ray_address must be a non-empty str, got {address!r}")
    hp = _host_port(address)
    if hp is None:
        return
    if timeout is None:
        try:
            timeout = float(os.environ.get("LONGCTX_RAY_CONNECT_TIMEOUT_S", RAY_CONNECT_TIMEOUT_S))
        except ValueError:
            timeout = RAY_CONNECT_TIMEOUT_S
    try:
        with socket.create_connection(hp, timeout=timeout):
            pass
    except socket.gaierror as exc:
        raise ConnectionError(
            f"cannot reach the Ray cluster at {address!r}: unknown host {hp[0]!r} ({exc.strerror})"
        ) from None
    except TimeoutError:
        raise ConnectionError(
            f"cannot reach the Ray cluster at {address!r}: no answer within {timeout:g} s "
            "(LONGCTX_RAY_CONNECT_TIMEOUT_S)"
        ) from None
    except OSError as exc:
        raise ConnectionError(
            f"cannot reach the Ray cluster at {address!r}: {exc.strerror or exc}; is 'ray start "
            "--head' running there?"
        ) from None
    logger.debug("Ray address %s answers", address)


def runtime_env(preload: Sequence[str] = ()) -> dict:
    """The ``runtime_env`` of a Ray longctx starts: each worker runs :func:`_import_longctx`.

    Parameters
    ----------
    preload : sequence of str
        Modules of longctx (``"longctx.corpus.ray_backend"``) each worker imports at start-up.

    Raises
    ------
    ValueError
        A name in ``preload`` that is not a ``longctx`` module path.
    """
    names = list(preload)
    bad = [n for n in names if not isinstance(n, str) or not n.startswith("longctx.") or "," in n]
    if bad:
        raise ValueError(f"preload must name longctx modules, got {bad[:3]!r}")
    return {
        "worker_process_setup_hook": f"{__name__}._import_longctx",
        "env_vars": {PRELOAD_ENV: ",".join(names)},
    }


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


def start_ray(
    workers: int | None,
    ray_address: str | None,
    *,
    preload: Sequence[str] = (),
    num_gpus: int | None = 0,
) -> tuple[bool, str, int]:
    """Join the Ray this process already runs, a cluster (``ray_address``), or start a local one.

    Parameters
    ----------
    workers : int, optional
        CPUs of a local Ray started here (default: this machine's).
    ray_address : str, optional
        A Ray cluster to join (``"auto"``, ``"ray://head:10001"``).
    preload : sequence of str
        Modules each worker imports at start-up (:func:`runtime_env`).
    num_gpus : int or None
        GPUs of a local Ray started here (``None``: Ray counts them).

    Returns
    -------
    (started, backend, cpus) : (bool, str, int)
        Whether Ray was started here (the caller shuts it down then), ``"ray-local"`` or
        ``"ray-cluster"``, the CPUs of the Ray.

    Raises
    ------
    ValueError, ConnectionError
        ``ray_address`` is malformed or does not answer (:func:`check_ray_address`).
    """
    import ray

    env = runtime_env(preload)
    if ray.is_initialized():
        logger.info("using the Ray this process already runs")
        kind = "ray-cluster" if ray_address else "ray-local"
        return False, kind, int(ray.cluster_resources().get("CPU", 1))
    if ray_address is not None:
        check_ray_address(ray_address)  # seconds, not Ray's minutes of retries
        with quiet_ray_start():
            ray.init(address=ray_address, log_to_driver=False, runtime_env=env)
        return True, "ray-cluster", int(ray.cluster_resources().get("CPU", 1))
    n = workers or (os.cpu_count() or 1)
    with quiet_ray_start():
        ray.init(
            num_cpus=n,
            num_gpus=num_gpus,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
            runtime_env=env,
        )
    return True, "ray-local", n
