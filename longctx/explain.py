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
    "SHOWN_SHARE",
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


#: The smallest share :func:`explanation_text` names (0.1%): a part or an evidence item under
#: it would read "0.0%", which tells a reader nothing; an evidence list says how many it left.
SHOWN_SHARE = 0.001


def _fmt(x: float) -> str:
    """A share as a percentage: whole percents from 1% (``37%``), else one decimal (``0.4%``);
    never ``0%`` or ``0.0%`` for a share of at least :data:`SHOWN_SHARE`."""
    return f"{x:.0%}" if abs(x) >= 0.0095 else f"{x:.1%}"


def _items(items: Sequence, limit: int, name, sep: str = ", ") -> str:
    """The first ``limit`` evidence ``items`` whose share is at least :data:`SHOWN_SHARE`, each
    as ``name(item)`` and its share, joined by ``sep``; those under it among the first
    ``limit`` are counted as ``"and N more under 0.1%"`` (``"N under 0.1%"`` when none is
    named)."""
    first = list(items[:limit])
    shown = [f"{name(e)} {_fmt(e['share'])}" for e in first if abs(e["share"]) >= SHOWN_SHARE]
    under = len(first) - len(shown)
    if under:
        count = f"and {under} more" if shown else str(under)
        shown.append(f"{count} under {SHOWN_SHARE:.1%}")
    return sep.join(shown)


def explanation_text(explanation: Mapping[str, Any], *, limit: int = 3) -> str:
    """One line saying why a hit was retrieved, for a terminal or an LLM prompt::

        restart_lexical 37%, walk 62%, lexical 1%; terms 'morayta' 21%, 'spain' 0.4%;
        from d3#2 18%, and 1 more under 0.1%

    Each share is a percentage of the hit's score, named only from 0.1%
    (:data:`SHOWN_SHARE`): the parts under it are left out, and each evidence list (``terms``,
    ``seeds``, ``units``, ``paths``) ends with "and N more under 0.1%" when some of its first
    ``limit`` items are under it. The explanation itself keeps every number.

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
    bits = [f"{k} {_fmt(v)}" for k, v in shares.items() if abs(v) >= SHOWN_SHARE]
    out = ", ".join(bits) if bits else "no part"
    lists = (
        ("terms", "; terms ", lambda t: repr(t["term"]), ", "),
        ("seeds", "; from ", lambda s: f"{s.get('doc_id', s.get('unit'))}#{s.get('index')}", ", "),
        ("units", "; units ", lambda u: f"#{u.get('index')}", ", "),  # a document hit's units
        ("paths", "; paths ", lambda p: " -> ".join(_node(n) for n in p["path"]), "; "),
    )
    for key, head, name, sep in lists:
        items = explanation.get(key) or []
        if items:
            out += head + _items(items, limit, name, sep)
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
