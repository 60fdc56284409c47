"""``longctx retrieve --method mixpr``: MixPR (Alonso and Millidge, 2024, arXiv:2412.06078) from the
command line, through the same :class:`longctx.MixPRIndex` as the Python API and the adapters."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from longctx.mixpr import MixPRIndex
from longctx.types import SearchResult


def _source_name(args: argparse.Namespace) -> str:
    """The document's id: the file's name (as ``longctx index`` names a file), or
    ``sample:NAME``; ``--explain`` names the units it came from by it."""
    path = getattr(args, "path", None)
    return Path(path).name if path else f"sample:{getattr(args, 'sample', None) or 'text'}"


def _index(text: str, args: argparse.Namespace) -> MixPRIndex:
    kw = {} if args.max_words is None else {"max_words": args.max_words}
    if getattr(args, "walk", None) is not None:
        kw["walk"] = args.walk
    return MixPRIndex.from_texts(
        [text], ids=[_source_name(args)], progress=bool(getattr(args, "progress", False)), **kw
    )


def score_units(
    text: str, query: str, args: argparse.Namespace
) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Every MixPR chunk of ``text`` (character spans), its PageRank score ``(n,) float64`` and
    its token count ``(n,) int64`` (``longctx.tokens.count_tokens``)."""
    index = _index(text, args)
    scores, _, _ = index.score(query, args.mode)
    spans = list(zip(index.starts.tolist(), index.ends.tolist()))
    return spans, scores, index.token_counts


def run(text: str, query: str, args: argparse.Namespace) -> SearchResult:
    """MixPR's own selection: top ``args.k`` chunks or ``args.budget`` tokens, document order."""
    return _index(text, args).search(
        query,
        k=args.k,
        token_budget=args.budget,
        mode=args.mode,
        explain=bool(getattr(args, "explain", False)),
    )
