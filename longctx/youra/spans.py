"""YOURA sentence layout and selection: scored spans, sentence to token alignment, window
bounds, the query-independent layout of a text and the one selection rule (sec. 3.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from longctx.checks import check_float, check_int
from longctx.selection import select_top
from longctx.types import Passage


@dataclass(frozen=True)
class ScoredSpan:
    """One sentence of the context with its reaction score.

    Attributes
    ----------
    start, end : int
        Character offsets into the context (end exclusive).
    token_start, token_end : int
        Token offsets into the context's tokens (``add_special_tokens=False``), end exclusive.
        The sentence's slice of the reaction vector is ``vector[token_start:token_end]``.
    score : float
        Reaction score (eq. 6; geometric or arithmetic mean of the slice).
    index : int
        Position of the sentence among all sentences of the context, 0-based.
    """

    start: int
    end: int
    token_start: int
    token_end: int
    score: float
    index: int

    @property
    def n_tokens(self) -> int:
        """Tokens this sentence costs in a budget (at least 1, see :meth:`ReactionScorer.select`)."""
        return max(1, self.token_end - self.token_start)

    def text(self, context: str) -> str:
        """The sentence, sliced from the context it was scored in."""
        return context[self.start : self.end]

    def to_passage(self, context: str, source: int = 0) -> Passage:
        return Passage(
            self.start, self.end, context[self.start : self.end], self.score, self.index, source
        )


def _align_sentences(text: str, sentences, tokenizer):
    """Tokenize ``text`` (no special tokens) and give each sentence its token span: exact spans
    from the fast tokenizer's offsets, EASY (Algorithm 1) for tokenizers without offsets
    (``longctx.align.sentence_token_spans``). Returns ``(token_ids, token_spans)``."""
    from longctx.align import sentence_token_spans

    ids, spans = sentence_token_spans(text, sentences, tokenizer)
    return list(ids), [(int(a), int(b)) for a, b in spans]


def check_select_args(token_budget, top_n, max_fraction):
    """Check the size arguments of :meth:`ReactionScorer.select`: exactly one of
    ``token_budget`` and ``top_n`` (ints >= 1) and ``max_fraction`` in (0, 1]; returns them.

    Raises
    ------
    TypeError, ValueError
        Naming the argument.
    """
    if (token_budget is None) == (top_n is None):
        raise ValueError("give exactly one of token_budget and top_n")
    token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
    top_n = check_int(top_n, "top_n", minimum=1, allow_none=True)
    return token_budget, top_n, check_max_fraction(max_fraction)


def check_max_fraction(max_fraction) -> float:
    """``max_fraction`` as a float in (0, 1] (the paper's 80% cap on the share of sentences taken,
    sec. 3.3); ``TypeError`` / ``ValueError`` naming it otherwise."""
    max_fraction = check_float(max_fraction, "max_fraction", low=0.0, high=1.0)
    if max_fraction <= 0:
        raise ValueError(f"max_fraction must be in (0, 1], got {max_fraction}")
    return max_fraction


def _check_sentences(sentences, text_len: int):
    """Validate optional user sentence spans: sorted, non-overlapping, inside the text."""
    if sentences is None:
        return None
    out = []
    prev_end = 0
    for i, span in enumerate(sentences):
        try:
            a, b = (int(x) for x in span)
        except (TypeError, ValueError):
            raise TypeError(f"sentences[{i}] must be a (start, end) pair, got {span!r}") from None
        if not 0 <= a < b <= text_len or a < prev_end:
            raise ValueError(
                f"sentences[{i}] = {(a, b)} must be non-empty, sorted, non-overlapping and "
                f"inside the context (length {text_len})"
            )
        out.append((a, b))
        prev_end = b
    if not out:
        raise ValueError("sentences must not be empty")
    return out


def _window_bounds(token_spans, n_tokens: int, size: int) -> list[tuple[int, int]]:
    """Cut ``[0, n_tokens)`` into windows of at most ``size`` tokens, at sentence starts when
    possible, else (a sentence longer than ``size``) at ``size`` tokens."""
    cuts = np.unique(np.asarray([s for s, _ in token_spans] + [n_tokens], dtype=np.int64))
    out = []
    p = 0
    while p < n_tokens:
        hi = int(np.searchsorted(cuts, p + size, side="right")) - 1
        q = int(cuts[hi]) if hi >= 0 and cuts[hi] > p else min(n_tokens, p + size)
        out.append((p, q))
        p = q
    return out


def _select(scores, counts, k, token_budget, max_fraction) -> np.ndarray:
    """The one selection rule of YOURA (sec. 3.3), for :meth:`ReactionScorer.select` and
    :meth:`YouraIndex.search`: with ``k`` the ``k`` best; with ``token_budget`` greedy by score
    under the budget (``longctx.selection.select_top``), then at most
    ``max(1, floor(max_fraction * n))`` of them (the best). Indices sorted ascending."""
    scores = np.asarray(scores, dtype=np.float64)
    if k is not None:
        return select_top(scores, k=k)
    chosen = select_top(scores, token_budget=token_budget, token_counts=counts)
    cap = max(1, math.floor(max_fraction * len(scores)))
    if len(chosen) > cap:
        # the first `cap` taken by the greedy pass = the `cap` best of those chosen
        order = chosen[np.argsort(-scores[chosen], kind="stable")]
        chosen = np.sort(order[:cap])
    return chosen


@dataclass(frozen=True)
class _Layout:
    """Query-independent layout of one text: its tokens, sentences and windows."""

    ids: tuple[int, ...]
    sentences: tuple[tuple[int, int], ...]
    token_spans: tuple[tuple[int, int], ...]
    windows: tuple[tuple[int, int], ...]
    #: content hash of each window's token ids (the window cache key)
    wkeys: tuple[str, ...]

    @property
    def token_counts(self) -> np.ndarray:
        return np.asarray([max(1, b - a) for a, b in self.token_spans], dtype=np.int64)


def _spans(lay: _Layout, scores) -> list[ScoredSpan]:
    return [
        ScoredSpan(a, b, t0, t1, float(s), i)
        for i, ((a, b), (t0, t1), s) in enumerate(zip(lay.sentences, lay.token_spans, scores))
    ]


def join_selected(text: str, spans) -> str:
    """The kept sentences of ``text`` as one string, in document order.

    ``spans`` are :class:`ScoredSpan` or :class:`longctx.types.Passage` objects of ``text``.
    Runs of consecutive sentences (``index`` values that follow each other) keep the original
    text between them (``text[first.start:last.end]``, whitespace and newlines included);
    separate runs are joined with a single space. Nothing else is added or changed.
    """
    spans = sorted(spans, key=lambda s: s.start)
    runs: list[list] = []
    for s in spans:
        if runs and s.index == runs[-1][-1].index + 1:
            runs[-1].append(s)
        else:
            runs.append([s])
    return " ".join(text[r[0].start : r[-1].end] for r in runs)
