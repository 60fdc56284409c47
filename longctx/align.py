"""Sentence-to-token alignment: which tokens of a tokenized text belong to which sentence.

YOURA scores sentences by slicing a token-indexed reaction vector, so every sentence (a character
span from :func:`longctx.text.split_sentences`) needs a token span ``[t_start, t_end)``
(YOURA paper, Soh et al., 2024, arXiv:2409.13695, sec. 3.2 and 3.3). Two methods:

- :func:`offset_token_spans`: exact, from a fast tokenizer's ``offset_mapping`` (vectorized).
- :func:`easy_token_spans`: EASY, Algorithm 1 of the paper, for tokenizers without offsets: guess
  each boundary from encoded lengths, decode, and wiggle the boundary by +-1 token.

:func:`sentence_token_spans` tokenizes a text and picks the method.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import numpy as np

from longctx.checks import check_choice, check_int, check_text

Span = tuple[int, int]

logger = logging.getLogger(__name__)

ALIGN_METHODS = ("auto", "offsets", "easy")
EASY_TOLERANCE = 30  # Algorithm 1: "tol <- 30, max wiggling tries"

_NONSPACE_RE = re.compile(r"\S")


def _check_char_spans(sentences, name: str = "sentences", text_len: int | None = None):
    """Validate sorted, non-overlapping ``(start, end)`` spans; return an ``(n, 2) int64`` array."""
    if isinstance(sentences, (str, bytes)) or not isinstance(sentences, (Sequence, np.ndarray)):
        raise TypeError(
            f"{name} must be a list of (start, end) character spans, got {type(sentences).__name__}"
        )
    if len(sentences) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    try:
        arr = np.asarray(sentences)
    except ValueError as exc:
        raise ValueError(f"{name} must be a list of (start, end) pairs ({exc})") from exc
    if arr.ndim != 2 or arr.shape[1] != 2 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"{name} must be a list of (start, end) integer pairs, got array of shape "
            f"{arr.shape} and dtype {arr.dtype}"
        )
    arr = arr.astype(np.int64)
    starts, ends = arr[:, 0], arr[:, 1]
    bad = np.flatnonzero((starts < 0) | (ends <= starts))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"{name}[{i}] = {tuple(arr[i].tolist())}: each span needs 0 <= start < end"
        )
    bad = np.flatnonzero(starts[1:] < ends[:-1])
    if bad.size:
        i = int(bad[0]) + 1
        raise ValueError(
            f"{name} must be sorted and non-overlapping: {name}[{i}] = "
            f"{tuple(arr[i].tolist())} starts before {name}[{i - 1}] ends"
        )
    if text_len is not None and ends[-1] > text_len:
        raise ValueError(f"{name} reach past the end of text ({int(ends[-1])} > {text_len})")
    return arr


def offset_token_spans(
    sentences: list[Span],
    offsets,
    *,
    text: str | None = None,
) -> list[Span]:
    """Exact token spans of sentences, from the tokenizer's character offsets.

    Rule: a token belongs to the sentence that contains its first non-space character. Tokens
    like ``" The"`` start in the whitespace between two sentences and go to the following one.
    A token that straddles a boundary, such as ``".T"`` in ``"end.The"``, goes to the sentence of
    its first non-space character (``"."``, the earlier sentence): deterministic, and the later
    sentence then starts at the token after it (the paper, sec. 3.2, notes that no exact boundary
    exists there). Tokens with no non-space character inside any sentence (``"\\n\\n"`` between
    paragraphs, spaces) go to the preceding sentence; those before the first sentence go to the
    first one.

    Without ``text``, the "first non-space character" is taken to be the token's first character
    that lies inside a sentence span, which is the same thing when the spans cover every non-space
    character and start on one (as :func:`longctx.text.split_sentences` spans do). Pass ``text``
    for spans that include surrounding whitespace.

    Parameters
    ----------
    sentences : list of (start, end)
        Character spans (end exclusive), sorted and non-overlapping.
    offsets : array-like, shape (n_tokens, 2)
        ``offset_mapping`` of the same text from a fast tokenizer (characters, end exclusive),
        without special tokens (a ``(0, 0)`` special token would go to the first sentence).
    text : str, optional
        The tokenized text, to find each token's first non-space character exactly.

    Returns
    -------
    list of (t_start, t_end)
        One token span per sentence, in tokens (end exclusive). Spans are contiguous
        (``spans[i][1] == spans[i + 1][0]``) and cover all tokens (``spans[0][0] == 0``,
        ``spans[-1][1] == n_tokens``), so every token is in exactly one span. A span is empty
        (``t_start == t_end``) only when no token has its first non-space character in that
        sentence (the sentence lies inside a token that started in an earlier one); its position
        is then the token index where it would begin. ``[]`` when ``sentences`` is empty.

    Raises
    ------
    TypeError, ValueError
        Malformed ``sentences`` (unsorted, overlapping, negative or empty spans) or ``offsets``
        (not ``(n, 2)`` integers, decreasing starts).

    Notes
    -----
    O((n_tokens + n_sentences) log n_sentences) with ``numpy.searchsorted``.
    """
    if text is not None:
        check_text(text, "text", allow_empty=True)
    sent = _check_char_spans(sentences, "sentences", None if text is None else len(text))
    off = np.asarray(offsets)
    if off.size == 0:
        off = np.zeros((0, 2), dtype=np.int64)
    if off.ndim != 2 or off.shape[1] != 2 or not np.issubdtype(off.dtype, np.integer):
        raise ValueError(
            f"offsets must be an (n_tokens, 2) integer array of character offsets, got shape "
            f"{off.shape} and dtype {off.dtype}"
        )
    off = off.astype(np.int64)
    if np.any(off[1:, 0] < off[:-1, 0]):
        raise ValueError("offsets must have non-decreasing start positions (one text, in order)")
    n_sent, n_tok = len(sent), len(off)
    if n_sent == 0:
        return []
    if n_tok == 0:
        return [(0, 0)] * n_sent

    tok_start, tok_end = off[:, 0], np.maximum(off[:, 1], off[:, 0])
    if text is not None:
        # First non-space character at or after each token start (len(text) if none).
        nonspace = np.fromiter((m.start() for m in _NONSPACE_RE.finditer(text)), dtype=np.int64)
        first = np.append(nonspace, len(text))[np.searchsorted(nonspace, tok_start, side="left")]
        has_nonspace = first < tok_end
        key = np.where(has_nonspace, first, tok_start)
    else:
        has_nonspace = np.ones(n_tok, dtype=bool)
        key = tok_start
    starts, ends = sent[:, 0], sent[:, 1]
    # j: the first sentence ending after the key character; the token goes to j when it reaches
    # into j (whitespace-only tokens: when it starts inside j), else to the preceding sentence.
    j = np.searchsorted(ends, key, side="right")
    sj = starts[np.minimum(j, n_sent - 1)]
    inside = (j < n_sent) & np.where(has_nonspace, sj < tok_end, sj <= tok_start)
    assign = np.where(inside, j, j - 1)
    assign = np.clip(assign, 0, n_sent - 1)
    assign = np.maximum.accumulate(assign)  # monotone already for in-order offsets; be safe
    ids = np.arange(n_sent)
    lo = np.searchsorted(assign, ids, side="left")
    hi = np.searchsorted(assign, ids, side="right")
    lo[0] = 0
    return list(zip(lo.tolist(), hi.tolist()))


def _decode(tokenizer, ids) -> str:
    return tokenizer.decode(
        list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
    )


def _encoded_lengths(tokenizer, pieces: list[str]) -> np.ndarray:
    if not pieces:
        return np.zeros(0, dtype=np.int64)
    enc = tokenizer(pieces, add_special_tokens=False)["input_ids"]
    return np.fromiter((len(e) for e in enc), dtype=np.int64, count=len(pieces))


def easy_boundaries(
    sentences: list[str],
    token_ids,
    tokenizer,
    tolerance: int = EASY_TOLERANCE,
    *,
    candidates=None,
) -> list[int]:
    """Sentence boundary token indices B, exactly as Algorithm 1 (EASY) returns them.

    For sentence ``i`` the candidate boundary ``c`` is the encoded length of the sentences
    processed so far (``candidates[i]``; by default the cumulative length of the sentences joined
    by one space). EASY decodes ``token_ids[m:c]`` (``m``: the last confirmed boundary) and
    compares it with the sentence, both stripped of surrounding whitespace (the paper's
    "cleanup", sec. 4.2): a match stops; a decoded text that is a substring of the sentence moves
    ``c`` one token right, anything else one token left. It gives up and restores the initial
    candidate when ``c`` was visited already, passes ``len(token_ids)``, or moves more than
    ``tolerance`` tokens away. The boundary then becomes the next ``m``.

    Returns the raw list B (one boundary per sentence, not clipped); see :func:`easy_token_spans`
    for token spans.
    """
    seq = list(token_ids)
    n = len(seq)
    if candidates is None:
        pieces = [s if k == 0 else " " + s for k, s in enumerate(sentences)]
        candidates = np.cumsum(_encoded_lengths(tokenizer, pieces)).tolist()
    targets = [s.strip() for s in sentences]
    bounds: list[int] = []
    m = 0
    for i, target in enumerate(targets):
        c = int(candidates[i])
        saved = c
        visited: set[int] = set()
        while True:
            if c in visited or c > n or abs(c - saved) > tolerance:
                c = saved
                break
            visited.add(c)
            s = _decode(tokenizer, seq[m:c]).strip() if c > m else ""
            if s == target:
                break
            if s in target:
                c += 1
            else:
                c -= 1
        bounds.append(c)
        m = c
    return bounds


def easy_token_spans(
    sentences: list[str],
    token_ids,
    tokenizer,
    tolerance: int = EASY_TOLERANCE,
    *,
    text: str | None = None,
    sentence_spans: list[Span] | None = None,
) -> list[Span]:
    """Token spans of sentences by EASY, for tokenizers without character offsets.

    Embedding-Agnostic Sentence Yield, Algorithm 1 of the YOURA paper
    (Soh et al., 2024, arXiv:2409.13695, sec. 3.2), with ``tol = 30``. Line 6 of the
    algorithm, ``c <- Length(Encode(Concat(P)))``, re-encodes all processed sentences for every
    sentence (quadratic in the text length); here it is the running sum of per-piece encoded
    lengths, one batch ``tokenizer(pieces)`` call:

    - without ``text``: pieces are the sentences joined by one space (the first without). Equal to
      encoding the concatenation for byte-level BPE tokenizers that split words before a space
      (GPT-2, Llama 3, SmolLM2); where the real text separates sentences differently (``"\\n\\n"``)
      the guess drifts, as in the paper, and EASY fails once the drift exceeds ``tolerance``.
    - with ``text`` and ``sentence_spans``: pieces are the text cut at the sentence ends, so
      ``Concat(P)`` is the text up to the end of sentence ``i``, including the real whitespace.

    Parameters
    ----------
    sentences : list of str
        The target sentences, in order (``TS`` in Algorithm 1).
    token_ids : sequence of int, shape (n_tokens,)
        The token sequence of the whole text (``seq``), without special tokens.
    tokenizer
        A Hugging Face tokenizer (``__call__`` and ``decode``), slow or fast.
    tolerance : int, default 30
        Maximum wiggle distance in tokens from the initial candidate (``tol``).
    text : str, optional
        The tokenized text; with ``sentence_spans`` gives exact candidates (see above).
    sentence_spans : list of (start, end), optional
        Character spans of ``sentences`` in ``text``.

    Returns
    -------
    list of (t_start, t_end)
        One token span per sentence: ``[B[i-1], B[i])`` with ``B[-1] = 0``. To keep spans
        contiguous and covering all tokens, boundaries are clipped into ``[0, n_tokens]`` and made
        non-decreasing (a failed guess that falls before the previous boundary yields an empty
        span), and the last span is extended to ``n_tokens`` (trailing whitespace tokens).
        ``[]`` when ``sentences`` is empty. A sentence whose boundary was not found exactly keeps
        the restored initial guess (best effort, as in the paper: 93.7% exact on LongBench).

    Raises
    ------
    TypeError, ValueError
        ``sentences`` not a list of str, ``token_ids`` not integers, ``tolerance`` not an int
        >= 0, or ``text``/``sentence_spans`` inconsistent with ``sentences``.
    """
    if isinstance(sentences, str) or not isinstance(sentences, Sequence):
        raise TypeError(f"sentences must be a list of str, got {type(sentences).__name__}")
    for k, s in enumerate(sentences):
        if not isinstance(s, str):
            raise TypeError(f"sentences[{k}] must be a str, got {type(s).__name__}")
    tolerance = check_int(tolerance, "tolerance", minimum=0)
    ids = np.asarray(token_ids)
    if ids.size == 0:
        ids = np.zeros(0, dtype=np.int64)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(
            f"token_ids must be a 1-D sequence of ints, got shape {ids.shape} dtype {ids.dtype}"
        )
    if not (callable(tokenizer) and hasattr(tokenizer, "decode")):
        raise TypeError("tokenizer must be a Hugging Face tokenizer (callable, with .decode)")
    if (text is None) != (sentence_spans is None):
        raise ValueError("text and sentence_spans must be given together")
    n_sent, n_tok = len(sentences), len(ids)
    if n_sent == 0:
        return []
    candidates = None
    if text is not None:
        check_text(text, "text", allow_empty=True)
        spans = _check_char_spans(sentence_spans, "sentence_spans", len(text))
        if len(spans) != n_sent:
            raise ValueError(
                f"sentence_spans has {len(spans)} spans but sentences has {n_sent} sentences"
            )
        cuts = [0] + spans[:, 1].tolist()
        pieces = [text[a:b] for a, b in zip(cuts[:-1], cuts[1:])]
        candidates = np.cumsum(_encoded_lengths(tokenizer, pieces)).tolist()
    bounds = easy_boundaries(sentences, ids.tolist(), tokenizer, tolerance, candidates=candidates)
    b = np.maximum.accumulate(np.clip(np.asarray(bounds, dtype=np.int64), 0, n_tok))
    b[-1] = n_tok
    starts = np.concatenate([[0], b[:-1]])
    return list(zip(starts.tolist(), b.tolist()))


def sentence_token_spans(text: str, sentences, tokenizer, method: str = "auto"):
    """Tokenize ``text`` (no special tokens) and map each sentence to its token span.

    Parameters
    ----------
    text : str
        The text to tokenize.
    sentences : list of (start, end) or None
        Character spans of the sentences in ``text`` (sorted, non-overlapping), e.g. from
        :func:`longctx.text.split_sentences`; None splits ``text`` with it.
    tokenizer
        A Hugging Face tokenizer.
    method : {"auto", "offsets", "easy"}
        ``"offsets"``: :func:`offset_token_spans` (exact; needs a fast tokenizer).
        ``"easy"``: :func:`easy_token_spans` (EASY, Algorithm 1, candidates from ``text``).
        ``"auto"``: offsets when ``tokenizer.is_fast``, else EASY.

    Returns
    -------
    token_ids : list of int, length n_tokens
        ``tokenizer(text, add_special_tokens=False)["input_ids"]``.
    token_spans : list of (t_start, t_end)
        One span per sentence, in tokens (end exclusive), contiguous and covering all tokens.

    Raises
    ------
    TypeError, ValueError
        Bad ``text``, ``sentences`` or ``method``; ``method="offsets"`` with a slow tokenizer.
    """
    check_text(text, "text", allow_empty=True)
    check_choice(method, "method", ALIGN_METHODS)
    if sentences is None:
        from longctx.text import split_sentences

        sentences = split_sentences(text)
    spans = _check_char_spans(sentences, "sentences", len(text))
    is_fast = bool(getattr(tokenizer, "is_fast", False))
    if method == "offsets" and not is_fast:
        raise ValueError(
            "method='offsets' needs a fast tokenizer (return_offsets_mapping); use method='easy'"
        )
    use_offsets = method == "offsets" or (method == "auto" and is_fast)
    if use_offsets:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        ids = list(enc["input_ids"])
        return ids, offset_token_spans(spans.tolist(), enc["offset_mapping"], text=text)
    logger.info(
        "sentence alignment: EASY (Algorithm 1), %s",
        "as asked" if method == "easy" else "the tokenizer gives no character offsets",
    )
    ids = list(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
    sent_text = [text[a:b] for a, b in spans.tolist()]
    return ids, easy_token_spans(
        sent_text, ids, tokenizer, text=text, sentence_spans=spans.tolist()
    )


__all__ = [
    "ALIGN_METHODS",
    "EASY_TOLERANCE",
    "easy_boundaries",
    "easy_token_spans",
    "offset_token_spans",
    "sentence_token_spans",
]
