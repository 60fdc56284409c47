"""The units a metadata filter keeps (:class:`UnitFilter`), held as what it selects: the kept
documents and, through each document's range of units, the kept units, so that a filtered
query costs the units the filter keeps and those the walk touches, not a pass over every unit.

A filter is a predicate on a document's metadata (:func:`longctx.filters.compile_filter`), so
it is asked once per document (``O(n_docs)``); the units of a document are one contiguous range
of the block (units are stored in document order), found by binary search once per block
(:func:`document_starts`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["UnitFilter", "document_starts"]


def document_starts(
    unit_doc: np.ndarray, n_docs: int, *, ordered: bool = False
) -> np.ndarray | None:
    """``(n_docs + 1,) int64``: where each document's units begin in the block (document ``d``
    holds units ``starts[d] .. starts[d + 1] - 1``), or ``None`` when ``unit_doc`` is not in
    ascending order (then :class:`UnitFilter` finds the kept units by one pass). Costs one
    pass over ``unit_doc`` (query-independent: a block computes it once); with ``ordered``
    (the caller checked the order: a load's ``check_units``) a binary search per document
    only, no pass over the units (read while a mapped load still holds their pages)."""
    unit_doc = np.asarray(unit_doc)
    if not ordered and len(unit_doc) > 1 and bool((unit_doc[1:] < unit_doc[:-1]).any()):
        return None
    return np.searchsorted(unit_doc, np.arange(n_docs + 1)).astype(np.int64)


class UnitFilter:
    """The units of the documents a filter keeps.

    Parameters
    ----------
    docs : (n_docs,) bool
        The documents the filter keeps.
    unit_doc : (n,) int64
        Each unit's document.
    starts : (n_docs + 1,) int64 or None
        :func:`document_starts` of ``unit_doc`` (``None``: one pass over ``unit_doc``).

    Attributes
    ----------
    units : (m,) int64, ascending, read-only
        The kept units (the ranges of the kept documents: ``O(n_docs + m)``).
    nbytes : int
        Bytes it may hold (the dense mask of :meth:`dense` counted, made or not).
    """

    __slots__ = ("_dense", "docs", "nbytes", "n", "unit_doc", "units")

    def __init__(self, docs: np.ndarray, unit_doc: np.ndarray, starts: np.ndarray | None):
        self.docs = np.asarray(docs, dtype=bool)
        self.unit_doc = unit_doc
        self.n = len(unit_doc)
        if starts is None:
            units = np.flatnonzero(self.docs[unit_doc]) if self.n else np.zeros(0, np.int64)
        else:
            kept = np.flatnonzero(self.docs)
            first = starts[kept]
            lens = starts[kept + 1] - first
            total = int(lens.sum())
            units = np.repeat(first - (np.cumsum(lens) - lens), lens) + np.arange(total)
        self.units = units.astype(np.int64, copy=False)
        for a in (self.docs, self.units):
            a.setflags(write=False)
        self._dense = None
        self.nbytes = self.docs.nbytes + self.units.nbytes + self.n

    def __len__(self) -> int:
        """How many units it keeps."""
        return len(self.units)

    def at(self, idx: np.ndarray) -> np.ndarray:
        """``(len(idx),) bool``: whether each of the units ``idx`` is kept (``O(len(idx))``)."""
        return self.docs[self.unit_doc[idx]]

    def dense(self) -> np.ndarray:
        """``(n,) bool``, read-only: every unit's answer, made on first use (for the paths that
        read every unit anyway: the power iteration's and hybrid mode's dense vectors, the
        multi-hop walk, :meth:`~longctx.mixpr.index.MixPRIndex.unit_mask`)."""
        if self._dense is None:
            out = np.zeros(self.n, bool)
            out[self.units] = True
            out.setflags(write=False)
            self._dense = out
        return self._dense
