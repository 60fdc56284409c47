"""Where a corpus lives: a local folder or an fsspec URL (``file://``, ``memory://``, ``s3://``...).

A thin layer over :mod:`fsspec` that leaves :mod:`longctx.persist` alone: every index is still
written and read by its own ``save`` / ``load`` in a *local* folder; this module copies such a
folder to the corpus location (:meth:`Storage.put_index`) and fetches one back into a temporary
folder for ``load`` (:meth:`Storage.fetch_index`).

Never half-written as done: an index folder is complete once its own ``manifest.json`` is there
(``persist.write_dir`` writes it last). A local corpus gets the folder by one ``rename`` of a
finished sibling; a remote one gets every other file first and ``manifest.json`` last, and the
corpus manifest says ``"done"`` only after that. Nothing here deletes a file it did not write:
only the index folder being replaced (inside the corpus) is removed.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tempfile
import uuid
from pathlib import Path

from longctx.persist.corpus_manifest import MAX_MANIFEST_BYTES  # the largest JSON read back
from longctx.persist.format import loadable_json
from longctx.persist.marks import is_url, write_json_atomic
from longctx.persist.reader import MAX_NPZ_BYTES

__all__ = ["Storage", "open_storage"]

_INDEX_MANIFEST = "manifest.json"
#: Largest file :meth:`Storage.fetch_index` copies from a remote corpus (bytes): the largest
#: member an index load reads (:data:`longctx.persist.reader.MAX_NPZ_BYTES`, 16 GiB).
MAX_FETCH_BYTES = MAX_NPZ_BYTES


_NOT_REGULAR = "is not a regular file (a folder, a FIFO or a device)"


def _regular_size(fd: int, where: str, limit: int) -> int:
    """The size of the open descriptor ``fd`` when it is a regular file of at most ``limit``
    bytes; else it is closed and a :class:`~longctx.persist.PersistError` names ``where``."""
    from longctx.persist import PersistError

    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = _NOT_REGULAR
    elif st.st_size > limit:
        why = f"is larger than {limit} bytes"
    if why is not None:
        os.close(fd)
        raise PersistError(f"{where!r} {why}")
    return st.st_size


def _read_local_file(root: Path, rel: str, limit: int, where: str) -> bytes | None:
    """The bytes of the file ``root / rel`` (at most ``limit``), or ``None`` when it is missing;
    read as a member of an index folder is (:class:`longctx.persist.IndexDir`): no component
    below ``root`` followed through a symbolic link (:func:`longctx.persist.fs.open_below`),
    opened without blocking and refused unless a regular file, read once, bounded.

    Session 20 (2026-11-29): ``corpus.json`` and ``indexes/shards.json`` were read with
    ``is_file()`` / ``read_bytes()``, which follow links: a corpus whose ``corpus.json`` linked
    to a file outside it loaded that file. Session 20 review: each folder on the way was then
    checked with ``is_symlink()`` and the file opened by its whole path, which followed a link
    swapped in between; now each folder is opened relative to the one above it.

    Raises
    ------
    longctx.persist.PersistError
        A link, a file that is not regular (a folder, a FIFO, a device), larger than
        ``limit``, unreadable; ``rel`` not a plain relative path.
    """
    from longctx.persist import PersistError
    from longctx.persist.fs import is_link_error, member_name_problem, open_below

    parts = Path(rel).parts
    if not parts or any(member_name_problem(part) for part in parts):
        raise PersistError(f"{where!r}: {rel!r} is not a plain relative path")
    try:
        fd = open_below(root, parts)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if is_link_error(exc):
            raise PersistError(
                f"{where!r} is reached through a symbolic link: the files of a corpus are read "
                "from inside its folder, never through a link (refused)"
            ) from None
        if exc.errno == errno.EINVAL:  # open_member refuses anything but a regular file
            raise PersistError(f"{where!r} {_NOT_REGULAR}") from None
        raise PersistError(f"{where!r} cannot be read: {exc.strerror or exc}") from None
    size = _regular_size(fd, where, limit)
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(size + 1)  # what it holds (+1 to see it grow), never ``limit``
    if len(data) > limit:
        raise PersistError(f"{where!r} is larger than {limit} bytes")
    return data


class Storage:
    """A corpus root: a local folder (``str`` path or ``file://`` URL) or any fsspec URL.

    Picklable (the file system is opened lazily in each process), so Ray workers get it as is.

    Parameters
    ----------
    url : str or PathLike
        The corpus root.
    storage_options : dict, optional
        Passed to ``fsspec.filesystem`` (credentials, endpoint...).

    Attributes
    ----------
    local : pathlib.Path or None
        The root as a local path when it is one (plain path or ``file://``).
    shared : bool
        Whether other processes see what this one writes (``False`` for ``memory://``, which
        lives in one process: Ray workers then hand their files to the driver, which writes them).
    """

    def __init__(self, url, storage_options: dict | None = None):
        if not isinstance(url, (str, os.PathLike)):
            raise TypeError(f"out must be a str path or URL, got {type(url).__name__}")
        s = os.fspath(url)
        if not s.strip():
            raise ValueError("out is empty")
        self.url = s
        self.storage_options = dict(storage_options or {})
        self.local: Path | None = None
        if not is_url(s):
            self.local = Path(s).absolute()
        elif s.startswith("file://"):
            self.local = Path(s[len("file://") :]).absolute()
        self.protocol = "file" if self.local is not None else s.split("://", 1)[0]
        self.shared = self.protocol != "memory"
        self._fs = None

    def __getstate__(self):
        return {**self.__dict__, "_fs": None}

    def __repr__(self) -> str:
        return f"Storage({self.url!r})"

    # -- fsspec ----------------------------------------------------------------------------------
    @property
    def fs(self):
        """The ``fsspec`` file system (remote roots only)."""
        if self._fs is None:
            try:
                import fsspec
            except ModuleNotFoundError:
                raise ModuleNotFoundError(
                    f"out={self.url!r} is a URL: install fsspec (pip install fsspec) and the "
                    "package of its protocol (s3fs, gcsfs...)",
                    name="fsspec",
                ) from None
            self._fs = fsspec.filesystem(self.protocol, **self.storage_options)
        return self._fs

    def _remote(self, rel: str) -> str:
        root = self.url.split("://", 1)[1].rstrip("/")
        rel = rel.strip("/")
        return f"{root}/{rel}" if rel else root

    def location(self, rel: str) -> str:
        """The path (local) or URL of ``rel`` under the root."""
        if self.local is not None:
            return str(self.local / rel)
        return f"{self.protocol}://{self._remote(rel)}"

    # -- small files -----------------------------------------------------------------------------
    def read_json(self, rel: str, limit: int = MAX_MANIFEST_BYTES):
        """The JSON document at ``rel``, or ``None`` when there is none.

        Raises
        ------
        longctx.persist.PersistError
            It is larger than ``limit`` bytes, not JSON, or nested deeper than
            :data:`longctx.persist.MAX_JSON_DEPTH`; in a local folder also when it, or a
            folder on its way below the root, is a symbolic link, or it is not a regular file
            (a folder, a FIFO: :func:`_read_local_file`).
        """
        from longctx.persist import PersistError, parse_json

        where = self.location(rel)
        if self.local is not None:
            data = _read_local_file(self.local, rel, limit, where)
            if data is None:
                return None
        else:
            path = self._remote(rel)
            if not self.fs.isfile(path):
                return None
            size = self.fs.size(path)
            if size is not None and size > limit:
                raise PersistError(f"{where!r} is larger than {limit} bytes")
            if size is None:  # a store that does not say (HTTP without a length): read bounded
                with self.fs.open(path, "rb") as fh:  # (it was read whole: session 20)
                    data = fh.read(limit + 1)
            else:
                data = self.fs.cat_file(path)
        if len(data) > limit:
            raise PersistError(f"{where!r} is larger than {limit} bytes")
        return parse_json(data, where)

    def write_json(self, rel: str, obj, limit: int = MAX_MANIFEST_BYTES) -> None:
        """Write ``obj`` at ``rel`` as a whole: local roots write a temporary sibling and
        ``os.replace`` it; object stores replace the object in one put.

        Raises
        ------
        ValueError
            What :meth:`read_json` would refuse (over ``limit`` bytes, its default's, nested
            deeper than :data:`longctx.persist.MAX_JSON_DEPTH`, more values than
            :data:`longctx.persist.MAX_JSON_VALUES`; :func:`longctx.persist.format.loadable_json`),
            named; nothing is written then.
        """
        if self.local is not None:
            write_json_atomic(self.local / rel, obj, limit=limit)
        else:
            data = loadable_json(self.location(rel), obj, limit=limit, indent=1,
                                 after="nothing was written")  # fmt: skip
            path = self._remote(rel)
            self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            self.fs.pipe_file(path, data)

    # -- index folders ---------------------------------------------------------------------------
    def index_complete(self, rel: str) -> bool:
        """Whether the index folder ``rel`` has its ``manifest.json`` (written last)."""
        if self.local is not None:
            return (self.local / rel / _INDEX_MANIFEST).is_file()
        return self.fs.isfile(self._remote(f"{rel}/{_INDEX_MANIFEST}"))

    def scratch_dir(self, rel: str, key: str = "") -> Path | None:
        """A local folder, next to the index, where a build may keep its checkpoint so that an
        interrupted build resumes (GARLIC); ``None`` for remote roots. ``key`` (the text's
        sha256) keeps a changed document from meeting the checkpoint of its old text."""
        if self.local is None:
            return None
        return self.local / ".partial" / f"{Path(rel).name}{'-' + key[:12] if key else ''}"

    def put_index(self, local_dir: str | os.PathLike, rel: str) -> None:
        """Make the finished index folder ``local_dir`` the index ``rel`` of the corpus.

        Local roots: ``local_dir`` is moved next to ``rel`` and renamed over it (an old ``rel``
        is moved aside first, then removed). Remote roots: every file is uploaded, the index's
        ``manifest.json`` last; an old ``rel`` is removed first.
        """
        src = Path(local_dir)
        if not (src / _INDEX_MANIFEST).is_file():
            raise ValueError(f"{str(src)!r} is not a finished index folder (no manifest.json)")
        if self.local is not None:
            dst = self.local / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            staged = dst.with_name(f".{dst.name}.{uuid.uuid4().hex}.new")
            shutil.move(str(src), staged)
            old = None
            if dst.exists():
                old = dst.with_name(f".{dst.name}.{uuid.uuid4().hex}.old")
                dst.rename(old)
            staged.rename(dst)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
            return
        self.put_files({f.name: f.read_bytes() for f in sorted(src.iterdir()) if f.is_file()}, rel)

    def remove_index(self, rel: str) -> None:
        """Remove the index folder ``rel`` (nothing when it is not there); local folders are
        checked not to be reached through a link (:meth:`local_index`)."""
        if self.local is not None:
            p = self.local_index(rel)
            if p.is_dir():
                shutil.rmtree(p)
            return
        path = self._remote(rel)
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)

    def put_files(self, files: dict[str, bytes], rel: str) -> None:
        """Write an index folder given as ``{file name: bytes}`` (``manifest.json`` last)."""
        if _INDEX_MANIFEST not in files:
            raise ValueError("an index folder needs its manifest.json")
        for name in files:
            if "/" in name or "\\" in name or name in ("", ".", ".."):
                raise ValueError(f"bad index file name {name!r}")
        if self.local is not None:
            tmp = Path(tempfile.mkdtemp(prefix=".put.", dir=self._ensure_local_parent(rel)))
            for name, data in files.items():
                (tmp / name).write_bytes(data)
            self.put_index(tmp, rel)
            return
        path = self._remote(rel)
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)
        self.fs.makedirs(path, exist_ok=True)
        for name in sorted(files, key=lambda n: n == _INDEX_MANIFEST):
            self.fs.pipe_file(f"{path}/{name}", files[name])

    def _ensure_local_parent(self, rel: str) -> Path:
        parent = (self.local / rel).parent
        parent.mkdir(parents=True, exist_ok=True)
        return parent

    def local_index(self, rel: str) -> Path:
        """The local path of the index folder ``rel`` (local roots), every component below the
        root checked not to be a symbolic link.

        Raises
        ------
        longctx.persist.PersistError
            ``rel`` is not a plain relative path, or a component of it is a link (a shard or
            index folder linked out of the corpus is never followed).
        """
        from longctx.persist import PersistError

        if self.local is None:
            raise ValueError(f"{self.url!r} is not a local folder")
        p = self.local
        for part in Path(rel).parts:
            if part in (".", "..") or os.path.isabs(part):
                raise PersistError(f"{self.location(rel)!r}: {rel!r} is not a plain relative path")
            p = p / part
            if p.is_symlink():
                raise PersistError(
                    f"{str(p)!r} is a symbolic link: the indexes of a corpus are read from inside "
                    "its folder, never through a link (refused)"
                )
        return p

    def fetch_index(self, rel: str, into: str | os.PathLike) -> Path:
        """A local folder holding the index ``rel``: the folder itself for local roots (never
        through a link: :meth:`local_index`), else a copy in ``into`` (a folder the caller owns
        and removes), each file copied in blocks.

        Raises
        ------
        longctx.persist.PersistError
            A remote file larger than :data:`MAX_FETCH_BYTES` (or of no known size), before
            anything of it is read.
        """
        if self.local is not None:
            return self.local_index(rel)
        from longctx.persist import PersistError

        dst = Path(into) / Path(rel).name
        dst.mkdir(parents=True, exist_ok=True)
        path = self._remote(rel)
        for info in self.fs.ls(path, detail=True):
            f = info["name"]
            name = f.rstrip("/").rsplit("/", 1)[-1]
            if name in ("", ".", "..") or info.get("type") == "directory" or self.fs.isdir(f):
                continue
            size = info.get("size")
            if not isinstance(size, int) or size > MAX_FETCH_BYTES:
                what = f"is {size} bytes, more than" if isinstance(size, int) else "has no size:"
                raise PersistError(
                    f"{self.location(f'{rel}/{name}' if rel else name)!r} {what} the limit of "
                    f"{MAX_FETCH_BYTES} bytes for a file of an index (damaged or forged)"
                )
            # copied in blocks, never held whole: the whole object was read into memory first
            # (``cat_file``), whatever its size (session 20)
            self.fs.get_file(f, str(dst / name))
        return dst


def open_storage(out, storage_options: dict | None = None) -> Storage:
    """:class:`Storage` for ``out`` (a ``Storage`` is returned as is)."""
    if isinstance(out, Storage):
        return out
    return Storage(out, storage_options)
