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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from longctx.persist import ConcurrentSaveError, PersistError
from longctx.persist.marks import (
    LOCK_FILE,
    MAX_MARK_BYTES,
    WRITER_FILE,
    corpus_lock,
    mark_key,
    marked,
    parse_mark,
    record_of,
)
from longctx.persist.marks import saving_into_corpus as _saving_into

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

#: Loads of files that a write in progress keeps changing, before the error.
WRITER_ATTEMPTS = 6

T = TypeVar("T")


def writing(storage, what: str):
    """Mark ``storage``'s root as being written (``what``: "a rebuild", "a save") for the
    duration of the block; the mark says ``"done"`` when the block ends without an error. The
    block is given the mark (``{"token", "what", "pid", ...}``; :func:`longctx.persist.marks.marked`)."""
    return marked(lambda mark: storage.write_json(WRITER_FILE, mark, MAX_MARK_BYTES), what)


@contextmanager
def building(storage, root: str, what: str = "a build of this corpus") -> Iterator[None]:
    """Hold the corpus at ``storage`` alone for a build: an exclusive lock on its index root
    ``root`` (``"indexes"``; the lock file :data:`LOCK_FILE` there,
    :func:`longctx.persist.marks.corpus_lock`: a lock per path among this process's threads, an
    advisory ``flock`` across processes).

    A second build of the corpus (another thread, process or terminal) waits until the first
    ends, saying so once at INFO level ("waits for a build of this corpus by process P on H,
    started T"), then reads the manifest the first one wrote: builds of one corpus follow each
    other, the later one updating the earlier one's result, and a load never sees files of two
    builds. Where ``flock`` is unavailable (Windows, some network file systems) only builds in
    one process wait for each other. A corpus that is not a local folder (an fsspec URL:
    ``s3://``, ``gs://``, ``memory://``...) is not locked: two builds of it at once are not
    serialized (logged at debug level). ``what`` names the holder to those that wait (a save
    of the corpus's index holds it too: :func:`saving_into_corpus`,
    :meth:`longctx.MixPRIndex.save`).
    """
    if storage.local is None:
        logger.debug("%s is not a local folder: builds of it are not serialized", storage.url)
        yield
        return
    with corpus_lock(storage.local / root, what, storage.url, logger):
        yield


def saving_into_corpus(
    storage,
    read_from: dict,
    what: str,
    *,
    name=None,
    check=None,
    stamp=None,
    hold=None,
    in_corpus: bool | None = None,
):
    """Write into ``storage`` under the mark (:func:`writing`, ``what``: "a save of this
    sharded index"), holding the corpus's build lock when ``storage`` is a corpus's index root:
    a local folder ``indexes`` beside a ``corpus.json``, tested on its real path (a symbolic
    link or a ``..`` names the same corpus); nothing more for another folder or URL; and only
    over the corpus the index read or last wrote there (``read_from``, the index's record:
    :func:`mark_record` at load). ``check()``: the caller's other checks, run under the lock
    before the mark; ``stamp()``: the caller's :func:`longctx.persist.marks.file_stamp` of the
    files it replaces (a local folder's mark is put back when a failed write left them as they
    were); ``hold``: the index's change lock, taken after the corpus's lock and held to the
    end of the block; ``name``: the target as the caller named it, for messages (default: the
    local folder); ``in_corpus``: whether ``storage`` is a corpus's index root, when the
    caller has tested it (else tested here). The rules: :func:`longctx.persist.marks.saving_into_corpus`. The block is
    given the mark.

    Raises
    ------
    longctx.persist.PersistError
        As :func:`longctx.persist.marks.saving_into_corpus` (the corpus changed since the index
        read it, or it was not loaded from it; nothing is written), and what ``check()`` raises.
    """
    root = None if storage.local is None else Path(os.path.realpath(storage.local))
    write = lambda mark: storage.write_json(WRITER_FILE, mark, MAX_MARK_BYTES)  # noqa: E731
    return _saving_into(
        root, read_from, what, write, str(name or storage.local), logger, check=check, stamp=stamp,
        hold=hold, in_corpus=in_corpus,
    )  # fmt: skip


def mark_record(storage) -> dict:
    """``{folder: (token, state, False)}``: ``storage``'s mark now (``token`` and ``state``
    ``None`` without a mark; ``folder`` its real path), the record of a load for
    :func:`saving_into_corpus`; ``{}`` for a storage that is not a local folder."""
    if storage.local is None:
        return {}
    return record_of(Path(os.path.realpath(storage.local)))


def read_mark(storage) -> dict | None:
    """The mark at ``storage``'s root as ``{"state", "token", "what", "pid", "host",
    "started"}`` (str values, bounded), or ``None`` (no mark, or one that is not a mark)."""
    try:
        raw = storage.read_json(WRITER_FILE, limit=MAX_MARK_BYTES)
    except PersistError:
        return None
    return parse_mark(raw)


def _concurrent(before: dict | None, after: dict | None) -> bool:
    if any(m is not None and m["state"] == "writing" for m in (before, after)):
        return True
    return mark_key(before) != mark_key(after)


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
