"""``longctx retrieve --method mmr|fps`` and the ``--diversify`` step of the other methods.

Units are sentences (:func:`longctx.text.split_sentences`), embedded with all-MiniLM-L6-v2;
selection by :func:`longctx.diversity.mmr_select` / :func:`~longctx.diversity.fps_select`
(``../shared/papers/002_1b3ce547c3231824.txt``, eq. 1 and 2), printed in document order.
"""

from __future__ import annotations

import numpy as np

from longctx.diversity import compute_rewards, fps_select, mmr_select, order_selection
from longctx.embeddings import SentenceTransformerEncoder
from longctx.text import split_sentences
from longctx.tokens import count_many
from longctx.types import Passage


def _encoder(args) -> SentenceTransformerEncoder:
    return SentenceTransformerEncoder(
        device=getattr(args, "device", None), show_progress_bar=bool(getattr(args, "progress", 0))
    )


def _size(args) -> dict:
    k = getattr(args, "k", None)
    budget = getattr(args, "budget", None)
    if k is None and budget is None:
        raise ValueError("give --k or --budget")
    return {"k": k} if budget is None else {"token_budget": budget}


def _passages(text, spans, picks, shown) -> list[Passage]:
    return [
        Passage(spans[i][0], spans[i][1], text[spans[i][0] : spans[i][1]], float(shown[i]), i)
        for i in order_selection(picks, None, "document")
    ]


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
    spans = split_sentences(text)
    texts = [text[a:b] for a, b in spans]
    if not spans:
        return spans, np.zeros(0), np.zeros(0, np.int64)
    enc = _encoder(args)
    emb = enc.embed_documents(texts)
    return spans, compute_rewards(emb, enc.embed_query(query)), count_many(texts)


def run(text: str, query: str, args) -> list[Passage]:
    """MMR or FPS (``args.method``) over the sentences of ``text``, ``args.k`` or ``args.budget``.

    Passages come in document order; ``score`` is the sentence's cosine similarity to the query.
    """
    size = _size(args)
    select = fps_select if args.method == "fps" else mmr_select
    spans = split_sentences(text)
    if not spans:
        return []
    texts = [text[a:b] for a, b in spans]
    enc = _encoder(args)
    emb = enc.embed_documents(texts)
    q = enc.embed_query(query)
    counts = count_many(texts)
    picks = select(
        emb, None, counts, query_embedding=q, lambda_=args.lambda_, window=args.window, **size
    )
    return _passages(text, spans, picks, compute_rewards(emb, q))


def diversify_units(text: str, spans, scores, token_counts, query: str, args) -> list[Passage]:
    """MMR over another method's units, its scores as rewards (``--diversify``).

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
    spans = [(int(a), int(b)) for a, b in spans]
    scores = np.asarray(scores, dtype=np.float64)
    if scores.shape != (len(spans),):
        raise ValueError(
            f"scores must have shape ({len(spans)},) to match spans, got {scores.shape}"
        )
    size = _size(args)
    if not spans:
        return []
    texts = [text[a:b] for a, b in spans]
    emb = _encoder(args).embed_documents(texts)
    picks = mmr_select(emb, scores, token_counts, lambda_=args.lambda_, window=args.window, **size)
    return _passages(text, spans, picks, scores)
