"""MixPR built once per corpus, queried many times, grown and shrunk by document:
:class:`MixPRIndex` (build, search with metadata filters, insert / update / delete, save, load)
and the build-stage progress bar. Saving and loading (the file layout and the validation of saved
files) live in :mod:`longctx.mixpr.persist`; the query's edges and the power iteration in
:mod:`longctx.mixpr.query`; the TF-IDF counts in :mod:`longctx.mixpr.tfidf`; the selection of
the hits from the scores (``k``, token budget, ``unique_texts``, ``whole_documents``) in
:mod:`longctx.mixpr.hits`."""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from longctx.checks import check_choice, check_query
from longctx.explain import check_explain, with_explanations
from longctx.index import RetrievalIndex, check_texts
from longctx.mixpr import writes
from longctx.mixpr.build import build_state
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.explain import explain_documents, explain_hits
from longctx.mixpr.hits import (
    dense_scores,
    document_hits,
    select_units,
    unit_hit,
    unit_hits,
    values_at,
)

# ``X as X``: also importable from ``longctx.mixpr.index`` as before the split.
from longctx.mixpr.persist import LOADABLE_VECTORIZER_KWARGS as LOADABLE_VECTORIZER_KWARGS
from longctx.mixpr.query import by_max, lexical_cosines, personalization
from longctx.mixpr.router import MODES, KeywordRouter, query_walk
from longctx.mixpr.scoring import normalized_query_vector
from longctx.mixpr.seeds import (
    check_keep_firsts,
    first_units,
    keep_first_units,
    kept_ranking,
    local_seeds,
    mapped_seeds,
    own_scores,
    seed_source,
    seeds_on,
)
from longctx.mixpr.state import _frozen, _LazyTexts, _State
from longctx.mixpr.tfidf import TermTable
from longctx.mixpr.validation import _check_ids, _check_metadatas
from longctx.persist import PersistError as PersistError
from longctx.selection import check_budget_fits, check_size
from longctx.tokens import TokenCounter, count_units
from longctx.types import Passage, SearchResult
from longctx.word_pieces import shared_chars

logger = logging.getLogger(__name__)

# old private names, kept for the studies that import them
_by_max = by_max
_personalization = personalization


class MixPRIndex(RetrievalIndex):
    """MixPR built once per corpus, queried many times (Alonso and Millidge, "Mixture-of-PageRanks:
    Replacing Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4).

    Build (:meth:`from_texts`, query-independent): chunk every text (``chunk_words``), count
    the terms of every chunk with corpus-wide document frequencies (:class:`TermTable`: the
    TF-IDF rows ``E``, L2-normalized), and keep the unit graph ``S = E E^T`` as its factor
    (:class:`~longctx.mixpr.graph.FactoredGraph`, ``graph="factored"``, the default): a walk step
    is ``E (E^T v)``, two passes over ``E``'s non-zeros, so build time, memory and query time grow
    linearly with the text. The paper's thresholded graph (``graph="threshold"``,
    :func:`~longctx.mixpr.graph.similarity_graph`, the ``"paper"`` preset) is still available: it
    grows with the square of the text where terms repeat (4M words of Gutenberg: 136M entries,
    9 GB), so it suits texts of up to about a million words.

    Search (:meth:`search`): the query, split like the text into query chunks, is transformed
    with the corpus's TF-IDF; one sparse product over its terms' columns gives its similarities
    ``B`` (``(n, m)``) to the units, thresholded at ``query_threshold`` and weighted by query
    coverage (``coverage_power``); personalized PageRank runs on the unit graph as a matrix-free
    power iteration (``personalization="similarity"``: the restart spread over the units by
    their similarity to the query; ``"query"``: the graph bordered with the query nodes,
    ``[[S, B], [B^T, Q]]``). Nothing on the index changes, so it can be shared by threads and
    asyncio tasks; a write (one at a time) builds a new state and swaps it in whole, so a search
    running meanwhile keeps the state it began with (docs/notes/concurrency.md). Global queries (the router says ``"global"``) use the PageRank of the unit
    graph (``alpha=0``), computed once; a local query that reaches no unit falls back to it
    (``mode="global-fallback"``, logged).

    One index holds many documents (each text is one, with an id and metadata): term
    statistics are corpus-wide and one walk runs over every unit, so scores are comparable
    across documents. Documents are inserted, updated and deleted by id (:meth:`insert`,
    :meth:`update`, :meth:`delete`); after any sequence of them every search equals that of an
    index built from the remaining documents at once (same hits, scores within 1e-9; with
    ``graph="threshold"`` the graph is rebuilt, quadratic). Searches take metadata filters
    (``filters=``, :mod:`longctx.filters`), applied to the walk's restart and to the results.

    Parameters (of :meth:`from_texts`)
    ----------------------------------
    texts : str or sequence of str
        The corpus; each text is a document, chunked on its own; all units form one graph.
    ids : sequence of str, optional
        One unique id per text (default ``"0"``, ``"1"``, ...).
    metadatas : sequence of dict, optional
        One JSON-compatible dict per text, for ``filters``.
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
    >>> index.insert([note], ids=["note-7"], metadatas=[{"kind": "note"}])  # doctest: +SKIP
    >>> index.search("bottle", k=5, filters={"kind": "note"})  # doctest: +SKIP
    >>> index.save("alice.mixpr"); MixPRIndex.load("alice.mixpr")  # doctest: +SKIP
    """

    method = "mixpr"
    #: 2: term counts instead of TF-IDF rows and graph (longctx 0.2); 1 is refused (rebuild).
    FORMAT_VERSION = 2

    def __init__(
        self,
        state: _State,
        *,
        router=None,
        token_counter_name: str = "count_tokens",
        token_counter: TokenCounter | None = None,
        encoder=None,
        encoder_identity: dict | None = None,
        chunk: bool = True,
    ):
        self._state = state
        self._write_lock = threading.Lock()
        #: The mark of the corpus index root read or last saved into (mixpr.writes.save)
        self._read_from: dict[str, tuple] = {}
        self._encoder = encoder
        ident = dict(encoder_identity or {})
        if state.unit_vectors is not None:
            ident["dim"] = int(state.unit_vectors.shape[1])
            ident.setdefault("name", None if encoder is None else encoder.name)
        self._encoder_identity = ident
        self._token_counter = token_counter
        self.token_counter_name = token_counter_name
        self.chunk = bool(chunk)
        if router is not None and not callable(router):
            raise TypeError(f"router must be callable, got {type(router).__name__}")
        self.router = router if router is not None else KeywordRouter()

    # -- what the index holds -------------------------------------------------------------------
    @property
    def config(self) -> MixPRConfig:
        return self._state.config

    @property
    def texts(self) -> tuple[str, ...]:
        """The documents' texts, in order (``Passage.source`` indexes this tuple)."""
        return self._state.texts

    @property
    def doc_ids(self) -> tuple[str, ...]:
        """The documents' ids, in the order of :attr:`texts`."""
        return self._state.doc_ids

    def holds(self, doc_id: str) -> bool:
        """Whether the index holds a document of id ``doc_id`` (a dict look-up)."""
        return doc_id in self._state.positions

    @property
    def metadatas(self) -> tuple[Mapping, ...]:
        """The documents' metadata dicts (read-only views), in the order of :attr:`texts`."""
        return self._state.metadata

    @property
    def n_units(self) -> int:
        return self._state.n_units

    @property
    def unit_source(self) -> np.ndarray:
        """``(n_units,)`` int32 (int64 past ``2**31`` or mapped): each unit's document position
        (read-only)."""
        return self._state.unit_source

    @property
    def unit_index(self) -> np.ndarray:
        """``(n_units,) int64``: each unit's position among its document's chunks."""
        return self._state.unit_index

    @property
    def starts(self) -> np.ndarray:
        """``(n_units,)`` int32 (int64 past ``2**31`` or mapped): character offsets of the
        units in their documents (read-only)."""
        return self._state.starts

    @property
    def ends(self) -> np.ndarray:
        return self._state.ends

    @property
    def terms(self) -> TermTable:
        """The term counts and document frequencies (:class:`TermTable`)."""
        return self._state.table

    @property
    def graph(self):
        """The unit graph: :class:`~longctx.mixpr.graph.FactoredGraph` (``graph="factored"``) or
        :class:`~longctx.mixpr.graph.ThresholdGraph`."""
        return self._state.graph

    @property
    def unit_vectors(self) -> np.ndarray | None:
        """``(n_units, dim) float32`` L2-normalized dense vectors of the units (hybrid mode,
        read-only), or ``None``."""
        return self._state.unit_vectors

    @property
    def encoder_identity(self) -> dict:
        """``{"name": encoder name or None, "dim": int}`` in hybrid mode, else ``{}``."""
        return dict(self._encoder_identity)

    @property
    def token_counts(self) -> np.ndarray:
        """``(n_units,) int64`` tokens of each unit (the build's ``token_counter``, each clamped
        to ``[1, 4 * characters + 1024]``: :func:`longctx.tokens.count_units`), counted once on
        first use (the first token-budget query, or :meth:`save`), then shared read-only."""
        return self._counts(self._state)

    def _counts(self, st: _State) -> np.ndarray:
        if st.token_counts is None:
            with st.lock:
                if st.token_counts is None:
                    texts = [st.unit_text(i) for i in range(st.n_units)]
                    st.token_counts = _frozen(count_units(texts, self._token_counter))
        return st.token_counts

    def snapshot(self) -> MixPRIndex:
        """The index as it is now, as its own object (constant time: the documents, units and
        term counts are shared, not copied): later :meth:`insert` / :meth:`update` /
        :meth:`delete` on this index do not reach it, and its own do not reach this index. For
        a caller that pairs search results with data of its own (the framework retrievers'
        nodes and documents): take both at once, under the caller's lock, then search the
        snapshot, so every hit's text, offsets, id and metadata belong to one version."""
        view = copy.copy(self)
        view._write_lock = threading.Lock()
        view._read_from = dict(self._read_from)
        return view

    def units(self) -> list[Passage]:
        """Every unit (chunk) of the index in document order, with score 0."""
        st = self._state
        return [unit_hit(st, i, 0.0) for i in range(st.n_units)]

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls,
        texts,
        *,
        ids: Sequence[str] | None = None,
        metadatas: Sequence[Mapping] | None = None,
        preset: str = "default",
        router=None,
        token_counter: TokenCounter | None = None,
        progress: bool | None = None,
        chunk: bool = True,
        encoder=None,
        unit_vectors=None,
        require_terms: bool = True,
        **params,
    ) -> MixPRIndex:
        """Build the index (see the class docstring). With ``chunk=False`` every text is one unit
        (for callers whose texts are already chunks, e.g. LlamaIndex nodes or passages).

        Hybrid mode (``encoder`` or ``unit_vectors``): every unit gets a dense vector once, at
        build time (saved with the index); each local query is embedded once and its nearest
        units join the walk's restart distribution (``dense_restart``, ``dense_top_k`` of
        :class:`MixPRConfig`; ``dense_weight``, default 0, also adds the cosine to the score).

        Parameters
        ----------
        ids : sequence of str, optional
            Unique document ids (default: the positions as strings).
        metadatas : sequence of dict, optional
            Metadata per document, for ``filters=``; :meth:`save` keeps it, and needs it
            JSON-compatible (str keys; str, number, bool, None or lists / dicts of them).
        encoder : optional
            Anything :func:`longctx.embeddings.get_encoder` accepts: a LlamaIndex
            ``BaseEmbedding``, a LangChain ``Embeddings``, a sentence-transformers model, a model
            path, an :class:`longctx.embeddings.Encoder` or a callable ``list[str] -> (n, dim)``.
            Embeds the units (unless ``unit_vectors``) and the queries.
        unit_vectors : (n_units, dim) float array, optional
            Precomputed vectors of the units, in :meth:`units` order (build once without them to
            learn the units, or use ``chunk=False``); rows are L2-normalized here. Without an
            ``encoder``, queries need ``query_vector=``.
        require_terms : bool, default True
            Refuse texts that hold no term to index; ``False`` accepts them (a shard of a
            sharded index, whose other shards hold the terms).

        Raises
        ------
        TypeError, ValueError
            Bad texts, ids, metadata or settings (checked before any heavy work),
            ``unit_vectors`` of the wrong count of rows, dimension or values (named, before the
            TF-IDF), or texts that hold no term to index once stop words are removed.
        """
        config = MixPRConfig.from_preset(preset, **params)
        with shared_chars(texts):  # each long text's characters found once: check, chunks
            texts = check_texts(texts)
            ids = _check_ids(ids, len(texts), default=[str(i) for i in range(len(texts))])
            metadatas = _check_metadatas(metadatas, len(texts), ids)
            if token_counter is not None and not callable(token_counter):
                raise TypeError("token_counter must be a callable str -> int")
            if router is not None and not callable(router):
                raise TypeError(f"router must be callable, got {type(router).__name__}")
            enc = None
            if encoder is not None:
                from longctx.embeddings import get_encoder

                enc = get_encoder(encoder)
            state = build_state(
                config, texts, ids, metadatas, chunk=chunk, encoder=enc,
                unit_vectors=unit_vectors, progress=progress, require_terms=require_terms,
            )  # fmt: skip
        name = (
            "count_tokens"
            if token_counter is None
            else getattr(token_counter, "__name__", "custom")
        )
        return cls(
            state,
            router=router,
            token_counter_name=name,
            token_counter=token_counter,
            encoder=enc,
            chunk=chunk,
        )

    # -- insert, update, delete ---------------------------------------------------------------
    def insert(
        self,
        texts,
        *,
        ids: Sequence[str],
        metadatas: Sequence[Mapping] | None = None,
        unit_vectors=None,
    ) -> None:
        """Add documents after the existing ones.

        Costs what building these documents costs (chunking and counting their terms), not
        the index's size (the term table keeps appended rows apart,
        :meth:`~longctx.mixpr.tfidf.TermTable.insert_rows`); the first search after inserts
        recomputes the IDF and the row norms (vectorized, linear in the index's non-zeros);
        ``graph="threshold"`` rebuilds its graph.

        Parameters
        ----------
        texts : str or sequence of str
        ids : sequence of str
            New, unique ids (an id the index holds raises: use :meth:`update`).
        metadatas : sequence of dict, optional
        unit_vectors : (n_new_units, dim) array, optional
            Hybrid indexes: the new units' vectors (else the index's encoder embeds them).

        Raises
        ------
        TypeError, ValueError
            Bad texts, ids (taken, duplicated) or metadata, a hybrid index without an encoder
            and without ``unit_vectors``; checked before anything changes.
        """
        writes.insert(self, texts, ids, metadatas, unit_vectors)

    def update(
        self,
        texts,
        *,
        ids: Sequence[str],
        metadatas: Sequence[Mapping] | None = None,
        unit_vectors=None,
    ) -> None:
        """Replace documents by id, each keeping its position (what a new build with the new
        texts in the same order gives).

        Raises
        ------
        KeyError
            An id the index does not hold (nothing changes).
        TypeError, ValueError
            As :meth:`insert`.
        """
        writes.update(self, texts, ids, metadatas, unit_vectors)

    def delete(self, ids) -> None:
        """Remove documents by id.

        Costs passes over the index's term counts (vectorized, linear in its non-zeros);
        ``graph="threshold"`` rebuilds its graph.

        Raises
        ------
        KeyError
            An id the index does not hold (nothing changes).
        """
        writes.delete(self, ids)

    # -- PageRank -----------------------------------------------------------------------------
    def global_pagerank(self) -> np.ndarray:
        """``(n_units,) float64`` PageRank of the unit graph (``alpha=0``, query-independent):
        the scores of global queries and of the fallback. Computed once per version of the
        index (a write makes a new one: its first global query iterates over every unit
        again), on first use, then shared read-only; a global ``k`` query costs its top ``k``."""
        return self._global_pagerank(self._state)

    def _global_pagerank(self, st: _State) -> np.ndarray:
        if not st.n_units:
            return np.zeros(0)
        scorer = st.scorer()
        scorer.ensure_global_pagerank()
        return st.block.global_pr

    # -- searching ----------------------------------------------------------------------------
    def route(self, query: str) -> str:
        """``"local"`` or ``"global"`` for ``query``, as the router decides (logged at INFO)."""
        st = self._state
        chunks = _LazyTexts(st.texts, st.unit_source, st.starts, st.ends)
        mode = self.router(query, chunks)
        if mode not in ("local", "global"):
            raise RuntimeError(f"router returned {mode!r}, expected 'local' or 'global'")
        logger.info("MixPR router: %s for query %.80r", mode, query)
        return mode

    def unit_mask(self, filters) -> np.ndarray | None:
        """``(n_units,) bool``: the units of the documents that ``filters`` keeps (``None``: no
        filter). See :func:`longctx.filters.compile_filter`.

        Raises
        ------
        TypeError, ValueError
            A bad filter (named).
        """
        mask = self._mask(self._state, filters)
        return None if mask is None else mask.dense()

    def _mask(self, st: _State, filters):
        """The :class:`~longctx.mixpr.unit_filter.UnitFilter` of ``filters`` (or ``None``)."""
        st.scorer()
        return st.block.mask(filters)

    def score(
        self, query: str, mode: str = "auto", *, query_vector=None, filters=None, seeds=None
    ) -> tuple[np.ndarray, str, dict]:
        """Scores of every unit for ``query``: ``(scores (n_units,) float64, mode used, timings)``.
        A pass over every unit by contract; :meth:`search` costs what the walk reaches.

        ``mode`` used is ``"local"``, ``"global"`` or ``"global-fallback"`` (local asked, but no
        unit passes ``query_threshold`` and no unit vector is near: PageRank is used and the
        fallback logged). Local scores are the walk's probabilities divided by their maximum,
        plus ``lexical_weight`` times the direct TF-IDF cosine and, in hybrid mode,
        ``dense_weight`` times the dense cosine (each divided by its maximum); with both weights
        0 (``preset="paper"``) they are the walk's probabilities.

        ``query_vector`` : ``(dim,)`` float, optional
            Hybrid mode: the query's vector (else the index's encoder embeds ``query``).
        ``filters`` : optional
            Metadata filters (:func:`longctx.filters.compile_filter`): the walk restarts only at
            units of the documents they keep, and the other units score 0.
        ``seeds`` : sequence of :class:`~longctx.mixpr.seeds.Seed`, optional
            Another retriever's hits for this query (document id, character span, score): the
            units they overlap join the walk's restart in place of the dense nearest units
            (a walk of their own, added to MixPR's, each divided by its maximum:
            :mod:`longctx.mixpr.seeds`). No embedding call; works on any index, hybrid or
            not. Local queries only: a callable ``() -> seeds`` is called only for a local
            query (:func:`~longctx.mixpr.seeds.seed_source`).
        """
        check_query(query, "query")
        check_choice(mode, "mode", MODES)
        seeds = seed_source(seeds)
        st = self._state
        self._mask(st, filters)  # a bad filter raises before any work
        scores, used, timings, _ = self._score(st, query, mode, query_vector, filters, seeds=seeds)
        return dense_scores(scores), used, timings

    def _score(
        self, st: _State, query, mode, query_vector, filters, trace=None, seeds=None, keep=None,
        top=None, own=None,
    ):  # fmt: skip
        """``(scores, mode used, timings, walk)``: the scoring pipeline
        (:class:`~longctx.mixpr.scoring.Scorer`) over the one block of this snapshot (``scores``
        ``(n_units,)`` or :class:`~longctx.selection.SparseScores` over the units a push walk
        reached); ``walk`` the choice of :func:`~longctx.mixpr.router.choose_walk`;
        ``trace``: a list that receives the walk's record (steps, residual), or ``None``;
        ``seeds``: checked :class:`~longctx.mixpr.seeds.Seed` list, or ``None``, or (``own``)
        the ``(units, weights)`` they map to (:func:`~longctx.mixpr.seeds.seeds_on`); ``own``:
        ``keep_firsts``' dict, receives MixPR's own scores as ``"scores"``
        (:func:`~longctx.mixpr.seeds.own_scores`: ``None``, walk again), or ``None``; ``keep``: a
        dict that receives the session's vectors (``"session"``) and the multi-hop walk's
        (``"multihop"``) for :mod:`longctx.mixpr.explain`, or ``None``; ``top``: the ``k`` of
        a plain ``k`` selection (global scores then hold the top ``k`` only), or ``None``."""
        timings = {}
        t0 = time.perf_counter()
        if query_vector is not None and st.unit_vectors is None:
            raise ValueError("query_vector needs an index built with encoder= or unit_vectors=")
        if mode == "auto":
            mode = self.route(query)
            timings["route"] = time.perf_counter() - t0
        qvec = unit_seeds = None
        t0 = time.perf_counter()
        seeds = local_seeds(seeds) if mode == "local" else None  # a callable: asked now
        if seeds is not None:
            unit_seeds = seeds if isinstance(seeds, tuple) else seeds_on(st, seeds)
            timings["seeds"] = time.perf_counter() - t0 + (own or {}).get("seconds", 0.0)
        elif mode == "local" and st.unit_vectors is not None:
            t0 = time.perf_counter()
            qvec = normalized_query_vector(
                self._encoder, self._encoder_identity, st.unit_vectors.shape[1], query,
                query_vector,
            )  # fmt: skip
            timings["embed_query"] = time.perf_counter() - t0
        scorer = st.scorer()
        sid = scorer.new_session()
        try:
            scorer.open(sid, filters)
            used, more = scorer.score(sid, query, mode, qvec, filters, trace, unit_seeds, top)
            scores = st.block.take_result(sid)
            walk, weights = query_walk(st, query, used, more)
            if own is not None:  # keep_firsts: before the multi-hop walk replaces `scores`
                hybrid = st.unit_vectors is not None
                own["scores"] = own_scores(st.block._s(sid), scores, used, walk["walk"], hybrid)
            if keep is not None:  # explain=True (a bordered walk's also needs the query)
                keep["session"], keep["query"] = dict(st.block._s(sid)), query
            if walk["walk"] == "multihop":
                mh = None if keep is None else keep.setdefault("multihop", {})
                scores, used = self._multihop(
                    st, sid, query, scores, used, more, weights, trace, mh
                )
        finally:
            st.block.close(sid)
        timings.update(more)
        return scores, used, timings, walk

    @staticmethod
    def _multihop(
        st: _State, sid, query, scores, used, timings, weights=None, trace=None, keep=None
    ):
        """``walk="multihop"``: the local score is the first hop of the walk over the units and
        the phrases they share (:class:`~longctx.mixpr.multihop.MultiHopRanker`); the dense
        cosines (hybrid mode) seed it too. A query that reached no unit lexically may still be
        seeded by its own phrases or its nearest units. ``trace`` receives the walk's record
        (``{"stage": "multihop", "solver", "steps", "residual", ...}``)."""
        t0 = time.perf_counter()
        session = st.block._s(sid)
        dense, mask = session.get("dense"), session.get("mask")
        mask = None if mask is None else mask.dense()  # the multi-hop walk reads every unit
        if session.get("seed") is not None:  # seeds: their weights seed this walk (HippoRAG 2's
            dense = np.zeros(st.n_units)  # passage weights) and its first hop is MixPR's own
            dense[session["seed"][0]] = session["seed"][1]
            if "seed_tops" in session:  # MixPR's own, without the seeds' walk (None: the
                scores = session["plain_scores"]  # question reached no unit)
        first = dense_scores(scores) if used == "local" and scores is not None else None
        out = st.ranker().scores(
            query, first, dense, phrase_weights=weights, allowed=mask, trace=trace, keep=keep
        )
        if used == "local" or out.any():
            used = "local"
            if mask is not None:
                out[~mask] = 0.0
            scores = out
        timings["rank"] = timings.get("rank", 0.0) + time.perf_counter() - t0
        return scores, used

    def _lexical_parts(self, query: str) -> dict:
        """Study helper: ``{"cos": (n_units,) direct TF-IDF cosine of each unit to the query}``."""
        return {"cos": lexical_cosines(self._state.table, self._state.config.chunk, query)}

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str = "auto",
        query_vector=None,
        filters=None,
        whole_documents: bool = False,
        unique_texts: bool = False,
        seeds=None,
        explain: bool = False,
        keep_firsts: bool = False,
    ) -> SearchResult:
        """The best units for ``query``, in document order (by source, then position).

        Parameters
        ----------
        query : str, non-empty
        k : int >= 1, optional
            Number of units (100 by default, as in the paper, when no ``token_budget``).
        token_budget : int >= 1, optional
            Most tokens of the selection, as counted at build time (``token_counter``).
        mode : {"auto", "local", "global"}
            ``"auto"`` asks the router.
        query_vector : (dim,) float, optional
            Hybrid mode: the query's dense vector (else the index's encoder embeds the query).
        filters : optional
            Metadata filters: a :class:`longctx.filters.MetadataFilters`, a LlamaIndex
            ``MetadataFilters``, a LangChain-style dict (``{"author": "Austen"}``,
            ``{"year": {"$gte": 1800}}``) or a callable ``metadata -> bool``. Only units of the
            documents it keeps are returned, and the walk restarts only there.
        whole_documents : bool, default False
            Rank the documents (passages) instead of their units: each document scores its
            best unit's score, and a hit is the whole document (``start=0``, ``end`` its
            length, ``index`` its best unit's position); ``k`` counts documents. For passages
            chunked into units, the passage a chunk came from comes back whole.
        unique_texts : bool, default False
            Units whose texts are the same (up to whitespace: a title page, a heading repeated)
            take one slot: the best-scoring of them stands for all and the next distinct unit
            takes the freed slot (:func:`longctx.selection.select_distinct` over the units'
            text ids, made once per index state: :mod:`longctx.mixpr.text_ids`). The
            frameworks' retrievers turn it on.
        seeds : sequence of :class:`~longctx.mixpr.seeds.Seed`, optional
            Another retriever's hits for this query (``Seed(doc_id, start, end, score)``: an
            app's vector retriever, with the vectors it already holds): they seed the walk's
            restart (:meth:`score`). No embedding call. A callable ``() -> seeds`` is asked
            only when the query is local (a global one does not use seeds).
        explain : bool, default False
            Give each hit an ``explanation`` (:mod:`longctx.mixpr.explain`): the share of its
            score from the question's own match (the restart), from the walk (the terms and
            seed units that carried it there; the multi-hop walk's paths ``question ->
            passage -> phrase -> hit``) and from the lexical and dense bonuses. Computed for
            the returned hits only; a document hit (``whole_documents``) by its best unit's
            (:func:`~longctx.mixpr.explain.explain_documents`).
        keep_firsts : bool, default False
            With ``seeds`` (then asked for a global query too): MixPR's own best unit and the
            app's first hit (when the filter keeps it) chosen first, then the seeded order
            (:func:`~longctx.mixpr.seeds.keep_first_units`); hits keep their own scores, and
            ``info["ranking"]`` (:meth:`SearchResult.positions`) puts those two first.

        Returns
        -------
        SearchResult
            ``hits``: :class:`Passage` with ``score`` the unit's score (:meth:`score`), ``index`` the
            unit's position among its document's chunks, ``source`` the document's position in
            :attr:`texts` / :attr:`doc_ids`; ``mode``: ``"local"``, ``"global"`` or
            ``"global-fallback"``; ``timings`` in seconds per stage that ran: ``route``
            (``mode="auto"``), ``seeds``, ``embed_query`` (hybrid: the query's dense vector;
            absent without an encoder), ``query_edges`` (the query's TF-IDF rows and edges,
            local), ``rank``, ``route_walk`` (multi-hop), ``select``, ``explain``;
            ``info["doc_ids"]``: the ids of the hits' documents, in hit order.

        Raises
        ------
        TypeError, ValueError
            Empty query, unknown mode, bad sizes or filters (checked before any work).
        longctx.selection.BudgetTooSmallError
            (a ``ValueError``) If ``token_budget`` is smaller than the shortest unit.
        """
        check_query(query, "query")
        check_choice(mode, "mode", MODES)
        k, token_budget = check_size(k, token_budget, default_k=100)
        seeds, explain = seed_source(seeds), check_explain(explain)
        keep_firsts = check_keep_firsts(keep_firsts)  # before an early return too (as shards)
        if not isinstance(whole_documents, bool):
            raise TypeError(f"whole_documents must be a bool, got {whole_documents!r}")
        if whole_documents and token_budget is not None:
            raise ValueError("whole_documents=True takes k (documents), not token_budget")
        st = self._state
        mask = self._mask(st, filters)
        allowed = mask.units if mask is not None else None
        if token_budget is not None:  # before any scoring: no unit would fit
            counts = self._counts(st)
            check_budget_fits(token_budget, counts if allowed is None else counts[allowed])
        if st.n_units == 0 or (allowed is not None and not len(allowed)):
            budget = {"k": k} if token_budget is None else {"token_budget": token_budget}
            return SearchResult((), self.method, "local", {}, budget, info={"doc_ids": ()})
        trace: list = []
        keep = {} if explain else None
        kept = keep_firsts and seeds is not None  # asked if global too
        seeds = local_seeds(seeds) if kept else seeds
        own = mapped_seeds(st, seeds) if kept else None  # the seeds mapped once
        plain_k = token_budget is None and not (unique_texts or whole_documents or explain or kept)
        scores, used, timings, walk = self._score(
            st, query, mode, query_vector, filters, trace, own["seeds"] if own else seeds, keep,
            k if plain_k else None, own,
        )  # fmt: skip
        order = scores  # keep_firsts: a raised copy orders the choice, hits keep `scores`
        if own:  # MixPR's own scores (without the seeds): the seeded walk's, else walked again
            plain = scores if own["scores"] is None and used != "local" else own["scores"]
            if plain is None:  # walk again (a fallback the multi-hop walk kept: its PageRank)
                plain = self._score(st, query, used, query_vector, filters)[0]
            order = keep_first_units(scores, first_units(plain, own["seeds"]), allowed)
        trace, real = (walk, *trace), (scores if order is not scores else None)
        t0 = time.perf_counter()
        if whole_documents:
            r = document_hits(st, order, k, self.method, used, timings, t0, mask, real)
            r = r if keep is None else explain_documents(st, r, keep, used, walk, scores, mask)
            return replace(r, trace=trace)
        counts = self._counts(st) if token_budget is not None else None
        kw = dict(k=k, token_budget=token_budget, counts=counts, unique_texts=unique_texts)
        idx, vals = select_units(st, order, allowed, **kw)
        ranked = {} if real is None else {"ranking": kept_ranking(vals)}
        vals = vals if real is None else values_at(real, idx)
        if token_budget is not None:
            budget = {"token_budget": token_budget, "unit": self.token_counter_name}
        else:
            budget = {"k": k}
        hits = unit_hits(st, idx, vals)
        timings["select"] = time.perf_counter() - t0
        if keep is not None:  # explain=True: after the selection, for the hits only
            t0 = time.perf_counter()
            hits = with_explanations(hits, explain_hits(st, keep, used, walk, idx, scores))
            timings["explain"] = time.perf_counter() - t0
        info = {"doc_ids": tuple(st.doc_ids[h.source] for h in hits), **ranked}
        return SearchResult(hits, self.method, used, timings, budget, trace=trace, info=info)

    # -- persistence --------------------------------------------------------------------------
    def save(self, path, *, mappable: bool = True) -> None:
        """Write the index to directory ``path``.

        Format 3 (the default, ``mappable=True``): ``config.json`` (settings; hybrid: the
        encoder's name and dimension), ``documents.json`` (ids, metadata) and every array as a
        plain ``.npy`` file (texts, terms, unit offsets, token counts, ``E`` by columns and by
        rows, term counts, the graph's column sums, ``unit_vectors``: files in
        :mod:`longctx.mixpr.persist_mapped`), which :meth:`load` reads, or maps with
        ``mmap=True``; larger on disk than format 2. ``mappable=False``: format 2 (JSON and
        compressed ``.npz`` files, :mod:`longctx.mixpr.persist`; never mapped). Both formats
        load. The router and the encoder object are not saved.

        Into a corpus's ``indexes/mixpr`` (a folder of an ``indexes`` folder beside a
        ``corpus.json``, on its real path): the save holds the corpus's build lock, as
        ``longctx index`` does (it waits for a running build), writes only over the corpus
        this index was loaded from or last saved there, and only an index holding the
        documents ``corpus.json`` lists (a corpus changes with ``longctx index`` /
        ``build_indexes``; :mod:`longctx.mixpr.writes`).

        Raises
        ------
        longctx.persist.PersistError
            ``path`` is in a corpus that a build or another save changed since this index read
            it, or that this index was not read from, or it is the corpus's index and this
            index's documents differ from ``corpus.json``'s (inserted, changed or deleted since
            the load); nothing is written and the message says what to do.
        """
        writes.save(self, path, mappable)

    @classmethod
    def load(cls, path, *, router=None, encoder=None, mmap: bool | None = False) -> MixPRIndex:
        """Read an index written by :meth:`save` (pass the ``router`` again if it was not the
        default keyword router).

        ``encoder`` (hybrid indexes): the encoder for queries (and inserted documents), as given
        to :meth:`from_texts`. ``None``: the default all-MiniLM-L6-v2 when the index was built
        with it (loaded on the first query), else queries need ``query_vector=``.

        ``mmap=False`` (the default, as bm25s's ``load``): every file is read once and checked
        against its SHA-256 digest. ``mmap=True`` (format 3, the default save): the arrays are
        mapped read-only, their sizes checked (not their digests) and their values in blocks,
        pages given back: the index holds what its queries read. Texts' UTF-8 is checked when
        read, the term counts at the first insert or delete; inserts and deletes build new
        arrays in memory and a save over the folder writes a new one, so a mapped index keeps
        answering as loaded (``docs/notes/mixpr-mmap.md``). A format-2 index is read into
        memory (with ``mmap=True`` a ``UserWarning`` says to save it again). ``mmap=None``:
        whatever the folder allows (format 3 mapped, format 2 read, no warning).

        Raises
        ------
        PersistError
            A missing, truncated or damaged file (named), another index kind or format version
            (an index saved by longctx 0.1 says to rebuild), or files that do not fit together.
        TypeError
            ``mmap`` is not None, True or False.
        ValueError
            ``encoder`` embeds in another dimension than the saved unit vectors.
        """
        return writes.load(cls, path, router=router, encoder=encoder, mmap=mmap)
