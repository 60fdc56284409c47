"""Text layer: sentence spans and MixPR word chunks, as character offsets into the user's text.

Every function here returns ``(start, end)`` character spans (end exclusive) and never copies or
rewrites the text, so callers can always slice the original string back out.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache

import numpy as np

from longctx.checks import check_choice, check_int, check_text

Span = tuple[int, int]

SENTENCE_BACKENDS = ("auto", "nupunkt", "stanza")

_NONSPACE_RE = re.compile(r"\S")
_WORD_RE = re.compile(r"\S+")
_LINE_RE = re.compile(r"[^\r\n]+")


def _strip_span(text: str, start: int, end: int) -> Span | None:
    """Shrink ``[start, end)`` to its first and last non-space characters; None if all space."""
    m = _NONSPACE_RE.search(text, start, end)
    if m is None:
        return None
    start = m.start()
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _partition_to_spans(text: str, starts: list[int]) -> list[Span]:
    """Turn sorted boundary positions into stripped, non-empty spans that partition the text."""
    bounds = sorted(set(starts) | {0}) + [len(text)]
    spans = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        s = _strip_span(text, a, b)
        if s is not None:
            spans.append(s)
    return spans


def _nupunkt_spans(text: str) -> list[Span]:
    import nupunkt

    return _partition_to_spans(text, [a for a, _ in nupunkt.sent_spans(text)])


@lru_cache(maxsize=1)
def _stanza_pipeline():
    if importlib.util.find_spec("stanza") is None:
        raise RuntimeError(
            "backend='stanza' needs the stanza package and its English models: "
            "pip install stanza, then stanza.download('en') on a machine with internet access. "
            "Use backend='auto' for the offline default (nupunkt)."
        )
    import stanza

    try:
        return stanza.Pipeline(
            "en", processors="tokenize", download_method=None, verbose=False, use_gpu=False
        )
    except Exception as exc:  # stanza raises several types when its models are missing
        raise RuntimeError(
            "backend='stanza': stanza's English models are not installed "
            f"({type(exc).__name__}: {exc}). Run stanza.download('en') where there is internet "
            "access, or use backend='auto' for the offline default (nupunkt)."
        ) from exc


def _stanza_spans(text: str) -> list[Span]:
    doc = _stanza_pipeline()(text)
    return _partition_to_spans(text, [s.tokens[0].start_char for s in doc.sentences if s.tokens])


def split_sentences(text: str, backend: str = "auto") -> list[Span]:
    """Split ``text`` into sentences, as character spans.

    Parameters
    ----------
    text : str
        Any text; may be empty or whitespace only (then the result is ``[]``).
    backend : {"auto", "nupunkt", "stanza"}
        ``"auto"`` and ``"nupunkt"``: nupunkt's pre-trained Punkt model (offline, ~8 MB/s on one
        core, handles "Dr.", "e.g.", "U.S."). ``"stanza"``: the splitter the YOURA paper uses
        (000_ac75cd36fe64736e.txt, sec. 3.3); only when stanza's English models are installed.

    Returns
    -------
    list of (start, end)
        Character offsets, end exclusive, in document order. Spans start and end on non-space
        characters, do not overlap, and together cover every non-space character exactly once.

    Raises
    ------
    TypeError
        If ``text`` is not a ``str``.
    ValueError
        If ``backend`` is unknown.
    RuntimeError
        If ``backend="stanza"`` and stanza or its English models are not installed.
    """
    check_text(text, "text", allow_empty=True)
    check_choice(backend, "backend", SENTENCE_BACKENDS)
    if not text.strip():
        return []
    if backend == "stanza":
        return _stanza_spans(text)
    return _nupunkt_spans(text)


def _equal_word_pieces(words: list[Span], max_words: int) -> list[Span]:
    """Cut a run of word spans into ``ceil(n / max_words)`` pieces of near-equal word counts."""
    n = len(words)
    n_pieces = -(-n // max_words)
    cuts = np.linspace(0, n, n_pieces + 1).round().astype(int)
    return [(words[a][0], words[b - 1][1]) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def chunk_words(
    text: str,
    max_words: int = 32,
    *,
    sentences: list[Span] | None = None,
    backend: str = "auto",
) -> list[Span]:
    """MixPR's chunking: sentences, then newlines, then equal pieces along word boundaries.

    Source: 003_66700b152cf6a0ed.txt, sec. 3 "Chunking method": "first chunks the text into
    sentences. Any chunks that are greater than N words are then chunked along newline characters.
    If any chunks are still greater than N words, these are split into smaller chunks of roughly
    equal length along word boundaries. We set N=32." A word is a run of non-space characters.

    Parameters
    ----------
    text : str
        Any text (empty or whitespace only gives ``[]``).
    max_words : int, default 32
        N, the most words a chunk may hold (>= 1).
    sentences : list of (start, end), optional
        Precomputed :func:`split_sentences` spans, to avoid splitting twice.
    backend : str
        Sentence backend, as in :func:`split_sentences`.

    Returns
    -------
    list of (start, end)
        Character spans in document order, each with 1..``max_words`` words, covering every
        non-space character exactly once.

    Raises
    ------
    TypeError, ValueError
        If ``text`` is not a ``str`` or ``max_words`` is not an int >= 1.
    """
    check_text(text, "text", allow_empty=True)
    max_words = check_int(max_words, "max_words", minimum=1)
    if sentences is None:
        sentences = split_sentences(text, backend=backend)
    if not sentences:
        return []
    # Word start positions of the whole text, once; a sentence's word count is then two bisections.
    word_starts = np.fromiter((m.start() for m in _WORD_RE.finditer(text)), dtype=np.int64)
    sent = np.asarray(sentences, dtype=np.int64)
    first = np.searchsorted(word_starts, sent[:, 0], side="left")
    last = np.searchsorted(word_starts, sent[:, 1], side="left")
    n_words = last - first
    chunks: list[Span] = []
    for (a, b), n in zip(sentences, n_words.tolist()):
        if n <= max_words:
            chunks.append((a, b))
            continue
        for line in _LINE_RE.finditer(text, a, b):
            words = [m.span() for m in _WORD_RE.finditer(text, line.start(), line.end())]
            if not words:
                continue
            if len(words) <= max_words:
                chunks.append((words[0][0], words[-1][1]))
            else:
                chunks.extend(_equal_word_pieces(words, max_words))
    return chunks
