"""The evidence items of MixPR's explanations (:mod:`longctx.mixpr.explain`): how many are
kept per hit, a unit as an item names it (its document, position and characters), a term
column's name, and the positions of the largest values (the items kept, best first).

Shared by the PageRank walk's explanation (:mod:`longctx.mixpr.explain`) and the multi-hop
walk's (:mod:`longctx.mixpr.explain_multihop`); the shapes are those of :mod:`longctx.explain`.
"""

from __future__ import annotations

import weakref

import numpy as np

from longctx.mixpr.persist_mapped import MappedVocabulary

__all__ = [
    "unit_fields",
    "units_fields",
    "term_namer",
    "top_positions",
    "by_top",
    "TOP_TERMS",
    "TOP_SEEDS",
    "TOP_PATHS",
    "TOP_UNITS",
]


#: Evidence items kept per hit.
TOP_TERMS = 5
TOP_SEEDS = 3
TOP_PATHS = 5
#: Units named per document hit (``whole_documents=True``).
TOP_UNITS = 5

_TERM_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _term_names(table) -> list[str]:
    """The terms of ``table`` by column, built once per table (a table never changes)."""
    names = _TERM_NAMES.get(table)
    if names is None:
        names = _TERM_NAMES[table] = table.terms()
    return names


def unit_fields(st, j: int) -> dict:
    """Unit ``j`` of the state ``st`` as an evidence item names it: ``unit`` (``j``),
    ``doc_id``, ``index`` (its position among its document's units), ``start``, ``end``."""
    d = int(st.unit_source[j])
    return {
        "unit": int(j),
        "doc_id": st.doc_ids[d],
        "index": int(st.unit_positions(j)),
        "start": int(st.starts[j]),
        "end": int(st.ends[j]),
    }


def units_fields(st, units) -> list[dict]:
    """:func:`unit_fields` of each of ``units`` (``(m,)`` int), read as arrays at once."""
    units = np.asarray(units, np.int64)
    if not len(units):
        return []
    cols = zip(
        units.tolist(),
        np.asarray(st.unit_source[units]).tolist(),
        np.asarray(st.unit_positions(units)).tolist(),
        np.asarray(st.starts[units]).tolist(),
        np.asarray(st.ends[units]).tolist(),
    )
    names = st.doc_ids
    return [
        {"unit": j, "doc_id": names[d], "index": i, "start": a, "end": b} for j, d, i, a, b in cols
    ]


def term_namer(table):
    """Term column -> term of ``table`` (a :class:`~longctx.mixpr.tfidf.TermTable` or
    :class:`~longctx.mixpr.tfidf.TermStats`): read from a mapped vocabulary one term at a
    time, else from the terms listed once per table."""
    vocab = table.vocabulary
    if isinstance(vocab, MappedVocabulary):
        return vocab.term
    return _term_names(table).__getitem__


def top_positions(values: np.ndarray, n: int) -> list[int]:
    """Positions of the ``n`` largest ``values``, largest first (ties: the earlier first);
    linear in ``len(values)`` (a partition, then a sort of ``n``)."""
    if len(values) > n:
        part = np.argpartition(-values, n - 1)[:n]
        part.sort()
        return part[np.argsort(-values[part], kind="stable")].tolist()
    return np.argsort(-values, kind="stable").tolist()


def by_top(v: float, top: float) -> float:
    """``v / top``, as :func:`~longctx.mixpr.query.divide_by_top` scales a whole vector."""
    return v / top if top > 0 else v
