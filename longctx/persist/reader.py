"""Reading a saved index folder as one save: :func:`open_index_dir` and :class:`IndexDir`.

Every index loader reads its folder through one :class:`IndexDir`::

    from longctx.persist import open_index_dir, retry_on_concurrent_save

    @retry_on_concurrent_save("path")
    def load(path):
        with open_index_dir(path, kind="mixpr", versions=(1,)) as r:
            config = r.json("config.json")          # parsed JSON, bounded
            arrs = r.arrays("arrays.npz", ["idf"])  # numeric arrays, headers bounded
            graph = r.sparse("graph.npz")           # a checked scipy.sparse CSR array
            sub = r.subdir("index")                 # a nested index: pass it to its load()
            where = r.file("config.json")           # the path, for error messages

What it guarantees:

- **One save.** The folder is opened once (a descriptor) and every member is opened relative
  to it, so all files come from the folder the manifest was read from, even while another
  process renames a new save into place. The manifest written by this release carries every
  member's SHA-256 and size (``"digests"``; a nested index: the digest of its
  ``manifest.json``); each file's bytes are read **once**, checked against them and parsed from
  those bytes. A mismatch is a :class:`PersistError` naming the file; when the folder was
  replaced meanwhile it is a :class:`ConcurrentSaveError`, and loaders decorated with
  :func:`retry_on_concurrent_save` start again (:data:`LOAD_ATTEMPTS` times) before raising it.
  Manifests without digests (longctx before 0.2) still load (logged at debug level).
- **Nothing outside the folder.** Every name in the manifest must be a plain child name
  (:func:`longctx.persist.fs.member_name_problem`); members are opened without following
  symbolic links (``O_NOFOLLOW`` relative to the folder); a link, a FIFO or a device as a
  member is a :class:`PersistError` naming it.
- **Bounded.** The limits of :func:`longctx.persist.read_json` / ``read_arrays`` /
  ``read_sparse``; a member is never read past its recorded size or :data:`MAX_NPZ_BYTES`.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import inspect
import logging
import os
import re
import stat
import time
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from longctx.persist import fs
from longctx.persist.format import (
    MANIFEST,
    MAX_JSON_BYTES,
    ConcurrentSaveError,
    PersistError,
    _arrays_from_bytes,
    _dir,
    _parse_json_bytes,
    _sparse_from_bytes,
    is_saved_version,
)
from longctx.persist.npy import map_npy, npy_from_bytes

logger = logging.getLogger(__name__)

#: How many times a loader decorated with :func:`retry_on_concurrent_save` reads a folder that a
#: concurrent save keeps replacing before it raises the :class:`ConcurrentSaveError`.
LOAD_ATTEMPTS = 3
#: Largest ``.npz`` member read (bytes); ``LONGCTX_MAX_NPZ_BYTES`` overrides it.
MAX_NPZ_BYTES = int(os.environ.get("LONGCTX_MAX_NPZ_BYTES", 16 << 30))
#: Largest ``manifest.json`` read (bytes).
MAX_MANIFEST_BYTES = 1 << 20
#: Member files opened at once when the manifest is read (the others when they are asked for).
HELD_MEMBERS = 64

_HEX64 = re.compile(r"[0-9a-f]{64}")


def _close_all(fd: int, held: dict[str, int]) -> None:
    """Close a folder's descriptor and those of its members not read."""
    for member in list(held.values()):
        os.close(member)
    held.clear()
    os.close(fd)


class _Root:
    """The folder a load started from and its identity, to tell a concurrent replacement
    (the path now names another folder) from a file edited in place."""

    def __init__(self, path: Path, fd: int | None):
        self.path = path
        self.ident = self._ident(fd)

    def _ident(self, fd=None):
        try:
            st = os.fstat(fd) if fd is not None else os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def replaced(self) -> bool:
        return self.ident is None or self._ident() != self.ident


class IndexDir(os.PathLike):
    """An open index folder: its checked manifest and its members, read once each and checked
    against the manifest's digests. Made by :func:`open_index_dir` (or :meth:`subdir`); a
    ``PathLike`` of the folder, so it can be passed where a path is expected (a nested index's
    ``load``), and a context manager that closes the folder's descriptor.

    Attributes
    ----------
    path : pathlib.Path
        The folder.
    manifest : dict
        Its ``manifest.json`` (checked: kind, version, plain member names, digests).
    files, dirs : tuple of str
        The member files and nested index folders it lists.
    """

    def __init__(self, path: Path, fd: int | None, root: _Root, expected: dict | None):
        self.path = path
        self._fd = fd
        self._root = root
        self._prefetched: dict[str, bytes] = {}
        self._held: dict[str, int] = {}
        self._closer = (
            weakref.finalize(self, _close_all, fd, self._held) if fd is not None else None
        )
        try:
            self._read_manifest(expected)
        except BaseException:
            self.close()
            raise

    # -- life cycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Close the folder's descriptor (members can no longer be read)."""
        if self._closer is not None:
            self._closer()

    def __enter__(self) -> IndexDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __repr__(self) -> str:
        return f"IndexDir({str(self.path)!r}, format={self.manifest.get('format')!r})"

    # -- manifest -----------------------------------------------------------------------------
    def _read_manifest(self, expected: dict | None) -> None:
        f = self.path / MANIFEST
        if expected is None and not self._exists(MANIFEST):
            # a ConcurrentSaveError when a save replaced the folder after it was opened (its
            # old copy's files are being removed): the load starts again (issue 44)
            self._raise_changed(
                f"{str(f)!r} is missing: {str(self.path)!r} is not a saved longctx index, or "
                "its save was interrupted"
            )
        raw = self._read_raw(MANIFEST, MAX_MANIFEST_BYTES, expected)
        manifest = _parse_json_bytes(raw, f, None)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("format"), str):
            raise PersistError(f"{str(f)!r} is not a longctx manifest")
        files, dirs, problems = fs.listed_names(manifest)
        if problems:
            raise PersistError(
                f"{str(f)!r}: {problems[0]}; a manifest lists plain file names only "
                "(damaged or forged)"
            )
        if MANIFEST in manifest.get("files", []) or len(set(files) | set(dirs)) != len(files) + len(
            dirs
        ):
            raise PersistError(f"{str(f)!r}: fields 'files' / 'dirs' list a name twice")
        self.manifest = manifest
        self.files = tuple(files)
        self.dirs = tuple(dirs)
        self.digests = self._check_digests(manifest.get("digests"), f)
        for name in files:
            self._check_member(name, directory=False)
        for name in dirs:
            self._check_member(name, directory=True)
        if self._fd is not None:
            # every member file opened now, right after the manifest: a save that replaces the
            # folder later (deleting the old files) no longer makes this load miss one
            for name in files[:HELD_MEMBERS]:
                self._held[name] = self._open(name)

    def _check_digests(self, digests, f: Path) -> dict | None:
        if digests is None:
            logger.debug("%s carries no digests (saved before longctx 0.2): not checked", f)
            return None
        if not isinstance(digests, dict):
            raise PersistError(f"{str(f)!r}: field 'digests' must be an object")
        out = {}
        for name, v in digests.items():
            if name not in self.files and name not in self.dirs:
                raise PersistError(f"{str(f)!r}: field 'digests' names {str(name)[:80]!r}")
            ok = (
                isinstance(v, dict)
                and isinstance(v.get("sha256"), str)
                and _HEX64.fullmatch(v["sha256"]) is not None
                and isinstance(v.get("size"), int)
                and not isinstance(v.get("size"), bool)
                and 0 <= v["size"] <= (1 << 50)
            )
            if not ok:
                raise PersistError(
                    f"{str(f)!r}: field 'digests.{name}' must be {{'sha256': hex, 'size': int}}"
                )
            out[name] = {"sha256": v["sha256"], "size": v["size"]}
        lacking = [n for n in self.files if n not in out]
        if lacking:
            raise PersistError(f"{str(f)!r}: field 'digests' lacks {lacking[:5]}")
        return out

    def _exists(self, name: str) -> bool:
        try:
            fs.lstat_member(self._fd, self.path, name)
        except FileNotFoundError:
            return False
        except OSError:
            return True  # reported by the read
        return True

    def _check_member(self, name: str, *, directory: bool) -> None:
        p = self.path / name
        try:
            st = fs.lstat_member(self._fd, self.path, name)
        except FileNotFoundError:
            self._raise_changed(f"{str(p)!r} is missing (listed in {MANIFEST})")
        except OSError as exc:
            raise PersistError(f"{str(p)!r} cannot be read: {exc}") from None
        if stat.S_ISLNK(st.st_mode):
            raise PersistError(
                f"{str(p)!r} is a symbolic link: the members of a saved index are never "
                "followed out of its folder (refused)"
            )
        if directory and not stat.S_ISDIR(st.st_mode):
            raise PersistError(f"{str(p)!r} is not a folder (listed in {MANIFEST} 'dirs')")
        if not directory and not stat.S_ISREG(st.st_mode):
            raise PersistError(f"{str(p)!r} is not a regular file")

    def _raise_changed(self, message: str):
        if self._root.replaced():
            raise ConcurrentSaveError(
                f"{message}: the index at {str(self._root.path)!r} changed during the load (a "
                "concurrent save)"
            )
        raise PersistError(message)

    def check_kind(self, kind: str | None, versions: Iterable[int] | None) -> None:
        """Check the manifest's ``format`` (``"longctx.<kind>"``) and ``format_version``.

        Raises
        ------
        PersistError
            Another kind, or a format version not in ``versions``.
        """
        if kind is None:
            return
        f = self.path / MANIFEST
        m = self.manifest
        if m["format"] != f"longctx.{kind}":
            raise PersistError(
                f"{str(f)!r} holds a {str(m['format'])[:80]!r} index, not a 'longctx.{kind}' one"
            )
        versions = tuple(versions or ())
        fv = m.get("format_version")
        if not is_saved_version(fv, versions):
            raise PersistError(
                f"{str(f)!r} was written with format version {repr(fv)[:40]} "
                f"(longctx {str(m.get('longctx_version', '?'))[:40]}); this longctx reads "
                f"version(s) {', '.join(map(str, versions))}: rebuild the index"
            )

    # -- members ------------------------------------------------------------------------------
    def file(self, name: str) -> Path:
        """The path of member ``name`` (for messages)."""
        return self.path / name

    def has(self, name: str) -> bool:
        """Whether the manifest lists ``name`` (a file or a nested folder)."""
        return name in self.files or name in self.dirs

    def _open(self, name: str) -> int:
        """A descriptor of the member file ``name`` (never a link, never outside the folder;
        the one opened with the manifest, once)."""
        held = self._held.pop(name, None)
        if held is not None:
            return held
        p = self.path / name
        try:
            return fs.open_member(self._fd, self.path, name)
        except FileNotFoundError:
            self._raise_changed(f"{str(p)!r} is missing")
        except OSError as exc:
            if fs.is_link_error(exc):
                raise PersistError(
                    f"{str(p)!r} is a symbolic link: the members of a saved index are never "
                    "followed out of its folder (refused)"
                ) from None
            raise PersistError(f"{str(p)!r} cannot be read: {exc}") from None

    def _read_raw(self, name: str, limit: int, expected: dict | None) -> bytes:
        p = self.path / name
        fd = self._open(name)
        with os.fdopen(fd, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if expected is not None and size != expected["size"]:
                self._raise_changed(
                    f"{str(p)!r} does not match its SHA-256 digest in {MANIFEST} (it holds "
                    f"{size} bytes, the save wrote {expected['size']}): changed after the save "
                    "(damaged or edited)"
                )
            if size > limit:
                raise PersistError(f"{str(p)!r} is {size} bytes, more than the limit of {limit}")
            # read what the file holds (+1 to see it grow), never ``limit`` bytes: a read of n
            # bytes first allocates n (16 GiB for an .npz of a folder saved without digests)
            want = size if expected is None else expected["size"]
            raw = fh.read(want + 1)
        if len(raw) > want:
            self._raise_changed(f"{str(p)!r} grew while it was read")
        if expected is not None and (
            len(raw) != expected["size"] or hashlib.sha256(raw).hexdigest() != expected["sha256"]
        ):
            self._raise_changed(
                f"{str(p)!r} does not match its SHA-256 digest in {MANIFEST}: changed after the "
                "save (damaged or edited)"
            )
        return raw

    def prefetch(self, names: Iterable[str]) -> None:
        """Read the listed members among ``names`` now, each checked against its digest, so the
        checks that follow do not hold the folder open while a concurrent save replaces it (a
        load then reads its files within one short window). Each is read once; the next
        :meth:`read_bytes` of it returns these bytes. Names the manifest does not list are
        skipped (:meth:`read_bytes` names them when they are asked for). Limits: as
        :meth:`json` for ``.json`` members, as :meth:`read_bytes` for the others."""
        for name in names:
            if name in self.files and name not in self._prefetched:
                limit = MAX_JSON_BYTES if name.endswith(".json") else MAX_NPZ_BYTES
                self._prefetched[name] = self.read_bytes(name, max_bytes=limit)

    def read_bytes(self, name: str, *, max_bytes: int = MAX_NPZ_BYTES) -> bytes:
        """The bytes of the member file ``name``, read once and checked against its digest.

        Raises
        ------
        PersistError
            ``name`` is not listed, missing, a link or not a regular file, larger than
            ``max_bytes``, or differs from its digest (:class:`ConcurrentSaveError` when the
            folder was replaced meanwhile).
        """
        if name not in self.files:
            raise PersistError(f"{str(self.path / name)!r} is missing (not listed in {MANIFEST})")
        raw = self._prefetched.pop(name, None)
        if raw is not None:
            if len(raw) > max_bytes:
                p = self.path / name
                raise PersistError(
                    f"{str(p)!r} is {len(raw)} bytes, more than the limit of {max_bytes}"
                )
            return raw
        expected = self.digests.get(name) if self.digests is not None else None
        return self._read_raw(name, max_bytes, expected)

    def json(self, name: str, *, max_bytes: int | None = None, max_depth: int | None = None):
        """The JSON document of member ``name`` (limits as :func:`longctx.persist.read_json`)."""
        limit = MAX_JSON_BYTES if max_bytes is None else max_bytes
        return _parse_json_bytes(
            self.read_bytes(name, max_bytes=limit), self.path / name, max_depth
        )

    def arrays(self, name: str, keys: Iterable[str] = ()) -> dict[str, np.ndarray]:
        """The arrays of the ``.npz`` member ``name`` (as :func:`longctx.persist.read_arrays`)."""
        return _arrays_from_bytes(self.read_bytes(name), self.path / name, keys)

    def npy(self, name: str, *, dtypes, ndim: int = 1, mmap: bool = False) -> np.ndarray:
        """The array of the ``.npy`` member ``name`` (:mod:`longctx.persist.npy`: a bounded
        header, one of ``dtypes``, ``ndim`` dimensions, sizes that agree), read-only.

        ``mmap=False`` reads the file once and checks it against its digest, as every other
        member. ``mmap=True`` maps it instead: its size is checked against the manifest's, but
        not its SHA-256 (that would read every byte at open); the caller checks the values.
        A map keeps the file of this save (a later save writes a new folder and renames it),
        but a file edited in place while mapped changes under it: load with ``mmap=False``
        what others may write to.
        """
        if name not in self.files:
            raise PersistError(f"{str(self.path / name)!r} is missing (not listed in {MANIFEST})")
        p = self.path / name
        if not mmap:
            return npy_from_bytes(self.read_bytes(name), p, dtypes=dtypes, ndim=ndim)
        expected = self.digests.get(name) if self.digests is not None else None
        fd = self._open(name)
        return map_npy(fd, p, dtypes=dtypes, ndim=ndim, size=expected and expected["size"])

    def sparse(self, name: str, *, shape: tuple[int, int] | None = None) -> sp.csr_array:
        """The sparse matrix of the ``.npz`` member ``name`` (as
        :func:`longctx.persist.read_sparse`; ``shape``, when given, is checked on the raw
        arrays before the matrix is built)."""
        return _sparse_from_bytes(self.read_bytes(name), self.path / name, shape)

    def has_unlisted_subdir(self, name: str) -> bool:
        """Whether ``name`` is a nested folder this manifest does not list, in a folder saved
        before manifests carried digests (longctx 0.1 wrote a LlamaIndex retriever's index so):
        :meth:`subdir` opens it with ``unlisted=True``. Never for a link."""
        if self.digests is not None or name in self.dirs or fs.member_name_problem(name):
            return False
        try:
            return stat.S_ISDIR(fs.lstat_member(self._fd, self.path, name).st_mode)
        except OSError:
            return False

    def subdir(self, name: str, *, unlisted: bool = False) -> IndexDir:
        """The nested index folder ``name`` (listed in ``"dirs"``), opened relative to this one
        and checked against the digest of its manifest; pass it to the nested index's ``load``
        (which checks its kind). ``unlisted=True`` also opens a folder that
        :meth:`has_unlisted_subdir` accepts.

        Raises
        ------
        PersistError
            Not listed, missing, a link, or its manifest differs from the digest recorded here.
        """
        p = self.path / name
        if name not in self.dirs and not (unlisted and self.has_unlisted_subdir(name)):
            raise PersistError(f"{str(p)!r} is missing (not listed in {MANIFEST} 'dirs')")
        fd = None
        if self._fd is not None:
            try:
                fd = fs.open_member(self._fd, self.path, name, directory=True)
            except FileNotFoundError:
                self._raise_changed(f"{str(p)!r} is missing")
            except OSError as exc:
                raise PersistError(f"{str(p)!r} cannot be opened as a folder: {exc}") from None
        else:
            self._check_member(name, directory=True)
        expected = self.digests.get(name) if self.digests is not None else None
        return IndexDir(p, fd, self._root, expected)


def _sibling_save_running(d: Path) -> bool:
    prefix = f".{d.name}."
    try:
        with os.scandir(d.parent) as it:
            return any(e.name.startswith(prefix + "tmp-") or e.name.startswith(prefix + "old-")
                       for e in it)  # fmt: skip
    except OSError:
        return False


def open_index_dir(
    path: str | os.PathLike | IndexDir,
    *,
    kind: str | None,
    versions: Iterable[int] | None = None,
    follow: bool = True,
) -> IndexDir:
    """Open the index folder ``path`` for reading as one save (see the module's docstring).

    Parameters
    ----------
    path : str, PathLike or IndexDir
        The folder, or a nested folder from :meth:`IndexDir.subdir` (then returned as is once
        its kind is checked).
    kind : str or None
        The index kind (``"mixpr"`` checks ``"format": "longctx.mixpr"``); ``None``: any.
    versions : iterable of int
        The format versions this loader reads.
    follow : bool
        ``False``: refuse ``path`` itself when it is a symbolic link, in the one ``open`` of
        the folder (``O_NOFOLLOW``; by an ``lstat`` first where members are not opened
        relative to the folder): a folder read from inside another (a ``persist_dir``'s
        index) is never reached through a link, even one put there after a check.

    Returns
    -------
    IndexDir
        Use it as a context manager (``with open_index_dir(...) as r:``), or let it be
        collected: its descriptor is closed then.

    Raises
    ------
    PersistError
        No folder or no manifest there, a damaged or foreign manifest, a name that is not a
        plain child name, a member that is a link or not a regular file; ``path`` a link
        (``follow=False``).
    """
    if isinstance(path, IndexDir):
        path.check_kind(kind, versions)
        return path
    d = _dir(path)
    fs.clean_stale_siblings(d)
    fd = None
    try:
        if not follow and not fs.HAVE_DIR_FD and d.is_symlink():
            raise OSError(errno.ELOOP, "a symbolic link")
        if fs.HAVE_DIR_FD:
            fd = fs.open_dir(d, follow=follow)
        elif not d.is_dir():
            raise NotADirectoryError(str(d))
    except OSError as exc:
        if not follow and (fs.is_link_error(exc) or d.is_symlink()):
            raise PersistError(
                f"{str(d)!r} is a symbolic link: this index is read from inside its folder, "
                "never through a link (refused)"
            ) from None
        message = f"{str(d)!r} is not a directory holding a saved longctx index"
        if _sibling_save_running(d):
            raise ConcurrentSaveError(f"{message} (a save to it is under way)") from None
        raise PersistError(message) from None
    r = IndexDir(d, fd, _Root(d, fd), None)
    try:
        r.check_kind(kind, versions)
    except BaseException:
        r.close()
        raise
    return r


def retry_on_concurrent_save(
    arg: str | Callable = "path", *, attempts: int | None = None
) -> Callable:
    """Decorator for an index loader: when the load raises :class:`ConcurrentSaveError` (another
    process replaced the folder while it was read), load again, up to :data:`LOAD_ATTEMPTS`
    times, then raise it. A loader given an :class:`IndexDir` (a nested folder of an outer
    load) is not retried: the outer load is.

    Parameters
    ----------
    arg : str
        The name of the loader's parameter holding the folder (``"path"``).
    attempts : int, optional
        Default :data:`LOAD_ATTEMPTS`.
    """
    if callable(arg):
        return retry_on_concurrent_save("path")(arg)

    def wrap(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def load(*args, **kwargs):
            try:
                where = sig.bind_partial(*args, **kwargs).arguments.get(arg)
            except TypeError:
                where = None
            if isinstance(where, IndexDir):
                return fn(*args, **kwargs)
            n = LOAD_ATTEMPTS if attempts is None else attempts
            for i in range(n):
                try:
                    return fn(*args, **kwargs)
                except ConcurrentSaveError as exc:
                    if i + 1 >= n:
                        raise
                    logger.info("load of %s met a concurrent save, again (%s)", where, exc)
                    time.sleep(0.02 * 2**i)
            raise AssertionError("unreachable")

        return load

    return wrap


def read_manifest_dict(path, *, kind: str, versions: Iterable[int]) -> dict:
    """The checked manifest of the folder ``path`` as a dict (for
    :func:`longctx.persist.read_manifest`)."""
    with open_index_dir(path, kind=kind, versions=versions) as r:
        return dict(r.manifest)


# -- one file read by path (no manifest: tests, tools, old formats) ----------------------------
def _read_file_bytes(p: Path, limit: int) -> bytes:
    """The bytes of the regular file ``p`` (at most ``limit``), read once."""
    try:
        size = p.stat().st_size
        if not p.is_file():
            raise PersistError(f"{str(p)!r} is not a regular file")
        if size > limit:
            raise PersistError(f"{str(p)!r} is {size} bytes, more than the limit of {limit}")
        with open(p, "rb") as fh:
            # read what the file holds (+1 to see it grow), not ``limit``: a read of n bytes
            # first allocates n (16 GiB for an .npz)
            raw = fh.read(min(size, limit) + 1)
    except FileNotFoundError:
        raise PersistError(f"{str(p)!r} is missing") from None
    except PersistError:
        raise
    except OSError as exc:
        raise PersistError(f"{str(p)!r} cannot be read: {str(exc)[:200]}") from None
    if len(raw) > min(size, limit):
        raise PersistError(f"{str(p)!r} grew while it was read (or passed the limit of {limit})")
    return raw


def read_json(
    path: str | os.PathLike, *, max_bytes: int | None = None, max_depth: int | None = None
) -> Any:
    """``json.loads`` of one file, bounded and strict, with a :class:`PersistError` naming it.

    Parameters
    ----------
    path : str or PathLike
    max_bytes : int, optional
        Largest file size accepted (default :data:`MAX_JSON_BYTES`).
    max_depth : int, optional
        Deepest list/dict nesting accepted (default :data:`MAX_JSON_DEPTH`).

    Raises
    ------
    PersistError
        Missing, too large, not UTF-8, not JSON, nested too deep, or holding ``NaN`` /
        ``Infinity`` or an integer of more than 4300 digits.
    """
    p = Path(path)
    raw = _read_file_bytes(p, MAX_JSON_BYTES if max_bytes is None else max_bytes)
    return _parse_json_bytes(raw, p, max_depth)


def read_arrays(path: str | os.PathLike, keys: Iterable[str]) -> dict[str, np.ndarray]:
    """Load the arrays of one ``.npz`` file (no pickle), checking that each of ``keys`` is there
    and numeric, and bounding every array's size from its header before it is read.

    Raises
    ------
    PersistError
        The file is missing, truncated, damaged, lacks one of ``keys``, holds a non-numeric
        array, or an array header claims more bytes than the file holds (or
        :data:`MAX_ARRAY_BYTES`).
    """
    p = Path(path)
    return _arrays_from_bytes(_open_npz_raw(p), p, keys)


def _open_npz_raw(p: Path) -> bytes:
    return _read_file_bytes(p, MAX_NPZ_BYTES)


def read_sparse(path: str | os.PathLike, *, shape: tuple[int, int] | None = None) -> sp.csr_array:
    """Load one scipy.sparse ``.npz`` (CSR or CSC, as ``scipy.sparse.save_npz`` writes it) as a
    CSR array. Order: every ``.npy`` header bounded by the bytes stored, the arrays read
    (``allow_pickle=False``), then format, shape (``== shape`` when given), dtypes, lengths,
    ``indptr`` and ``indices`` checked on the raw arrays (:func:`_check_sparse_arrays`), and
    only then the matrix built (and a CSC one converted).

    Parameters
    ----------
    path : str or PathLike
    shape : (int, int), optional
        The shape the caller expects (checked before the matrix is built).

    Raises
    ------
    PersistError
        The file is missing, truncated, damaged, or the matrix is malformed (another shape,
        index out of range, ``indptr`` not monotone, non-numeric or non-finite values, a CSC
        row count far beyond its stored values).
    """
    p = Path(path)
    return _sparse_from_bytes(_open_npz_raw(p), p, shape)


def read_manifest(path: str | os.PathLike, *, kind: str, versions: Iterable[int]) -> dict:
    """Read and check ``DIR/manifest.json``; returns it as a dict.

    Loaders should use :func:`open_index_dir`, which also reads the members as one save; this
    function checks the manifest alone (kind, version, plain member names, members present as
    regular files and folders, never links).

    Raises
    ------
    PersistError
        The directory or manifest is missing or damaged, was written for another ``kind`` or
        another format version than ``versions``, lists a name that is not a plain file name,
        or a listed member is missing or a link.
    """
    return read_manifest_dict(path, kind=kind, versions=versions)


__all__ = [
    "ConcurrentSaveError",
    "IndexDir",
    "LOAD_ATTEMPTS",
    "MAX_NPZ_BYTES",
    "open_index_dir",
    "retry_on_concurrent_save",
    "read_manifest",
    "read_json",
    "read_arrays",
    "read_sparse",
]
