"""Arrays stored as plain ``.npy`` members, so that a load can map them instead of reading them
(format version 3 of a MixPR index; the layout of :mod:`longctx.persist.format` otherwise).

An ``.npy`` file is a short header (dtype, shape, order) padded to a multiple of 64 bytes, then
the raw values: uncompressed and aligned, so ``mmap`` serves them from the page cache without a
copy (bm25s maps its indexes the same way: Lù, 2024, arXiv:2407.03618, sec. 2). What a member
read here must satisfy before a single value is read:

- a version 1.0 / 2.0 header of at most :data:`MAX_HEADER_BYTES`, parsed by numpy's
  ``read_array_header_*`` (:func:`longctx.persist.format.read_npy_header`, as format 2's ``.npz``
  members) (a ``literal_eval`` of a bounded dict: no pickle, no code);
- a dtype from the caller's list (numeric, little-endian or native), ``fortran_order`` false, a
  shape of the caller's number of dimensions;
- header + ``prod(shape) * itemsize`` equal to the file's size (no trailing or missing byte) and
  at most :data:`MAX_MAPPED_BYTES`.

The values themselves are checked by the caller with the chunked scans below
(:func:`check_compressed`, :func:`check_values`): each reads an array once in blocks of
:data:`SCAN_ITEMS` values (a bounded temporary) and then gives the pages back
(:func:`release`), so an index checked at open holds in memory only what its queries touch.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from pathlib import Path

import numpy as np

from longctx.persist.format import (
    MAX_NPY_HEADER_BYTES,
    PersistError,
    plain_dtype,
    read_npy_header,
)

#: Largest ``.npy`` header accepted (bytes; numpy writes 128 for a 1-D array).
MAX_HEADER_BYTES = MAX_NPY_HEADER_BYTES
#: Largest ``.npy`` member mapped or read (bytes); ``LONGCTX_MAX_MAPPED_BYTES`` overrides it.
MAX_MAPPED_BYTES = int(os.environ.get("LONGCTX_MAX_MAPPED_BYTES", 1 << 40))
#: Values per block of a chunked scan (a scan's temporaries stay under ~ 8 bytes x this).
SCAN_ITEMS = 1 << 20


def _header(head: bytes, p: Path) -> tuple[tuple, np.dtype, int]:
    """``(shape, dtype, data offset)`` from the first bytes of an ``.npy`` file."""
    import io

    fh = io.BytesIO(head)
    shape, fortran, dtype = read_npy_header(fh, f"{str(p)!r} is not a valid .npy file")
    if fortran:
        raise PersistError(f"{str(p)!r}: Fortran-ordered arrays are not accepted")
    return shape, dtype, fh.tell()


def _checked_layout(head: bytes, size: int, p: Path, dtypes, ndim: int):
    shape, dtype, offset = _header(head, p)
    ok = [np.dtype(d) for d in dtypes]
    if dtype not in ok or dtype.byteorder == ">" or not plain_dtype(dtype):
        names = ", ".join(str(d) for d in ok)
        raise PersistError(f"{str(p)!r} holds dtype {str(dtype)[:40]}, expected one of {names}")
    if len(shape) != ndim or any(not isinstance(s, int) or s < 0 for s in shape):
        raise PersistError(f"{str(p)!r} has shape {str(shape)[:80]}, expected {ndim} dimension(s)")
    want = offset + int(np.prod(shape, dtype=object)) * dtype.itemsize
    if want != size:
        raise PersistError(
            f"{str(p)!r} holds {size} bytes but its header describes {want} (truncated or damaged)"
        )
    if size > MAX_MAPPED_BYTES:
        raise PersistError(f"{str(p)!r} is {size} bytes, more than the limit {MAX_MAPPED_BYTES}")
    if any(s > MAX_MAPPED_BYTES for s in shape):  # an empty array's other sides (0 bytes)
        raise PersistError(f"{str(p)!r} has shape {str(shape)[:80]}: a side over the limit")
    return shape, dtype, offset


def map_npy(fd: int, p: Path, *, dtypes, ndim: int = 1, size: int | None = None) -> np.ndarray:
    """The array of the ``.npy`` file open as ``fd`` (closed here), mapped read-only.

    Parameters
    ----------
    fd : int
        A descriptor of the regular file (from :func:`longctx.persist.fs.open_member`).
    p : Path
        Its path, for messages.
    dtypes : sequence of dtype
        The dtypes accepted.
    ndim : int
    size : int, optional
        The size the manifest recorded (checked against the file's).

    Returns
    -------
    numpy.ndarray
        Read-only (``writeable`` false), backed by a private read-only map of the file; an
        empty array is not mapped.

    Raises
    ------
    PersistError
        A header that is not a bounded ``.npy`` one, another dtype or number of dimensions, a
        size that differs from the header's, the manifest's or the limit.
    """
    try:
        real = os.fstat(fd).st_size
        if size is not None and real != size:
            raise PersistError(
                f"{str(p)!r} holds {real} bytes, the save wrote {size} (changed after the save)"
            )
        head = os.pread(fd, min(real, MAX_HEADER_BYTES + 16), 0)
        shape, dtype, offset = _checked_layout(head, real, p, dtypes, ndim)
        if real == offset:
            out = np.zeros(shape, dtype)
        else:
            mm = mmap.mmap(fd, real, access=mmap.ACCESS_READ)
            out = np.frombuffer(mm, dtype=dtype, count=int(np.prod(shape)), offset=offset)
            out = out.reshape(shape)
    finally:
        os.close(fd)
    out.setflags(write=False)
    return out


def npy_from_bytes(raw: bytes, p: Path, *, dtypes, ndim: int = 1) -> np.ndarray:
    """The array of an ``.npy`` file read whole as ``raw`` (the checks of :func:`map_npy`);
    read-only, backed by ``raw``."""
    shape, dtype, offset = _checked_layout(raw[: MAX_HEADER_BYTES + 16], len(raw), p, dtypes, ndim)
    out = np.frombuffer(raw, dtype=dtype, count=int(np.prod(shape)), offset=offset)
    return out.reshape(shape)


class _HashingWriter:
    """A binary file that hashes what is written to it (SHA-256) and counts its bytes."""

    def __init__(self, fh):
        self._fh = fh
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, b) -> int:
        self.sha.update(b)
        self.size += len(b)
        return self._fh.write(b)


#: Bytes of an array's values written (and hashed) at a time by :func:`write_npy`.
_WRITE_CHUNK = 1 << 24


def write_npy(path: str | os.PathLike, a: np.ndarray) -> tuple[str, int]:
    """Write ``a`` as a C-ordered ``.npy`` (version 1.0 header, the bytes of ``np.save``; no
    pickle; object dtypes refused). Returns ``(hex SHA-256, size in bytes)`` of the file,
    hashed while it is written (its values straight from the array's memory, never read back)."""
    a = np.ascontiguousarray(a)
    if a.dtype == object or a.dtype.fields is not None:
        raise TypeError(f"{Path(path).name}: dtype {a.dtype} is not saved")
    fmt = np.lib.format
    with open(path, "wb") as fh:
        out = _HashingWriter(fh)
        fmt.write_array_header_1_0(out, fmt.header_data_from_array_1_0(a))
        raw = memoryview(a.reshape(-1).view(np.uint8)) if a.size else memoryview(b"")
        for i in range(0, len(raw), _WRITE_CHUNK):
            out.write(raw[i : i + _WRITE_CHUNK])
    return out.sha.hexdigest(), out.size


def release(*arrays: np.ndarray) -> None:
    """Give back the pages of mapped arrays that a check read (``MADV_DONTNEED``: the next read
    maps them again from the page cache); arrays in memory are left as they are."""
    for a in arrays:
        base = mapped_base(a)
        if base is not None and hasattr(mmap, "MADV_DONTNEED"):
            try:
                base.madvise(mmap.MADV_DONTNEED)
            except (OSError, ValueError):  # a closed map, or a platform without it
                pass


def mapped_base(a: np.ndarray) -> mmap.mmap | None:
    """The map an array is a view of (``None``: an array in memory)."""
    base = a
    while True:
        if isinstance(base, mmap.mmap):
            return base
        if isinstance(base, memoryview):
            base = base.obj
        elif isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        else:
            return None


def _blocks(n: int):
    for a in range(0, n, SCAN_ITEMS):
        yield a, min(a + SCAN_ITEMS, n)


def check_values(a: np.ndarray, where: str, *, low=None, high=None, finite: bool = False) -> None:
    """Check every value of ``a`` in blocks: ``low <= v <= high`` (each bound optional),
    finite when asked. ``where`` names the file and field in the error."""
    flat = a.reshape(-1)
    for s, e in _blocks(len(flat)):
        b = flat[s:e]
        if finite and not np.isfinite(b).all():
            raise PersistError(f"{where}: non-finite values")
        if len(b) and low is not None and b.min() < low:
            raise PersistError(f"{where}: values below {low}")
        if len(b) and high is not None and b.max() > high:
            raise PersistError(f"{where}: values above {high}")
    release(a)


def check_compressed(indptr, indices, n_major: int, n_minor: int, where: str) -> None:
    """Check the index arrays of a CSR (rows major) or CSC (columns major) matrix of
    ``n_major x n_minor``: ``indptr`` of ``n_major + 1`` entries from 0 to ``len(indices)``,
    non-decreasing; every index in ``[0, n_minor)`` and strictly increasing within its row
    (column): sorted, no duplicate. Read in blocks; the pages are given back after.

    Raises
    ------
    PersistError
        Naming ``where`` and the first problem.
    """
    nnz = len(indices)
    if indptr.shape != (n_major + 1,):
        raise PersistError(f"{where}: indptr has {len(indptr)} entries, expected {n_major + 1}")
    if int(indptr[0]) != 0 or int(indptr[-1]) != nnz:
        raise PersistError(f"{where}: indptr must run from 0 to {nnz} (the stored indices)")
    for s, e in _blocks(n_major + 1):
        lo = max(s - 1, 0)
        if np.any(np.diff(indptr[lo:e]) < 0):
            raise PersistError(f"{where}: indptr is not monotone")
    # a position starts a row when some indptr points at it: there the order restarts
    starts = np.zeros(SCAN_ITEMS, dtype=bool)
    for s, e in _blocks(nnz):
        b = indices[s:e]
        if b.min() < 0 or b.max() >= n_minor:
            raise PersistError(f"{where}: indices out of range [0, {n_minor})")
        lo = int(np.searchsorted(indptr, s, side="left"))
        hi = int(np.searchsorted(indptr, e, side="left"))
        first = starts[: e - s]
        first[:] = False
        first[np.asarray(indptr[lo:hi]) - s] = True
        up = b[1:] > b[:-1]
        up |= first[1 : e - s]
        if s > 0:  # the last index of the block before
            prev_ok = bool(first[0]) or int(indices[s - 1]) < int(b[0])
            if not prev_ok:
                raise PersistError(f"{where}: indices not sorted within a row (or duplicated)")
        if not up.all():
            raise PersistError(f"{where}: indices not sorted within a row (or duplicated)")
    release(indptr, indices)


__all__ = [
    "MAX_HEADER_BYTES",
    "MAX_MAPPED_BYTES",
    "check_compressed",
    "check_values",
    "map_npy",
    "mapped_base",
    "npy_from_bytes",
    "release",
    "write_npy",
]
