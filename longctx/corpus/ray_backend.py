"""Running a corpus build on Ray: a local Ray for the run, or an existing cluster.

- Model-backed methods (``garlic``, ``diversity``): an actor pool
  (:class:`ray.util.ActorPool`), one :class:`longctx.corpus.methods.Builder` per actor, so each
  worker loads its model once; each actor asks for ``num_cpus=1`` and ``num_gpus=gpus_per_worker``
  (one worker per GPU with ``gpus_per_worker=1``).
- ``mixpr`` (CPU only, no model): Ray tasks (``num_cpus=1``), at most ``2 * workers`` in flight.

Workers write each finished index to the corpus location themselves (a shared folder or an
object store); with ``memory://`` (one process's memory) they return the files and the driver
writes them.

Ray is started by :func:`longctx._ray.start_ray` (each worker imports this module at start-up,
from the installed package; Ray's start-up notices only at INFO).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from longctx._ray import start_ray
from longctx.corpus.jobs import run_one
from longctx.corpus.methods import MODEL_METHODS, make_builder

logger = logging.getLogger(__name__)

__all__ = ["run_on_ray"]


class _Worker:
    """A Ray actor holding one builder (its model loaded on the first document)."""

    def __init__(self, method: str, options: dict):
        self.builder = make_builder(method, options)

    def run(self, storage, doc_id, rel, text, return_files):
        return run_one(self.builder, storage, doc_id, rel, text, return_files)


def _task(method, options, storage, doc_id, rel, text, return_files):
    return run_one(make_builder(method, options), storage, doc_id, rel, text, return_files)


def _default_workers(ray, gpus_per_worker: float, local: bool) -> int:
    if local:
        return os.cpu_count() or 1
    res = ray.cluster_resources()
    cpus = int(res.get("CPU", 1))
    if gpus_per_worker:
        return max(1, min(cpus, int(res.get("GPU", 0) // gpus_per_worker)))
    return max(1, cpus)


def run_on_ray(
    method: str,
    options: dict,
    storage,
    jobs: list,
    *,
    workers: int | None,
    ray_address: str | None,
    gpus_per_worker: float,
    return_files: bool,
) -> Iterator:
    """Generator: first yields ``(backend, n_workers)`` once Ray is up, then one record per
    document as documents finish (any order). Shuts down a Ray it started when closed."""
    import ray
    from ray.util import ActorPool

    started, backend, _ = start_ray(
        workers,
        ray_address,
        preload=(__name__,),
        num_gpus=None if gpus_per_worker else 0,
    )
    actors = []
    try:
        n_workers = workers or _default_workers(ray, gpus_per_worker, backend == "ray-local")
        n_workers = max(1, min(n_workers, len(jobs)))
        if method in MODEL_METHODS:
            # more actors than the cluster can place would wait forever with their documents
            fit = _default_workers(ray, gpus_per_worker, local=False)
            if fit < n_workers:
                logger.warning(
                    "the Ray cluster holds %d workers of 1 CPU / %s GPU, not %d: using %d",
                    fit,
                    gpus_per_worker,
                    n_workers,
                    fit,
                )
                n_workers = fit
        logger.info("%s: %d workers for %d documents (%s)", backend, n_workers, len(jobs), method)
        yield backend, n_workers
        if method in MODEL_METHODS:
            actor_cls = ray.remote(num_cpus=1, num_gpus=gpus_per_worker)(_Worker)
            actors = [actor_cls.remote(method, options) for _ in range(n_workers)]
            pool = ActorPool(actors)
            yield from pool.map_unordered(
                lambda a, job: a.run.remote(storage, *job, return_files), jobs
            )
        else:
            task = ray.remote(num_cpus=1)(_task)
            pending, queue = [], list(jobs)
            while queue or pending:
                while queue and len(pending) < 2 * n_workers:
                    job = queue.pop(0)
                    pending.append(task.remote(method, options, storage, *job, return_files))
                done, pending = ray.wait(pending, num_returns=1)
                yield ray.get(done[0])
    finally:
        for a in actors:
            ray.kill(a)
        if started:
            ray.shutdown()
