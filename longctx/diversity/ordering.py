"""Ordering of the selected items for the prompt (paper sec. 3.1: "index sort", "sort", "m:n").

Source: Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an LLM's Performance in RAG and
Long-context Task", 2025, arXiv:2502.09017 (https://arxiv.org/abs/2502.09017), sec. 3.1 and
Tables 2, 4-8.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

__all__ = ["order_selection", "parse_order", "check_order", "ORDERS"]

#: the named strategies; ``"m:n"`` (two integers) is accepted too
ORDERS = ("document", "score")
_ORDER_RE = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")


def parse_order(strategy) -> tuple[int, int] | None:
    """``None`` for ``"document"``, else ``(m, n)`` (``"score"`` is ``(1, 0)``); raises on others."""
    if not isinstance(strategy, str):
        raise TypeError(f"strategy must be a str, got {type(strategy).__name__}")
    if strategy == "document":
        return None
    if strategy == "score":
        return (1, 0)
    m = _ORDER_RE.match(strategy)
    if m is None or int(m.group(1)) < 1:
        raise ValueError(
            f"strategy must be 'document', 'score' or 'm:n' with m >= 1, n >= 0, got {strategy!r}"
        )
    return int(m.group(1)), int(m.group(2))


def order_selection(indices: Sequence[int], scores=None, strategy: str = "document") -> list[int]:
    """Order selected items for the prompt (paper sec. 3.1, Tables 2 and 4-8).

    Parameters
    ----------
    indices : sequence of int
        Selected item indices. When ``scores`` is ``None`` their order is taken as the rank
        (best first), e.g. the selection order that :func:`mmr_select` returns.
    scores : array of float, optional
        Indexed by item (``scores[i]`` for ``i`` in ``indices``; length > ``max(indices)``). When
        given, the rank is by descending score, ties kept in the order of ``indices``.
    strategy : str
        ``"document"``: ascending index, the original order (the paper's "index sort").
        ``"score"``: by rank, best first (the paper's "sort", i.e. ``"1:0"``).
        ``"m:n"``: the best ``m`` go to the front, the next ``n`` to the back, the next ``m`` to the
        front after the first ones, the next ``n`` to the back before the earlier back ones, and so
        on, so the best items sit at both ends and the weakest in the middle ("lost in the
        middle"); on each side rank decreases towards the middle (the best back item is last).

    Returns
    -------
    list of int
        The same indices, reordered.

    Raises
    ------
    TypeError, ValueError
        On an unknown ``strategy``, ``indices`` with duplicates, or ``scores`` too short.
    """
    mn = parse_order(strategy)
    idx = [int(i) for i in indices]
    if len(set(idx)) != len(idx):
        raise ValueError("indices must not contain duplicates")
    if mn is None:
        return sorted(idx)
    if scores is not None and idx:
        s = np.asarray(scores, dtype=np.float64)
        if s.ndim != 1 or s.shape[0] <= max(idx) or min(idx) < 0:
            raise ValueError(
                f"scores must be a 1-D array indexed by item (length > {max(idx)}), "
                f"got shape {s.shape}"
            )
        order = np.argsort(-s[idx], kind="stable")
        idx = [idx[j] for j in order]
    m, n = mn
    front: list[int] = []
    back: list[int] = []
    pos = 0
    while pos < len(idx):
        front.extend(idx[pos : pos + m])
        pos += m
        if n:
            back.extend(idx[pos : pos + n])
            pos += n
    return front + back[::-1]


def check_order(strategy, name: str = "order") -> str:
    """Return ``strategy`` if :func:`order_selection` accepts it.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` when it is not a str, or not ``"document"``, ``"score"`` or ``"m:n"``.
    """
    try:
        parse_order(strategy)
    except TypeError:
        raise TypeError(f"{name} must be a str, got {type(strategy).__name__}") from None
    except ValueError:
        raise ValueError(
            f"{name} must be 'document', 'score' or 'm:n' with m >= 1, n >= 0, got {strategy!r}"
        ) from None
    return strategy
