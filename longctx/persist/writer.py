"""Writing index folders: :func:`write_dir` (atomic, never replacing anything longctx did not
write) and :func:`check_save_target`. Re-exported by :mod:`longctx.persist`;
:mod:`longctx.persist.format` describes the layout; the file-system steps that must never leave
the target are in :mod:`longctx.persist.fs`."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import shutil
import stat
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from longctx.persist import fs as _fs
from longctx.persist.format import (
    MANIFEST,
    MAX_ARRAY_BYTES,
    MAX_JSON_BYTES,
    PersistError,
    _dir,
    loadable_json,
)
from longctx.persist.npy import write_npy
from longctx.persist.reader import MAX_MANIFEST_BYTES, MAX_NPZ_BYTES

logger = logging.getLogger(__name__)


class SaveTargetError(FileExistsError):
    """The save target exists and is not a longctx index of the same kind (a file, or a directory
    holding other files): nothing was written or deleted."""


_PATH_LOCKS: dict[str, threading.Lock] = {}
_PATH_LOCKS_GUARD = threading.Lock()
#: Who holds each lock of :func:`exclusive_lock` in this process (its ``holder``), by key.
_HOLDERS: dict[str, dict] = {}
#: Largest holder record read back from a lock file (bytes).
MAX_HOLDER_BYTES = 4096


#: ``errno`` values of a ``flock`` that the file system does not support (some network file
#: systems): only then does :func:`exclusive_lock` fall back to locking threads only.
_NO_FLOCK = frozenset(
    getattr(errno, n) for n in ("ENOLCK", "EOPNOTSUPP", "ENOTSUP") if hasattr(errno, n)
)


def _open_lock_target(target: Path, create: bool) -> int:
    """A descriptor to ``flock``: the directory ``target`` (``create=False``), or the regular
    file ``target``, created when missing, never reached through a link (``O_NOFOLLOW``) and
    never holding another name's data (one link only: it is truncated and written).

    Raises
    ------
    PersistError
        ``target`` cannot be opened, or the lock file is a symbolic link, a FIFO, a folder or
        anything but a regular file, or a hard link to another file (the message names it: a
        file planted there would otherwise turn the lock across processes off, or have its
        contents overwritten).
    """
    if not create:
        flags = os.O_RDONLY
    else:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(target, flags, 0o644)
    except OSError as exc:
        raise PersistError(
            f"{str(target)!r}: the build lock cannot be opened ({exc.strerror or exc}): a link, "
            "FIFO or folder there? Remove it and run again"
        ) from None
    if not create:
        return fd
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = "is not a regular file"
    elif st.st_nlink != 1:
        why = f"has {st.st_nlink} hard links (another file's data would be overwritten)"
    if why is not None:
        os.close(fd)
        raise PersistError(f"{str(target)!r}: the build lock file {why}; remove it and run again")
    return fd


def _read_holder(fd: int) -> dict | None:
    """The holder record a lock file holds (bounded, untrusted: a dict of short strings), or
    ``None``."""
    try:
        raw = os.pread(fd, MAX_HOLDER_BYTES + 1, 0)
        obj = json.loads(raw.decode("utf-8")) if 0 < len(raw) <= MAX_HOLDER_BYTES else None
    except (OSError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    return {str(k)[:40]: str(v)[:100] for k, v in list(obj.items())[:16]}


def _flock(target: Path, create: bool, on_wait) -> int | None:
    """The descriptor of :func:`exclusive_lock`'s ``flock`` on ``target``, held, or ``None``
    where ``flock`` is missing (no ``fcntl``: Windows) or unsupported by the file system
    (:data:`_NO_FLOCK`; both logged at debug level). ``on_wait``: called with the holder's
    record before waiting for another process. Raises :class:`PersistError` as
    :func:`_open_lock_target`, and an ``OSError`` of ``flock`` other than "unsupported"."""
    try:
        import fcntl
    except ImportError:
        logger.debug("no lock across processes on %s (no fcntl): threads only", target)
        return None
    fd = _open_lock_target(target, create)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait(_read_holder(fd))
            fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in _NO_FLOCK:
            raise
        logger.debug("no lock across processes on %s (%s): threads only", target, exc)
        return None
    return fd


@contextlib.contextmanager
def exclusive_lock(
    key: str | os.PathLike,
    target: str | os.PathLike,
    *,
    holder: Mapping[str, Any] | None = None,
    on_wait: Callable[[dict | None], None] | None = None,
):
    """Hold an exclusive lock named ``key`` for the block, in this process and across processes.

    Threads of this process take a lock per ``key`` (the absolute path); processes an advisory
    ``fcntl.flock`` on ``target``. Where the platform or the file system has no ``flock``
    (Windows, some network file systems), only the threads of one process are serialized
    (logged at debug level). The lock is released when the block ends, when the process dies
    included (the kernel drops a ``flock`` with its descriptor).

    Parameters
    ----------
    key : str or PathLike
        What is locked (saves: the index path; a corpus build: its index root).
    target : str or PathLike
        With ``holder=None``, an existing directory to ``flock``: nothing is written to disk.
        With ``holder``, a lock file, created when missing (never through a link) and left on
        disk; the holder record is written into it for the processes that wait.
    holder : mapping, optional
        Who holds the lock (``{"what", "pid", "host", "started"}``, JSON values): given to
        ``on_wait`` of the threads and processes that wait for it.
    on_wait : callable(dict or None), optional
        Called once, before waiting, when the lock is held by another thread or process, with
        that holder's record (``None`` when unknown). Waiting has no time limit.

    Raises
    ------
    longctx.persist.PersistError
        ``target`` cannot be opened, or the lock file is a symbolic link, FIFO, folder or other
        non-regular file, or has more than one hard link (a file planted there: the message
        names it; it is left as it is). Only a missing ``fcntl`` or a ``flock`` failing with
        ``ENOLCK`` / ``EOPNOTSUPP`` / ``ENOTSUP`` falls back to locking threads only.
    OSError
        ``flock`` failed otherwise.
    """
    key = os.path.abspath(key)
    target = Path(target)
    with _PATH_LOCKS_GUARD:
        lock = _PATH_LOCKS.setdefault(key, threading.Lock())
    waited = not lock.acquire(blocking=False)
    if waited:
        if on_wait is not None:
            on_wait(_HOLDERS.get(key))
        lock.acquire()
    try:
        fd = _flock(target, holder is not None, None if waited else on_wait)
        try:
            if holder is not None:
                _HOLDERS[key] = dict(holder)
                if fd is not None:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, json.dumps(dict(holder)).encode("utf-8"), 0)
            yield
        finally:
            _HOLDERS.pop(key, None)
            if fd is not None:
                os.close(fd)  # releases the flock
    finally:
        lock.release()


def _save_lock(final: Path):
    """Serialize saves to ``final``: :func:`exclusive_lock` on ``final``, the ``flock`` on its
    parent directory (nothing written to disk for the lock)."""
    return exclusive_lock(final, final.parent)


def _manifest_of(d: Path) -> dict | None:
    """The manifest of directory ``d`` as a dict, or None when it has none readable (a link
    is not read)."""
    try:
        fd = _fs.open_dir(d) if _fs.HAVE_DIR_FD else None
    except OSError:
        return None
    try:
        return _fs.read_manifest_at(fd, d)
    finally:
        if fd is not None:
            os.close(fd)


def check_save_target(path: str | os.PathLike, kind: str) -> Path:
    """Check that ``path`` may be written as a longctx ``kind`` index, before any work.

    ``path`` may be missing, an empty directory, or a longctx index of the same ``kind`` (a
    directory whose manifest says so, lists plain file names only, and that holds only the
    regular files and folders it lists).

    Raises
    ------
    SaveTargetError
        ``path`` is a file, a link, or a directory holding anything else (a manifest listing a
        path such as ``..``, a member that is a link).
    """
    final = _dir(path)
    if final.is_symlink():
        raise SaveTargetError(
            f"cannot save a longctx index to {str(final)!r}: it is a symbolic link"
        )
    if not final.exists():
        return final
    if not final.is_dir():
        raise SaveTargetError(
            f"cannot save a longctx index to {str(final)!r}: a file of that name exists (it was "
            "left untouched); choose a directory path"
        )
    try:
        entries = {p.name for p in final.iterdir()}
    except FileNotFoundError:  # a concurrent save moved the previous index away just now
        return final
    if not entries:
        return final
    manifest = _manifest_of(final)
    if manifest is None:
        raise SaveTargetError(
            f"cannot save a longctx index to {str(final)!r}: the directory holds files that are "
            f"not a longctx index ({', '.join(sorted(entries)[:5])}...); nothing was changed. "
            "Choose a new or empty directory"
        )
    if manifest.get("format") != f"longctx.{kind}":
        raise SaveTargetError(
            f"cannot save a longctx.{kind} index to {str(final)!r}: it holds a "
            f"{str(manifest.get('format'))[:80]!r} index; nothing was changed. Choose another "
            "directory"
        )
    files, dirs, problems = _fs.listed_names(manifest)
    if problems:
        raise SaveTargetError(
            f"cannot replace the longctx index at {str(final)!r}: its {MANIFEST} {problems[0]} "
            "(damaged or forged); nothing was changed. Remove that folder yourself"
        )
    extra = entries - set(files) - set(dirs) - {MANIFEST}
    if extra:
        raise SaveTargetError(
            f"cannot replace the longctx index at {str(final)!r}: the directory also holds "
            f"files the index did not write ({', '.join(sorted(extra)[:5])}); nothing was "
            "changed. Move them away or choose another directory"
        )
    for name in sorted(entries):
        try:
            mode = os.lstat(final / name).st_mode
        except FileNotFoundError:
            continue
        if not (stat.S_ISDIR(mode) if name in dirs else stat.S_ISREG(mode)):
            raise SaveTargetError(
                f"cannot replace the longctx index at {str(final)!r}: {name!r} is a symbolic "
                "link or another kind of file than the index wrote; nothing was changed. Move "
                "it away or choose another directory"
            )
    return final


def _remove_index(d: Path) -> bool:
    """Delete an index directory written by :func:`write_dir` (see
    :func:`longctx.persist.fs.remove_index`: only the files and folders its manifest lists,
    never following a link or leaving the folder)."""
    return _fs.remove_index(d)


def _mode_from_old_release(final: Path) -> bool:
    """Whether ``final`` is an index saved by longctx before 0.2 (no digests) with mode 0700,
    the mode ``tempfile.mkdtemp`` gave every saved folder then: its replacement follows the
    umask instead of keeping that mode."""
    try:
        if stat.S_IMODE(os.stat(final).st_mode) != 0o700:
            return False
    except OSError:
        return False
    manifest = _manifest_of(final)
    return manifest is not None and "digests" not in manifest


def _plain(names: Iterable[str], what: str) -> None:
    for name in names:
        why = _fs.member_name_problem(name)
        if why:
            raise ValueError(f"{what}: {why}")


def _check_loadable_size(name: str, size: int, limit: int, what: str) -> None:
    """A member's bytes within the limit its load reads (``ValueError`` otherwise)."""
    if size > limit:
        raise ValueError(
            f"cannot save {name!r}: {what} of {size:,} bytes, over the limit of {limit:,} that a "
            "load accepts; nothing was replaced"
        )


def write_dir(
    path: str | os.PathLike,
    *,
    kind: str,
    version: int,
    json_files: Mapping[str, Any] = (),
    arrays: Mapping[str, Mapping[str, np.ndarray]] = (),
    sparse: Mapping[str, sp.sparray | sp.spmatrix] = (),
    npy: Mapping[str, np.ndarray] = (),
    extra: Mapping[str, Any] | None = None,
    subdirs: Mapping[str, Callable[[Path], Any]] = (),
) -> Path:
    """Write an index directory atomically (into a temporary sibling, then renamed to ``path``).

    Parameters
    ----------
    path : str or PathLike
        The directory: missing, empty, or a longctx index of the same ``kind`` (replaced). A
        new directory's mode follows the umask; an existing one's mode (setgid bit included)
        and group are kept (except the 0700 of every folder saved before longctx 0.2).
    kind : str
        Index kind, stored as ``"longctx.<kind>"`` and checked on load.
    version : int
        Format version of that kind, checked on load.
    json_files : mapping name -> JSON-serializable object
        Written as ``<name>.json`` (UTF-8).
    arrays : mapping name -> mapping of arrays
        Written as ``<name>.npz`` (``np.savez``, uncompressed; object arrays are refused).
    sparse : mapping name -> scipy sparse matrix
        Written as ``<name>.npz`` with ``scipy.sparse.save_npz`` (uncompressed).
    npy : mapping name -> array
        Written as ``<name>.npy`` (C order, uncompressed, 64-byte aligned values: a load can map
        them, :meth:`longctx.persist.reader.IndexDir.npy`).
    extra : mapping, optional
        More manifest entries.
    subdirs : mapping name -> callable(path)
        Nested indexes: ``f(tmp / name)`` writes one (e.g. ``index.save``); listed in the
        manifest's ``"dirs"``.

    The manifest, written last, lists every file with its SHA-256 and size (``"digests"``; a
    nested index by its ``manifest.json``), so a load can tell one save from another.

    Raises
    ------
    SaveTargetError
        (a ``FileExistsError``) ``path`` is a file, a link or a directory that is not a longctx
        ``kind`` index holding only its own files; checked before anything is written and again
        before the rename. Nothing is changed then.
    ValueError
        A member a load would refuse: JSON nested deeper than ``MAX_JSON_DEPTH`` or larger
        than ``MAX_JSON_BYTES``, an array over ``MAX_ARRAY_BYTES``, an ``.npz`` over
        ``MAX_NPZ_BYTES``, a manifest over 1 MiB. Nothing is changed then.
    """
    from longctx import __version__

    try:
        final = check_save_target(path, kind)
    except SaveTargetError:
        # a concurrent save may be swapping the directory right now: look again, holding the lock
        with _save_lock(_dir(path)):
            final = check_save_target(path, kind)
    json_files, arrays, sparse, subdirs, npy = (
        dict(json_files),
        dict(arrays),
        dict(sparse),
        dict(subdirs),
        dict(npy),
    )
    _plain([f"{n}.json" for n in json_files], "json_files")
    _plain([f"{n}.npz" for n in [*arrays, *sparse]], "arrays / sparse")
    _plain([f"{n}.npy" for n in npy], "npy")
    _plain(subdirs, "subdirs")
    final.parent.mkdir(parents=True, exist_ok=True)
    _fs.clean_stale_siblings(final)
    tmp = _fs.sibling_name(final, "tmp")
    _fs.make_dir(tmp)
    try:
        files, dirs, digests = [], [], {}
        for name, obj in json_files.items():
            raw = loadable_json(f"{name}.json", obj, limit=MAX_JSON_BYTES)
            (tmp / f"{name}.json").write_bytes(raw)
            files.append(f"{name}.json")
            digests[f"{name}.json"] = {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
        for name, arrs in arrays.items():
            for key, a in arrs.items():
                a = np.asarray(a)
                if a.dtype == object:
                    raise TypeError(f"{name}.npz: array {key!r} has dtype object (not saved)")
                _check_loadable_size(f"{name}.npz", a.nbytes, MAX_ARRAY_BYTES, f"array {key!r}")
            np.savez(tmp / f"{name}.npz", **arrs)
            files.append(f"{name}.npz")
        for name, m in sparse.items():
            m = sp.csr_matrix(m)
            for key in ("data", "indices", "indptr"):
                a = getattr(m, key)
                _check_loadable_size(f"{name}.npz", a.nbytes, MAX_ARRAY_BYTES, f"array {key!r}")
            sp.save_npz(tmp / f"{name}.npz", m, compressed=False)
            files.append(f"{name}.npz")
        for name, a in npy.items():
            sha, size = write_npy(tmp / f"{name}.npy", a)  # hashed while written
            files.append(f"{name}.npy")
            _check_loadable_size(files[-1], size, MAX_NPZ_BYTES, "a file")
            digests[files[-1]] = {"sha256": sha, "size": size}
        for f in files:
            if f not in digests:
                sha, size = _fs.file_sha256(tmp / f)
                _check_loadable_size(f, size, MAX_NPZ_BYTES, "a file")
                digests[f] = {"sha256": sha, "size": size}
        for name, write in subdirs.items():
            write(tmp / name)
            dirs.append(name)
            sub_manifest = tmp / name / MANIFEST
            if sub_manifest.is_file():
                sha, size = _fs.file_sha256(sub_manifest)
                digests[name] = {"sha256": sha, "size": size}
        manifest = {
            "format": f"longctx.{kind}",
            "format_version": int(version),
            "longctx_version": __version__,
            "files": sorted(files),
            **({"dirs": sorted(dirs)} if dirs else {}),
            **dict(extra or {}),
            "digests": dict(sorted(digests.items())),
        }
        raw = json.dumps(manifest, indent=1).encode("utf-8")
        _check_loadable_size(MANIFEST, len(raw), MAX_MANIFEST_BYTES, "a manifest")
        (tmp / MANIFEST).write_bytes(raw)
        with _save_lock(final):
            check_save_target(final, kind)  # again: another save or the user may have been faster
            if final.is_dir() and not _mode_from_old_release(final):
                _fs.adopt_dir_mode(tmp, final)
            if final.is_dir() and any(final.iterdir()):
                old = _fs.sibling_name(final, "old")
                final.rename(old)
                try:
                    tmp.rename(final)
                except BaseException:
                    old.rename(final)  # put the previous index back
                    raise
                try:
                    _remove_index(old)  # logs what it leaves
                except OSError as exc:  # the new index is in place: keep it, say what is left
                    logger.warning("could not remove the previous index at %s: %s", old, exc)
            else:
                if final.is_dir():
                    final.rmdir()  # empty
                tmp.rename(final)
    except BaseException:
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)  # our own temporary directory
        raise
    return final


__all__ = ["SaveTargetError", "check_save_target", "exclusive_lock", "write_dir"]
