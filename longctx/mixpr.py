"""MixPR: mixture-of-PageRanks retrieval over sparse TF-IDF chunk graphs.

Source: ``../shared/papers/003_66700b152cf6a0ed.txt`` ("Mixture-of-PageRanks"), sec. 4 (eq. 2 personalized
PageRank, eq. 3 ``A = normalize(E^T E)``, personalization vector, dynamic alpha) and appendix A.2
(threshold .27, 18 iterations, alpha .6, the zero-shot router prompt).

Pipeline (all sparse, never an ``n x n`` dense matrix):

1. chunks (``longctx.text.chunk_words``, N=32 words) + the query appended as the last chunk(s);
2. TF-IDF embeddings (scikit-learn), L2-normalized rows;
3. ``S = E E^T`` computed in row blocks (upper triangle only, then mirrored), entries ``< threshold``
   dropped per block; ``A = S D^{-1}`` (each column divided by its sum: column-stochastic);
4. personalized PageRank (local queries, ``alpha=0.6``) or PageRank (global queries, ``alpha=0``);
5. top-k / token budget in chronological order (``longctx.selection.select_top``).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from longctx._validate import check_choice, check_float, check_int, check_text
from longctx.selection import select_top
from longctx.text import chunk_words
from longctx.tokens import TokenCounter, count_many
from longctx.types import Passage

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
    r"|describe (this|the) (book|document|text|story|novel|article|report|paper))\b",
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

    Paper eq. 2 (003_66700b152cf6a0ed.txt, sec. 4). ``alpha`` weights the *personalization*
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
    E32 = sp.csr_array(E, dtype=np.float32)
    E32.sum_duplicates()
    ET = sp.csc_array(E32.T)  # column slices of E^T (= rows of E) are cheap in CSC
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
    llm : callable ``str -> str``
        Any completion function. With LlamaIndex: ``LLMRouter(lambda p: llm.complete(p).text)``;
        with a LangChain chat model: ``LLMRouter(lambda p: chat.invoke(p).content)``; with a LangChain
        LLM: ``LLMRouter(llm.invoke)``.
    n_context : int >= 0, default 2
        Chunks taken from each end of the input (0: the query alone).
    """

    def __init__(self, llm: Callable[[str], str], n_context: int = 2):
        if not callable(llm):
            raise TypeError(f"llm must be a callable str -> str, got {type(llm).__name__}")
        self.llm = llm
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
        answer = self.llm(self.prompt(query, chunks))
        answer = str(getattr(answer, "content", answer)).strip().strip("'\"\u2018\u2019`").lower()
        if answer.startswith("y"):
            return "global"
        if answer.startswith("n"):
            return "local"
        return self.fallback(query, chunks)


class MixPR:
    """Mixture-of-PageRanks retriever (003_66700b152cf6a0ed.txt, sec. 4 and appendix A.2).

    Local queries (questions): personalized PageRank with ``alpha_local=0.6`` started from the
    query node(s). Global queries (summaries): PageRank, ``alpha=0``. A router decides.

    Parameters
    ----------
    threshold : float, default 0.27
        Cosine similarities below it are dropped from the graph (appendix A.2).
    alpha_local : float in (0, 1], default 0.6
        Restart weight for local queries (eq. 2).
    max_iter : int, default 18
        Power iterations (appendix A.2); stops earlier at ``tol``.
    tol : float, default 1e-6
    max_words : int, default 32
        N of the chunker (sec. 4 "Chunking method"), used by :meth:`retrieve` and for the query.
    router : callable ``(query, chunks) -> "local" | "global"``, optional
        :class:`KeywordRouter` by default; :class:`LLMRouter` asks an LLM with the paper's prompt.
    stop_words : "english", list of str or None, default "english"
        Passed to scikit-learn's ``TfidfVectorizer``. The paper does not state its TF-IDF
        settings; dropping English stop words keeps ``E E^T`` cheap on long texts (1M tokens of
        Gutenberg, ~70k chunks: ~1.4e8 term-pair products instead of ~4.1e9, i.e. ~1.5 s instead
        of over a minute here) and stops "the" / "is" from linking unrelated sentences.
        ``None`` gives plain TF-IDF (exact paper setting when it is what they used; slow on
        long texts).
    vectorizer_kwargs : dict, optional
        More ``TfidfVectorizer`` arguments (e.g. ``{"sublinear_tf": True}``).
    progress : bool, default False
        tqdm bars on stderr for the chunk / embed / graph / rank stages.

    Examples
    --------
    >>> mp = MixPR()
    >>> passages = mp.retrieve(book_text, "Where is the milk?", k=100)  # doctest: +SKIP
    >>> # the paper's LLM router, with any str -> str callable:
    >>> mp = MixPR(router=LLMRouter(lambda p: llm.complete(p).text))  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        threshold: float = 0.27,
        alpha_local: float = 0.6,
        max_iter: int = 18,
        tol: float = 1e-6,
        max_words: int = 32,
        router: Callable[[str, Sequence[str]], str] | None = None,
        stop_words: str | list[str] | None = "english",
        vectorizer_kwargs: dict | None = None,
        progress: bool = False,
    ):
        self.threshold = check_float(threshold, "threshold", low=0.0, high=1.0)
        self.alpha_local = check_float(alpha_local, "alpha_local", low=0.0, high=1.0)
        if self.alpha_local == 0:
            raise ValueError("alpha_local must be > 0 (alpha=0 is the global expert)")
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.tol = check_float(tol, "tol", low=0.0)
        self.max_words = check_int(max_words, "max_words", minimum=1)
        if router is not None and not callable(router):
            raise TypeError(f"router must be callable, got {type(router).__name__}")
        self.router = router if router is not None else KeywordRouter()
        self.stop_words = stop_words
        self.vectorizer_kwargs = dict(vectorizer_kwargs or {})
        self.progress = bool(progress)
        #: mode used by the last call of :meth:`rank` ("local" or "global")
        self.last_mode_: str | None = None
        self._bar = None

    # -- stages -------------------------------------------------------------------------------
    def route(self, query: str, chunks: Sequence[str] = ()) -> str:
        """``"local"`` or ``"global"`` for ``query``, as the router decides."""
        mode = self.router(query, chunks)
        if mode not in ("local", "global"):
            raise RuntimeError(f"router returned {mode!r}, expected 'local' or 'global'")
        return mode

    def query_chunks(self, query: str) -> list[str]:
        """The query split like the text (``chunk_words``, ``max_words``): the query node(s)."""
        return [query[a:b] for a, b in chunk_words(query, self.max_words)]

    def embed(self, texts: Sequence[str]) -> sp.csr_array:
        """TF-IDF rows, L2-normalized: ``(len(texts), V)`` float64 CSR (sec. 4, appendix A.2)."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(stop_words=self.stop_words, norm="l2", **self.vectorizer_kwargs)
        try:
            return sp.csr_array(vec.fit_transform(texts))
        except ValueError:  # empty vocabulary (only stop words / punctuation)
            return sp.csr_array((len(texts), 1), dtype=np.float64)

    def graph(self, texts: Sequence[str]) -> sp.csr_array:
        """``A = normalize(E E^T)`` thresholded (eq. 3): column-stochastic ``(n, n)`` CSR."""
        return column_normalize(similarity_graph(self.embed(texts), self.threshold))

    # -- scoring ------------------------------------------------------------------------------
    def rank(self, chunks: Sequence[str], query: str, mode: str = "auto") -> np.ndarray:
        """PageRank scores of ``chunks`` for ``query``.

        The query is appended after the chunks as the last node(s) (split like the text); the
        personalization is one-hot on the last query chunk, or .5 / .5 on the last two when the
        last one has fewer than 3 words (sec. 4 "Personalization vector"; the query's own chunks
        only, never the text's). If the query shares no term with the text, a local query
        cannot reach any chunk: a warning is given and PageRank (global) is used.

        Parameters
        ----------
        chunks : sequence of str, in document order
        query : str, non-empty
        mode : {"auto", "local", "global"}
            ``"auto"`` asks the router.

        Returns
        -------
        (len(chunks),) float64 array: stationary probabilities of the chunk nodes (query
        node(s) excluded, so they sum to less than 1). Higher is more relevant.

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
        n = len(chunks)
        if n == 0:
            self.last_mode_ = None
            return np.zeros(0, dtype=np.float64)
        if mode == "auto":
            mode = self.route(query, chunks)
        q = self.query_chunks(query)
        texts = chunks + q
        bar = self._bar
        if bar is not None:
            bar.set_description("mixpr embed")
        E = self.embed(texts)
        if bar is not None:
            bar.update(1)
            bar.set_description("mixpr graph")
        A = column_normalize(similarity_graph(E, self.threshold))
        if bar is not None:
            bar.update(1)
            bar.set_description("mixpr rank")
        N = len(texts)
        p = np.zeros(N)
        if len(q) >= 2 and len(q[-1].split()) < 3:
            p[-2:] = 0.5
        else:
            p[-1] = 1.0
        if mode == "local":
            # Does any walk from the query reach a chunk of the text?
            if A[:n, n:].nnz == 0:
                warnings.warn(
                    "MixPR: the query shares no term with the text; using PageRank (global mode)",
                    RuntimeWarning,
                    stacklevel=2,
                )
                mode = "global"
        self.last_mode_ = mode
        if mode == "local":
            pi = personalized_pagerank(A, p, self.alpha_local, self.max_iter, self.tol)
        else:
            uniform = np.full(N, 1.0 / N)
            pi = personalized_pagerank(A, uniform, 0.0, self.max_iter, self.tol)
        if bar is not None:
            bar.update(1)
        return np.ascontiguousarray(pi[:n], dtype=np.float64)

    def score_text(
        self, text: str, query: str, mode: str = "auto"
    ) -> tuple[list[tuple[int, int]], np.ndarray]:
        """Chunk ``text`` (character spans) and score every chunk: ``(spans, scores)``."""
        check_text(text, "text")
        check_text(query, "query")
        check_choice(mode, "mode", MODES)
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=4, desc="mixpr chunk", unit="stage", leave=False)
        try:
            spans = chunk_words(text, self.max_words)
            if bar is not None:
                bar.update(1)
            self._bar = bar
            scores = self.rank([text[a:b] for a, b in spans], query, mode)
        finally:
            self._bar = None
            if bar is not None:
                bar.close()
        return spans, scores

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
            probability; ``p.index`` the chunk index.

        Raises
        ------
        TypeError, ValueError
            Bad arguments (checked before any heavy work), or both ``k`` and ``token_budget``.
        """
        check_text(text, "text")
        check_text(query, "query")
        check_choice(mode, "mode", MODES)
        check_int(k, "k", minimum=1, allow_none=True)
        check_int(token_budget, "token_budget", minimum=1, allow_none=True)
        if k is not None and token_budget is not None:
            raise ValueError("give at most one of k and token_budget")
        if token_counter is not None and not callable(token_counter):
            raise TypeError("token_counter must be a callable str -> int")
        if k is None and token_budget is None:
            k = 100
        spans, scores = self.score_text(text, query, mode)
        texts = [text[a:b] for a, b in spans]
        if token_budget is not None:
            counts = count_many(texts, token_counter)
            idx = select_top(scores, token_budget=token_budget, token_counts=counts)
        else:
            idx = select_top(scores, k=k)
        return [
            Passage(spans[i][0], spans[i][1], texts[i], float(scores[i]), int(i))
            for i in idx.tolist()
        ]


__all__ = [
    "MixPR",
    "KeywordRouter",
    "LLMRouter",
    "ROUTER_PROMPT",
    "personalized_pagerank",
    "similarity_graph",
    "column_normalize",
]
