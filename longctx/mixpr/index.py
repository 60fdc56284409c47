"""MixPR built once per corpus, queried many times: :class:`MixPRIndex` (build, search, save,
load) and the build-stage progress bar. Saving and loading (the file layout and the validation of
saved files) live in :mod:`longctx.mixpr.persist`."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from longctx.checks import check_choice, check_query
from longctx.index import RetrievalIndex, check_texts
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.graph import similarity_graph

# ``X as X``: also importable from ``longctx.mixpr.index`` as before the split.
from longctx.mixpr.persist import LOADABLE_VECTORIZER_KWARGS as LOADABLE_VECTORIZER_KWARGS
from longctx.mixpr.persist import _check_unit_vectors, load_index, save_index
from longctx.mixpr.router import MODES, KeywordRouter
from longctx.persist import PersistError as PersistError
from longctx.selection import check_budget_fits, check_size, select_top
from longctx.tokens import TokenCounter, count_many
from longctx.types import Passage, SearchResult

logger = logging.getLogger(__name__)


def _by_max(x: np.ndarray) -> np.ndarray:
    """``x / max(x)`` (``x`` unchanged when its maximum is not positive)."""
    top = float(x.max()) if len(x) else 0.0
    return x / top if top > 0 else x.astype(np.float64, copy=True)


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
    progress : bool or None
        tqdm bar over the build stages on stderr (``True``); ``None`` (the default of
        :meth:`from_texts`): only the bar of a hybrid index's embedding, on a terminal.

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
        unit_vectors: np.ndarray | None = None,
        encoder=None,
        encoder_identity: dict | None = None,
    ):
        self._texts = texts
        if unit_vectors is not None:
            unit_vectors = _check_unit_vectors(unit_vectors, len(starts))
            unit_vectors.setflags(write=False)
        self._unit_vectors = unit_vectors
        self._encoder = encoder
        ident = dict(encoder_identity or {})
        if unit_vectors is not None:
            ident["dim"] = int(unit_vectors.shape[1])
            ident.setdefault("name", None if encoder is None else encoder.name)
        self._encoder_identity = ident
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
    def unit_vectors(self) -> np.ndarray | None:
        """``(n_units, dim) float32`` L2-normalized dense vectors of the units (hybrid mode,
        read-only), or ``None``."""
        return self._unit_vectors

    @property
    def encoder_identity(self) -> dict:
        """``{"name": encoder name or None, "dim": int}`` in hybrid mode, else ``{}``."""
        return dict(self._encoder_identity)

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
        progress: bool | None = None,
        chunk: bool = True,
        encoder=None,
        unit_vectors=None,
        **params,
    ) -> MixPRIndex:
        """Build the index (see the class docstring). With ``chunk=False`` every text is one unit
        (for callers whose texts are already chunks, e.g. LlamaIndex nodes).

        Hybrid mode (``encoder`` or ``unit_vectors``): every unit gets a dense vector once, at
        build time (saved with the index); each local query is embedded once and its nearest
        units join the walk's restart distribution (``dense_restart``, ``dense_top_k`` of
        :class:`MixPRConfig`; ``dense_weight``, default 0, also adds the cosine to the score).

        Parameters
        ----------
        encoder : optional
            Anything :func:`longctx.embeddings.get_encoder` accepts: a LlamaIndex
            ``BaseEmbedding``, a LangChain ``Embeddings``, a sentence-transformers model, a model
            path, an :class:`longctx.embeddings.Encoder` or a callable ``list[str] -> (n, dim)``.
            Embeds the units (unless ``unit_vectors``) and the queries.
        unit_vectors : (n_units, dim) float array, optional
            Precomputed vectors of the units, in :attr:`units` order (build once without them to
            learn the units, or use ``chunk=False``); rows are L2-normalized here. Without an
            ``encoder``, queries need ``query_vector=``.

        Raises
        ------
        TypeError, ValueError
            Bad texts or settings (checked before any heavy work), ``unit_vectors`` of the wrong
            count of rows, dimension or values (named, before the TF-IDF fit), or texts that
            hold no term to index once stop words are removed.
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
            enc = None
            if encoder is not None:
                from longctx.embeddings import get_encoder

                enc = get_encoder(encoder)
            if unit_vectors is not None:
                unit_vectors = _check_unit_vectors(unit_vectors, len(units))
            elif enc is not None:
                from longctx.embeddings import embed_texts

                unit_vectors = embed_texts(enc, unit_texts, progress=progress, desc="mixpr units")
                unit_vectors = _check_unit_vectors(unit_vectors, len(units))
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
            unit_vectors=unit_vectors,
            encoder=enc,
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

    def score(
        self, query: str, mode: str = "auto", *, query_vector=None
    ) -> tuple[np.ndarray, str, dict]:
        """Scores of every unit for ``query``: ``(scores (n_units,) float64, mode used, timings)``.

        ``mode`` used is ``"local"``, ``"global"`` or ``"global-fallback"`` (local asked, but no
        chunk passes ``query_threshold`` and no unit vector is near: PageRank is used and the
        fallback logged). Local scores are the walk's probabilities divided by their maximum,
        plus ``lexical_weight`` times the direct TF-IDF cosine and, in hybrid mode,
        ``dense_weight`` times the dense cosine (each divided by its maximum); with both weights
        0 (``preset="paper"``) they are the walk's probabilities.

        ``query_vector`` : ``(dim,)`` float, optional
            Hybrid mode: the query's vector (else the index's encoder embeds ``query``).
        """
        check_query(query, "query")
        check_choice(mode, "mode", MODES)
        timings = {}
        t0 = time.perf_counter()
        if mode == "auto":
            mode = self.route(query)
            timings["route"] = time.perf_counter() - t0
        if query_vector is not None and self._unit_vectors is None:
            raise ValueError("query_vector needs an index built with encoder= or unit_vectors=")
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
        m = len(qchunks)
        p_query = _personalization(m, qchunks)
        # direct lexical score: the units' cosine to the query's restart chunk(s), unthresholded
        lexical = np.asarray(B @ p_query).ravel() if cfg.lexical_weight else None
        B.data[B.data < thr] = 0.0
        B.eliminate_zeros()
        if cfg.coverage_power and B.nnz:
            B = self._weigh_by_coverage(B, Et, Eqt)
        dense = None
        if self._unit_vectors is not None:
            dense = self._dense_scores(query, query_vector)
        timings["embed_query"] = time.perf_counter() - t0
        n = self.n_units
        dense_w = None
        if dense is not None and cfg.dense_restart:
            dense_w = self._dense_restart(dense)
        if B.nnz == 0 and dense_w is None:
            logger.info(
                "MixPR: no chunk reaches query_threshold=%.3g for query %.80r; "
                "using PageRank (global mode)",
                thr,
                query,
            )
            return self.global_pagerank().copy(), "global-fallback", timings
        t0 = time.perf_counter()
        Q = np.where(Q >= thr, Q, 0.0)
        if self.config.personalization == "similarity" or B.nnz == 0:
            # restart over the chunks by their similarity to the query; the query is no node
            # of the walk (it would be a hub joining every chunk that shares a query term)
            w = B @ p_query if B.nnz else np.zeros(n)
            if B.nnz and w.sum() <= 0:  # the restart query chunk itself links nowhere
                w = np.asarray(B.sum(axis=1)).ravel()
            w = w / w.sum() if w.sum() > 0 else w
            if dense_w is not None:
                w = w + cfg.dense_restart * dense_w
            pi = self._power_iteration(
                sp.csr_array((n, 0)), None, w / w.sum(), alpha=self.config.alpha_local
            )
        else:
            if dense_w is not None:  # dense query edges next to the lexical ones
                B = sp.csr_array(B + sp.csr_array(np.outer(dense_w, p_query)) * B.sum())
            p = np.concatenate([np.zeros(n), p_query])
            pi = self._power_iteration(B, Q, p, alpha=self.config.alpha_local)
        scores = np.ascontiguousarray(pi[:n])
        if lexical is not None or (dense is not None and cfg.dense_weight):
            scores = _by_max(scores)
            if lexical is not None:
                scores += cfg.lexical_weight * _by_max(lexical)
            if dense is not None and cfg.dense_weight:
                scores += cfg.dense_weight * _by_max(np.maximum(dense, 0.0))
        timings["rank"] = time.perf_counter() - t0
        return scores, "local", timings

    def _dense_scores(self, query: str, query_vector=None) -> np.ndarray:
        """``(n_units,) float64`` cosine of every unit vector to the query's vector."""
        d = self._unit_vectors.shape[1]
        if query_vector is None:
            if self._encoder is None:
                raise ValueError(
                    "this MixPR index holds unit vectors but no encoder to embed the query "
                    f"(encoder {self._encoder_identity.get('name')!r}): pass query_vector= "
                    "to search / score, or encoder= to from_texts / load"
                )
            query_vector = self._encoder.embed_query(query)
        q = np.asarray(query_vector, dtype=np.float32)
        if q.shape != (d,):
            raise ValueError(f"query_vector must have shape ({d},), got {q.shape}")
        if not np.isfinite(q).all():
            raise ValueError("query_vector must be finite")
        norm = float(np.linalg.norm(q))
        if norm == 0:
            return np.zeros(self.n_units)
        return (self._unit_vectors @ (q / norm)).astype(np.float64)

    def _dense_restart(self, dense: np.ndarray) -> np.ndarray | None:
        """The dense restart distribution: the ``dense_top_k`` nearest units (positive cosine
        only), in proportion to their cosine; ``None`` when no unit is near."""
        k = min(self.config.dense_top_k, len(dense))
        top = np.argpartition(-dense, k - 1)[:k]
        top = top[dense[top] > 0]
        if not len(top):
            return None
        w = np.zeros(len(dense))
        w[top] = dense[top]
        return w / w.sum()

    def _lexical_parts(self, query: str) -> dict:
        """Study helper: ``{"cos": (n_units,) direct TF-IDF cosine of each unit to the query}``."""
        cfg = self.config
        qchunks = [query[a:b] for a, b in cfg.chunk(query)] or [query]
        Eq, _ = self._query_vectors(qchunks)
        terms = np.unique(Eq.indices)
        Et = sp.csc_array(self._E_by_term[:, terms], dtype=np.float64)
        B = sp.csr_array(Et @ sp.csr_array(Eq[:, terms], dtype=np.float64).T)
        p_query = _personalization(len(qchunks), qchunks)
        return {"cos": np.asarray(B @ p_query).ravel()}

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
        # query-query cosines as one sparse product over all the query's terms (seen or not):
        # linear in the query's length where pairwise dict sums were quadratic
        qterms: dict[str, int] = {}
        qr, qc, qv = [], [], []
        for i, w in enumerate(weights):
            for term, v in w.items():
                qr.append(i)
                qc.append(qterms.setdefault(term, len(qterms)))
                qv.append(v)
        W = sp.csr_array((qv, (qr, qc)), shape=(m, len(qterms)), dtype=np.float64)
        Q = (W @ W.T).toarray()
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
        query_vector=None,
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
        query_vector : (dim,) float, optional
            Hybrid mode: the query's dense vector (else the index's encoder embeds the query).

        Returns
        -------
        SearchResult
            ``hits``: :class:`Passage` with ``score`` the unit's score (:meth:`score`), ``index`` the
            chunk's position in ``chunk_words`` of its text, ``source`` the text's position;
            ``mode``: ``"local"``, ``"global"`` or ``"global-fallback"``; ``timings`` in seconds.

        Raises
        ------
        TypeError, ValueError
            Empty query, unknown mode, bad sizes (checked before any work).
        longctx.selection.BudgetTooSmallError
            (a ``ValueError``) If ``token_budget`` is smaller than the shortest chunk.
        """
        check_query(query, "query")
        check_choice(mode, "mode", MODES)
        k, token_budget = check_size(k, token_budget, default_k=100)
        if token_budget is not None:  # before any scoring: no chunk would fit
            check_budget_fits(token_budget, self.token_counts)
        scores, used, timings = self.score(query, mode, query_vector=query_vector)
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
        ``graph.npz`` and ``embeddings.npz`` (scipy.sparse), and in hybrid mode ``vectors.npz``
        (``unit_vectors``: ``(n_units, dim) float32``) with the encoder's name and dimension in
        ``config.json``. The router and the encoder object are not saved."""
        save_index(self, path)

    @classmethod
    def load(cls, path, *, router=None, encoder=None) -> MixPRIndex:
        """Read an index written by :meth:`save` (pass the ``router`` again if it was not the
        default keyword router).

        ``encoder`` (hybrid indexes): the encoder for queries, as given to :meth:`from_texts`.
        ``None``: the default all-MiniLM-L6-v2 when the index was built with it (loaded on the
        first query), else queries need ``query_vector=``.

        Raises
        ------
        PersistError
            A missing, truncated or damaged file (named), another index kind or format version,
            or files that do not fit together.
        ValueError
            ``encoder`` embeds in another dimension than the saved unit vectors.
        """
        return load_index(cls, path, router=router, encoder=encoder)


def _stage_bar(progress: bool, total: int, desc: str):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="stage", leave=False)


def _stage(bar, desc: str) -> None:
    if bar is not None:
        bar.update(1)
        bar.set_description(desc)
