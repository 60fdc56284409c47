"""``longctx retrieve --method mmr|fps`` and the ``--diversify`` step of the other methods.

Units are sentences (:func:`longctx.text.split_sentences`; one longer than 128 tokens is cut on
word boundaries, ``DiversityIndex.from_texts(max_unit_tokens=128)``), embedded once with
all-MiniLM-L6-v2 into a :class:`longctx.DiversityIndex`; selection by MMR / FPS (Wang, Bi, Luo, Asur and Cheng,
"Diversity Enhances an LLM's Performance in RAG and Long-context Task", 2025, arXiv:2502.09017,
eq. 1 and 2), hits in document order.
"""

from __future__ import annotations

import numpy as np

from longctx.diversity import DiversityIndex, rerank
from longctx.embeddings import SentenceTransformerEncoder
from longctx.selection import unit_token_cap
from longctx.types import Passage, SearchResult


def _encoder(args) -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder(device=getattr(args, "device", None))


def _progress(args) -> bool:
    return bool(getattr(args, "progress", False))


def _size(args) -> dict:
    k = getattr(args, "k", None)
    budget = getattr(args, "budget", None)
    if k is None and budget is None:
        raise ValueError("give --k or --budget")
    return {"k": k} if budget is None else {"token_budget": budget}


def build_index(text: str, args) -> DiversityIndex:
    """The sentences of ``text`` embedded once (progress bar when ``args.progress``); a sentence
    longer than 128 tokens, or than ``--budget``, is cut on word boundaries (the one-off rule of
    :func:`longctx.diversity.diversify`), so a unit always fits the budget."""
    budget = getattr(args, "budget", None)
    return DiversityIndex.from_texts(
        text,
        _encoder(args),
        progress=_progress(args),
        max_unit_tokens=unit_token_cap(128, budget),
    )


def score_units(text: str, query: str, args):
    """Every sentence of ``text`` with its cosine similarity to ``query``.

    Returns
    -------
    spans : list of (start, end)
        Character offsets of the sentences.
    scores : (n,) float64
        Cosine similarity of each sentence to the query (all-MiniLM-L6-v2).
    token_counts : (n,) int64
        :func:`longctx.tokens.count_tokens` of each sentence.
    """
    index = build_index(text, args)
    spans = [(a, b) for _, a, b in index.spans()]
    return spans, index.rewards(query), np.array(index.token_counts)


def run(text: str, query: str, args) -> SearchResult:
    """MMR or FPS (``args.method``) over the sentences of ``text``, ``args.k`` or ``args.budget``.

    Returns the :class:`~longctx.types.SearchResult`: hits in document order, ``score`` being the
    sentence's cosine similarity to the query; ``timings`` of the query.
    """
    size = _size(args)
    index = build_index(text, args)
    return index.search(
        query,
        method=args.method,
        lambda_=args.lambda_,
        window=args.window,
        explain=bool(getattr(args, "explain", False)),
        **size,
    )


def diversify_units(text: str, spans, scores, token_counts, query: str, args) -> list[Passage]:
    """MMR over another method's best-scored units, its scores as rewards (``--diversify``;
    :func:`longctx.diversity.rerank`: only the pool of the best units is embedded).

    Parameters
    ----------
    text : str
        The document.
    spans : list of (start, end)
        The method's units, character offsets into ``text``.
    scores : (n,) array
        The method's scores (PageRank probabilities, reaction scores...), min-max rescaled to
        [0, 1] as MMR rewards.
    token_counts : (n,) array of int
        Tokens per unit, for ``args.budget``.
    query : str
        Unused by the selection itself (the rewards carry the relevance); kept for the interface.
    args : argparse.Namespace
        ``lambda_``, ``window``, ``k`` or ``budget``.

    Returns
    -------
    list of Passage, in document order, ``score`` being the method's original score.

    Raises
    ------
    ValueError
        If ``scores`` or ``token_counts`` do not match ``spans``.
    """
    size = _size(args)
    result = rerank(
        text,
        spans,
        scores,
        token_counts,
        encoder=_encoder(args),
        lambda_=args.lambda_,
        window=args.window,
        progress=_progress(args),
        **size,
    )
    return list(result.hits)
