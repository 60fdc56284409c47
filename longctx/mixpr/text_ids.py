"""Each unit's text id: the identity :meth:`MixPRIndex.search(unique_texts=True)
<longctx.mixpr.index.MixPRIndex.search>` compares (:func:`longctx.selection.select_distinct`).

Two units have the same text when their texts are equal once every whitespace run is made one
space and the ends are stripped (:func:`normalized`: a title page, a heading repeated in a
book). A unit's id is the first unit with its text: ``ids[i] <= i``, ``ids[ids[i]] ==
ids[i]``, and ``ids[i] == ids[j]`` exactly when units ``i`` and ``j`` have the same text. The
ids are made once per index state (:meth:`~longctx.mixpr.state._State.text_ids`: one pass over
the units' texts when first asked, or a load's saved array, or a delete's, renumbered without
reading a text: :func:`kept_ids`, or an insert's or update's, from the old state's ids and the
new units' texts: :func:`spliced_ids`), never per query: a query reads the ids of the units it
reaches (budget queries read thousands of unit texts before, 12-17 ms at 1M words).

Beside the ids a state that made them holds each unit's normalised text's ``hash()``
(``(n_units,) int64``, this process's string hash: never saved), so that an insert finds the
old units that may share a new unit's text by one vectorised comparison and reads only those
(the first unit of each candidate group, compared as text: a hash collision costs a read, never
a wrong id).

A loaded state holds the saved ids without their hashes: its first insert or update drops the
ids (the new state makes them in one pass at its first ``unique_texts`` query, as a build's
does); a delete renumbers them.

Saved by a format-3 save as ``text_ids.npy`` (``(n_units,)`` int32 where it fits, else int64)
when the state holds them (made by a query, a change or a load; a save never makes them:
optional, an index saved without it makes its ids at the first query that asks). A load checks
the file as untrusted input: its structure (:func:`check_text_ids`) at the open, and that each
unit given another unit's id has that unit's text (:func:`verify_text_ids`) at the open with
``mmap=False``, at the first use of the ids with ``mmap=True``.
"""

from __future__ import annotations

import logging
import time
from array import array

import numpy as np

from longctx.mixpr.hits import text_slice
from longctx.persist import PersistError
from longctx.persist.npy import release

__all__ = [
    "check_text_ids",
    "ids_dtype",
    "kept_ids",
    "normalized",
    "spliced_ids",
    "unit_text_ids",
    "verify_text_ids",
]

logger = logging.getLogger(__name__)

#: Units checked at a time by :func:`check_text_ids` (a bounded temporary).
CHECK_BLOCK = 1 << 20
#: Units whose offsets :func:`unit_text_ids` reads as lists at a time (0.3 MB of them).
READ_BLOCK = 1 << 13


def normalized(text: str) -> str:
    """``text`` with every whitespace run made one space and the ends stripped: the text two
    units must share to take one slot."""
    return " ".join(text.split())


def ids_dtype(n: int):
    """int32 for ``n`` units below ``2**31``, else int64."""
    return np.int32 if n <= np.iinfo(np.int32).max else np.int64


def unit_text_ids(texts, source, starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, hashes)``: ``ids`` ``(n_units,)`` int32 (int64 past ``2**31 - 1`` units), each
    unit's text id (the first unit whose :func:`normalized` text is its own); ``hashes``
    ``(n_units,)`` int64, each unit's normalised text's ``hash()`` (for :func:`spliced_ids`).
    Both read-only.

    Parameters
    ----------
    texts : sequence of str
        The documents (a format-3 index's :class:`~longctx.mixpr.persist_texts.MappedTexts`:
        each document is decoded once, and a repeated text's first unit around it).
    source, starts, ends : (n_units,) int arrays
        Each unit's document and its characters ``[start, end)`` in it; units in document
        order.

    Notes
    -----
    One pass over the units, ``O(total characters)``: each unit's text normalised and hashed,
    looked up by its hash (a dict of ints, not of the texts: 8 MB at the peak at 1M words,
    51,262 units, against 22 MB keyed by the texts); a unit whose hash an earlier unit has is
    compared with that unit's text, read again (a repeated text costs two reads, a hash
    collision a dict of the colliding texts).
    """
    t0 = time.perf_counter()
    by_hash: dict[int, int] = {}  # hash -> the first unit of the first text with it
    collided: dict[str, int] = {}  # texts whose hash an earlier, other text holds
    out, hashes = array("q"), array("q")
    doc, text = -1, ""
    for lo in range(0, len(starts), READ_BLOCK):  # the units' offsets as lists, by blocks
        part = (np.asarray(x[lo : lo + READ_BLOCK]).tolist() for x in (source, starts, ends))
        for i, (d, x, y) in enumerate(zip(*part), lo):
            if d != doc:
                doc, text = d, texts[d]
            t = " ".join(text[x:y].split())
            h = hash(t)
            j = by_hash.setdefault(h, i)
            if j != i and normalized(_unit_text(texts, source, starts, ends, j)) != t:
                j = collided.setdefault(t, i)
            out.append(j)
            hashes.append(h)
    ids = np.frombuffer(out, dtype=np.int64).astype(ids_dtype(len(out)))
    ids.setflags(write=False)
    logger.debug(
        "text ids of %d units (%d distinct hashes) made in %.3f s",
        len(ids), len(by_hash), time.perf_counter() - t0,
    )  # fmt: skip
    return ids, _frozen_hashes(hashes)


def _unit_text(texts, source, starts, ends, i: int) -> str:
    return text_slice(texts, int(source[i]), int(starts[i]), int(ends[i]))


def _frozen_hashes(hashes) -> np.ndarray:
    out = np.array(hashes, dtype=np.int64)  # a copy (of an array("q") too: no shared buffer)
    out.setflags(write=False)
    return out


def spliced_ids(st, held, lo: int, hi: int, unit_texts) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, hashes)`` of the state that replaces units ``lo .. hi`` of ``st`` (a
    :class:`~longctx.mixpr.state._State`) by units of texts ``unit_texts``: an insert's or an
    update's, as :func:`unit_text_ids` of the new state would make them.

    Parameters
    ----------
    st : _State
        The old state (the candidates' texts read by its ``unit_text``).
    held : (ids, hashes)
        The old state's ids (``(n_old,)`` int) and hashes (``(n_old,)`` int64), as
        :func:`unit_text_ids` made them (a state that holds hashes made or spliced its ids in
        this process: they were never read from a file).
    lo, hi : int
        The old units replaced (``lo == hi``: an insert at ``lo``).
    unit_texts : sequence of str
        The new units' texts, in order.

    Returns
    -------
    ids : (n_new,) int32 (int64 past ``2**31 - 1`` units), read-only
    hashes : (n_new,) int64, read-only

    Notes
    -----
    Reads the new units' texts, the old units whose hash one of them has (one vectorised
    comparison over the old hashes) and, per candidate group, its first unit's text; renumbers
    in ``O(n log n)`` without a text read. Each old group keeps its identity (its old first
    unit, even when an update removed it); a new unit joins the old group of its text, else the
    first new unit of its text.
    """
    old_ids, old_hashes = held
    norm = [normalized(t) for t in unit_texts]
    new_hashes = _frozen_hashes([hash(t) for t in norm])
    groups: dict = {}  # hash -> {old group: its text (read when first compared)}
    for i in np.flatnonzero(np.isin(old_hashes, new_hashes)).tolist():
        groups.setdefault(int(old_hashes[i]), {}).setdefault(int(old_ids[i]), None)
    n_old, labels, fresh = len(old_ids), [], {}
    for j, (t, h) in enumerate(zip(norm, new_hashes.tolist())):
        label = None
        same = groups.get(h, {})
        for g in same:
            if same[g] is None:
                same[g] = normalized(st.unit_text(g))
            if same[g] == t:
                label = g
                break
        labels.append(fresh.setdefault(t, n_old + j) if label is None else label)
    labels = np.concatenate([old_ids[:lo], np.asarray(labels, np.int64), old_ids[hi:]])
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    ids = first[inverse].astype(ids_dtype(len(labels)), copy=False)
    ids.setflags(write=False)
    hashes = _frozen_hashes(np.concatenate([old_hashes[:lo], new_hashes, old_hashes[hi:]]))
    return ids, hashes


def kept_ids(ids: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The text ids of the units ``keep`` (``(n_units,)`` bool) keeps, renumbered among them
    (a delete's): units that shared an id share one again, now the first kept unit of the
    group. ``(m,)`` int32 (int64 past ``2**31 - 1`` units), read-only; no text read,
    ``O(m log m)``."""
    old = np.asarray(ids)[keep]
    _, first, inverse = np.unique(old, return_index=True, return_inverse=True)
    out = first[inverse].astype(ids_dtype(len(old)), copy=False)
    out.setflags(write=False)
    return out


def check_text_ids(ids: np.ndarray, n_units: int, where: str) -> None:
    """Check a loaded ``text_ids`` array (untrusted): ``(n_units,)`` of an integer dtype, and
    every id the first unit of its group (``0 <= ids[i] <= i`` and ``ids[ids[i]] == ids[i]``).
    Read in blocks of :data:`CHECK_BLOCK`; the pages are given back after.

    The structure only: that the units given one id share their text is
    :func:`verify_text_ids`'s (it reads texts).

    Raises
    ------
    PersistError
        Naming ``where`` and the first problem.
    """
    if ids.ndim != 1 or len(ids) != n_units:
        raise PersistError(f"{where}: one text id per unit expected ({n_units}), got {ids.shape}")
    if not np.issubdtype(ids.dtype, np.integer):
        raise PersistError(f"{where}: text ids must be integers, not {ids.dtype}")
    for s in range(0, n_units, CHECK_BLOCK):
        b = np.asarray(ids[s : s + CHECK_BLOCK], dtype=np.int64)
        if b.min() < 0 or np.any(b > np.arange(s, s + len(b))):
            raise PersistError(f"{where}: a text id outside [0, its unit]")
        if np.any(np.asarray(ids[b]) != b):
            raise PersistError(f"{where}: a text id that is not the first unit of its text")
    release(ids)


def verify_text_ids(ids: np.ndarray, texts, source, starts, ends, where: str) -> None:
    """Check that each unit ``i`` a loaded ``ids`` array (its structure checked by
    :func:`check_text_ids`) gives another unit's id, ``ids[i] != i``, has that unit's
    :func:`normalized` text: a forged but well-formed array that gives two different texts one
    id would make ``unique_texts`` drop one of them.

    Reads the text of each such unit and of the first unit of its group (once: cached), so the
    cost scales with the repeated units, not with the index (a text never repeated is not read);
    the ids are read in blocks of :data:`CHECK_BLOCK`, their pages then given back. An array
    that splits one text's units into two groups passes: ``unique_texts`` then keeps two units
    of one text, never drops a distinct one.

    Parameters
    ----------
    ids : (n_units,) int array
    texts, source, starts, ends
        As :func:`unit_text_ids`'s.
    where : str
        What the error names (the file).

    Raises
    ------
    PersistError
        Naming ``where`` and the first unit whose text differs from its group's.
    """
    t0 = time.perf_counter()
    first: dict[int, str] = {}  # a group's first unit -> its normalised text
    for s in range(0, len(ids), CHECK_BLOCK):
        b = np.asarray(ids[s : s + CHECK_BLOCK], dtype=np.int64)
        dup = np.flatnonzero(b != np.arange(s, s + len(b)))
        for i, g in zip((dup + s).tolist(), b[dup].tolist()):
            t = first.get(g)
            if t is None:
                t = first[g] = normalized(_unit_text(texts, source, starts, ends, g))
            if normalized(_unit_text(texts, source, starts, ends, i)) != t:
                raise PersistError(
                    f"{where}: unit {i} is given the text id of unit {g}, whose text differs "
                    "(damaged or forged text ids)"
                )
    release(ids)
    logger.debug(
        "text ids of %d units verified against %d repeated texts in %.3f s",
        len(ids), len(first), time.perf_counter() - t0,
    )  # fmt: skip
