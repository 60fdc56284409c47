"""Reciprocal-rank fusion: one ranking from several retrievers' rankings of the same items.

An app that adds MixPR to its own vector retriever has two ranked lists. Their scores are on
scales of their own (a cosine, a walk's probability), so they are fused by rank: an item at
1-based rank ``r`` of a list scores ``weight / (c + r)`` there, and its fused score is the sum
over the lists that hold it. An item both retrievers return rises above every item only one
returns (at equal weights and lists of at most ``c`` items), and the items only one returns
alternate between the lists, best first.

The two lists must rank the *same items* (the same chunks, keyed by the same ids), or no item
is shared and the fusion only interleaves: MixPR is then built over the app's own chunks, one
unit each (``MixPRRetriever.from_defaults(index=..., chunk_nodes=False)`` in LlamaIndex,
``MixPRRetriever(documents=splits, chunk_documents=False)`` in LangChain), so its top ``k``
and the app's top ``k`` are the same amount of text and a chunk found by both counts twice.

This is not the guides' recipe ("Fusing with the app's retriever"): rank fusion gives each list
half of the slots whatever it holds, and on a multi-hop passage pool, where the app's dense
retriever is far weaker than MixPR, the fused top 5 held both gold passages for fewer questions
than MixPR alone (0.77 against 0.87, ``benchmarks/studies/fusion_study.py``). The recipe fuses
inside the walk instead: the app's top ``k`` seed MixPR over the same chunks, and a chunk's score
is MixPR's own plus the seeds' walk's, each divided by its maximum
(:mod:`longctx.mixpr.seeds`, ``vector_retriever=`` in the adapters).

Source: Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
Individual Rank Learning Methods", SIGIR 2009 (``1 / (k + r)``, ``k = 60``, ranks from 1); the
weights are LangChain's ``EnsembleRetriever``'s (``weight / (c + rank)``).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence

from longctx.checks import check_float, check_int, check_weight

__all__ = ["DEFAULT_C", "MAX_RANKINGS", "reciprocal_rank_fusion"]

logger = logging.getLogger(__name__)

#: The constant of the paper (``k = 60``): a list's first item scores ``1 / 61``, its 60th half
#: as much; a larger ``c`` flattens the ranks, a smaller one favours each list's head.
DEFAULT_C = 60.0
#: Most ranked lists one fusion takes.
MAX_RANKINGS = 1_000


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hashable]],
    *,
    weights: Sequence[float] | None = None,
    c: float = DEFAULT_C,
    k: int | None = None,
) -> list[tuple[Hashable, float]]:
    """Fuse ranked lists of item keys into one ranking, by weighted reciprocal rank.

    Parameters
    ----------
    rankings : sequence of sequences of hashable keys
        One list per retriever, each best first (its first item has rank 1). A key repeated in
        one list counts at its first (best) rank only. Keys name items across lists: the same
        chunk must have the same key in every list (a node id, a ``(doc id, start, end)``
        span).
    weights : sequence of float >= 0, optional
        One per list (default: 1.0 each); not all 0.
    c : float >= 0, default :data:`DEFAULT_C` (60)
        The rank constant: rank ``r`` (from 1) of a list of weight ``w`` scores ``w / (c + r)``.
    k : int >= 1, optional
        Keep the ``k`` best fused items (default: every item of any list).

    Returns
    -------
    list of (key, float)
        The fused items, best first, with their fused scores (> 0 unless the list's weight is
        0). Ties go to the key seen first, reading the lists in order, each best first: with
        equal weights, the first list's rank-1 item comes before the second's.

    Raises
    ------
    TypeError
        ``rankings`` not a sequence of sequences, an unhashable key, a non-numeric weight.
    ValueError
        More than :data:`MAX_RANKINGS` lists, ``weights`` of another length, a negative or
        non-finite weight, all weights 0, a negative ``c``, ``k < 1``.

    Examples
    --------
    >>> reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]], k=3)  # doctest: +ELLIPSIS
    [('b', 0.0325...), ('a', 0.0163...), ('d', 0.0161...)]
    """
    if isinstance(rankings, (str, bytes)) or not isinstance(rankings, Sequence):
        raise TypeError(
            f"rankings must be a sequence of ranked lists, got {type(rankings).__name__}"
        )
    if len(rankings) > MAX_RANKINGS:
        raise ValueError(f"rankings holds {len(rankings):,} lists, more than {MAX_RANKINGS:,}")
    for i, ranking in enumerate(rankings):
        if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
            raise TypeError(
                f"rankings[{i}] must be a sequence of keys, best first, got {type(ranking).__name__}"
            )
    if weights is None:
        w = [1.0] * len(rankings)
    else:
        if isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence):
            raise TypeError(f"weights must be a sequence of numbers, got {type(weights).__name__}")
        if len(weights) != len(rankings):
            raise ValueError(f"weights has {len(weights)} values for {len(rankings)} rankings")
        w = [check_weight(x, f"weights[{i}]") for i, x in enumerate(weights)]
        if rankings and not any(w):
            raise ValueError("weights must not all be 0")
    c = check_float(c, "c", low=0.0)
    k = check_int(k, "k", minimum=1, allow_none=True)
    fused: dict[Hashable, float] = {}  # insertion order: the order keys are first seen
    lists_holding: dict[Hashable, int] = {}
    for i, (ranking, weight) in enumerate(zip(rankings, w)):
        seen: set = set()
        for r, key in enumerate(ranking, start=1):
            try:
                if key in seen:
                    continue
            except TypeError:
                raise TypeError(
                    f"rankings[{i}][{r - 1}] must be hashable, got {type(key).__name__}"
                ) from None
            seen.add(key)
            fused[key] = fused.get(key, 0.0) + weight / (c + r)
            lists_holding[key] = lists_holding.get(key, 0) + 1
    order = sorted(fused.items(), key=lambda kv: -kv[1])  # stable: ties keep first-seen order
    shared = sum(1 for n in lists_holding.values() if n > 1)
    logger.debug(
        "reciprocal rank fusion: %d lists, %d items (%d in more than one list), c=%g",
        len(rankings), len(fused), shared, c,
    )  # fmt: skip
    return order if k is None else order[:k]
