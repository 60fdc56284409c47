"""The documents' texts of a format-3 MixPR index (:mod:`longctx.mixpr.persist_mapped`):
:class:`MappedTexts` decodes a text from its stored UTF-8 bytes when it is read, and
:meth:`MappedTexts.text_slice` decodes a part of one (a hit's unit) from the nearest
*checkpoints* only, so a query whose hits fall in 1 MB books decodes a few KB, not the books.

The checkpoint table (``text_checkpoints.npy``, ``(n_checkpoints,) int64``, format 3 since
issue 46; the step in the manifest's ``"text_step"``) holds, for each text of ``L > step``
characters, the byte offset from the text's start of its characters ``step, 2 * step, ...``
(the ``(L - 1) // step`` multiples of ``step`` below ``L``), texts one after another; a text of
at most ``step`` characters holds none (decoding it whole costs what a window does). The
step, :data:`TEXT_STEP` = 1024 characters: the table is then 8 bytes per 1024 characters (at
most 0.8 % of the texts' bytes, 0.2 % of the whole index at 10M words), and a hit decodes at
most ``end - start + 2 * step`` characters (about 2 us for a 100-character unit of Gutenberg
prose, against 7 us at a step of 4096 and 1-5 ms for a whole book; measured 2026-11-29).
Per-unit byte offsets were the other choice: 16 bytes a unit (about 15 % of the texts' bytes)
and no help for a slice that is not a unit (a seed, a filter).

Everything read from disk is untrusted (``docs/notes/security.md``). At open the table's
length must equal what the texts' lengths (checked before) call for; each read checks what it
reads, at the cost of the read: the two checkpoints around the slice in order, inside the
text's bytes and ``chars <= bytes <= 4 * chars`` apart, on character boundaries (the strict
decode of the window fails otherwise), and the window's characters as many as the
checkpoints' distance; anything else is a :class:`~longctx.persist.PersistError` naming the
file. A forged table consistent with itself can shift a slice within its text (as forged
``starts.npy`` / ``ends.npy`` can), never past the text's bytes.

Format-3 folders saved before the table existed (no member) and format 2 load as before:
their slices decode the whole text (kept in the cache).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from longctx.persist import PersistError

__all__ = ["MAX_TEXT_STEP", "TEXT_CACHE_CHARS", "TEXT_STEP", "MappedTexts", "text_checkpoints"]

logger = logging.getLogger(__name__)

#: Decoded texts kept by a :class:`MappedTexts` (characters, all texts together).
TEXT_CACHE_CHARS = 32 << 20
#: Characters between two checkpoints of a text (written by a save).
TEXT_STEP = 1024
#: The largest step a load accepts from a manifest (a window then decodes at most 2 * 16M
#: characters, what a whole text of that size costs).
MAX_TEXT_STEP = 1 << 24


def text_checkpoints(texts, step: int = TEXT_STEP) -> np.ndarray:
    """The checkpoint table of ``texts`` (the module's layout).

    Parameters
    ----------
    texts : sequence of str
    step : int
        Characters between two checkpoints (>= 1).

    Returns
    -------
    (n_checkpoints,) int64
        For each text of ``L > step`` characters, in order, the UTF-8 byte offsets from its
        start of its characters ``step, 2 * step, ...`` below ``L``.
    """
    parts = []
    for t in texts:
        n = (len(t) - 1) // step
        if n <= 0:
            continue
        if t.isascii():
            parts.append(np.arange(step, n * step + 1, step, dtype=np.int64))
        else:
            sizes = [len(t[j : j + step].encode("utf-8")) for j in range(0, n * step, step)]
            parts.append(np.cumsum(np.asarray(sizes, dtype=np.int64)))
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


class _Checkpoints:
    """A text table's checkpoints (``table``, ``(n,) int64``), where each text's start
    (``first``, ``(n_docs + 1,) int64``), their step and the file to name."""

    __slots__ = ("table", "first", "step", "where")

    def __init__(self, table: np.ndarray, lengths: np.ndarray, step: int, where: str):
        first = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(np.maximum(np.asarray(lengths, dtype=np.int64) - 1, 0) // step, out=first[1:])
        if int(first[-1]) != len(table):
            raise PersistError(
                f"{where}: {len(table)} checkpoints, the texts' lengths and step {step} call "
                f"for {int(first[-1])}"
            )
        self.table, self.first, self.step, self.where = table, first, step, where


class MappedTexts(Sequence):
    """The documents' texts of a format-3 index, decoded from their UTF-8 bytes when read (the
    last ones read kept, :data:`TEXT_CACHE_CHARS` characters at most). A slice is a tuple of
    str. Compares equal to a tuple or list holding the same texts.

    Parameters
    ----------
    blob : (total bytes,) uint8
        The texts' UTF-8 bytes, one after another.
    offsets : (n_docs + 1,) int64
        Where each text's bytes start (checked by the caller: from 0 to ``len(blob)``,
        non-decreasing).
    lengths : (n_docs,) int64
        Each text's length in characters (checked by the caller against its bytes).
    where : str
        The file a :class:`~longctx.persist.PersistError` names (``text_bytes.npy``).
    checkpoints : (n_checkpoints,) int64, optional
        The checkpoint table (the module's layout) read by :meth:`text_slice`; ``None`` (a
        folder saved without one): a slice decodes its whole text.
    step : int
        The table's step (characters), in ``[1, MAX_TEXT_STEP]``.
    checkpoints_where : str
        The file a bad checkpoint's :class:`~longctx.persist.PersistError` names.

    Raises
    ------
    PersistError
        ``checkpoints`` of another length than ``lengths`` and ``step`` call for.

    Attributes
    ----------
    lengths : (n_docs,) int64
        Each text's length in characters.
    """

    def __init__(
        self,
        blob: np.ndarray,
        offsets: np.ndarray,
        lengths: np.ndarray,
        where: str,
        checkpoints: np.ndarray | None = None,
        step: int = TEXT_STEP,
        checkpoints_where: str = "text_checkpoints.npy",
    ):
        self._blob = blob
        self._offsets = offsets
        self.lengths = lengths
        self._where = where
        self._cp = None
        if checkpoints is not None:
            cp = _Checkpoints(checkpoints, lengths, step, checkpoints_where)
            if len(checkpoints):  # else every text is short: decoded whole, nothing held
                self._cp = cp
        self._cache: OrderedDict[int, str] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self._text(j) for j in range(*i.indices(len(self))))
        return self._text(self._position(i))

    def _position(self, i) -> int:
        n = len(self)
        i = int(i)
        if not -n <= i < n:
            raise IndexError("text index out of range")
        return i % n

    def __iter__(self):
        return (self._text(j) for j in range(len(self)))

    def __eq__(self, other) -> bool:
        if isinstance(other, (MappedTexts, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None

    def __repr__(self) -> str:
        return f"MappedTexts({len(self)} texts)"

    def text_slice(self, i: int, start: int | None, end: int | None) -> str:
        """``self[i][start:end]``, decoded from the checkpoints around it (the module's doc)
        unless text ``i`` is short, cached, or the index has no checkpoint table (then the
        whole text is decoded and cached, as ``self[i]``).

        Parameters
        ----------
        i : int
            The text (negative counts from the end, as for a sequence).
        start, end : int or None
            Characters, as in a slice (``None``, negative and out-of-range values too).

        Returns
        -------
        str
            At most ``end - start`` characters.

        Raises
        ------
        IndexError
            ``i`` out of range.
        PersistError
            Damaged texts or checkpoints (named; the module's doc lists the checks).
        """
        i = self._position(i)
        n_chars = int(self.lengths[i])
        a, b, _ = slice(start, end).indices(n_chars)
        if b <= a:
            return ""
        with self._lock:
            t = self._cache.get(i)
        cp = self._cp
        if t is None and (cp is None or n_chars <= cp.step):
            t = self._text(i)
        if t is not None:
            return t[a:b]
        k = cp.step
        lo, hi = a // k, -(-b // k)
        c_lo, c_hi = lo * k, min(hi * k, n_chars)
        y_lo, y_hi = self._checkpoint(i, lo), self._checkpoint(i, hi)
        if not (0 <= y_lo and c_hi - c_lo <= y_hi - y_lo <= 4 * (c_hi - c_lo)):
            raise PersistError(
                f"{cp.where}: the checkpoints of text {i} at characters {c_lo} and {c_hi} "
                f"(bytes {y_lo}, {y_hi}) are out of order or outside the text"
            )
        at = int(self._offsets[i])
        try:
            w = self._blob[at + y_lo : at + y_hi].tobytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PersistError(
                f"{cp.where}: a checkpoint of text {i} at characters {c_lo} or {c_hi} is not "
                f"on a character boundary, or the text is not valid UTF-8 ({exc.reason})"
            ) from None
        if len(w) != c_hi - c_lo:
            raise PersistError(
                f"{cp.where}: text {i} holds {len(w)} characters between its checkpoints at "
                f"characters {c_lo} and {c_hi}"
            )
        return w[a - c_lo : b - c_lo]

    def _checkpoint(self, i: int, j: int) -> int:
        """The byte offset (from text ``i``'s start) of its character ``j * step`` (its end
        past the last checkpoint)."""
        cp = self._cp
        if j == 0:
            return 0
        first = int(cp.first[i])
        if j > int(cp.first[i + 1]) - first:
            return int(self._offsets[i + 1]) - int(self._offsets[i])
        y = int(cp.table[first + j - 1])
        if y > int(self._offsets[i + 1]) - int(self._offsets[i]):
            raise PersistError(f"{cp.where}: a checkpoint of text {i} is past its bytes")
        return y

    def _text(self, i: int) -> str:
        with self._lock:
            t = self._cache.get(i)
            if t is not None:
                self._cache.move_to_end(i)
                return t
        a, b = int(self._offsets[i]), int(self._offsets[i + 1])
        try:
            t = self._blob[a:b].tobytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PersistError(
                f"{self._where}: text {i} is not valid UTF-8 ({exc.reason})"
            ) from None
        if len(t) != int(self.lengths[i]):
            raise PersistError(
                f"{self._where}: text {i} holds {len(t)} characters, text_chars says "
                f"{int(self.lengths[i])}"
            )
        if len(t) <= TEXT_CACHE_CHARS // 4:
            with self._lock:
                if i in self._cache:  # another thread decoded it meanwhile: counted once
                    self._cache.move_to_end(i)
                    return self._cache[i]
                self._cache[i] = t
                self._cached += len(t)
                while self._cached > TEXT_CACHE_CHARS:
                    _, old = self._cache.popitem(last=False)
                    self._cached -= len(old)
        return t
