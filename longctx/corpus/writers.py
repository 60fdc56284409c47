"""A write of several files that readers must tell from damage: the mark ``writing.json``.

A sharded index's save (``shard-<i>/`` then ``shards.json``) and a MixPR corpus's rebuild (the
index folders under ``indexes/``, then ``corpus.json``) replace each file atomically, but not all
of them at once: a load running meanwhile may read files of two versions, which its checks refuse
("holds other documents than shards.json lists", "field 'text_sha256' ... does not match"), as
they refuse a forged file (issue 44 item 6). So the writer marks the index root (a corpus's
``indexes/``) first, ``{"state": "writing", "token": ...}``, and ``"done"`` with the same token
when every file is in place; a loader whose checks fail reads the mark again: while it says
``"writing"`` or has changed since the load began, the files come from a write in progress and
the load is tried again (:func:`load_beside_writers`, as
:func:`longctx.persist.reader.retry_on_concurrent_save` does for one folder); only with the mark
``"done"`` and unchanged (or no mark: a corpus of an older longctx) is the failure the files' own.

A write that stops half way (an error, ``kill -9``) leaves the mark at ``"writing"``: until the
next write finishes, a load whose checks fail says so (:class:`~longctx.persist.ConcurrentSaveError`
naming the writer's process and start), not "damaged or forged".

The mark tells a load from damage; it does not order two writers. Two builds of one corpus are
serialized by :func:`building`, the corpus's build lock, held from reading the previous manifest
to the last file written: the second build waits for the first, then updates its result.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from longctx.persist import ConcurrentSaveError, PersistError

logger = logging.getLogger(__name__)

__all__ = [
    "LOCK_FILE",
    "WRITER_FILE",
    "building",
    "load_beside_writers",
    "loads_beside_writers",
    "mark_record",
    "read_mark",
    "saving_into_corpus",
    "writing",
]

#: The mark's file, at the index root.
WRITER_FILE = "writing.json"
#: The lock file of :func:`building`, in a corpus's index root (left there; it holds the last
#: build's process, host and start). No document's folder starts with a dot.
LOCK_FILE = ".build.lock"
#: Loads of files that a write in progress keeps changing, before the error.
WRITER_ATTEMPTS = 6
#: Largest size of the mark read (bytes).
MAX_MARK_BYTES = 4096

T = TypeVar("T")


def _writer(what: str) -> dict:
    """Who writes: ``{"what", "pid", "host", "started"}``."""
    return {
        "what": what,
        "pid": os.getpid(),
        "host": socket.gethostname()[:100],
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


@contextmanager
def writing(storage, what: str) -> Iterator[dict]:
    """Mark ``storage``'s root as being written (``what``: "a rebuild", "a save") for the
    duration of the block; the mark says ``"done"`` when the block ends without an error. The
    block is given the mark (``{"token", "what", "pid", ...}``)."""
    mark = {"format": "longctx.writer", "token": uuid.uuid4().hex, **_writer(what)}
    storage.write_json(WRITER_FILE, {**mark, "state": "writing"})
    yield mark
    storage.write_json(WRITER_FILE, {**mark, "state": "done"})


@contextmanager
def building(storage, root: str, what: str = "a build of this corpus") -> Iterator[None]:
    """Hold the corpus at ``storage`` alone for a build: an exclusive lock on its index root
    ``root`` (``"indexes"``; the lock file :data:`LOCK_FILE` there, :func:`longctx.persist.writer.exclusive_lock`: a
    lock per path among this process's threads, an advisory ``flock`` across processes).

    A second build of the corpus (another thread, process or terminal) waits until the first
    ends, saying so once at INFO level ("waits for a build of this corpus by process P on H,
    started T"), then reads the manifest the first one wrote: builds of one corpus follow each
    other, the later one updating the earlier one's result, and a load never sees files of two
    builds. Where ``flock`` is unavailable (Windows, some network file systems) only builds in
    one process wait for each other. A corpus that is not a local folder (an fsspec URL:
    ``s3://``, ``gs://``, ``memory://``...) is not locked: two builds of it at once are not
    serialized (logged at debug level). ``what`` names the holder to those that wait (a save
    of the corpus's sharded index holds it too: :func:`saving_into_corpus`).
    """
    from longctx.persist.writer import exclusive_lock

    if storage.local is None:
        logger.debug("%s is not a local folder: builds of it are not serialized", storage.url)
        yield
        return
    index_root = storage.local / root
    index_root.mkdir(parents=True, exist_ok=True)

    def say(holder):
        who = holder or {}
        logger.info(
            "%s: this %s waits for %s by process %s on %r, started %s",
            storage.url,
            "build" if what.startswith("a build") else "save",
            who.get("what", "another build of this corpus"),
            who.get("pid", "?"),
            who.get("host", "?"),
            who.get("started", "?"),
        )

    with exclusive_lock(index_root, index_root / LOCK_FILE, holder=_writer(what), on_wait=say):
        yield


@contextmanager
def saving_into_corpus(storage, read_from: dict, what: str) -> Iterator[dict]:
    """Write into ``storage`` under the mark (:func:`writing`, ``what``: "a save of this
    sharded index"), holding the corpus's build lock (:func:`building`) when ``storage`` is a
    corpus's index root: a local folder ``indexes`` beside a ``corpus.json``, tested on its
    real path (a symbolic link or a ``..`` names the same corpus); nothing more for another
    folder or URL. The block is given the mark.

    A corpus's files must agree with its ``corpus.json`` (the text digest of each document):
    a sharded index saved there while ``longctx index`` rebuilds the corpus would mix the two
    writers' files, and one saved after a build that followed its load would put back the
    older documents under the newer ``corpus.json``; either way the corpus no longer loads.
    So the save waits for a running build, then goes on only if the corpus's mark is still
    the one the index read or last wrote there: ``read_from[folder] == (token, state, own)``
    (``folder`` the real path; the mark's ``token`` and ``state``, ``None`` without a mark;
    ``own``: the mark is this index's own save's). A mark read at ``"writing"`` matches only
    the index's own save that stopped half way (a retry repairs it): one read while another
    writer ran never matches, whether that writer ended (``"done"``, a new mark) or stopped.

    ``read_from`` (the index's record, :func:`mark_record` at load) is updated in place after
    the write into any local folder, on success (``"done"``) or failure (``"writing"``, the
    index's own token): a save to another folder (a backup) leaves the corpus's entry as is.

    Raises
    ------
    longctx.persist.PersistError
        A build or another save changed the corpus since the index read it, or a writer was
        at work when the index read it (names the writer and says what to do), or the index
        was not read from this corpus; nothing is written.
    """
    from longctx.corpus.manifest import CORPUS_MANIFEST
    from longctx.corpus.storage import open_storage

    root = None if storage.local is None else Path(os.path.realpath(storage.local))
    corpus = (
        root is not None and root.name == "indexes" and (root.parent / CORPUS_MANIFEST).is_file()
    )
    lock = (
        building(open_storage(str(root.parent)), root.name, "a save of this corpus's index")
        if corpus
        else nullcontext()
    )
    with lock:
        if corpus:
            _check_unchanged(storage, root, read_from.get(str(root)))
        mark, state = None, "writing"
        try:
            with writing(storage, what) as mark:
                yield mark
            state = "done"
        finally:
            if mark is not None and root is not None:  # the folder as this write left it
                read_from[str(root)] = (mark["token"], state, True)


def _check_unchanged(storage, root: Path, record: tuple | None) -> None:
    """Refuse a save into the corpus at ``root`` whose mark is not ``record`` (the build lock
    held: see :func:`saving_into_corpus`)."""
    from longctx.corpus.manifest import CORPUS_MANIFEST

    mark = read_mark(storage)
    now = _mark_key(mark)
    if record is not None and record[:2] == now and (now[1] != "writing" or record[2]):
        return
    who = mark or {}
    writer = (
        f"{who.get('what', 'another writer')} (process {who.get('pid', '?')} on "
        f"{who.get('host', '?')!r}, started {who.get('started', '?')})"
    )
    todo = "load the corpus again and repeat the changes, or save to another folder"
    if record is None:
        change = "holds a corpus this index was not read from"
    elif record[:2] == now:  # read at "writing", another writer's, which stopped half way
        change = f"was being written by {writer} when this index read it, which stopped half way"
        todo = f"run that write again, then {todo}"
    else:
        change = f"was written by {writer} after this index read it"
    raise PersistError(
        f"{str(storage.local)!r} {change}: saving this index there would leave files that "
        f"disagree with {CORPUS_MANIFEST} (a corpus that no longer loads); {todo}"
    )


def mark_record(storage) -> dict:
    """``{folder: (token, state, False)}``: ``storage``'s mark now (``token`` and ``state``
    ``None`` without a mark; ``folder`` its real path), the record of a load for
    :func:`saving_into_corpus`; ``{}`` for a storage that is not a local folder."""
    if storage.local is None:
        return {}
    mark = read_mark(storage)
    now = _mark_key(mark)
    return {os.path.realpath(storage.local): (*now, False)}


def read_mark(storage) -> dict | None:
    """The mark at ``storage``'s root as ``{"state", "token", "what", "pid", "host",
    "started"}`` (str values, bounded), or ``None`` (no mark, or one that is not a mark)."""
    try:
        raw = storage.read_json(WRITER_FILE, limit=MAX_MARK_BYTES)
    except PersistError:
        return None
    if not isinstance(raw, dict) or raw.get("format") != "longctx.writer":
        return None
    keys = ("state", "token", "what", "pid", "host", "started")
    return {k: str(raw.get(k, ""))[:100] for k in keys}


def _mark_key(mark: dict | None) -> tuple:
    """``(token, state)`` of a mark (:func:`read_mark`), ``(None, None)`` without one."""
    return (None, None) if mark is None else (mark["token"], mark["state"])


def _concurrent(before: dict | None, after: dict | None) -> bool:
    if any(m is not None and m["state"] == "writing" for m in (before, after)):
        return True
    return _mark_key(before) != _mark_key(after)


def load_beside_writers(storage, load: Callable[[], T], *, attempts: int | None = None) -> T:
    """``load()``, tried again while its checks fail (a :class:`~longctx.persist.PersistError`)
    and the mark of ``storage``'s root says a write is in progress or happened meanwhile.

    Raises
    ------
    ConcurrentSaveError
        The last failure, when a write was still in progress at the last attempt (or stopped
        half way): names the writer (what, process, host, start).
    PersistError
        ``load()``'s own, when no write was in progress.
    """
    n = WRITER_ATTEMPTS if attempts is None else attempts
    for i in range(n):
        before = read_mark(storage)
        try:
            return load()
        except PersistError as exc:
            after = read_mark(storage)
            if not _concurrent(before, after):
                raise
            mark, last = after or before, exc
            logger.info("load of %s met %s in progress, again (%s)", storage.url, mark["what"], exc)
        if i + 1 < n:
            time.sleep(min(1.0, 0.05 * 2**i))
    raise ConcurrentSaveError(
        f"{storage.location(WRITER_FILE)!r}: {mark['what']} by process {mark['pid']} on "
        f"{mark['host']!r}, started {mark['started']}, was in progress at each of {n} loads "
        f"(or stopped half way: run it again); the files it had replaced so far did not match "
        f"the others: {str(last).replace(' (damaged or forged)', '')}"
    )


def loads_beside_writers(root: Callable[[dict], object]) -> Callable:
    """Decorator for a loader: :func:`load_beside_writers` over the storage ``root(arguments)``
    (the loader's arguments by name, defaults applied), where the writers mark themselves."""

    def wrap(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def load(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            return load_beside_writers(root(bound.arguments), lambda: fn(*args, **kwargs))

        return load

    return wrap
