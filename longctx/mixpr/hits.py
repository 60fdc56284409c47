"""The last stage of :meth:`longctx.mixpr.MixPRIndex.search`: from the units' scores to the
hits. :func:`select_units` picks the units (``k`` or a token budget, among the units a filter
keeps, one slot per distinct text with ``unique_texts``: the state's text ids compared,
:mod:`longctx.mixpr.text_ids`), :func:`unit_hit` makes a unit a
:class:`~longctx.types.Passage`, and :func:`document_hits` ranks the documents by their best
unit instead (``whole_documents=True``).

Scores come dense (``(n_units,) float64``) or as :class:`~longctx.selection.SparseScores` over
the units a push walk reached; the selection reads the sparse ones without a pass over the
units (:func:`~longctx.selection.select_top`).
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np

from longctx.mixpr.seeds import kept_ranking
from longctx.selection import SparseScores, select_distinct, select_top
from longctx.types import Passage, SearchResult

__all__ = [
    "dense_scores",
    "document_units",
    "select_units",
    "text_slice",
    "unit_hit",
    "unit_hits",
    "unit_text_key",
    "values_at",
    "document_hits",
]


def dense_scores(scores) -> np.ndarray:
    """``(n_units,) float64`` of scores given dense or as :class:`SparseScores`."""
    return scores.dense() if isinstance(scores, SparseScores) else scores


def values_at(scores, idx) -> np.ndarray:
    """``(len(idx),) float64``: the scores (dense or :class:`SparseScores`) of units ``idx``."""
    return (
        scores.at(idx) if isinstance(scores, SparseScores) else np.asarray(scores[idx], np.float64)
    )


def text_slice(texts, d: int, start: int, end: int) -> str:
    """``texts[d][start:end]`` (characters), decoded from around the slice only when
    ``texts`` is a format-3 index's :class:`~longctx.mixpr.persist_texts.MappedTexts` (its
    ``text_slice``: a hit in a 1 MB book decodes a few KB, not the book); raises its
    :class:`~longctx.persist.PersistError` for damaged texts."""
    part = getattr(texts, "text_slice", None)
    return texts[d][start:end] if part is None else part(d, start, end)


def unit_hit(st, i: int, score: float) -> Passage:
    """Unit ``i`` of the state ``st`` as a hit of score ``score``."""
    d, a, b = int(st.unit_source[i]), int(st.starts[i]), int(st.ends[i])
    return Passage(a, b, text_slice(st.texts, d, a, b), score, int(st.unit_positions(i)), d)


def unit_hits(st, idx, vals) -> tuple[Passage, ...]:
    """Units ``idx`` (``(h,) int``) of the state ``st`` as hits of scores ``vals`` (``(h,)
    float``): :func:`unit_hit` of each, the same values, with the units' documents, offsets and
    positions read by one gather for all of them rather than one per hit (a token budget's
    selection returns hundreds)."""
    idx = np.asarray(idx, dtype=np.int64)
    if not len(idx):
        return ()
    texts = st.texts
    src, a, b = st.unit_source[idx].tolist(), st.starts[idx].tolist(), st.ends[idx].tolist()
    pos = np.asarray(st.unit_positions(idx)).tolist()
    return tuple(
        Passage(int(x), int(y), text_slice(texts, d, x, y), float(v), int(p), int(d))
        for d, x, y, v, p in zip(src, a, b, np.asarray(vals).tolist(), pos)
    )


def unit_text_key(st, allowed) -> np.ndarray:
    """``(m,)`` int: the text id (:meth:`~longctx.mixpr.state._State.text_ids`, made once per
    state) of each unit of the selection (of ``allowed`` when given, ``m = len(allowed)``,
    else every unit): the identity :func:`select_distinct` compares, units of the same
    normalised text (whitespace runs made one space) sharing one."""
    ids = st.text_ids()
    return ids if allowed is None else ids[allowed]


def select_units(st, scores, allowed, *, k, token_budget, counts, unique_texts: bool):
    """The units to return, in document order.

    Parameters
    ----------
    st : the index's state (``_State``)
    scores : (n_units,) float64 or SparseScores
    allowed : (m,) int64 ascending or None
        The units the filters keep (``None``: every unit).
    k, token_budget : int or None
        The size (one of them, checked by :func:`~longctx.selection.check_size`).
    counts : (n_units,) int64 or None
        The units' token counts (needed with ``token_budget``).
    unique_texts : bool
        One slot per distinct text (:func:`~longctx.selection.select_distinct` over the
        state's text ids: :func:`unit_text_key`).

    Returns
    -------
    idx : (h,) int64
        The chosen units.
    vals : (h,) float64
        Their scores.
    """
    sparse = isinstance(scores, SparseScores)
    sub = scores
    if allowed is not None:
        sub = scores.restrict(allowed) if sparse else scores[allowed]
    pick = select_top
    if unique_texts:
        pick = partial(select_distinct, key=unit_text_key(st, allowed))
    if token_budget is not None:
        sel = pick(
            sub,
            token_budget=token_budget,
            token_counts=counts if allowed is None else counts[allowed],
        )
    else:
        sel = pick(sub, k=k)
    idx = sel if allowed is None else allowed[sel]
    return idx, values_at(scores, idx)


def document_hits(st, scores, k: int, method: str, used: str, timings, t0, mask=None, real=None):
    """The ``k`` documents whose best unit scores highest (ties to the earlier document), each
    as one whole-text hit (``index``: its best unit's position, ties to the later unit);
    ``timings["select"]`` is the time since ``t0`` (``time.perf_counter()``). ``mask``: the
    :class:`~longctx.mixpr.unit_filter.UnitFilter` of the units kept, or ``None``. The index
    holds at least one unit (a search of an empty index returns before).

    ``real`` (``keep_firsts``: ``scores`` then only order the choice,
    :func:`~longctx.mixpr.seeds.keep_first_units`): the scores the hits report, each chosen
    document's best unit and score taken from them (:func:`_real_best`), and
    ``info["ranking"]`` the order of ``scores``.

    Sparse scores (:class:`~longctx.selection.SparseScores`, none negative) cost the units
    they hold and one pass over the documents (:func:`_best_documents`); dense ones a pass
    over the kept units (:func:`_best_documents_dense`, no sort)."""
    starts = st.block.doc_starts()
    if isinstance(scores, SparseScores) and not (scores.vals < 0).any():
        top, best, arg = _best_documents(st.unit_source, starts, scores, mask, k)
    else:
        top, best, arg = _best_documents_dense(starts, dense_scores(scores), mask, k)
    info = {"whole_documents": True}
    if real is not None:
        info["ranking"] = kept_ranking(best)
        best, arg = _real_best(starts, real, top, mask)
    hits = tuple(
        Passage(0, len(st.texts[d]), st.texts[d], float(b), int(j), int(d))
        for d, b, j in zip(top.tolist(), best.tolist(), st.unit_positions(arg).tolist())
    )
    timings["select"] = time.perf_counter() - t0
    info = {"doc_ids": tuple(st.doc_ids[h.source] for h in hits), **info}
    return SearchResult(hits, method, used, timings, {"k": k}, info=info)


def document_units(starts, d: int, scores, mask=None) -> tuple[np.ndarray, np.ndarray]:
    """``(units (u,) int64 ascending, their scores (u,) float64)``: the units of document ``d``
    that ``mask`` keeps (a :class:`~longctx.filters.UnitFilter`, ``None``: all), with their
    values in ``scores`` (dense or sparse; 0 where absent). ``starts``: each document's first
    unit, ``(n_docs + 1,)``. Costs the document's units."""
    units = np.arange(starts[d], starts[d + 1], dtype=np.int64)
    if mask is not None:
        units = units[mask.at(units)]
    return units, values_at(scores, units)


def _real_best(starts, scores, docs, mask):
    """``(best (h,) float64, arg (h,) int64)``: the best score among the kept units of each
    document of ``docs`` and its unit (ties to the later unit; a document whose kept units
    all score 0: its last kept unit), from ``scores`` (dense or sparse). Costs the units of
    ``docs`` (the chosen documents), not of the index."""
    best, arg = np.zeros(len(docs)), np.zeros(len(docs), np.int64)
    for r, d in enumerate(docs.tolist()):
        units, vals = document_units(starts, d, scores, mask)
        j = len(vals) - 1 - int(np.argmax(vals[::-1]))
        best[r], arg[r] = vals[j], units[j]
    return best, arg


def _best_documents(unit_source, starts, scores: SparseScores, mask, k: int):
    """:func:`document_hits`' choice from sparse scores: ``(documents (h,) ascending, their
    best scores (h,), their best units (h,))``. A document's best is its best positive unit
    (ties to the later unit), else 0 at its last unit (every unit it holds scores 0); the
    documents are those holding a unit ``mask`` keeps (``starts``: each document's first
    unit, units in document order)."""
    sizes = np.diff(starts)
    cand = np.flatnonzero(sizes > 0 if mask is None else (sizes > 0) & mask.docs)
    idx, vals = scores.idx, scores.vals
    if mask is not None:
        keep = mask.at(idx)
        idx, vals = idx[keep], vals[keep]
    pos = vals > 0
    idx, vals = idx[pos], vals[pos]
    doc = unit_source[idx]
    order = np.lexsort((idx, vals, doc))  # by document, then score, then unit
    doc, idx, vals = doc[order], idx[order], vals[order]
    last = np.flatnonzero(np.append(doc[1:] != doc[:-1], True)) if len(doc) else order[:0]
    doc, idx, vals = doc[last], idx[last], vals[last]
    at = np.searchsorted(cand, doc)
    sel = select_top(SparseScores(len(cand), at, vals), k=k)
    top = cand[sel]
    found = np.searchsorted(at, sel)
    found = np.minimum(found, max(len(at) - 1, 0))
    hit = at[found] == sel if len(at) else np.zeros(len(sel), bool)
    best = np.where(hit, vals[found] if len(at) else 0.0, 0.0)
    arg = np.where(hit, idx[found] if len(at) else 0, starts[top + 1] - 1)
    return top, best, arg.astype(np.int64)


def _best_documents_dense(starts, scores: np.ndarray, mask, k: int):
    """:func:`document_hits`' choice from ``(n_units,)`` scores, as :func:`_best_documents`
    returns it: each document's best unit by one segmented reduction over the kept units (a
    document's units are one range, ``starts``), no sort of the units."""
    sizes = np.diff(starts)
    keep = sizes > 0 if mask is None else (sizes > 0) & mask.docs
    cand = np.flatnonzero(keep)
    if mask is None:
        vals, seg = scores, starts[cand]
    else:
        vals = scores[mask.units]
        seg = np.cumsum(sizes[cand]) - sizes[cand]
    if not len(cand):
        return cand, np.zeros(0), cand
    best = np.maximum.reduceat(vals, seg)
    pos = np.where(vals == np.repeat(best, sizes[cand]), np.arange(len(vals)), -1)
    last = np.maximum.reduceat(pos, seg)  # the later unit among equal bests
    arg = last if mask is None else mask.units[last]
    sel = select_top(best, k=k)
    return cand[sel], best[sel], arg[sel].astype(np.int64)
