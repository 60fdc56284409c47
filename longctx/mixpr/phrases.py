"""Phrases of a text found without a model, and the passage-phrase graph of a corpus.

:class:`PhraseExtractor` finds the names a text mentions: capitalised spans ("Kiss and Tell",
"Shirley Temple", "No. 2 Squadron RAAF") and their sub-spans, with one regular expression and no
tagger, and the phrases a passage is *about* (its heads: a title line, else its first
capitalised span). :class:`PhraseGraph` is the incidence of units (passages) and phrases,
built in one pass over the text (:meth:`PhraseGraph.from_texts`), extended and cut by rows for
inserts and deletes; :mod:`longctx.mixpr.multihop` walks it. The phrase nodes stand where
HippoRAG puts the entities an LLM extracts (Gutierrez et al., 2024, arXiv:2405.14831).

Every structure here is linear in the text: the extractor emits at most ``max_words *
(max_words + 1) / 2`` sub-spans per capitalised run, and the graph holds one entry per
(unit, phrase) mention.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain, compress, islice, repeat

import numpy as np
import scipy.sparse as sp

from longctx.checks import check_int
from longctx.terms import fold_accents_unicode

__all__ = ["CONNECTORS", "PhraseExtractor", "PhraseGraph", "unit_heads"]

#: lower-case words that may join capitalised words inside a name ("Bank of America",
#: "Ludwig van Beethoven", "Kiss and Tell"); never at a phrase's edge
CONNECTORS = frozenset(
    "of the and de del della der den di da das dos du la le les von van y for &".split()
)
#: capitalised words that are no name on their own (sentence starts, pronouns, question words)
_STOP = frozenset(
    """a an the this that these those he she it they we i you his her its their our my your
    in on at by for of to from with as and or but if when where who whom whose which what why
    how is was are were be been being has have had do does did not no yes there here then than
    after before during while since until also however although though both either neither
    each every all any some many most more other such one two three first second new""".split()
)
_UPPER = re.escape("".join(chr(c) for c in range(0x10000) if chr(c).isupper()))
_UPPER_RE = re.compile(f"[{_UPPER}]")
# a word: letters/digits, with inner apostrophes, hyphens, dashes, periods or ampersands
_WORD_RE = re.compile(r"[^\W_](?:[\w'’\-–.&]*[^\W_])?")
# a run of capitalised words, numbers and (inside) connectors, single spaces between them; a
# capitalised word of one or two letters may keep its period ("Roger O. Egeberg", "St. Louis")
_ELEM = rf"(?:[{_UPPER}][^\W\d_]?\.(?= )|[{_UPPER}][\w'’\-–&]*|\d[\w\-–]*)"
_CONN = "|".join(re.escape(c) for c in sorted(CONNECTORS, key=len, reverse=True))
# ``(?<![\w'’\-–]){_ELEM}(?: (?:(?:{_CONN}) ){{0,3}}{_ELEM})*`` with its first character taken
# before the look-behind (which then spans two characters): a pattern that opens with a
# character class lets the regex engine skip to the next capital or digit in C, instead of
# trying the look-behind at every character (a third of the build's regex time; the same
# matches, tests/test_phrases_fast.py)
_FIRST = (
    rf"[{_UPPER}\d](?<![\w'’\-–].)"
    rf"(?:(?<=[{_UPPER}])(?:[^\W\d_]?\.(?= )|[\w'’\-–&]*)|(?<=\d)[\w\-–]*)"
)
_RUN_RE = re.compile(rf"{_FIRST}(?: (?:(?:{_CONN}) ){{0,3}}{_ELEM})*")
#: units whose runs one step of :meth:`PhraseGraph._parts` holds at once (bounds its memory)
_BLOCK_UNITS = 8192
# the texts of a block are searched joined by NUL: no run holds it or stops before it otherwise
# than at a text's end, and the search finds it as a run of its own (:func:`_block_runs`)
_SEP = "\x00"
_SEP_RUN_RE = re.compile(f"{_SEP}|{_RUN_RE.pattern}")


def _norm(text: str) -> list[str]:
    """Lower-cased, accent-folded words of ``text`` (split on spaces), possessive ``'s`` and a
    final period dropped."""
    if text.isascii():
        text = text.lower()
    else:
        text = fold_accents_unicode(unicodedata.normalize("NFC", text.replace("’", "'").lower()))
    words = text.split()
    if "'" in text or "." in text or "-" in text or "–" in text:
        words = [w[:-2] if w.endswith("'s") else w for w in words]
        words = [w for w in (w.rstrip(".'-–") for w in words) if w]
    return words


def _drop_qualifier(line: str) -> str:
    """``line`` less a trailing ``(qualifier)`` (no parenthesis inside) and the whitespace around
    it: ``re.sub(r"\\s*\\([^()]*\\)\\s*$", "", line)`` in one pass (that expression retried its
    ``\\s*`` from every blank of a long run of them: quadratic in the run)."""
    s = line.rstrip()
    j = s.rfind("(") if s.endswith(")") else -1
    if j < 0 or ")" in s[j + 1 : -1]:
        return line
    return s[:j].rstrip()


def _title_line(text: str, max_words: int) -> str | None:
    """The first line of ``text`` (stripped) when it has at most ``max_words`` words and more
    text follows it, else ``None``: ``first, sep, rest = text.strip().partition("\\n")`` and
    ``sep and rest.strip() and 0 < len(first.split()) <= max_words``, without copying the rest
    or splitting a long line. (After ``strip`` the text ends with a non-blank character, so
    a newline in it has text after it, and the text starts with one, so the line has a word.)"""
    text = text.strip()
    end = text.find("\n")
    if end < 0:
        return None
    first = text[:end]
    return first if len(first.split(None, max_words)) <= max_words else None


def _norm_token(tok: str) -> str:
    words = _norm(tok)
    return words[0] if words else ""


@dataclass(frozen=True)
class PhraseExtractor:
    """Capitalised spans of a text and their sub-spans, normalised (lower case, accents folded,
    possessive ``'s`` dropped), with no model.

    A span is a run of words each capitalised, a number, or (inside the run) a connector of
    :data:`CONNECTORS`; punctuation ends it, except the period after a capitalised word of one
    or two letters ("Roger O. Egeberg", "St. Louis"). Edge connectors and the stop words that
    open a sentence ("The", "In", "He") are trimmed; a span needs a capitalised word that is not
    a stop word.

    Attributes
    ----------
    max_words : int >= 1, default 6
        Longest phrase, in words; longer runs give only their sub-spans.
    min_words : int >= 1, default 1
        Shortest sub-span emitted (a whole span is always emitted when it fits ``max_words``).
    subspans : bool, default True
        Also emit every sub-span that starts and ends with a capitalised word or a number
        ("Shirley Temple Black" gives "shirley temple" too), so a name written in full links
        to its shorter mentions. Quadratic in the span, bounded by ``max_words``.
    max_head_words : int >= 1, default 12
        A first line of at most this many words, followed by more text, is the passage's title
        (its head phrase); otherwise the head is the first capitalised span.
    """

    max_words: int = 6
    min_words: int = 1
    subspans: bool = True
    max_head_words: int = 12

    def __post_init__(self):
        check_int(self.max_words, "max_words", minimum=1)
        check_int(self.min_words, "min_words", minimum=1)
        check_int(self.max_head_words, "max_head_words", minimum=1)

    def _runs(self, text: str) -> Iterable[list[str]]:
        """Runs of normalised words (capitalised words, numbers, inner connectors)."""
        for m in _RUN_RE.finditer(text):
            yield _norm(m.group())

    def _spans_of_run(self, run: list[str], out: list[str]) -> None:
        # trim connectors and stop words at the edges
        lo, hi = 0, len(run)
        while lo < hi and (run[lo] in _STOP or run[lo] in CONNECTORS):
            lo += 1
        while hi > lo and (run[hi - 1] in _STOP or run[hi - 1] in CONNECTORS):
            hi -= 1
        n = hi - lo
        if n == 1:  # most runs: one word
            w = run[lo]
            if len(w) > 1 and not w[0].isdigit():
                out.append(w)
            return
        if n == 0:
            return
        run = run[lo:hi]
        # a word that carries the name: not a number, a connector or a stop word
        name = [not (w[0].isdigit() or w in CONNECTORS or w in _STOP) for w in run]
        if not any(name):
            return
        if n <= self.max_words:
            out.append(" ".join(run))
        if not self.subspans:
            return
        edge = [w not in CONNECTORS for w in run]
        for i in range(n):
            if not edge[i]:
                continue
            for j in range(i + self.min_words, min(n, i + self.max_words) + 1):
                if (i == 0 and j == n) or not edge[j - 1]:
                    continue
                if j - i == 1:
                    if name[i] and len(run[i]) > 1:
                        out.append(run[i])
                elif any(name[i:j]):
                    out.append(" ".join(run[i:j]))

    def phrases(self, text: str) -> list[str]:
        """Every phrase mentioned in ``text``, in order, repeats kept."""
        out: list[str] = []
        for m in _RUN_RE.finditer(text):
            self._spans_of_run(_norm(m.group()), out)
        return out

    def _run_phrases(self, run: str) -> list[str]:
        """The phrases of one match of :data:`_RUN_RE`, in order."""
        out: list[str] = []
        self._spans_of_run(_norm(run), out)
        return out

    def _title_heads(self, text: str) -> list[str] | None:
        """The heads of ``text`` read from its title line (:meth:`heads`), or ``None`` when it
        does not start with one."""
        first = _title_line(text, self.max_head_words)
        if first is None:
            return None
        if "," in first or ")" in first:  # the line, less a (qualifier), before a comma
            names = dict.fromkeys([first, _drop_qualifier(first), first.split(",")[0]])
        else:  # most lines: the three are one
            names = (first,)
        out = []
        for name in names:
            if name.isascii() and name.replace(" ", "").isalnum():
                toks = name.lower().split()  # what the line below gives for such a name
            else:
                toks = _norm(" ".join(_WORD_RE.findall(name)))
            while toks and toks[0] in _STOP:
                toks = toks[1:]
            if toks and len(toks) <= self.max_words:
                out.append(" ".join(toks))
        return out if len(out) < 2 else list(dict.fromkeys(out))

    def heads(self, text: str) -> list[str]:
        """The phrases ``text`` is about: its title line (when it starts with a line of at most
        ``max_head_words`` words followed by more text) with the title stripped of a trailing
        ``(qualifier)`` and of a ``, qualifier``; else its first capitalised span (the first of
        :meth:`phrases`)."""
        title = self._title_heads(text)
        if title is not None:
            return title
        spans: list[str] = []
        for run in self._runs(text):
            self._spans_of_run(run, spans)
            if spans:
                return spans[:1]
        return []

    def query_candidates(self, query: str, *, any_case: bool = False) -> list[str]:
        """Word n-grams of ``query`` (``n <= max_words``), normalised like the phrases, that
        hold a word capitalised in the query (not a stop word), or with ``any_case`` every
        n-gram (so that a name written in lower case still links: "the film kiss and tell")."""
        raw = _WORD_RE.findall(query)
        toks = [_norm_token(w) for w in raw]
        cap = [bool(_UPPER_RE.match(w)) and t not in _STOP for w, t in zip(raw, toks)]
        cap = [c or w[:1].isdigit() and any(cap) for c, w in zip(cap, raw)]
        out = []
        for i in range(len(toks)):
            if not toks[i] or toks[i] in _STOP or toks[i] in CONNECTORS:
                continue
            for j in range(i + 1, min(len(toks), i + self.max_words) + 1):
                if toks[j - 1] in CONNECTORS or toks[j - 1] in _STOP:
                    continue
                if any_case or any(cap[i:j]):
                    out.append(" ".join(toks[i:j]))
        return out


class PhraseGraph:
    """Which unit mentions which phrase, and which phrases each unit is about.

    Build with :meth:`from_texts`; the arrays can be saved and given back to the constructor
    (they are checked: a bad shape, a negative or non-finite entry or a repeated phrase is a
    ``ValueError`` naming the argument).

    Parameters
    ----------
    vocabulary : sequence of str
        The phrase of each column (unique). :meth:`from_texts` and the updates keep it sorted
        and hold only the phrases some unit holds.
    mentions : (n_units, n_phrases) sparse, float
        How often each unit mentions each phrase (:meth:`PhraseExtractor.phrases`).
    heads : (n_units, n_phrases) sparse, float
        Non-zero where the phrase is a head of the unit (:meth:`PhraseExtractor.heads`);
        stored as 1.

    Attributes
    ----------
    df : (n_phrases,) int64
        How many units mention or are headed by each phrase.
    """

    def __init__(self, vocabulary: Sequence[str], mentions, heads, *, _lookup=None):
        vocabulary = list(vocabulary)
        # (_lookup: the phrase -> column dict of vocabulary, from this module's own builds)
        if _lookup is None and not all(isinstance(p, str) for p in vocabulary):
            raise TypeError("vocabulary must hold str")
        lookup = dict(zip(vocabulary, range(len(vocabulary)))) if _lookup is None else _lookup
        if len(lookup) != len(vocabulary):
            raise ValueError("vocabulary must not repeat a phrase")
        mentions = _check_incidence(mentions, "mentions", len(vocabulary))
        heads = _check_incidence(heads, "heads", len(vocabulary))
        if heads.shape != mentions.shape:
            raise ValueError(
                f"heads has shape {heads.shape}, mentions {mentions.shape}: they must match"
            )
        heads.data[:] = 1.0
        self.vocabulary = vocabulary
        self.mentions = mentions
        self.heads = heads
        self._lookup = lookup
        both = sp.csr_array(mentions + heads)
        self.df = np.bincount(both.indices, minlength=len(vocabulary)).astype(np.int64)

    @property
    def n_units(self) -> int:
        return self.mentions.shape[0]

    @property
    def n_phrases(self) -> int:
        return len(self.vocabulary)

    def lookup(self, phrases: Iterable[str]) -> np.ndarray:
        """``(m,) int64`` sorted columns of the known ``phrases`` (unknown ones skipped, each
        column once)."""
        cols = {self._lookup[p] for p in phrases if p in self._lookup}
        return np.fromiter(sorted(cols), dtype=np.int64, count=len(cols))

    @classmethod
    def from_texts(
        cls, texts: Sequence[str], extractor: PhraseExtractor | None = None, *, heads=None
    ) -> PhraseGraph:
        """The graph of ``texts`` (one unit each, in order): one pass over the text.
        ``heads``: more head phrases per unit (:func:`unit_heads`), beside each text's own.

        Raises
        ------
        TypeError
            ``texts`` is a str, or holds something else than str.
        ValueError
            ``heads`` of another length than ``texts``.
        """
        return cls._build({}, texts, extractor, heads)

    def extend(self, texts: Sequence[str], extractor: PhraseExtractor | None = None) -> PhraseGraph:
        """A new graph with ``texts`` appended as units ``n_units, n_units + 1, ...``: what
        :meth:`from_texts` gives for all the texts (the same columns in the same order), at
        the cost of the new ones and one copy of the incidence arrays."""
        return self.splice(self.n_units, self.n_units, texts, extractor)

    def splice(
        self,
        lo: int,
        hi: int,
        texts: Sequence[str],
        extractor: PhraseExtractor | None = None,
        *,
        heads=None,
    ) -> PhraseGraph:
        """A new graph with units ``lo .. hi`` replaced by ``texts``: insert (``lo == hi``),
        delete (no ``texts``) and replace in one, at the cost of the new texts and one copy of
        the incidence arrays. The phrases no unit holds any more are dropped, and the columns
        keep the sorted order of :meth:`from_texts`: any sequence of inserts, replaces and
        deletes gives the graph (and the walk its scores) of a fresh build of the same units."""
        if not 0 <= lo <= hi <= self.n_units:
            raise ValueError(f"need 0 <= lo <= hi <= {self.n_units}, got lo={lo}, hi={hi}")
        vocab, new_m, new_h = PhraseGraph._parts(self._lookup, texts, extractor, heads)
        v = len(vocab)

        def widen(M):
            M = sp.csr_array(M)
            return sp.csr_array((M.data, M.indices, M.indptr), shape=(M.shape[0], v))

        parts_m = [widen(self.mentions[:lo]), new_m, widen(self.mentions[hi:])]
        parts_h = [widen(self.heads[:lo]), new_h, widen(self.heads[hi:])]
        return _canonical(
            vocab,
            sp.csr_array(sp.vstack(parts_m, format="csr")),
            sp.csr_array(sp.vstack(parts_h, format="csr")),
            owned=True,
        )

    def without(self, rows) -> PhraseGraph:
        """A new graph without the units ``rows`` (the others keep their order; phrases no unit
        holds any more are dropped, as in a fresh build of the units left)."""
        drop = np.zeros(self.n_units, dtype=bool)
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n_units):
            raise ValueError(f"rows must lie in [0, {self.n_units}), got {rows.tolist()[:5]}")
        drop[rows] = True
        keep = np.flatnonzero(~drop)
        return _canonical(self._lookup, self.mentions[keep], self.heads[keep], owned=False)

    @staticmethod
    def _build(lookup: dict, texts, extractor, more_heads=None) -> PhraseGraph:
        """The graph of ``texts`` in canonical order (:func:`_canonical`)."""
        return _canonical(*PhraseGraph._parts(lookup, texts, extractor, more_heads), owned=True)

    @staticmethod
    def _parts(
        lookup: dict, texts, extractor, more_heads=None
    ) -> tuple[dict, sp.csr_array, sp.csr_array]:
        """``(vocab, mentions, heads)`` of ``texts`` over ``vocab``: a copy of ``lookup``
        (phrase -> column) with the new phrases at new columns at the end; ``more_heads``: a
        list of extra head phrases per text (titles, headings, file names) or ``None``."""
        if isinstance(texts, str) or not all(map(isinstance, texts, repeat(str))):
            raise TypeError("texts must be a sequence of str (one per unit)")
        if more_heads is not None and len(more_heads) != len(texts):
            raise ValueError(f"heads must hold one list per text ({len(texts)})")
        ex = extractor or PhraseExtractor()
        vocab: dict[str, int] = dict(lookup)
        add = vocab.setdefault
        n = len(texts)
        # most runs repeat ("Alice", "Mr. Darcy"): each distinct run is normalised and cut into
        # phrases once, its columns kept here for the build (100k Gutenberg paragraphs: 708k
        # runs, 33k distinct)
        run_cols: dict[str, tuple] = {_SEP: ()}
        cols, counts = [], []
        hcols, hcounts = array("q"), array("q")
        units = iter(texts)
        extra = iter(more_heads) if more_heads is not None else None
        for _ in range(0, n, _BLOCK_UNITS):
            block = list(islice(units, _BLOCK_UNITS))
            flat, ends = _block_runs(block)
            distinct = list(dict.fromkeys(flat))  # the block's runs, each once
            for r in [r for r in distinct if r not in run_cols]:
                run_cols[r] = tuple(add(p, len(vocab)) for p in ex._run_phrases(r))
            got = list(map(run_cols.__getitem__, distinct))
            index = dict(zip(distinct, range(len(distinct))))
            b_cols, b_counts = _gather(
                np.fromiter(map(index.__getitem__, flat), np.int64, len(flat)),
                np.fromiter(map(len, got), np.int64, len(got)),
                np.fromiter(chain.from_iterable(got), np.int64),
                ends,
            )
            del flat, distinct, index, got
            cols.append(b_cols)
            counts.append(b_counts)
            # a unit without a title line is about its first phrase: its first mention
            first = np.full(len(block), -1, dtype=np.int64)
            has = b_counts > 0
            first[has] = b_cols[(np.cumsum(b_counts) - b_counts)[has]]
            first = first.tolist()
            more = list(islice(extra, len(block))) if extra is not None else None
            for j, hd in enumerate(map(ex._title_heads, block)):
                if hd is None:
                    hd = [first[j]] if first[j] >= 0 else []
                elif hd:
                    hd = [add(p, len(vocab)) for p in hd]
                if more is not None and more[j]:
                    hd = list(dict.fromkeys([*hd, *(add(p, len(vocab)) for p in more[j])]))
                hcols.extend(hd)
                hcounts.append(len(hd))
        v = len(vocab)
        counts = np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)
        cols = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
        mentions = _csr_rows(cols, counts, v)
        heads = _csr_rows(np.frombuffer(hcols, np.int64), np.frombuffer(hcounts, np.int64), v)
        return vocab, mentions, heads


def _block_runs(block: list[str]) -> tuple[list[str], np.ndarray]:
    """``(runs, ends)``: the matches of :data:`_RUN_RE` in the texts of ``block``, in order,
    and the number of them up to the end of each text, ``(len(block),) int64``. One search over
    the texts joined by :data:`_SEP` (found as a run of its own, ``runs`` holds it between
    texts), unless a text holds that character: then one search per text. (A search per text
    of a few hundred characters costs as much again as the search itself.)"""
    joined = _SEP.join(block)
    if joined.count(_SEP) == len(block) - 1:
        runs = _SEP_RUN_RE.findall(joined)
        at = np.flatnonzero(np.fromiter(map(_SEP.__eq__, runs), bool, len(runs)))
        return runs, np.append(at, len(runs)).astype(np.int64)
    per_text = list(map(_RUN_RE.findall, block))
    runs = list(chain.from_iterable(per_text))
    return runs, np.cumsum(np.fromiter(map(len, per_text), np.int64, len(block)))


def _gather(run_id, run_len, run_cols, unit_ends) -> tuple[np.ndarray, np.ndarray]:
    """``(cols, counts)``: the phrase columns of runs in order and how many each unit holds,
    given each run's distinct run ``run_id``, each distinct run's columns (``run_len`` of
    them, concatenated in ``run_cols``) and the run where each unit's runs end (``unit_ends``,
    exclusive). ``O(runs + columns)``, no Python loop."""
    ptr = np.cumsum(run_len) - run_len  # each distinct run's first column in run_cols
    lens = run_len[run_id]
    ends = np.cumsum(lens)
    # the k-th column of a run at out[ends - lens + k] is run_cols[ptr[run] + k]
    take = np.arange(int(ends[-1]) if len(ends) else 0, dtype=np.int64)
    take += np.repeat(ptr[run_id] - (ends - lens), lens)
    per_unit = np.concatenate([[0], ends])[unit_ends]
    counts = np.diff(np.concatenate([[0], per_unit]))
    return run_cols[take], counts


def _csr_rows(cols: np.ndarray, counts: np.ndarray, n_cols: int) -> sp.csr_array:
    """``(len(counts), n_cols)`` CSR array holding 1 at ``cols``, ``counts[i]`` of them in row
    ``i`` (a repeated column sums: a count)."""
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    M = sp.csr_array(
        (np.ones(len(cols), np.float32), cols.astype(np.int64), indptr),
        shape=(len(counts), n_cols),
    )
    M.sum_duplicates()  # sorts the columns of each row and sums the repeats
    return M


def _canonical(lookup: dict, mentions, heads, *, owned: bool) -> PhraseGraph:
    """The graph with the phrases no unit holds dropped and the others in sorted order (as
    :class:`~longctx.mixpr.tfidf.TermTable` keeps its terms): a graph grown and cut by any
    sequence of :meth:`PhraseGraph.splice` / :meth:`~PhraseGraph.without` then has the very
    columns, in the very order, of one built at once from the same units, so the walk sums in
    the same order and scores agree to the last bit; and its vocabulary stays the size of what
    the units hold. ``O(n_phrases log n_phrases + nnz)``; a sorted vocabulary with every phrase
    held costs one pass. ``lookup`` maps each phrase to its column of ``mentions`` and
    ``heads`` (CSR arrays of this module, no explicit zero), in column order; ``owned``: it is
    this call's to clear (so that one such dict is alive at a time)."""
    vocabulary = list(lookup)
    n = len(vocabulary)
    held = np.zeros(n, dtype=bool)
    held[mentions.indices] = True
    held[heads.indices] = True
    if held.all() and all(map(str.__lt__, vocabulary, islice(vocabulary, 1, None))):
        return PhraseGraph(vocabulary, mentions, heads, _lookup=lookup)  # already canonical
    if owned:
        lookup.clear()
    order = sorted(compress(range(n), held.tolist()), key=vocabulary.__getitem__)
    live = [vocabulary[j] for j in order]
    lookup = dict(zip(live, range(len(live))))
    remap = np.full(n, -1, dtype=np.int64)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    del order

    def cols(M):
        M = sp.csr_array(M)
        out = sp.csr_array(
            (M.data.copy(), remap[M.indices], M.indptr.copy()), shape=(M.shape[0], len(live))
        )
        out.sort_indices()
        return out

    return PhraseGraph(live, cols(mentions), cols(heads), _lookup=lookup)


def _check_incidence(M, name: str, n_phrases: int) -> sp.csr_array:
    if not sp.issparse(M):
        raise TypeError(f"{name} must be a scipy.sparse matrix, got {type(M).__name__}")
    M = sp.csr_array(M, dtype=np.float32)
    M.sum_duplicates()
    if M.ndim != 2 or M.shape[1] != n_phrases:
        raise ValueError(f"{name} must have shape (n_units, {n_phrases}), got {M.shape}")
    if M.nnz and (not np.isfinite(M.data).all() or M.data.min() < 0):
        raise ValueError(f"{name} must hold finite non-negative counts")
    M.eliminate_zeros()
    return M


# -- heads from a document's structure: headings, title line, file name, metadata -----------------
#: metadata keys whose value names what a document is about: a title (LangChain's Wikipedia and
#: web loaders), a file name or path (LlamaIndex readers' ``file_name`` / ``file_path``,
#: LangChain loaders' ``source``).
HEAD_METADATA_KEYS = ("title", "file_name", "file_path", "source")
#: most characters of a heading read as a head (a longer "heading" is a paragraph)
MAX_HEADING_CHARS = 300

# Markdown ATX heading ("## Early life"), at a line start
_ATX_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+([^\n]{1,300})", re.M)
# a line underlined by a run of one punctuation character: Markdown setext, reStructuredText
_SETEXT_RE = re.compile(r"^(\S[^\n]{0,299})\n {0,3}([=\-~^*+#\"'`:._])\2{2,}[ \t]*$", re.M)
_UNDERLINE_RE = re.compile(r"\n {0,3}([=\-~^*+#\"'`:._])\1{2,}[ \t]*$", re.M)
# HTML <h1>..<h6> and <title>, up to the next tag (a few inline tags skipped first)
_HTML_RE = re.compile(
    r"<(?:h[1-6]|title)\b[^<>]{0,200}>\s*(?:<[^<>]{0,200}>\s*){0,3}([^<>]{1,300})<", re.I
)
# a trailing "(qualifier)" of a title (at most MAX_HEADING_CHARS: its backtracking is bounded)
_QUALIFIER_RE = re.compile(r"\s*\([^()]*\)\s*$")
_LINK_URL_RE = re.compile(r"\]\([^()\s]{0,500}\)")
_EXT_RE = re.compile(r"\.[A-Za-z0-9]{1,5}$")


def heading_lines(text: str) -> list[tuple[int, str]]:
    """``(offset, heading)`` of every Markdown (``#`` or underlined), reStructuredText
    (underlined) and HTML (``<h1>``..``<h6>``, ``<title>``) heading of ``text``, by offset: one
    pass of three regular expressions, each bounded per match (linear in the text)."""
    found: list[tuple[int, str]] = []
    if "#" in text:
        found += [(m.start(), m.group(1)) for m in _ATX_RE.finditer(text)]
    if "\n" in text and _UNDERLINE_RE.search(text):
        found += [(m.start(), m.group(1)) for m in _SETEXT_RE.finditer(text)]
    if "<" in text:
        found += [(m.start(), m.group(1)) for m in _HTML_RE.finditer(text)]
    found.sort(key=lambda x: x[0])
    return [(a, h) for a, h in found if h.strip()]


def title_phrases(title: str, extractor: PhraseExtractor | None = None) -> list[str]:
    """The head phrases of a title, normalised as :meth:`PhraseExtractor.heads` normalises a
    title line: the title, the title without a trailing ``(qualifier)``, and before a comma;
    Markdown link targets, ``#`` marks and emphasis dropped; leading stop words trimmed; none
    over ``max_words`` words."""
    ex = extractor or PhraseExtractor()
    title = _LINK_URL_RE.sub("]", title[:MAX_HEADING_CHARS]).strip().strip("#").strip()
    names = [title, _QUALIFIER_RE.sub("", title), title.split(",")[0]]
    out = []
    for name in dict.fromkeys(names):  # most titles are all three: one pass, not three
        if len(name.split()) > ex.max_words + 3:  # too long even after leading stop words
            continue
        toks = _norm(" ".join(_WORD_RE.findall(name.replace("_", " "))))
        while toks and toks[0] in _STOP:
            toks = toks[1:]
        if toks and len(toks) <= ex.max_words:
            out.append(" ".join(toks))
    return list(dict.fromkeys(out))


def file_title(name: str) -> str | None:
    """The title a file name or path gives (``"docs/Shirley_Temple.md"`` -> ``"Shirley Temple"``,
    a URL's last part alike), or None for a name that is no path (``"17"``, a UUID)."""
    if not isinstance(name, str) or not name or len(name) > 2048:
        return None
    if not ("/" in name or "\\" in name or _EXT_RE.search(name)):
        return None
    base = re.split(r"[/\\]", name.rstrip("/\\"))[-1]
    base = _EXT_RE.sub("", base.split("?")[0].split("#")[0])
    base = re.sub(r"[_\-+%.]+", " ", base).strip()
    if not any(c.isalpha() for c in base):
        return None
    return base


def document_titles(
    text: str, doc_id=None, metadata=None, *, max_head_words: int = 12, first_line: bool = True
):
    """What a whole document is about, as raw titles: its first line when it is a title line
    (at most ``max_head_words`` words, more text after it), the title of its metadata
    (:data:`HEAD_METADATA_KEYS`) and the file name of its id or metadata (:func:`file_title`);
    ``first_line=False`` skips the first."""
    out = []
    if first_line:
        first = _title_line(text[:4096], max_head_words)  # a title line is short
        if first is not None:
            out.append(first)
    md = metadata if isinstance(metadata, Mapping) else {}
    title = md.get("title")
    if isinstance(title, str) and title.strip():
        out.append(title)
    for name in (md.get("file_name"), md.get("file_path"), md.get("source"), doc_id):
        t = file_title(name) if isinstance(name, str) else None
        if t:
            out.append(t)
            break
    return out


def lead_heads(text: str, extractor: PhraseExtractor | None = None) -> list[str]:
    """For a unit with no title line: the sub-spans of two words or more of its first
    capitalised span, beside that span (its head, :meth:`PhraseExtractor.heads`): "Shirley
    Temple Black (April 23, 1928 ...) was an American actress" is about "shirley temple" too,
    the name other passages mention. Without titles on ``hotpotqa-corpus`` (100 questions) R@2 /
    R@5 64.0 / 83.5 -> 66.5 / 85.5 (``docs/notes/multihop-default.md``). Empty for a text that
    starts with a title line."""
    return _lead_heads(text, extractor or PhraseExtractor(), {})


def _lead_heads(text: str, ex: PhraseExtractor, phrases_of: dict) -> list[str]:
    """:func:`lead_heads`, with ``phrases_of`` the phrases of the runs met so far (run ->
    :meth:`PhraseExtractor._run_phrases`), filled as it goes: a corpus's first names repeat."""
    if _title_line(text, ex.max_head_words) is not None:
        return []
    for m in _RUN_RE.finditer(text):
        run = m.group()
        spans = phrases_of.get(run)
        if spans is None:
            spans = phrases_of[run] = ex._run_phrases(run)
        if spans:
            return list(dict.fromkeys(s for s in spans[1:] if " " in s))
    return []


def unit_heads(
    texts: Sequence[str],
    unit_source,
    starts,
    ends,
    doc_ids=None,
    metadatas=None,
    extractor: PhraseExtractor | None = None,
) -> list[list[str]]:
    """Head phrases of every unit from its document's structure, beside the unit's own
    (:meth:`PhraseExtractor.heads`): the document's titles (:func:`document_titles`: title line,
    metadata title, file name) and the heading in force at the unit (the last Markdown, rST or
    HTML heading at or before its start, :func:`heading_lines`) and those inside it; a
    document's first unit, when it has no title line of its own, also gets :func:`lead_heads`
    (the opening of a text names what it is about; a later chunk's first name need not).

    Parameters
    ----------
    texts : sequence of str
        The documents.
    unit_source, starts, ends : (n_units,) int
        Each unit's document and character span, sorted by document then start.
    doc_ids, metadatas : sequence, optional
        One per document.

    Returns
    -------
    list of list of str
        ``n_units`` lists of normalised phrases (:func:`title_phrases`). Linear in the text.
    """
    got = _unit_heads(texts, unit_source, starts, ends, doc_ids, metadatas, extractor)
    return [list(h) for h in got]


def _unit_heads(
    texts, unit_source, starts, ends, doc_ids=None, metadatas=None, extractor=None
) -> list[list[str]]:
    """:func:`unit_heads` as the build reads it: the units of a document that get the same
    heads share one list (never to be modified), so that a corpus of passages makes a list a
    document, not one a unit (at 100k paragraphs, the garbage collector's passes over 378k
    small lists cost 0.4 s of the 1.3 s)."""
    ex = extractor or PhraseExtractor()
    src = np.asarray(unit_source, dtype=np.int64)
    a_ = np.asarray(starts, dtype=np.int64).tolist()
    b_ = np.asarray(ends, dtype=np.int64).tolist()
    none: list[str] = []
    out: list[list[str]] = [none] * len(src)
    phrases_of: dict[str, list[str]] = {}
    bounds = np.searchsorted(src, np.arange(len(texts) + 1), side="left").tolist()
    for d, text in enumerate(texts):
        lo, hi = bounds[d], bounds[d + 1]
        if lo == hi:
            continue
        did = doc_ids[d] if doc_ids is not None else None
        md = metadatas[d] if metadatas is not None else None
        # one unit: its own heads (PhraseExtractor.heads) read its title line already
        titles = document_titles(
            text, did, md, max_head_words=ex.max_head_words, first_line=hi - lo > 1
        )
        doc_heads = [p for t in titles for p in title_phrases(t, ex)]
        heads = heading_lines(text)
        lead = _lead_heads(text[a_[lo] : b_[lo]], ex, phrases_of)
        if not heads:  # most passages: no heading
            if doc_heads or lead:
                out[lo] = list(dict.fromkeys(doc_heads + lead))
            if doc_heads:
                out[lo + 1 : hi] = [doc_heads] * (hi - lo - 1)
            continue
        pos = [h[0] for h in heads]
        phr = [title_phrases(h[1], ex) for h in heads]
        j = 0  # headings before the current unit's start
        for u in range(lo, hi):
            a, b = a_[u], b_[u]
            while j < len(pos) and pos[j] <= a:
                j += 1
            k = j
            mine = list(phr[j - 1]) if j else []
            while k < len(pos) and pos[k] < b:
                mine += phr[k]
                k += 1
            heads_u = doc_heads + mine + (lead if u == lo else [])
            out[u] = list(dict.fromkeys(heads_u))
    return out
