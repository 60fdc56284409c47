"""``build_indexes``: one persisted index per document of a corpus, resumable, on Ray or in-process.

See :mod:`longctx.corpus` for the layout of a corpus and :func:`build_indexes` for the rules.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from longctx._ray import use_ray_for
from longctx._rss import peak_rss_mib
from longctx.corpus.documents import read_corpus_input, safe_component
from longctx.corpus.jobs import run_one
from longctx.corpus.manifest import (
    CORPUS_MANIFEST,
    CorpusManifest,
    DocumentEntry,
    text_sha256,
)
from longctx.corpus.methods import (
    check_method,
    describe_options,
    make_builder,
    options_fingerprint,
)
from longctx.corpus.storage import Storage, open_storage
from longctx.persist.marks import INDEX_ROOT

logger = logging.getLogger(__name__)

__all__ = ["CorpusBuildResult", "build_indexes"]


@dataclass(frozen=True)
class CorpusBuildResult:
    """What :func:`build_indexes` did.

    Attributes
    ----------
    built, skipped, failed : tuple of str
        Document ids built now, skipped (already done in ``out``), failed now.
    removed : tuple of str
        Document ids removed from the corpus now: read before from a folder, glob or JSONL file
        that this call read again, and no longer in it.
    unreadable : tuple of str
        Files of a folder or glob skipped because they cannot be read as text (each logged as
        one warning); a document of the corpus among them stays as it was.
    errors : dict str -> str
        ``"ExceptionType: message"`` per failed document.
    seconds : float
        Wall-clock seconds of the whole call (Ray start-up included).
    backend : str
        ``"ray-local"``, ``"ray-cluster"`` or ``"sequential"``.
    workers : int
        Workers used (1 for ``"sequential"``).
    out : str
        The corpus location.
    peak_rss_mib : dict int -> float
        Peak resident memory (MiB) of each worker process that built a document, by process id
        (the driver's own when sequential).
    passed_over : tuple of longctx.corpus.documents.SkippedInFolder
        Per folder read, the hidden files and folders and the links to folders its walk passed
        over (not read, by design); folders with none are left out.
    """

    built: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: tuple[str, ...]
    errors: dict = field(default_factory=dict)
    seconds: float = 0.0
    backend: str = "sequential"
    workers: int = 1
    out: str = ""
    peak_rss_mib: dict = field(default_factory=dict)
    removed: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()
    passed_over: tuple = ()

    def summary(self) -> str:
        """One line: ``built N, unchanged N, [removed N, ][unreadable N, ]failed N in S s
        (backend, W workers)``: ``unchanged`` counts :attr:`skipped` (already done in ``out``),
        ``unreadable`` the files not read as text (:attr:`unreadable`)."""
        gone = f"removed {len(self.removed)}, " if self.removed else ""
        bad = f"unreadable {len(self.unreadable)}, " if self.unreadable else ""
        return (
            f"built {len(self.built)}, unchanged {len(self.skipped)}, {gone}{bad}"
            f"failed {len(self.failed)} "
            f"in {self.seconds:.1f} s ({self.backend}, {self.workers} worker"
            f"{'s' if self.workers != 1 else ''})"
        )


#: Options of a corpus that ``longctx index`` sets with a flag of its own (not ``--KEY VALUE``).
_FLAGS = {("chunk", False): "--whole-documents", ("encoder", False): "--no-embeddings"}


def _as_flags(options: dict) -> str:
    """A corpus's recorded ``options`` as ``longctx index`` flags (``--shards 2``,
    ``--whole-documents``), in the order given; ``none`` when there are none."""
    out = []
    for k, v in options.items():
        flag = _FLAGS.get((k, v)) if isinstance(v, bool) else None
        out.append(flag or f"--{str(k).replace('_', '-')} {v}")
    return " ".join(out) or "none"


def _run_sequential(method, options, storage, jobs, return_files) -> Iterator[dict]:
    builder = make_builder(method, options)
    for doc_id, rel, text in jobs:
        yield run_one(builder, storage, doc_id, rel, text, return_files)


def _build_mixpr(
    docs, storage, manifest, options, progress, workers, t0, *, shards=None, use_ray=None,
    ray_address=None, removed=(),
) -> tuple[CorpusBuildResult, bool]:  # fmt: skip
    """A MixPR corpus: one index over every document (:mod:`longctx.corpus.shards.single`),
    built in this process, or ``shards`` shards (:mod:`longctx.corpus.shards.build`), each
    shard's work a Ray task; the documents ``removed`` are deleted from it. Returns the result and
    whether the index changed."""
    from tqdm.auto import tqdm

    from longctx.corpus.shards.single import build_mixpr_corpus

    if shards is None and (workers not in (None, 1) or ray_address is not None):
        logger.info(
            "MixPR builds one index over the whole corpus in this process; workers=%s is not "
            "used, nor ray_address=%s (they apply to sharded MixPR corpora, shards=, and to the "
            "diversity and GARLIC corpora)",
            workers,
            ray_address,
        )
    if shards is None and ray_address is not None:  # a flag that does nothing: said (issue 44)
        warnings.warn(
            f"ray_address={ray_address!r} applies to sharded MixPR corpora (shards=) and to the "
            "diversity and GARLIC corpora: this MixPR corpus is built in this process",
            stacklevel=3,
        )
    show = progress if progress is not None else sys.stderr.isatty()
    bar = tqdm(total=len(docs), unit="doc", disable=not show, file=sys.stderr)
    try:
        if shards is None:
            done = build_mixpr_corpus(docs, storage, manifest, options, bar, removed)
            done.update(backend="in-process", workers=1, peaks={os.getpid(): peak_rss_mib()})
        else:
            from longctx.corpus.shards.build import build_sharded_corpus

            done = build_sharded_corpus(
                docs, storage, manifest, options, shards, bar, use_ray=use_ray,
                workers=workers, ray_address=ray_address, removed=removed,
            )  # fmt: skip
            done["peaks"][os.getpid()] = peak_rss_mib()
        bar.update(len(done["skipped"]))
    finally:
        bar.close()
    result = CorpusBuildResult(
        built=tuple(done["built"]),
        skipped=tuple(done["skipped"]),
        failed=(),
        errors={},
        seconds=round(time.perf_counter() - t0, 3),
        backend=done["backend"],
        workers=done["workers"],
        out=storage.url,
        peak_rss_mib=done["peaks"],
        removed=tuple(done["removed"]),
    )
    return result, bool(done["built"] or done["removed"])


def _remove_documents(storage, manifest, removed) -> None:
    """Drop the documents ``removed`` from a corpus of one index per document: their manifest
    entries (the manifest written first, so that it never names a folder that is gone), then
    their index folders."""
    paths = [manifest.entries.pop(doc_id).path for doc_id in removed]
    storage.write_json(CORPUS_MANIFEST, manifest.to_json())
    for path in paths:
        storage.remove_index(path)


def _record_sources(manifest, inp) -> bool:
    """Each entry of a document read now gets its source (see
    :class:`longctx.corpus.manifest.DocumentEntry`); whether one changed."""
    changed = False
    for doc_id, _ in inp.docs:
        e = manifest.entries.get(doc_id)
        if e is not None and e.source != inp.sources.get(doc_id):
            e.source = inp.sources.get(doc_id)
            changed = True
    return changed


# -- the driver ----------------------------------------------------------------------------------
def _check_out_is_ours(storage: Storage) -> None:
    """Refuse a non-empty ``out`` that is not a corpus (nothing of the user's is overwritten)."""
    if storage.local is not None:
        root = storage.local
        if root.exists() and not root.is_dir():
            raise ValueError(f"out {storage.url!r} exists and is not a folder")
        if root.is_dir() and any(p.name not in (".partial", INDEX_ROOT) for p in root.iterdir()):
            raise ValueError(
                f"out {storage.url!r} holds files and no {CORPUS_MANIFEST}: give an empty or "
                "new folder (nothing there is overwritten)"
            )
        return
    path = storage._remote("")
    if storage.fs.exists(path) and storage.fs.ls(path, detail=False):
        names = {p.rstrip("/").rsplit("/", 1)[-1] for p in storage.fs.ls(path, detail=False)}
        if names - {INDEX_ROOT}:
            raise ValueError(
                f"out {storage.url!r} holds files and no {CORPUS_MANIFEST}: give an empty or "
                "new location"
            )


def _check_positive(value, name, *, allow_none=True, integer=True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if integer and int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return value


def build_indexes(
    documents,
    method: str,
    out,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    gpus_per_worker: float = 0,
    use_ray: bool | None = None,
    progress: bool | None = None,
    storage_options: dict | None = None,
    shards: int | None = None,
    **method_options,
) -> CorpusBuildResult:
    """Build one persisted index per document into ``out``; resume what is there.

    Parameters
    ----------
    documents :
        ``(doc_id, text)`` pairs, a folder, a glob, a JSONL file (``id``/``text`` fields) or a
        list of paths: see :func:`longctx.corpus.documents.read_documents`. Ids are checked
        (unsafe or duplicate ids raise) and kept as given; each index lives in
        ``indexes/<safe_component(doc_id)>``.
    method : {"mixpr", "diversity", "garlic"}
        ``"mixpr"``: one :class:`longctx.MixPRIndex` over every document, at
        ``indexes/mixpr`` (Alonso & Millidge 2024, arXiv:2412.06078), built in this process
        (``workers`` and Ray are not used), or with ``shards`` a sharded index at ``indexes/``;
        a later call inserts the new documents and updates the changed ones;
        ``"diversity"``: :class:`longctx.DiversityIndex` (sentence embeddings, MMR/FPS);
        ``"garlic"``: :func:`longctx.garlic.build_hwdag` (Wang et al. 2024, arXiv:2410.04790,
        sec. 3.1). ``"youra"`` is refused: it has no query-independent work to persist.
    out : str, os.PathLike or fsspec URL
        A local folder (new, empty, or a corpus) or a URL (``s3://``, ``gs://``, ``file://``,
        ``memory://``). Holds ``corpus.json`` (the manifest) and ``indexes/``. A ``memory://``
        corpus lives in this process only (logged as a warning; the CLI refuses it). A corpus
        whose documents all failed may be built again with other options (its manifest is
        replaced); one holding a finished index may not.
    workers : int, optional
        Ray workers (actors for model-backed methods, concurrent tasks for MixPR). Default: this
        machine's CPU count (local Ray), or the cluster's GPUs / ``gpus_per_worker`` (or CPUs).
        A local Ray is started with ``num_cpus=workers``.
    ray_address : str, optional
        An existing Ray cluster (``"ray://head:10001"``, ``"auto"``). Default: a local Ray
        started for this call and shut down after it (or the Ray this process already runs).
    gpus_per_worker : float, default 0
        ``num_gpus`` of each worker (GARLIC / diversity put their model on ``cuda`` then).
    use_ray : bool, optional
        ``None`` (default): Ray when it is installed, else sequential in this process (logged).
        ``False``: always sequential. ``True``: Ray or ``ModuleNotFoundError``.
    progress : bool, optional
        A tqdm bar over documents on stderr (default: when stderr is a terminal).
    storage_options : dict, optional
        ``fsspec`` options of ``out`` (credentials, endpoint).
    shards : int, optional
        ``"mixpr"`` only: split the corpus into this many shards
        (:mod:`longctx.corpus.shards.build`), each a MixPR index of its documents, searched as
        one index (:class:`longctx.corpus.shards.index.ShardedMixPRIndex`: in-process, or one Ray actor
        per shard on a cluster);
        each shard's work is a Ray task (``workers`` at a time). A corpus keeps the number of
        shards it was built with.
    **method_options :
        mixpr: :meth:`MixPRIndex.from_texts` keywords (``preset``, ``max_words``...), and
        ``mappable`` (default ``True``): the index (each shard) saved in format 3, which a
        sharded load maps (``False``: format 2, read whole)
        (:meth:`MixPRShard.load <longctx.corpus.shards.shard.MixPRShard.load>`);
        diversity: ``encoder``, ``device`` and :meth:`DiversityIndex.from_texts` keywords;
        garlic: ``model`` (name/path for :func:`longctx.models.load_causal_lm`, or a picklable
        callable returning ``(model, tokenizer)``), ``device``, ``encoder`` (``False``: no node
        embeddings) and :func:`build_hwdag` keywords. Loaded once per worker.

    Returns
    -------
    CorpusBuildResult

    Notes
    -----
    Builds of one corpus follow each other: from reading the previous ``corpus.json`` to writing
    the last file, a build holds the corpus's build lock
    (:func:`longctx.corpus.writers.building`: ``indexes/.build.lock``, an advisory ``flock``
    across processes and a lock among this process's threads). A second build (another thread,
    process or terminal) waits for the first, saying so once at INFO level (the running build's
    process, host and start), then updates its result; ``seconds`` counts the wait. A corpus at an
    fsspec URL is not locked: two builds of it at once are not serialized.

    Raises
    ------
    ValueError, TypeError
        Unknown method or option, a bad option value (the method's settings are built first:
        :func:`longctx.corpus.methods.check_method`), bad or duplicate document ids, empty
        texts, an ``out`` that holds other files, a corpus in ``out`` holding finished indexes
        built with another method or options: all before any index is built or recorded. A document that fails while building is not raised: it is recorded
        (``status="failed"``, ``error``) and the others go on.
    longctx.persist.PersistError
        ``out/corpus.json`` is damaged or of another format version.
    """
    t0 = time.perf_counter()
    check_method(method, method_options)
    from longctx.corpus.shards.build import check_sharded_options, check_shards

    shards = check_shards(shards, method)
    if shards is not None:
        check_sharded_options(method_options)
    _check_positive(workers, "workers")
    if workers is not None and workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    _check_positive(gpus_per_worker, "gpus_per_worker", allow_none=False, integer=False)
    if gpus_per_worker < 0:
        raise ValueError(f"gpus_per_worker must be >= 0, got {gpus_per_worker}")
    if ray_address is not None and (not isinstance(ray_address, str) or not ray_address):
        raise ValueError(f"ray_address must be a non-empty str, got {ray_address!r}")
    if gpus_per_worker and "device" not in method_options and method != "mixpr":
        method_options["device"] = "cuda"
    inp = read_corpus_input(documents)
    storage = open_storage(out, storage_options)
    checked = storage.local is not None and not (storage.local / CORPUS_MANIFEST).is_file()
    if checked:  # a local first build: before the lock's file is made in out
        _check_out_is_ours(storage)
    from longctx.corpus.writers import building

    # the whole build, from reading the previous manifest to writing the last file, holds the
    # corpus alone: a second build waits, then updates this one's result (longctx.corpus.writers)
    with building(storage, INDEX_ROOT):
        return _build_locked(
            inp, method, storage, method_options, shards, t0, checked=checked, workers=workers,
            ray_address=ray_address, gpus_per_worker=gpus_per_worker, use_ray=use_ray,
            progress=progress,
        )  # fmt: skip


def _build_locked(
    inp, method, storage, method_options, shards, t0, *, checked, workers, ray_address,
    gpus_per_worker, use_ray, progress,
) -> CorpusBuildResult:  # fmt: skip
    """The body of :func:`build_indexes`, its arguments checked, the corpus's build lock held
    (``checked``: ``out`` was found to be ours before the lock, on a local first build)."""
    docs = inp.docs
    recorded = method_options if shards is None else {**method_options, "shards": shards}
    fingerprint = options_fingerprint(method, recorded)
    raw = storage.read_json(CORPUS_MANIFEST)
    if raw is None:
        if not checked:  # a remote out (not locked), or a corpus.json gone meanwhile
            _check_out_is_ours(storage)
        manifest = CorpusManifest(method, describe_options(recorded), fingerprint)
    else:
        manifest = CorpusManifest.from_json(raw, storage.location(CORPUS_MANIFEST))
        if manifest.method != method or manifest.options_sha256 != fingerprint:
            if any(e.status == "done" for e in manifest.entries.values()):
                raise ValueError(
                    f"out {storage.url!r} holds a {manifest.method!r} corpus built with options "
                    f"{manifest.options}; this call asks for {method!r} with "
                    f"{describe_options(recorded)}: choose another out or give the same "
                    f"options ({_as_flags(manifest.options)})"
                )
            # nothing finished there (every document failed): nothing to keep consistent
            logger.info(
                "%s holds no finished index (method %r, options %s): building with %r, %s",
                storage.url,
                manifest.method,
                manifest.options,
                method,
                describe_options(recorded),
            )
            manifest = CorpusManifest(method, describe_options(recorded), fingerprint)
    if not storage.shared:
        logger.warning(
            "out %r is an in-memory file system: the corpus lives in this process only and is "
            "lost when it exits",
            storage.url,
        )

    held_now = {d for d, _ in docs} | set(inp.skipped)
    removed = [
        d for d, e in manifest.entries.items() if e.source in inp.named and d not in held_now
    ]
    if removed:
        logger.info(
            "%s: removing %d documents no longer in their source", storage.url, len(removed)
        )

    if method == "mixpr":
        from longctx.corpus.shards.build import index_storage
        from longctx.corpus.writers import writing

        # the index root is marked until the index and corpus.json are replaced: a load meanwhile
        # tries again (longctx.corpus.writers), not reporting files of two builds as damage
        with writing(index_storage(storage), "a rebuild of this corpus"):
            result, changed = _build_mixpr(
                docs, storage, manifest, method_options, progress, workers, t0, shards=shards,
                use_ray=use_ray, ray_address=ray_address, removed=removed,
            )  # fmt: skip
            if _record_sources(manifest, inp) or changed:
                manifest.reorder([d for d, _ in docs])
                storage.write_json(CORPUS_MANIFEST, manifest.to_json())
        result = replace(result, unreadable=inp.skipped, passed_over=inp.passed_over)
        logger.info("%s: %s", storage.url, result.summary())
        return result

    if removed:
        _remove_documents(storage, manifest, removed)

    jobs, skipped = [], []
    for doc_id, text in docs:
        rel = f"{INDEX_ROOT}/{safe_component(doc_id)}"
        e = manifest.entries.get(doc_id)
        if (
            e is not None
            and e.status == "done"
            and e.text_sha256 == text_sha256(text)
            and storage.index_complete(e.path)
        ):
            skipped.append(doc_id)
        else:
            jobs.append((doc_id, rel, text))
    shas = {doc_id: text_sha256(text) for doc_id, _, text in jobs}

    backend, n_workers, runner = "sequential", 1, None
    return_files = not storage.shared
    if jobs and use_ray_for(use_ray, ray_address, f"{len(jobs)} documents"):
        from longctx.corpus.ray_backend import run_on_ray

        runner = run_on_ray(
            method,
            method_options,
            storage,
            jobs,
            workers=workers,
            ray_address=ray_address,
            gpus_per_worker=gpus_per_worker,
            return_files=return_files,
        )
        backend, n_workers = next(runner)  # starts Ray, says what it runs on
    if runner is None and jobs:
        if use_ray is False:
            logger.info("use_ray=False: building %d documents sequentially", len(jobs))
        runner = _run_sequential(method, method_options, storage, jobs, return_files)

    from tqdm.auto import tqdm

    show = progress if progress is not None else sys.stderr.isatty()
    bar = tqdm(total=len(docs), initial=len(skipped), unit="doc", disable=not show, file=sys.stderr)
    built, failed, errors, peaks = [], [], {}, {}
    rels = {doc_id: rel for doc_id, rel, _ in jobs}
    try:
        for rec in runner or ():
            doc_id = rec["doc_id"]
            pid, peak = rec.pop("worker", (0, 0.0))
            peaks[pid] = max(peaks.get(pid, 0.0), peak)
            if rec["status"] == "done" and "files" in rec:
                try:
                    storage.put_files(rec.pop("files"), rels[doc_id])
                except Exception as exc:  # noqa: BLE001
                    rec.update(status="failed", error=f"{type(exc).__name__}: {exc}")
            rec.pop("files", None)
            manifest.entries[doc_id] = DocumentEntry(
                doc_id=doc_id,
                path=rels[doc_id],
                status=rec["status"],
                seconds=rec["seconds"],
                tokens=rec["tokens"],
                error=rec["error"],
                text_sha256=shas[doc_id],
                extra=rec.get("extra") or {},
                source=inp.sources.get(doc_id),
            )
            manifest.reorder([d for d, _ in docs])
            storage.write_json(CORPUS_MANIFEST, manifest.to_json())
            if rec["status"] == "done":
                built.append(doc_id)
            else:
                failed.append(doc_id)
                errors[doc_id] = rec["error"]
            bar.update(1)
            bar.set_postfix(failed=len(failed), refresh=False)
    finally:
        bar.close()
        if runner is not None:
            runner.close()
    result = CorpusBuildResult(
        built=tuple(built),
        skipped=tuple(skipped),
        failed=tuple(failed),
        errors=errors,
        seconds=round(time.perf_counter() - t0, 3),
        backend=backend,
        workers=n_workers,
        out=storage.url,
        peak_rss_mib=peaks,
        removed=tuple(removed),
        unreadable=inp.skipped,
        passed_over=inp.passed_over,
    )
    if _record_sources(manifest, inp):
        storage.write_json(CORPUS_MANIFEST, manifest.to_json())
    logger.info("%s: %s", storage.url, result.summary())
    return result
