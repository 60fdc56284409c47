"""A corpus's index root on a local disk, for every writer of it: its names (:data:`INDEX_ROOT`,
:data:`CORPUS_MANIFEST`), its build lock (:func:`corpus_lock`, the file :data:`LOCK_FILE`) and
its writer's mark (:data:`WRITER_FILE`, :func:`marked`), and a save into it
(:func:`saving_into_corpus`).

A corpus (:mod:`longctx.corpus`) keeps its indexes under ``<corpus>/indexes`` beside its
``corpus.json``: one MixPR index (``indexes/mixpr``), shards (``indexes/shard-<i>``) or an index
per document. Its builds hold the lock, and mark the index root ``writing.json`` while they
replace files (the mark's rules: :mod:`longctx.corpus.writers`). An index saved there by a user
(:meth:`longctx.MixPRIndex.save` into ``indexes/mixpr``, ``ShardedMixPRIndex.save`` into
``indexes``) must hold the same lock, write only over the corpus it read, and hold exactly the
documents ``corpus.json`` lists (checked by the caller, before the mark:
:func:`longctx.persist.corpus_manifest.check_saved_documents`), or the corpus's files no longer
agree with its ``corpus.json``. The core (floor 2) cannot import the corpus layer (floor 3): the
pieces both need are here and in :mod:`longctx.persist.corpus_manifest`, on floor 1.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import stat
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path

from longctx.persist.format import PersistError, loadable_json, parse_json
from longctx.persist.reader import read_json

logger = logging.getLogger(__name__)

__all__ = [
    "CORPUS_FORMAT",
    "CORPUS_MANIFEST",
    "INDEX_ROOT",
    "BUILT_FOLDER",
    "MAX_BUILT_BYTES",
    "built_by_corpus",
    "LOCK_FILE",
    "MAX_MARK_BYTES",
    "WRITER_FILE",
    "check_outside_corpus",
    "check_unchanged",
    "corpus_index_root",
    "is_url",
    "is_corpus_manifest",
    "corpus_lock",
    "file_stamp",
    "mark_key",
    "marked",
    "outside_corpus_message",
    "parse_mark",
    "read_mark_at",
    "record_of",
    "saving_into_corpus",
    "write_json_atomic",
    "writer_record",
]

#: A corpus's manifest, at its root.
CORPUS_MANIFEST = "corpus.json"
#: The format name in a corpus's manifest (``longctx.persist.corpus_manifest.FORMAT``).
CORPUS_FORMAT = "longctx.corpus"
#: Bytes of a ``corpus.json`` read to tell a corpus's manifest from another file.
MAX_MARKER_BYTES = 64 * 1024
#: The start of a corpus's manifest too large to read whole for the test: its first key is
#: ``"format"`` (:meth:`longctx.persist.corpus_manifest.CorpusManifest.to_json`).
_CORPUS_START = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"longctx\.corpus"\s*[,}]')
#: A corpus's index root, relative to its root.
INDEX_ROOT = "indexes"
#: The mark's file, at the index root.
WRITER_FILE = "writing.json"
#: The build lock's file, at the index root (left there; it holds the last holder's process,
#: host and start). No document's folder starts with a dot.
LOCK_FILE = ".build.lock"
#: Largest size of the mark read (bytes).
MAX_MARK_BYTES = 4096


def writer_record(what: str) -> dict:
    """Who writes: ``{"what", "pid", "host", "started"}`` (``what`` cut to 100 characters, as
    :func:`parse_mark` reads it: a mark stays under :data:`MAX_MARK_BYTES`)."""
    return {
        "what": what[:100],
        "pid": os.getpid(),
        "host": socket.gethostname()[:100],
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def parse_mark(raw) -> dict | None:
    """A mark read from disk (untrusted) as ``{"state", "token", "what", "pid", "host",
    "started"}`` (str values, each cut to 100 characters), or ``None`` when ``raw`` is not one."""
    if not isinstance(raw, dict) or raw.get("format") != "longctx.writer":
        return None
    keys = ("state", "token", "what", "pid", "host", "started")
    return {k: str(raw.get(k, ""))[:100] for k in keys}


def read_mark_at(root: str | os.PathLike) -> dict | None:
    """The mark in the local folder ``root`` (:func:`parse_mark`; at most
    :data:`MAX_MARK_BYTES` read), ``None`` without one or for one that cannot be read."""
    p = Path(root) / WRITER_FILE
    if not p.is_file():
        return None
    try:
        return parse_mark(read_json(p, max_bytes=MAX_MARK_BYTES))
    except PersistError:
        return None


def mark_key(mark: dict | None) -> tuple:
    """``(token, state)`` of a mark (:func:`parse_mark`), ``(None, None)`` without one."""
    return (None, None) if mark is None else (mark["token"], mark["state"])


def write_json_atomic(path: str | os.PathLike, obj, *, limit: int | None = None) -> None:
    """Write ``obj`` as JSON (UTF-8, indent 1) at the local ``path`` as a whole: a temporary
    sibling, then ``os.replace`` (a reader sees the old file or the new one).

    Raises
    ------
    ValueError
        What a load would refuse (:func:`longctx.persist.format.loadable_json`: over ``limit``
        bytes, default :data:`~longctx.persist.format.MAX_JSON_BYTES`, too deep, too many
        values); nothing is written then.
    """
    data = loadable_json(str(path), obj, limit=limit, indent=1, after="nothing was written")
    _write_bytes_atomic(Path(path), data)


def _write_bytes_atomic(p: Path, data: bytes) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)


def file_stamp(*paths: str | os.PathLike) -> tuple:
    """What tells the local files ``paths`` from the ones a write puts in their place: each
    file's ``(device, inode, size, mtime_ns)`` (``None`` for a missing one). A save replaces an
    index folder by a rename: its ``manifest.json`` is then another file."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
        except (FileNotFoundError, NotADirectoryError):
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


def _mark_restorer(root: Path) -> Callable[[], None] | None:
    """A function putting the mark file of the local folder ``root`` back as it is now (its
    bytes; removed when there is none), or ``None`` for one that is not a small regular file
    (not a mark: left as a write makes it)."""
    p = root / WRITER_FILE
    try:
        st = os.lstat(p)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_MARK_BYTES:
            return None
        data = p.read_bytes()
    except FileNotFoundError:
        return lambda: p.unlink(missing_ok=True)
    except OSError:
        return None
    return lambda: _write_bytes_atomic(p, data)


@contextmanager
def marked(write: Callable[[dict], None], what: str) -> Iterator[dict]:
    """Mark an index root as being written (``what``: "a rebuild", "a save") for the block:
    ``write(mark)`` stores ``{..., "state": "writing"}`` first and ``"done"`` with the same token
    when the block ends without an error. The block is given the mark (``{"token", "what",
    "pid", ...}``)."""
    mark = {"format": "longctx.writer", "token": uuid.uuid4().hex, **writer_record(what)}
    write({**mark, "state": "writing"})
    yield mark
    write({**mark, "state": "done"})


def is_corpus_manifest(path: str | os.PathLike) -> bool:
    """Whether the local file ``path`` is a corpus's manifest: a regular file (a link to one
    counts) holding a JSON object whose ``"format"`` is :data:`CORPUS_FORMAT`, whatever its
    version. The file is opened once and at most :data:`MAX_MARKER_BYTES` are read (untrusted):
    a file that fits is parsed whole (:func:`longctx.persist.format.parse_json`, strict as a
    load reads it); a larger one must start with the format key as a corpus's manifest is
    written (``{"format": "longctx.corpus", ...``). A user's own ``corpus.json`` (another
    JSON, or not JSON) is not one; nothing raises."""
    p = Path(path)
    try:
        if not stat.S_ISREG(os.stat(p).st_mode):
            return False
        with open(p, "rb") as f:
            head = f.read(MAX_MARKER_BYTES + 1)
    except OSError:
        return False
    return _is_manifest_head(head, str(p))


def _is_manifest_head(head: bytes, where: str) -> bool:
    """Whether ``head`` (the first ``MAX_MARKER_BYTES + 1`` bytes of a file read at ``where``)
    is a corpus's manifest (:func:`is_corpus_manifest`)."""
    if len(head) > MAX_MARKER_BYTES:
        return _CORPUS_START.match(head) is not None
    try:
        data = parse_json(head, where)
    except PersistError:  # damaged (cut short, not strict JSON): told by how it starts
        return _CORPUS_START.match(head) is not None
    return isinstance(data, dict) and data.get("format") == CORPUS_FORMAT


def is_url(path) -> bool:
    """Whether ``path`` is an fsspec URL: a ``str`` ``<scheme>://...`` whose scheme (or chain,
    ``simplecache::s3``) has two characters or more and no path separator, as fsspec reads a
    protocol; so ``C://data`` (a drive) and ``runs/a://b`` (a folder named ``a:``) are local
    paths."""
    if not isinstance(path, str) or "://" not in path:
        return False
    scheme = path.split("://", 1)[0]
    return len(scheme) > 1 and "/" not in scheme and "\\" not in scheme


def corpus_index_root(folder: str | os.PathLike) -> Path | None:
    """The real path of ``folder`` (symbolic links and ``..`` resolved) when it is a corpus's
    index root (a folder :data:`INDEX_ROOT` beside a :data:`CORPUS_MANIFEST` that is a
    corpus's manifest, :func:`is_corpus_manifest`), else ``None``."""
    root = Path(os.path.realpath(folder))
    if root.name == INDEX_ROOT and is_corpus_manifest(root.parent / CORPUS_MANIFEST):
        return root
    return None


def check_outside_corpus(
    path: str | os.PathLike,
    argument: str,
    *,
    own_depth: int | None = None,
    name: str | os.PathLike | None = None,
    real: Path | None = None,
    url_ok: bool = False,
) -> Path | None:
    """Refuse to save at the local folder ``path`` when its real path (links and ``..``
    resolved) is a corpus's index root or inside one (:func:`corpus_index_root`), at any depth,
    except at ``own_depth``: the depth of the caller's own folders of a corpus, which it saves
    under the corpus's lock (:func:`saving_into_corpus`): ``1`` for a MixPR index
    (``indexes/<name>``), ``0`` for a sharded index (``indexes``), ``None`` (none) for a
    retriever. ``argument``, ``name``: the caller's argument and its value as given (default
    ``path``), for the message. ``real``: ``os.path.realpath(path)`` when the caller has it
    (not resolved again).

    ``path`` may be an fsspec URL (a ``str`` with ``://``): inside a corpus's index root at
    that URL (a folder ``indexes`` beside a corpus's ``corpus.json``, read through fsspec,
    bounded) it is refused as a local folder is, except at ``own_depth`` (such a corpus has no
    build lock: :func:`saving_into_corpus` keeps no record for it); a ``file://`` URL is
    checked as its local path. ``url_ok``: whether the caller writes to URLs (a sharded index,
    through fsspec); a caller that writes local folders only (a core index, a retriever) has
    every URL refused, which it would have made a local folder named after the scheme
    (``memory:``).

    The message says which rule refuses the folder (:func:`outside_corpus_message`): inside one
    of the folders a build of the corpus writes (``indexes/mixpr``, ``indexes/shard-<i>``, a
    document's ``indexes/<slug>-<digits>``: :func:`built_by_corpus`), the next ``longctx index``
    replaces that folder whole and deletes what is saved there; elsewhere in ``indexes/`` (a
    rebuild leaves a folder such as ``indexes/backup`` alone), only the corpus's builds and the
    saves of an index loaded from it write, under its build lock.

    Returns
    -------
    pathlib.Path or None
        The corpus's index root (a real path) at ``own_depth``: the corpus the caller's save
        writes into, under its lock (:func:`saving_into_corpus`); ``None`` when the folder
        there is none (or ``own_depth`` is ``None``).

    Raises
    ------
    longctx.persist.SaveTargetError
        Naming ``argument`` and its value as given, the corpus's resolved folder, the rule and
        what to do; checked before anything is written. Or ``path`` is a URL and ``url_ok`` is
        false.
    """
    if is_url(path):
        given = str(path if name is None else name)
        scheme = path.split("://", 1)[0].lower()
        if scheme == "file":
            check_outside_corpus(path[7:], argument, own_depth=own_depth, name=given)
        elif url_ok or scheme == "memory":
            # a store that may connect (ftp, s3, http) is not probed for a save refused anyway
            _check_url_outside_corpus(path, argument, given, own_depth)
        if not url_ok:
            from longctx.persist.writer import SaveTargetError

            scheme = path.split("://", 1)[0]
            raise SaveTargetError(
                f"{argument} {given!r} is a URL: this save writes a local folder (it would make "
                f"a folder named '{scheme}:' here); give a local path (a sharded index, "
                "ShardedMixPRIndex.save, writes to fsspec URLs)"
            )
        return None
    target = Path(os.path.realpath(path)) if real is None else Path(real)
    own = None
    for depth, folder in enumerate((target, *target.parents)):
        root = corpus_index_root(folder)
        if depth == own_depth:
            own = root
            continue
        if root is None:
            continue
        from longctx.persist.writer import SaveTargetError

        given = str(path if name is None else name)
        # the parts below the folder matched, not ``target.relative_to(root)``: ``root`` is that
        # folder's real path again, which can differ from it (a link loop left unresolved in
        # ``target``, a link changed meanwhile)
        below = Path(*target.parts[len(folder.parts) :])
        raise SaveTargetError(outside_corpus_message(argument, given, below, root, own_depth))
    return own


#: The name of a folder that a build of a corpus writes directly in its index root (and
#: replaces whole when it rebuilds it): a MixPR corpus's one index (``mixpr``), a sharded
#: corpus's shards (``shard-<i>``), a document's index of a diversity or GARLIC corpus
#: (``<slug>-<10 hex digits>``, :func:`longctx.corpus.documents.safe_component`). The rule of
#: :func:`built_by_corpus` when the corpus's ``corpus.json`` cannot tell.
BUILT_FOLDER = re.compile(r"\A(?:mixpr|shard-[0-9]+|.+-[0-9a-f]{10})\Z")
#: The folders a build of a MixPR corpus writes: its one index or its shards (a rebuild may
#: change from one to the other).
_MIXPR_BUILT = re.compile(r"\A(?:mixpr|shard-[0-9]+)\Z")
#: Largest ``corpus.json`` read to tell the folders its builds write (bytes, untrusted); a
#: larger one is told by the names (:data:`BUILT_FOLDER`).
MAX_BUILT_BYTES = 16 * 1024 * 1024


def _check_url_outside_corpus(url: str, argument: str, given: str, own_depth) -> None:
    """:func:`check_outside_corpus` for the fsspec URL ``url``: each folder ``indexes`` on its
    way up (but at ``own_depth``) beside a ``corpus.json`` that is a corpus's manifest (its
    first :data:`MAX_MARKER_BYTES` + 1 bytes read through fsspec, untrusted) refuses it, with
    the message of a local folder. Nothing is checked without fsspec or for a URL it cannot
    open (nothing could be written there either)."""
    from pathlib import PurePosixPath

    try:
        import fsspec

        fs, where = fsspec.core.url_to_fs(url)
    except Exception:  # noqa: BLE001 - no fsspec, or a URL no store opens: nothing to check
        return
    scheme = url.split("://", 1)[0]
    target = PurePosixPath(where)
    for depth, folder in enumerate((target, *target.parents)):
        if folder.name != INDEX_ROOT or depth == own_depth:
            continue
        manifest = f"{folder.parent}/{CORPUS_MANIFEST}"
        head = _url_bytes(fs, manifest, MAX_MARKER_BYTES)
        if head is None or not _is_manifest_head(head, manifest):
            continue
        from longctx.persist.writer import SaveTargetError

        below = Path(*target.parts[len(folder.parts) :])
        corpus = f"{scheme}://{str(folder.parent).lstrip('/')}"
        data = _url_bytes(fs, manifest, MAX_BUILT_BYTES)
        try:
            data = None if data is None or len(data) > MAX_BUILT_BYTES else parse_json(data, url)
        except PersistError:
            data = None
        built = bool(below.parts) and _built_in(data, below.parts[0])
        raise SaveTargetError(
            outside_corpus_message(
                argument, given, below, Path(folder), own_depth, corpus=corpus, built=built
            )
        )


def _url_bytes(fs, path: str, limit: int) -> bytes | None:
    """The first ``limit + 1`` bytes of the file ``path`` of the fsspec file system ``fs``, or
    ``None`` when it cannot be read (missing, a folder, an error of the store)."""
    try:
        with fs.open(path, "rb") as f:
            return f.read(limit + 1)
    except Exception:  # noqa: BLE001 - each store raises its own errors; none is a corpus
        return None


def built_by_corpus(root: Path, name: str) -> bool:
    """Whether a build of the corpus whose index root is the local folder ``root`` writes its
    folder ``name`` (and replaces it whole), as its ``corpus.json`` says: a MixPR corpus
    (``"method": "mixpr"``) writes ``mixpr`` or ``shard-<i>``, a corpus of one index per
    document the folders its entries list (``"path": "indexes/<name>"``). A ``corpus.json``
    that cannot be read (over :data:`MAX_BUILT_BYTES`, not JSON, another shape: untrusted,
    nothing raises) leaves the decision to the name (:data:`BUILT_FOLDER`)."""
    try:
        data = read_json(root.parent / CORPUS_MANIFEST, max_bytes=MAX_BUILT_BYTES)
    except PersistError:
        data = None
    return _built_in(data, name)


def _built_in(data, name: str) -> bool:
    """:func:`built_by_corpus` given the corpus's ``corpus.json`` as parsed (``None``: not
    read)."""
    method = data.get("method") if isinstance(data, dict) else None
    docs = data.get("documents") if isinstance(data, dict) else None
    if method == "mixpr":
        return _MIXPR_BUILT.match(name) is not None
    if not isinstance(method, str) or not isinstance(docs, list):
        return BUILT_FOLDER.match(name) is not None
    path = f"{INDEX_ROOT}/{name}"
    return any(isinstance(d, dict) and d.get("path") == path for d in docs)


#: Where a save of each kind of index may go in a corpus's index root (by ``own_depth`` of
#: :func:`check_outside_corpus`), for the message refusing another folder there.
_OWN_PLACE = {
    None: "a retriever's persist is not one",
    1: "a MixPR index is saved there only as one folder directly in indexes/ (indexes/<name>)",
    0: "a sharded index is saved there only as the whole indexes/ folder",
}


def outside_corpus_message(
    argument: str,
    given: str,
    below: Path,
    root: Path,
    own_depth: int | None = None,
    *,
    corpus: str | None = None,
    built: bool | None = None,
) -> str:
    """The message of :func:`check_outside_corpus` refusing ``argument`` (its value ``given``
    as the caller named it; ``below``: its path relative to the corpus's index root, empty for
    the root itself) inside the corpus's index root ``root`` (a real path), one wording per
    case: the index root itself, a folder a build writes or one inside it
    (:func:`built_by_corpus`: the next build deletes it), or another folder there. ``corpus``
    names the corpus (default: ``root``'s parent; a URL's corpus), ``built`` says whether its
    builds write the folder (default: :func:`built_by_corpus`)."""
    corpus = f"the corpus at {corpus or str(root.parent)!r}"
    parts = Path(below).parts
    if not parts:
        why = (
            f"is the {INDEX_ROOT}/ folder of {corpus}, where its builds (`longctx index`) write "
            "its index folders"
        )
    elif built_by_corpus(root, parts[0]) if built is None else built:
        why = (
            f"{'is' if len(parts) == 1 else 'is inside'} the index folder "
            f"'{INDEX_ROOT}/{parts[0]}' of {corpus} (a folder its builds write): a later "
            "`longctx index` of that corpus replaces such a folder whole and would delete what "
            "is saved there"
        )
    else:
        why = (
            f"is in the {INDEX_ROOT}/ folder of {corpus}, outside the folders its builds write "
            f"(a rebuild leaves '{INDEX_ROOT}/{parts[0]}' alone), but only the corpus's builds and "
            "the saves of an index loaded from it write in indexes/, holding its build lock: "
            f"{_OWN_PLACE.get(own_depth, _OWN_PLACE[None])}"
        )
    return (
        f"{argument} {given!r} {why}; save to a folder outside the corpus's {INDEX_ROOT}/ "
        "(beside the corpus is fine); to change the corpus, change its documents and run "
        "`longctx index` again"
    )


def record_of(root: Path | None) -> dict:
    """``{str(root): (token, state, False)}``: the mark of the local folder ``root`` now (``None``
    values without a mark), the record a load keeps for :func:`saving_into_corpus`; ``{}`` for
    ``root=None``. Read before the files: a write after it changes the mark."""
    if root is None:
        return {}
    return {str(root): (*mark_key(read_mark_at(root)), False)}


@contextmanager
def corpus_lock(
    index_root: Path, what: str, name: str | None = None, log: logging.Logger | None = None
) -> Iterator[None]:
    """Hold the corpus whose index root is the local folder ``index_root`` alone (created when
    missing): :func:`longctx.persist.writer.exclusive_lock` on it, the lock file
    :data:`LOCK_FILE` there holding ``what`` (who holds it, :func:`writer_record`). One that
    waits says so once at INFO level ("waits for ... by process P on H, started T") on ``log``
    (default: this module's logger); ``name`` names the corpus there (default: the folder)."""
    from longctx.persist.writer import exclusive_lock

    index_root.mkdir(parents=True, exist_ok=True)

    def say(holder):
        who = holder or {}
        (log or logger).info(
            "%s: this %s waits for %s by process %s on %r, started %s",
            name or str(index_root),
            "build" if what.startswith("a build") else "save",
            who.get("what", "another build of this corpus"),
            who.get("pid", "?"),
            who.get("host", "?"),
            who.get("started", "?"),
        )

    holder = writer_record(what)
    with exclusive_lock(index_root, index_root / LOCK_FILE, holder=holder, on_wait=say):
        yield


@contextmanager
def saving_into_corpus(
    root: Path | None,
    read_from: dict,
    what: str,
    write: Callable[[dict], None],
    name: str | None = None,
    log: logging.Logger | None = None,
    *,
    check: Callable[[], None] | None = None,
    stamp: Callable[[], object] | None = None,
    hold: AbstractContextManager | None = None,
    in_corpus: bool | None = None,
) -> Iterator[dict]:
    """Write an index under the mark of the local folder ``root`` (a real path; ``None``: not a
    local folder, no record kept), holding the corpus's build lock (:func:`corpus_lock`) when
    ``root`` is a corpus's index root (:func:`corpus_index_root`). ``write(mark)`` stores the
    mark (:func:`marked`); the block is given the mark. ``name``: the folder as the caller
    named it, for messages (default ``root``); ``log``: the logger of the wait (:func:`corpus_lock`).
    ``in_corpus``: whether ``root`` is a corpus's index root, when the caller has tested it
    (:func:`corpus_index_root`, :func:`check_outside_corpus`); ``None``: tested here.

    A corpus's files must agree with its ``corpus.json`` (the text digest of each document):
    an index saved there while ``longctx index`` rebuilds the corpus would mix the two writers'
    files, and one saved after a build that followed its load would put back the older
    documents under the newer ``corpus.json``; either way the corpus no longer loads. So the
    save waits for a running build, then goes on only if the corpus's mark is still the one the
    index read or last wrote there: ``read_from[str(root)] == (token, state, own)`` (the mark's
    ``token`` and ``state``, ``None`` without a mark; ``own``: the mark is this index's own
    save's). A mark read at ``"writing"`` matches only the index's own save that stopped half
    way (a retry repairs it): one read while another writer ran never matches, whether that
    writer ended (``"done"``, a new mark) or stopped.

    Every other check that may refuse the save runs next, still before the mark: ``check()``
    (the caller's: the target folder, and the index's documents against ``corpus.json``,
    :func:`longctx.persist.corpus_manifest.check_saved_documents`, for an index that must hold
    exactly the corpus's documents). Only then is the mark written ``"writing"``. When the block
    fails and ``stamp()`` (the caller's :func:`file_stamp` of the files the corpus loads) is
    what it was before the mark, no file was touched: the mark is put back as it was (its
    bytes, or no mark) and ``read_from`` is left alone, so the corpus stays saveable by every
    index that read it. Only a mark that still holds this save's own ``"writing"`` token is put
    back (read first, under the corpus's lock where there is one): another writer's mark
    written meanwhile (a plain folder has no lock) stays.

    ``hold`` (the index's write lock) is entered after the corpus's lock and held from the
    checks to the end of the block: the index's changes wait for the save only while it checks
    and writes, not while it waits for a build of the corpus (nothing takes the index's lock,
    then the corpus's).

    ``read_from`` (the index's record, :func:`record_of` at load) is updated in place after the
    write into any local ``root``, on success (``"done"``) or failure after touching a file
    (``"writing"``, the index's own token): a save to another folder (a backup) leaves the
    corpus's entry as is.

    Raises
    ------
    longctx.persist.PersistError
        A build or another save changed the corpus since the index read it, or a writer was
        at work when the index read it (names the writer; load the corpus again), or the
        index was not loaded from this corpus (save elsewhere); nothing is written
        (:func:`check_unchanged`). And what ``check()`` raises (nothing
        is written then either).
    """
    if in_corpus is None:
        in_corpus = root is not None and corpus_index_root(root) is not None
    corpus = root is not None and in_corpus
    lock = (
        corpus_lock(root, "a save of this corpus's index", name, log) if corpus else nullcontext()
    )
    with lock, hold if hold is not None else nullcontext():
        if corpus:
            check_unchanged(root, read_from.get(str(root)), name)
        if check is not None:
            check()
        put_back = _mark_restorer(root) if root is not None and stamp is not None else None
        before = stamp() if put_back is not None else None
        mark, state = None, "writing"
        try:
            with marked(write, what) as mark:
                yield mark
            state = "done"
        except BaseException:
            if put_back is not None and _holds_own(root, mark) and stamp() == before:
                try:
                    put_back()
                    mark = None  # the folder as before: the record stays the one it was
                    logger.debug("%s: the save stopped before replacing a file", name or root)
                except OSError as exc:
                    logger.warning("%s: the mark could not be put back: %s", name or root, exc)
            raise
        finally:
            if mark is not None and root is not None:  # the folder as this write left it
                read_from[str(root)] = (mark["token"], state, True)


def _holds_own(root: Path, mark: dict | None) -> bool:
    """Whether the mark of the local folder ``root`` is still ``mark`` (a save's, given by
    :func:`marked`; ``None``: its mark was never written) at ``"writing"``."""
    return mark is not None and mark_key(read_mark_at(root)) == (mark["token"], "writing")


def check_unchanged(root: Path, record: tuple | None, name: str | None = None) -> None:
    """Refuse a save into the corpus whose index root is ``root`` (``name``: the target as the
    caller named it, default ``root``) when its mark is not ``record`` (the build lock held:
    see :func:`saving_into_corpus`). One wording per case, each naming the target as given and
    the corpus's resolved folder: an index never loaded from this corpus (``record`` is
    ``None``: a corpus's indexes are written by its builds; save elsewhere), one loaded before
    another writer changed the corpus, or while one was at work (load the corpus again).

    Raises
    ------
    longctx.persist.PersistError
        Naming the target, the corpus, the writer and what to do.
    """
    mark = read_mark_at(root)
    now = mark_key(mark)
    if record is not None and record[:2] == now and (now[1] != "writing" or record[2]):
        return
    target, corpus = (name or str(root)), str(root.parent)
    if record is None:
        raise PersistError(
            f"{target!r}: this index was not loaded from the corpus at {corpus!r}; a corpus's "
            "indexes are written by `longctx index` / `build_indexes`; save elsewhere (nothing "
            "was written)"
        )
    who = mark or {}
    writer = (
        f"{who.get('what', 'another writer')} (process {who.get('pid', '?')} on "
        f"{who.get('host', '?')!r}, started {who.get('started', '?')})"
    )
    todo = "load the corpus again and repeat the changes, or save to another folder"
    if record[:2] == now:  # read at "writing", another writer's, which stopped half way
        change = f"was being written by {writer} when this index read it, which stopped half way"
        todo = f"run that write again, then {todo}"
    else:
        change = f"was written by {writer} after this index read it"
    raise PersistError(
        f"{target!r}: the corpus at {corpus!r} {change}: saving this index there would leave "
        f"files that disagree with {CORPUS_MANIFEST} (a corpus that no longer loads); {todo}"
    )
