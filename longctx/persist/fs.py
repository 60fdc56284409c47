"""File-system operations of saving and loading index folders that must never reach outside them.

- :func:`member_name_problem`: every name read from a manifest (``files``, ``dirs``, ``digests``)
  must be a plain child name: not empty, not ``.`` or ``..``, no ``/``, ``\\``, ``:`` (drive
  letters), NUL or other control characters.
- :func:`remove_index`: delete an index folder written by :func:`longctx.persist.write_dir`, only
  the files and sub-folders its manifest lists, opening every member relative to the folder's
  own descriptor without following symbolic links (``openat`` / ``O_NOFOLLOW``), so a deletion
  never leaves the folder it removes.
- :func:`sibling_name` / :func:`clean_stale_siblings`: the temporary (``.<name>.tmp-...``) and
  previous (``.<name>.old-...``) siblings of a save target carry their writer's host and process
  id; one whose writer is dead (or that is older than :data:`STALE_AGE_S`) is removed on the next
  save or load of the same target. Nothing else is ever removed.
- :func:`adopt_dir_mode`: a replaced folder's mode (and group, setgid bit) is kept; a new one
  follows the umask as ``mkdir`` would.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import socket
import stat
import time
from pathlib import Path

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"

#: Whether members can be opened relative to a folder's descriptor (POSIX); elsewhere (Windows)
#: each member path is checked (no link, resolved parent is the folder) before it is opened.
HAVE_DIR_FD = (
    os.open in os.supports_dir_fd
    and os.stat in os.supports_dir_fd
    and os.unlink in os.supports_dir_fd
    and os.rmdir in os.supports_dir_fd
    and hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)

#: A temporary or previous sibling whose writer cannot be checked (another host, an older longctx)
#: is removed only when it is older than this (seconds, by its modification time).
STALE_AGE_S = 24 * 3600.0

#: Deepest nesting of index folders (``dirs``) removed.
MAX_NESTING = 8


def member_name_problem(name) -> str | None:
    """Why ``name`` is not a plain child name of an index folder, or ``None`` when it is.

    Refused: a non-str, empty, ``.``, ``..``, longer than 255 characters, holding ``/``, ``\\``,
    ``:`` (a drive letter, an NTFS stream) or a control character (NUL included)."""
    if not isinstance(name, str):
        return f"{type(name).__name__} is not a file name"
    if not name or name in (".", ".."):
        return f"{name!r} is not a file name"
    if len(name) > 255:
        return "a name of more than 255 characters"
    bad = [c for c in name if c in "/\\:" or ord(c) < 32 or ord(c) == 127]
    if bad:
        return f"{name[:80]!r} holds {bad[0]!r} (a path, not a plain name)"
    if os.path.basename(name) != name or os.path.isabs(name) or os.path.splitdrive(name)[0]:
        return f"{name[:80]!r} is a path, not a plain name"
    return None


def listed_names(manifest) -> tuple[list[str], list[str], list[str]]:
    """``(files, dirs, problems)`` of a manifest dict: the names it lists under ``files`` and
    ``dirs`` (``manifest.json`` itself left out of ``files``), and one line per name (or field)
    that is not a plain child name. Callers refuse to act on a manifest with problems."""
    problems, out = [], {}
    for key in ("files", "dirs"):
        v = manifest.get(key, []) if isinstance(manifest, dict) else None
        if not isinstance(v, list):
            problems.append(f"field {key!r} is not a list")
            out[key] = []
            continue
        names = []
        for x in v[:100_000]:
            why = member_name_problem(x)
            if why:
                problems.append(f"field {key!r}: {why}")
            else:
                names.append(x)
        out[key] = names
    return [x for x in out["files"] if x != MANIFEST], out["dirs"], problems


def file_sha256(path: str | os.PathLike) -> tuple[str, int]:
    """``(hex SHA-256, size in bytes)`` of a file written by this process."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


# -- opening members without following links ------------------------------------------------------
def open_dir(path: str | os.PathLike, *, follow: bool = True) -> int:
    """A read-only descriptor of the folder ``path`` (``follow=False``: refuse a link)."""
    flags = os.O_RDONLY | _DIRECTORY | _CLOEXEC | (0 if follow else _NOFOLLOW)
    return os.open(path, flags)


def lstat_member(dir_fd: int | None, dir_path: Path, name: str) -> os.stat_result:
    """``lstat`` of the member ``name`` (never follows a link)."""
    if dir_fd is not None:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    return os.lstat(dir_path / name)


def open_member(dir_fd: int | None, dir_path: Path, name: str, *, directory: bool = False) -> int:
    """A read-only descriptor of the member ``name`` of a folder (a regular file, or a folder
    with ``directory=True``), opened without following a link: relative to ``dir_fd`` with
    ``O_NOFOLLOW`` where the platform has them, else by path after checking that the member is
    no link and that its resolved parent is the folder.

    Raises
    ------
    IsADirectoryError, NotADirectoryError, OSError
        ``errno.ELOOP`` for a symbolic link; ``FileNotFoundError`` when missing; an
        ``OSError`` with ``errno.EINVAL`` for anything that is not a regular file (or folder).
    """
    if member_name_problem(name):
        raise OSError(errno.EINVAL, f"not a plain name: {name!r}")
    st = lstat_member(dir_fd, dir_path, name)
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, "a symbolic link")
    want = stat.S_ISDIR if directory else stat.S_ISREG
    if not want(st.st_mode):
        raise OSError(errno.EINVAL, "not a folder" if directory else "not a regular file")
    flags = os.O_RDONLY | _CLOEXEC | _BINARY | (_DIRECTORY if directory else _NONBLOCK)
    if dir_fd is not None:
        fd = os.open(name, flags | _NOFOLLOW, dir_fd=dir_fd)
    else:
        p = dir_path / name
        if os.path.realpath(p.parent) != os.path.realpath(dir_path) or p.is_symlink():
            raise OSError(errno.ELOOP, "resolves outside its folder")
        fd = os.open(p, flags)
    try:
        st = os.fstat(fd)
        if not want(st.st_mode):
            raise OSError(errno.EINVAL, "not a folder" if directory else "not a regular file")
        if not directory and _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_below(root: str | os.PathLike, parts) -> int:
    """A read-only descriptor of the regular file ``root/parts[0]/.../parts[-1]``, no component
    below ``root`` followed through a symbolic link (``root`` itself is opened as named): where
    :data:`HAVE_DIR_FD`, each folder below ``root`` opened relative to the one above and the
    file relative to the last (:func:`open_member`, so a link swapped in meanwhile is refused
    at its open); elsewhere each folder checked (no link, a folder) and the file opened by
    :func:`open_member`'s path check. ``parts`` are plain names (:func:`member_name_problem`).

    Raises
    ------
    OSError
        ``errno.ELOOP`` for a link; ``FileNotFoundError`` when a component is missing;
        ``NotADirectoryError`` when one on the way is not a folder; ``errno.EINVAL`` when the
        file is not a regular file (a folder, a FIFO, a device) or any part (a folder's too) is
        not a plain name, checked before anything is opened.
    """
    parts = tuple(parts)  # an iterator would be spent by the unpacking before its check
    if not parts:
        raise OSError(errno.EINVAL, "no file named below the root")
    *folders, name = parts
    for part in parts:  # every part, before anything is opened (both paths below alike)
        if member_name_problem(part):
            raise OSError(errno.EINVAL, f"not a plain name: {str(part)[:80]!r}")
    path = Path(root)
    if not HAVE_DIR_FD:
        for part in folders:
            st = lstat_member(None, path, part)
            if stat.S_ISLNK(st.st_mode):
                raise OSError(errno.ELOOP, "a symbolic link")
            if not stat.S_ISDIR(st.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "not a folder")
            path = path / part
        return open_member(None, path, name)
    dir_fd = open_dir(path)
    try:
        for part in folders:
            try:
                sub = open_member(dir_fd, path, part, directory=True)
            except OSError as exc:
                if exc.errno == errno.EINVAL:  # a file on the way: nothing there, as ENOTDIR
                    raise NotADirectoryError(errno.ENOTDIR, exc.strerror) from None
                raise
            os.close(dir_fd)
            dir_fd, path = sub, path / part
        return open_member(dir_fd, path, name)
    finally:
        os.close(dir_fd)


def is_link_error(exc: OSError) -> bool:
    """Whether ``exc`` came from refusing a symbolic link (``ELOOP``; ``EMLINK`` on BSDs)."""
    return exc.errno in (errno.ELOOP, errno.EMLINK)


# -- removing an index folder ---------------------------------------------------------------------
def read_manifest_at(dir_fd: int | None, dir_path: Path) -> dict | None:
    """The ``manifest.json`` of a folder as a dict (opened without following a link, at most
    1 MiB), or ``None`` when there is none readable."""
    try:
        fd = open_member(dir_fd, dir_path, MANIFEST)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read((1 << 20) + 1)
        if len(raw) > (1 << 20):
            return None
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def remove_index(d: str | os.PathLike) -> bool:
    """Delete the index folder ``d`` written by :func:`longctx.persist.write_dir`: only the
    regular files and sub-folders its manifest lists (each checked to be a plain child name,
    opened relative to the folder without following links), then its manifest and the folder
    when it is empty. A manifest listing anything but plain names deletes nothing. Anything
    left is logged.

    Returns
    -------
    bool
        Whether the folder is gone.
    """
    d = Path(d)
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return True
    if not stat.S_ISDIR(st.st_mode):  # a link or a file: never followed, never removed here
        logger.warning("left %s in place: it is not a folder", d)
        return False
    if HAVE_DIR_FD:
        try:
            fd = open_dir(d, follow=False)
        except OSError as exc:
            logger.warning("left %s in place: %s", d, exc)
            return False
        try:
            ok = _remove_members(fd, d, 0)
        finally:
            os.close(fd)
    else:
        ok = _remove_members(None, d, 0)
    if not ok:
        return False
    try:
        os.rmdir(d)
    except OSError:
        logger.warning("left %s in place: it holds files the index did not write", d)
        return False
    return True


def _remove_members(dir_fd: int | None, d: Path, depth: int) -> bool:
    manifest = read_manifest_at(dir_fd, d) or {}
    files, dirs, problems = listed_names(manifest)
    if problems:
        logger.warning(
            "left %s in place: its manifest lists names that are not plain file names (%s)",
            d,
            problems[0],
        )
        return False
    for name in files:
        with contextlib.suppress(OSError):
            st = lstat_member(dir_fd, d, name)
            if stat.S_ISREG(st.st_mode):
                _unlink(dir_fd, d, name)
    for name in dirs:
        if depth + 1 >= MAX_NESTING:
            continue
        try:
            sub = open_member(dir_fd, d, name, directory=True) if dir_fd is not None else None
            if dir_fd is None and not stat.S_ISDIR(lstat_member(None, d, name).st_mode):
                continue
        except OSError:
            continue  # a link, a file or missing: left alone
        try:
            if _remove_members(sub, d / name, depth + 1):
                with contextlib.suppress(OSError):
                    _rmdir(dir_fd, d, name)
        finally:
            if sub is not None:
                os.close(sub)
    with contextlib.suppress(OSError):
        st = lstat_member(dir_fd, d, MANIFEST)
        if stat.S_ISREG(st.st_mode):
            _unlink(dir_fd, d, MANIFEST)
    return True


def _unlink(dir_fd: int | None, d: Path, name: str) -> None:
    _remove(os.unlink, dir_fd, d, name)


def _rmdir(dir_fd: int | None, d: Path, name: str) -> None:
    _remove(os.rmdir, dir_fd, d, name)


def _remove(remove, dir_fd: int | None, d: Path, name: str) -> None:
    """``remove`` (``os.unlink`` / ``os.rmdir``) the member ``name`` of ``d``: through the
    folder's descriptor when open, else only a member that lies in ``d`` and is no link."""
    if dir_fd is not None:
        remove(name, dir_fd=dir_fd)
        return
    p = d / name
    if os.path.realpath(p.parent) == os.path.realpath(d) and not p.is_symlink():
        remove(p)


# -- temporary siblings of a save target ----------------------------------------------------------
def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def sibling_name(final: Path, what: str) -> Path:
    """A fresh name ``.<final.name>.<what>-<host>-<pid>-<token>`` beside ``final`` (``what``:
    ``"tmp"`` for a save being written, ``"old"`` for the index it replaces)."""
    token = secrets.token_hex(6)
    return final.with_name(f".{final.name}.{what}-{_host_tag()}-{os.getpid()}-{token}")


_OURS = re.compile(r"(?P<host>[0-9a-f]{8})-(?P<pid>[0-9]{1,10})-(?P<token>[0-9a-f]{12})")
#: ``tempfile.mkdtemp``'s names, as longctx before 0.2 named its temporaries.
_LEGACY = re.compile(r"[a-z0-9_]{8}")


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return True  # not ours to judge
    if pid == os.getpid() or os.name != "posix":
        return True  # ours; or no signal 0 to probe with (Windows' os.kill would terminate it)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or cannot tell
    return True


def _stale(tail: str, mtime: float, now: float) -> bool:
    m = _OURS.fullmatch(tail)
    if m is not None and m["host"] == _host_tag():
        return not _pid_alive(int(m["pid"]))
    if m is not None or _LEGACY.fullmatch(tail):
        return now - mtime > STALE_AGE_S
    return False


#: ``{parent: ((st_dev, st_ino, st_mtime_ns), {target name: [sibling names]})}``: one listing of
#: a folder serves every load from it until the folder changes (loading a corpus of n indexes
#: from one folder lists it once, not n times).
_SCANS: dict[str, tuple[tuple, dict[str, list[str]]]] = {}
_SCANS_MAX = 256


def _sibling_candidates(parent: Path) -> dict[str, list[str]]:
    """The names in ``parent`` shaped ``.<target>.tmp-<tail>`` / ``.<target>.old-<tail>`` (no
    ``.`` in the tail), grouped by target name."""
    st = os.stat(parent)
    key = os.path.abspath(parent)
    stamp = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_nlink)
    # a folder changed within the last second may change again within the same timestamp tick
    # (coarse file-system clocks): list it afresh, and do not keep that listing
    quiet = time.time() - st.st_mtime > 1.0
    cached = _SCANS.get(key)
    if quiet and cached is not None and cached[0] == stamp:
        return cached[1]
    groups: dict[str, list[str]] = {}
    with os.scandir(parent) as it:
        for e in it:
            n = e.name
            if not n.startswith("."):
                continue
            target, dot, last = n[1:].rpartition(".")
            if dot and target and (last.startswith("tmp-") or last.startswith("old-")):
                groups.setdefault(target, []).append(n)
    if quiet:
        if len(_SCANS) >= _SCANS_MAX:
            _SCANS.clear()
        _SCANS[key] = (stamp, groups)
    return groups


def clean_stale_siblings(final: str | os.PathLike) -> list[Path]:
    """Remove the temporary and previous copies of ``final`` left by saves that died (a
    ``kill -9``, a power cut): siblings named ``.<final.name>.tmp-<host>-<pid>-<token>`` or
    ``.<final.name>.old-...`` whose writer was this host's process ``pid`` and is gone, or that
    are older than :data:`STALE_AGE_S` (another host's, or ``tempfile`` names of longctx before
    0.2). Only real folders are removed (never a link); a previous index only by
    :func:`remove_index` (its listed files). Nothing is done while ``final`` itself is missing
    (an interrupted swap: the only copy may be a sibling). Errors are logged, never raised.

    Returns
    -------
    list of Path
        The siblings removed.
    """
    final = Path(final)
    removed = []
    try:
        if not final.is_dir():
            return removed
        now = time.time()
        for name in _sibling_candidates(final.parent).get(final.name, ()):
            what, _, tail = name[len(final.name) + 2 :].partition("-")
            p = final.parent / name
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode) or not _stale(tail, st.st_mtime, now):
                continue
            if what == "tmp":
                # written by a save that died before its rename: only its own files inside
                shutil.rmtree(p, ignore_errors=True)
                gone = not os.path.lexists(p)
            else:
                gone = remove_index(p)
            if gone:
                logger.info("removed %s, left by an interrupted save of %s", p, final)
                removed.append(p)
    except OSError as exc:
        logger.debug("could not clean the temporaries of %s: %s", final, exc)
    return removed


# -- folder modes ---------------------------------------------------------------------------------
def make_dir(path: Path) -> None:
    """``mkdir`` with mode 0o777 less the umask (as the shell's ``mkdir``)."""
    os.mkdir(path, 0o777)


def adopt_dir_mode(tmp: Path, existing: Path) -> None:
    """Give the freshly written folder ``tmp`` the group and mode (setgid bit included) of the
    folder ``existing`` it replaces, where the platform allows; a failure is logged."""
    try:
        st = os.stat(existing, follow_symlinks=False)
        if not stat.S_ISDIR(st.st_mode):
            return
        if hasattr(os, "chown") and os.stat(tmp).st_gid != st.st_gid:
            with contextlib.suppress(OSError):
                os.chown(tmp, -1, st.st_gid)
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
    except OSError as exc:
        logger.debug("could not give %s the mode of %s: %s", tmp, existing, exc)


__all__ = [
    "HAVE_DIR_FD",
    "STALE_AGE_S",
    "member_name_problem",
    "listed_names",
    "file_sha256",
    "open_dir",
    "open_member",
    "lstat_member",
    "read_manifest_at",
    "is_link_error",
    "remove_index",
    "sibling_name",
    "clean_stale_siblings",
    "make_dir",
    "adopt_dir_mode",
]
