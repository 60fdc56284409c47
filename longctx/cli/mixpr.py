"""``longctx retrieve --method mixpr``: MixPR (003_66700b152cf6a0ed.txt) from the command line."""

from __future__ import annotations

import argparse

import numpy as np

from longctx.mixpr import MixPR
from longctx.selection import select_top
from longctx.tokens import count_many
from longctx.types import Passage


def _mixpr(args: argparse.Namespace) -> MixPR:
    return MixPR(max_words=args.max_words, progress=bool(getattr(args, "progress", False)))


def score_units(
    text: str, query: str, args: argparse.Namespace
) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Every MixPR chunk of ``text`` (character spans), its PageRank score ``(n,) float64`` and
    its token count ``(n,) int64`` (``longctx.tokens.count_tokens``)."""
    spans, scores = _mixpr(args).score_text(text, query, args.mode)
    counts = count_many([text[a:b] for a, b in spans])
    return spans, scores, counts


def run(text: str, query: str, args: argparse.Namespace) -> list[Passage]:
    """MixPR's own selection: top ``args.k`` chunks or ``args.budget`` tokens, document order."""
    spans, scores, counts = score_units(text, query, args)
    if not spans:
        raise ValueError("the text holds no words to retrieve from")
    if args.budget is not None:
        idx = select_top(scores, token_budget=args.budget, token_counts=counts)
    else:
        idx = select_top(scores, k=args.k if args.k is not None else 100)
    return [
        Passage(spans[i][0], spans[i][1], text[spans[i][0] : spans[i][1]], float(scores[i]), i)
        for i in idx.tolist()
    ]
