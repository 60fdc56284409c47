"""MixPR: mixture-of-PageRanks retrieval over sparse TF-IDF chunk graphs.

Source: Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time, Sparse
GraphRAG", 2024, arXiv:2412.06078, sec. 4 (eq. 2 personalized PageRank, eq. 3
``A = normalize(E^T E)``, personalization vector, dynamic alpha) and appendix A.2 (threshold .27,
18 iterations, alpha .6, the zero-shot router prompt).

Pipeline of the paper (``preset="paper"``; all sparse, never an ``n x n`` dense matrix; the
``"default"`` preset changes the settings listed in :class:`MixPR`):

1. chunks (``longctx.text.chunk_words``, N=32 words) + the query appended as the last chunk(s);
2. TF-IDF embeddings (scikit-learn), L2-normalized rows;
3. ``S = E E^T`` computed in row blocks (upper triangle only, then mirrored), entries ``< threshold``
   dropped per block; ``A = S D^{-1}`` (each column divided by its sum: column-stochastic);
4. personalized PageRank (local queries, ``alpha=0.6``) or PageRank (global queries, ``alpha=0``);
5. top-k / token budget in chronological order (``longctx.selection.select_top``).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from longctx.checks import check_choice, check_float, check_int, check_text
from longctx.index import RetrievalIndex, check_texts
from longctx.persist import (
    PersistError,
    read_arrays,
    read_json,
    read_manifest,
    read_sparse,
    write_dir,
)
from longctx.selection import check_budget_fits, check_size, select_top
from longctx.text import chunk_words
from longctx.tokens import TokenCounter, count_many
from longctx.types import Passage, SearchResult

logger = logging.getLogger(__name__)

MODES = ("auto", "local", "global")

#: The zero-shot router prompt of appendix A.2, verbatim (``[query]`` is replaced).
ROUTER_PROMPT = (
    "If the query asks for summarization, most frequent words, or descriptions of an entire "
    "document, answer \u2019y\u2019 with no other text. If the query does not and only asks a "
    "specific question, answer \u2019n\u2019 with no other text.\n"
    "QUERY: [query]\n"
    "If the query asks for summarization, most frequent words, or descriptions of an entire "
    "document, answer \u2019y\u2019 with no other text. If the query does not and only asks a "
    "specific question, answer \u2019n\u2019 with no other text.\n"
    "Answer:"
)

# Words marking a global (query-independent) task: summaries, overviews, word frequencies.
_GLOBAL_RE = re.compile(
    r"\b(summar\w*|overview|synopsis|gist|recap|outline|tl;?dr|abstract of"
    r"|(most|least) (frequent|common|used|repeated)\w*( \w+)? words?"
    r"|word frequenc\w*|frequent words|common words"
    r"|main (themes?|ideas?|points?|events?|characters?|topics?|arguments?|plot)"
    r"|key (themes?|ideas?|points?|events?|takeaways?)"
    r"|(whole|entire|full) (book|document|text|story|novel|article|report|paper|chapter)"
    r"|(what is|what's) (this|the) (book|document|text|story|novel|article|report|paper) about"
    r"|describe (this|the) (book|document|text|story|novel|article|report|paper)"
    r"|describe (this|the) (whole|entire|full) \w+|sum (it |this |that )?up|\w+ in a nutshell"
    r"|words? (are|is) (the )?(most|least) (frequent|common|used))\b",
    re.IGNORECASE,
)


def personalized_pagerank(
    A: sp.spmatrix,
    p: np.ndarray,
    alpha: float,
    max_iter: int = 18,
    tol: float = 1e-6,
    *,
    x0: np.ndarray | None = None,
    dangling: np.ndarray | None = None,
) -> np.ndarray:
    """Personalized PageRank by power iteration: ``pi = (1 - alpha) A pi + alpha p``.

    Paper eq. 2 (Alonso and Millidge, 2024, arXiv:2412.06078, sec. 4). ``alpha`` weights the *personalization*
    (``alpha=0`` is plain PageRank); networkx's ``alpha`` is the damping, i.e. ``1 - alpha`` here.
    Follows networkx's ``pagerank`` otherwise (appendix A.2): start from ``x0`` (uniform by
    default), dangling nodes (zero columns) send their mass along ``dangling`` (``p`` by
    default), stop when ``||x_t - x_{t-1}||_1 < n * tol``. Unlike networkx it never raises when
    ``max_iter`` is reached: it returns the last iterate (the paper uses 18 iterations).

    Parameters
    ----------
    A : (n, n) scipy sparse matrix, non-negative, column-stochastic
        ``A[i, j]`` is the probability of stepping from node ``j`` to node ``i``; each column sums
        to 1, or to 0 for a dangling node. Converted to CSR if needed.
    p : (n,) array of float, non-negative, positive sum
        Personalization (restart) distribution; normalized to sum to 1.
    alpha : float in [0, 1]
        Restart probability.
    max_iter : int >= 1
    tol : float >= 0
    x0 : (n,) array, optional
        Start vector (normalized); uniform by default.
    dangling : (n,) array, optional
        Where dangling nodes send their mass (normalized); ``p`` by default.

    Returns
    -------
    (n,) float64 array summing to 1.

    Raises
    ------
    TypeError, ValueError
        Bad shapes, negative entries, columns that sum neither to 0 nor to 1, or bad scalars.
    """
    if not sp.issparse(A):
        raise TypeError(f"A must be a scipy sparse matrix, got {type(A).__name__}")
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, got shape {A.shape}")
    n = A.shape[0]
    alpha = check_float(alpha, "alpha", low=0.0, high=1.0)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_float(tol, "tol", low=0.0)
    p = _distribution(p, n, "p")
    x = np.full(n, 1.0 / n) if x0 is None else _distribution(x0, n, "x0")
    d = p if dangling is None else _distribution(dangling, n, "dangling")
    A = sp.csr_array(A, dtype=np.float64)
    if A.nnz and A.data.min() < 0:
        raise ValueError("A must be non-negative")
    colsum = np.bincount(A.indices, weights=A.data, minlength=n)
    is_dangling = colsum == 0
    if not np.allclose(colsum[~is_dangling], 1.0, atol=1e-6):
        raise ValueError("A must be column-stochastic (each column sums to 1, or 0 if dangling)")
    dangling_idx = np.flatnonzero(is_dangling)
    damping = 1.0 - alpha
    restart = alpha * p
    for _ in range(max_iter):
        x_last = x
        x = A @ x_last
        if dangling_idx.size:
            x += x_last[dangling_idx].sum() * d
        x *= damping
        x += restart
        if np.abs(x - x_last).sum() < n * tol:
            break
    return x


def _distribution(v, n: int, name: str) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {v.shape}")
    if not np.all(np.isfinite(v)) or v.min() < 0 or v.sum() <= 0:
        raise ValueError(f"{name} must be finite, non-negative, with a positive sum")
    return v / v.sum()


def similarity_graph(
    E: sp.spmatrix,
    threshold: float = 0.27,
    *,
    max_block_nnz: int = 10_000_000,
    n_jobs: int | None = None,
) -> sp.csr_array:
    """Thresholded cosine-similarity graph ``S = E E^T`` with entries ``< threshold`` dropped.

    Computed in row blocks over the upper triangle (``S`` is symmetric), so the largest
    intermediate holds at most about ``max_block_nnz`` products: memory stays bounded however
    long the text. The diagonal (self-similarity 1 for a non-empty row) is kept, as in the paper
    (appendix A.2 thresholds ``E^T E`` as a whole).

    Parameters
    ----------
    E : (n, V) scipy sparse matrix
        One L2-normalized row per chunk (the paper stores them as columns; same graph).
    threshold : float
        Entries below it are dropped (appendix A.2: .27).
    max_block_nnz : int
        Upper bound on the products computed per block (memory knob: ~12 bytes each, times
        ``n_jobs`` blocks in flight).
    n_jobs : int, optional
        Threads computing blocks (scipy's sparse product releases the GIL); all CPUs by default.

    Products are computed in float32 (values within ~1e-7 of float64), stored as float64.

    Returns
    -------
    (n, n) symmetric float64 CSR array.
    """
    threshold = check_float(threshold, "threshold", low=0.0)
    # float32 products: half the memory traffic; scipy releases the GIL, so threads help.
    # Canonical (sorted, summed) copies: ``csr_array(E, dtype=...)`` may share E's index arrays,
    # and sorting them in place would scramble the caller's matrix (its data stays unsorted).
    E32 = sp.csr_array(E, dtype=np.float32, copy=True)
    E32.sum_duplicates()
    E32.sort_indices()
    ET = sp.csc_array(E32.T, copy=True)  # column slices of E^T (= rows of E) are cheap in CSC
    ET.sum_duplicates()
    ET.sort_indices()
    n, n_features = E32.shape
    E = E32
    # Upper bound of the nnz of row i of E E^T: sum of document frequencies of its terms.
    df = np.bincount(E.indices, minlength=n_features)
    csum = np.concatenate([[0], np.cumsum(df[E.indices])])
    row_cost = csum[E.indptr[1:]] - csum[E.indptr[:-1]]
    # Row blocks [a, b) whose cost (upper-triangle half, roughly) stays under max_block_nnz.
    bounds = [0]
    acc = 0
    for i, c in enumerate(row_cost.tolist()):
        if acc and acc + c > max_block_nnz:
            bounds.append(i)
            acc = 0
        acc += c
    bounds.append(n)
    blocks = list(zip(bounds[:-1], bounds[1:]))

    def upper_block(block: tuple[int, int]):
        a, b = block
        P = sp.csr_array(E32[a:b] @ ET[:, a:])  # (b - a, n - a): columns offset by a
        pos = np.flatnonzero(P.data >= threshold)
        r = np.searchsorted(P.indptr, pos, side="right") - 1
        c = P.indices[pos].astype(np.int64)
        keep = c >= r  # upper triangle (incl. diagonal) in global indices
        return r[keep] + a, c[keep] + a, P.data[pos[keep]].astype(np.float64)

    blocks = [(a, b) for a, b in blocks if b > a]
    workers = max(1, min(n_jobs or os.cpu_count() or 1, len(blocks)))
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(upper_block, blocks))
    else:
        parts = [upper_block(blk) for blk in blocks]
    if parts:
        r = np.concatenate([x[0] for x in parts])
        c = np.concatenate([x[1] for x in parts])
        v = np.concatenate([x[2] for x in parts])
    else:
        r = c = np.empty(0, np.int64)
        v = np.empty(0, np.float64)
    off = r != c
    S = sp.coo_array(
        (np.concatenate([v, v[off]]), (np.concatenate([r, c[off]]), np.concatenate([c, r[off]]))),
        shape=(n, n),
    )
    return sp.csr_array(S)


def column_normalize(S: sp.spmatrix) -> sp.csr_array:
    """``normalize(M)`` of eq. 3: divide each column by its sum (zero columns stay zero).

    The result is column-stochastic, ``A[i, j]`` = probability of stepping from ``j`` to ``i``.
    """
    S = sp.csr_array(S, dtype=np.float64)
    colsum = np.bincount(S.indices, weights=S.data, minlength=S.shape[1])
    inv = np.divide(1.0, colsum, out=np.zeros_like(colsum), where=colsum > 0)
    A = S.copy()
    A.data = A.data * inv[A.indices]
    return A


class KeywordRouter:
    """Default router: ``"global"`` when the query asks for a summary, an overview, the main
    themes or events, word frequencies or a description of the whole text; else ``"local"``.

    A cheap stand-in for the paper's LLM router (sec. 4 "Dynamic alpha"). Callable as
    ``router(query, chunks) -> "local" | "global"``.
    """

    def __call__(self, query: str, chunks: Sequence[str] = ()) -> str:
        return "global" if _GLOBAL_RE.search(query) else "local"


class LLMRouter:
    """The paper's router: ask an LLM with the zero-shot prompt of appendix A.2 (:data:`ROUTER_PROMPT`).

    The ``[query]`` variable holds the first ``n_context`` chunks of the text and the last
    ``n_context`` chunks of text-plus-query (so the query itself comes last), as in the paper. An
    answer starting with "y" means global (PageRank), "n" local (personalized PageRank); any
    other answer falls back to :class:`KeywordRouter`.

    Parameters
    ----------
    llm : LlamaIndex ``LLM``, LangChain chat model or LLM, or callable ``str -> str``
        An object with ``.complete(prompt)`` returning ``.text`` (LlamaIndex), an object with
        ``.invoke(prompt)`` returning a message with ``.content`` or a ``str`` (LangChain chat
        models and LLMs), or any completion function.
    n_context : int >= 0, default 2
        Chunks taken from each end of the input (0: the query alone).

    Raises
    ------
    TypeError
        ``llm`` is none of these.

    Examples
    --------
    >>> LLMRouter(OpenAI(model="gpt-4o-mini"))  # LlamaIndex  # doctest: +SKIP
    >>> LLMRouter(ChatOpenAI(model="gpt-4o-mini"))  # LangChain  # doctest: +SKIP
    >>> LLMRouter(lambda prompt: "n")  # doctest: +SKIP
    """

    def __init__(self, llm, n_context: int = 2):
        self.llm = _as_completion(llm)
        self.n_context = check_int(n_context, "n_context", minimum=0)
        self.fallback = KeywordRouter()

    def prompt(self, query: str, chunks: Sequence[str] = ()) -> str:
        """The exact prompt sent to the LLM."""
        items = list(chunks) + [query]
        k = self.n_context
        parts = items if len(items) <= 2 * k else items[:k] + items[-k:]
        if k == 0:
            parts = [query]
        return ROUTER_PROMPT.replace("[query]", "\n".join(parts))

    def __call__(self, query: str, chunks: Sequence[str] = ()) -> str:
        answer = _answer_text(self.llm(self.prompt(query, chunks)))
        answer = answer.strip().strip("'\"\u2018\u2019`").lower()
        if answer.startswith("y"):
            return "global"
        if answer.startswith("n"):
            return "local"
        return self.fallback(query, chunks)


def _answer_text(answer) -> str:
    """The text of an LLM answer: a str, a LangChain message (``.content``, a str or a list of
    content blocks) or a LlamaIndex response (``.text``)."""
    if isinstance(answer, str):
        return answer
    for attr in ("content", "text"):
        value = getattr(answer, attr, None)
        if isinstance(value, str):
            return value
        if isinstance(value, list):  # LangChain content blocks
            return "".join(
                b if isinstance(b, str) else str(b.get("text", "")) if isinstance(b, dict) else ""
                for b in value
            )
    return str(answer)


def _as_completion(llm) -> Callable[[str], object]:
    """``prompt -> answer`` for a LlamaIndex LLM, a LangChain model or a plain callable."""
    complete = getattr(llm, "complete", None)
    if callable(complete):  # LlamaIndex LLM: .complete(prompt).text
        return lambda prompt: complete(prompt)
    invoke = getattr(llm, "invoke", None)
    if callable(invoke):  # LangChain chat model (message .content) or LLM (str)
        return lambda prompt: invoke(prompt)
    if callable(llm):
        return llm
    raise TypeError(
        "llm must be a LlamaIndex LLM (.complete), a LangChain chat model or LLM (.invoke) or a "
        f"callable str -> str, got {type(llm).__name__}"
    )


#: Question words and auxiliaries that scikit-learn's English stop-word list lacks (it holds
#: who / what / which / when / where / why / how / do / is / was already): ``"english+questions"``.
QUESTION_STOP_WORDS = ("called", "did", "does", "doing", "kind", "named", "type")

STOP_WORD_NAMES = ("english", "english+questions")


class _StemmedAnalyzer:
    """scikit-learn word analyzer followed by a Snowball stemmer (PyStemmer): a plain object, so
    the vectorizer is rebuilt from the config's ``stemmer`` name, never pickled."""

    def __init__(self, base, language: str):
        import Stemmer

        self.base = base
        self.stem_words = Stemmer.Stemmer(language).stemWords

    def __call__(self, doc: str) -> list[str]:
        return self.stem_words(self.base(doc))


@dataclass(frozen=True)
class MixPRConfig:
    """Every MixPR setting, shared by :class:`MixPR` (one-off calls) and :class:`MixPRIndex`, so a
    built index and a one-off call rank alike. Pick a preset with ``preset=`` and override fields
    by keyword (``MixPRIndex.from_texts(texts, preset="paper", threshold=0.3)``). The field
    defaults are the ``"default"`` preset's; :data:`PRESETS` ``["paper"]`` holds the paper's.

    Attributes
    ----------
    threshold : float in [0, 1], default 0.2 (paper: 0.27)
        Chunk-chunk cosine similarities below it are dropped from the graph (appendix A.2).
    query_threshold : float in [0, 1] or None, default 0.05 (paper: None)
        Threshold of the query's edges; ``None``: the same as ``threshold`` (the paper).
    alpha_local : float in (0, 1], default 0.8 (paper: 0.6)
        Restart weight of personalized PageRank for local queries (eq. 2). With
        ``coverage_power`` the restart is the better-aimed part, so it gets more weight.
    coverage_power : float >= 0, default 4.0 (paper: 0, off)
        Not in the paper. The query's edges (and so the restart mass of
        ``personalization="similarity"``) are multiplied by ``coverage ** coverage_power``, where
        ``coverage`` of a chunk is the share of the query chunk's TF-IDF weight (L1) that falls on
        terms the chunk holds: a coordination factor, as in Lucene's classic TF-IDF scoring. A
        cosine alone rewards short chunks that hold part of the question ("'You did,' said the
        Mock Turtle." for "What did the Mock Turtle sing about?") over a longer chunk holding all
        of it. Needs ``fit_query=False``.
    min_words : int >= 1 or None, default None
        Join short chunks of a paragraph up to ``max_words`` words (:func:`longctx.text.chunk_words`);
        off: it buries short facts in their neighbours (bAbI qa2 1.00 -> 0.10 at 16k tokens).
    max_iter : int >= 1, default 18
        Power iterations (appendix A.2); stops earlier at ``tol``.
    tol : float >= 0, default 1e-6
        Stop when ``||x_t - x_{t-1}||_1 < n * tol`` (networkx's rule).
    max_words : int >= 1, default 32
        N of the chunker (sec. 4 "Chunking method").
    stop_words : "english", "english+questions", tuple of str or None
        Stop words (``"english+questions"``: scikit-learn's English list plus
        :data:`QUESTION_STOP_WORDS`, so "did" / "does" do not rank chunks). The paper does not
        state its TF-IDF settings;
        dropping English stop words keeps ``E E^T`` cheap on long texts (1M tokens of Gutenberg,
        ~70k chunks: ~1.4e8 term-pair products instead of ~4.1e9, ~1.5 s instead of over a minute
        here) and stops "the" / "is" from linking unrelated sentences.
    strip_accents : None, "unicode" or "ascii"
        ``TfidfVectorizer`` accent folding ("Natásha" == "Natasha").
    sublinear_tf : bool
        ``1 + log(tf)`` term frequencies.
    stemmer : str or None
        A Snowball stemmer language of PyStemmer (``"english"``: Porter2) applied to every term
        after stop-word removal, or None. Stored by name (persisted as JSON).
    split_lines : bool
        The chunker's newline step (:func:`longctx.text.chunk_words`): True cuts a sentence over
        ``max_words`` words at every line break (the paper); False only at blank lines, then into
        equal word pieces, so hard-wrapped text is not cut into line fragments.
    personalization : {"query", "similarity"}
        Restart distribution of local queries. ``"query"``: one-hot on the query node (the
        paper, sec. 4 "Personalization vector"); ``"similarity"``: the restart mass spread over
        the chunks in proportion to their direct similarity to the query (edges kept at
        ``query_threshold``), and the query is not a node of the walk.
    fit_query : bool
        ``True``: the paper-literal pipeline, the query appended to the chunks *before* fitting
        TF-IDF, so every query refits the vocabulary and IDF and rebuilds the graph (what a
        one-off run of the paper does). ``False``: the vectorizer and the chunk graph are built
        once from the chunks; the query is transformed with the fitted vectorizer (terms unseen in
        the text are ignored, IDF excludes the query) and bordered onto the graph. Top-100
        overlap with the literal path (paper preset, ``literal_query_weights=True``) is 0.99 to
        1.00 on War and Peace (tests/test_mixpr.py, benchmarks/bench_mixpr.py).
    literal_query_weights : bool, default False (paper: True)
        With ``fit_query=False``: weigh the query's terms in the chunks as the paper-literal
        fit would (the query counted as one more document, so those terms' IDF is lower; the
        chunk rows holding them re-normalized), which makes the query's edges the literal ones
        (War and Peace top-100 overlap with the literal path: min 0.97 -> 0.99). The default
        keeps the text's own IDF: it was tuned that way, and the literal weights moved HotpotQA
        10% below BM25 (share 49.6 against 50.0).
    vectorizer_kwargs : tuple of (name, value)
        More ``TfidfVectorizer`` arguments (given as a dict, stored as sorted pairs).
    """

    threshold: float = 0.2
    query_threshold: float | None = 0.05
    alpha_local: float = 0.8
    max_iter: int = 18
    tol: float = 1e-6
    max_words: int = 32
    stop_words: str | tuple[str, ...] | None = "english+questions"
    strip_accents: str | None = "unicode"
    sublinear_tf: bool = True
    personalization: str = "similarity"
    fit_query: bool = False
    vectorizer_kwargs: tuple[tuple[str, Any], ...] = ()
    stemmer: str | None = "english"
    split_lines: bool = False
    min_words: int | None = None
    coverage_power: float = 4.0
    literal_query_weights: bool = False

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "threshold", check_float(self.threshold, "threshold", low=0.0, high=1.0))
        set_(
            self,
            "query_threshold",
            check_float(
                self.query_threshold, "query_threshold", low=0.0, high=1.0, allow_none=True
            ),
        )
        alpha = check_float(self.alpha_local, "alpha_local", low=0.0, high=1.0)
        if alpha == 0:
            raise ValueError("alpha_local must be > 0 (alpha=0 is the global expert)")
        set_(self, "alpha_local", alpha)
        set_(self, "max_iter", check_int(self.max_iter, "max_iter", minimum=1))
        set_(self, "tol", check_float(self.tol, "tol", low=0.0))
        set_(self, "max_words", check_int(self.max_words, "max_words", minimum=1))
        sw = self.stop_words
        if isinstance(sw, (list, tuple)):
            if not all(isinstance(w, str) for w in sw):
                raise TypeError("stop_words must be 'english', a list of str or None")
            set_(self, "stop_words", tuple(sw))
        elif sw is not None and sw not in STOP_WORD_NAMES:
            raise ValueError(
                "stop_words must be 'english', 'english+questions', a list of str or None, "
                f"got {sw!r}"
            )
        check_choice(self.strip_accents, "strip_accents", (None, "unicode", "ascii"))
        set_(self, "sublinear_tf", bool(self.sublinear_tf))
        check_choice(self.personalization, "personalization", PERSONALIZATIONS)
        set_(self, "fit_query", bool(self.fit_query))
        if not isinstance(self.split_lines, bool):
            raise TypeError(f"split_lines must be a bool, got {type(self.split_lines).__name__}")
        set_(self, "coverage_power", check_float(self.coverage_power, "coverage_power", low=0.0))
        if not isinstance(self.literal_query_weights, bool):
            raise TypeError(
                "literal_query_weights must be a bool, got "
                f"{type(self.literal_query_weights).__name__}"
            )
        if self.coverage_power and self.fit_query:
            raise ValueError(
                "coverage_power needs fit_query=False (the built index); set coverage_power=0 "
                "for the paper-literal pipeline"
            )
        if self.min_words is not None:
            set_(self, "min_words", check_int(self.min_words, "min_words", minimum=1))
        if self.stemmer is not None:
            if not isinstance(self.stemmer, str):
                raise TypeError(f"stemmer must be a str or None, got {type(self.stemmer).__name__}")
            import Stemmer

            check_choice(self.stemmer, "stemmer", tuple(Stemmer.algorithms()))
        kw = self.vectorizer_kwargs
        if isinstance(kw, dict):
            kw = tuple(sorted(kw.items()))
        kw = tuple((str(k), v) for k, v in kw)
        reserved = {"stop_words", "strip_accents", "sublinear_tf", "norm", "vocabulary", "analyzer"}
        bad = reserved.intersection(k for k, _ in kw)
        if bad:
            raise ValueError(f"vectorizer_kwargs must not set {sorted(bad)}: use the fields")
        set_(self, "vectorizer_kwargs", kw)
        self.vectorizer()  # raises now (before any heavy work) on a bad vectorizer argument

    def chunk(self, text: str) -> list[tuple[int, int]]:
        """The units of ``text`` under these settings (:func:`longctx.text.chunk_words`):
        ``(start, end)`` character spans."""
        return chunk_words(
            text,
            self.max_words,
            split_lines=self.split_lines,
            min_words=self.min_words,
        )

    @property
    def effective_query_threshold(self) -> float:
        return self.threshold if self.query_threshold is None else self.query_threshold

    def vectorizer(self, vocabulary=None):
        """A new (unfitted) ``TfidfVectorizer`` with these settings; parameters checked now.

        Raises
        ------
        ValueError
            A bad ``TfidfVectorizer`` argument (scikit-learn's message names it).
        """
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

        sw = self.stop_words
        if isinstance(sw, tuple):
            sw = list(sw)
        elif sw == "english+questions":
            sw = sorted(ENGLISH_STOP_WORDS.union(QUESTION_STOP_WORDS))
        try:
            vec = TfidfVectorizer(
                stop_words=sw,
                strip_accents=self.strip_accents,
                sublinear_tf=self.sublinear_tf,
                norm="l2",
                vocabulary=vocabulary,
                **dict(self.vectorizer_kwargs),
            )
            vec._validate_params()
            if self.stemmer is not None:
                clash = _WORD_ANALYZER_PARAMS.intersection(dict(self.vectorizer_kwargs))
                if clash:
                    raise ValueError(
                        f"vectorizer_kwargs {sorted(clash)} cannot be combined with a stemmer "
                        "(set stemmer=None)"
                    )
                analyzer = _StemmedAnalyzer(vec.build_analyzer(), self.stemmer)
                kw = {k: v for k, v in vec.get_params().items() if k not in _WORD_ANALYZER_PARAMS}
                vec = TfidfVectorizer(**{**kw, "analyzer": analyzer})
                vec._validate_params()
        except TypeError as exc:
            raise ValueError(f"bad vectorizer_kwargs: {exc}") from None
        return vec

    def to_dict(self) -> dict:
        d = asdict(self)
        d["stop_words"] = (
            list(self.stop_words) if isinstance(self.stop_words, tuple) else (self.stop_words)
        )
        d["vectorizer_kwargs"] = dict(self.vectorizer_kwargs)
        return d

    @classmethod
    def from_preset(cls, preset: str = "default", **overrides) -> MixPRConfig:
        """The preset's settings with ``overrides`` applied (unknown names raise ``TypeError``)."""
        check_choice(preset, "preset", PRESETS)
        return replace(PRESETS[preset], **overrides) if overrides else PRESETS[preset]


PERSONALIZATIONS = ("query", "similarity")

# TfidfVectorizer parameters that only its own word analyzer reads (moved into the stemmer's).
_WORD_ANALYZER_PARAMS = frozenset(
    {
        "analyzer",
        "input",
        "encoding",
        "decode_error",
        "strip_accents",
        "lowercase",
        "preprocessor",
        "tokenizer",
        "stop_words",
        "token_pattern",
        "ngram_range",
    }
)

#: ``"paper"``: the exact setting of the paper's appendix A.2 as implemented before the index
#: (the literal per-query pipeline: query appended before the TF-IDF fit, every edge
#: thresholded at .27, one-hot personalization on the query node, newline chunking, no accent
#: folding, no stemming, alpha .6, no coverage weighting). ``"default"``: built once per corpus, tuned on SQuAD, NarrativeQA,
#: HotpotQA and bAbI (``benchmarks/MIXPR_DEFAULTS.md``): see :class:`MixPR`.
PRESETS: dict[str, MixPRConfig] = {}
PRESETS["paper"] = MixPRConfig(
    threshold=0.27,
    query_threshold=None,
    stop_words="english",
    strip_accents=None,
    sublinear_tf=False,
    personalization="query",
    fit_query=True,
    stemmer=None,
    split_lines=True,
    alpha_local=0.6,
    coverage_power=0.0,
    min_words=None,
    literal_query_weights=True,
)
PRESETS["default"] = MixPRConfig()


def _personalization(n_query: int, query_chunks: Sequence[str]) -> np.ndarray:
    """Restart weights over the query nodes (sec. 4 "Personalization vector"): one-hot on the last
    query chunk, or .5 / .5 on the last two when the last one has fewer than 3 words."""
    p = np.zeros(n_query)
    if n_query >= 2 and len(query_chunks[-1].split()) < 3:
        p[-2:] = 0.5
    else:
        p[-1] = 1.0
    return p


class _LazyTexts(Sequence):
    """``texts[i]`` sliced on demand from the sources (the router sees the units without a copy)."""

    def __init__(self, texts, source, starts, ends):
        self._t, self._s, self._a, self._b = texts, source, starts, ends

    def __len__(self):
        return len(self._a)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._t[self._s[i]][self._a[i] : self._b[i]]


class MixPRIndex(RetrievalIndex):
    """MixPR built once per corpus, queried many times (Alonso and Millidge, "Mixture-of-PageRanks:
    Replacing Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4).

    Build (:meth:`from_texts`, query-independent): chunk every text (``chunk_words``), fit TF-IDF
    on the chunks, build the thresholded similarity graph ``S`` (:func:`similarity_graph`), its
    column sums, the chunk token counts and the global PageRank. Search (:meth:`search`): the
    query, split like the text into ``m`` query chunks, is transformed with the fitted vectorizer;
    one sparse product gives its similarities ``B`` (``(n, m)``) to the chunks, thresholded at
    ``query_threshold`` and weighted by query coverage (``coverage_power``); the graph is bordered with the query nodes,
    ``[[S, B], [B^T, Q]]`` with column sums fixed for the affected columns, and personalized
    PageRank runs on it as a matrix-free power iteration (one sparse product with ``S`` per
    iteration). Nothing is rebuilt and nothing on the index changes, so it can be shared by
    threads and asyncio tasks.

    Global queries (the router says ``"global"``) use the PageRank of the chunk graph computed
    at build time (``alpha=0``, query-independent, the query not in the graph). A local query
    that reaches no chunk (no query edge above the threshold) falls back to it too; the result's
    ``mode`` is then ``"global-fallback"`` and the fallback is logged.

    How it differs from the paper-literal pipeline (``fit_query=True``, :class:`MixPR` with
    ``preset="paper"``): there the query is appended before fitting TF-IDF, so its terms enter
    the vocabulary and the IDF, and global PageRank runs with the query nodes in the graph. Here
    the query is weighed as that fit would weigh it (IDF with ``n + 1`` documents, the query
    counting in its terms' document frequency) and, with ``literal_query_weights`` (the paper
    preset), so are the chunks' weights of the query's terms (the affected rows re-normalized),
    so the query's edges are the literal ones; the chunk-chunk graph keeps the text's own IDF,
    and global PageRank runs without query nodes. On ten War and Peace questions the top-100
    overlap of ``preset="paper", fit_query=False`` with the literal path is 0.99 to 1.00 (mean
    0.998; ``benchmarks/bench_mixpr.py``).

    Parameters (of :meth:`from_texts`)
    ----------------------------------
    texts : str or sequence of str
        The corpus; each text is chunked on its own, all chunks form one graph.
    preset : {"default", "paper"}
        Base settings (:data:`PRESETS`); any :class:`MixPRConfig` field overrides by keyword.
    router : callable ``(query, chunks) -> "local" | "global"``, optional
        :class:`KeywordRouter` by default; :class:`LLMRouter` asks an LLM (appendix A.2 prompt).
    token_counter : callable ``str -> int``, optional
        Counts each chunk's tokens once for token budgets (``longctx.tokens.count_tokens``).
    progress : bool
        tqdm bar over the build stages on stderr.

    Examples
    --------
    >>> index = MixPRIndex.from_texts(book_text)  # doctest: +SKIP
    >>> result = index.search("Who gave Alice the bottle?", k=20)  # doctest: +SKIP
    >>> result.mode, [h.text for h in result.hits][:3]  # doctest: +SKIP
    >>> index.save("alice.mixpr"); MixPRIndex.load("alice.mixpr")  # doctest: +SKIP
    """

    method = "mixpr"
    FORMAT_VERSION = 1

    def __init__(
        self,
        texts: tuple[str, ...],
        config: MixPRConfig,
        *,
        vectorizer,
        unit_source: np.ndarray,
        unit_index: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        token_counts: np.ndarray | None,
        graph: sp.csr_array,
        embeddings: sp.csr_array,
        router=None,
        token_counter_name: str = "count_tokens",
        token_counter: TokenCounter | None = None,
    ):
        self._texts = texts
        self.config = config
        self._vectorizer = vectorizer
        self.unit_source = unit_source
        self.unit_index = unit_index
        self.starts = starts
        self.ends = ends
        self._token_counts = token_counts
        self._token_counter = token_counter
        self._counts_lock = threading.Lock()
        self.token_counter_name = token_counter_name
        if router is not None and not callable(router):
            raise TypeError(f"router must be callable, got {type(router).__name__}")
        self.router = router if router is not None else KeywordRouter()
        # E by term (CSC): a query reads only its terms' columns.
        self._E_by_term = sp.csc_array(embeddings, dtype=np.float32)
        # S in float32 for the per-query products; column sums of S in float64.
        self._S = sp.csr_array(graph, dtype=np.float32)
        if self._S.nnz < 2**31:  # int32 indices: less memory traffic per product
            self._S.indices = self._S.indices.astype(np.int32)
            self._S.indptr = self._S.indptr.astype(np.int32)
        self._colsum = np.bincount(
            self._S.indices, weights=self._S.data, minlength=self._S.shape[1]
        ).astype(np.float64)
        self._global_pr = None  # PageRank of the chunk graph, computed on first use

    # -- building -----------------------------------------------------------------------------
    @property
    def texts(self) -> tuple[str, ...]:
        return self._texts

    @property
    def n_units(self) -> int:
        return len(self.starts)

    @property
    def token_counts(self) -> np.ndarray:
        """``(n_units,) int64`` tokens of each unit (the build's ``token_counter``), counted once
        on first use (the first token-budget query, or :meth:`save`), then shared read-only."""
        if self._token_counts is None:
            with self._counts_lock:
                if self._token_counts is None:
                    texts = [
                        self._texts[d][a:b]
                        for d, a, b in zip(
                            self.unit_source.tolist(), self.starts.tolist(), self.ends.tolist()
                        )
                    ]
                    counts = count_many(texts, self._token_counter)
                    counts.setflags(write=False)
                    self._token_counts = counts
        return self._token_counts

    @classmethod
    def from_texts(
        cls,
        texts,
        *,
        preset: str = "default",
        router=None,
        token_counter: TokenCounter | None = None,
        progress: bool = False,
        chunk: bool = True,
        **params,
    ) -> MixPRIndex:
        """Build the index (see the class docstring). With ``chunk=False`` every text is one unit
        (for callers whose texts are already chunks, e.g. LlamaIndex nodes).

        Raises
        ------
        TypeError, ValueError
            Bad texts or settings (checked before any heavy work), or texts that hold no term to
            index once stop words are removed.
        """
        config = MixPRConfig.from_preset(preset, **params)
        texts = check_texts(texts)
        if token_counter is not None and not callable(token_counter):
            raise TypeError("token_counter must be a callable str -> int")
        if router is not None and not callable(router):
            raise TypeError(f"router must be callable, got {type(router).__name__}")
        bar = _stage_bar(progress, 3, "mixpr chunk")
        try:
            units = [
                (d, i, a, b)
                for d, t in enumerate(texts)
                for i, (a, b) in enumerate(config.chunk(t) if chunk else [(0, len(t))])
            ]
            if not units:
                raise ValueError("texts hold no words to retrieve from")
            src, idx, starts, ends = (np.asarray(c, dtype=np.int64) for c in zip(*units))
            unit_texts = [texts[d][a:b] for d, _, a, b in units]
            _stage(bar, "mixpr embed")
            vec = config.vectorizer()
            try:
                E = sp.csr_array(vec.fit_transform(unit_texts))
            except ValueError as exc:
                if "empty vocabulary" not in str(exc):
                    raise
                raise ValueError(
                    "texts hold no term to index once stop words are removed "
                    f"(stop_words={config.stop_words!r})"
                ) from None
            _stage(bar, "mixpr graph")
            S = similarity_graph(E, config.threshold)
            _stage(bar, "mixpr done")
        finally:
            if bar is not None:
                bar.close()
        name = (
            "count_tokens"
            if token_counter is None
            else getattr(token_counter, "__name__", "custom")
        )
        return cls(
            texts,
            config,
            vectorizer=vec,
            unit_source=src,
            unit_index=idx,
            starts=starts,
            ends=ends,
            token_counts=None,
            graph=S,
            embeddings=E,
            router=router,
            token_counter_name=name,
            token_counter=token_counter,
        )

    def global_pagerank(self) -> np.ndarray:
        """``(n_units,) float64`` PageRank of the chunk graph (``alpha=0``, query-independent):
        the scores of global queries and of the fallback. Computed once, on first use, then
        shared read-only."""
        if self._global_pr is None:
            with self._counts_lock:
                if self._global_pr is None:
                    pr = self._pagerank_global()
                    pr.setflags(write=False)
                    self._global_pr = pr
        return self._global_pr

    def _pagerank_global(self) -> np.ndarray:
        n = self.n_units
        uniform = np.full(n, 1.0 / n)
        return self._power_iteration(sp.csr_array((n, 0)), None, uniform, alpha=0.0)[:n]

    # -- searching ----------------------------------------------------------------------------
    def route(self, query: str) -> str:
        """``"local"`` or ``"global"`` for ``query``, as the router decides (logged at INFO)."""
        chunks = _LazyTexts(self._texts, self.unit_source, self.starts, self.ends)
        mode = self.router(query, chunks)
        if mode not in ("local", "global"):
            raise RuntimeError(f"router returned {mode!r}, expected 'local' or 'global'")
        logger.info("MixPR router: %s for query %.80r", mode, query)
        return mode

    def score(self, query: str, mode: str = "auto") -> tuple[np.ndarray, str, dict]:
        """Scores of every unit for ``query``: ``(scores (n_units,) float64, mode used, timings)``.

        ``mode`` used is ``"local"``, ``"global"`` or ``"global-fallback"`` (local asked, but no
        chunk passes ``query_threshold``: PageRank is used and the fallback logged).
        """
        check_text(query, "query")
        check_choice(mode, "mode", MODES)
        timings = {}
        t0 = time.perf_counter()
        if mode == "auto":
            mode = self.route(query)
            timings["route"] = time.perf_counter() - t0
        if mode == "global":
            t0 = time.perf_counter()
            pr = self.global_pagerank().copy()  # computed on the first global query, then reused
            timings["rank"] = time.perf_counter() - t0
            return pr, mode, timings
        t0 = time.perf_counter()
        cfg = self.config
        qchunks = [query[a:b] for a, b in cfg.chunk(query)]
        if not qchunks:
            qchunks = [query]
        Eq, Q = self._query_vectors(qchunks)
        thr = self.config.effective_query_threshold
        # (n, m) query-chunk similarities: only the columns of the query's terms are read.
        terms = np.unique(Eq.indices)
        Et = sp.csc_array(self._E_by_term[:, terms], dtype=np.float64)
        if cfg.literal_query_weights:
            Et = self._reweight_query_terms(Et, terms)
        Eqt = Eq[:, terms]
        B = sp.csr_array(Et @ sp.csr_array(Eqt, dtype=np.float64).T)
        B.data[B.data < thr] = 0.0
        B.eliminate_zeros()
        if cfg.coverage_power and B.nnz:
            B = self._weigh_by_coverage(B, Et, Eqt)
        timings["embed_query"] = time.perf_counter() - t0
        if B.nnz == 0:
            logger.info(
                "MixPR: no chunk reaches query_threshold=%.3g for query %.80r; "
                "using PageRank (global mode)",
                thr,
                query,
            )
            return self.global_pagerank().copy(), "global-fallback", timings
        t0 = time.perf_counter()
        Q = np.where(Q >= thr, Q, 0.0)
        m = len(qchunks)
        p_query = _personalization(m, qchunks)
        n = self.n_units
        if self.config.personalization == "similarity":
            # restart over the chunks by their similarity to the query; the query is no node
            # of the walk (it would be a hub joining every chunk that shares a query term)
            w = B @ p_query
            if w.sum() <= 0:  # the restart query chunk itself links nowhere
                w = np.asarray(B.sum(axis=1)).ravel()
            pi = self._power_iteration(
                sp.csr_array((n, 0)), None, w / w.sum(), alpha=self.config.alpha_local
            )
        else:
            p = np.concatenate([np.zeros(n), p_query])
            pi = self._power_iteration(B, Q, p, alpha=self.config.alpha_local)
        timings["rank"] = time.perf_counter() - t0
        return np.ascontiguousarray(pi[:n]), "local", timings

    def _reweight_query_terms(self, Et: sp.csc_array, terms: np.ndarray) -> sp.csc_array:
        """The chunks' weights of the query's terms as the paper-literal pipeline has them.

        There the query is one more document, so each query term's document frequency is one
        higher and its IDF lower; every chunk holding it gets that column scaled by
        ``idf' / idf`` and its row re-normalized (the other terms' IDF shift, ``~1/n``, is
        negligible). Only the query terms' columns (``Et``, ``(n, t)``) are touched; the
        chunk-chunk graph keeps the text's own IDF.
        """
        vec = self._vectorizer
        if not vec.use_idf or Et.nnz == 0:
            return Et
        n = self.n_units
        idf = vec.idf_[terms]
        if vec.smooth_idf:
            df = (1 + n) / np.exp(idf - 1) - 1
            new = np.log((2 + n) / (2 + df)) + 1.0
        else:
            df = n / np.exp(idf - 1)
            new = np.log((n + 1) / (df + 1)) + 1.0
        ratio = new / idf
        Et = Et.copy()
        rows = Et.indices
        cols = np.repeat(np.arange(len(terms)), np.diff(Et.indptr))
        old = Et.data
        # squared row norms change by sum over the query terms of w^2 (r^2 - 1)
        delta = np.bincount(rows, weights=old * old * (ratio[cols] ** 2 - 1.0), minlength=n)
        if vec.norm == "l2":  # unit rows: the new norm follows from the changed weights alone
            norm = np.sqrt(np.maximum(1.0 + delta, 1e-12))
            Et.data = old * ratio[cols] / norm[rows]
        else:
            Et.data = old * ratio[cols]
        return Et

    def _weigh_by_coverage(self, B: sp.csr_array, Et, Eqt) -> sp.csr_array:
        """``B[i, j] * coverage[i, j] ** coverage_power``: ``coverage[i, j]`` is the share of
        query chunk ``j``'s TF-IDF weight (L1) on the terms that chunk ``i`` holds."""
        hits = sp.csc_array(Et, copy=True)
        hits.data[:] = 1.0
        matched = sp.csr_array(hits @ sp.csr_array(Eqt, dtype=np.float32).T, dtype=np.float64)
        total = np.asarray(Eqt.sum(axis=1), dtype=np.float64).ravel()
        cov = matched.multiply(1.0 / np.where(total > 0, total, 1.0)[None, :])
        cov = sp.csr_array(cov)
        cov.data = np.clip(cov.data, 0.0, 1.0) ** self.config.coverage_power
        return sp.csr_array(B.multiply(cov))

    def _query_vectors(self, qchunks: list[str]) -> tuple[sp.csr_array, np.ndarray]:
        """TF-IDF rows of the query chunks as the paper-literal pipeline weighs them, had the
        query been one more document of the corpus: IDF with ``n + 1`` documents and the query
        counted in its own terms' document frequency, and terms unseen in the text kept in the
        L2 norm (they match no chunk, but a query full of them is less similar to every chunk).

        Returns ``(Eq (m, V) float32 CSR over the fitted vocabulary, Q (m, m) float64 query-query
        cosine similarities)``.
        """
        vec = self._vectorizer
        analyzer = vec.build_analyzer()
        vocab = vec.vocabulary_
        n = self.n_units
        use_idf, smooth = vec.use_idf, vec.smooth_idf
        if use_idf:
            idf = vec.idf_
            # document frequencies recovered from the fitted IDF (smooth: ln((1+n)/(1+df)) + 1)
            df = (1 + n) / np.exp(idf - 1) - 1 if smooth else n / np.exp(idf - 1)
        weights = []
        for chunk in qchunks:
            tf = Counter(analyzer(chunk))
            w = {}
            for term, count in tf.items():
                c = 1.0 if vec.binary else float(count)
                if vec.sublinear_tf:
                    c = 1.0 + np.log(c)
                if use_idf:
                    j = vocab.get(term)
                    d = (df[j] if j is not None else 0.0) + 1.0  # the query is a document too
                    c *= (np.log((2 + n) / (1 + d)) if smooth else np.log((n + 1) / d)) + 1.0
                w[term] = c
            norm = np.sqrt(sum(v * v for v in w.values())) or 1.0
            weights.append({t: v / norm for t, v in w.items()})
        m = len(qchunks)
        rows, cols, vals = [], [], []
        for i, w in enumerate(weights):
            for term, v in w.items():
                j = vocab.get(term)
                if j is not None:
                    rows.append(i)
                    cols.append(j)
                    vals.append(v)
        Eq = sp.csr_array((vals, (rows, cols)), shape=(m, len(vocab)), dtype=np.float32)
        Q = np.array(
            [[sum(v * wj.get(t, 0.0) for t, v in wi.items()) for wj in weights] for wi in weights]
        )
        return Eq, Q

    def _power_iteration(self, B, Q, p, alpha: float) -> np.ndarray:
        """Personalized PageRank (eq. 2, networkx conventions as :func:`personalized_pagerank`)
        on the bordered graph ``[[S, B], [B^T, Q]]``, matrix-free."""
        S = self._S
        n = S.shape[0]
        m = B.shape[1]
        N = n + m
        Bsum_rows = np.asarray(B.sum(axis=1)).ravel() if m else np.zeros(n)
        col_c = self._colsum + Bsum_rows
        col_q = (np.asarray(B.sum(axis=0)).ravel() + Q.sum(axis=0)) if m else np.zeros(0)
        col = np.concatenate([col_c, col_q])
        inv = np.divide(1.0, col, out=np.zeros_like(col), where=col > 0)
        dangling = col == 0
        x = np.full(N, 1.0 / N)
        damping = 1.0 - alpha
        restart = alpha * p
        for _ in range(self.config.max_iter):
            x_last = x
            v = x_last * inv
            y = np.empty(N)
            y[:n] = S @ v[:n].astype(np.float32)
            if m:
                y[:n] += B @ v[n:]
                y[n:] = B.T @ v[:n] + Q @ v[n:]
            if dangling.any():
                y += x_last[dangling].sum() * p
            x = damping * y + restart
            if np.abs(x - x_last).sum() < N * self.config.tol:
                break
        return x

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str = "auto",
    ) -> SearchResult:
        """The best chunks for ``query``, in document order (by source, then position).

        Parameters
        ----------
        query : str, non-empty
        k : int >= 1, optional
            Number of chunks (100 by default, as in the paper, when no ``token_budget``).
        token_budget : int >= 1, optional
            Most tokens of the selection, as counted at build time (``token_counter``).
        mode : {"auto", "local", "global"}
            ``"auto"`` asks the router.

        Returns
        -------
        SearchResult
            ``hits``: :class:`Passage` with ``score`` the PageRank probability, ``index`` the
            chunk's position in ``chunk_words`` of its text, ``source`` the text's position;
            ``mode``: ``"local"``, ``"global"`` or ``"global-fallback"``; ``timings`` in seconds.

        Raises
        ------
        TypeError, ValueError
            Empty query, unknown mode, bad sizes (checked before any work).
        longctx.selection.BudgetTooSmallError
            (a ``ValueError``) If ``token_budget`` is smaller than the shortest chunk.
        """
        check_text(query, "query")
        check_choice(mode, "mode", MODES)
        k, token_budget = check_size(k, token_budget, default_k=100)
        if token_budget is not None:  # before any scoring: no chunk would fit
            check_budget_fits(token_budget, self.token_counts)
        scores, used, timings = self.score(query, mode)
        t0 = time.perf_counter()
        if token_budget is not None:
            idx = select_top(scores, token_budget=token_budget, token_counts=self.token_counts)
            budget = {"token_budget": token_budget, "unit": self.token_counter_name}
        else:
            idx = select_top(scores, k=k)
            budget = {"k": k}
        hits = tuple(self._hit(int(i), float(scores[i])) for i in idx.tolist())
        timings["select"] = time.perf_counter() - t0
        return SearchResult(hits, self.method, used, timings, budget)

    def _hit(self, i: int, score: float) -> Passage:
        d, a, b = int(self.unit_source[i]), int(self.starts[i]), int(self.ends[i])
        return Passage(a, b, self._texts[d][a:b], score, int(self.unit_index[i]), d)

    def units(self) -> list[Passage]:
        """Every unit (chunk) of the index in document order, with score 0."""
        return [self._hit(i, 0.0) for i in range(self.n_units)]

    # -- persistence --------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the index to directory ``path``: ``config.json`` (settings), ``texts.json``,
        ``vocabulary.json`` (terms by column), ``arrays.npz`` (IDF, unit offsets, token counts),
        ``graph.npz`` and ``embeddings.npz`` (scipy.sparse). The router is not saved."""
        vocab = self._vectorizer.get_feature_names_out().tolist()
        write_dir(
            path,
            kind="mixpr",
            version=self.FORMAT_VERSION,
            json_files={
                "config": {**self.config.to_dict(), "token_counter": self.token_counter_name},
                "texts": list(self._texts),
                "vocabulary": vocab,
            },
            arrays={
                "arrays": {
                    "idf": self._vectorizer.idf_,
                    "unit_source": self.unit_source,
                    "unit_index": self.unit_index,
                    "starts": self.starts,
                    "ends": self.ends,
                    "token_counts": self.token_counts,
                }
            },
            sparse={"graph": self._S, "embeddings": self._E_by_term.tocsr()},
        )

    @classmethod
    def load(cls, path, *, router=None) -> MixPRIndex:
        """Read an index written by :meth:`save` (pass the ``router`` again if it was not the
        default keyword router).

        Raises
        ------
        PersistError
            A missing, truncated or damaged file (named), another index kind or format version,
            or files that do not fit together.
        """
        d = Path(path)
        read_manifest(d, kind="mixpr", versions=(cls.FORMAT_VERSION,))
        cfg = read_json(d / "config.json")
        texts = read_json(d / "texts.json")
        vocab = read_json(d / "vocabulary.json")
        keys = ("idf", "unit_source", "unit_index", "starts", "ends", "token_counts")
        arrs = read_arrays(d / "arrays.npz", keys)
        S = read_sparse(d / "graph.npz")
        E = read_sparse(d / "embeddings.npz")
        try:
            counter = cfg.pop("token_counter")
            # indexes saved before these fields existed were built without them
            cfg.setdefault("stemmer", None)
            cfg.setdefault("split_lines", True)
            cfg.setdefault("min_words", None)
            cfg.setdefault("coverage_power", 0.0)
            cfg.setdefault("literal_query_weights", False)
            config = MixPRConfig(**cfg)
            texts = check_texts(texts, "texts.json")
            n = len(arrs["starts"])
            ok = (
                isinstance(vocab, list)
                and len(arrs["idf"]) == len(vocab) == E.shape[1]
                and S.shape == (n, n)
                and E.shape[0] == n
                and all(len(arrs[k]) == n for k in keys[1:])
            )
            if not ok:
                raise ValueError("array shapes do not fit together")
            vec = config.vectorizer(vocabulary={t: i for i, t in enumerate(vocab)})
            vec.idf_ = arrs["idf"]
        except (TypeError, ValueError, KeyError) as exc:
            raise PersistError(f"{str(d)!r} holds an inconsistent MixPR index: {exc}") from None
        return cls(
            texts,
            config,
            vectorizer=vec,
            unit_source=arrs["unit_source"],
            unit_index=arrs["unit_index"],
            starts=arrs["starts"],
            ends=arrs["ends"],
            token_counts=arrs["token_counts"],
            graph=S,
            embeddings=E,
            router=router,
            token_counter_name=counter,
        )


def _stage_bar(progress: bool, total: int, desc: str):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="stage", leave=False)


def _stage(bar, desc: str) -> None:
    if bar is not None:
        bar.update(1)
        bar.set_description(desc)


class MixPR:
    """Mixture-of-PageRanks retrieval in one call (Alonso and Millidge, "Mixture-of-PageRanks:
    Replacing Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4 and
    appendix A.2).

    Local queries (questions): personalized PageRank (``alpha_local=0.6``) restarting at the
    query. Global queries (summaries): PageRank (``alpha=0``). A router decides.

    Presets (one argument, ``preset=``). ``"paper"`` is the exact setting of appendix A.2 (query
    appended before the TF-IDF fit, every edge thresholded at .27, one-hot personalization on the
    query node, chunks cut at line breaks, no accent folding, no stemming). It loses ordinary
    questions: a natural question is long next to a 32-word chunk, its cosine to most chunks is
    under .27, so 47 of 177 SQuAD questions reach no chunk and fall back to query-free PageRank.
    ``"default"`` changes (``benchmarks/MIXPR_DEFAULTS.md``, ``bench_mixpr_quality.py``):

    - the query's edges kept down to ``query_threshold=0.05`` and the restart mass spread over
      the chunks by their similarity to the query (``personalization="similarity"``), chunk
      graph at ``threshold=0.2``;
    - TF-IDF fitted on the chunks only (built once, :class:`MixPRIndex`), English Snowball
      stemming (``stemmer="english"``), ``sublinear_tf=True``, accent folding
      (``strip_accents="unicode"``: "Natasha" finds "Natásha"), question words and auxiliaries
      as stop words (``stop_words="english+questions"``);
    - hard-wrapped text unwrapped (``split_lines=False``): long sentences cut at blank lines and
      into equal word pieces, not into line fragments;
    - the query's edges weighted by query coverage (``coverage_power=4``: the share of the
      question's TF-IDF weight on terms the chunk holds, to the 4th power) and more weight on
      the restart (``alpha_local=0.8``). Without it a cosine prefers short chunks holding part of
      the question, and PageRank piles mass on their dense cluster: for "What did the Mock
      Turtle sing about?" on Alice the top 5 were five "... said the Mock Turtle." lines; with
      it the top 5 hold "Sing her 'Turtle Soup,'" and the song itself ("Beautiful Soup, so rich
      and green"). Nine natural questions on Alice, War and Peace, Moby-Dick and Pride and
      Prejudice: answer in the top 5 for 6 (BM25 3, the paper 3, without coverage 2).

    Answer in the selection, same chunks and SmolLM2-token budget for every method (paper /
    BM25 (rank-bm25) / default): SQuAD at 5% 63.3 / 93.8 / 96.0, NarrativeQA summaries at 10%
    42.5 / 61.7 / 64.2, HotpotQA all supporting sentences at 20% 23 / 34 / 37 (at 10% and 40%
    the default ties BM25 on "all": 19 / 19 and 51 / 51, the mean share 50.1 / 50.0 and
    77.0 / 76.7); bAbI qa1-qa3 in 16k and 128k tokens of Gutenberg, all facts in the top 100:
    paper 0.94-1.00, BM25 1.00 / 0.00 / 0.00, default 1.00 / 1.00 / 1.00. The coverage margin
    on HotpotQA is thin: powers 2, 3 and 6 lose HotpotQA at 20% to BM25
    (``benchmarks/MIXPR_DEFAULTS.md``).

    For many queries on one corpus, build a :class:`MixPRIndex` once (:meth:`index`) and call its
    ``search``: a one-off :meth:`search` / :meth:`retrieve` builds one and throws it away, so both
    rank alike. With ``preset="paper"`` (``fit_query=True``) the paper-literal pipeline runs
    instead: the query is appended to the chunks before TF-IDF is fitted, so everything is
    rebuilt per query.

    Parameters
    ----------
    preset : {"default", "paper"}
        Base settings (:data:`PRESETS`); see above.
    router : callable ``(query, chunks) -> "local" | "global"``, optional
        :class:`KeywordRouter` by default; :class:`LLMRouter` asks an LLM.
    progress : bool, default False
        tqdm bars on stderr for the build stages.
    **params
        Any :class:`MixPRConfig` field (``threshold``, ``query_threshold``, ``alpha_local``,
        ``max_iter``, ``tol``, ``max_words``, ``stop_words``, ``strip_accents``, ``sublinear_tf``,
        ``personalization``, ``fit_query``, ``vectorizer_kwargs``, ``stemmer``, ``split_lines``,
        ``coverage_power``, ``min_words``).

    Raises
    ------
    TypeError, ValueError
        Unknown or bad settings (named), before any work.

    Examples
    --------
    >>> passages = MixPR().retrieve(book_text, "Where is the milk?", k=100)  # doctest: +SKIP
    >>> MixPR(router=LLMRouter(lambda p: llm.complete(p).text))  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        preset: str = "default",
        router: Callable[[str, Sequence[str]], str] | None = None,
        progress: bool = False,
        **params,
    ):
        self.config = MixPRConfig.from_preset(preset, **params)
        if router is not None and not callable(router):
            raise TypeError(f"router must be callable, got {type(router).__name__}")
        self.router = router if router is not None else KeywordRouter()
        self.progress = bool(progress)

    @property
    def max_words(self) -> int:
        return self.config.max_words

    @property
    def threshold(self) -> float:
        return self.config.threshold

    # -- one corpus, many queries -------------------------------------------------------------
    def index(
        self, texts, *, token_counter: TokenCounter | None = None, chunk: bool = True
    ) -> MixPRIndex:
        """A :class:`MixPRIndex` over ``texts`` with these settings and router (``chunk=False``:
        every text is one unit)."""
        return MixPRIndex.from_texts(
            texts,
            router=self.router,
            token_counter=token_counter,
            progress=self.progress,
            chunk=chunk,
            **self.config.to_dict(),
        )

    def route(self, query: str, chunks: Sequence[str] = ()) -> str:
        """``"local"`` or ``"global"`` for ``query``, as the router decides."""
        mode = self.router(query, chunks)
        if mode not in ("local", "global"):
            raise RuntimeError(f"router returned {mode!r}, expected 'local' or 'global'")
        logger.info("MixPR router: %s for query %.80r", mode, query)
        return mode

    def query_chunks(self, query: str) -> list[str]:
        """The query split like the text (``chunk_words``, ``max_words``): the query node(s)."""
        cfg = self.config
        return [query[a:b] for a, b in cfg.chunk(query)]

    def embed(self, texts: Sequence[str]) -> sp.csr_array:
        """TF-IDF rows fitted on ``texts``, L2-normalized: ``(len(texts), V)`` float64 CSR.

        Raises
        ------
        ValueError
            ``texts`` hold no term once stop words are removed.
        """
        try:
            return sp.csr_array(self.config.vectorizer().fit_transform(texts))
        except ValueError as exc:
            if "empty vocabulary" not in str(exc):
                raise
            raise ValueError(
                "the text holds no term to index once stop words are removed "
                f"(stop_words={self.config.stop_words!r})"
            ) from None

    def graph(self, texts: Sequence[str]) -> sp.csr_array:
        """``A = normalize(E E^T)`` thresholded (eq. 3): column-stochastic ``(n, n)`` CSR."""
        return column_normalize(similarity_graph(self.embed(texts), self.config.threshold))

    # -- scoring ------------------------------------------------------------------------------
    def rank(self, chunks: Sequence[str], query: str, mode: str = "auto") -> np.ndarray:
        """PageRank scores of the given ``chunks`` (each one unit, not re-chunked) for ``query``.

        Returns
        -------
        (len(chunks),) float64 array; see :meth:`rank_with_mode`.
        """
        return self.rank_with_mode(chunks, query, mode)[0]

    def rank_with_mode(
        self, chunks: Sequence[str], query: str, mode: str = "auto"
    ) -> tuple[np.ndarray, str | None]:
        """PageRank scores of ``chunks`` for ``query`` and the mode used.

        With ``fit_query=True`` (the paper): the query is appended after the chunks as the last
        node(s) (split like the text) before TF-IDF is fitted; the personalization is one-hot on
        the last query chunk, or .5 / .5 on the last two when the last one has fewer than 3 words
        (sec. 4 "Personalization vector"). Otherwise the chunks are indexed
        (:class:`MixPRIndex`) and the query bordered onto their graph. A local query that reaches
        no chunk falls back to PageRank: mode ``"global-fallback"``, logged.

        Parameters
        ----------
        chunks : sequence of str, in document order
        query : str, non-empty
        mode : {"auto", "local", "global"}

        Returns
        -------
        scores : (len(chunks),) float64
            Stationary probabilities of the chunk nodes (query nodes excluded, so they may sum
            to less than 1). Higher is more relevant.
        mode : "local", "global", "global-fallback", or None for no chunks

        Raises
        ------
        TypeError, ValueError
            Bad ``chunks``, empty ``query`` or unknown ``mode``.
        """
        check_text(query, "query")
        check_choice(mode, "mode", MODES)
        if isinstance(chunks, str) or not isinstance(chunks, Sequence):
            raise TypeError("chunks must be a sequence of str")
        chunks = list(chunks)
        for i, c in enumerate(chunks):
            if not isinstance(c, str):
                raise TypeError(f"chunks[{i}] must be a str, got {type(c).__name__}")
        if not chunks:
            return np.zeros(0, dtype=np.float64), None
        if not self.config.fit_query:
            keep = [i for i, c in enumerate(chunks) if c.strip()]
            scores = np.zeros(len(chunks))
            if not keep:
                return scores, None
            index = MixPRIndex.from_texts(
                [chunks[i] for i in keep],
                chunk=False,
                router=self.router,
                **self.config.to_dict(),
            )
            s, used, _ = index.score(query, mode)
            scores[keep] = s
            return scores, used
        return self._rank_literal(chunks, query, mode)

    def _rank_literal(self, chunks: list[str], query: str, mode: str):
        n = len(chunks)
        if mode == "auto":
            mode = self.route(query, chunks)
        q = self.query_chunks(query) or [query]
        texts = chunks + q
        A = self.graph(texts)
        N = len(texts)
        p = np.zeros(N)
        p[n:] = _personalization(len(q), q)
        if mode == "local" and A[:n, n:].nnz == 0:
            logger.info(
                "MixPR: no chunk reaches threshold=%.3g for query %.80r; using PageRank",
                self.config.threshold,
                query,
            )
            mode = "global-fallback"
        if mode == "local":
            cfg = self.config
            if cfg.personalization == "similarity":  # as MixPRIndex: the query is no node
                S = similarity_graph(self.embed(texts), cfg.threshold)
                w = sp.csr_array(S[:n, n:]) @ p[n:]
                if w.sum() <= 0:  # the restart query chunk itself links nowhere
                    w = np.asarray(sp.csr_array(S[:n, n:]).sum(axis=1)).ravel()
                A, p = column_normalize(S[:n, :n]), w
            pi = personalized_pagerank(A, p, cfg.alpha_local, cfg.max_iter, cfg.tol)
        else:
            uniform = np.full(N, 1.0 / N)
            pi = personalized_pagerank(A, uniform, 0.0, self.config.max_iter, self.config.tol)
        return np.ascontiguousarray(pi[:n], dtype=np.float64), mode

    def score_text(
        self, text: str, query: str, mode: str = "auto"
    ) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Chunk ``text`` (character spans) and score every chunk: ``(spans, scores)``."""
        check_text(text, "text")
        spans = self.config.chunk(text)
        scores = self.rank([text[a:b] for a, b in spans], query, mode)
        return spans, scores

    def search(
        self,
        texts,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str = "auto",
        token_counter: TokenCounter | None = None,
    ) -> SearchResult:
        """The best chunks of ``texts`` (one or many) for ``query``, as a :class:`SearchResult`
        (see :meth:`MixPRIndex.search`). Arguments are checked before any work."""
        texts = check_texts(texts)
        check_text(query, "query")
        check_choice(mode, "mode", MODES)
        k, token_budget = check_size(k, token_budget, default_k=100)
        if token_counter is not None and not callable(token_counter):
            raise TypeError("token_counter must be a callable str -> int")
        if not self.config.fit_query:
            index = self.index(texts, token_counter=token_counter)
            return index.search(query, k=k, token_budget=token_budget, mode=mode)
        t0 = time.perf_counter()
        units = [
            (d, i, a, b)
            for d, t in enumerate(texts)
            for i, (a, b) in enumerate(self.config.chunk(t))
        ]
        unit_texts = [texts[d][a:b] for d, _, a, b in units]
        scores, used = self.rank_with_mode(unit_texts, query, mode)
        timings = {"rank": time.perf_counter() - t0}
        if token_budget is not None:
            counts = count_many(unit_texts, token_counter)
            idx = select_top(scores, token_budget=token_budget, token_counts=counts)
            name = (
                "count_tokens"
                if token_counter is None
                else getattr(token_counter, "__name__", "custom")
            )
            budget = {"token_budget": token_budget, "unit": name}
        else:
            idx = select_top(scores, k=k)
            budget = {"k": k}
        hits = tuple(
            Passage(
                units[i][2], units[i][3], unit_texts[i], float(scores[i]), units[i][1], units[i][0]
            )
            for i in idx.tolist()
        )
        return SearchResult(hits, "mixpr", used, timings, budget)

    def retrieve(
        self,
        text: str,
        query: str,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str = "auto",
        token_counter: TokenCounter | None = None,
    ) -> list[Passage]:
        """The best chunks of ``text`` for ``query``, in document (chronological) order.

        Parameters
        ----------
        text : str
            The long input.
        query : str
        k : int >= 1, optional
            Number of chunks (default 100, as in the paper, when no ``token_budget``).
        token_budget : int >= 1, optional
            Most tokens of the selection, counted with ``token_counter``.
        mode : {"auto", "local", "global"}
        token_counter : callable ``str -> int``, optional
            ``longctx.tokens.count_tokens`` by default.

        Returns
        -------
        list of Passage
            ``text[p.start:p.end] == p.text`` (character offsets); ``p.score`` the PageRank
            probability; ``p.index`` the chunk index. (:meth:`search` also gives the mode used
            and timings.)

        Raises
        ------
        TypeError, ValueError
            Bad arguments (checked before any heavy work), or both ``k`` and ``token_budget``.
        """
        check_text(text, "text")
        result = self.search(
            text, query, k=k, token_budget=token_budget, mode=mode, token_counter=token_counter
        )
        return list(result.hits)


__all__ = [
    "MixPR",
    "MixPRIndex",
    "MixPRConfig",
    "PRESETS",
    "KeywordRouter",
    "LLMRouter",
    "ROUTER_PROMPT",
    "personalized_pagerank",
    "similarity_graph",
    "column_normalize",
]
