"""One MixPR index split into shards by document, held in this process or by Ray actors (one per
shard, on a local Ray or a cluster), with one query over all of them that returns what one
:class:`~longctx.mixpr.index.MixPRIndex` over the same documents returns (same hits, scores
within float rounding, ~1e-15).

How (Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time, Sparse
GraphRAG", 2024, arXiv:2412.06078, sec. 4; the factored graph of
:class:`~longctx.mixpr.graph.FactoredGraph`):

- Each shard keeps its documents as a :class:`MixPRIndex` of its own (texts, metadata, units,
  term counts, token counts, unit vectors): that is what it saves and loads, and what its
  inserts, updates and deletes change.
- The driver gathers the shards' term statistics (:meth:`MixPRShard.term_stats`) into the
  corpus's (``terms.merge_shard_terms``: the sorted union of the vocabularies, numpy arrays,
  document frequencies summed, units counted) once at load and after every change, and sends
  each shard its columns, the IDF and the document frequencies (:meth:`MixPRShard.set_global`).
  Every shard then weighs its units with the corpus's IDF, so its TF-IDF rows are the very rows
  one index over every document holds.
- A query runs the one scoring pipeline of :mod:`longctx.mixpr.scoring` with a block per shard:
  each walk step reduces one term vector over the shards (``E_s^T v_s`` summed, times ``W``,
  sent back), and every global sum or maximum is a reduction. The best units are picked from
  each shard's own best (:func:`longctx.selection.select_top` over the merged candidates, in
  corpus order; token budgets ask for more candidates until the greedy choice is provably that
  of the whole corpus).

Documents keep the corpus order of one index (inserted ones after the others; an updated one
keeps its place); ``Passage.source`` is a document's position in :attr:`ShardedMixPRIndex.doc_ids`.
**Shard assignment** (stable, documented): a new document goes to the shard holding the fewest
characters so far (ties: the lowest shard number), documents taken in the order given; a
document stays in its shard when it is updated.

On disk (:meth:`ShardedMixPRIndex.save`, a local folder or an fsspec URL)::

    ROOT/shards.json    {"format": "longctx.mixpr.shards", "format_version": 1, "n_shards": N,
                         "assignment": "fewest-characters", "documents": [[id, shard, chars]...]}
    ROOT/shard-<i>/     shard i: a MixPRIndex folder (format version 2), for shards holding
                        documents
    ROOT/writing.json   "writing" until every file of a save is in place, then "done"

The corpus-wide statistics are not stored: they are gathered from the shards at load, so they
can never disagree with them. A longctx corpus built with ``longctx index DIR --method mixpr
--shards N`` keeps this layout at ``indexes/``.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Mapping, Sequence

import numpy as np

from longctx.checks import check_int
from longctx.corpus.shards.backends import ShardDied, open_backend
from longctx.corpus.shards.explain import check_sharded_explain, explain_chosen
from longctx.corpus.shards.fused import keep_firsts_over_shards, kept_hits, plain_walk_firsts
from longctx.corpus.shards.locking import ReadWriteLock
from longctx.corpus.shards.persist import MAX_SHARDS
from longctx.corpus.shards.query import ShardedUnits, prepare_query, query_vector_of
from longctx.corpus.shards.restart import check_restarted
from longctx.corpus.shards.selection import select_over_shards
from longctx.corpus.shards.shard import MixPRShard, assign_shards, shard_walk
from longctx.corpus.shards.terms import merge_shard_terms
from longctx.explain import check_explain, with_explanations
from longctx.index import check_texts
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.router import KeywordRouter, plan_walk
from longctx.mixpr.scoring import Scorer, term_weights
from longctx.mixpr.seeds import check_keep_firsts
from longctx.mixpr.tfidf import TfidfSettings
from longctx.mixpr.validation import check_change, check_held
from longctx.persist import PersistError
from longctx.selection import check_budget_fits, check_size
from longctx.types import Passage, SearchResult

logger = logging.getLogger(__name__)

__all__ = ["MixPRShard", "ShardedMixPRIndex", "assign_shards"]


class ShardedMixPRIndex:
    """MixPR over a corpus split into shards by document (see the module doc), searched as one
    index: :meth:`search` returns what :class:`~longctx.mixpr.index.MixPRIndex` over the same
    documents (in :attr:`doc_ids` order) returns, for local, global and global-fallback modes,
    ``k`` and ``token_budget``, metadata filters and hybrid mode.

    Build with :meth:`from_texts` (in this process, or on Ray with ``use_ray=True``), read one
    saved by :meth:`save` or by ``longctx index DIR --method mixpr --shards N`` with
    :meth:`load`. Documents are inserted, updated and deleted by id (:meth:`insert`,
    :meth:`update`, :meth:`delete`): the change goes to the shard holding the document (a new
    one to the shard the documented rule picks), then the corpus's statistics are gathered again
    and sent to every shard. A search sees the shards before or after a change, never half of it
    (a read-write lock: docs/notes/concurrency.md).

    On Ray, each shard is one actor. An actor that dies is restarted from the shard's stored copy
    (where it was loaded from or last saved) and the query tried again once; a shard changed since
    it was stored cannot be restarted (a ``RuntimeError`` says to save), and a shard that cannot be
    loaded is a :class:`~longctx.persist.PersistError` naming it: a search never answers from part
    of the corpus. The restarted shard must hold what was stored when the index was loaded or saved
    (documents, text and metadata digests, units, terms): a corpus rebuilt there since is a
    :class:`~longctx.persist.PersistError` naming the shard (load the index again), never hits from
    the other corpus. :meth:`close` stops the actors (and a Ray started for them); the index is
    also a context manager.
    """

    method = "mixpr"

    def __init__(
        self, backend, stats: dict, n_shards: int, *, router=None, encoder=None, sources=None
    ):
        self._backend = backend
        self.n_shards = int(n_shards)
        self.router = router if router is not None else KeywordRouter()
        if not callable(self.router):
            raise TypeError(f"router must be callable, got {type(self.router).__name__}")
        self._encoder = encoder
        self._sources = dict(sources or {})  # shard -> stored copy, for restarts
        self._dirty: set[int] = set()
        # shard -> MixPRShard.identity() of its stored copy (text digests, metadata digest), as
        # loaded or saved: a restart must find it again (the corpus may have been rebuilt)
        self._stored_digests: dict[int, dict] = {}
        # local folder (real path) -> its writing.json mark as this index read or last saved
        # it: (token, state, written by this index); saves into a corpus check it
        self._read_from: dict[str, tuple] = {}
        self._stats = dict(stats)  # shard -> term_stats()
        self._lock = threading.RLock()  # changes and saves, one at a time
        self._rw, self._scorer_lock = ReadWriteLock(), threading.Lock()  # (issue 48)
        self._order: list[str] = []
        self._shard_of: dict[str, int] = {}
        self._chars: dict[str, int] = {}
        self._scorer = None
        self._global: dict = {}

    # -- building -----------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls,
        texts,
        *,
        shards: int = 2,
        ids: Sequence[str] | None = None,
        metadatas: Sequence[Mapping] | None = None,
        preset: str = "default",
        router=None,
        chunk: bool = True,
        encoder=None,
        use_ray: bool = False,
        ray_address: str | None = None,
        workers: int | None = None,
        **params,
    ) -> ShardedMixPRIndex:
        """Split ``texts`` into ``shards`` shards (the documented rule) and build them.

        Parameters
        ----------
        texts, ids, metadatas, preset, router, chunk, encoder, **params
            As :meth:`MixPRIndex.from_texts <longctx.mixpr.index.MixPRIndex.from_texts>`
            (``graph="factored"`` only). ``encoder``: hybrid mode; each shard embeds its units
            with it (on Ray it is shipped to the actors), the driver the queries.
        shards : int >= 1
        use_ray : bool
            Hold each shard in a Ray actor (each actor builds its shard).
        ray_address, workers :
            A Ray cluster to join, or the CPUs of a local Ray started here.

        Raises
        ------
        TypeError, ValueError
            Bad texts, ids, metadata or settings (before any work).
        """
        from longctx.mixpr.validation import _check_ids, _check_metadatas

        shards = check_int(shards, "shards", minimum=1)
        if shards > MAX_SHARDS:
            raise ValueError(f"shards must be <= {MAX_SHARDS}, got {shards}")
        config = MixPRConfig.from_preset(preset, **params)
        if config.graph != "factored":
            raise ValueError("a sharded MixPR index needs graph='factored'")
        config = shard_walk(config)
        if config.walk != "pagerank":
            raise NotImplementedError(
                "walk='multihop' is not available on a sharded MixPR index (its phrase graph "
                "is not split into shards): use one MixPRIndex"
            )
        texts = check_texts(texts)
        ids = _check_ids(ids, len(texts), default=[str(i) for i in range(len(texts))])
        metadatas = _check_metadatas(metadatas, len(texts), ids)
        enc = None
        if encoder is not None:
            from longctx.embeddings import get_encoder

            enc = get_encoder(encoder)
        where = assign_shards([len(t) for t in texts], shards, [0] * shards)
        groups = {i: [j for j, s in enumerate(where) if s == i] for i in range(shards)}
        sources = {}
        for i, js in groups.items():
            if js:
                spec = dict(
                    texts=[texts[j] for j in js],
                    ids=[ids[j] for j in js],
                    metadatas=[metadatas[j] for j in js],
                    config=config,
                    chunk=chunk,
                    encoder=enc,
                )
                sources[i] = ("new", spec)
        backend = open_backend(sources, use_ray, ray_address, workers)
        try:
            stats = backend.run({i: ("term_stats", ()) for i in sources})
            index = cls(backend, stats, shards, router=router, encoder=enc)
            index._order = list(ids)
            index._shard_of = dict(zip(ids, where))
            index._chars = {d: len(t) for d, t in zip(ids, texts)}
            index._dirty = set(sources)
            index._refresh()
            if not index.n_units or not index._global["stats"].kept_terms().any():
                raise ValueError(
                    "texts hold no term to index once stop words are removed "
                    f"(stop_words={config.stop_words!r})"
                )
        except BaseException:
            backend.close()
            raise
        return index

    # -- what the index holds -------------------------------------------------------------------
    @property
    def doc_ids(self) -> tuple[str, ...]:
        """The documents' ids in corpus order (``Passage.source`` indexes this tuple)."""
        return tuple(self._order)

    @property
    def n_units(self) -> int:
        return int(self._global.get("n_units", 0))

    @property
    def config(self) -> MixPRConfig:
        return self._global["config"]

    @property
    def backend(self) -> str:
        """``"in-process"``, ``"ray-local"`` or ``"ray-cluster"``."""
        return self._backend.kind

    def shard_of(self, doc_id: str) -> int:
        """The shard holding ``doc_id`` (``KeyError`` when none does)."""
        return self._shard_of[doc_id]

    def shard_sizes(self) -> dict:
        """``{shard: {"documents": int, "units": int, "characters": int}}``."""
        out = {i: {"documents": 0, "units": 0, "characters": 0} for i in range(self.n_shards)}
        for i, s in self._stats.items():
            out[i] = {
                "documents": len(s["doc_ids"]),
                "units": int(s["n_units"]),
                "characters": int(sum(s["chars"])),
            }
        return out

    def text(self, doc_id: str) -> str:
        """The whole text of document ``doc_id`` (fetched from its shard; ``KeyError``)."""
        return self.document(doc_id)[0]

    def metadata(self, doc_id: str) -> dict:
        """The metadata of document ``doc_id`` (a copy; ``KeyError``)."""
        return self.document(doc_id)[1]

    def digests(self) -> dict:
        """``{doc id: sha256 of its UTF-8 text}`` over every shard."""
        out = {}
        stored = self._stored_digests
        known = {
            s: stored[s]["digests"] for s in self._stats if s not in self._dirty and s in stored
        }
        ask = [s for s in self._stats if known.get(s) is None]
        fresh = self._run({s: ("digests", ()) for s in ask}) if ask else {}
        for s in sorted(self._stats):
            out.update(fresh[s] if s in fresh else known[s])
        return out

    def _remember_stored(self, numbers) -> None:
        """Record the digests of shards whose actor holds their stored copy (just loaded or
        saved), for the check of a restart
        (:func:`~longctx.corpus.shards.restart.check_restarted`)."""
        numbers = list(numbers)
        if numbers:
            self._stored_digests.update(self._run({i: ("identity", ()) for i in numbers}))

    def document(self, doc_id: str) -> tuple[str, dict]:
        """``(text, metadata)`` of document ``doc_id`` (``KeyError``)."""
        s = self._shard_of[doc_id]
        return self._run({s: ("document", (doc_id,))})[s]

    # -- the corpus's statistics --------------------------------------------------------------
    def _refresh(self) -> None:
        """Gather the shards' statistics into the corpus's and send every shard its part."""
        live = {i: s for i, s in self._stats.items() if s["n_units"]}
        if not live:
            keep = ("config", "chunk", "dim")
            self._global = {"n_units": 0, "live": [], **{k: self._global.get(k) for k in keep}}
            self._scorer = None
            return
        first = next(iter(live.values()))
        config, chunk = first["config"], first["chunk"]
        for i, s in live.items():
            if s["config"] != config or s["chunk"] != chunk or s["dim"] != first["dim"]:
                raise PersistError(
                    f"shard {i} was built with other settings than the other shards "
                    "(config, chunking or unit vectors differ)"
                )
        if config.walk == "multihop":  # ("auto" keeps PageRank on shards)
            raise PersistError(
                f"the shards were built with walk={config.walk!r}, which a sharded MixPR index "
                "does not run (its phrase graph is not split into shards): rebuild without shards"
            )
        settings = TfidfSettings(config)
        order = sorted(live)
        stats, maps = merge_shard_terms(
            settings, [(live[i]["terms"], live[i]["df"], live[i]["cf"], live[i]["n_units"])
                       for i in order]
        )  # fmt: skip
        units = {}
        for i in order:
            for d, u in zip(live[i]["doc_ids"], np.asarray(live[i]["units"]).tolist()):
                units[d] = u
        doc_units = np.fromiter((units.get(d, 0) for d in self._order), np.int64, len(self._order))
        offsets = np.concatenate([[0], np.cumsum(doc_units)[:-1]]).astype(np.int64)
        start = dict(zip(self._order, offsets.tolist()))  # dropped once each shard has its own
        firsts = {
            i: np.fromiter(
                (start[d] for d in live[i]["doc_ids"]), np.int64, len(live[i]["doc_ids"])
            )
            for i in order
        }
        del start
        idf = stats.idf()
        df = stats.df
        self._backend.run(
            {
                i: ("set_global", (maps[k], idf, df, stats.n_units, firsts[i]))
                for k, i in enumerate(order)
            }
        )
        self._global = {
            "n_units": stats.n_units,
            "config": config,
            "chunk": chunk,
            "dim": first["dim"],
            "stats": stats,
            "weights": term_weights(idf, config.graph_idf_power),
            "live": order,
            "offsets": offsets,
            "maps": dict(zip(order, maps)),
            # each live shard's documents' first units in the corpus (set_global; a restart)
            "firsts": firsts,
        }
        self._scorer = None

    def _make_scorer(self) -> Scorer:
        g = self._global
        return Scorer(
            self._backend.blocks(g["live"]),
            g["config"],
            g["stats"],
            g["weights"],
            g["n_units"],
            colsum_ready=False,
        )

    def _run(self, calls: dict) -> dict:
        """Run shard methods (a dead actor raises :class:`ShardDied`; searches restart it)."""
        return self._backend.run(calls)

    def _restart(self, numbers) -> None:
        """New actors for dead shards, from their stored copies, with the corpus's statistics
        sent again (the shards' contents are those stored, so the statistics are unchanged)."""
        g = self._global
        for i in numbers:
            if i in self._dirty or i not in self._sources:
                raise RuntimeError(
                    f"the Ray actor of shard {i} died and the shard has no stored copy of its "
                    "current documents (it was built or changed since it was last saved): "
                    "save() after building or changing a sharded index on Ray"
                ) from None
            self._backend.restart(i, self._sources[i])
            check_restarted(self, i)
            if i in g.get("maps", {}):
                stats = g["stats"]
                call = (g["maps"][i], stats.idf(), stats.df, g["n_units"], g["firsts"][i])
                self._backend.run({i: ("set_global", call)})
        self._scorer = None  # column sums and the global PageRank are reduced again

    def _with_retry(self, fn):
        """``fn()`` (a search: under the read lock, so no change runs meanwhile), tried once
        more after restarting shards whose actor died."""
        try:
            with self._rw.reading():
                return fn()
        except ShardDied as exc:
            logger.warning("%s; restarting them and trying again", exc)
            with self._lock, self._rw.writing():
                self._restart(exc.shards)
            try:
                with self._rw.reading():
                    return fn()
            except ShardDied as again:
                raise RuntimeError(f"{again} again after a restart: giving up") from None

    # -- searching ----------------------------------------------------------------------------
    def route(self, query: str) -> str:
        """``"local"`` or ``"global"`` for ``query``, as the router decides."""
        mode = self.router(query, ShardedUnits(self))
        if mode not in ("local", "global"):
            raise RuntimeError(f"router returned {mode!r}, expected 'local' or 'global'")
        logger.info("MixPR router: %s for query %.80r", mode, query)
        return mode

    def _prepare(self, query, mode, query_vector, filters, seeds=None, kept=False):
        """:func:`~longctx.corpus.shards.query.prepare_query` of this index."""
        return prepare_query(self, query, mode, query_vector, filters, seeds, kept)

    def _scorer_now(self) -> Scorer:
        with self._scorer_lock:
            if self._scorer is None:
                self._scorer = self._make_scorer()
            return self._scorer

    def score(self, query: str, mode: str = "auto", *, query_vector=None, filters=None, seeds=None):
        """Scores of every unit, in corpus order: ``(scores (n_units,) float64, mode used,
        timings)`` as :meth:`MixPRIndex.score <longctx.mixpr.index.MixPRIndex.score>` (the
        vector is gathered from the shards: for studies and tests, not for large corpora)."""
        seeds = _asked_once(seeds)

        def attempt():
            used, qvec, timings, keys = self._prepare(query, mode, query_vector, filters, seeds)
            if not self.n_units:
                return np.zeros(0), "local", timings
            scorer = self._scorer_now()
            sid = scorer.new_session()
            try:
                scorer.open(sid, filters)
                used, t = scorer.score(sid, query, used, qvec, filters, None, keys)
                parts = scorer.backend.map("take_scores", sid)
                keys = scorer.backend.map("keys_of", sid)
            finally:
                _close(scorer, sid)
            out = np.zeros(self.n_units)
            for k, s in zip(keys, parts):
                out[k] = s
            return out, used, {**timings, **t}

        return self._with_retry(attempt)

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str = "auto",
        query_vector=None,
        filters=None,
        seeds=None,
        keep_firsts: bool = False,
        explain: bool = False,
        whole_documents: bool = False,
    ) -> SearchResult:
        """The best units for ``query`` over every shard, in corpus order: the parameters, the
        result and the errors of :meth:`MixPRIndex.search
        <longctx.mixpr.index.MixPRIndex.search>` (``token_budget`` counts with
        :func:`longctx.tokens.count_tokens`; ``seeds``, another retriever's hits, each sent to
        the shard holding its document: :mod:`longctx.corpus.shards.query`; ``keep_firsts``
        with them: MixPR's own best unit and the app's first hit kept first, then the seeded
        order, :mod:`longctx.corpus.shards.fused`; ``explain``: one index's explanations,
        gathered over the shards for the hits only, of their real scores:
        :mod:`longctx.corpus.shards.explain`). ``info`` also holds ``"shards"`` (the number of
        shards). ``whole_documents=True`` (documents ranked by their best unit) is not
        implemented over shards.

        Raises
        ------
        TypeError, ValueError
            As :meth:`MixPRIndex.search <longctx.mixpr.index.MixPRIndex.search>`.
        NotImplementedError
            ``whole_documents=True``, before any work.
        RuntimeError
            A shard's actor died twice, or died with changes not saved.
        """
        if whole_documents is not False:
            raise NotImplementedError(
                "whole_documents=True is not implemented on a sharded index (ShardedMixPRIndex, "
                "a corpus built with shards): search a one-index MixPR corpus for documents"
            )
        k, token_budget = check_size(k, token_budget, default_k=100)
        check_keep_firsts(keep_firsts)
        budget = {"k": k} if token_budget is None else {"token_budget": token_budget}
        if token_budget is not None:
            budget["unit"] = "count_tokens"
        seeds, explain = _asked_once(seeds), check_explain(explain)
        return self._with_retry(
            lambda: self._search_once(
                query,
                mode,
                query_vector,
                filters,
                k,
                token_budget,
                budget,
                keep_firsts,
                explain,
                seeds,
            )
        )

    def _search_once(
        self, query, mode, query_vector, filters, k, token_budget, budget, kept, explain, seeds
    ):
        kept = kept and seeds is not None  # the app is asked for a global query too
        mode, qvec, timings, keys = self._prepare(query, mode, query_vector, filters, seeds, kept)
        check_sharded_explain(self, explain, mode)  # routed, before the walk
        info = {"doc_ids": (), "shards": self.n_shards}
        if not self.n_units:
            return SearchResult((), self.method, "local", {}, budget, info=info)
        scorer = self._scorer_now()
        blocks = scorer.backend
        sid = scorer.new_session()
        closed = [False]
        try:
            allowed = scorer.open(sid, filters, token_budget is not None)
            if token_budget is not None:
                check_budget_fits(token_budget, [low for n, low in allowed if n])
            if not sum(n for n, _ in allowed):
                return SearchResult((), self.method, "local", {}, budget, info=info)
            trace: list = []
            used, t = scorer.score(sid, query, mode, qvec, filters, trace, keys)
            real = None
            if kept and keys is not None:  # MixPR's own best and the app's first raised
                hybrid = self._global.get("dim") is not None
                qv = (
                    functools.partial(query_vector_of, self, query, query_vector)
                    if hybrid
                    else None
                )
                again = functools.partial(plain_walk_firsts, scorer, query, used, filters, qv)
                real = keep_firsts_over_shards(scorer, sid, used, keys, hybrid, again)
            t0 = time.perf_counter()
            chosen = select_over_shards(
                blocks, sid, [n for n, _ in allowed], k, token_budget, closed, keep_open=explain
            )
            chosen, ranked = kept_hits(chosen, real)  # real scores, which explain composes
            why = explain_chosen(self, sid, used, chosen, t, query) if explain else None
        finally:
            if not closed[0]:
                _close(scorer, sid)
        live = self._global["live"]
        want = {}
        for b, local, _, _ in chosen:
            want.setdefault(live[b], []).append(local)
        got = self._run({s: ("hits", (np.asarray(v, dtype=np.int64),)) for s, v in want.items()})
        pos = {d: i for i, d in enumerate(self._order)}
        seen = {s: iter(v) for s, v in got.items()}
        hits = []
        for b, _, _, score in chosen:
            doc, a, e, text, unit = next(seen[live[b]])
            hits.append(Passage(a, e, text, float(score), unit, pos[doc]))
        timings = {**timings, **t, "select": time.perf_counter() - t0 - t.get("explain", 0.0)}
        hits = hits if why is None else with_explanations(hits, why)
        info["doc_ids"] = tuple(self._order[h.source] for h in hits)
        info.update(ranked)
        trace = (self._route_record(), *trace)
        return SearchResult(
            tuple(hits), self.method, used, timings, budget, trace=tuple(trace), info=info
        )

    def _route_record(self) -> dict:
        """The trace's ``{"stage": "route", ...}`` record, as :class:`~longctx.mixpr.MixPRIndex`
        gives (:func:`~longctx.mixpr.router.choose_walk`): a sharded index always walks
        PageRank (the phrase graph of the multi-hop walk is not split into shards), where one
        index over the same passages may take the multi-hop walk; the record says so (issue
        44)."""
        plan = plan_walk("auto", len(self._order), self.n_units)
        reason = plan["corpus"]
        if plan["phrases"]:
            reason = (
                "sharded index: no phrase graph (one MixPRIndex over these passages may take "
                "the multi-hop walk)"
            )
        return {"stage": "route", "corpus": plan["corpus"], "walk": "pagerank", "reason": reason}

    # -- changes ------------------------------------------------------------------------------
    def insert(self, texts, *, ids: Sequence[str], metadatas=None, unit_vectors=None) -> None:
        """Add documents after the existing ones, each to the shard the documented rule picks.

        Raises
        ------
        TypeError, ValueError
            Bad texts, ids (taken, duplicated) or metadata; checked before anything changes.
        """
        texts = check_texts(texts)
        with self._lock, self._rw.writing():
            ids, metadatas, vectors = self._check_change(
                texts, ids, metadatas, unit_vectors, replace=False
            )
            sizes = [0] * self.n_shards
            for d, s in self._shard_of.items():
                sizes[s] += self._chars[d]
            where = assign_shards([len(t) for t in texts], self.n_shards, sizes)
            calls, new = {}, {}
            for s in sorted(set(where)):
                js = [j for j, w in enumerate(where) if w == s]
                args = ([texts[j] for j in js], [ids[j] for j in js], [metadatas[j] for j in js])
                args += (vectors,) if vectors is not None else (None,)
                if s in self._stats:
                    calls[s] = ("insert", args)
                else:
                    new[s] = args
            self._apply(calls, new)
            self._order.extend(ids)
            self._shard_of.update(zip(ids, where))
            self._chars.update((d, len(t)) for d, t in zip(ids, texts))
            self._refresh()

    def update(self, texts, *, ids: Sequence[str], metadatas=None, unit_vectors=None) -> None:
        """Replace documents by id, each in its shard and at its place in the corpus order.

        Raises
        ------
        KeyError
            An id the index does not hold (nothing changes).
        TypeError, ValueError
            As :meth:`insert`.
        """
        texts = check_texts(texts)
        with self._lock, self._rw.writing():
            ids, metadatas, vectors = self._check_change(
                texts, ids, metadatas, unit_vectors, replace=True
            )
            calls = {}
            for s in sorted({self._shard_of[i] for i in ids}):
                js = [j for j, d in enumerate(ids) if self._shard_of[d] == s]
                args = ([texts[j] for j in js], [ids[j] for j in js], [metadatas[j] for j in js])
                calls[s] = ("update", args + (vectors,))
            self._apply(calls, {})
            self._chars.update((d, len(t)) for d, t in zip(ids, texts))
            self._refresh()

    def delete(self, ids) -> None:
        """Remove documents by id from their shards.

        Raises
        ------
        KeyError
            An id the index does not hold (nothing changes).
        """
        if isinstance(ids, str):
            ids = [ids]
        ids = list(ids)
        with self._lock, self._rw.writing():
            check_held(ids, self._shard_of)
            calls = {}
            for s in sorted({self._shard_of[i] for i in ids}):
                calls[s] = ("delete", ([d for d in ids if self._shard_of[d] == s],))
            self._apply(calls, {})
            gone = set(ids)
            self._order = [d for d in self._order if d not in gone]
            for d in gone:
                del self._shard_of[d], self._chars[d]
            self._refresh()

    def _check_change(self, texts, ids, metadatas, unit_vectors, *, replace: bool):
        """The arguments of :meth:`insert` (``replace=False``) or :meth:`update`
        (``replace=True``) of the checked ``texts``, checked (with the lock held) before any
        change: ids, then taken / missing ids, then metadata
        (:func:`~longctx.mixpr.validation.check_change`), then ``unit_vectors`` (one document
        at a time). Returns ``(ids, metadatas, unit_vectors)``."""
        ids, metadatas = check_change(ids, metadatas, len(texts), self._shard_of, replace=replace)
        if unit_vectors is not None and len(texts) != 1:
            raise ValueError("unit_vectors with a sharded index takes one document at a time")
        return ids, metadatas, unit_vectors

    def _apply(self, calls: dict, new: dict) -> None:
        """Run changes on existing shards and build new ones (shards that held no document)."""
        g = self._global
        if calls:
            self._stats.update(self._run(calls))
            self._dirty.update(calls)
        for s, (texts, ids, metas, vectors) in new.items():
            spec = dict(
                texts=texts, ids=ids, metadatas=metas, config=g["config"], chunk=g["chunk"],
                encoder=self._encoder,
            )  # fmt: skip
            if vectors is not None:
                spec["unit_vectors"] = vectors
            self._backend.add(s, ("new", spec))
            self._stats[s] = self._run({s: ("term_stats", ())})[s]
            self._dirty.add(s)
        for s, st in list(self._stats.items()):
            if not st["n_units"] and not st["doc_ids"]:
                self._stats.pop(s)

    # -- saving and loading -------------------------------------------------------------------
    def save(self, out, *, storage_options: dict | None = None) -> None:
        """Write the index to ``out`` (a folder or an fsspec URL; see the module doc): every
        shard's folder, then ``shards.json``. The stored copies become the shards' restart
        points.

        Raises
        ------
        ValueError, PersistError
            No document; a corpus's ``indexes/`` changed since read, or this index's documents
            differ from its ``corpus.json``'s (``persist.save_sharded``).
        """
        from longctx.corpus.shards.persist import save_sharded

        save_sharded(self, out, storage_options)

    @classmethod
    def load(
        cls,
        out,
        *,
        storage_options: dict | None = None,
        use_ray: bool | None = None,
        ray_address: str | None = None,
        workers: int | None = None,
        router=None,
        encoder=None,
        cpus_per_shard: float | None = None,
    ) -> ShardedMixPRIndex:
        """Read a sharded index saved at ``out`` (a folder or an fsspec URL).

        Parameters
        ----------
        use_ray : bool, optional
            ``None`` (default): Ray actors for a cluster (``ray_address``) or when this process
            already runs Ray, else the shards in this process (no Ray started: a local search
            of every shard takes less than starting Ray). ``True``: Ray actors (a local Ray
            started here without ``ray_address``). ``False``: in this process.
        ray_address, workers :
            A Ray cluster to join, or the CPUs of a local Ray started here.
        router, encoder :
            As :meth:`MixPRIndex.load <longctx.mixpr.index.MixPRIndex.load>`.
        cpus_per_shard : float >= 0, optional
            CPUs a shard's actor asks for (default: <= 1, all fit: ``backends.shard_cpus``;
            one too large for the nodes is a ``ValueError``).

        Raises
        ------
        PersistError
            No sharded index there, a damaged ``shards.json``, a shard that cannot be loaded
            (named), or shards that disagree with ``shards.json`` (read again while a save is
            in progress: :class:`~longctx.persist.ConcurrentSaveError` if it goes on).
        """
        from longctx.corpus.shards.persist import load_sharded

        return load_sharded(
            cls, out, storage_options=storage_options, use_ray=use_ray,
            ray_address=ray_address, workers=workers, router=router, encoder=encoder,
            cpus_per_shard=cpus_per_shard,
        )  # fmt: skip

    def close(self) -> None:
        """Stop the shards' actors (and a Ray started for them)."""
        self._backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _close(scorer: Scorer, sid) -> None:
    try:
        scorer.backend.map("close", sid)
    except ShardDied:
        pass  # the retry opens new sessions on the new actors


def _asked_once(seeds):
    """A callable ``seeds`` (the app's retriever) remembered after its first call: a search
    retried after a shard died does not ask it (nor embed the query) again."""
    return functools.cache(seeds) if callable(seeds) else seeds
