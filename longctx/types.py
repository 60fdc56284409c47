"""Value types shared by every method and adapter: one hit type, one result type, one set of
metadata keys.

Every method's ``search`` returns a :class:`SearchResult`; adapters map its ``hits`` to framework
objects (LlamaIndex ``NodeWithScore``, LangChain ``Document``) with :func:`hit_metadata` and
:func:`hit_id`, so the keys and ids are the same for every method and both frameworks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from longctx.checks import check_int

#: Metadata keys added to every returned node / document, beside the user's own keys (never
#: replacing them). Offsets are characters of the source text as given (Python ``str`` indices).
META_START = "longctx_start_char_idx"
META_END = "longctx_end_char_idx"
META_UNIT_INDEX = "longctx_unit_index"
META_SCORE = "longctx_score"
META_METHOD = "longctx_method"
#: Id of the source node / document a hit was cut from (also the LlamaIndex SOURCE relationship).
META_SOURCE_ID = "longctx_source_id"
#: Why the hit was retrieved (``search(..., explain=True)``): a JSON-ready dict
#: (:mod:`longctx.explain`); present only on hits that carry an explanation.
META_EXPLANATION = "longctx_explanation"

METADATA_KEYS = (META_START, META_END, META_UNIT_INDEX, META_SCORE, META_METHOD, META_SOURCE_ID)


@dataclass(frozen=True)
class Passage:
    """One selected piece of the user's text (a *hit*).

    Attributes
    ----------
    start, end : int
        Character offsets into the source text (``texts[source][start:end] == passage.text``),
        end exclusive. Units are characters (Python ``str`` indices), never tokens or bytes.
    text : str
        The passage, exactly as it appears in the source text.
    score : float
        The method's score for this passage (PageRank probability, reaction score, MMR reward...).
        Higher is more relevant.
    index : int
        Position of the unit (chunk or sentence) among all units of its source text, 0-based.
    source : int, default 0
        Position of the source text among the texts the index was built from, 0-based.
    explanation : mapping or None, default None
        Why this hit was retrieved, when the search was asked for it (``explain=True``): a
        JSON-ready dict whose ``"parts"`` add up to ``score`` (:mod:`longctx.explain`). Not
        compared by ``==``.
    """

    start: int
    end: int
    text: str
    score: float
    index: int
    source: int = 0
    explanation: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict:
        out = {
            "source": self.source,
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "score": self.score,
            "text": self.text,
        }
        if self.explanation is not None:
            out["explanation"] = self.explanation
        return out


@dataclass(frozen=True)
class SearchResult:
    """What one query returns, for every method: the hits plus what the caller needs to know.

    Nothing about a query is kept on the index object that answered it: the mode the router chose,
    the timings and the search trace travel here, so one index can serve many threads or asyncio
    tasks at once.

    Attributes
    ----------
    hits : tuple of Passage
        In document order: by ``source``, then ``start`` (the order to put them in a prompt);
        :meth:`by_score` and :meth:`top` give them best first.
    method : str
        ``"mixpr"``, ``"youra"``, ``"mmr"``, ``"fps"``, ``"garlic"``...
    mode : str or None
        The variant actually used (MixPR: ``"local"``, ``"global"`` or ``"global-fallback"`` when
        the query reaches no chunk; diversity: ``"query"`` or ``"summary"``).
    timings : mapping str -> float
        Seconds per stage of this query (``{"embed_query": ..., "rank": ..., "select": ...}``);
        a stage that did not run is absent (MixPR without an encoder: no ``"embed_query"``).
    budget : mapping
        The size asked for: ``{"k": int}`` or ``{"token_budget": int, "unit": "<counter>"}``.
    trace : tuple of mappings
        Per-step record for methods that search step by step (GARLIC); MixPR: the walk chosen,
        ``{"stage": "route", "walk": "pagerank" | "multihop", "reason", ...}``
        (:func:`longctx.mixpr.router.choose_walk`), then a record of the PageRank walk when one
        ran, ``{"stage": "walk", "solver": "push" | "power", "steps", "residual"}``
        (the walk's steps and the L1 mass it left unsettled when it stopped; push also
        ``"parked"`` and ``"read"``; the multi-hop walk's is the same with ``"stage":
        "multihop"``; both built by :func:`walk_record`); empty otherwise.
    info : mapping
        Method-specific extras (GARLIC: ``answer``, ``stop_reason``, ``tokens_run``...).
        ``info["ranking"]``, when present: the positions in :attr:`hits`, best first, of a
        method whose hits rank by more than their scores (MixPR's ``keep_firsts=True``: each
        retriever's first hit first, each hit keeping its own score); :meth:`positions`,
        :meth:`by_score` and :meth:`top` follow it.
    """

    hits: tuple[Passage, ...]
    method: str
    mode: str | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    budget: Mapping[str, Any] = field(default_factory=dict)
    trace: tuple[Mapping[str, Any], ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self):
        return iter(self.hits)

    def by_score(self) -> tuple[Passage, ...]:
        """The hits, highest score first.

        ``hits`` are in document order (the order to put them in a prompt); this is the order to
        show them in or to cut a ranking from. Equal scores keep document order; a NaN score
        goes last. A result whose ``info["ranking"]`` is set comes in that order instead.

        Returns
        -------
        tuple of Passage
            The same ``len(self)`` passages, sorted by ``score`` descending.
        """
        return tuple(self.hits[j] for j in self.positions("score"))

    def positions(self, order: str = "score") -> tuple[int, ...]:
        """Positions in :attr:`hits` in the order a retriever returns them.

        Parameters
        ----------
        order : {"score", "document"}, default "score"
            ``"score"``: best first (:meth:`by_score`'s order: equal scores keep document order,
            NaN last), as the frameworks' retrievers (BM25, vector stores) return their results;
            ``"document"``: :attr:`hits` as they are (document order, the order to put them in a
            prompt, as the papers do).

        Returns
        -------
        tuple of int
            A permutation of ``range(len(self))``; index :attr:`hits` (and per-hit lists of
            :attr:`info`, such as ``info["doc_ids"]``) with it.

        Raises
        ------
        ValueError
            ``order`` is not one of :data:`ORDERS`.
        """
        check_order(order)
        if order == "document":
            return tuple(range(len(self.hits)))
        ranking = self.info.get("ranking") if isinstance(self.info, Mapping) else None
        if ranking is not None:
            ranking = tuple(int(j) for j in ranking)
            if sorted(ranking) != list(range(len(self.hits))):
                raise ValueError(f"info['ranking'] is not a permutation of {len(self.hits)} hits")
            return ranking
        return tuple(sorted(range(len(self.hits)), key=lambda j: _score_key(self.hits[j])))

    def top(self, n: int) -> tuple[Passage, ...]:
        """The ``n`` highest-scoring hits, highest first (:meth:`by_score` cut at ``n``).

        Parameters
        ----------
        n : int
            How many hits, ``>= 1``; fewer come back when the result holds fewer.

        Raises
        ------
        TypeError, ValueError
            If ``n`` is not an int or is below 1.
        """
        n = check_int(n, "n", minimum=1)
        return self.by_score()[:n]

    def to_dict(self) -> dict:
        """JSON-ready dict (hits as dicts)."""
        return {
            "method": self.method,
            "mode": self.mode,
            "budget": dict(self.budget),
            "timings": dict(self.timings),
            "hits": [h.to_dict() for h in self.hits],
            "trace": [dict(t) for t in self.trace],
            "info": dict(self.info),
        }


#: The orders a retriever returns hits in (:meth:`SearchResult.positions`): best first, or the
#: documents' own order.
ORDERS = ("score", "document")


def check_order(order) -> str:
    """``order`` when it is one of :data:`ORDERS`, else ``ValueError`` naming the argument."""
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(map(repr, ORDERS))}, got {order!r}")
    return order


def _score_key(hit: Passage) -> tuple[bool, float]:
    """Sort key: higher score first, NaN last (``sorted`` is stable: ties keep their order)."""
    score = float(hit.score)
    return (math.isnan(score), 0.0 if math.isnan(score) else -score)


def hit_metadata(hit: Passage, method: str, source_id: str | None = None) -> dict:
    """The longctx metadata of one hit, under :data:`METADATA_KEYS` (to add beside the user's)."""
    meta = {
        META_START: int(hit.start),
        META_END: int(hit.end),
        META_UNIT_INDEX: int(hit.index),
        META_SCORE: float(hit.score),
        META_METHOD: method,
    }
    if source_id is not None:
        meta[META_SOURCE_ID] = source_id
    if hit.explanation is not None:
        meta[META_EXPLANATION] = hit.explanation
    return meta


def resolve_hit(
    hit: Passage, source_id: str | None, source_metadata=None
) -> tuple[Passage, str | None, bool]:
    """Offsets into the user's original text when the source is itself a longctx hit.

    A retriever's chunk handed to a postprocessor or compressor carries ``longctx_start_char_idx``
    and ``longctx_source_id``; a hit inside it is then shifted by the chunk's start and attributed
    to the original source, so chained components report offsets into the user's document and
    ids that stay unique across chunks. Otherwise the hit and ``source_id`` come back unchanged.

    Returns
    -------
    (hit, source id, chained) : the hit with (possibly shifted) offsets, the id to attribute it
    to, and whether the source was a longctx hit.
    """
    meta = source_metadata or {}
    if META_START in meta and META_SOURCE_ID in meta:
        try:
            off = int(meta[META_START])
        except (TypeError, ValueError):
            return hit, source_id, False
        shifted = Passage(
            hit.start + off, hit.end + off, hit.text, hit.score, hit.index, hit.source,
            hit.explanation,
        )  # fmt: skip
        return shifted, str(meta[META_SOURCE_ID]), True
    return hit, source_id, False


def hit_id(source_id: str | None, hit: Passage) -> str:
    """Deterministic id of a hit: the source id and the character span, ``"{source}#{start}-{end}"``.

    Two hits of one source never share an id (their spans differ); the same chunk of the same
    source always gets the same id, so results of different queries can be merged by id. A source
    without id is named by its position, ``"source{n}"``.
    """
    src = source_id if source_id is not None else f"source{hit.source}"
    return f"{src}#{hit.start}-{hit.end}"


#: The stages and solvers of a walk's trace record (:func:`walk_record`).
WALK_STAGES = ("walk", "multihop")
WALK_SOLVERS = ("push", "power")


def walk_record(
    stage: str, solver: str, steps: int, residual: float, *, parked=None, read=None
) -> dict[str, Any]:
    """The trace record of a walk, as it reaches :attr:`SearchResult.trace`: ``{"stage",
    "solver", "steps", "residual"}``, then ``"parked"`` and ``"read"`` (as ``int``) when given
    (the push solvers give both). The one constructor of the record for MixPR's PageRank walk
    (:func:`longctx.mixpr.push.push_walk`, :func:`longctx.mixpr.push_graph.graph_push_walk`,
    :meth:`longctx.mixpr.scoring.Scorer.walk`) and the multi-hop walk
    (:func:`longctx.mixpr.multihop_push.push_multihop`,
    :class:`longctx.mixpr.multihop.MultiHopRanker`).

    Parameters
    ----------
    stage : {"walk", "multihop"}
        The PageRank walk over the unit graph, or the multi-hop walk over units and phrases.
    solver : {"push", "power"}
        Forward push or the power iteration.
    steps : int
        Levels pushed (push) or iterations run (power).
    residual : float
        Push: the probability mass not settled when the walk stopped (an L1 bound); power: the
        L1 change of the last step. Kept as given (not converted).
    parked : float, optional
        Push: the part of ``residual`` parked on nodes below the push rule.
    read : int, optional
        Push: the matrix entries read.

    Raises
    ------
    ValueError
        ``stage`` or ``solver`` not one of the above.
    """
    if stage not in WALK_STAGES:
        raise ValueError(f"stage must be one of {WALK_STAGES}, got {stage!r}")
    if solver not in WALK_SOLVERS:
        raise ValueError(f"solver must be one of {WALK_SOLVERS}, got {solver!r}")
    record: dict[str, Any] = {
        "stage": stage,
        "solver": solver,
        "steps": steps,
        "residual": residual,
    }
    if parked is not None:
        record["parked"] = parked
    if read is not None:
        record["read"] = int(read)
    return record


__all__ = [
    "Passage",
    "SearchResult",
    "walk_record",
    "ORDERS",
    "check_order",
    "hit_metadata",
    "hit_id",
    "resolve_hit",
    "METADATA_KEYS",
    "META_START",
    "META_END",
    "META_UNIT_INDEX",
    "META_SCORE",
    "META_METHOD",
    "META_SOURCE_ID",
    "META_EXPLANATION",
]
