"""MixPR in one call: :class:`MixPR` (one-off search / retrieve / rank, and the paper-literal
per-query pipeline of ``preset="paper"``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from longctx.checks import check_choice, check_query, check_text
from longctx.index import check_texts
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.graph import column_normalize, personalized_pagerank, similarity_graph
from longctx.mixpr.index import MixPRIndex, _personalization
from longctx.mixpr.query import restart_reaching_units
from longctx.mixpr.router import MODES, KeywordRouter
from longctx.selection import check_size, select_top
from longctx.tokens import TokenCounter, count_many
from longctx.types import Passage, SearchResult

logger = logging.getLogger(__name__)


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
      Prejudice: answer in the top 5 for 6 (BM25 3, the paper 3, without coverage 2);
    - (issue 22) units of up to ``max_words=64`` words (long sentences stay whole) and the
      unit's direct TF-IDF cosine added to the walk's score (``lexical_weight=0.25``), so the
      tail of the ranking is ordered by relevance, not by the walk's diffusion: at every budget
      of ``longctx bench``'s SQuAD, NarrativeQA and HotpotQA at least sentence BM25
      (``docs/notes/mixpr-recall.md``). Hybrid mode (``MixPRIndex.from_texts(encoder=...)``)
      adds dense unit vectors to the restart and the score.

    Before issue 22 (32-word units, no lexical term): answer in the selection, same chunks and
    SmolLM2-token budget for every method (paper /
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
    preset : {"default", "paper", "multihop", "pagerank"}
        Base settings (:data:`PRESETS`); see above. ``"default"`` chooses the walk per index
        and per query (``walk="auto"``); ``"multihop"`` and ``"pagerank"`` force one.
    router : callable ``(query, chunks) -> "local" | "global"``, optional
        :class:`KeywordRouter` by default; :class:`LLMRouter` asks an LLM.
    progress : bool or None, default None
        tqdm bars on stderr for the build stages (``True``); ``None``: only the bar of a hybrid
        index's embedding, and only when stderr is a terminal; ``False``: none.
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
        progress: bool | None = None,
        **params,
    ):
        self.config = MixPRConfig.from_preset(preset, **params)
        if router is not None and not callable(router):
            raise TypeError(f"router must be callable, got {type(router).__name__}")
        self.router = router if router is not None else KeywordRouter()
        self.progress = None if progress is None else bool(progress)

    @property
    def max_words(self) -> int:
        return self.config.max_words

    @property
    def threshold(self) -> float:
        return self.config.threshold

    # -- one corpus, many queries -------------------------------------------------------------
    def index(
        self,
        texts,
        *,
        ids=None,
        metadatas=None,
        token_counter: TokenCounter | None = None,
        chunk: bool = True,
        encoder=None,
        unit_vectors=None,
    ) -> MixPRIndex:
        """A :class:`MixPRIndex` over ``texts`` with these settings and router (``ids`` /
        ``metadatas``: one per text; ``chunk=False``: every text is one unit; ``encoder`` /
        ``unit_vectors``: hybrid mode, see :meth:`MixPRIndex.from_texts`)."""
        return MixPRIndex.from_texts(
            texts,
            ids=ids,
            metadatas=metadatas,
            router=self.router,
            token_counter=token_counter,
            progress=self.progress,
            chunk=chunk,
            encoder=encoder,
            unit_vectors=unit_vectors,
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
        return column_normalize(self._similarity(texts))

    def _similarity(self, texts: Sequence[str]) -> sp.csr_array:
        """``S``, the thresholded ``E E^T`` of :meth:`graph` before its normalization."""
        return similarity_graph(self.embed(texts), self.config.threshold)

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
        (sec. 4 "Personalization vector"); when those reach no chunk (no edge of theirs, nor
        through the query chunks' edges to one with an edge: a last sentence whose words the
        text does not hold), it is spread evenly over the query chunks with an edge to a chunk
        (:func:`~longctx.mixpr.query.restart_reaching_units`, as :class:`MixPRIndex`'s bordered
        walk does), logged. Otherwise the chunks are indexed
        (:class:`MixPRIndex`) and the query bordered onto their graph. A local query that reaches
        no chunk falls back to PageRank: mode ``"global-fallback"``, logged. The chunks are
        taken as the units of one text: with ``walk="auto"`` (the default) they get the walk
        :class:`MixPRIndex` gives one document (PageRank, no phrase graph to build), so
        :meth:`score_text` scores a text as ``MixPRIndex.from_texts(text).score`` does (85,877
        chunks of War and Peace + Monte Cristo: 3.0-4.3 s instead of 6.6-6.8 s, most of it the
        phrase graph); ``walk="multihop"`` asks for the multi-hop walk.

        Parameters
        ----------
        chunks : sequence of str, in document order
        query : str, non-empty
        mode : {"auto", "local", "global"}

        Returns
        -------
        scores : (len(chunks),) float64
            Stationary probabilities of the chunk nodes (query nodes excluded, so they may sum
            to less than 1) with ``lexical_weight=0`` (the paper); otherwise local scores are
            :meth:`MixPRIndex.score`'s blend. Higher is more relevant.
        mode : "local", "global", "global-fallback", or None for no chunks

        Raises
        ------
        TypeError, ValueError
            Bad ``chunks``, empty ``query`` or unknown ``mode``.
        """
        check_query(query, "query")
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
            params = self.config.to_dict()
            if params["walk"] == "auto":
                # the chunks are one text's units: the walk of one document (PageRank, no
                # phrase graph), as MixPRIndex plans it for that text (router.plan_walk)
                params["walk"] = "pagerank"
            index = MixPRIndex.from_texts(
                [chunks[i] for i in keep], chunk=False, router=self.router, **params
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
        cfg = self.config
        S = self._similarity(texts)
        A = column_normalize(S)  # :meth:`graph`
        N = len(texts)
        p = np.zeros(N)
        p_query = _personalization(len(q), q)
        if mode == "local" and A[:n, n:].nnz == 0:
            logger.info(
                "MixPR: no chunk reaches threshold=%.3g for query %.80r; using PageRank",
                cfg.threshold,
                query,
            )
            mode = "global-fallback"
        if mode == "local" and cfg.personalization == "query":
            # the restart on query nodes that reach no chunk moves to those with an edge, as
            # MixPRIndex's bordered walk does (its Scorer.score). S is thresholded already
            # (similarity_graph compares its float32 products in float32): its entries are the
            # walk's edges, none dropped again (thr=0: float32(0.7) kept there is < 0.7 here)
            bcol = np.asarray(S[:n, n:].sum(axis=0)).ravel()
            p_reach = restart_reaching_units(p_query, S[n:, n:], bcol, 0.0)
            if p_reach is not p_query:
                logger.info("MixPR: restart moved to the query nodes with edges (%.80r)", query)
                p_query = p_reach
        p[n:] = p_query
        if mode == "local":
            if cfg.personalization == "similarity":  # as MixPRIndex: the query is no node
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
        check_query(query, "query")
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
