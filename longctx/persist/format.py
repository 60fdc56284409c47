"""Saving and loading indexes: JSON for configuration and text, ``.npz`` for arrays. Never pickle.

Layout of an index directory::

    DIR/manifest.json   {"format": "longctx.<kind>", "format_version": N, "longctx_version": ...,
                         "files": [...], "dirs": [...],
                         "digests": {name: {"sha256": hex, "size": bytes}}, ...}   written last
    DIR/<name>.json     JSON documents (configuration, vocabularies, node texts)
    DIR/<name>.npz      numpy arrays (``allow_pickle=False``) or one scipy.sparse matrix
    DIR/<sub>/          a nested index (its own manifest), listed in ``"dirs"``

``"digests"`` holds every member file's SHA-256 and size, and for a nested index the digest of
its ``manifest.json`` (manifests written before longctx 0.3 have none and still load).

**Saving** (:func:`write_dir`) never deletes or replaces anything it did not write: the target
must be missing, an empty directory, or a longctx index of the same kind; anything else (a file,
a directory holding other files, a manifest listing anything but plain file names, a member that
is a link) is a :class:`SaveTargetError` and stays untouched. The index is written into a
temporary sibling ``.NAME.tmp-<host>-<pid>-<token>`` and renamed into place; an index it replaces
is moved aside first (``.NAME.old-...``) and only the files its manifest lists are deleted
afterwards, each opened relative to that folder without following links
(:func:`longctx.persist.fs.remove_index`). Saves to one directory are serialized (an advisory
lock on the parent directory, and a lock per path within a process). Siblings left by a save
that was killed are removed on the next save or load of the same path
(:func:`longctx.persist.fs.clean_stale_siblings`). A new folder's mode follows the umask; a
replaced folder keeps its mode and group.

**Loading** goes through :func:`open_index_dir` (:mod:`longctx.persist.reader`): the files of one
save only, each read once and checked against the manifest's digests, no member followed out of
the folder. It treats every file as untrusted input: JSON files are size-limited
(:data:`MAX_JSON_BYTES`) and depth-limited (:data:`MAX_JSON_DEPTH`), ``NaN`` / ``Infinity`` are
refused, every ``.npy`` header inside an ``.npz`` is read and its shape x itemsize checked
against the stored size and :data:`MAX_ARRAY_BYTES` before any allocation, only numeric dtypes
are accepted, sparse matrices are fully checked (index ranges, ``indptr`` order). The
``check_*`` helpers below validate loaded values. Every loading error is a :class:`PersistError`
(a ``ValueError``) naming the file and, where it applies, the field.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import numbers
import os
import struct
import zipfile
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from longctx.persist.fs import MANIFEST  # noqa: F401 - re-exported
from longctx.persist.writer import (  # noqa: F401 - re-exported (the writer's own module)
    SaveTargetError,
    _dir,
    _remove_index,
    check_save_target,
    write_dir,
)

logger = logging.getLogger(__name__)

#: Largest JSON file read (bytes); ``LONGCTX_MAX_JSON_BYTES`` overrides it.
MAX_JSON_BYTES = int(os.environ.get("LONGCTX_MAX_JSON_BYTES", 1 << 30))
#: Deepest nesting of lists/dicts accepted in a JSON file.
MAX_JSON_DEPTH = 64
#: Largest single array read from an ``.npz`` (bytes); ``LONGCTX_MAX_ARRAY_BYTES`` overrides it.
MAX_ARRAY_BYTES = int(os.environ.get("LONGCTX_MAX_ARRAY_BYTES", 8 << 30))

_NUMERIC_KINDS = "biuf"


class PersistError(ValueError):
    """A saved index cannot be read: the message names the file and the problem."""


class ConcurrentSaveError(PersistError):
    """A file of an index folder changed while it was loaded: another process saved over the
    folder meanwhile (the load saw parts of two saves and refused them). Loaders decorated with
    :func:`longctx.persist.reader.retry_on_concurrent_save` load again before raising it."""


# -- loading ------------------------------------------------------------------------------------
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
    from longctx.persist.reader import read_manifest_dict

    return read_manifest_dict(path, kind=kind, versions=versions)


def _check_depth(obj: Any, p: Path, limit: int) -> None:
    stack = [(obj, 1)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, (list, dict)):
            if depth > limit:
                raise PersistError(f"{str(p)!r} is nested deeper than {limit} levels")
            stack.extend((y, depth + 1) for y in (x.values() if isinstance(x, dict) else x))


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not allowed")


def _parse_json_bytes(raw: bytes, p: Path, max_depth: int | None) -> Any:
    """``json.loads`` of the bytes of file ``p`` (strict, depth-bounded)."""
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except RecursionError:
        raise PersistError(f"{str(p)!r} is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise PersistError(f"{str(p)!r} is damaged or truncated: {str(exc)[:200]}") from None
    _check_depth(data, p, MAX_JSON_DEPTH if max_depth is None else max_depth)
    return data


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


def parse_json(raw: bytes | str, where: str, *, max_depth: int | None = None) -> Any:
    """``json.loads`` of bytes or text already read (a corpus manifest from an object store, a
    line of a JSONL file), strict and depth-limited like :func:`read_json`; the caller bounds
    the size.

    Parameters
    ----------
    raw : bytes or str
        UTF-8 bytes or text.
    where : str
        What the error names (a path, a URL, ``"file.jsonl line 3"``).
    max_depth : int, optional
        Deepest list/dict nesting accepted (default :data:`MAX_JSON_DEPTH`).

    Raises
    ------
    PersistError
        Not UTF-8, not JSON, nested too deep, or holding ``NaN`` / ``Infinity`` or an integer
        of more than 4300 digits (the message names ``where``).
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
        data = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise PersistError(f"{where!r} is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise PersistError(f"{where!r} is damaged or truncated: {str(exc)[:200]}") from None
    _check_depth(data, where, MAX_JSON_DEPTH if max_depth is None else max_depth)
    return data


def _check_npz_headers(p: Path, zf: zipfile.ZipFile) -> None:
    """Read every ``.npy`` header of an open ``.npz`` and bound its size before any load."""
    fmt = np.lib.format
    for info in zf.infolist():
        if not info.filename.endswith(".npy"):
            continue
        key = info.filename[:-4]
        with zf.open(info) as fh:
            try:
                major_minor = fmt.read_magic(fh)
                if major_minor == (1, 0):
                    shape, fortran, dtype = fmt.read_array_header_1_0(fh)
                elif major_minor == (2, 0):
                    shape, fortran, dtype = fmt.read_array_header_2_0(fh)
                else:
                    raise ValueError(f"unsupported .npy format version {major_minor}")
            except (ValueError, EOFError, OSError, SyntaxError, TypeError) as exc:
                raise PersistError(
                    f"{str(p)!r}: array {key!r} has a damaged header: {str(exc)[:200]}"
                ) from None
        if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
            raise PersistError(f"{str(p)!r}: array {key!r} has dtype {dtype}, not a plain one")
        count = math.prod(int(s) for s in shape)
        nbytes = count * dtype.itemsize
        stored = info.file_size
        if info.compress_type != zipfile.ZIP_STORED:
            stored = min(stored, info.compress_size * 1100)  # deflate expands at most ~1032x
        if nbytes > stored or nbytes > MAX_ARRAY_BYTES:
            raise PersistError(
                f"{str(p)!r}: array {key!r} claims shape {tuple(shape)} of {dtype} "
                f"({nbytes} bytes) but the file stores {info.file_size} bytes (limit "
                f"{MAX_ARRAY_BYTES}): damaged or forged"
            )


#: What a damaged zip archive can raise from ``zipfile`` / ``zlib`` / ``numpy.load`` (an unknown
#: compression method is a NotImplementedError, an "encrypted" flag a RuntimeError).
_ZIP_ERRORS = (
    OSError,
    ValueError,
    zipfile.BadZipFile,
    EOFError,
    KeyError,
    IndexError,
    TypeError,
    OverflowError,
    MemoryError,
    NotImplementedError,
    RuntimeError,
    zlib.error,
    struct.error,
)


def _load_npz_bytes(raw: bytes, p: Path) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` bytes of file ``p`` (headers bounded first, no pickle)."""
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            _check_npz_headers(p, zf)
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except PersistError:
        raise
    except _ZIP_ERRORS as exc:
        raise PersistError(f"{str(p)!r} is damaged or truncated: {str(exc)[:200]}") from None


def _arrays_from_bytes(raw: bytes, p: Path, keys: Iterable[str]) -> dict[str, np.ndarray]:
    out = _load_npz_bytes(raw, p)
    keys = list(keys)
    missing = [k for k in keys if k not in out]
    if missing:
        raise PersistError(f"{str(p)!r} lacks array(s) {missing}")
    for k in keys:
        if out[k].dtype.kind not in _NUMERIC_KINDS:
            raise PersistError(f"{str(p)!r}: array {k!r} has dtype {out[k].dtype}, not numeric")
    return out


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
    from longctx.persist.reader import MAX_NPZ_BYTES

    return _read_file_bytes(p, MAX_NPZ_BYTES)


#: A CSC matrix is converted to CSR, which allocates one row pointer per row: its row count may
#: exceed what the file stores (its values, indices and column pointers) by at most this many.
SPARSE_ROW_SLACK = 1024


def _check_sparse_arrays(z: dict, p: Path, shape: tuple[int, int] | None):
    """``(format, shape, data, indices, indptr)`` of the arrays of a scipy ``.npz``, every one
    checked before anything is built from them: the format ``csr`` / ``csc`` (a short string),
    a 2-D non-negative ``shape`` (equal to ``shape`` when given), 1-D numeric ``data`` and 1-D
    integer ``indices`` / ``indptr`` of consistent lengths, ``indptr`` starting at 0,
    non-decreasing and ending at ``nnz``, ``indices`` in range, finite values. Nothing is
    allocated beyond what the file holds; a CSC matrix may have at most
    ``len(indptr) + 2 * nnz + SPARSE_ROW_SLACK`` rows (its CSR copy allocates one pointer per
    row)."""
    for key in ("format", "shape", "data", "indices", "indptr"):
        if key not in z:
            raise PersistError(f"{str(p)!r} lacks array {key!r} of a sparse matrix")
    f = z["format"]
    if f.dtype.kind not in "SU" or f.size != 1 or f.dtype.itemsize > 64:
        raise PersistError(f"{str(p)!r}: array 'format' must be a short string")
    fmt = f.reshape(()).item()
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
    if fmt not in ("csr", "csc"):
        raise PersistError(f"{str(p)!r}: sparse format {fmt[:10]!r} is not csr or csc")
    s = z["shape"]
    if s.dtype.kind not in "iu" or s.shape != (2,):
        raise PersistError(f"{str(p)!r}: array 'shape' must hold 2 integers, got {s.shape}")
    if s.dtype.kind == "u" and int(s.max()) > np.iinfo(np.int64).max:
        raise PersistError(f"{str(p)!r}: array 'shape' holds values out of range")
    got = (int(s[0]), int(s[1]))
    if min(got) < 0:
        raise PersistError(f"{str(p)!r}: shape {got} is negative")
    if shape is not None and got != tuple(shape):
        raise PersistError(
            f"{str(p)!r}: field 'shape' is {got}, expected {tuple(shape)} (damaged or forged)"
        )
    data, indices, indptr = z["data"], z["indices"], z["indptr"]
    if data.dtype.kind not in _NUMERIC_KINDS or data.ndim != 1:
        raise PersistError(f"{str(p)!r}: array 'data' must be 1-D numeric, got {data.dtype}")
    for name, a in (("indices", indices), ("indptr", indptr)):
        if a.dtype.kind not in "iu" or a.ndim != 1:
            raise PersistError(f"{str(p)!r}: array {name!r} must be a 1-D integer array")
    major, minor = got if fmt == "csr" else got[::-1]
    nnz = data.shape[0]
    if indptr.shape[0] != major + 1:
        raise PersistError(
            f"{str(p)!r}: array 'indptr' has {indptr.shape[0]} entries for shape {got}"
        )
    if indices.shape[0] != nnz:
        raise PersistError(f"{str(p)!r}: arrays 'indices' and 'data' differ in length")
    if fmt == "csc" and got[0] > indptr.shape[0] + 2 * nnz + SPARSE_ROW_SLACK:
        raise PersistError(
            f"{str(p)!r}: a CSC matrix of {got[0]} rows holds only {nnz} values: converting it "
            "would allocate far more than the file stores (damaged or forged)"
        )
    ptr = indptr.astype(np.int64) if indptr.dtype.kind == "u" else indptr
    if int(ptr[0]) != 0 or int(ptr[-1]) != nnz or (major and (np.diff(ptr) < 0).any()):
        raise PersistError(
            f"{str(p)!r}: array 'indptr' must rise from 0 to {nnz} (damaged or forged)"
        )
    if indptr.dtype.kind == "u" and int(indptr.max()) > np.iinfo(np.int64).max:
        raise PersistError(f"{str(p)!r}: array 'indptr' holds values out of range")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= minor):
        raise PersistError(
            f"{str(p)!r}: array 'indices' holds values outside [0, {minor}) (damaged or forged)"
        )
    if data.dtype.kind == "f" and nnz and not np.isfinite(data).all():
        raise PersistError(f"{str(p)!r}: array 'data' holds non-finite values")
    return fmt, got, data, indices, indptr


def _sparse_from_bytes(raw: bytes, p: Path, shape: tuple[int, int] | None = None) -> sp.csr_array:
    z = _load_npz_bytes(raw, p)
    fmt, got, data, indices, indptr = _check_sparse_arrays(z, p, shape)
    try:
        cls = sp.csr_array if fmt == "csr" else sp.csc_array
        m = cls((data, indices, indptr), shape=got)
        m.check_format(full_check=True)
        return sp.csr_array(m)
    except (ValueError, TypeError, OverflowError, MemoryError) as exc:
        raise PersistError(
            f"{str(p)!r} holds a malformed sparse matrix: {str(exc)[:200]}"
        ) from None


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


# -- checks of loaded values ---------------------------------------------------------------------
def _where(path, field: str) -> str:
    return f"{str(path)!r}: field {field!r}"


def check_int_value(value, path, field: str, *, minimum=None, maximum=None, allow_none=False):
    """``value`` as an int in ``[minimum, maximum]`` (bools refused), else :class:`PersistError`."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PersistError(f"{_where(path, field)} must be an integer, got {type(value).__name__}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise PersistError(
            f"{_where(path, field)} must be in [{minimum}, {maximum}], got {str(value)[:40]}"
        )
    return int(value)


def check_float_value(value, path, field: str, *, low=None, high=None, allow_none=False):
    """``value`` as a finite float in ``[low, high]``, else :class:`PersistError`."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PersistError(f"{_where(path, field)} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or (low is not None and v < low) or (high is not None and v > high):
        raise PersistError(f"{_where(path, field)} must be in [{low}, {high}], got {v}")
    return v


def check_str_list(value, path, field: str, *, nonempty: bool = False) -> list[str]:
    """``value`` as a list of str, else :class:`PersistError`."""
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise PersistError(f"{_where(path, field)} must be a list of strings")
    if nonempty and not value:
        raise PersistError(f"{_where(path, field)} must not be empty")
    return value


def check_dict(value, path, field: str) -> dict:
    """``value`` if it is a JSON object (dict), else :class:`PersistError`."""
    if not isinstance(value, dict):
        raise PersistError(f"{_where(path, field)} must be an object, got {type(value).__name__}")
    return value


def check_int_array(
    value, path, field: str, *, n: int | None = None, minimum=None, maximum=None
) -> np.ndarray:
    """``value`` (an array from an ``.npz`` or a JSON list) as a 1-D ``int64`` array of length
    ``n`` with values in ``[minimum, maximum]``; floats, bools, strings and 2-D arrays are
    refused with a :class:`PersistError`."""
    if isinstance(value, list):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            raise PersistError(f"{_where(path, field)} must be a list of integers")
        try:
            value = np.asarray(value, dtype=np.int64) if value else np.zeros(0, np.int64)
        except OverflowError:
            raise PersistError(f"{_where(path, field)} holds an integer out of range") from None
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu":
        kind = getattr(value, "dtype", type(value).__name__)
        raise PersistError(f"{_where(path, field)} must be an integer array, got {kind}")
    if value.ndim != 1:
        raise PersistError(f"{_where(path, field)} must be 1-D, got shape {value.shape}")
    if n is not None and value.shape[0] != n:
        raise PersistError(f"{_where(path, field)} has {value.shape[0]} entries, expected {n}")
    if value.dtype.kind == "u" and value.size and value.max() > np.iinfo(np.int64).max:
        raise PersistError(f"{_where(path, field)} holds values out of range")
    value = value.astype(np.int64, copy=False)
    if value.size and (
        (minimum is not None and value.min() < minimum)
        or (maximum is not None and value.max() > maximum)
    ):
        raise PersistError(
            f"{_where(path, field)} holds values outside [{minimum}, {maximum}] "
            f"(min {value.min()}, max {value.max()})"
        )
    return value


def check_float_array(value, path, field: str, *, shape: Sequence[int | None]) -> np.ndarray:
    """``value`` as a finite float array of ``shape`` (``None``: any length on that axis)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu":
        kind = getattr(value, "dtype", type(value).__name__)
        raise PersistError(f"{_where(path, field)} must be a numeric array, got {kind}")
    if value.ndim != len(shape) or any(
        s is not None and s != v for s, v in zip(shape, value.shape)
    ):
        raise PersistError(
            f"{_where(path, field)} has shape {value.shape}, expected {tuple(shape)}"
        )
    if value.size and not np.isfinite(value).all():
        raise PersistError(f"{_where(path, field)} holds NaN or infinite values")
    return value


def check_spans(texts: Sequence[str], sources, starts, ends, path, field: str = "") -> None:
    """Check that every ``(sources[i], starts[i], ends[i])`` is a span of ``texts``:
    ``0 <= source < len(texts)`` and ``0 <= start <= end <= len(texts[source])`` (1-D int64
    arrays of one length, as :func:`check_int_array` returns).

    Raises
    ------
    PersistError
        Naming ``path`` and the first bad unit.
    """
    pre = f"{field}." if field else ""
    n = len(sources)
    if len(starts) != n or len(ends) != n:
        raise PersistError(f"{str(path)!r}: {pre}source/start/end have different lengths")
    if not n:
        return
    if sources.min() < 0 or sources.max() >= len(texts):
        raise PersistError(f"{_where(path, pre + 'source')} out of range for {len(texts)} texts")
    lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))[sources]
    bad = (starts < 0) | (ends < starts) | (ends > lengths)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PersistError(
            f"{str(path)!r}: unit {i} has span {pre}start={int(starts[i])}, end={int(ends[i])} "
            f"outside text {int(sources[i])} of {int(lengths[i])} characters (or end < start)"
        )


def check_span_texts(texts, sources, starts, ends, unit_texts, path, field: str) -> None:
    """Check that each stored text equals ``texts[source][start:end]`` (spans already checked).

    Raises
    ------
    PersistError
        A stored text differs from its source's span (a forged or damaged file).
    """
    for i, t in enumerate(unit_texts):
        s, a, b = int(sources[i]), int(starts[i]), int(ends[i])
        if not isinstance(t, str) or texts[s][a:b] != t:
            raise PersistError(
                f"{_where(path, field)}: the text of unit {i} differs from its source text "
                f"{s} at [{a}:{b}] (damaged or forged)"
            )


def check_json_metadata(metadata, where: str) -> None:
    """Check, before anything is saved, that a user's metadata dict comes back from JSON as it
    went in: ``str`` keys only (JSON would turn ``1`` into ``"1"``), values ``None``, ``bool``,
    ``int``, finite ``float``, ``str`` and lists, tuples (read back as lists) and dicts of
    them, nested at most ``MAX_JSON_DEPTH - 8`` levels (so the saved file loads).

    Parameters
    ----------
    metadata : dict
    where : str
        The document, for the message (``"documents[3] (id 'doc3')"``).

    Raises
    ------
    TypeError
        A key that is not a ``str``, or a value of another type (``datetime``, ``set``,
        ``bytes``, numpy scalars...), naming ``where`` and the key.
    ValueError
        ``NaN`` / infinity, an integer of more than 4300 digits, or nesting too deep.
    """
    if not isinstance(metadata, dict):
        raise TypeError(f"{where}: metadata must be a dict, got {type(metadata).__name__}")
    limit = MAX_JSON_DEPTH - 8
    stack = [(metadata, "metadata", 1)]
    while stack:
        value, at, depth = stack.pop()
        if depth > limit:
            raise ValueError(f"{where}: {at} is nested more than {limit} levels deep")
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise TypeError(
                        f"{where}: {at} has the key {k!r} ({type(k).__name__}), not a str: JSON "
                        f"would store it as {json.dumps(str(k))}; use str keys"
                    )
                stack.append((v, f"{at}[{k!r}]", depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{at}[{i}]", depth + 1) for i, v in enumerate(value))
        elif value is None or isinstance(value, (bool, str)):
            continue
        elif isinstance(value, int):
            if value.bit_length() > 14_000:  # more than ~4300 decimal digits
                raise ValueError(f"{where}: {at} is an integer too large for JSON")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(
                    f"{where}: {at} is {value}, which JSON cannot store: use None or a number"
                )
        else:
            raise TypeError(
                f"{where}: {at} is a {type(value).__module__}.{type(value).__qualname__}, which "
                "JSON cannot store: convert it (to a str, number, list or dict) before saving"
            )


def text_digest(text: str) -> str:
    """SHA-256 (hex) of a text's UTF-8 bytes, as stored to tie saved node ids to their texts."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_local_model_name(name, path, field: str, *, allowed: Iterable[str] = ()) -> str | None:
    """A model / encoder name read from a saved file: ``None``, one of ``allowed`` (packaged
    defaults), or an existing local directory. Anything else (a Hugging Face hub name) is refused,
    so loading never downloads.

    Raises
    ------
    PersistError
        Naming the file and field, with how to pass the model explicitly.
    """
    if name is None or name in tuple(allowed):
        return name
    if not isinstance(name, str) or len(name) > 4096:
        raise PersistError(f"{_where(path, field)} must be a model name or path")
    if os.path.isdir(name):
        return name
    raise PersistError(
        f"{_where(path, field)} names the model {name[:200]!r}, which is not a local directory: "
        "a saved index never makes longctx download a model. Pass the model (or encoder) "
        "explicitly to load()"
    )


__all__ = [
    "PersistError",
    "SaveTargetError",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_ARRAY_BYTES",
    "write_dir",
    "check_save_target",
    "read_manifest",
    "read_json",
    "parse_json",
    "read_arrays",
    "read_sparse",
    "check_int_value",
    "check_float_value",
    "check_str_list",
    "check_dict",
    "check_int_array",
    "check_float_array",
    "check_spans",
    "check_span_texts",
    "text_digest",
    "check_json_metadata",
    "check_local_model_name",
    "ConcurrentSaveError",
]

#: Names of :mod:`longctx.persist.reader` served from here (imported on first use: that module
#: imports this one).
_READER_NAMES = frozenset(
    {
        "IndexDir",
        "LOAD_ATTEMPTS",
        "MAX_NPZ_BYTES",
        "open_index_dir",
        "retry_on_concurrent_save",
    }
)


def __getattr__(name: str):
    if name in _READER_NAMES:
        from longctx.persist import reader as persist_reader

        return getattr(persist_reader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
