"""Why a hit was retrieved: the one shape of a per-hit explanation, shared by every method.

A search asked with ``explain=True`` gives each returned :class:`~longctx.types.Passage` an
``explanation``: a JSON-ready dict (it travels as is into LlamaIndex node metadata and LangChain
document metadata under ``longctx_explanation``, and into ``longctx search --explain --json``)::

    {
      "method": "mixpr",            # the method that scored the hit
      "walk": "pagerank",           # the variant that scored it (method-specific)
      "score": 0.83,                # the hit's score, as in Passage.score
      "parts": {"restart": 0.31, "walk": 0.40, "lexical": 0.12, ...},   # add up to score
      "shares": {"restart": 0.37, "walk": 0.48, "lexical": 0.15, ...},  # parts / score
      ... method-specific evidence: "terms", "seeds", "paths", "against", ...
    }

``parts`` split the score into the quantities the method adds up (their sum equals ``score``
within 1e-9: :func:`make_explanation` checks it); an iterative walk stopped at its tolerance
names what it left unsettled as the part ``"unsettled"`` (bounded by the walk's residual,
:attr:`longctx.types.SearchResult.trace`). The evidence lists are short (the few terms, phrases,
passages or units that carried most of the score), each item with its own ``score`` (in score
units) and ``share`` (of the hit's score).

:func:`explanation_text` renders one explanation as a line for a terminal or an LLM prompt.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

__all__ = [
    "SUM_TOLERANCE",
    "make_explanation",
    "evidence",
    "with_explanations",
    "name_pick_sources",
    "explanation_text",
    "check_explain",
]

#: How far the parts of an explanation may sum from the score (relative to ``max(1, |score|)``).
SUM_TOLERANCE = 1e-9


def check_explain(explain) -> bool:
    """``explain`` when it is a bool, else ``TypeError`` naming the argument."""
    if not isinstance(explain, bool):
        raise TypeError(f"explain must be a bool, got {explain!r}")
    return explain


def _share(value: float, score: float) -> float:
    return float(value) / score if score else 0.0


def evidence(score: float, value: float, **fields) -> dict[str, Any]:
    """One evidence item: ``fields`` plus ``"score"`` (``value``, in score units) and
    ``"share"`` (``value / score``; 0 for a zero score)."""
    return {**fields, "score": float(value), "share": _share(value, score)}


def make_explanation(
    method: str, walk: str | None, score: float, parts: Mapping[str, float], **details
) -> dict[str, Any]:
    """An explanation dict (see the module doc): ``parts`` with their ``shares`` of ``score``.

    Parameters
    ----------
    method, walk : str
        The method and the variant that scored the hit.
    score : float
        The hit's score.
    parts : mapping str -> float
        The additive parts of ``score`` (score units).
    **details
        Method-specific evidence (JSON-ready values).

    Raises
    ------
    ValueError
        The parts do not add up to ``score`` within :data:`SUM_TOLERANCE` (a bug of the caller:
        an explanation never states what the score is not).
    """
    score = float(score)
    parts = {k: float(v) for k, v in parts.items()}
    total = math.fsum(parts.values())
    if not abs(total - score) <= SUM_TOLERANCE * max(1.0, abs(score)):
        raise ValueError(f"explanation parts sum to {total!r}, the score is {score!r}")
    return {
        "method": method,
        "walk": walk,
        "score": score,
        "parts": parts,
        "shares": {k: _share(v, score) for k, v in parts.items()},
        **details,
    }


def with_explanations(hits: Sequence, explanations: Sequence) -> tuple:
    """``hits`` (Passages) with their ``explanation`` set, one per hit, in order."""
    if len(hits) != len(explanations):
        raise ValueError(f"{len(explanations)} explanations for {len(hits)} hits")
    return tuple(replace(h, explanation=e) for h, e in zip(hits, explanations))


def name_pick_sources(hits: Sequence, ids: Sequence) -> None:
    """Give the unit an explanation was measured against (``"against"``, MMR / FPS) the id of
    its source, ``ids[against["source"]]``, as ``"doc_id"`` (in place; for adapters whose
    sources are the framework's nodes or documents)."""
    for h in hits:
        against = (h.explanation or {}).get("against")
        if against and 0 <= against.get("source", -1) < len(ids):
            against["doc_id"] = ids[against["source"]]


def _fmt(x: float) -> str:
    return f"{x:.0%}" if abs(x) >= 0.005 else f"{x:.1%}"


def explanation_text(explanation: Mapping[str, Any], *, limit: int = 3) -> str:
    """One line saying why a hit was retrieved, for a terminal or an LLM prompt::

        restart 37% (question's words 30%, dense 7%), walk 48% via "morayta" 21%, ...;
        path: question -> "Miguel Morayta" -> hit 40%

    Parameters
    ----------
    explanation : mapping
        A hit's ``explanation`` (:func:`make_explanation`).
    limit : int, default 3
        Most evidence items named per list.

    Returns
    -------
    str
    """
    shares = explanation.get("shares", {})
    bits = [f"{k} {_fmt(v)}" for k, v in shares.items() if abs(v) >= 0.005]
    out = ", ".join(bits) if bits else "no part"
    terms = explanation.get("terms") or []
    if terms:
        out += "; terms " + ", ".join(f"{t['term']!r} {_fmt(t['share'])}" for t in terms[:limit])
    seeds = explanation.get("seeds") or []
    if seeds:
        out += "; from " + ", ".join(
            f"{s.get('doc_id', s.get('unit'))}#{s.get('index')} {_fmt(s['share'])}"
            for s in seeds[:limit]
        )
    units = explanation.get("units") or []
    if units:  # a document hit (whole_documents): the units that carried it
        out += "; units " + ", ".join(
            f"#{u.get('index')} {_fmt(u['share'])}" for u in units[:limit]
        )
    paths = explanation.get("paths") or []
    if paths:
        out += "; paths " + "; ".join(
            " -> ".join(_node(n) for n in p["path"]) + f" {_fmt(p['share'])}" for p in paths[:limit]
        )
    if "attention_before" in explanation:  # YOURA
        w = explanation.get("window") or {}
        out += (
            f"; window {w.get('index')}, attention {explanation['attention_before']:.3g} -> "
            f"{explanation['attention_after']:.3g} with the question"
        )
    path = explanation.get("path")
    if path:  # GARLIC
        out += "; path " + " -> ".join(str(n.get("node")) for n in path)
        out += f" (stopped: {explanation.get('stop_reason')})"
    against = explanation.get("against")
    if against:
        out += f"; redundant with {against.get('doc_id', against.get('unit'))}"
        out += f"#{against.get('index')}"
    return out


def _node(n) -> str:
    if isinstance(n, str):
        return n
    if "phrase" in n:
        return repr(n["phrase"])
    return f"{n.get('doc_id', n.get('unit'))}#{n.get('index')}"
