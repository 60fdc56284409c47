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
import os

import numpy as np

from longctx._ray import start_ray
from longctx.corpus.shards.shard import MixPRShard
from longctx.persist import PersistError

logger = logging.getLogger(__name__)

__all__ = ["LocalShards", "RayShards", "ShardDied", "open_shard"]

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
    cpus_per_shard : float, optional
        ``num_cpus`` of each actor; default: the local Ray's CPUs shared among the shards (at
        most 1 each), or 1 on a cluster.

    Raises
    ------
    PersistError
        A shard that cannot be loaded (named); the actors started are stopped.
    """

    kind = "ray"

    def __init__(self, sources: dict, *, workers=None, ray_address=None, cpus_per_shard=None):
        import ray

        self._ray = ray
        self._started, self.kind, cpus = start_ray(workers, ray_address, preload=(__name__,))
        n = max(1, len(sources))
        if cpus_per_shard is None:
            cpus_per_shard = min(1.0, cpus / n) if self.kind == "ray-local" else 1.0
        self.cpus_per_shard = float(cpus_per_shard)
        self._cls = ray.remote(num_cpus=self.cpus_per_shard, max_restarts=0)(_ShardActor)
        self.actors: dict = {}
        try:
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


def open_backend(sources, use_ray, ray_address, workers):
    if not use_ray:
        shards = {i: open_shard(_named(i, s)) for i, s in sources.items()}
        return LocalShards(shards)
    return RayShards(sources, workers=workers, ray_address=ray_address)


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
