"""Text layer: sentence spans and MixPR word chunks, as character offsets into the user's text.

Every function here returns ``(start, end)`` character spans (end exclusive) and never copies or
rewrites the text, so callers can always slice the original string back out.
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache

import numpy as np
import regex

from longctx.checks import check_choice, check_int, check_text
from longctx.word_pieces import BLANK_LINE_RE, has_char
from longctx.word_pieces import equal_word_pieces as _equal_word_pieces
from longctx.word_pieces import merge_short as _merge_short
from longctx.word_pieces import paragraphs as _paragraphs
from longctx.word_pieces import space_words as _space_words
from longctx.word_pieces import unwrapped_pieces as _unwrapped_pieces

Span = tuple[int, int]

SENTENCE_BACKENDS = ("auto", "nupunkt", "stanza", "rules")

_NONSPACE_RE = re.compile(r"\S")
_WORD_RE = re.compile(r"\S+")

# -- scripts written without spaces between words ---------------------------------------------
# Han (with 々〆〇), Hiragana, Katakana (full and half width): every character is a word here.
_CJK_CHARS = (
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b-\u303c\u3040-\u30fa\u30fc-\u30ff"
    "\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
# Thai, Lao, Khmer, Myanmar: words run together, spaces (if any) separate phrases.
_SEA_CHARS = "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f"
_SPACELESS_RE = re.compile(f"[{_CJK_CHARS}{_SEA_CHARS}]")
#: Longest run of Thai-like letters counted as one word by the chunkers (characters).
SEA_WORD_CHARS = 16
# Words when the text holds spaceless scripts: one CJK character, a run of up to SEA_WORD_CHARS
# Thai-like characters, or a run of other non-space characters (on text without those scripts
# this is exactly \S+).
_INTL_WORD_RE = re.compile(
    f"[{_CJK_CHARS}]|[{_SEA_CHARS}]{{1,{SEA_WORD_CHARS}}}|[^\\s{_CJK_CHARS}{_SEA_CHARS}]+"
)
# A CJK sentence end: 。！？ (full and half width, small forms), or ! ? after a CJK character,
# with the closing quotes and brackets that follow it.
_CJK_END_RE = re.compile(
    f"(?:[\u3002\uff01\uff1f\uff61\ufe12\ufe52\ufe56\ufe57\uff0e]|(?<=[{_CJK_CHARS}])[!?])+"
    "[\u300d\u300f\u3011\u3015\u3017\u3019\u301b\u3009\u300b\uff09\uff3d\uff5d"
    "\u201d\u2019\"')\\]]*"
)
# Whitespace between two Thai-like characters: a phrase or sentence break in Thai.
_SEA_SPACE_RE = re.compile(f"(?<=[{_SEA_CHARS}])\\s+(?=[{_SEA_CHARS}])")
#: Most characters of one sentence of Chinese, Japanese or Thai text; a longer run without
#: sentence punctuation is cut into near-equal pieces (at a clause mark, space or line break
#: where there is one), so a text without punctuation is never one giant unit.
MAX_SPACELESS_SENTENCE_CHARS = 160
_SOFT_BREAK_RE = re.compile("[\\s\uff0c\u3001\uff1b\uff1a,;:\u30fb]")
# Runs of ! and ? (with dots) longer than _MAX_PUNCT_RUN are shortened for nupunkt, which takes
# time quadratic in their length (200 KB of "!?" took 106 s).
_PUNCT_RUN_RE = re.compile("[!?.\u2026\u203c\u2047-\u2049]{9,}")
_MAX_PUNCT_RUN = 8
#: A whitespace-free run longer than this (characters) with more than ``2 * DENSE_RUN_KEEP``
#: sentence marks is shown to nupunkt with only its first and last DENSE_RUN_KEEP marks
#: (see _guard_dense_runs): nupunkt's time is quadratic in such runs.
DENSE_RUN_CHARS = 256
DENSE_RUN_KEEP = 8
_LONG_RUN_RE = re.compile(f"(?<!\\S)\\S{{{DENSE_RUN_CHARS + 1},}}")
# The characters nupunkt takes as possible sentence ends.
_SENT_MARK_RE = re.compile("[.!?\u2026]")


def word_re(text: str) -> re.Pattern:
    """The word pattern the chunkers use on ``text``: ``\\S+`` runs, except that a CJK
    character is a word of its own and a Thai-like run counts one word per
    :data:`SEA_WORD_CHARS` characters when ``text`` holds those scripts."""
    return _INTL_WORD_RE if _SPACELESS_RE.search(text) else _WORD_RE


def _space_word_starts(text: str) -> np.ndarray:
    r"""``[m.start() for m in re.finditer(r"\S+", text)]`` as ``(n_words,) int64``, computed on
    the code points at once for long texts (a Python loop over a book's million words took most
    of the chunker's own time); short texts take the loop, which costs less there."""
    return _space_words(text)[0]


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


# -- grapheme clusters (Unicode UAX #29 "extended grapheme clusters", the regex module's \X) ----
# A boundary between two code points lies inside a grapheme cluster only next to a character
# that can extend or join one (Grapheme_Cluster_Break Extend, ZWJ, SpacingMark, Prepend,
# Regional_Indicator, Hangul L/V/T); text without them (plain English, Chinese) is left alone.
_EXTENDER_CLASS = (
    r"[\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}\p{GCB=Prepend}"
    r"\p{GCB=Regional_Indicator}\p{GCB=L}\p{GCB=V}\p{GCB=T}]"
)


@lru_cache(maxsize=1)
def _grapheme_patterns():
    """(quick test, runs of extenders, one grapheme cluster). The quick test is a standard
    ``re`` class of the extenders of the Basic Multilingual Plane plus every astral character
    (emoji modifiers, flags and tags are astral): ~30x faster than the ``regex`` module's
    property classes on text without any."""
    import regex

    runs = regex.compile(_EXTENDER_CLASS + "+")
    bmp = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x10000)))
    ranges = "".join(
        re.escape(bmp[m.start()]) + "-" + re.escape(bmp[m.end() - 1]) for m in runs.finditer(bmp)
    )
    quick = re.compile(f"[{ranges}\U00010000-\U0010ffff]")
    return quick, runs, regex.compile(r"\X")


def _grapheme_clusters(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """The extended grapheme clusters of ``text[start:end]`` that hold more than one code
    point (an emoji ZWJ sequence, a flag, a letter with combining marks, a Hangul jamo
    syllable), as sorted ``(start, end)`` character spans; every other position of the range
    is a grapheme boundary. Linear time; ``[]`` at once for text without combining or joining
    characters. ``start`` must be a grapheme boundary (0 or a span edge from this module)."""
    end = len(text) if end is None else end
    if text.isascii():  # O(1): no ASCII character extends or joins a cluster
        return []
    quick, runs, grapheme = _grapheme_patterns()
    if not has_char(quick, text, start, end):
        return []
    clusters: list[Span] = []
    # Only windows around runs of extenders (one character either side) can hold clusters.
    lo = hi = -1
    for m in runs.finditer(text, start, end):
        s, e = max(start, m.start() - 1), min(end, m.end() + 1)
        if s <= hi:
            hi = e
            continue
        if hi > lo:
            clusters.extend(
                g.span() for g in grapheme.finditer(text, lo, hi) if g.end() - g.start() > 1
            )
        lo, hi = s, e
    if hi > lo:
        clusters.extend(
            g.span() for g in grapheme.finditer(text, lo, hi) if g.end() - g.start() > 1
        )
    return clusters


def _snap_spans(spans: list[Span], clusters: list[Span]) -> list[Span]:
    """Move the edges of sorted, non-overlapping ``spans`` that fall inside a grapheme cluster
    to the cluster's edges: an end forward (the cluster stays with the span it starts in), a
    start to where the span before now ends or back to the cluster's start (a space carrying a
    combining mark). Spans left empty are dropped; together the spans still cover every
    character they covered, without overlap."""
    if not clusters or not spans:
        return spans
    arr = np.asarray(spans, dtype=np.int64)
    a, b = _snap_arrays(arr[:, 0], arr[:, 1], clusters)
    return list(zip(a.tolist(), b.tolist()))


def _snap_arrays(
    starts: np.ndarray, ends: np.ndarray, clusters: list[Span]
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_snap_spans` on ``(n,) int64`` arrays of starts and ends (new arrays)."""
    if not clusters or not len(starts):
        return starts, ends
    c = np.asarray(clusters, dtype=np.int64)
    a, b = starts.copy(), ends.copy()
    i = np.searchsorted(c[:, 0], a, side="right") - 1
    inside = (i >= 0) & (c[np.maximum(i, 0), 0] < a) & (a < c[np.maximum(i, 0), 1])
    a[inside] = c[i[inside], 0]
    i = np.searchsorted(c[:, 0], b, side="left") - 1
    inside = (i >= 0) & (b < c[np.maximum(i, 0), 1])
    b[inside] = c[i[inside], 1]
    a[1:] = np.maximum(a[1:], b[:-1])
    keep = b > a
    return a[keep], b[keep]


def _word_spans(
    text: str, wre: re.Pattern, clusters: list[Span], start: int = 0, end: int | None = None
) -> list[Span]:
    """Word spans of ``text[start:end]`` under ``wre``, widened to the grapheme ``clusters``
    of the text (a word never ends inside one: a CJK character keeps its combining marks, an
    emoji its modifier)."""
    end = len(text) if end is None else end
    words = [m.span() for m in wre.finditer(text, start, end)]
    return _snap_spans(words, clusters)


def _partition_to_spans(text: str, starts: list[int]) -> list[Span]:
    """Turn sorted boundary positions into stripped, non-empty spans that partition the text."""
    bounds = sorted(set(starts) | {0}) + [len(text)]
    if len(bounds) < 64:
        return _stripped_pieces(text, bounds)
    # many pieces: the first and last non-space character of each, found with the text's words
    # (a position holds a non-space character when it lies inside a word)
    ws, we = _space_words(text)
    b = np.asarray(bounds, dtype=np.int64)
    a, z = b[:-1], b[1:] - 1  # each piece's first and last position
    k = np.searchsorted(ws, a, side="right") - 1
    at_a = (k >= 0) & (a < we[np.maximum(k, 0)])
    nxt = np.searchsorted(ws, a, side="left")
    first = np.where(at_a, a, np.append(ws, len(text))[nxt])
    k = np.searchsorted(ws, z, side="right") - 1
    ok_k = k >= 0
    at_z = ok_k & (z < we[np.maximum(k, 0)])
    prev = np.where(ok_k, we[np.maximum(k, 0)] - 1, -1)  # the end of the last word before
    last = np.where(at_z, z, prev)
    ok = last >= first
    return list(zip(first[ok].tolist(), (last[ok] + 1).tolist()))


def _guard_punct_runs(text: str) -> str:
    """``text`` with every run of more than 8 sentence marks holding ``!`` or ``?`` cut to its
    first 8 marks followed by spaces: the same length, so nupunkt's offsets stay valid, and
    nupunkt (quadratic in such runs) sees short runs only."""

    def _cut(m: re.Match) -> str:
        run = m.group()
        if "!" not in run and "?" not in run and not re.search("[\u203c\u2047-\u2049]", run):
            return run
        return run[:_MAX_PUNCT_RUN] + " " * (len(run) - _MAX_PUNCT_RUN)

    return _PUNCT_RUN_RE.sub(_cut, text)


def _guard_dense_runs(text: str) -> str:
    """``text`` with the middle sentence marks of every dense whitespace-free run replaced by
    commas: the same length, so nupunkt's offsets stay valid.

    nupunkt scans, for each sentence mark (``. ! ? …``), the rest of the whitespace-free run
    it stands in, so a run of ``k`` marks and ``n`` characters costs it ``k * n``: quadratic on
    ``'."' * 100_000`` (43 s), ``.)``, ``.]``, ``!)``, ``!!!!!!!!a``, ``..``. A run longer than
    :data:`DENSE_RUN_CHARS` with more than ``2 * DENSE_RUN_KEEP`` marks keeps its first and last
    :data:`DENSE_RUN_KEEP` marks (where nupunkt looks for a break); the others become ``,``.
    Runs within those limits, all ordinary prose, are left as they are.
    """
    out = None
    for m in _LONG_RUN_RE.finditer(text):
        marks = [c.start() for c in _SENT_MARK_RE.finditer(text, m.start(), m.end())]
        if len(marks) <= 2 * DENSE_RUN_KEEP:
            continue
        if out is None:
            out = list(text)
        for i in marks[DENSE_RUN_KEEP:-DENSE_RUN_KEEP]:
            out[i] = ","
    return text if out is None else "".join(out)


# -- "rules": a sentence splitter of a few rules, one regular expression pass ---------------------
# A candidate end: sentence marks, closing quotes or brackets, whitespace, then what opens a
# sentence (an opening quote or bracket, an uppercase letter or a digit); or a blank line.
_RULE_END_RE = regex.compile(
    r"(?<![.!?\u2026\u203c\u2047-\u2049])([.!?\u2026\u203c\u2047-\u2049]++)"  # whole runs only
    r"[\"'\u2019\u201d)\]\u00bb]*+[ \t\f\v\r\n\u00a0\u2028\u2029]++"
    r"(?=[\"'\u2018\u201c(\[\u00ab\u00bf\u00a1]*+[\p{Lu}\p{Lt}\p{Lo}\d])"
    # a lone full stop before a lowercase word ends a sentence too (unless an abbreviation);
    # after ! ? or an ellipsis a lowercase word goes on ("'Hi!' he said", "and so... on")
    r"|(?<![.!?\u2026])(\.)[ \t\f\v\r\n\u00a0\u2028\u2029]++(?=\p{Ll})"
    r"|\n[ \t\f\v\r]*+\n\s*+"
)
# Words whose full stop does not end a sentence: titles and common abbreviations, and one
# capital letter (an initial: "J. R. R. Tolkien"), but "I" ("says I. Daniel went...").
_RULE_ABBREVIATIONS = frozenset(
    "mr mrs ms mme mlle dr st jr sr prof rev gen col capt lt sgt mt ft vs etc al ed eds no nos "
    "vol vols pp cf fig figs inc ltd co corp dept univ approx jan feb mar apr jun jul aug sep "
    "sept oct nov dec e.g i.e a.m p.m u.s u.k".split()
)
_RULE_OPENERS = "\"'\u2018\u201c([\u00ab"


def _rules_spans(text: str) -> list[Span]:
    """Sentence starts by rules (the ``"rules"`` backend of :func:`split_sentences`)."""
    starts = [0]
    count = text.count
    for m in _RULE_END_RE.finditer(text):
        j, e = m.span()
        if (m.group(1) == "." or m.group(2)) and (
            count("\n", j, e) < 2 or not BLANK_LINE_RE.search(text, j, e)
        ):
            # after an abbreviation or an initial: no end (a blank line still is one)
            seg = text[max(0, j - 12) : j]
            word = "" if not seg or seg[-1].isspace() else seg.rsplit(None, 1)[-1]
            word = word.lstrip(_RULE_OPENERS).lower()
            if word in _RULE_ABBREVIATIONS or (len(word) == 1 and word.isalpha() and word != "i"):
                continue
        starts.append(e)
    return _partition_to_spans(text, starts)


def _nupunkt_spans(text: str) -> list[Span]:
    import nupunkt

    guarded = _guard_dense_runs(_guard_punct_runs(text))
    return _partition_to_spans(text, [a for a, _ in nupunkt.sent_spans(guarded)])


def _split_spaceless(text: str, spans: list[Span], clusters: list[Span]) -> list[Span]:
    """Cut the spans that hold Chinese, Japanese or Thai-like text further: after CJK sentence
    marks (。！？), at spaces between Thai-like characters, and into pieces of at most
    :data:`MAX_SPACELESS_SENTENCE_CHARS` characters where a run has no such break. Spans
    without those scripts are kept as they are."""
    out: list[Span] = []
    for a, b in spans:
        if _SPACELESS_RE.search(text, a, b) is None:
            out.append((a, b))
            continue
        cuts = [m.end() for m in _CJK_END_RE.finditer(text, a, b) if m.end() < b]
        cuts += [m.end() for m in _SEA_SPACE_RE.finditer(text, a, b)]
        for s, e in _partition_to_spans_within(text, a, b, cuts):
            if e - s > MAX_SPACELESS_SENTENCE_CHARS and _SPACELESS_RE.search(text, s, e):
                out.extend(_cut_long(text, s, e, clusters))
            else:
                out.append((s, e))
    return out


def _partition_to_spans_within(text: str, a: int, b: int, cuts: list[int]) -> list[Span]:
    return _stripped_pieces(text, [a, *sorted(set(c for c in cuts if a < c < b)), b])


def _stripped_pieces(text: str, bounds: list[int]) -> list[Span]:
    """The pieces of ``text`` between consecutive ``bounds`` (sorted positions), each stripped
    of its spaces (:func:`_strip_span`), the empty ones left out."""
    pieces = (_strip_span(text, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]))
    return [s for s in pieces if s is not None]


def _cut_long(text: str, a: int, b: int, clusters: list[Span]) -> list[Span]:
    """Cut ``[a, b)`` into pieces of at most MAX_SPACELESS_SENTENCE_CHARS characters, each at
    the last clause mark, space or line break of its second half if there is one, never inside
    a grapheme cluster (Thai vowels and tone marks stay on their letter, an emoji sequence
    whole); a single cluster longer than the limit is one piece."""
    limit = MAX_SPACELESS_SENTENCE_CHARS
    c_starts = np.asarray([s for s, _ in clusters], dtype=np.int64)
    pieces: list[Span] = []
    lo = a
    while b - lo > limit:
        hi = lo + limit
        cut = None
        for m in _SOFT_BREAK_RE.finditer(text, lo + limit // 2, hi):
            cut = m.end()
        if cut is None:
            cut = hi
        i = int(np.searchsorted(c_starts, cut, side="right")) - 1
        if i >= 0 and clusters[i][0] < cut < clusters[i][1]:
            # never inside a grapheme cluster: before it, or after it when it starts the piece
            g0, g1 = clusters[i]
            cut = g0 if g0 > lo else g1
        s = _strip_span(text, lo, cut)
        if s is not None:
            pieces.append(s)
        lo = cut
    s = _strip_span(text, lo, b)
    if s is not None:
        pieces.append(s)
    return pieces


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
    backend : {"auto", "nupunkt", "stanza", "rules"}
        ``"auto"`` and ``"nupunkt"``: nupunkt's pre-trained Punkt model (offline, ~3 MB/s on one
        core, handles "Dr.", "e.g.", "U.S."). ``"stanza"``: the splitter the YOURA paper uses
        (Soh et al., 2024, arXiv:2409.13695, sec. 3.3); only when stanza's English models are
        installed. ``"rules"``: one regular-expression pass, about 12x nupunkt's speed: a
        sentence ends at ``. ! ? …`` (with closing quotes or brackets) followed by whitespace and
        an uppercase letter, a digit or an opening quote, except after a common abbreviation or
        an initial, and at every blank line; on War and Peace 98% of its boundaries are
        nupunkt's (MixPR's default chunker, ``MixPRConfig.sentences``).

    Returns
    -------
    list of (start, end)
        Character offsets, end exclusive, in document order. Spans start and end on non-space
        characters, do not overlap, and together cover every non-space character exactly once.
        Every edge is an extended grapheme cluster boundary (Unicode UAX #29): an emoji
        sequence, a flag or a letter with its combining marks is never cut, and a cluster longer
        than any limit (``"中" + "\\u0301" * 5000``) is one span. A span starts with a space
        only when that space carries combining marks (one cluster, a standalone accent).
        Linear time on any input, punctuation runs included (see ``docs/notes/text.md``).

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
    return _sentences_and_scripts(text, backend)[0]


def _sentences_and_scripts(text: str, backend: str) -> tuple[list[Span], tuple | None]:
    """``(sentences, scripts)`` of a checked ``text``: the spans of :func:`split_sentences`
    (``backend`` checked) and the text's :func:`_scripts` (``None`` for a text of spaces only,
    which has no sentence)."""
    check_choice(backend, "backend", SENTENCE_BACKENDS)
    if _NONSPACE_RE.search(text) is None:
        return [], None
    scripts = _scripts(text)
    return _split_sentences(text, backend, *scripts), scripts


def _scripts(text: str) -> tuple[list[Span], bool]:
    """``(clusters, spaceless)``: the grapheme clusters of ``text`` (:func:`_grapheme_clusters`)
    and whether it holds CJK or Thai-like characters (computed once for the sentence splitter
    and the chunker, from the text's distinct characters when it is long)."""
    return _grapheme_clusters(text), has_char(_SPACELESS_RE, text)


def _split_sentences(text: str, backend: str, clusters: list[Span], spaceless: bool):
    """:func:`split_sentences` of a checked text holding a non-space character, with its
    :func:`_scripts`."""
    if backend == "stanza":
        spans = _stanza_spans(text)
    elif backend == "rules":
        spans = _rules_spans(text)
    else:
        spans = _nupunkt_spans(text)
    if spaceless:
        spans = _split_spaceless(text, spans, clusters)
    return _snap_spans(spans, clusters)


class _Words:
    """The words of ranges of a text as arrays, for the chunker's long sentences (a 20 MB line
    without punctuation is one sentence of millions of words)."""

    def __init__(self, text: str, wre: re.Pattern, clusters: list[Span], all_words=None):
        self.text, self.wre, self.clusters = text, wre, clusters
        self._all: tuple[np.ndarray, np.ndarray] | None = all_words  # _space_words(text)

    def spans(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """Starts and ends of the words of ``text[start:end]``: those of
        ``_word_spans(text, wre, clusters, start, end)``."""
        text = self.text
        if self.clusters or self.wre is not _WORD_RE:
            arr = np.fromiter(
                (x for m in self.wre.finditer(text, start, end) for x in m.span()), dtype=np.int64
            ).reshape(-1, 2)
            return _snap_arrays(arr[:, 0], arr[:, 1], self.clusters)
        if self._all is None:
            self._all = _space_words(text)  # the words of the whole text, once
        starts, ends = self._all
        i, j = np.searchsorted(starts, [start, end], side="left").tolist()
        a, b = starts[i:j], np.minimum(ends[i:j], end)
        if start < end and not text[start].isspace() and (i == j or starts[i] != start):
            # the range starts inside a word: its rest is a word of the range
            a = np.concatenate([[start], a])
            b = np.concatenate([[min(int(ends[i - 1]), end)], b])
        return a, b


def chunk_words(
    text: str,
    max_words: int = 32,
    *,
    sentences: list[Span] | None = None,
    backend: str = "auto",
    split_lines: bool = True,
    min_words: int | None = None,
) -> list[Span]:
    """MixPR's chunking: sentences, then newlines, then equal pieces along word boundaries.

    Source: Alonso and Millidge, 2024, arXiv:2412.06078, sec. 3 "Chunking method": "first chunks the text into
    sentences. Any chunks that are greater than N words are then chunked along newline characters.
    If any chunks are still greater than N words, these are split into smaller chunks of roughly
    equal length along word boundaries. We set N=32." A word is a run of non-space characters.

    ``split_lines=False`` unwraps hard-wrapped text: the newline step cuts a long sentence at
    paragraph breaks (blank lines) only, a single line break counts as a space, and pieces still
    over N words are cut into equal word pieces. Use it for hard-wrapped text (Project Gutenberg
    books, e-mails, terminal output), where line breaks fall every ~70 characters inside
    sentences and the paper's newline step returns line fragments ("Prince", "It did not")
    instead of pieces of the sentence.

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
    split_lines : bool, default True
        True: the paper's newline step (every line break) for sentences over N words. False: split
        them at blank lines only, then into equal word pieces.
    min_words : int >= 1, optional
        Not in the paper (None: off). After the steps above, a chunk is joined to the one before
        it when either holds fewer than ``min_words`` words, the two together hold at most
        ``max_words`` and no blank line lies between them, so dialogue lines ("'You did,' said
        the Mock Turtle.") become parts of ~N-word chunks. It also buries short inserted facts
        in the surrounding text: MixPR's bAbI qa2 recall in 16k tokens drops from 1.00 to 0.10
        with ``min_words=16`` (20 questions, ``benchmarks/MIXPR_DEFAULTS.md``), so MixPR keeps it
        off.

    Returns
    -------
    list of (start, end)
        Character spans in document order, each with 1..``max_words`` words, covering every
        non-space character exactly once, every edge a grapheme cluster boundary (a word is
        widened to whole clusters: a CJK character keeps its combining marks, a Thai run of
        :data:`SEA_WORD_CHARS` characters its vowel and tone marks).

    Memory beyond the text and its sentences: 16 bytes a word, with sentence punctuation or none
    (``docs/notes/text.md``, "Text without sentence punctuation").

    Raises
    ------
    TypeError, ValueError
        If ``text`` is not a ``str``, ``max_words`` or ``min_words`` is not an int >= 1 or
        ``split_lines`` is not a bool.
    """
    check_text(text, "text", allow_empty=True)
    max_words = check_int(max_words, "max_words", minimum=1)
    all_words = None
    if min_words is not None:
        min_words = check_int(min_words, "min_words", minimum=1)
    if not isinstance(split_lines, bool):
        raise TypeError(f"split_lines must be a bool, got {type(split_lines).__name__}")
    scripts = None
    if sentences is None:
        sentences, scripts = _sentences_and_scripts(text, backend)
    if not sentences:
        return []
    clusters, spaceless = scripts or _scripts(text)
    # Word start positions of the whole text, once; a sentence's word count is then two bisections.
    wre = _INTL_WORD_RE if spaceless else _WORD_RE  # word_re(text)
    if clusters:
        word_starts = np.asarray([a for a, _ in _word_spans(text, wre, clusters)], dtype=np.int64)
    elif wre is _WORD_RE:
        all_words = _space_words(text)
        word_starts = all_words[0]
    else:
        word_starts = np.fromiter((m.start() for m in wre.finditer(text)), dtype=np.int64)
    sent = np.asarray(sentences, dtype=np.int64)
    first = np.searchsorted(word_starts, sent[:, 0], side="left")
    last = np.searchsorted(word_starts, sent[:, 1], side="left")
    n_words = last - first
    if not split_lines and all_words is not None:
        chunks = _unwrapped_pieces(text, sentences, sent, n_words, all_words, max_words)
    else:
        words = _Words(text, wre, clusters, all_words)
        chunks = _sentence_pieces(text, sentences, n_words, words, max_words, split_lines)
    if min_words is not None and min_words > 1:
        chunks = _merge_short(text, chunks, word_starts, min_words, max_words)
    return chunks


def _sentence_pieces(
    text: str,
    sentences: list[Span],
    n_words: np.ndarray,
    words: _Words,
    max_words: int,
    split_lines: bool,
) -> list[Span]:
    """:func:`chunk_words`' chunks sentence by sentence (any text): a sentence of at most
    ``max_words`` words (``n_words``) as it is, a longer one cut at its lines
    (``split_lines``) or paragraphs, then into equal word pieces."""
    chunks: list[Span] = []
    for (a, b), n in zip(sentences, n_words.tolist()):
        if n <= max_words:
            chunks.append((a, b))
            continue
        if split_lines:
            parts = (m.span() for m in _LINE_RE.finditer(text, a, b))
        else:
            parts = _paragraphs(text, a, b)
        for s, e in parts:
            starts, ends = words.spans(s, e)
            if len(starts):
                chunks.extend(_equal_word_pieces(starts, ends, max_words))
    return chunks


def split_long_spans(
    text: str,
    spans: list[Span],
    max_tokens: int,
    token_counter=None,
) -> list[Span]:
    """Cut the spans longer than ``max_tokens`` into near-equal pieces along word boundaries.

    A unit longer than a token budget or a model window (a 200 KB paragraph without punctuation
    is one "sentence") would otherwise come back whole or never fit; this keeps every unit within
    ``max_tokens`` while cutting only between words (runs of non-space characters).

    Parameters
    ----------
    text : str
        The text the spans index into.
    spans : list of (start, end)
        Character spans into ``text`` (end exclusive), e.g. :func:`split_sentences`'s.
    max_tokens : int >= 1
        Most tokens a piece may hold, as counted by ``token_counter``.
    token_counter : callable str -> int, optional
        Default :func:`longctx.tokens.count_tokens` (SmolLM2's tokens); pass
        ``longctx.tokens.hf_token_counter(tokenizer)`` for another model's tokens.

    Returns
    -------
    list of (start, end)
        In the order of ``spans``. A span within ``max_tokens`` is kept as given; a longer one is
        replaced by ``ceil(tokens / max_tokens)`` or a few more pieces of near-equal token counts,
        each starting and ending on a non-space character, together covering every non-space
        character of the span exactly once. A piece exceeds ``max_tokens`` only when it is a
        single word longer than that.

    Raises
    ------
    TypeError, ValueError
        If ``text`` is not a ``str``, ``max_tokens`` is not an int >= 1, or a span is not a pair
        of ints with ``0 <= start <= end <= len(text)``.
    """
    from longctx.tokens import count_tokens

    check_text(text, "text", allow_empty=True)
    max_tokens = check_int(max_tokens, "max_tokens", minimum=1)
    counter = token_counter or count_tokens
    if not callable(counter):
        raise TypeError(f"token_counter must be callable (str -> int), got {type(counter)}")
    out: list[Span] = []
    clusters = _LazyClusters(text)
    for span in spans:
        try:
            a, b = (int(x) for x in span)
        except (TypeError, ValueError):
            raise ValueError(f"spans must hold (start, end) pairs of ints, got {span!r}") from None
        if not 0 <= a <= b <= len(text):
            raise ValueError(f"span {(a, b)} is outside the text (length {len(text)})")
        out.extend(_split_span(text, a, b, max_tokens, counter, clusters))
    return out


class _LazyClusters:
    """The grapheme clusters of a text, computed on first use (only a span to cut needs them)."""

    def __init__(self, text: str):
        self._text = text
        self._clusters: list[Span] | None = None

    def get(self) -> list[Span]:
        if self._clusters is None:
            self._clusters = _grapheme_clusters(self._text)
        return self._clusters


def _split_span(
    text: str, a: int, b: int, max_tokens: int, counter, clusters: _LazyClusters
) -> list[Span]:
    if counter(text[a:b]) <= max_tokens:
        return [(a, b)]
    wre = _INTL_WORD_RE if _SPACELESS_RE.search(text, a, b) else _WORD_RE
    words = _word_spans(text, wre, clusters.get(), a, b)
    if len(words) <= 1:
        return [(a, b)]
    # Each word is counted with the whitespace before it (" word" is one token where "word"
    # alone may be two under a byte-level BPE), so the counts add up to the piece's count.
    lead = [a] + [e for _, e in words[:-1]]
    counts = np.fromiter(
        (counter(text[p:e]) for p, (_, e) in zip(lead, words)), dtype=np.int64, count=len(words)
    )
    pieces = []
    for lo, hi in _balanced_cuts(counts, max_tokens):
        s, e = words[lo][0], words[hi - 1][1]
        # A model tokenizer may count a piece above the sum of its words: cut that piece again.
        if hi - lo > 1 and counter(text[s:e]) > max_tokens:
            pieces.extend(_split_span(text, s, e, max(1, max_tokens - 1), counter, clusters))
        else:
            pieces.append((s, e))
    return pieces


def _balanced_cuts(counts: np.ndarray, max_tokens: int) -> list[Span]:
    """Word-index ranges ``[lo, hi)`` of near-equal token sums, each <= ``max_tokens`` unless
    it is one word."""
    n_words = len(counts)
    cum = np.cumsum(counts)
    total = int(cum[-1])
    first = max(1, -(-total // max_tokens))
    for n_pieces in range(first, min(n_words, first + 16) + 1):
        targets = total * np.arange(1, n_pieces) / n_pieces
        cuts = np.unique(np.clip(np.searchsorted(cum, targets, side="left") + 1, 1, n_words - 1))
        bounds = [0, *cuts.tolist(), n_words]
        ranges = [(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
        sums = [int(cum[hi - 1] - (cum[lo - 1] if lo else 0)) for lo, hi in ranges]
        if all(s <= max_tokens or hi - lo == 1 for s, (lo, hi) in zip(sums, ranges)):
            return ranges
    # Greedy packing (always valid) when balanced cuts keep overshooting.
    ranges, lo, used = [], 0, 0
    for i, c in enumerate(counts.tolist()):
        if i > lo and used + c > max_tokens:
            ranges.append((lo, i))
            lo, used = i, 0
        used += c
    ranges.append((lo, n_words))
    return ranges
