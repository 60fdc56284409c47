"""Dense seeds: another retriever's hits as a restart of the MixPR walk, without embedding.

An app that already has a vector index (a LlamaIndex ``VectorStoreIndex``, a LangChain
``VectorStore``) has paid for its embeddings. Its retriever's top chunks for a query are given to
:meth:`longctx.MixPRIndex.search` as :class:`Seed` objects: a document id, the chunk's character
span in that document and its score. The index maps each seed to the units it overlaps through
its per-document unit offsets (binary searches: the cost grows with the seeds, not with the
units), with no embedding call. A hit whose source holds several documents (a loader's pages
or rows) names them all as candidates, and :func:`pick_parent` picks the one its span falls
in (its text at its offset). They restart a walk of their own: the hybrid's score of a unit
is MixPR's own score plus the seeds' walk's, each divided by its maximum
(:meth:`~longctx.mixpr.edges.QueryEdgesBlock.scores_seeded`), so the best of each weighs 1 and
a few seeded units add the app's hits without pushing MixPR's own best units out of a small
budget (a fixed share of one restart did: the walk is linear in its restart, and the seeds'
share sat on a few units; the embedding hybrid's ``dense_restart`` does not apply to seeds).
On the multi-hop walk (a corpus of passages) the seeds are that walk's passage weights instead
(``dense_seed`` of :class:`~longctx.mixpr.multihop.MultiHopWalk`, as HippoRAG 2 weighs passages
by their dense scores), with MixPR's own score as its first hop.

Source: the personalized PageRank restart of MixPR (Alonso and Millidge, "Mixture-of-PageRanks:
Replacing Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4, local
queries: the restart on the query's TF-IDF neighbours). Seeding that restart with another retriever's hits is not in the paper.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from longctx.selection import union_positions

__all__ = [
    "Seed",
    "MAX_SEEDS",
    "best_unit",
    "check_keep_firsts",
    "check_seeds",
    "first_units",
    "hit_seed",
    "keep_first_units",
    "kept_ranking",
    "local_seeds",
    "mapped_seeds",
    "own_scores",
    "pick_parent",
    "raise_units",
    "rank_weight",
    "seed_source",
    "seed_units",
    "seeds_on",
    "warn_if_none_found",
]

logger = logging.getLogger(__name__)

#: Most seeds one query takes (an app's retriever returns a few dozen at most).
MAX_SEEDS = 10_000
#: Longest ``text`` of a seed that is located in its document (characters).
MAX_SEED_TEXT = 1_000_000
#: Most characters of candidate documents :func:`pick_parent` searches for one hit's text
#: when no candidate holds it at its offset (the fallback; the first pass reads no more than
#: ``len(text)`` characters of each candidate).
MAX_LOCATE_CHARS = 20_000_000


class Seed(NamedTuple):
    """One hit of another retriever, as a restart of the walk.

    Attributes
    ----------
    doc_id : str
        The id of the index's document the hit comes from (``MixPRIndex.doc_ids``).
    start, end : int or None
        Character offsets of the hit in that document (``0 <= start < end``). ``None`` for
        both: located by ``text`` when given (its first occurrence), else the whole document.
        With both offsets and ``text``, a text that is not the document's at those offsets
        is located instead.
    score : float >= 0, default 1.0
        The hit's weight: the seed's restart mass is in proportion to it (a cosine, a
        relevance score). Seeds of score 0 are ignored.
    text : str, optional
        The hit's text, to locate it when the offsets are missing.
    """

    doc_id: str
    start: int | None = None
    end: int | None = None
    score: float = 1.0
    text: str | None = None


def rank_weight(rank: int) -> float:
    """The seed weight of another retriever's hit at 0-based ``rank``: ``1 / (rank + 1)``.

    Ranks, not the retriever's scores: vector stores return cosines, inner products or
    distances (lower is better) on scales of their own, and a retriever may return none."""
    return 1.0 / (int(rank) + 1)


def best_unit(scores, keys=None) -> tuple[float, int] | None:
    """``(value, unit)`` of the largest positive score, ties to the earlier unit, or ``None``
    (no score above 0). ``scores``: ``(n,)``, :class:`~longctx.selection.SparseScores` or
    ``None``; ``keys``: ``(n,)`` int64, the units' names to return (and to break ties by, the
    smaller first: a shard's corpus keys), else their positions."""
    if scores is None:
        return None
    idx, vals = (scores.idx, scores.vals) if hasattr(scores, "vals") else (None, scores)
    vals = np.asarray(vals, dtype=np.float64)
    if not len(vals) or not vals.max() > 0:
        return None
    if keys is None:
        j = int(np.argmax(vals))
        return float(vals[j]), j if idx is None else int(idx[j])
    at = np.flatnonzero(vals == vals.max())
    return float(vals.max()), int(keys[at if idx is None else idx[at]].min())


def first_units(own, seed) -> list[int]:
    """The units a fusion that keeps each retriever's first hit keeps (``keep_firsts=True`` of
    :meth:`longctx.MixPRIndex.search`): MixPR's own best unit (the largest of ``own``, its
    scores for the question without the seeds) and the unit the seeds weigh most (the app's
    first hit: rank weight 1), in that order, each left out when absent (no positive score,
    no seed) and named once when both are one unit. Ties go to the earlier unit.

    Parameters
    ----------
    own : (n,) float64, :class:`~longctx.selection.SparseScores` or None
    seed : (units (m,) int64, weights (m,) float64) or None
        The seeds' restart (:func:`seed_units`).
    """
    best = best_unit(own)
    return firsts_in_order(None if best is None else best[1], top_seed(seed))


def top_seed(seed) -> int | None:
    """The unit the seeds weigh most (the app's first hit: rank weight 1; ties to the earlier
    seed), or ``None`` without a seed. ``seed``: ``(units (m,) int64, weights (m,) float64)``
    or ``None`` (:func:`seed_units`; a sharded index: its corpus keys)."""
    if seed is None or not len(seed[1]):
        return None
    return int(seed[0][int(np.argmax(seed[1]))])


def firsts_in_order(own_best: int | None, seed_first: int | None) -> list[int]:
    """The kept units, best first: MixPR's own best unit then the seeds' first, each left out
    when ``None`` and named once when both are one unit (:func:`first_units`; a sharded index
    over its corpus keys)."""
    return list(dict.fromkeys(j for j in (own_best, seed_first) if j is not None))


def top_score(scores) -> float:
    """The largest value of ``scores`` (``(n,)`` or :class:`~longctx.selection.SparseScores`),
    ``0.0`` for none."""
    vals = scores.vals if hasattr(scores, "vals") else np.asarray(scores, dtype=np.float64)
    return float(vals.max()) if len(vals) else 0.0


def raised_values(firsts: list[int], top: float) -> dict:
    """``{unit: value}`` of the kept units ``firsts`` (best first) over scores whose largest is
    ``top``: the ``r``-th gets ``top + 1 + (len(firsts) - r)``, above every other unit and in
    order (:func:`keep_first_units`; a sharded index with ``top`` over every shard)."""
    return {j: top + 1.0 + len(firsts) - r for r, j in enumerate(firsts)}


def keep_first_units(scores, firsts: list[int], allowed=None):
    """``scores`` with the units of ``firsts`` raised above every other unit, the first
    highest: the ORDER of a selection that keeps each retriever's first hit (any top ``k`` or
    budget selection takes them first; :meth:`longctx.MixPRIndex.search` reports the hits'
    own, unraised scores). The fusion rule of ``docs/notes/mixpr-recall.md``, "Fusion with the
    app's retriever": chosen on development samples of ``longctx bench``,
    ``benchmarks/studies/fusion_study.py``, rule ``firsts``. Not in MixPR's paper.

    A unit of ``firsts`` is raised when the filter keeps it (``allowed``), whatever its score:
    the app's first hit may score 0 in MixPR's fused scores (on the multi-hop walk, the seeded
    scores can equal MixPR's own, and a seed unit the walk does not reach scores 0); a sparse
    ``scores`` gets it inserted.

    Parameters
    ----------
    scores : (n,) float64 >= 0, or :class:`~longctx.selection.SparseScores`
    firsts : list of int
        Unit positions in ``[0, n)``, best first (:func:`first_units`).
    allowed : (m,) int64 ascending, optional
        The units a filter keeps (``None``: every unit); the others are never raised.

    Returns
    -------
    The same kind as ``scores`` (a new object, or ``scores`` itself when no unit is raised):
    kept units score ``top + 1 + (len(firsts) - r)`` for the ``r``-th, ``top`` the largest
    score; the others unchanged.
    """
    if allowed is not None:
        allowed = np.asarray(allowed, dtype=np.int64)
        at = np.searchsorted(allowed, firsts) if len(firsts) else np.zeros(0, np.int64)
        firsts = [j for j, a in zip(firsts, at.tolist()) if a < len(allowed) and allowed[a] == j]
    if not firsts:
        return scores
    return raise_units(scores, raised_values(firsts, top_score(scores)))


def raise_units(scores, raised: dict):
    """``scores`` (dense ``(n,)`` or :class:`~longctx.selection.SparseScores`, a new object of
    the same kind) with each unit of ``raised`` (``{position: value}``, non-empty) given its
    value: a sparse ``scores`` gets the units it lacks inserted. :func:`keep_first_units`'
    last step; a sharded index raises each shard's units with values set over the corpus
    (:mod:`longctx.corpus.shards.fused`)."""
    sparse = hasattr(scores, "vals")
    vals = scores.vals if sparse else np.asarray(scores, dtype=np.float64)
    if not sparse:
        out = vals.copy()
        out[list(raised)] = list(raised.values())
        return out
    keys = np.fromiter(raised, np.int64, len(raised))
    order = np.argsort(keys)
    idx, at_old, at_new = union_positions(scores.idx, keys[order])  # raised units inserted
    out = np.zeros(len(idx))
    out[at_old] = vals
    out[at_new] = np.fromiter(raised.values(), np.float64, len(raised))[order]
    return type(scores)(scores.n, idx, out)


def mapped_seeds(st, seeds) -> dict | None:
    """``keep_firsts``' record of a search (:meth:`longctx.MixPRIndex.search`): the seeds
    mapped to units once (``"seeds"``: :func:`seeds_on`, for the walk and for
    :func:`first_units` alike) and the seconds it took (``"seconds"``, the ``"seeds"`` timing);
    ``None`` without seeds."""
    if seeds is None:
        return None
    t0 = time.perf_counter()
    units = seeds_on(st, seeds)
    return {"seeds": units, "seconds": time.perf_counter() - t0}


def own_scores(session: Mapping, scores, used: str, walk: str, hybrid: bool):
    """MixPR's own scores for the question (without the seeds) as a seeded search left them,
    for :func:`first_units` (``keep_firsts=True``), or ``None`` where that search did not
    compute them and the plain walk must run (:meth:`longctx.MixPRIndex.search`).

    A seeded local walk keeps MixPR's own scores apart (``session["plain_scores"]``,
    :meth:`~longctx.mixpr.edges.QueryEdgesBlock.scores_seeded`, the seeds' walk divided by its
    maximum added to them), so a second walk without the seeds repeats them.

    ``None`` (walk again) on the multi-hop walk (``walk == "multihop"``), whatever ``used``
    (the mode before that walk): the seeded search replaces MixPR's scores by the multi-hop
    walk seeded by the app, and that walk may lift a fallback (``"global-fallback"``: the
    question reached no unit lexically) to ``"local"``, whose own scores are then the plain
    multi-hop walk's, not the fallback PageRank; the caller walks again in the mode the search
    ended in, or keeps ``scores`` when it stayed a fallback. Otherwise reused where they are
    what that walk gives, bit for bit (``tests/test_mixpr_keep_firsts_one_walk.py``):

    - ``used`` not ``"local"`` (global, or the fallback of a question and seeds that reach no
      unit): ``scores``, the PageRank a plain search gives too;
    - no seed reached a unit the filter keeps (no seeds' walk: no ``"seed_tops"``): ``scores``,
      MixPR's own walk;
    - the question reached a unit lexically (``seed_tops[0]``, MixPR's maximum, not ``None``):
      ``session["plain_scores"]``.

    Also ``None`` in hybrid mode (``hybrid``: the plain walk restarts on the query's nearest
    units too, the seeded one does not), and where only the seeds reached a unit (the plain
    search falls back to the PageRank).

    Parameters
    ----------
    session : mapping
        The scoring session of the one block (``UnitBlock._s(sid)``), before it is closed.
    scores : (n,) float64 or SparseScores
        The search's scores (the seeded ones of a local walk).
    used : str
        The mode used (``"local"``, ``"global"``, ``"global-fallback"``).
    walk : str
        The walk chosen (``"pagerank"`` or ``"multihop"``,
        :func:`~longctx.mixpr.router.query_walk`).
    hybrid : bool
        The index holds unit vectors.
    """
    if walk == "multihop":  # before `used`: the multi-hop walk may lift a fallback to local
        return None
    if used != "local":
        return scores
    if hybrid:
        return None
    if "seed_tops" not in session:
        return scores
    return None if session["seed_tops"][0] is None else session["plain_scores"]


def kept_ranking(raised) -> tuple[int, ...]:
    """Positions of the selected hits best first by their raised scores (``raised``: ``(h,)``
    float64, the selection's values of :func:`keep_first_units`'s scores, in hit order), ties
    to the earlier hit: ``SearchResult.info["ranking"]`` of a search with ``keep_firsts``."""
    raised = np.asarray(raised, dtype=np.float64)
    return tuple(np.lexsort((np.arange(len(raised)), -raised)).tolist())


def hit_seed(holds, rank: int, own_id, parent_id, start, end, text, text_of=None) -> Seed | None:
    """The :class:`Seed` of another retriever's hit at ``rank`` (:func:`rank_weight`), or
    ``None`` when the index holds none of its documents.

    ``holds``: ``doc_id -> bool`` (:meth:`longctx.MixPRIndex.holds`). A hit whose ``own_id``
    the index holds (the index was built over the retriever's own chunks) seeds that whole
    document; else it seeds the span ``start:end`` of its parent document (``text`` checks the
    span, and locates the hit when the offsets are missing or of another version of the text).

    ``parent_id`` is one document id, or the ids of several candidate parents in order of
    preference: the documents that share the hit's source (a LangChain loader gives one
    document per page or row, each with the same ``metadata["source"]``). Of those the index
    holds, the hit's parent is picked by :func:`pick_parent` (``text_of``: ``doc_id -> str``,
    the candidates' texts, needed when more than one is held); a hit found in none of them
    gives ``None`` (logged at INFO).
    """
    w = rank_weight(rank)
    if own_id is not None and holds(own_id):
        return Seed(own_id, None, None, w)
    if parent_id is None:
        return None
    parents = (parent_id,) if isinstance(parent_id, str) else tuple(parent_id)
    if start is None or end is None or end <= start:
        start = end = None
    if len(parents) > 1 and text_of is not None and isinstance(text, str) and text.strip():
        picked = pick_parent(parents, text_of, start, text, holds)
        if picked is None:
            return None
        doc_id, start = picked
        return Seed(doc_id, start, start + len(text), w, text)
    first = next((p for p in parents if isinstance(p, str) and holds(p)), None)
    if first is None:
        return None
    return Seed(first, start, end, w, text)  # checked and located by seed_units


def pick_parent(candidates, text_of, start, text: str, holds=None) -> tuple[str, int] | None:
    """The document a hit falls in, among several candidates, and the hit's start there.

    1. The first candidate whose text holds ``text`` at ``start`` (one comparison of at most
       ``len(text)`` characters per candidate, no copy: a source of 1,000 pages costs 1,000
       comparisons that mostly stop at the first character);
    2. else (no ``start``, or a ``start`` of another version of the texts) the first whose
       text contains ``text``, at its first occurrence, searching at most
       :data:`MAX_LOCATE_CHARS` characters of candidates in all (a candidate that would pass
       the bound is skipped, the next ones still searched);
    3. else ``None``.

    Parameters
    ----------
    candidates : sequence of str
        Document ids in order of preference (the documents of one source, in the order the
        app gave them).
    text_of : callable str -> str
        A candidate's text (called once or twice per candidate at most).
    start : int >= 0 or None
        The hit's character offset in its document (LangChain's
        ``metadata["start_index"]``), or ``None``.
    text : str
        The hit's text (non-empty).
    holds : callable str -> bool, optional
        Which candidates count (:meth:`longctx.MixPRIndex.holds`); asked of each candidate
        only when it is reached, so a first candidate that holds the hit costs one look-up.

    Returns
    -------
    (doc_id, start) or None
        The picked document and the hit's character offset in it.
    """
    held = holds if holds is not None else (lambda c: True)
    if start is not None:
        for c in candidates:
            if held(c) and text_of(c).startswith(text, start):
                return c, start
    scanned = searched = skipped = 0
    for c in candidates:
        if not held(c):
            continue
        t = text_of(c)
        if scanned + len(t) > MAX_LOCATE_CHARS:  # past the bound: the next ones may fit
            skipped += 1
            continue
        scanned += len(t)
        searched += 1
        at = t.find(text)
        if at >= 0:
            logger.debug("MixPR seeds: a hit located by its text in candidate %r", c)
            return c, at
    logger.info(
        "MixPR seeds: a hit's text is in none of its %d candidate documents (%d not searched: "
        "past MAX_LOCATE_CHARS), left out",
        len(candidates),
        skipped,
    )
    return None


def _int_or_none(v, name: str):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int or None, got {type(v).__name__}")
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v}")
    return int(v)


def check_seeds(seeds, name: str = "seeds") -> list[Seed]:
    """Validate ``seeds``: a sequence of :class:`Seed`, of tuples ``(doc_id, start, end, score
    [, text])`` or of mappings with those keys. Returns them as :class:`Seed` objects.

    Raises
    ------
    TypeError, ValueError
        Not a sequence, more than :data:`MAX_SEEDS`, a seed of the wrong shape or types, a
        negative or non-finite score, ``end <= start``, or only one of ``start`` / ``end``;
        the message names ``name[i]``.
    """
    if isinstance(seeds, (str, bytes, Mapping)) or not hasattr(seeds, "__len__"):
        raise TypeError(f"{name} must be a sequence of Seed, got {type(seeds).__name__}")
    if len(seeds) > MAX_SEEDS:
        raise ValueError(f"{name} holds {len(seeds)} seeds; at most {MAX_SEEDS}")
    out = []
    for i, s in enumerate(seeds):
        where = f"{name}[{i}]"
        try:
            if isinstance(s, Mapping):
                s = Seed(**s)
            elif not isinstance(s, Seed):
                s = Seed(*s)
        except TypeError as exc:
            raise TypeError(f"{where}: not a seed ({exc})") from None
        if not isinstance(s.doc_id, str):
            raise TypeError(f"{where}.doc_id must be a str, got {type(s.doc_id).__name__}")
        start = _int_or_none(s.start, f"{where}.start")
        end = _int_or_none(s.end, f"{where}.end")
        if (start is None) != (end is None):
            raise ValueError(f"{where}: give both start and end, or neither")
        if start is not None and end <= start:
            raise ValueError(f"{where}: end ({end}) must be greater than start ({start})")
        if isinstance(s.score, bool) or not isinstance(s.score, (int, float, np.number)):
            raise TypeError(f"{where}.score must be a number, got {type(s.score).__name__}")
        score = float(s.score)
        if not math.isfinite(score) or score < 0:
            raise ValueError(f"{where}.score must be finite and >= 0, got {s.score!r}")
        text = s.text
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{where}.text must be a str or None, got {type(text).__name__}")
        if text is not None and len(text) > MAX_SEED_TEXT:
            raise ValueError(f"{where}.text is longer than {MAX_SEED_TEXT} characters")
        out.append(Seed(s.doc_id, start, end, score, text))
    return out


def check_keep_firsts(value) -> bool:
    """``keep_firsts=`` checked: a bool (``numpy.bool_`` and ints refused too).

    Raises
    ------
    TypeError
        Naming ``keep_firsts``.
    """
    if not isinstance(value, bool):
        raise TypeError(f"keep_firsts must be a bool, got {value!r}")
    return value


def seed_source(seeds, name: str = "seeds"):
    """Check ``seeds=`` before any work: ``None``, a callable (kept as it is: asked by
    :func:`local_seeds` for a local query only) or a sequence (:func:`check_seeds`).

    A callable ``() -> seeds`` lets an app hand over its retriever without asking it: a query
    the router sends to global mode (a summary question) does not use seeds, so the app's
    retriever, and the query embedding it costs, is never called for it.

    Raises
    ------
    TypeError, ValueError
        As :func:`check_seeds` for a sequence.
    """
    if seeds is None or callable(seeds):
        return seeds
    return check_seeds(seeds, name)


def local_seeds(seeds, name: str = "seeds") -> list[Seed] | None:
    """The checked seeds of a local query: a callable ``seeds`` (:func:`seed_source`) is
    called now, once, and what it returns is checked (:func:`check_seeds`; ``None``: no
    seeds); a sequence was checked already.

    Raises
    ------
    TypeError, ValueError
        What the callable returned is not a sequence of seeds (the message names ``name``).
    """
    if not callable(seeds):
        return seeds
    got = seeds()
    logger.info("MixPR seeds: local query, the seeds' retriever asked")
    return None if got is None else check_seeds(got, f"{name}()")


def _length(texts, d: int) -> int:
    """Characters of document ``d``: ``texts.lengths[d]`` when the sequence keeps them (a
    mapped index's :class:`~longctx.mixpr.persist_mapped.MappedTexts`: nothing decoded)."""
    lengths = getattr(texts, "lengths", None)
    return int(lengths[d]) if lengths is not None else len(texts[d])


def seed_units(
    seeds: list[Seed], positions: Mapping, texts, unit_source, starts, ends
) -> tuple[np.ndarray, np.ndarray]:
    """The units the seeds overlap and their restart weights.

    Each seed's ``score`` is spread over the units its span overlaps, in proportion to the
    characters they share; a unit several seeds overlap adds their parts. The document's units
    are found by binary search in ``unit_source`` (sorted) and the span's in ``starts`` /
    ``ends`` (ascending within a document), so the cost grows with the seeds and the units
    they reach, not with the index.

    Parameters
    ----------
    seeds : list of Seed
        Validated (:func:`check_seeds`).
    positions : mapping str -> int
        Document id -> position.
    texts : sequence of str
        The documents (to locate a seed by its ``text``); a whole-document seed reads only
        its length (``texts.lengths`` when the sequence has it: no decoding).
    unit_source, starts, ends : (n_units,) int32 or int64
        Each unit's document position (ascending) and character span (int32 where the values
        fit, as an index holds them).

    Returns
    -------
    (units (m,) int64 ascending, weights (m,) float64 > 0)
        Seeds of unknown documents, of score 0 or whose text is not found are left out
        (counted in one INFO log line).
    """
    acc: dict[int, float] = {}
    unknown = missing = located = 0
    for s in seeds:
        d = positions.get(s.doc_id)
        if d is None:
            unknown += 1
            continue
        if s.score <= 0:
            continue
        a, b = s.start, s.end
        if a is not None and s.text is not None and texts[d][a:b] != s.text:
            a = b = None  # offsets of another version of the text: locate it
        if a is None:
            if s.text is not None and s.text.strip():
                at = texts[d].find(s.text)
                if at < 0:
                    missing += 1
                    continue
                a, b = at, at + len(s.text)
                located += 1
            else:  # the whole document: its stored length, no text decoded
                a, b = 0, _length(texts, d)
        key = unit_source.dtype.type(d)  # an int against int32 would copy the whole array
        lo = int(np.searchsorted(unit_source, key, side="left"))
        hi = int(np.searchsorted(unit_source, key, side="right"))
        j0 = lo + int(np.searchsorted(ends[lo:hi], a, side="right"))
        j1 = lo + int(np.searchsorted(starts[lo:hi], b, side="left"))
        if j1 <= j0:
            missing += 1
            continue
        us = starts[j0:j1].astype(np.int64)  # held as int32 where they fit: a seed's offsets
        ue = ends[j0:j1].astype(np.int64)  # may lie past 2**31 (clipped to the units here)
        overlap = (np.minimum(ue, b) - np.maximum(us, a)).astype(np.float64)
        overlap = np.maximum(overlap, 0.0)
        if overlap.sum() <= 0:
            missing += 1
            continue
        for j, w in zip(range(j0, j1), (s.score * overlap / overlap.sum()).tolist()):
            if w > 0:
                acc[j] = acc.get(j, 0.0) + w
    if unknown or missing or located:
        logger.info(
            "MixPR seeds: %d given, %d of documents the index does not hold, %d not found in "
            "their document, %d located by their text (no offsets)",
            len(seeds),
            unknown,
            missing,
            located,
        )
    units = np.fromiter(sorted(acc), dtype=np.int64, count=len(acc))
    weights = np.array([acc[j] for j in units.tolist()], dtype=np.float64)
    return units, weights


def warn_if_none_found(seeds: list[Seed], n_units: int) -> None:
    """A ``logging`` WARNING when seeds of positive score were given and none reached a unit.

    The search is then MixPR's own (``keep_firsts`` included): the usual cause is an app whose
    index holds another version of the corpus's text (``\\r\\n`` line endings, a byte-order
    mark), so that no seed's text is found in its document. Some seeds not found stay an INFO
    line (:func:`seed_units`).
    """
    if n_units or not any(s.score > 0 for s in seeds):
        return
    logger.warning(
        "MixPR seeds: none of the %d seeds was found in the index (their documents are not "
        "held, or their text is not in their document): the result is MixPR's own. The app's "
        "index must hold the corpus's text exactly (CorpusIndex.text(doc_id), or files read "
        "with newline='': line endings and a byte-order mark count) and name its documents "
        "by the corpus's ids",
        len(seeds),
    )


def seeds_on(st, seeds: list[Seed]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`seed_units` over an index's state ``st`` (a :class:`longctx.MixPRIndex`'s:
    ``positions``, ``texts``, ``unit_source``, ``starts``, ``ends``); a WARNING when none
    of the seeds was found (:func:`warn_if_none_found`)."""
    units, w = seed_units(seeds, st.positions, st.texts, st.unit_source, st.starts, st.ends)
    warn_if_none_found(seeds, len(units))
    return units, w
