"""A sharded MixPR corpus (``longctx index DIR --method mixpr --shards N``): the documents split
into ``N`` shards, each a :class:`~longctx.mixpr.index.MixPRIndex` of its own documents, searched
as one index by :class:`~longctx.corpus.shards.index.ShardedMixPRIndex` (one walk over every unit,
corpus-wide term statistics gathered from the shards at load).

Layout at ``out`` (beside ``corpus.json``)::

    indexes/shards.json     the corpus order of the documents, the shard and length of each
    indexes/shard-<i>/      shard i (a MixPRIndex folder: format 3, 2 with mappable=False)
    indexes/writing.json    "writing" while a build replaces files, then "done" (loads meanwhile
                            try again: :mod:`longctx.corpus.writers`)

Building: a new document goes to the shard holding the fewest characters so far (ties: the lowest
number; :func:`~longctx.corpus.shards.shard.assign_shards`), in the order given; a changed one is
updated in its shard; an unchanged one is skipped. Each shard with work is one job, run as a Ray
task (``workers`` at a time, a local Ray by default or a cluster at ``ray_address``) or in this
process: it loads the shard from the corpus location, removes what an interrupted build left in it,
updates and inserts, and stores it back (whole, then renamed into place or uploaded with its
manifest last). ``shards.json`` and ``corpus.json`` are written after every shard is stored, so a
build stopped half way leaves the corpus as it was, and the same command resumes it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
import time

from longctx._ray import use_ray_for
from longctx.corpus.manifest import CORPUS_MANIFEST, DocumentEntry, text_sha256
from longctx.corpus.shards.persist import MAX_SHARDS  # the load's limit: one source
from longctx.persist import PersistError
from longctx.persist.marks import INDEX_ROOT

logger = logging.getLogger(__name__)

__all__ = ["INDEX_ROOT", "build_sharded_corpus", "check_sharded_options", "load_sharded_corpus"]


def check_shards(shards, method: str) -> int | None:
    """``shards`` as an int in [1, MAX_SHARDS] (``None`` stays ``None``).

    Raises
    ------
    TypeError, ValueError
        Naming ``shards``; also when ``method`` is not ``"mixpr"``.
    """
    if shards is None:
        return None
    if isinstance(shards, bool) or not isinstance(shards, int):
        raise TypeError(f"shards must be an int, got {type(shards).__name__}")
    if not 1 <= shards <= MAX_SHARDS:
        raise ValueError(f"shards must be in [1, {MAX_SHARDS}], got {shards}")
    if method != "mixpr":
        raise ValueError(f"shards applies to method 'mixpr' only, not {method!r}")
    return shards


def check_sharded_options(options: dict) -> None:
    """Refuse the MixPR settings (``preset``, :class:`~longctx.mixpr.MixPRConfig` keywords) that
    a sharded index does not run, before any work: ``walk="multihop"`` (preset ``"multihop"``: its
    phrase graph is not split into shards) and ``graph="threshold"`` (preset ``"paper"``: the
    thresholded graph links units across shards through a product that is never split).

    Raises
    ------
    ValueError
        Naming the setting.
    """
    config = options_config(options)[0]  # (mappable: checked by check_mixpr_options)
    if config.graph != "factored":
        raise ValueError(
            f"graph={config.graph!r} (which preset 'paper' sets) is not available on a sharded "
            "MixPR corpus, the thresholded graph linking units across shards: build the corpus "
            "without --shards (one index), or (from Python, build_indexes) with graph='factored'"
        )
    if config.walk == "multihop":  # ("auto", the default, keeps PageRank on shards)
        raise ValueError(
            f"walk={config.walk!r} (which preset 'multihop' sets) is not available on a sharded "
            "MixPR corpus, its phrase graph not being split into shards: build the corpus "
            "without shards (--shards)"
        )


def options_config(options: dict):
    """``(config, chunk, mappable)`` of a sharded corpus's build options: the
    :class:`~longctx.mixpr.MixPRConfig` of their ``preset`` (default ``"default"``) and
    settings, and their ``chunk`` and ``mappable`` (default ``True`` each).

    Raises
    ------
    ValueError, TypeError
        A bad preset or setting (named, by ``MixPRConfig.from_preset``)."""
    from longctx.mixpr.config import MixPRConfig

    opts = dict(options)
    chunk, mappable = opts.pop("chunk", True), opts.pop("mappable", True)
    return MixPRConfig.from_preset(opts.pop("preset", "default"), **opts), chunk, mappable


def index_storage(storage):
    """The corpus's sharded index location (``out/indexes``) as its own storage root."""
    from longctx.corpus.storage import Storage

    return Storage(storage.location(INDEX_ROOT), storage.storage_options)


def corpus_config(storage, shard: int, options: dict):
    """``(config, chunk)`` of the corpus's existing shard ``shard`` (its ``config.json``,
    checked as a load checks it, :data:`longctx.mixpr.persist.ADDED_FIELDS` included): what a
    new shard of the corpus is built with, so that one corpus analyses its text one way (a
    corpus saved before a setting existed keeps that setting's former value, where today's
    default would build the new shard otherwise and the corpus would no longer load).

    Raises
    ------
    PersistError
        The file is missing, too large or damaged (named).
    """
    from longctx.corpus.shards.shard import shard_dir, shard_walk
    from longctx.mixpr.persist import parse_config

    rel = f"{INDEX_ROOT}/{shard_dir(shard)}/config.json"
    data = storage.read_json(rel)
    if data is None:
        raise PersistError(f"{storage.location(rel)!r} is missing: the shard is damaged")
    config, _, chunk, _ = parse_config(data, storage.location(rel))
    asked, asked_chunk, _ = options_config(options)
    asked = shard_walk(asked)  # what a shard runs (MixPRShard.from_texts)
    if config != asked or chunk != asked_chunk:
        changed = sorted(
            f.name
            for f in dataclasses.fields(config)
            if getattr(config, f.name) != getattr(asked, f.name)
        )
        logger.info(
            "new shards take the settings of shard %d, which differ from the build options' in "
            "%s (the corpus was saved by an earlier release)",
            shard,
            changed or ["chunk"],
        )
    return config, chunk


def _shard_job(storage, i: int, expected: list, changed: list, new: list, options: dict, files,
               corpus=None):  # fmt: skip
    """Bring shard ``i`` to ``expected`` + updates + inserts and store it; one record back. A
    shard made anew takes ``corpus`` (``(config, chunk)`` of its siblings, :func:`corpus_config`;
    ``None``: the corpus has no other shard, the build options')."""
    from longctx._rss import peak_rss_mib
    from longctx.corpus.shards.shard import MixPRShard, shard_dir
    from longctx.tokens import count_tokens

    t0 = time.perf_counter()
    config, chunk, mappable = options_config(options)  # mappable: format 3, actors map it
    if corpus is not None:
        config, chunk = corpus
    rel = f"{INDEX_ROOT}/{shard_dir(i)}"
    shard = None
    if storage.index_complete(rel):
        from longctx.corpus.shards.backends import open_shard

        shard = open_shard(("storage", storage, rel, None))
        held = list(shard.index.doc_ids)
        missing = [d for d in expected if d not in held]
        if missing:
            raise PersistError(
                f"{storage.location(rel)!r} lacks documents {missing[:5]} that "
                f"{INDEX_ROOT}/shards.json gives it: the shard is damaged; rebuild the corpus"
            )
        left = [d for d in held if d not in set(expected)]
        if left and not expected:
            shard = None  # every document goes (the new ones make the shard again)
        elif left:
            logger.info(
                "shard %d: removing %d documents that shards.json no longer gives it (removed "
                "from the corpus, or inserted by a build that stopped)",
                i,
                len(left),
            )
            shard.delete(left)
    elif expected:
        raise PersistError(f"{storage.location(rel)!r} is missing or half-written")
    if changed:
        shard.update([t for _, t in changed], [d for d, _ in changed], None)
    if new:
        if shard is None:
            shard = MixPRShard.from_texts(
                [t for _, t in new], ids=[d for d, _ in new], metadatas=None, config=config,
                chunk=chunk,
            )  # fmt: skip
        else:
            shard.insert([t for _, t in new], [d for d, _ in new], None)
    rec = {"shard": i, "pid": os.getpid(), "files": None, "has_terms": shard.has_terms()}
    # the manifest's token counts, here on the workers (the driver counted 500M tokens for ~15
    # minutes on one core after the shards were built)
    rec["tokens"] = {d: count_tokens(t) for d, t in (*changed, *new)}
    if files:
        rec["files"] = shard.files(mappable)
    else:
        shard.save_to(storage, rel, mappable)
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    rec["peak_rss_mib"] = peak_rss_mib()
    return rec


def build_sharded_corpus(
    docs, storage, manifest, options: dict, shards: int, bar, *, use_ray, workers, ray_address,
    removed=(),
) -> dict:  # fmt: skip
    """Remove the documents ``removed`` (ids of the corpus), insert, update or skip every
    ``(doc_id, text)`` of ``docs`` in the sharded corpus at ``storage``. Returns ``{"built",
    "skipped", "removed", "seconds", "backend", "workers", "peaks"}``.

    Raises
    ------
    PersistError
        ``shards.json`` is damaged, holds another number of shards, or a shard disagrees with
        it.
    ValueError
        The removals would leave a shard without documents (not supported: build the corpus
        again into another ``out``), before any shard changes.
    """
    from longctx.corpus.shards.persist import SHARDS_FILE, manifest_of_order, read_shards_manifest
    from longctx.corpus.shards.shard import assign_shards

    t0 = time.perf_counter()
    rel_manifest = f"{INDEX_ROOT}/{SHARDS_FILE}"
    raw = storage.read_json(rel_manifest) if manifest.entries else None
    order: list = []
    if raw is not None:
        n, order = read_shards_manifest(raw, storage.location(rel_manifest))
        if n != shards:
            raise PersistError(
                f"{storage.location(rel_manifest)!r} holds {n} shards, not {shards}: choose "
                "another out"
            )
    from longctx.corpus.shards.single import sort_documents, stale_documents

    in_order = {d for d, _, _ in order}
    stale = stale_documents(in_order, manifest, docs, removed)
    gone = (set(removed) & in_order) | set(stale)
    touched = {i for d, i, _ in order if d in gone}
    order = [x for x in order if x[0] not in gone]
    shard_of = {d: s for d, s, _ in order}
    chars = {d: c for d, _, c in order}
    new, changed, skipped = sort_documents(docs, shard_of, manifest)
    sizes = [0] * shards
    for d, s in shard_of.items():
        sizes[s] += chars[d]
    where = assign_shards([len(t) for _, t in new], shards, sizes)
    emptied = sorted(touched - set(shard_of.values()) - set(where))
    if emptied:
        raise ValueError(
            f"removing the documents no longer in their folder would leave shard(s) {emptied} "
            "empty, which a sharded corpus does not support: build the corpus again into "
            "another out"
        )
    if removed:  # the manifest first: it never names a document the shards lack
        for doc_id in removed:
            manifest.entries.pop(doc_id, None)
        storage.write_json(CORPUS_MANIFEST, manifest.to_json())
    jobs = []
    for i in range(shards):
        ins = [x for x, w in zip(new, where) if w == i]
        upd = [x for x in changed if shard_of[x[0]] == i]
        if ins or upd or i in touched:
            expected = [d for d, s, _ in order if s == i]
            jobs.append((i, expected, upd, ins))
    backend, n_workers, peaks, tokens = "sequential", 1, {}, {}
    corpus = None
    if shard_of and any(not exp and ins for _, exp, _, ins in jobs):  # a shard made anew
        corpus = corpus_config(storage, min(shard_of.values()), options)
    if jobs:
        backend, n_workers, recs = _run_jobs(
            storage, jobs, options, corpus, use_ray=use_ray, workers=workers,
            ray_address=ray_address,
        )  # fmt: skip
        if not order and not any(rec["has_terms"] for rec in recs):
            raise ValueError(
                "texts hold no term to index once stop words are removed (stop_words="
                f"{options.get('stop_words', 'the preset default')!r})"
            )
        for rec in recs:
            peaks[rec["pid"]] = max(peaks.get(rec["pid"], 0.0), rec["peak_rss_mib"])
            tokens.update(rec["tokens"])
            if rec["files"] is not None:
                storage.put_files(rec["files"], f"{INDEX_ROOT}/shard-{rec['shard']}")
    seconds = round(time.perf_counter() - t0, 3)
    work = changed + new
    if work or gone:
        for (d, _), s in zip(new, where):
            shard_of[d] = s
        for d, t in work:
            chars[d] = len(t)
        doc_order = [d for d, _, _ in order] + [d for d, _ in new]
        storage.write_json(rel_manifest, manifest_of_order(shards, doc_order, shard_of, chars))
    for doc_id, text in work:
        manifest.entries[doc_id] = DocumentEntry(
            doc_id=doc_id,
            path=f"{INDEX_ROOT}/shard-{shard_of[doc_id]}",
            status="done",
            seconds=seconds,
            tokens=tokens[doc_id],  # counted by its shard's job (_shard_job)
            error=None,
            text_sha256=text_sha256(text),
            extra={"shard": shard_of[doc_id]},
        )
        bar.update(1)
    return {
        "built": [d for d, _ in work],
        "skipped": skipped,
        "removed": [*removed, *stale],
        "seconds": seconds,
        "backend": backend,
        "workers": n_workers,
        "peaks": peaks,
    }


def _run_jobs(storage, jobs, options, corpus, *, use_ray, workers, ray_address):
    """Run the shard jobs on Ray tasks (or in this process); ``(backend, workers, records)``."""
    files = not storage.shared
    if use_ray_for(use_ray, ray_address, f"{len(jobs)} shards"):
        import ray

        from longctx._ray import start_ray

        started, backend, cpus = start_ray(workers, ray_address, preload=(__name__,))
        try:
            n = max(1, min(workers or cpus, len(jobs)))
            task = ray.remote(num_cpus=1)(_shard_job)
            pending, queue, recs = [], list(jobs), []
            while queue or pending:
                while queue and len(pending) < n:
                    i, exp, upd, ins = queue.pop(0)
                    pending.append(task.remote(storage, i, exp, upd, ins, options, files, corpus))
                done, pending = ray.wait(pending, num_returns=1)
                recs.append(ray.get(done[0]))
            return backend, n, recs
        finally:
            if started:
                ray.shutdown()
    recs = [
        _shard_job(storage, i, exp, upd, ins, options, files, corpus) for i, exp, upd, ins in jobs
    ]
    return "sequential", 1, recs


def load_sharded_corpus(storage, manifest, *, use_ray=None, ray_address=None, workers=None,
                        **load_kwargs):  # fmt: skip
    """The corpus's :class:`~longctx.corpus.shards.index.ShardedMixPRIndex`, checked against
    ``corpus.json`` (every done document in the shard it names, with the text its digest says).

    Raises
    ------
    PersistError
        A missing or damaged ``shards.json`` or shard (named), or an entry that does not match;
        a local ``indexes`` folder that is a link, or was replaced while it was read.
    """
    from longctx.corpus.shards.index import ShardedMixPRIndex
    from longctx.corpus.shards.persist import load_sharded_once

    before = _index_root_identity(storage)  # a link: refused (it was followed: session 20)
    # (load_corpus tries again while a rebuild is in progress: not this load on its own)
    index = load_sharded_once(
        ShardedMixPRIndex, index_storage(storage), use_ray=use_ray, ray_address=ray_address,
        workers=workers, **load_kwargs,
    )  # fmt: skip
    try:
        if _index_root_identity(storage) != before:
            raise PersistError(
                f"{storage.location(INDEX_ROOT)!r} was replaced while the sharded index was read "
                "from it (another folder or a link put in its place): refused; load again"
            )
        where = storage.location(CORPUS_MANIFEST)
        digests = index.digests()
        for doc_id, e in manifest.entries.items():
            if e.status != "done":
                continue
            if doc_id not in digests:
                raise PersistError(f"{where!r}: document {doc_id!r} is not in the sharded index")
            if e.path != f"{INDEX_ROOT}/shard-{index.shard_of(doc_id)}":
                raise PersistError(f"{where!r}: field 'path' of document {doc_id!r} is wrong")
            if digests[doc_id] != e.text_sha256:
                raise PersistError(
                    f"{where!r}: field 'text_sha256' of document {doc_id!r} does not match the "
                    "index's text (damaged or forged)"
                )
    except BaseException:
        index.close()
        raise
    return index


def _index_root_identity(storage) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of a local corpus's ``indexes`` folder (``None``: a remote corpus,
    or no such folder), taken before and after a sharded load, which opens ``shards.json`` and
    the shard folders by path below it: a link or another folder swapped in after the check
    (a time-of-check / time-of-use race, session 20 review) is seen unless it was swapped back
    before the second look. This narrows the window, it does not close it (that would need
    every file of the load opened relative to one descriptor of the folder).

    Raises
    ------
    PersistError
        ``indexes`` is a symbolic link (:meth:`~longctx.corpus.storage.Storage.local_index`,
        then an ``lstat``, which never follows one).
    """
    if storage.local is None:
        return None
    p = storage.local_index(INDEX_ROOT)
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise PersistError(
            f"{str(p)!r} is a symbolic link: the indexes of a corpus are read from inside its "
            "folder, never through a link (refused)"
        )
    return st.st_dev, st.st_ino
