"""How a :class:`~longctx.diversity.index.DiversityIndex` is built from texts and unit spans: the
units cut out, embedded once (through the embedding cache) and their tokens counted once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from longctx.checks import check_int
from longctx.diversity.inputs import as_embeddings, as_vector
from longctx.index import check_texts

__all__ = ["build_units"]

logger = logging.getLogger(__name__)


def _counter_name(token_counter) -> str:
    if token_counter is None:
        return "longctx.tokens.count_tokens"
    return getattr(token_counter, "__qualname__", type(token_counter).__qualname__)


def _check_spans(spans, texts: tuple[str, ...]) -> list[list[tuple[int, int]]]:
    if isinstance(spans, (str, bytes)) or not isinstance(spans, Sequence):
        raise TypeError("spans must be a sequence (one per text) of sequences of (start, end)")
    if len(spans) != len(texts):
        raise ValueError(f"spans must hold one sequence per text ({len(texts)}), got {len(spans)}")
    out = []
    for s, (text, ss) in enumerate(zip(texts, spans)):
        row = []
        for j, pair in enumerate(ss):
            try:
                a, b = (int(x) for x in pair)
            except (TypeError, ValueError):
                raise TypeError(f"spans[{s}][{j}] must be a pair of ints, got {pair!r}") from None
            if not 0 <= a <= b <= len(text):
                raise ValueError(
                    f"spans[{s}][{j}] = ({a}, {b}) is not a span of texts[{s}] "
                    f"(0 <= start <= end <= {len(text)})"
                )
            row.append((a, b))
        out.append(row)
    return out


def build_units(
    cls,
    texts,
    spans,
    encoder=None,
    *,
    token_counter: Callable[[str], int] | None = None,
    token_counts=None,
    embeddings=None,
    cache=None,
    batch_size: int = 256,
    progress: bool | None = None,
    unit: str = "span",
    max_unit_tokens: int | None = None,
):
    """An instance of ``cls`` (:class:`~longctx.diversity.index.DiversityIndex`) over the units
    ``spans[s]`` of ``texts[s]``; arguments and errors as in
    :meth:`~longctx.diversity.index.DiversityIndex.from_units` (``unit`` and ``max_unit_tokens``
    are saved in its configuration)."""
    from longctx.embeddings import default_cache, embed_texts, get_encoder
    from longctx.tokens import MAX_TOKENS_PER_CHAR, TOKEN_SLACK, count_units

    texts = check_texts(texts)
    spans = _check_spans(spans, texts)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    source = np.array([s for s, row in enumerate(spans) for _ in row], dtype=np.int64)
    start = np.array([a for row in spans for a, _ in row], dtype=np.int64)
    end = np.array([b for row in spans for _, b in row], dtype=np.int64)
    unit_index = np.array([j for row in spans for j in range(len(row))], dtype=np.int64)
    units = [texts[s][a:b] for s, row in enumerate(spans) for a, b in row]
    n = len(units)
    if token_counts is not None:
        counts = as_vector(token_counts, "token_counts", n, dtype=np.float64)
        if not np.isfinite(counts).all() or (counts < 0).any() or (counts % 1).any():
            raise ValueError("token_counts must be non-negative integers")
        counts = counts.astype(np.int64)
    enc = None
    if embeddings is not None:
        emb = as_embeddings(embeddings)
        if emb.shape[0] != n:
            raise ValueError(f"embeddings must have {n} rows (one per unit), got {emb.shape}")
        if encoder is not None:
            enc = get_encoder(encoder)
    else:
        enc = get_encoder(encoder)
        if cache is True:
            cache = default_cache()
        elif cache is False:
            cache = None
        emb = embed_texts(
            enc,
            units,
            cache=cache,
            batch_size=batch_size,
            progress=progress,
            desc="embedding sentences",
        )
        if n == 0:
            emb = np.zeros((0, enc.dim or 1), np.float32)
    if token_counts is None:
        counts = count_units(units, token_counter)
    elif n:  # the range a load accepts (longctx.persist.check_token_counts), as count_units
        most = MAX_TOKENS_PER_CHAR * (end - start) + TOKEN_SLACK
        counts = np.clip(counts, 1, most)
    logger.info(
        "DiversityIndex: %d texts, %d units, %d dimensions (encoder %s)",
        len(texts),
        n,
        emb.shape[1],
        None if enc is None else enc.name,
    )
    identity = {"name": None if enc is None else enc.name}
    config = {
        "unit": unit,
        "token_counter": _counter_name(token_counter),
        "max_unit_tokens": max_unit_tokens,
    }
    return cls(
        texts,
        source,
        start,
        end,
        unit_index,
        emb,
        counts,
        encoder=enc,
        encoder_identity=identity,
        config=config,
    )
