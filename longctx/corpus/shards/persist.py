"""Saving and loading a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex` (layout in
:mod:`longctx.corpus.shards.index`): every shard is a :class:`~longctx.mixpr.index.MixPRIndex`
folder, read back by its own validated loader; ``shards.json`` (the corpus order of the documents,
the shard and length of each) is checked field by field and against the shards (untrusted input: a
damaged or inconsistent file is a :class:`~longctx.persist.PersistError` naming it)."""

from __future__ import annotations

import logging

from longctx.corpus.shards.shard import ASSIGNMENT, shard_dir
from longctx.persist import MANIFEST, PersistError, check_format
from longctx.persist.corpus_manifest import check_saved_documents
from longctx.persist.marks import check_outside_corpus, file_stamp

logger = logging.getLogger(__name__)

__all__ = [
    "SHARDS_FILE",
    "load_sharded",
    "manifest_of_order",
    "read_shards_manifest",
    "save_sharded",
]

SHARDS_FILE = "shards.json"
FORMAT = "longctx.mixpr.shards"
FORMAT_VERSION = 1
#: Most shards of one index.
MAX_SHARDS = 4096


def save_sharded(index, out, storage_options=None) -> None:
    """Write ``index`` at ``out`` (see :meth:`ShardedMixPRIndex.save
    <longctx.corpus.shards.index.ShardedMixPRIndex.save>`). Into a corpus's ``indexes/``: with
    the corpus's build lock held, only over the corpus the index read or last saved there
    (:func:`longctx.corpus.writers.saving_into_corpus`; ``index._read_from`` records the mark
    of every local folder the index read or saved to), and only with the documents of the
    corpus's ``corpus.json`` (ids and text digests,
    :func:`longctx.persist.corpus_manifest.check_saved_documents`), checked before the mark. A
    save into a local folder that fails before replacing a file leaves the mark as it was. A
    folder inside a corpus's index root (at any depth) is refused: a build replaces the
    corpus's index folders whole (:func:`longctx.persist.marks.check_outside_corpus`).

    Raises
    ------
    ValueError
        The index holds no document.
    PersistError
        ``out`` is a corpus's index root that a build (or another save) changed since this
        index read it, or that another writer was writing when it read it (load the corpus
        again); or that this index was not loaded from (a corpus's indexes are written by
        ``longctx index`` / ``build_indexes``: save elsewhere); or this index's documents differ from ``corpus.json``'s (inserted,
        changed or deleted since the load: a corpus changes with ``longctx index`` /
        ``build_indexes``). Nothing is written then.
    longctx.persist.SaveTargetError
        ``out`` is inside a corpus's index root (nothing is written)."""
    from longctx.corpus.storage import open_storage

    storage = open_storage(out, storage_options)
    if not index._order:
        raise ValueError("a sharded MixPR index with no document cannot be saved")
    from longctx.corpus.writers import saving_into_corpus

    local = storage.local
    # the corpus index root the save writes into (tested by the check, at its own depth); a
    # URL inside a corpus's index root at that URL is refused too (its indexes/ is not)
    given = local if local is not None else storage.url
    root = check_outside_corpus(given, "out", own_depth=0, name=out, url_ok=True)

    def check() -> None:  # under the lock, before the mark
        if root is not None:
            check_saved_documents(root, index.digests(), None, str(out))

    def stamp() -> tuple:  # the files a load reads, each replaced by a rename
        shards = [local / shard_dir(s) / MANIFEST for s in sorted(index._stats)]
        return file_stamp(local / SHARDS_FILE, *shards)

    what = "a save of this sharded index"
    with saving_into_corpus(
        storage,
        index._read_from,
        what,
        name=str(out),  # as given, in messages (with the corpus's resolved folder)
        check=check,
        stamp=None if local is None else stamp,
        hold=index._lock,  # taken after the corpus's lock: changes never wait for a build
        in_corpus=root is not None,  # tested by check_outside_corpus above
    ):
        _save_shards(index, storage)


def _save_shards(index, storage) -> None:
    """Every shard's folder, then ``shards.json`` (the change lock and the mark held)."""
    for s in sorted(index._stats):
        rel = shard_dir(s)
        if storage.shared:
            index._run({s: ("save_to", (storage, rel))})
        else:
            files = index._run({s: ("files", ())})[s]
            storage.put_files(files, rel)
        index._sources[s] = stored_source(storage, rel, index._encoder)
    storage.write_json(SHARDS_FILE, manifest(index))
    index._dirty.clear()
    index._remember_stored(sorted(index._stats))


def manifest(index) -> dict:
    """The content of ``shards.json`` for ``index``."""
    return manifest_of_order(index.n_shards, index._order, index._shard_of, index._chars)


def manifest_of_order(n_shards: int, order, shard_of: dict, chars: dict) -> dict:
    """The content of ``shards.json``: the documents ``order`` (ids in corpus order), the shard
    and the length in characters of each."""
    from longctx import __version__

    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "longctx_version": __version__,
        "n_shards": int(n_shards),
        "assignment": ASSIGNMENT,
        "documents": [[d, int(shard_of[d]), int(chars[d])] for d in order],
    }


def load_sharded(cls, out, *, storage_options=None, **kwargs):
    """Read the sharded index at ``out`` (see :meth:`ShardedMixPRIndex.load
    <longctx.corpus.shards.index.ShardedMixPRIndex.load>`), again while a save in progress
    changes its files (:func:`longctx.corpus.writers.load_beside_writers`)."""
    from longctx.corpus.storage import open_storage
    from longctx.corpus.writers import load_beside_writers

    storage = open_storage(out, storage_options)
    return load_beside_writers(storage, lambda: load_sharded_once(cls, storage, **kwargs))


def load_sharded_once(
    cls, storage, *, use_ray=None, ray_address=None, workers=None, router=None, encoder=None,
    cpus_per_shard=None,
):  # fmt: skip
    """One read of the sharded index at ``storage`` (:func:`load_sharded`)."""
    from longctx.corpus.shards.backends import open_backend
    from longctx.corpus.writers import mark_record

    read_from = mark_record(storage)  # before the files: a write after it changes the mark
    where = storage.location(SHARDS_FILE)
    raw = storage.read_json(SHARDS_FILE)
    if raw is None:
        raise PersistError(f"{where!r} is missing: no sharded MixPR index there")
    n_shards, docs = read_shards_manifest(raw, where)
    held = sorted({s for _, s, _ in docs})
    enc = None
    if encoder is not None:
        from longctx.embeddings import get_encoder

        enc = get_encoder(encoder)
    sources = {i: stored_source(storage, shard_dir(i), encoder) for i in held}
    if use_ray is None:
        use_ray = _ray_wanted(ray_address)
        if not use_ray:
            logger.info(
                "the %d shards load in this process (no ray_address and no Ray running here; "
                "use_ray=True starts a local Ray)",
                len(held),
            )
    backend = open_backend(sources, use_ray, ray_address, workers, cpus_per_shard)
    try:
        stats = backend.run({i: ("term_stats", ()) for i in held})
        index = cls(backend, stats, n_shards, router=router, encoder=enc, sources=sources)
        index._order = [d for d, _, _ in docs]
        index._shard_of = {d: s for d, s, _ in docs}
        index._chars = {d: c for d, _, c in docs}
        check_against_manifest(index, storage)
        index._remember_stored(held)
        index._read_from = read_from
        if enc is None and any(s["dim"] for s in stats.values()):
            index._encoder = _default_encoder(stats)
        index._refresh()
    except BaseException:
        backend.close()
        raise
    return index


def _ray_wanted(ray_address) -> bool:
    """``use_ray=None`` at load: Ray for a cluster address, or when this process already runs
    Ray; otherwise the shards are searched in this process (starting a local Ray costs seconds,
    more than a local search of all the shards)."""
    if ray_address is not None:
        return True
    import sys

    ray = sys.modules.get("ray")  # never imported just to ask
    return ray is not None and bool(getattr(ray, "is_initialized", lambda: False)())


def check_against_manifest(index, storage) -> None:
    """Every shard holds exactly the documents ``shards.json`` gives it, in corpus order, with
    the lengths it records."""
    for s, st in index._stats.items():
        want = [d for d in index._order if index._shard_of[d] == s]
        where = storage.location(shard_dir(s))
        if list(st["doc_ids"]) != want:
            raise PersistError(
                f"{where!r} holds other documents than {SHARDS_FILE} lists for shard {s} "
                "(an interrupted build: run it again)"
            )
        if [index._chars[d] for d in want] != list(st["chars"]):
            raise PersistError(
                f"{where!r}: the documents' lengths differ from those in {SHARDS_FILE}"
            )


def read_shards_manifest(raw, where: str) -> tuple[int, list]:
    """``(n_shards, [(doc_id, shard, chars)...])`` from a parsed ``shards.json``.

    Raises
    ------
    PersistError
        Not a sharded index manifest, another format version, a damaged field (named).
    """
    check_format(
        raw, where, FORMAT, FORMAT_VERSION, what="sharded MixPR index manifest",
        rebuild="rebuild the index",
    )  # fmt: skip
    n = raw.get("n_shards")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_SHARDS:
        raise PersistError(f"{where!r}: field 'n_shards' must be an int in [1, {MAX_SHARDS}]")
    if raw.get("assignment") != ASSIGNMENT:
        raise PersistError(f"{where!r}: field 'assignment' must be {ASSIGNMENT!r}")
    docs = raw.get("documents")
    if not isinstance(docs, list) or not docs:
        raise PersistError(f"{where!r}: field 'documents' must be a non-empty list")
    out, seen = [], set()
    for j, e in enumerate(docs):
        ok = (
            isinstance(e, list)
            and len(e) == 3
            and isinstance(e[0], str)
            and e[0]
            and all(isinstance(x, int) and not isinstance(x, bool) for x in e[1:])
            and 0 <= e[1] < n
            and e[2] >= 1
        )
        if not ok:
            raise PersistError(
                f"{where!r}: field 'documents[{j}]' must be [id, shard in [0, {n}), chars >= 1]"
            )
        if e[0] in seen:
            raise PersistError(f"{where!r}: field 'documents': id {e[0][:80]!r} repeats")
        seen.add(e[0])
        out.append((e[0], e[1], e[2]))
    return n, out


def stored_source(storage, rel: str, encoder):
    if storage.local is not None:
        return ("dir", storage.local_index(rel), encoder)
    if storage.shared:
        return ("storage", storage, rel, encoder)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="longctx-shard-") as tmp:
        d = storage.fetch_index(rel, tmp)
        return ("files", {f.name: f.read_bytes() for f in d.iterdir() if f.is_file()}, encoder)


def _default_encoder(stats: dict):
    """The default sentence encoder when the shards were built with it (as MixPRIndex.load)."""
    from longctx.embeddings import DEFAULT_MODEL_NAME, SentenceTransformerEncoder

    if any(s.get("encoder_name") == DEFAULT_MODEL_NAME for s in stats.values()):
        return SentenceTransformerEncoder(None)
    return None
