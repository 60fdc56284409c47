"""Where the shards of a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex` live: in this
process (:class:`LocalShards`) or in Ray actors, one per shard, on a local Ray or a cluster
(:class:`RayShards`).

Both run a method of some shards (:meth:`run`: ``{shard: (method, args)}`` -> ``{shard:
result}``) and give the scoring pipeline its view of the shards' blocks (:meth:`blocks`: a
backend of :mod:`longctx.mixpr.scoring`). A Ray actor that dies is reported as
:class:`ShardDied` naming it; :meth:`RayShards.restart` starts a new actor from the shard's stored
copy. A shard that cannot be loaded is a :class:`~longctx.persist.PersistError` naming it.
"""

from __future__ import annotations

import logging
import math
import os

import numpy as np

from longctx._ray import start_ray
from longctx.checks import check_float
from longctx.corpus.shards.shard import MixPRShard
from longctx.persist import PersistError

logger = logging.getLogger(__name__)

__all__ = ["LocalShards", "RayShards", "ShardDied", "open_shard", "shard_cpus"]

#: Arrays larger than this (bytes) are put in Ray's object store once per call, not copied into
#: every actor's task.
_PUT_BYTES = 64 * 1024


class ShardDied(RuntimeError):
    """Ray actors holding shards died (``shards``: their numbers)."""

    def __init__(self, shards):
        self.shards = sorted(shards)
        super().__init__(f"the Ray actor(s) of shard(s) {self.shards} died")


def open_shard(source):
    """A :class:`~longctx.corpus.shards.index.MixPRShard` from its source: ``("shard", shard)`` (as
    is), ``("dir", path, encoder)`` (a saved shard folder), ``("files", {name: bytes},
    encoder)`` (a saved shard's files, written to a temporary folder and loaded), or
    ``("storage", storage, rel, encoder)`` (a shard folder of a corpus location).

    Raises
    ------
    PersistError
        The shard cannot be loaded.
    """
    import tempfile
    from pathlib import Path

    kind = source[0]
    if kind == "shard":
        return source[1]
    if kind == "new":  # build it here: (MixPRShard.from_texts keywords)
        spec = dict(source[1])
        return MixPRShard.from_texts(spec.pop("texts"), **spec)
    if kind == "dir":
        return MixPRShard.load(source[1], encoder=source[2])
    if kind == "files":
        with tempfile.TemporaryDirectory(prefix="longctx-shard-") as tmp:
            for name, data in source[1].items():
                if "/" in name or "\\" in name or name in ("", ".", ".."):
                    raise PersistError(f"bad shard file name {name!r}")
                (Path(tmp) / name).write_bytes(data)
            return MixPRShard.load(tmp, encoder=source[2])
    if kind == "storage":
        storage, rel = source[1], source[2]
        if not storage.index_complete(rel):
            raise PersistError(f"{storage.location(rel)!r} is missing or half-written")
        if storage.local is not None:
            return MixPRShard.load(storage.local_index(rel), encoder=source[3])
        with tempfile.TemporaryDirectory(prefix="longctx-shard-") as tmp:
            return MixPRShard.load(storage.fetch_index(rel, tmp), encoder=source[3])
    raise ValueError(f"unknown shard source {kind!r}")


class LocalShards:
    """Shards held in this process (the same objects a Ray actor holds)."""

    kind = "in-process"

    def __init__(self, shards: dict):
        self.shards = dict(shards)

    def run(self, calls: dict) -> dict:
        return {i: getattr(self.shards[i], m)(*a) for i, (m, a) in calls.items()}

    def blocks(self, numbers):
        return _LocalView([self.shards[i] for i in numbers])

    def add(self, i: int, source) -> None:
        self.shards[i] = open_shard(source)

    restart = add

    def drop(self, i: int) -> None:
        """Stop holding shard ``i``: its calls raise :class:`ShardDied` until a restart."""
        self.shards[i] = _DroppedShard(i)

    def close(self) -> None:
        self.shards = {}


class _DroppedShard:
    """A shard this process stopped holding (see :meth:`LocalShards.drop`)."""

    def __init__(self, i: int):
        self._i = i

    def __getattr__(self, name):
        raise ShardDied([self._i])


class _LocalView:
    fuse = False

    def __init__(self, shards):
        self._shards = shards

    def map(self, method: str, *args) -> list:
        return [s.block_call(method, *args) for s in self._shards]


class _ShardActor:
    """A Ray actor holding one shard (see :func:`open_shard`)."""

    def __init__(self, source):
        try:
            self.shard = open_shard(source)
            self.error = None
        except Exception as exc:  # noqa: BLE001 - reported by ready(), naming the shard
            self.shard = None
            self.error = exc

    def ready(self):
        return self.error

    def run(self, method, *args):
        return getattr(self.shard, method)(*args)

    def call(self, method, *args):
        return self.shard.block_call(method, *args)

    def pid(self):
        return os.getpid()

    def node(self):
        """The id of the Ray node this actor runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()


def shard_cpus(node_cpus, n_shards: int, wanted: float | None = None) -> float:
    """The CPUs each of ``n_shards`` shard actors asks of Ray, so that all of them fit the
    nodes.

    Ray places an actor only on a node with its ``num_cpus`` free and otherwise waits for ever;
    a node with ``c`` CPUs holds ``floor(c / x)`` actors of ``x`` CPUs each.

    Parameters
    ----------
    node_cpus : sequence of float
        The CPUs of each live node of the Ray (one entry for a local Ray).
    n_shards : int
        The actors to place.
    wanted : float >= 0, optional
        The CPUs asked for (``cpus_per_shard``); ``None``: the largest share ``x <= 1`` with
        ``sum(floor(c / x)) >= n_shards`` (rounded down to Ray's 1e-4 CPU), ``0`` when the
        nodes have no CPU.

    Returns
    -------
    float
        ``num_cpus`` of each actor.

    Raises
    ------
    ValueError
        ``wanted`` is too large for the actors to fit the nodes (one line naming the
        largest share that fits).
    """
    cpus = [float(c) for c in node_cpus if float(c) > 0]
    n = max(1, int(n_shards))

    def fits(x: float) -> bool:
        return x <= 0 or sum(int(c / x + 1e-9) for c in cpus) >= n

    # the largest x <= 1 that fits is 1 or some node's c / m (a node then holds exactly m)
    # fits is monotone (a smaller share fits more actors): the first that fits, from the largest
    shares = {1.0, *(c / m for c in set(cpus) for m in range(1, n + 1) if c / m < 1.0)}
    best = next((x for x in sorted(shares, reverse=True) if fits(x)), 0.0)
    best = math.floor(best * 10_000) / 10_000  # Ray's granularity; never above what fits
    if wanted is None:
        return best
    if not fits(wanted):
        raise ValueError(
            f"cpus_per_shard={wanted:g} does not fit: {n} shard actors on nodes with "
            f"{sorted(cpus, reverse=True) or [0]} CPUs; give cpus_per_shard <= {best:g} "
            "(0: placed by memory alone), or more CPUs (ray start --num-cpus)"
        )
    return float(wanted)


def _node_cpus(ray) -> list[float]:
    """The CPUs of each live node of the Ray this process joined (``ray.nodes()``); the
    cluster's total as one node where the nodes cannot be listed."""
    try:
        return [
            float(nd.get("Resources", {}).get("CPU", 0.0)) for nd in ray.nodes() if nd.get("Alive")
        ]
    except Exception:  # noqa: BLE001 - a client connection without the node list
        return [float(ray.cluster_resources().get("CPU", 0.0))]


class RayShards:
    """One Ray actor per shard.

    Parameters
    ----------
    sources : dict int -> source
        Each shard's source (:func:`open_shard`), shipped to its actor.
    workers : int, optional
        CPUs of a local Ray started here (default: this machine's).
    ray_address : str, optional
        A Ray cluster to join (``"auto"``, ``"ray://head:10001"``).
    cpus_per_shard : float >= 0, optional
        ``num_cpus`` each actor asks of Ray. Default: the most, at most 1, that lets every
        shard's actor fit the nodes' CPUs together (:func:`shard_cpus`): one CPU each where the
        nodes have one per shard, else a share (4 shards on two 1-CPU nodes: 0.5 each). The
        actors work only during a query's round trips, so a share costs little; ``0`` places
        them by memory alone. On a cluster the actors are spread over the nodes (Ray's
        ``"SPREAD"`` strategy).

    Raises
    ------
    ValueError
        ``cpus_per_shard`` is negative, or so large that the actors cannot all be placed on
        the nodes (one line, before any actor starts: Ray would wait for ever).
    PersistError
        A shard that cannot be loaded (named); the actors started are stopped.
    """

    kind = "ray"

    def __init__(self, sources: dict, *, workers=None, ray_address=None, cpus_per_shard=None):
        import ray

        self._ray = ray
        if cpus_per_shard is not None:
            cpus_per_shard = check_float(cpus_per_shard, "cpus_per_shard", low=0.0)
        self._started, self.kind, _ = start_ray(workers, ray_address, preload=(__name__,))
        self.actors: dict = {}
        try:
            self.cpus_per_shard = shard_cpus(_node_cpus(ray), len(sources), cpus_per_shard)
            options = {"num_cpus": self.cpus_per_shard, "max_restarts": 0}
            if self.kind == "ray-cluster":
                options["scheduling_strategy"] = "SPREAD"
            self._cls = ray.remote(**options)(_ShardActor)
            for i, src in sources.items():
                self.actors[i] = self._cls.remote(src)
            self._wait_ready(list(sources), {i: s for i, s in sources.items()})
        except BaseException:
            self.close()
            raise
        logger.info(
            "%s: %d shard actors (%.2f CPU each)", self.kind, len(self.actors), self.cpus_per_shard
        )

    def _wait_ready(self, numbers, sources) -> None:
        for i in numbers:
            try:
                err = self._ray.get(self.actors[i].ready.remote())
            except self._ray.exceptions.RayActorError as exc:
                raise PersistError(
                    f"shard {i} ({_where(sources[i])}) could not start: {exc}"
                ) from None
            if isinstance(err, PersistError) or (err is not None and sources[i][0] != "new"):
                raise PersistError(
                    f"shard {i} ({_where(sources[i])}) cannot be loaded: "
                    f"{type(err).__name__}: {err}"
                )
            if err is not None:  # building a new shard failed: the builder's own error
                raise err

    def add(self, i: int, source) -> None:
        """A new actor for shard ``i`` (an actor it had is stopped)."""
        old = self.actors.pop(i, None)
        if old is not None:
            try:
                self._ray.kill(old)
            except Exception:  # noqa: BLE001 - it is dead already
                pass
        self.actors[i] = self._cls.remote(source)
        self._wait_ready([i], {i: source})

    def restart(self, i: int, source) -> None:
        """Replace shard ``i``'s actor by a new one loaded from ``source``."""
        logger.warning("restarting the Ray actor of shard %d from %s", i, _where(source))
        self.add(i, source)

    def drop(self, i: int) -> None:
        """Stop shard ``i``'s actor: its calls raise :class:`ShardDied` until a restart."""
        try:
            self._ray.kill(self.actors[i])
        except Exception:  # noqa: BLE001 - it is dead already
            pass

    def _args(self, args):
        ray = self._ray
        return tuple(
            ray.put(a) if isinstance(a, np.ndarray) and a.nbytes > _PUT_BYTES else a for a in args
        )

    def _get(self, refs: dict) -> dict:
        out, dead = {}, []
        ray = self._ray
        for i, r in refs.items():
            try:
                out[i] = ray.get(r)
            except ray.exceptions.RayActorError:
                dead.append(i)
        if dead:
            raise ShardDied(dead)
        return out

    def run(self, calls: dict) -> dict:
        refs = {i: self.actors[i].run.remote(m, *self._args(a)) for i, (m, a) in calls.items()}
        return self._get(refs)

    def blocks(self, numbers):
        return _RayView(self, list(numbers))

    def pids(self) -> dict:
        return self._get({i: a.pid.remote() for i, a in self.actors.items()})

    def close(self) -> None:
        # a Ray shut down already took its actors (and ray.kill would start a new Ray)
        for a in self.actors.values() if self._ray.is_initialized() else ():
            try:
                self._ray.kill(a)
            except Exception:  # noqa: BLE001 - closing: a dead actor is fine
                pass
        self.actors = {}
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
            self._started = False


class _RayView:
    """The shards' blocks for the scoring pipeline: one round trip per ``map``; walk steps are
    fused (each step's answer carries the next step's partial product)."""

    fuse = True

    def __init__(self, owner: RayShards, numbers):
        self._owner = owner
        self._numbers = numbers

    def map(self, method: str, *args) -> list:
        o = self._owner
        args = o._args(args)
        refs = {i: o.actors[i].call.remote(method, *args) for i in self._numbers}
        got = o._get(refs)
        return [got[i] for i in self._numbers]


def open_backend(sources, use_ray, ray_address, workers, cpus_per_shard=None):
    if not use_ray:
        shards = {i: open_shard(_named(i, s)) for i, s in sources.items()}
        return LocalShards(shards)
    return RayShards(
        sources, workers=workers, ray_address=ray_address, cpus_per_shard=cpus_per_shard
    )


def _named(i, source):
    """Open in this process, naming the shard in a load error."""
    try:
        return ("shard", open_shard(source))
    except PersistError as exc:
        raise PersistError(f"shard {i} cannot be loaded: {exc}") from None


def _where(source) -> str:
    kind = source[0]
    if kind == "dir":
        return repr(str(source[1]))
    if kind == "storage":
        return repr(source[1].location(source[2]))
    return kind
