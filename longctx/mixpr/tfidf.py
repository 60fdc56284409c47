"""MixPR's TF-IDF, kept as term counts so that units can be added and removed.

:class:`TermTable` holds, for every unit, how often each index term occurs in it (one sparse row
per unit), with the corpus-wide document frequency of every term. The TF-IDF embeddings ``E`` of
the paper (Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time,
Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4 "TF-IDF embeddings") are derived from it when
needed (:meth:`TermTable.embeddings`), with exactly scikit-learn's ``TfidfVectorizer`` weights:
``binary`` / ``sublinear_tf`` term frequencies, IDF ``ln((1 + n) / (1 + df)) + 1`` (smooth) or
``ln(n / df) + 1``, vocabulary pruning by ``min_df`` / ``max_df`` / ``max_features``, then
L2-normalized rows. Because the IDF and the norms are recomputed from the counts, a table grown by
:meth:`TermTable.add` and shrunk by :meth:`TermTable.remove` gives the same ``E`` (up to the order
of its columns and float rounding) as a table built from the remaining units at once.

A table is immutable: :meth:`add` and :meth:`remove` return new tables, so searches running on
the old one are never disturbed.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from longctx.mixpr.counts import compact_counts, count_dtype, held_rows, index_dtype, tf_values

logger = logging.getLogger(__name__)

__all__ = ["TermStats", "TermTable", "TfidfSettings", "merge_term_stats", "tfidf_rows"]


class TfidfSettings:
    """The TF-IDF weighting of a :class:`~longctx.mixpr.config.MixPRConfig`, read once from the
    config's ``TfidfVectorizer`` (so both accept the same arguments)."""

    def __init__(self, config):
        vec = config.vectorizer()
        self.analyzer = vec.build_analyzer()
        self.batch = _BatchAnalyzer.of(vec)
        self.binary = bool(vec.binary)
        self.sublinear_tf = bool(vec.sublinear_tf)
        self.use_idf = bool(vec.use_idf)
        self.smooth_idf = bool(vec.smooth_idf)
        self.min_df = vec.min_df
        self.max_df = vec.max_df
        self.max_features = vec.max_features

    def count_limits(self, n: int) -> tuple[int, int]:
        """``(min_count, max_count)``: the document-frequency bounds of a term among ``n`` units
        (scikit-learn's reading of ``min_df`` / ``max_df``: an int is a count, a float a share)."""
        lo = self.min_df if isinstance(self.min_df, numbers_int) else self.min_df * n
        hi = self.max_df if isinstance(self.max_df, numbers_int) else self.max_df * n
        return lo, hi


numbers_int = (int, np.integer)


class _BatchAnalyzer:
    """The terms of many units at once, equal to the config's analyzer applied to each unit but
    with one ``lower``, one accent fold and one stemming call over all of them: the unit texts are
    joined with a separator character absent from them (which no step changes and no term can
    hold), processed, and split again. Units holding CJK or Thai-like runs go through the
    per-unit analyzer (their character bigrams). Only for the word analyzer's plain settings
    (unigrams, the default token pattern, no custom preprocessor or tokenizer); ``of`` returns
    ``None`` otherwise."""

    _SEPARATORS = ("\x00", "\x01", "\x02", "\ue000", "\ue001", "\U000f0000")
    _DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"

    def __init__(self, vec, base_vec, stemmer):
        import re

        self.per_unit = vec.build_analyzer()
        self.lower = bool(base_vec.lowercase)
        self.fold = base_vec.strip_accents if callable(base_vec.strip_accents) else None
        self.tokens = re.compile(base_vec.token_pattern).findall
        self._pattern = base_vec.token_pattern
        self._with_sep = {}
        self.stop = frozenset(base_vec.get_stop_words() or ())
        self.stem = stemmer

    def joined(self, texts) -> tuple[str, str] | None:
        """``(sep, sep.join(texts))`` with a separator character that no text holds (``None``
        if each of them does): a text holds ``sep`` when the join holds more than
        ``len(texts) - 1`` of them (one count over the join, not one per text)."""
        for sep in self._SEPARATORS:
            joined = sep.join(texts)
            if joined.count(sep) == len(texts) - 1:
                return sep, joined
        return None

    def tokens_or_sep(self, sep: str):
        """``findall`` of the token pattern or ``sep`` (cached per separator)."""
        import re

        f = self._with_sep.get(sep)
        if f is None:
            # scikit-learn's default pattern finds the same tokens as the plainer \w\w+ (a
            # greedy run of two or more word characters can only start and end at a word
            # boundary), which runs faster over a long text
            pat = r"\w\w+" if self._pattern == self._DEFAULT_TOKEN_PATTERN else self._pattern
            f = self._with_sep[sep] = re.compile(f"{pat}|{re.escape(sep)}").findall
        return f

    @classmethod
    def of(cls, vec):
        # the word vectorizer whose analyzer longctx.terms.ScriptAnalyzer wraps (config.vectorizer)
        words = getattr(vec.analyzer, "word_vectorizer", None)
        if words is None:
            return None
        plain = (
            words.analyzer == "word"
            and tuple(words.ngram_range) == (1, 1)
            and words.token_pattern == cls._DEFAULT_TOKEN_PATTERN
            and words.preprocessor is None
            and words.tokenizer is None
            and words.input == "content"
            and (words.strip_accents is None or callable(words.strip_accents))
        )
        return cls(vec, words, vec.analyzer.distinct_stemmer()) if plain else None

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        from longctx.terms import has_bigram_script

        if not texts:
            return []
        found = self.joined(texts)
        if found is None:
            return [self.per_unit(t) for t in texts]
        sep, joined_raw = found
        spaceless = has_bigram_script(joined_raw)
        doc = joined_raw.lower() if self.lower else joined_raw
        if self.fold is not None:
            doc = self.fold(doc)
        # one tokenizer pass over all the units: the separator is a token of its own
        tokens = self.tokens_or_sep(sep)(doc)
        if tokens.count(sep) != len(texts) - 1:  # a step changed the separators: be exact
            return [self.per_unit(t) for t in texts]
        stop = self.stop
        out = [[]]
        cur = out[0]
        for w in tokens:
            if w == sep:
                cur = []
                out.append(cur)
            elif w not in stop:
                cur.append(w)
        if self.stem is not None:
            flat = [w for ws in out for w in ws]
            uniq = list(set(flat))
            stems = dict(zip(uniq, self.stem(uniq)))
            out = [[stems[w] for w in ws] for ws in out]
        if spaceless:  # the units holding CJK or Thai-like characters, found in one pass
            from longctx.terms import _BIGRAM_CHAR_RE

            ends = np.cumsum([len(t) + len(sep) for t in texts])
            hit = {int(np.searchsorted(ends, m.start(), side="right"))
                   for m in _BIGRAM_CHAR_RE.finditer(joined_raw)}  # fmt: skip
            for i in sorted(hit):
                out[i] = self.per_unit(texts[i])
        return out


#: Units folded together where a combining mark keeps the folding by characters off (the same
#: terms as each unit folded alone; a block without accents is returned unchanged).
_FOLD_BLOCK_UNITS = 512


#: Characters of the units counted in one block by :func:`_count_rows` (the token list of a
#: block, ~60 bytes a token as Python strings, bounds the build's peak memory: 1M characters
#: hold ~0.17M tokens, ~11 MB; 4M made 1M words peak at 109 MB over base, 1M at 52 MB).
COUNT_BLOCK_CHARS = 1 << 20


def _count_joined(
    batch: _BatchAnalyzer,
    texts: Sequence[str],
    vocabulary: dict[str, int],
    code: dict[str, int] | None = None,
):
    """:func:`_count_rows` through the batched analysis, in one pass of C-level lookups: every
    distinct word of the joined units is stemmed and given its term id once (``-1``: a stop
    word, ``-2``: the separator), the token list is mapped to ids, and the units' rows come from
    the separators' running count. Units holding CJK or Thai-like characters are analyzed one by
    one (their character bigrams). ``None`` when the units cannot be joined (then the caller
    analyzes them one by one). ``code`` (word -> term id or -1), shared by the blocks of one
    count, keeps the words seen in earlier blocks (each word is stemmed once)."""
    from longctx.terms import _BIGRAM_CHAR_RE, fold_by_chars
    from longctx.word_pieces import distinct_chars, lowered_chars

    n = len(texts)
    found = batch.joined(texts)
    if found is None:
        return None
    sep, joined = found

    def prepare(block: str) -> str:
        block = block.lower() if batch.lower else block
        return batch.fold(block) if batch.fold is not None else block

    # lowered at once (a separator, neither cased nor case-ignorable, ends str.lower's final
    # sigma context as a text's end does) and folded at once by characters where no combining
    # mark is (terms.fold_by_chars); else by blocks of units, each unit as it folds alone
    # the joined units' distinct characters, found once: for the folding (those of the lowered
    # text from them) and the CJK / Thai search
    chars = "" if joined.isascii() else distinct_chars(joined)
    doc = joined.lower() if batch.lower else joined
    if batch.fold is not None:
        doc_chars = lowered_chars(chars, doc) if batch.lower else chars
        doc = fold_by_chars(doc, batch.fold, doc_chars)
    if doc is None:
        step = _FOLD_BLOCK_UNITS
        doc = sep.join(prepare(sep.join(texts[i : i + step])) for i in range(0, n, step))
    n_sep = doc.count(sep)  # each a token of its own (no word character)
    tokens = batch.tokens_or_sep(sep)(doc)
    del doc
    if n_sep != n - 1:  # a step changed the separators
        return None
    code = {} if code is None else code
    words = []
    for w in set(tokens).difference(code):
        if w == sep:
            continue
        if w in batch.stop:
            code[w] = -1
        else:
            words.append(w)
    stems = batch.stem(words) if batch.stem is not None else words
    get = vocabulary.get
    for w, t in zip(words, stems):
        j = get(t)
        if j is None:
            j = vocabulary[t] = len(vocabulary)
        code[w] = j
    code[sep] = -2
    try:
        ids = np.fromiter(map(code.__getitem__, tokens), np.int64, len(tokens))
    finally:
        del code[sep]
    del tokens
    row = np.cumsum(ids == -2)
    keep = ids >= 0
    rows, cols = row[keep], ids[keep]
    extra_rows, extra_cols = [], []
    if _BIGRAM_CHAR_RE.search(chars):  # CJK / Thai (from its distinct characters)
        ends = np.cumsum([len(t) + len(sep) for t in texts])
        hit = sorted({int(np.searchsorted(ends, m.start(), side="right"))
                      for m in _BIGRAM_CHAR_RE.finditer(joined)})  # fmt: skip
        drop = np.isin(rows, hit)
        rows, cols = rows[~drop], cols[~drop]
        for i in hit:
            for term in batch.per_unit(texts[i]):
                j = get(term)
                if j is None:
                    j = vocabulary[term] = len(vocabulary)
                extra_rows.append(i)
                extra_cols.append(j)
        rows = np.concatenate([rows, np.asarray(extra_rows, dtype=np.int64)])
        cols = np.concatenate([cols, np.asarray(extra_cols, dtype=np.int64)])
    V = max(len(vocabulary), 1)
    uniq, counts = np.unique(rows * V + cols, return_counts=True)
    r, c = np.divmod(uniq, V)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
    return indptr, c.astype(index_dtype(len(c), V)), counts.astype(count_dtype(counts))


def _count_rows(settings, texts: Sequence[str], vocabulary: dict[str, int]):
    """Term counts of ``texts`` (one row each) over ``vocabulary``, which grows in place with
    the new terms (scikit-learn's ``CountVectorizer._count_vocab``, without the sorting).

    Returns ``(indptr, indices, counts)`` of a CSR matrix with ``len(vocabulary)`` columns."""
    batch = settings.batch
    if batch is not None and texts:
        return _count_blocks(settings, texts, vocabulary)
    return _count_each(settings, texts, vocabulary)


def text_lengths(texts: Sequence[str]) -> np.ndarray:
    """``(len(texts),) int64``: each text's length in characters (a lazy or mapped sequence's
    ``lengths`` when it has them: no text made or decoded)."""
    lengths = getattr(texts, "lengths", None)
    if lengths is not None:
        return np.asarray(lengths, dtype=np.int64)
    return np.fromiter((len(t) for t in texts), np.int64, len(texts))


def _count_blocks(settings, texts: Sequence[str], vocabulary: dict[str, int]):
    """:func:`_count_rows` by blocks of units of about :data:`COUNT_BLOCK_CHARS` characters
    (the rows of each block stacked in order: the same matrix as one pass over all the units,
    with a peak memory set by the block). ``texts`` may be a lazy sequence whose slices are
    lists and whose ``lengths`` gives each text's length: only a block's texts are then made
    at a time."""
    ends = np.cumsum(text_lengths(texts))
    bounds = [0]
    while bounds[-1] < len(texts):
        at = bounds[-1]
        limit = (ends[at - 1] if at else 0) + COUNT_BLOCK_CHARS
        bounds.append(max(at + 1, int(np.searchsorted(ends, limit, side="right"))))
    code: dict[str, int] = {}
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        block = texts[a:b]
        out = _count_joined(settings.batch, block, vocabulary, code)
        parts.append(out if out is not None else _count_each(settings, block, vocabulary))
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [p[0][-1] for p in parts[:-1]])
    indptr = np.concatenate([[0]] + [p[0][1:] + o for p, o in zip(parts, offsets)])
    return (
        indptr.astype(np.int64),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )


def _count_each(settings, texts: Sequence[str], vocabulary: dict[str, int]):
    """:func:`_count_rows` unit by unit (the analyzer of each)."""
    analyzer = settings.analyzer
    indptr = [0]
    indices: list[int] = []
    counts: list[int] = []
    get = vocabulary.get
    for text in texts:
        row: dict[int, int] = {}
        for term in analyzer(text):
            j = get(term)
            if j is None:
                j = vocabulary[term] = len(vocabulary)
            row[j] = row.get(j, 0) + 1
        indices.extend(row)
        counts.extend(row.values())
        indptr.append(len(indices))
    return (
        np.asarray(indptr, dtype=np.int64),
        np.asarray(indices, dtype=np.int64),
        np.asarray(counts, dtype=np.float64),
    )


def _canonical(settings, vocab: dict, counts: sp.csr_array, df, cf) -> TermTable:
    """The table with the terms no unit holds dropped and the others in sorted order (as
    scikit-learn sorts its vocabulary): a table grown and shrunk by any sequence of
    :meth:`TermTable.add` / :meth:`TermTable.remove` then has the very columns, in the very order,
    of one built at once from the same units, so every sum over them is computed in the same
    order and searches agree to the last bit."""
    terms = [""] * len(vocab)
    for t, j in vocab.items():
        terms[j] = t
    live = [j for j in sorted(range(len(terms)), key=terms.__getitem__) if df[j] > 0]
    if len(live) == len(terms) and all(a < b for a, b in zip(live, live[1:])):
        return TermTable(settings, vocab, counts, df, cf)  # already canonical
    live = np.asarray(live, dtype=np.int64)
    c = compact_counts(counts, copy=True)  # arrays of its own: sorted in place below
    remap = np.full(len(terms), -1, dtype=c.indices.dtype)
    remap[live] = np.arange(len(live))
    new = sp.csr_array((c.data, remap[c.indices], c.indptr), shape=(c.shape[0], len(live)))
    new.sort_indices()
    return TermTable(
        settings, {terms[j]: i for i, j in enumerate(live.tolist())}, new, df[live], cf[live]
    )


class TermStats:
    """Corpus-wide term statistics without the counts: the vocabulary, each term's document
    frequency and total count, and the number of units; enough for the IDF, the vocabulary
    pruning and the query's TF-IDF weights (:func:`longctx.mixpr.query.query_weights`).

    :class:`TermTable` is one (its statistics come with the counts); a sharded index gathers one
    from its shards' tables (:func:`merge_term_stats`), so every shard weighs its units with the
    IDF of the whole corpus.

    Attributes
    ----------
    vocabulary : dict str -> int or None
        Term to column (``None`` where only the arrays are needed: a shard's copy).
    df : (n_terms,) int64
    cf : (n_terms,) float64
    """

    def __init__(self, settings: TfidfSettings, vocabulary, df, cf, n_units: int, *, idf=None):
        self.settings = settings
        self.vocabulary = vocabulary
        self.df = df
        self.cf = cf
        self._n_units = int(n_units)
        self._idf = idf

    @property
    def n_units(self) -> int:
        return self._n_units

    @property
    def n_terms(self) -> int:
        return len(self.df)

    def terms(self) -> list[str]:
        """The terms, by column."""
        out = [""] * len(self.vocabulary)
        for t, j in self.vocabulary.items():
            out[j] = t
        return out

    def kept_terms(self) -> np.ndarray:
        """``(n_terms,) bool``: the terms the vocabulary keeps after ``min_df``, ``max_df`` and
        ``max_features`` (scikit-learn's pruning; ``max_features`` ties go to the smaller
        term), and that some unit holds."""
        s = self.settings
        n = self.n_units
        lo, hi = s.count_limits(n)
        keep = (self.df > 0) & (self.df >= lo) & (self.df <= hi)
        if s.max_features is not None and keep.sum() > s.max_features:
            cand = np.flatnonzero(keep)
            terms = self.terms()
            order = sorted(cand.tolist(), key=lambda j: (-self.cf[j], terms[j]))
            keep = np.zeros_like(keep)
            keep[order[: s.max_features]] = True
        return keep

    def idf(self) -> np.ndarray:
        """``(n_terms,) float64`` IDF of each term (scikit-learn's formula), 0 for pruned and
        absent terms. Computed once."""
        if self._idf is None:
            s = self.settings
            n = self.n_units
            keep = self.kept_terms()
            if s.use_idf:
                df = self.df.astype(np.float64)
                with np.errstate(divide="ignore"):
                    if s.smooth_idf:
                        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
                    else:
                        idf = np.log(n / np.where(df > 0, df, 1.0)) + 1.0
            else:
                idf = np.ones(self.n_terms)
            self._idf = np.where(keep, idf, 0.0)
        return self._idf


def tfidf_rows(settings, counts: sp.csr_array, idf: np.ndarray, *, by_rows=False, norms=False):
    """``E``: the L2-normalized TF-IDF rows of ``counts`` (``(n, V)`` CSR, sorted indices) with
    the IDF ``idf`` (``(V,)``; 0 drops a term), as ``(n, V) float64`` CSC (a unit with no kept
    term is an empty row). One function for a whole index and for a shard weighed with the
    corpus's IDF, so both compute every row with the same operations. ``by_rows=True`` returns
    ``(E, E as CSR)``: the CSR form it was made from (sharing the counts' index arrays when no
    entry is dropped), the push walk's rows without a copy; ``norms=True`` adds the ``(n,)``
    norms the rows were divided by (1 for an empty row; :class:`~longctx.mixpr.counts.CountRows`)."""
    n = counts.shape[0]
    c = counts
    w = tf_values(settings, c.data) * idf[c.indices]
    rows = np.repeat(np.arange(n), np.diff(c.indptr))
    norm = np.sqrt(np.bincount(rows, weights=w * w, minlength=n))
    norm = np.where(norm > 0, norm, 1.0)
    w = w / norm[rows]
    if w.size and not w.all():  # a pruned term's entries: dropped (in place, so on copies)
        E = sp.csr_array((w, c.indices.copy(), c.indptr.copy()), shape=c.shape)
        E.eliminate_zeros()
    else:  # E by rows shares the counts' index arrays
        E = sp.csr_array((w, c.indices, c.indptr), shape=c.shape)
    if not by_rows:
        return sp.csc_array(E)
    return (sp.csc_array(E), E, norm) if norms else (sp.csc_array(E), E)


def merge_term_stats(settings: TfidfSettings, parts) -> tuple[TermStats, list[np.ndarray]]:
    """The statistics of a corpus split into parts, from each part's own.

    Parameters
    ----------
    parts : sequence of ``(terms, df, cf, n_units)``
        Each part's terms (list of str, any order), their document frequencies and total counts
        in that part, and its number of units.

    Returns
    -------
    stats : TermStats
        Over the sorted union of the parts' terms that some unit holds (the canonical order of
        :class:`TermTable`, so columns line up with a table built from every unit at once).
    maps : list of (n_terms_i,) int64
        For each part, the column of each of its terms in ``stats`` (-1: a term no unit holds).
    """
    index: dict[str, int] = {}
    for terms, df, _, _ in parts:
        for t, d in zip(terms, np.asarray(df).tolist()):
            if d > 0:
                index.setdefault(t, 0)
    ordered = sorted(index)
    index = {t: j for j, t in enumerate(ordered)}
    V = len(ordered)
    df_all = np.zeros(V, np.int64)
    cf_all = np.zeros(V, np.float64)
    maps, n = [], 0
    for terms, df, cf, n_units in parts:
        df = np.asarray(df, dtype=np.int64)
        m = np.fromiter(
            (index.get(t, -1) if d > 0 else -1 for t, d in zip(terms, df.tolist())),
            np.int64,
            len(terms),
        )
        live = m >= 0
        np.add.at(df_all, m[live], df[live])
        np.add.at(cf_all, m[live], np.asarray(cf, dtype=np.float64)[live])
        maps.append(m)
        n += int(n_units)
    return TermStats(settings, index, df_all, cf_all, n), maps


class TermTable(TermStats):
    """Term counts of every unit with corpus-wide document frequencies (see the module doc).

    Attributes
    ----------
    vocabulary : dict str -> int
        Term to column (shared by tables derived from one another: never mutated once a table
        holds it). A table made by appending rows (:meth:`add`, :meth:`insert_rows` at the
        end) computes ``vocabulary``, ``counts``, ``df`` and ``cf`` on first use.
    counts : (n_units, n_terms) float64 CSR
        Occurrences of each term in each unit (sorted indices).
    df : (n_terms,) int64
        Units holding each term (0 for a term whose units were all removed).
    cf : (n_terms,) float64
        Total count of each term over the units (after ``binary``), for ``max_features``.
    """

    def __init__(self, settings: TfidfSettings, vocabulary: dict, counts: sp.csr_array, df, cf):
        super().__init__(settings, vocabulary, df, cf, counts.shape[0])
        self.counts = compact_counts(counts)
        self._E = None

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def build(cls, settings: TfidfSettings, texts: Sequence[str]) -> TermTable:
        """The table of ``texts`` (one unit each)."""
        empty = cls(
            settings,
            {},
            sp.csr_array((0, 0), dtype=np.float64),
            np.zeros(0, np.int64),
            np.zeros(0, np.float64),
        )
        return empty.add(texts)

    def rows_for(self, texts: Sequence[str]) -> tuple[_Vocabulary, sp.csr_array]:
        """``(vocabulary, rows)``: the counts of ``texts`` as rows over this table's vocabulary
        extended by their new terms (this table is unchanged). Costs the texts' terms, not the
        table's: the texts are counted over a vocabulary of their own, then given this table's
        columns (:class:`_Vocabulary`, shared along a chain of appends)."""
        local: dict[str, int] = {}
        indptr, indices, counts = _count_rows(self.settings, texts, local)
        vocab, remap = self._vocab().extended(local)
        remap = remap.astype(index_dtype(len(indices), len(vocab)))  # (n_local,): small
        rows = sp.csr_array((counts, remap[indices], indptr), shape=(len(texts), len(vocab)))
        rows.sort_indices()
        return vocab, rows

    def add(self, texts: Sequence[str], *, at: int | None = None) -> TermTable:
        """A new table with the units of ``texts`` inserted before row ``at`` (appended by
        default)."""
        vocab, rows = self.rows_for(texts)
        return self.insert_rows(vocab, rows, at=at)

    def insert_rows(self, vocab, rows: sp.csr_array, *, at: int | None = None) -> TermTable:
        """A new table with ``rows`` (counts over ``vocab``, an extension of this table's
        vocabulary from :meth:`rows_for`) inserted before row ``at`` (appended by default).

        Appended rows are kept apart, so an append costs the rows, not the table: the new table
        takes its canonical form (:func:`_canonical`) on the first use of its counts, document
        frequencies or vocabulary, the very form inserting every appended row at once gives.

        A search may give this table its canonical form (new column order) between
        :meth:`rows_for` and this call: the table is read once here, as one view (its appended
        rows kept apart, or its canonical form), and ``rows`` counted over the other view are
        translated to it by term (issue 48: they were read against the canonical columns)."""
        at = self.n_units if at is None else at
        if isinstance(vocab, _Vocabulary):
            pending = self.__dict__.get("_pending")  # read once: the view this call works on
            if pending is None or at != self.n_units:
                pending = None
                view = self._canonical_vocab()
            else:
                view = pending[1]
            if vocab.base is not view.base:
                logger.debug("TermTable.insert_rows: rows counted over another view, translated")
                vocab, rows = view.translated(vocab, rows)
            if at == self.n_units:
                return _appended(self, vocab, rows, pending)
            vocab = vocab.as_dict()
        V = len(vocab)
        old = self.counts
        old = sp.csr_array((old.data, old.indices, old.indptr), shape=(old.shape[0], V))
        parts = [p for p in (old[:at], rows, old[at:]) if p.shape[0]]
        counts = (
            sp.csr_array(sp.vstack(parts, format="csr"))
            if parts
            else sp.csr_array((0, V), dtype=np.float64)
        )
        counts.sort_indices()
        df = np.zeros(V, np.int64)
        df[: len(self.df)] = self.df
        df += np.bincount(rows.indices, minlength=V)
        cf = np.zeros(V, np.float64)
        cf[: len(self.cf)] = self.cf
        cf += np.bincount(rows.indices, weights=self._tf_counts(rows.data), minlength=V)
        return _canonical(self.settings, vocab, counts, df, cf)

    # -- appended rows kept apart -----------------------------------------------------------
    def _vocab(self) -> _Vocabulary:
        """This table's vocabulary as a :class:`_Vocabulary` (no copy): the vocabulary of its
        appended rows kept apart while it has them, else of its canonical form."""
        pending = self.__dict__.get("_pending")
        if pending is not None:
            return pending[1]
        return self._canonical_vocab()

    def _canonical_vocab(self) -> _Vocabulary:
        """The vocabulary of this table's canonical form (taken now if need be)."""
        v = self.__dict__.get("_vocab_view")
        if v is None:
            v = self.__dict__["_vocab_view"] = _Vocabulary(self.vocabulary)
        return v

    def __getattr__(self, name):
        # only for attributes not set: those of a table with appended rows kept apart
        if name in _MATERIALIZED and self.__dict__.get("_pending") is not None:
            self._materialize()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _materialize(self) -> None:
        """Stack the appended rows under the root table's and take the canonical form."""
        with self.__dict__["_lock"]:
            pending = self.__dict__.get("_pending")
            if pending is None:
                return
            root, vocab, blocks = pending
            full = vocab.as_dict()
            V = len(full)
            parts = [_with_columns(root.counts, V)] + [_with_columns(b, V) for b in blocks]
            parts = [p for p in parts if p.shape[0]]
            counts = (  # one part (a new table's rows): itself, not a stacked copy
                (parts[0] if len(parts) == 1 else sp.csr_array(sp.vstack(parts, format="csr")))
                if parts
                else sp.csr_array((0, V), dtype=np.float64)
            )
            counts.sort_indices()
            one = len(blocks) == 1
            idx = blocks[0].indices if one else np.concatenate([b.indices for b in blocks])
            data = blocks[0].data if one else np.concatenate([b.data for b in blocks])
            df = np.zeros(V, np.int64)
            df[: len(root.df)] = root.df
            df += np.bincount(idx, minlength=V)
            cf = np.zeros(V, np.float64)
            cf[: len(root.cf)] = root.cf
            cf += np.bincount(idx, weights=root._tf_counts(data), minlength=V)
            t = _canonical(self.settings, full, counts, df, cf)
            for name in _MATERIALIZED:
                self.__dict__[name] = t.__dict__[name]
            self.__dict__["_pending"] = None  # the root and the blocks can go

    def remove(self, keep: np.ndarray) -> TermTable:
        """A new table holding only the units where ``keep`` ((n_units,) bool) is true."""
        keep = np.asarray(keep, dtype=bool)
        gone = self.counts[np.flatnonzero(~keep)]
        counts = sp.csr_array(self.counts[np.flatnonzero(keep)])
        V = self.n_terms
        df = self.df - np.bincount(gone.indices, minlength=V)
        cf = self.cf - np.bincount(gone.indices, weights=self._tf_counts(gone.data), minlength=V)
        cf[df == 0] = 0.0  # exact zero, not a rounding residue
        return _canonical(self.settings, self.vocabulary, counts, df, cf)

    def _tf_counts(self, data: np.ndarray) -> np.ndarray:
        return np.ones_like(data) if self.settings.binary else data

    # -- weights ----------------------------------------------------------------------------
    def embeddings(self) -> sp.csc_array:
        """``E``: ``(n_units, n_terms) float64`` CSC, the L2-normalized TF-IDF rows (a unit with
        no kept term is an empty row). Computed once per table."""
        if self._E is None:
            c, idf = self.counts, self.idf()
            E, rows, norms = tfidf_rows(self.settings, c, idf, by_rows=True, norms=True)
            self.__dict__.update(held_rows(c, rows, self.settings, idf, norms))
            self._E = E
        return self._E

    def rows(self, *, matrix: bool = True):
        """``E`` as ``(n_units, n_terms) float64`` CSR: the form :meth:`embeddings` made (past
        ``counts.ROWS_HELD_MAX`` entries, made from the counts now; ``matrix=False``: the
        :class:`~longctx.mixpr.counts.CountRows` itself, which makes them when read)."""
        E = self.embeddings()
        made = self.__dict__.get("_row_values")
        if made is not None:
            return made.csr() if matrix else made
        rows = self.__dict__.get("_E_rows")  # None: a table given E (a mapped one)
        return sp.csr_array(E) if rows is None else rows


#: What a table with appended rows kept apart computes on first use.
_MATERIALIZED = ("vocabulary", "counts", "df", "cf")
#: Appended blocks kept apart before they are stacked into one (bounds an append's copy).
_MAX_BLOCKS = 256


def _with_columns(m: sp.csr_array, V: int) -> sp.csr_array:
    return sp.csr_array((m.data, m.indices, m.indptr), shape=(m.shape[0], V))


class _Vocabulary:
    """A table's vocabulary: ``base`` (term -> column: the canonical table's dict) plus the new
    terms of rows appended since, in ``extra`` (term -> column ``len(base)``, ``len(base) + 1``,
    ...), of which this vocabulary holds the first ``n_extra``. ``extra`` is shared along a
    chain of appends and only grows (under ``lock``), so an extension costs its new terms; a
    second extension of one vocabulary (a branch) copies its ``n_extra`` entries first."""

    __slots__ = ("base", "extra", "n_extra", "lock")

    def __init__(self, base: dict, extra: dict | None = None, n_extra: int = 0, lock=None):
        self.base = base
        self.extra = {} if extra is None else extra
        self.n_extra = n_extra
        self.lock = threading.Lock() if lock is None else lock

    def __len__(self) -> int:
        return len(self.base) + self.n_extra

    def extended(self, local: dict) -> tuple[_Vocabulary, np.ndarray]:
        """``(vocabulary, remap)``: this vocabulary with the terms of ``local`` (term -> local
        column) it lacks, and the column in it of each local column."""
        remap = np.empty(len(local), dtype=np.int64)
        base, nb = self.base, len(self.base)
        with self.lock:
            extra, lock = self.extra, self.lock
            if len(extra) != self.n_extra:  # another table grew it past this one: branch
                extra = dict(itertools.islice(extra.items(), self.n_extra))
                lock = None
            for t, j in local.items():
                g = base.get(t)
                if g is None:
                    g = extra.get(t)
                    if g is None:
                        g = extra[t] = nb + len(extra)
                remap[j] = g
            return _Vocabulary(base, extra, len(extra), lock), remap

    def as_dict(self) -> dict:
        """term -> column for every term of this vocabulary (a new dict)."""
        full = dict(self.base)
        with self.lock:  # ``extra`` may grow meanwhile (a write extending a later table)
            full.update(itertools.islice(self.extra.items(), self.n_extra))
        return full

    def translated(self, other: _Vocabulary, rows: sp.csr_array):
        """``(vocabulary, rows)``: ``rows`` (counts over ``other``, another vocabulary of the
        same table) over this vocabulary extended by their terms it lacks. Costs ``other``'s
        size (its terms by column)."""
        cols = np.unique(rows.indices)
        by_col = {j: t for t, j in other.as_dict().items()}
        vocab, remap = self.extended({by_col[j]: i for i, j in enumerate(cols.tolist())})
        idx = remap[np.searchsorted(cols, rows.indices)]
        out = sp.csr_array((rows.data, idx, rows.indptr), shape=(rows.shape[0], len(vocab)))
        out.sort_indices()
        return vocab, out


def _appended(table: TermTable, vocab: _Vocabulary, rows: sp.csr_array, pending) -> TermTable:
    """``table`` with ``rows`` appended, kept apart until first use (see
    :meth:`TermTable.insert_rows`); ``pending``: ``table``'s appended rows as the caller read
    them (``None``: its canonical form)."""
    if pending is not None:
        root, _, blocks = pending
        blocks = blocks + (rows,)
    else:
        root, blocks = table, (rows,)
    if len(blocks) > _MAX_BLOCKS:  # stacked: costs the appended rows, not the table
        V = len(vocab)
        blocks = (sp.csr_array(sp.vstack([_with_columns(b, V) for b in blocks], format="csr")),)
    out = TermTable.__new__(TermTable)
    d = out.__dict__
    d["settings"] = table.settings
    d["_n_units"] = table.n_units + rows.shape[0]
    d["_idf"] = None
    d["_E"] = None
    d["_pending"] = (root, vocab, blocks)
    d["_lock"] = threading.Lock()
    return out
