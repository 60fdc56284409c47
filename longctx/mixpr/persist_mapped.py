"""Format version 3 of a saved :class:`~longctx.mixpr.index.MixPRIndex`: every array a plain
``.npy`` file, so that :meth:`MixPRIndex.load(path, mmap=True)
<longctx.mixpr.index.MixPRIndex.load>` maps the index instead of reading it (an app opening its
index at every start then pays for the pages its queries touch, as bm25s's ``mmap=True``: Lù,
2024, arXiv:2407.03618, sec. 2).

Layout (``DIR/``, beside ``manifest.json``, ``config.json`` and ``documents.json`` as in format
2; ``*`` int32 where every value fits, else int64)::

    text_bytes.npy      (total bytes,) uint8     the documents' texts, UTF-8, one after another
    text_offsets.npy    (n_docs + 1,) int64      where each text's bytes start (last: the total)
    text_chars.npy      (n_docs,) int64          each text's length in characters
    text_checkpoints.npy (..,) int64             the byte offset of every 1024th character of
                        each text longer than that (the step: the manifest's ``"text_step"``;
                        since issue 46, optional: :mod:`longctx.mixpr.persist_texts`)
    term_bytes.npy      (..,) uint8              the terms by column, UTF-8, in sorted order
    term_offsets.npy    (n_terms + 1,) int64
    unit_source.npy, unit_index.npy, starts.npy, ends.npy, token_counts.npy   (n_units,) int64
    df.npy (n_terms,) int64, cf.npy (n_terms,) float64     the term statistics
    E_indptr.npy (n_terms + 1,) *, E_indices.npy (nnz,) *, E_data.npy (nnz,) float64
                        the TF-IDF rows ``E`` as CSC (what a query reads: stored, not recomputed)
    E_rows_indptr.npy (n_units + 1,) *, E_rows_indices.npy *, E_rows_data.npy float64
                        ``E`` as CSR (the push walk reads a unit's terms: stored too)
    counts_indptr.npy (n_units + 1,) *, counts_indices.npy *, counts_data.npy float64
                        the term counts as CSR (read only by inserts and deletes)
    colsum.npy (n_units,) float64      graph="factored": the graph's column sums
    S_indptr.npy, S_indices.npy, S_data.npy    graph="threshold": the thresholded graph, CSR
    unit_vectors.npy (n_units, dim) float32    hybrid indexes
    text_ids.npy (n_units,) *          each unit's text id, the first unit of its normalised
                        text (what ``unique_texts`` compares; optional, saved when the index
                        holds them: :mod:`longctx.mixpr.text_ids`)

What a load checks, before any search (each array scanned in blocks, its pages then given
back, so a mapped index holds in memory what its queries read):

- every ``.npy`` header (:mod:`longctx.persist.npy`): dtype, dimensions, size against the file
  and the manifest; the JSON members as in format 2, digests included;
- the texts' offsets (from 0 to the bytes stored, non-decreasing) and lengths
  (``chars <= bytes <= 4 * chars``), the unit arrays against them
  (:func:`~longctx.mixpr.persist.check_units`), the terms' offsets (strictly increasing);
- ``E`` and the graph: ``indptr`` monotone from 0 to ``nnz``, indices in range and sorted
  within each column (row), values finite (``E`` in ``[0, 1]``, the graph ``>= 0``), the
  column sums finite and ``>= 0``, ``df`` in ``[0, n_units]``, ``cf`` finite and ``>= 0``;
- ``E`` by rows against ``E`` by columns, and the column sums against ``E``
  (:func:`_check_rows_and_colsum`: a product of each with a vector drawn at each open);
- the unit vectors finite with unit (or zero) rows;
- the text ids, when saved: one per unit, each the first unit of its group
  (:func:`~longctx.mixpr.text_ids.check_text_ids`).

Checked when first read instead (a :class:`~longctx.persist.PersistError` then): each text's
UTF-8 and its length (when the text is decoded: a filter on it, an insert, a whole-document
hit), a hit's part of a text and the two checkpoints around it (the table's length at open:
:mod:`longctx.mixpr.persist_texts`), the term counts (structure, whole numbers in
``[1, 2**31]``, ``df`` and ``cf`` equal to theirs; at the first insert or delete), the text
ids against the texts (each unit given another unit's id has that unit's text:
:func:`~longctx.mixpr.text_ids.verify_text_ids`; at their first use, a ``unique_texts`` query,
a delete or a save). A term's bytes are compared, never decoded, by a query's lookup (a
binary search over the sorted terms): a damaged term is not found, never misread.

Read at the open besides (``graph="factored"``): the column sums of ``E``, which the push walk's
rule reads for every term it reaches (one more pass over ``E``, its pages then given back), so
that the first query reads only what it reaches, as the next ones do.

With ``mmap=False`` (the default) every file is read once, checked against its SHA-256
digest, and the lazy checks above run at once. With ``mmap=True`` the ``.npy`` files are mapped
and their digests are not computed (that would read every byte at open): their sizes are
checked against the manifest's.
"""

from __future__ import annotations

import logging
import math
import threading
import warnings
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from longctx.mixpr.counts import index_dtype
from longctx.mixpr.persist import (
    MAX_TERM_COUNT,
    _refuse_old_format,
    check_units,
    index_json,
    index_of,
    load_format2,
    read_config,
    read_documents,
)
from longctx.mixpr.persist_texts import (
    MAX_TEXT_STEP,
    TEXT_STEP,
    MappedTexts,
    text_checkpoints,
)
from longctx.mixpr.state import table_weights
from longctx.mixpr.text_ids import check_text_ids, verify_text_ids
from longctx.mixpr.tfidf import TermTable
from longctx.mixpr.unit_filter import document_starts
from longctx.persist import PersistError, write_dir
from longctx.persist.npy import check_compressed, check_values, release
from longctx.persist.reader import open_index_dir, retry_on_concurrent_save

__all__ = [
    "FORMAT_VERSION",
    "MappedTexts",
    "MappedVocabulary",
    "load_format3",
    "load_index",
    "save_mapped",
    "utf8_blob",
]

logger = logging.getLogger(__name__)

#: The format version of an index saved by :func:`save_mapped`.
FORMAT_VERSION = 3
_INDEX_DTYPES = (np.int32, np.int64)


def utf8_blob(strings, what: str, errors: str = "strict") -> tuple[np.ndarray, np.ndarray]:
    """``(bytes (n_bytes,) uint8, offsets (n + 1,) int64)`` of ``strings`` encoded in UTF-8
    one after another (``errors``: of ``str.encode``; ``"strict"``, a format-3 save, refuses
    a lone surrogate with a ``ValueError`` naming ``what``; a shard's terms sent to the
    driver pass them, ``"surrogatepass"``)."""
    try:
        enc = [s.encode("utf-8", errors) for s in strings]
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} cannot be saved in format 3: {exc}") from None
    offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in enc], out=offsets[1:])
    return np.frombuffer(b"".join(enc), dtype=np.uint8), offsets


def _compressed(m, name: str, n_minor: int) -> dict[str, np.ndarray]:
    dt = index_dtype(m.nnz, n_minor, len(m.indptr))
    return {
        f"{name}_indptr": m.indptr.astype(dt, copy=False),
        f"{name}_indices": m.indices.astype(dt, copy=False),
        f"{name}_data": m.data.astype(np.float64, copy=False),
    }


def save_mapped(index, path) -> None:
    """Write ``index`` (a :class:`~longctx.mixpr.index.MixPRIndex`) to directory ``path`` in
    format 3 (the module's layout). The checks a load makes run first (a ``ValueError`` then,
    and the index at ``path`` stays)."""
    st = index._state
    json_files, units = index_json(index, path, st)
    table = st.table
    terms = table.terms()
    term_bytes, term_offsets = utf8_blob(terms, "a term")
    if any(a >= b for a, b in zip(terms, terms[1:])):  # the canonical order: a bug otherwise
        raise RuntimeError("the index's terms are not in sorted order (cannot be saved)")
    text_bytes, text_offsets = utf8_blob(st.texts, "a text")
    npy = {
        "text_bytes": text_bytes,
        "text_offsets": text_offsets,
        "text_chars": st.text_lengths().astype(np.int64, copy=False),
        "text_checkpoints": text_checkpoints(st.texts, TEXT_STEP),
        "term_bytes": term_bytes,
        "term_offsets": term_offsets,
        **{k: np.asarray(v, dtype=np.int64) for k, v in units.items()},
        "df": table.df.astype(np.int64, copy=False),
        "cf": table.cf.astype(np.float64, copy=False),
        **_compressed(table.embeddings(), "E", st.n_units),
        **_compressed(table.rows(), "E_rows", table.n_terms),
        **_compressed(table.counts, "counts", table.n_terms),
    }
    graph = st.graph
    if graph.kind == "threshold":
        npy.update(_compressed(graph.S, "S", st.n_units))
    else:
        npy["colsum"] = np.asarray(graph.colsum, dtype=np.float64)
    if st.unit_vectors is not None:
        npy["unit_vectors"] = st.unit_vectors
    held = st.checked_text_ids()  # saved when held and checked, never made here (a save would
    if held is not None:  # pay their pass for ids a query may never ask for: a shard's never are)
        npy["text_ids"] = held[0]
    write_dir(
        path, kind="mixpr", version=FORMAT_VERSION, json_files=json_files, npy=npy,
        extra={"text_step": TEXT_STEP},
    )  # fmt: skip


class MappedVocabulary(Mapping):
    """term -> column of a format-3 index, looked up by a binary search over the terms' sorted
    UTF-8 bytes (no dict built at open). Iterating decodes every term."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, where: str):
        self._mv = memoryview(blob)
        self._offsets = offsets
        self._where = where

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def term_arrays(self) -> tuple[np.ndarray, np.ndarray, str]:
        """``(blob, offsets, where)``: the terms' UTF-8 bytes one after another (``(n_bytes,)
        uint8``, the arrays this vocabulary reads: a mapped index's map, not a copy; read
        only), their ``(n_terms + 1,) int64`` offsets, and what its errors name (the index's
        folder, or a description)."""
        return np.frombuffer(self._mv, dtype=np.uint8), self._offsets, self._where

    def _term_bytes(self, j: int) -> bytes:
        return bytes(self._mv[int(self._offsets[j]) : int(self._offsets[j + 1])])

    def term(self, j: int) -> str:
        """The term of column ``j`` (decoded alone: no pass over the vocabulary)."""
        try:
            return self._term_bytes(j).decode("utf-8")
        except UnicodeDecodeError:
            raise PersistError(f"{self._where}: term {j} is not valid UTF-8") from None

    def get(self, term, default=None):
        if not isinstance(term, str):
            return default
        try:
            key = term.encode("utf-8")
        except UnicodeEncodeError:
            return default
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term_bytes(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self) and self._term_bytes(lo) == key:
            return lo
        return default

    def __getitem__(self, term) -> int:
        j = self.get(term)
        if j is None:
            raise KeyError(term)
        return j

    def __contains__(self, term) -> bool:
        return self.get(term) is not None

    def __iter__(self):
        for j in range(len(self)):
            yield self.term(j)

    def items(self):
        return zip(self, range(len(self)))


_I64, _U8, _F64 = (np.int64,), (np.uint8,), (np.float64,)
#: The ``.npy`` members of format 3: ``name -> (dtypes accepted, dimensions)``.
MEMBERS = {
    "text_bytes": (_U8, 1),
    "text_offsets": (_I64, 1),
    "text_chars": (_I64, 1),
    "text_checkpoints": (_I64, 1),
    "term_bytes": (_U8, 1),
    "term_offsets": (_I64, 1),
    **{k: (_I64, 1) for k in ("unit_source", "unit_index", "starts", "ends", "token_counts")},
    "df": (_I64, 1),
    "cf": (_F64, 1),
    "colsum": (_F64, 1),
    "unit_vectors": ((np.float32,), 2),
    "text_ids": (_INDEX_DTYPES, 1),
    **{
        f"{m}_{part}": ((_F64, 1) if part == "data" else (_INDEX_DTYPES, 1))
        for m in ("E", "E_rows", "counts", "S")
        for part in ("indptr", "indices", "data")
    },
}


class _Members:
    """The ``.npy`` members of the open folder ``r``, every one the manifest lists opened in
    one pass before any value is checked (headers, dtypes, sizes: :meth:`IndexDir.npy
    <longctx.persist.IndexDir.npy>`): mapped with ``mmap=True``, else read and checked
    against their digests. The load then holds every file of one save: a save replacing the
    folder meanwhile (its old files deleted) cannot fail the checks that follow, nor a first
    insert long after the load (the term counts)."""

    def __init__(self, r, *, mmap: bool):
        self.path = r.path
        self._r, self._mmap = r, mmap
        self._got = {}
        for f in r.files:
            name = f[:-4] if f.endswith(".npy") else None
            if name in MEMBERS:
                self._got[name] = self._open(name)

    def _open(self, name: str) -> np.ndarray:
        dtypes, ndim = MEMBERS[name]
        return self._r.npy(f"{name}.npy", dtypes=dtypes, ndim=ndim, mmap=self._mmap)

    def get(self, name: str) -> np.ndarray:
        """The array of member ``name`` (a PersistError naming it when it is not listed)."""
        got = self._got.pop(name, None)
        return got if got is not None else self._open(name)

    def manifest_get(self, key: str):
        """The manifest's entry ``key`` (``None`` when absent; unchecked)."""
        return self._r.manifest.get(key)

    def has(self, name: str) -> bool:
        """Whether the manifest lists member ``name`` (an optional one)."""
        return f"{name}.npy" in self._r.files


def _checked_offsets(offsets, size: int, where: str, *, strict: bool) -> None:
    if len(offsets) == 0 or int(offsets[0]) != 0 or int(offsets[-1]) != size:
        raise PersistError(f"{where}: offsets must run from 0 to {size} (the bytes stored)")
    steps = np.diff(offsets)
    if len(steps) and (steps.min() <= 0 if strict else steps.min() < 0):
        raise PersistError(f"{where}: offsets must increase")
    release(offsets)


def _read_texts(m: _Members) -> MappedTexts:
    d = m.path
    blob, offsets, chars = (m.get(k) for k in ("text_bytes", "text_offsets", "text_chars"))
    where = str(d / "text_offsets.npy")
    _checked_offsets(offsets, len(blob), repr(where), strict=False)
    if len(chars) != len(offsets) - 1:
        raise PersistError(f"{str(d / 'text_chars.npy')!r}: one length per text expected")
    nbytes = np.diff(offsets)
    if len(chars) and (chars.min() < 0 or np.any(chars > nbytes) or np.any(nbytes > 4 * chars)):
        raise PersistError(
            f"{str(d / 'text_chars.npy')!r}: a text's length in characters does not fit its "
            "bytes (chars <= bytes <= 4 * chars)"
        )
    where = repr(str(d / "text_checkpoints.npy"))
    checkpoints, step = None, TEXT_STEP
    if m.has("text_checkpoints"):  # saved since issue 46 (older folders: whole texts decoded)
        step = m.manifest_get("text_step")
        if type(step) is not int or not 1 <= step <= MAX_TEXT_STEP:
            raise PersistError(
                f"{str(d / 'manifest.json')!r}: 'text_step' must be an int in [1, "
                f"{MAX_TEXT_STEP}] (the step of text_checkpoints.npy), not {step!r:.40}"
            )
        checkpoints = m.get("text_checkpoints")
    else:
        logger.debug("%s has no text checkpoints: a hit decodes its whole text", d)
    return MappedTexts(
        blob, offsets, chars, repr(str(d / "text_bytes.npy")), checkpoints, step, where
    )


def _open_csx(m: _Members, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of a stored compressed matrix, headers checked only."""
    return tuple(m.get(f"{name}_{part}") for part in ("indptr", "indices", "data"))


def _checked_csx(parts, d, name: str, n_major: int, n_minor: int):
    """``parts`` (of :func:`_open_csx`, in folder ``d``) with their structure checked."""
    indptr, indices, data = parts
    where = repr(str(d / f"{name}_indices.npy"))
    if len(data) != len(indices):
        raise PersistError(f"{where}: {len(indices)} indices for {len(data)} values")
    check_compressed(indptr, indices, n_major, n_minor, where)
    return parts


def _read_csx(m: _Members, name: str, n_major: int, n_minor: int):
    """``(indptr, indices, data)`` of a stored compressed matrix, structure checked."""
    return _checked_csx(_open_csx(m, name), m.path, name, n_major, n_minor)


class _LazyCounts:
    """The term counts of a format-3 index, checked when first used (:meth:`get`). Their files
    are opened (mapped) with the others at load (:class:`_Members`), so a first insert long
    after the load reads the counts of the save it loaded, even when another save has replaced
    the folder since (the old files are then deleted, not rewritten: the maps keep them)."""

    def __init__(self, m: _Members, n: int, V: int, df, cf, binary: bool):
        self._args = (_open_csx(m, "counts"), m.path, n, V, df, cf, binary)
        self._m = None
        self._lock = threading.Lock()

    def get(self) -> sp.csr_array:
        with self._lock:
            if self._m is None:
                self._m = self._load(*self._args)
                self._args = None
        return self._m

    @staticmethod
    def _load(parts, d, n, V, df, cf, binary) -> sp.csr_array:
        indptr, indices, data = _checked_csx(parts, d, "counts", n, V)
        where = repr(str(d / "counts_data.npy"))
        check_values(data, where, low=1, high=MAX_TERM_COUNT, finite=True)
        if data.size and not np.all(data == np.round(data)):
            raise PersistError(f"{where}: term counts must be whole numbers")
        got_df = np.bincount(indices, minlength=V)
        got_cf = np.bincount(indices, weights=np.ones_like(data) if binary else data, minlength=V)
        if not np.array_equal(got_df, df) or not np.allclose(got_cf, cf, rtol=1e-9, atol=0):
            raise PersistError(
                f"{str(d)!r}: df.npy / cf.npy do not match the term counts (damaged)"
            )
        release(indptr, indices, data)
        return _canonical_flags(sp.csr_array((data, indices, indptr), shape=(n, V)))


class _MappedTermTable(TermTable):
    """A :class:`~longctx.mixpr.tfidf.TermTable` over mapped arrays: ``E`` given, the counts
    read (and checked) on first use (:class:`_LazyCounts`)."""

    @classmethod
    def of(cls, settings, vocab, df, cf, n: int, E, counts: _LazyCounts) -> _MappedTermTable:
        t = cls.__new__(cls)
        t.__dict__.update(
            settings=settings, vocabulary=vocab, df=df, cf=cf, _n_units=n, _idf=None, _E=E
        )
        t.__dict__["_lazy_counts"] = counts
        return t

    def insert_rows(self, vocab, rows, *, at=None):
        self.counts  # noqa: B018  (checked before the insert: a damaged file fails here)
        return super().insert_rows(vocab, rows, at=at)

    def __getattr__(self, name):
        if name == "counts":
            m = self.__dict__["_lazy_counts"].get()
            self.__dict__["counts"] = m
            return m
        return super().__getattr__(name)


def _canonical_flags(m):
    """``m`` with the flags its load checked (sorted, no duplicate): scipy never scans (nor
    tries to sort in place) a read-only mapped matrix then."""
    m.has_sorted_indices = True
    m.has_canonical_format = True
    return m


@retry_on_concurrent_save("path")
def load_index(cls, path, *, router=None, encoder=None, mmap: bool | None = False):
    """Read the index at directory ``path`` (format 2 or 3) as an instance of ``cls`` (errors:
    see :meth:`MixPRIndex.load <longctx.mixpr.index.MixPRIndex.load>`). Every file comes from
    one save (:func:`longctx.persist.reader.open_index_dir`). ``mmap=None``: format 3 mapped,
    format 2 read without a warning (what the folder allows)."""
    if mmap is not None:
        if not isinstance(mmap, (bool, np.bool_)):
            kind = f"{type(mmap).__module__}.{type(mmap).__qualname__}"
            raise TypeError(f"mmap must be None, True or False, got {mmap!r} ({kind})")
        mmap = bool(mmap)
    try:  # the manifest is read once (by the folder it opens)
        r = open_index_dir(path, kind="mixpr", versions=(2, FORMAT_VERSION))
    except PersistError:
        _refuse_old_format(path, FORMAT_VERSION)  # longctx 0.1's index: say to rebuild
        raise
    if r.manifest["format_version"] == FORMAT_VERSION:
        logger.debug("loading the format-3 index at %s (mmap=%s)", r.path, mmap)
        return load_format3(cls, r, mmap=mmap is not False, router=router, encoder=encoder)
    if mmap:
        warnings.warn(
            f"the MixPR index at {str(r.path)!r} was saved in format 2, which cannot be mapped: "
            "it is read into memory. Save it again (save(path) writes format 3) to map it",
            UserWarning,
            stacklevel=3,
        )
    return load_format2(cls, r, router=router, encoder=encoder)


def load_format3(cls, r, *, mmap: bool = False, router=None, encoder=None):
    """The format-3 index of the open folder ``r`` (an :class:`~longctx.persist.IndexDir`),
    mapped with ``mmap=True`` (the checks: the module's doc).

    Raises
    ------
    PersistError
        A missing, truncated or damaged file (named), or files that do not fit together.
    """
    from longctx.mixpr.graph import FactoredGraph, ThresholdGraph
    from longctx.mixpr.tfidf import TfidfSettings

    d = r.path
    config, counter, chunk, ident = read_config(r)
    r.prefetch(["documents.json"])
    m = _Members(r, mmap=mmap)
    texts = _read_texts(m)
    ids, metadata = read_documents(r, len(texts))
    keys = ("unit_source", "unit_index", "starts", "ends", "token_counts")
    arrs = {k: m.get(k) for k in keys}
    source, unit_index, starts, ends, tcounts = check_units(
        texts, arrs, d / "starts.npy", lengths=texts.lengths
    )
    first = document_starts(source, len(texts), ordered=True)  # (its pages still held)
    release(*arrs.values())
    n = len(starts)
    term_offsets, term_bytes = m.get("term_offsets"), m.get("term_bytes")
    _checked_offsets(term_offsets, len(term_bytes), repr(str(d / "term_offsets.npy")), strict=True)
    V = len(term_offsets) - 1
    df, cf = m.get("df"), m.get("cf")
    if df.shape != (V,) or cf.shape != (V,):
        raise PersistError(f"{str(d / 'df.npy')!r}: df and cf need one entry per term ({V})")
    check_values(df, repr(str(d / "df.npy")), low=0, high=n)
    check_values(cf, repr(str(d / "cf.npy")), low=0, finite=True)
    E_parts = _read_csx(m, "E", V, n)
    check_values(E_parts[2], repr(str(d / "E_data.npy")), low=0.0, high=1.0 + 1e-6, finite=True)
    E = _canonical_flags(sp.csc_array(E_parts[::-1], shape=(n, V)))
    rows_parts = _read_csx(m, "E_rows", n, V)
    where = repr(str(d / "E_rows_data.npy"))
    check_values(rows_parts[2], where, low=0.0, high=1.0 + 1e-6, finite=True)
    if len(rows_parts[2]) != len(E_parts[2]):
        raise PersistError(f"{where}: E by rows and by columns hold different entries")
    E_rows = _canonical_flags(sp.csr_array(rows_parts[::-1], shape=(n, V)))
    try:
        settings = TfidfSettings(config)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(d)!r} holds an inconsistent MixPR index: {exc}") from None
    counts = _LazyCounts(m, n, V, df, cf, settings.binary)
    vocab = MappedVocabulary(term_bytes, term_offsets, str(d))
    table = _MappedTermTable.of(settings, vocab, df, cf, n, E, counts)
    term_sums = None
    if config.graph == "threshold":
        S_parts = _read_csx(m, "S", n, n)
        check_values(S_parts[2], repr(str(d / "S_data.npy")), low=0.0, finite=True)
        graph = ThresholdGraph(_canonical_flags(sp.csr_array(S_parts[::-1], shape=(n, n))))
    else:
        colsum = m.get("colsum")
        if colsum.shape != (n,):
            raise PersistError(f"{str(d / 'colsum.npy')!r}: one column sum per unit expected")
        check_values(colsum, repr(str(d / "colsum.npy")), low=0.0, finite=True)
        graph = FactoredGraph(E, term_weights=table_weights(config, table), colsum=colsum)
        term_sums = _term_sums(E_parts, n, V)
    _check_rows_and_colsum(d, E, E_rows, graph, term_sums)
    release(*E_parts, *rows_parts)
    vectors = None
    if ident is not None:
        vectors = m.get("unit_vectors")
        _check_mapped_vectors(vectors, ident, n, repr(str(d / "unit_vectors.npy")))
    if not mmap:
        counts.get()  # every check at load
    text_ids = unchecked = None
    if m.has("text_ids"):  # saved when held (older folders: made when first asked)
        text_ids, where = m.get("text_ids"), repr(str(d / "text_ids.npy"))
        check_text_ids(text_ids, n, where)
        if mmap:  # against the texts at their first use (reads the repeated units' texts)
            unchecked = where
        else:
            verify_text_ids(text_ids, texts, source, starts, ends, where)
    loaded = {"router": router, "encoder": encoder, "counter": counter, "ident": ident}
    return index_of(
        cls, d, loaded, config=config, doc_ids=ids, texts=texts, metadata=metadata,
        unit_source=source, unit_index=unit_index, starts=starts, ends=ends, table=table,
        graph=graph, unit_vectors=vectors, token_counts=tcounts, e_rows=E_rows, chunk=chunk,
        term_sums=term_sums, doc_starts=first, text_ids=text_ids,
        text_ids_unchecked=unchecked,
    )  # fmt: skip


def _term_sums(parts, n: int, V: int) -> np.ndarray:
    """``(V,) float64``: the column sums of the stored ``E`` (``E^T 1``: the push walk's rule
    reads them for every term it reaches), summed by the very product a query's scorer would
    run (the same floats), here at the open, in one pass, the pages then given back: the first
    query reads only what it reaches."""
    indptr, indices, data = parts
    return sp.csr_array((data, indices, indptr), shape=(V, n)) @ np.ones(n)  # (released by
    # the caller after the check of E by rows, which reads these pages again)


def _check_rows_and_colsum(d, E, E_rows, graph, term_sums) -> None:
    """``E`` by rows (what the push walk reads) must be ``E`` by columns, and the factored
    graph's stored column sums ``E (W (E^T 1))``: checked by products with a vector ``s`` over
    the units drawn at random at each open (Freivalds' check: two matrices that differ give
    ``E_rows^T s != E^T s`` but for a set of ``s`` of measure 0, and a forger cannot know
    ``s``), one pass over each (C loops, no per-entry temporaries; at 10M words about 12 ms of
    CPU and one ``(n_terms,)`` vector each). The column sums then cost one dot product:
    ``s . colsum == (E^T s) . (W E^T 1)``, which a column sum changed by more than about
    ``1e-12`` of their total breaks. Equal up to ``rtol=1e-9`` (``1e-12`` for the dot
    products; the sums run in the same order). An entry of value 0 stored on one side only
    changes no product and passes.

    Raises
    ------
    PersistError
        Naming ``E_rows_data.npy`` or ``colsum.npy``.
    """
    s = np.random.default_rng().random(E.shape[0]) + 1.0
    by_cols = E.T @ s
    if not np.allclose(E_rows.T @ s, by_cols, rtol=1e-9, atol=1e-12):
        raise PersistError(
            f"{str(d / 'E_rows_data.npy')!r}: E by rows and by columns hold different entries"
        )
    if term_sums is None:  # a thresholded graph (its column sums are its own, recomputed)
        return
    w = graph.term_weights
    # (pairwise sums, not a BLAS dot: whose threads would spin on after it)
    want = float((by_cols * (term_sums if w is None else term_sums * w)).sum())
    if not math.isclose(float((s * graph.colsum).sum()), want, rel_tol=1e-12, abs_tol=1e-300):
        raise PersistError(
            f"{str(d / 'colsum.npy')!r}: the graph's column sums do not match E (damaged)"
        )


def _check_mapped_vectors(v: np.ndarray, ident: dict, n: int, where: str) -> None:
    if v.shape[0] != n or ident.get("dim") != v.shape[1] or v.shape[1] == 0:
        raise PersistError(f"{where}: shape {v.shape} does not match {n} units and the encoder")
    step = max(1, (1 << 20) // max(v.shape[1], 1))
    for a in range(0, n, step):
        b = v[a : a + step]
        if not np.isfinite(b).all():
            raise PersistError(f"{where}: non-finite values")
        sq = np.einsum("ij,ij->i", b, b)
        if np.any((np.abs(sq - 1.0) > 2e-5) & (sq != 0)):
            raise PersistError(f"{where}: rows must be L2-normalized")
    release(v)
