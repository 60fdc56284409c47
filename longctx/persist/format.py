"""The format of a saved index, shared by its reader and its writer: the errors, the limits, and
the parsing of untrusted bytes (JSON, ``.npz``, scipy.sparse). JSON for configuration and text,
``.npz`` for arrays. Never pickle.

Layout of an index directory::

    DIR/manifest.json   {"format": "longctx.<kind>", "format_version": N, "longctx_version": ...,
                         "files": [...], "dirs": [...],
                         "digests": {name: {"sha256": hex, "size": bytes}}, ...}   written last
    DIR/<name>.json     JSON documents (configuration, vocabularies, node texts)
    DIR/<name>.npz      numpy arrays (``allow_pickle=False``) or one scipy.sparse matrix
    DIR/<sub>/          a nested index (its own manifest), listed in ``"dirs"``

``"digests"`` holds every member file's SHA-256 and size, and for a nested index the digest of
its ``manifest.json`` (manifests written before longctx 0.2 have none and still load).

**Saving** (:func:`longctx.persist.writer.write_dir`) never deletes or replaces anything it did not
write: the target must be missing, an empty directory, or a longctx index of the same kind;
anything else (a file, a directory holding other files, a manifest listing anything but plain file
names, a member that is a link) is a :class:`~longctx.persist.writer.SaveTargetError` and stays
untouched. The index is written into a temporary sibling ``.NAME.tmp-<host>-<pid>-<token>`` and
renamed into place; an index it replaces is moved aside first (``.NAME.old-...``) and only the
files its manifest lists are deleted afterwards, each opened relative to that folder without
following links (:func:`longctx.persist.fs.remove_index`). Saves to one directory are serialized
(an advisory lock on the parent directory, and a lock per path within a process). Siblings left by
a save that was killed are removed on the next save or load of the same path
(:func:`longctx.persist.fs.clean_stale_siblings`). A new folder's mode follows the umask; a
replaced folder keeps its mode and group.

**Loading** goes through :func:`~longctx.persist.reader.open_index_dir`: the files of one save
only, each read once and checked against the manifest's digests, no member followed out of the
folder. It treats every file as untrusted input: JSON files are size-limited
(:data:`MAX_JSON_BYTES`) and depth-limited (:data:`MAX_JSON_DEPTH`), ``NaN`` / ``Infinity`` are
refused, every ``.npy`` header inside an ``.npz`` is read and its shape x itemsize checked against
the stored size and :data:`MAX_ARRAY_BYTES` before any allocation, only numeric dtypes are
accepted, sparse matrices are fully checked (index ranges, ``indptr`` order). The ``check_*``
helpers of :mod:`longctx.persist.checks` validate loaded values. Every loading error is a
:class:`PersistError` (a ``ValueError``) naming the file and, where it applies, the field.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import re
import struct
import threading
import tokenize
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from longctx.filters import MAX_DEPTH as MAX_FILTER_DEPTH
from longctx.persist.fs import MANIFEST

logger = logging.getLogger(__name__)

#: Largest JSON file read (bytes); ``LONGCTX_MAX_JSON_BYTES`` overrides it.
MAX_JSON_BYTES = int(os.environ.get("LONGCTX_MAX_JSON_BYTES", 1 << 30))
#: Most JSON values one file (or one JSONL line) may hold, counted from its bytes as one more
#: than its ``,``, ``[`` and ``{`` outside strings (an upper bound; those inside strings are
#: left out only when the plain count is over, :func:`json_values_problem`);
#: ``LONGCTX_MAX_JSON_VALUES`` overrides it. Parsed, a value takes 8-200 bytes of Python memory
#: where the file may spend 2-3 (``[{},{},...]`` parses to 24x its size), so the byte limit
#: alone let a 1 GiB file take about 22 GB; with this bound a parse's peak stays under about
#: 5 GB (at most ~140 bytes a counted value, measured), while a 1 GiB file of texts, commas and
#: all, stays inside it.
MAX_JSON_VALUES = int(os.environ.get("LONGCTX_MAX_JSON_VALUES", 1 << 25))
#: Deepest nesting of a document's metadata (its dicts and lists; the dict itself is level 1)
#: that an index accepts at insert and at save (issue 35).
MAX_METADATA_DEPTH = 56
#: Levels of JSON a saved JSON form of a filter nested :data:`MAX_FILTER_DEPTH` groups deep
#: takes (:mod:`longctx.filters_persist`: a group is an object and its list, a condition an
#: object and its list of values).
SAVED_FILTER_DEPTH = 2 * MAX_FILTER_DEPTH + 2
#: Levels a saved file may wrap around such a value (``documents.json``'s metadata list; a
#: LlamaIndex node's relationships hold metadata 5 levels down in ``nodes.json``; the settings
#: object of ``retriever.json`` around its filter).
JSON_WRAPPING_DEPTH = 8
#: Deepest nesting of lists/dicts accepted in a JSON file: what the API accepts (metadata,
#: filters) plus the levels of the files that hold it, so every limit the API accepts loads
#: again (a filter nested 31 groups deep was accepted and saved, but the save could not be
#: loaded under the former limit of 64: issue 44).
MAX_JSON_DEPTH = max(MAX_METADATA_DEPTH, SAVED_FILTER_DEPTH) + JSON_WRAPPING_DEPTH
#: Largest single array read from an ``.npz`` (bytes); ``LONGCTX_MAX_ARRAY_BYTES`` overrides it.
MAX_ARRAY_BYTES = int(os.environ.get("LONGCTX_MAX_ARRAY_BYTES", 8 << 30))

_NUMERIC_KINDS = "biuf"


class PersistError(ValueError):
    """A saved index cannot be read: the message names the file and the problem."""


class ConcurrentSaveError(PersistError):
    """A file of an index folder changed while it was loaded: another process saved over the
    folder meanwhile (the load saw parts of two saves and refused them). Loaders decorated with
    :func:`longctx.persist.reader.retry_on_concurrent_save` load again before raising it."""


def _dir(path: str | os.PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path` (``TypeError`` naming the argument otherwise)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return Path(path)


# -- parsing untrusted bytes ----------------------------------------------------------------------
def _check_depth(obj: Any, where: str, limit: int) -> None:
    """Raise :class:`PersistError` when the lists / dicts of ``obj`` nest deeper than ``limit``
    (``obj`` itself, if a list or dict, is level 1)."""
    if _deeper_than(obj, limit):
        raise PersistError(f"{where!r} is nested deeper than {limit} levels")


def _deeper_than(obj: Any, limit: int) -> bool:
    """Whether the lists / dicts of ``obj`` nest deeper than ``limit`` (a stack, no recursion)."""
    if not isinstance(obj, (list, dict)):
        return False
    stack = [(obj, 1)]
    while stack:
        x, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend(
            (y, depth + 1)
            for y in (x.values() if isinstance(x, dict) else x)
            if isinstance(y, (list, dict))
        )
    return False


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not allowed")


def _finite_float(text: str) -> float:
    """A JSON number with a fraction or an exponent, refused when it is beyond the 64-bit float
    range: ``1e400`` would read as ``inf``, which no save writes (issue 44)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is beyond the range of a 64-bit float")
    return value


class _RepeatedKey(ValueError):
    """A JSON object names one key twice."""


def _object_without_repeats(pairs: list) -> dict:
    """The ``object_pairs_hook`` of :func:`parse_json`: a JSON object holding one key twice is
    refused. ``json.loads`` keeps the last value silently, other readers the first, so such a
    file means two things (no save writes one: session 20 found ``{"id": 5, "id": "b"}`` read
    as ``"b"`` from a JSONL line, and a ``config.json`` setting given twice). Costs about 15%
    on a file of small objects, nothing on lists of strings (texts)."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(f"the key {key[:60]!r} appears twice in one object")
            seen.add(key)
    return obj


#: A JSON string, quotes included (escapes skipped; no nested quantifier over overlapping
#: alternatives, so no catastrophic backtracking, without the possessive forms of Python 3.11).
#: A string left open runs to the end of the text: a match from a ``"`` never fails, so the
#: search never starts again at each later ``"`` (an open string before a million ``\\"`` took
#: time quadratic in them: 3.5 s for 48 KB, found by session 21's review). Such a text is not
#: JSON; its parser stops at the open string, having built only the values before it.
_STRING_S = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_STRING_B = re.compile(_STRING_S.pattern.encode(), re.DOTALL)


def _count_marks(raw: bytes | str) -> int:
    """One more than the ``,``, ``[`` and ``{`` of ``raw``."""
    marks = (b",", b"[", b"{") if isinstance(raw, (bytes, bytearray)) else (",", "[", "{")
    return sum(raw.count(m) for m in marks) + 1


def json_values_problem(raw: bytes | str, limit: int | None = None) -> str | None:
    """Why the JSON ``raw`` holds too many values to parse (see :data:`MAX_JSON_VALUES`), or
    ``None``.

    Costs nothing under ``limit`` bytes (a file cannot hold more values than bytes), three C
    passes over the bytes above it (about 1 s a GiB, a tenth of parsing them) and, only when
    those count more than ``limit`` ``,`` ``[`` ``{`` (strings included: a text of CSV lines),
    a recount outside the strings (each string emptied by one regular-expression pass, then
    counted): for 100 MiB of comma-dense text, about 0.5 s in strings of 100,000 characters
    and 1.1 s in strings of 30 (``json.loads`` of them: 0.25 s), measured on a shared 2-core
    machine (session 21); linear in the text whatever it holds (an open string runs to its
    end), and it holds a copy of the text outside strings meanwhile (at most the text's size).
    The recount is still an upper bound of the values: outside strings each
    value but a container's first follows a comma, and each container's first its ``[`` or
    ``{``.

    Parameters
    ----------
    raw : bytes or str
        The JSON text (UTF-8 bytes or ``str``).
    limit : int, optional
        Most values accepted (default :data:`MAX_JSON_VALUES`).

    Returns
    -------
    str or None
        The reason (``"holds up to N JSON values, over the limit ..."``), or ``None``.
    """
    limit = MAX_JSON_VALUES if limit is None else limit
    if len(raw) < limit or _count_marks(raw) <= limit:
        return None
    pattern = _STRING_B if isinstance(raw, (bytes, bytearray)) else _STRING_S
    n = _count_marks(pattern.sub(b'""' if pattern is _STRING_B else '""', raw))
    if n <= limit:
        logger.debug("JSON of %d bytes: %d values at most outside its strings", len(raw), n)
        return None
    return (
        f"holds up to {n:,} JSON values, over the limit of {limit:,} (counted from its commas "
        "and brackets outside strings; LONGCTX_MAX_JSON_VALUES: each takes 8-200 bytes of "
        "memory once parsed)"
    )


def loadable_json(
    name: str,
    obj: Any,
    *,
    limit: int | None = None,
    indent: int | None = None,
    after: str = "nothing was replaced",
) -> bytes:
    """The UTF-8 JSON bytes of ``obj``, to be written as ``name``, refused when a load would
    refuse them (so a save never writes what its load cannot read, issue 44).

    Parameters
    ----------
    name : str
        What the error names (the file).
    obj : JSON-serialisable
        The value.
    limit : int, optional
        Largest file the load reads, bytes (default :data:`MAX_JSON_BYTES`).
    indent : int, optional
        ``json.dumps``'s indent, as the file is written.
    after : str
        The end of the message: what the failed save left alone.

    Returns
    -------
    bytes
        ``json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=indent)`` as UTF-8.

    Raises
    ------
    ValueError
        ``obj`` nests deeper than :data:`MAX_JSON_DEPTH`, holds ``NaN`` / ``Infinity``, its
        bytes are over ``limit`` or hold more values than :data:`MAX_JSON_VALUES`
        (:func:`json_values_problem`); the message names ``name``.
    """
    try:
        _check_depth(obj, name, MAX_JSON_DEPTH)
    except PersistError as exc:
        raise ValueError(f"cannot save: {exc}, which a load refuses; {after}") from None
    try:
        raw = json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=indent).encode("utf-8")
    except ValueError as exc:  # NaN / Infinity: json.dumps names neither the file nor the value
        raise ValueError(f"cannot save {name!r}: {exc} (NaN or Infinity); {after}") from None
    limit = MAX_JSON_BYTES if limit is None else limit
    env = " (LONGCTX_MAX_JSON_BYTES)" if limit == MAX_JSON_BYTES else ""
    if len(raw) > limit:
        raise ValueError(
            f"cannot save {name!r}: {len(raw):,} bytes, over the limit of {limit:,} that a load "
            f"accepts{env}; {after}"
        )
    too_many = json_values_problem(raw)
    if too_many:
        raise ValueError(f"cannot save {name!r}: it {too_many}, which a load refuses; {after}")
    return raw


def _parse_json_bytes(raw: bytes, p: Path, max_depth: int | None) -> Any:
    """``json.loads`` of the bytes of file ``p`` (strict, depth-bounded): :func:`parse_json`
    naming the file."""
    return parse_json(raw, str(p), max_depth=max_depth)


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
        Not UTF-8, not JSON, nested too deep, or holding ``NaN`` / ``Infinity``, a number
        beyond the float range (``1e400``), an integer of more than 4300 digits or an object
        with a key twice, or holding more than :data:`MAX_JSON_VALUES` values, refused before
        parsing (the message names ``where``).
    """
    too_many = json_values_problem(raw)
    if too_many:
        raise PersistError(f"{where!r} {too_many}")
    try:
        text = raw.decode("utf-8") if isinstance(raw, (bytes, bytearray)) else raw
    except UnicodeDecodeError as exc:
        raise PersistError(f"{where!r} is damaged or truncated: {str(exc)[:200]}") from None
    try:
        return loads_strict(text, max_depth=max_depth, _counted=True)
    except JSONTextError as exc:
        raise PersistError(f"{where!r}{exc.as_saved}") from None


class JSONTextError(ValueError):
    """What makes a JSON text unreadable, not naming where it came from: ``str(exc)`` is the
    wording for the user's own input (``"not JSON: Expecting value: column 1"`` for a text of
    one line, json's ``line L column C (char N)`` for several, ``"the key 'id' appears twice in one object"``, ``"nested deeper than 64
    levels"``), :attr:`as_saved` the wording that follows a saved file's name (``" is damaged
    or truncated: ..."``, ``": the key ... (damaged or forged)"``)."""

    def __init__(self, problem: str, as_saved: str):
        super().__init__(problem)
        self.as_saved = as_saved


def loads_strict(text: str, *, max_depth: int | None = None, _counted: bool = False) -> Any:
    """``json.loads`` of a text, strict and depth-limited as :func:`parse_json` (which names a
    saved file in its errors), for a caller that words the error itself (a line of the user's
    JSONL file: ``'docs.jsonl' line 3: not JSON: ...``).

    Raises
    ------
    JSONTextError
        Not JSON (for a text of one line, the place as ``column N``, 1-based, not json's
        ``line 1 column N (char N-1)``), nested deeper than ``max_depth`` (default :data:`MAX_JSON_DEPTH`), ``NaN`` /
        ``Infinity``, a number beyond the float range, an integer of more than 4300 digits, an
        object with a key twice, or more than :data:`MAX_JSON_VALUES` values (refused before
        parsing).
    """
    too_many = None if _counted else json_values_problem(text)
    if too_many:
        raise JSONTextError(too_many, f" {too_many}")
    try:
        data = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            object_pairs_hook=_object_without_repeats,
        )
    except RecursionError:
        raise JSONTextError("nested too deeply", " is nested too deeply") from None
    except _RepeatedKey as exc:
        raise JSONTextError(str(exc), f": {exc} (damaged or forged)") from None
    except ValueError as exc:  # JSONDecodeError, and the hooks' refusals
        why = str(exc)[:200]
        if isinstance(exc, json.JSONDecodeError) and "\n" not in text and "\r" not in text:
            # one line (a JSONL record): its column, not "line 1 column N (char N-1)"
            why = f"{exc.msg[:160]}: column {exc.colno}"
        raise JSONTextError(f"not JSON: {why}", f" is damaged or truncated: {why}") from None
    limit = MAX_JSON_DEPTH if max_depth is None else max_depth
    if _deeper_than(data, limit):
        deep = f"nested deeper than {limit} levels"
        raise JSONTextError(deep, f" is {deep}")
    return data


#: What numpy's ``.npy`` header parser raises on damaged or forged bytes: a flipped bit can leave
#: an unclosed bracket (``tokenize.TokenError``), a nested literal a ``RecursionError``, a huge
#: integer in the shape an ``OverflowError`` (all a :class:`PersistError` for a loader).
NPY_HEADER_ERRORS = (
    ValueError,
    SyntaxError,
    TypeError,
    EOFError,
    OSError,
    tokenize.TokenError,
    RecursionError,
    OverflowError,
    MemoryError,
    KeyError,
    IndexError,
    AttributeError,
)


#: Largest ``.npy`` header parsed (bytes; numpy writes 128 for a 1-D array), in an ``.npz``
#: member or an ``.npy`` file.
MAX_NPY_HEADER_BYTES = 1 << 16
#: The ``.npy`` header versions read (numpy writes 1.0, or 2.0 for a header over 64 KiB; 3.0
#: only for structured dtypes with names outside Latin-1, which no longctx member holds).
_NPY_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


#: numpy parses an ``.npy`` header with ``ast.literal_eval``. CPython 3.11 keeps the AST
#: constructor's recursion depth in the interpreter's state, so two threads building ASTs at
#: once can fail with "SystemError: AST constructor recursion depth mismatch" (python/cpython
#: issues 95185 and 106905; met by a load beside another thread's load in
#: ``tests/corpus/test_concurrency.py`` on 3.11.7). longctx's own parses (one small header
#: each) take turns under this lock.
NPY_PARSE_LOCK = threading.Lock()


def plain_dtype(dtype: np.dtype) -> bool:
    """No fields and no subarray: a header's descr ``('<i8', [('lo', '<i4'), ('hi', '<i4')])``
    has fields yet equals int64, so a check of kind or equality alone lets it through."""
    return dtype.fields is None and dtype.subdtype is None


def read_npy_header(fh, message: str) -> tuple[tuple, bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` header at the start of the binary file
    ``fh`` (its magic string first; ``fh`` is left where the values start): the header's length
    read and bounded first (at most :data:`MAX_NPY_HEADER_BYTES` bytes read), then parsed by
    numpy's readers (a ``literal_eval``: no pickle, no code run). The one header rule of format 2's ``.npz`` members and format 3's
    ``.npy`` files.

    Raises
    ------
    PersistError
        ``"{message}: <what the parser said>"``: a damaged or forged header, another version.
    """
    try:
        version = np.lib.format.read_magic(fh)
        reader = _NPY_READERS.get(version)
        if reader is None:
            raise ValueError(f"unsupported .npy version {version[0]}.{version[1]}")
        # the length field read and bounded here: numpy reads as many bytes as it claims (up
        # to 4 GiB, decompressed from a small .npz member) before its own bound applies
        field = fh.read(2 if version == (1, 0) else 4)
        if len(field) not in (2, 4):
            raise ValueError("the header's length field is truncated")
        size = struct.unpack("<H" if len(field) == 2 else "<I", field)[0]
        if size > MAX_NPY_HEADER_BYTES:
            raise ValueError(f"a header of {size} bytes, more than {MAX_NPY_HEADER_BYTES}")
        body = fh.read(size)
        if len(body) != size:
            raise ValueError(f"the header is truncated ({len(body)} of {size} bytes)")
        with NPY_PARSE_LOCK:
            return reader(io.BytesIO(field + body), max_header_size=MAX_NPY_HEADER_BYTES)
    except NPY_HEADER_ERRORS as exc:
        raise PersistError(f"{message}: {str(exc)[:200]}") from None


#: The dtype kinds an ``.npz`` member may hold: numbers, and the short strings of a scipy.sparse
#: file's ``format`` member (no object, void, structured, sub-array or datetime dtype).
_NPZ_KINDS = "biufSU"
#: Bytes of an ``.npz`` member read at a time.
_NPZ_READ_BLOCK = 1 << 20


#: The compression methods of the ``.npz`` members read: those numpy writes (``np.savez``,
#: ``np.savez_compressed``). bzip2 and LZMA are refused before a member is opened: their
#: decompressors allocate GiBs for a forged member of a few hundred bytes.
_NPZ_COMPRESSIONS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


def _npz_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, p: Path, size: int) -> np.ndarray:
    """The array of one ``.npy`` member of an open ``.npz`` of ``size`` bytes: its compression
    (stored or deflated) and its central-directory sizes bounded by ``size`` first (a stored
    member's ``file_size``, any member's ``compress_size``: a forged size cannot claim more
    bytes than the archive has), then its header read and bounded (:func:`read_npy_header`, the
    one step under :data:`NPY_PARSE_LOCK`), its dtype (not of size 0: numpy makes ``S0`` /
    ``U0`` one-character arrays of uninitialised values) and size checked, then an array of
    that dtype and shape allocated and filled from the member's bytes (``readinto``: no second
    header parse, no pickle, other threads' parses not held up)."""
    key = info.filename[:-4]
    if info.compress_type not in _NPZ_COMPRESSIONS:
        raise PersistError(
            f"{str(p)!r}: array {key!r} has compression method {info.compress_type}, not stored "
            "or deflated (numpy writes no other): damaged or forged"
        )
    stored_size = info.compress_type == zipfile.ZIP_STORED and info.file_size > size
    if info.compress_size > size or stored_size:
        raise PersistError(
            f"{str(p)!r}: array {key!r} claims {max(info.compress_size, info.file_size)} bytes "
            f"in an archive of {size} bytes: damaged or forged"
        )
    with zf.open(info) as fh:
        shape, fortran, dtype = read_npy_header(
            fh, f"{str(p)!r}: array {key!r} has a damaged header"
        )
        # kinds b i u f S U, and no fields or subarray: a header's descr ('<i8', [('lo',
        # '<i4'), ('hi', '<i4')]) is of kind i with fields (and equal to int64)
        if dtype.kind not in _NPZ_KINDS or dtype.itemsize == 0 or not plain_dtype(dtype):
            raise PersistError(f"{str(p)!r}: array {key!r} has dtype {dtype}, not a plain one")
        if any(int(s) < 0 for s in shape):
            raise PersistError(f"{str(p)!r}: array {key!r} has a negative shape {tuple(shape)}")
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
        out = np.empty(count, dtype=dtype)
        view = memoryview(out.view(np.uint8)) if nbytes else memoryview(b"")
        got = 0
        while got < nbytes:  # in bounded blocks: a read makes a bytes object before the copy
            n = fh.readinto(view[got : got + _NPZ_READ_BLOCK])
            if not n:
                raise PersistError(
                    f"{str(p)!r}: array {key!r} is truncated ({got} of {nbytes} bytes)"
                )
            got += n
        if fh.read(1):  # reading to the end also checks the member's CRC
            raise PersistError(f"{str(p)!r}: array {key!r} has bytes past its values")
    if fortran:  # as numpy.lib.format.read_array
        return out.reshape(tuple(shape)[::-1]).transpose()
    return out.reshape(tuple(shape))


#: What a damaged zip archive can raise from ``zipfile`` / ``zlib`` (an unknown compression
#: method is a NotImplementedError, an "encrypted" flag a RuntimeError).
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
    """Every array of the ``.npz`` bytes of file ``p``, keyed by member name without ``.npy``
    (each member read right after its own bounded header check, :func:`_npz_member`; members
    not named ``*.npy`` are skipped unread; no ``np.load``, no pickle).

    Raises
    ------
    PersistError
        A damaged archive or member, a forged header or size (a member claiming more bytes
        than the archive has), a compression other than stored or deflated, a dtype outside
        numbers and short strings or of size 0 (the message names ``p`` and the member).
    """
    key = None  # the member being read
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            out = {}
            for info in zf.infolist():
                if info.filename.endswith(".npy"):
                    key = info.filename[:-4]
                    out[info.filename[:-4]] = _npz_member(zf, info, p, len(raw))
                else:
                    logger.debug("%s: member %r is not an array, skipped", p, info.filename[:80])
            return out
    except PersistError:
        raise
    except EOFError:  # zipfile says nothing: a member's data runs past the archive's end
        what = "the central directory" if key is None else f"array {key[:80]!r}"
        raise PersistError(
            f"{str(p)!r} is damaged or truncated: {what} ends before its stated size"
        ) from None
    except _ZIP_ERRORS as exc:
        why = str(exc)[:200] or type(exc).__name__
        raise PersistError(f"{str(p)!r} is damaged or truncated: {why}") from None


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


__all__ = [
    "is_saved_version",
    "MANIFEST",
    "NPY_HEADER_ERRORS",
    "MAX_NPY_HEADER_BYTES",
    "read_npy_header",
    "PersistError",
    "ConcurrentSaveError",
    "MAX_JSON_BYTES",
    "MAX_JSON_VALUES",
    "MAX_JSON_DEPTH",
    "MAX_METADATA_DEPTH",
    "SAVED_FILTER_DEPTH",
    "MAX_ARRAY_BYTES",
    "SPARSE_ROW_SLACK",
    "parse_json",
    "loads_strict",
    "JSONTextError",
]


def is_saved_version(found, versions) -> bool:
    """Whether ``found`` (a file's ``format_version``, untrusted) is one of ``versions`` as the
    saves write it: an ``int`` (``1.0 == 1`` and ``true == 1`` in Python are not)."""
    return not isinstance(found, bool) and isinstance(found, int) and found in versions
