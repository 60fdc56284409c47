"""The one-off form of :class:`~longctx.diversity.index.DiversityIndex`: :func:`diversify` builds
an index over one text and searches it once (Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an
LLM's Performance in RAG and Long-context Task", 2025, arXiv:2502.09017, sec. 2.1 eq. 1-2, sec. 2.2
summarization mode, sec. 3.1 ordering).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from longctx.checks import check_choice, check_float, check_int
from longctx.diversity.index import DiversityIndex
from longctx.diversity.inputs import as_vector
from longctx.diversity.objective import METHODS
from longctx.diversity.ordering import check_order
from longctx.selection import unit_token_cap
from longctx.types import Passage

__all__ = ["diversify"]


def diversify(
    text: str | Sequence[str],
    query: str | None = None,
    *,
    token_budget: int | None = None,
    ratio: float | None = None,
    k: int | None = None,
    method: str = "mmr",
    lambda_: float = 0.5,
    window: int | None = None,
    order: str = "document",
    encoder=None,
    token_counter: Callable[[str], int] | None = None,
    rewards=None,
    rescale_rewards: bool = True,
    sentence_backend: str = "auto",
    max_unit_tokens: int | None = 128,
) -> list[Passage]:
    """Select diverse, relevant sentences of a text for a query (or a summary without one).

    The one-off form of :class:`DiversityIndex`: builds the index over ``text`` (sentence
    embeddings reused from the process-wide cache, :func:`longctx.embeddings.default_cache`) and
    searches it once. To ask many questions of one text, build the index yourself.

    Parameters
    ----------
    text : str or sequence of str
        A raw text (split with :func:`longctx.text.split_sentences`) or ready units (sentences or
        chunks). For units, passage offsets refer to ``" ".join(units)``.
    query : str, optional
        The question; ``None`` selects for a summary (reward = similarity to the mean embedding).
    token_budget, ratio, k :
        When to stop, as in :meth:`DiversityIndex.search` (tokens counted with
        ``token_counter``).
    method : {"mmr", "fps"}
    lambda_, window, rewards, rescale_rewards, order :
        As in :meth:`DiversityIndex.search` (``rewards``: ``(n_units,)``, replaces query
        similarity).
    encoder : optional
        Anything :func:`longctx.embeddings.get_encoder` accepts (default: all-MiniLM-L6-v2).
    token_counter : callable str -> int, optional
        Default :func:`longctx.tokens.count_tokens`.
    sentence_backend : str
        Backend of :func:`longctx.text.split_sentences`.
    max_unit_tokens : int >= 1 or None, default 128
        For a raw ``text``: sentences longer than this many tokens (``token_counter``), or than
        ``token_budget`` (:func:`longctx.selection.unit_token_cap`), are cut on word boundaries
        into near-equal pieces, as in :meth:`DiversityIndex.from_texts` (all-MiniLM-L6-v2
        truncates at 256 word pieces anyway); ``None`` cuts only at ``token_budget``. Ready
        units are never cut.

    Returns
    -------
    list of :class:`longctx.types.Passage`
        ``score`` is the unit's reward before rescaling (cosine similarity or the given reward);
        ``index`` the unit's position; ``text == source[start:end]``.

    Raises
    ------
    TypeError, ValueError
        On bad arguments, before any embedding work.
    """
    from longctx.text import split_long_spans, split_sentences

    check_choice(method, "method", METHODS)
    check_order(order)
    check_float(lambda_, "lambda_", low=0.0, high=1.0)
    check_int(window, "window", minimum=1, allow_none=True)
    check_int(k, "k", minimum=1, allow_none=True)
    check_int(token_budget, "token_budget", minimum=1, allow_none=True)
    check_float(ratio, "ratio", low=0.0, high=1.0, allow_none=True)
    max_unit_tokens = check_int(max_unit_tokens, "max_unit_tokens", minimum=1, allow_none=True)
    if query is not None and not isinstance(query, str):
        raise TypeError(f"query must be a str or None, got {type(query).__name__}")
    if token_budget is None and ratio is None and k is None:
        raise ValueError("give token_budget, ratio or k (when to stop selecting)")
    if isinstance(text, str):
        source = text
        if not text.strip():
            return []
        spans = split_sentences(text, backend=sentence_backend)
        max_unit_tokens = unit_token_cap(max_unit_tokens, token_budget)
        if max_unit_tokens is not None:
            spans = split_long_spans(text, spans, max_unit_tokens, token_counter)
    else:
        max_unit_tokens = None
        units = list(text)
        for j, u in enumerate(units):
            if not isinstance(u, str):
                raise TypeError(f"text[{j}] must be a str, got {type(u).__name__}")
        source = " ".join(units)
        spans, pos = [], 0
        for u in units:
            spans.append((pos, pos + len(u)))
            pos += len(u) + 1
        if not source.strip():
            return []
    if rewards is not None:
        rewards = as_vector(rewards, "rewards", len(spans))
    if not spans:
        return []
    index = DiversityIndex.from_units(
        [source],
        [spans],
        encoder,
        token_counter=token_counter,
        cache=True,
        progress=False,
        _max_unit_tokens=max_unit_tokens,
    )
    return list(
        index.search(
            None if rewards is not None else query,
            k=k,
            token_budget=token_budget,
            ratio=ratio,
            method=method,
            lambda_=lambda_,
            window=window,
            order=order,
            rewards=rewards,
            rescale_rewards=rescale_rewards,
        ).hits
    )
