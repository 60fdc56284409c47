"""The state of a MixPR index (:class:`_State`): one immutable snapshot of its documents, units,
term counts, vectors and the structures built from them on first use (graph, scorer, phrase
graph). Every change builds a new one and the index swaps it in whole, so a search running
meanwhile keeps the state it started with."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from longctx._rss import give_back_free_memory
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.graph import FactoredGraph, ThresholdGraph
from longctx.mixpr.hits import text_slice
from longctx.mixpr.push import strict_limits
from longctx.mixpr.router import plan_walk
from longctx.mixpr.scoring import LocalBlocks, Scorer, UnitBlock
from longctx.mixpr.scoring import term_weights as _term_weights
from longctx.mixpr.text_ids import unit_text_ids, verify_text_ids
from longctx.mixpr.tfidf import TermTable, text_lengths
from longctx.mixpr.unit_filter import document_starts
from longctx.persist.format import PersistError
from longctx.persist.npy import mapped_base


def table_weights(config: MixPRConfig, table: TermTable) -> np.ndarray | None:
    """``(n_terms,) float64``: how much each term links units in the factored graph,
    ``(idf / max idf) ** graph_idf_power`` (``None``: power 0, every term alike): the one rule
    for a built index's state and a loaded one's graph."""
    return _term_weights(table.idf(), config.graph_idf_power)


class _LazyTexts(Sequence):
    """``texts[i]`` sliced on demand from the sources (the router sees the units without a copy;
    a build's term counts read them by blocks). A slice takes its units' positions in one pass
    over the arrays, not one numpy scalar per unit (issue 46)."""

    def __init__(self, texts, source, starts, ends):
        self._t, self._s, self._a, self._b = texts, source, starts, ends

    @property
    def lengths(self) -> np.ndarray:
        """``(n,) int64``: each unit's length in characters."""
        return np.asarray(self._b, dtype=np.int64) - np.asarray(self._a, dtype=np.int64)

    def __len__(self):
        return len(self._a)

    def __getitem__(self, i):
        if isinstance(i, slice):
            parts = (np.asarray(x)[i].tolist() for x in (self._s, self._a, self._b))
            return [text_slice(self._t, d, a, b) for d, a, b in zip(*parts)]
        return text_slice(self._t, int(self._s[i]), int(self._a[i]), int(self._b[i]))


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.int64)
    a.setflags(write=False)
    return a


def _offsets(a) -> np.ndarray:
    """A per-unit array of offsets (documents, characters) as held: int32 when its values fit
    (issue 46: 4 bytes a unit less), int64 past ``2**31 - 1`` and for a mapped index's arrays
    (left as they are: converting would read them); read-only."""
    a = np.asarray(a)
    if a.dtype == np.int64 and mapped_base(a) is not None:
        pass  # mapped: kept, not converted
    elif len(a) and (a.min() < 0 or a.max() > np.iinfo(np.int32).max):
        a = np.ascontiguousarray(a, dtype=np.int64)
    else:
        a = np.ascontiguousarray(a, dtype=np.int32)
    a.setflags(write=False)
    return a


class _State:
    """One immutable snapshot of a :class:`MixPRIndex`: documents, units, term table, graph and
    what is computed from them on first use (token counts, global PageRank, filter masks).
    Insert, update and delete build a new snapshot and swap it in, so a search running on the
    old one is never disturbed."""

    def __init__(
        self,
        *,
        config: MixPRConfig,
        doc_ids: tuple,
        texts: tuple,
        metadata: tuple,
        unit_source,
        unit_index=None,
        starts,
        ends,
        table: TermTable,
        graph=None,
        unit_vectors=None,
        token_counts=None,
        phrases=None,
        positions=None,
        e_rows=None,
        term_sums=None,
        doc_starts=None,
        text_ids=None,
        text_hashes=None,
        text_ids_unchecked=None,
    ):
        self.config = config
        self.doc_ids = doc_ids
        self.texts = texts
        self.metadata = metadata
        self.unit_source = _offsets(unit_source)
        # unit_index (a load's, checked to be this) is not held: each unit's position in its
        # document is made from unit_source when read (issue 46: held memory), from each
        # document's first unit (``doc_starts``: a load's, whose check found them in order)
        self._doc_first = doc_starts
        self.starts = _offsets(starts)
        self.ends = _offsets(ends)
        self.table = table
        self.unit_vectors = unit_vectors
        if token_counts is not None:
            token_counts = _frozen(token_counts)
        self.token_counts = token_counts
        if positions is None:
            positions = {d: i for i, d in enumerate(doc_ids)}
        self.positions = positions  # id -> position (given by an append: a copy, extended)
        self._graph = graph
        self._e_rows = e_rows  # E by rows, when a saved index holds it (format 3)
        self._term_sums = term_sums  # E^T 1, when a load read it (format 3)
        self._scorer = None
        self.lock = threading.Lock()
        # walk="auto": the phrase graph only for a corpus of passages (router.plan_walk)
        self.walk_plan = plan_walk(config.walk, len(doc_ids), self.n_units)
        if not self.walk_plan["phrases"]:
            phrases = None
        elif phrases is None:
            from longctx.mixpr.phrases import PhraseGraph

            src, a, b = (x.tolist() for x in (self.unit_source, self.starts, self.ends))
            units = [texts[d][i:j] for d, i, j in zip(src, a, b)]
            phrases = PhraseGraph.from_texts(units, heads=self.unit_heads())
            del units
        self.phrases = phrases  # the unit x phrase graph of the multi-hop walk
        self._ranker = None
        self._is_head = None
        # (ids, hashes, unchecked), one attribute (read whole: a change never pairs one
        # state's ids with another's hashes): a load's ids (no hashes; ``unchecked`` names the
        # file while a mapped load's ids are not yet compared with the texts), a change's (from
        # the old state's), or None: made when first asked (text_ids)
        self._ids = None
        if text_ids is not None:
            self._ids = (text_ids, text_hashes, text_ids_unchecked)
        self._ids_lock = threading.Lock()  # not self.lock: the graph's, scorer's, ranker's
        self._ids_refused = None  # a mapped load's ids that failed their check: raised again

    @property
    def n_units(self) -> int:
        return len(self.starts)

    def doc_first(self) -> np.ndarray:
        """``(n_docs + 1,) int64``: each document's first unit, then ``n_units`` (units are in
        document order; made once from ``unit_source``, or a load's)."""
        first = self._doc_first
        if first is None:
            first = self._doc_first = document_starts(self.unit_source, len(self.doc_ids))
        return first

    def unit_positions(self, units):
        """The position of each of ``units`` among its document's units (``0, 1, ...`` per
        document), from each document's first unit (:meth:`doc_first`): ``(k,) int64`` for
        ``(k,)`` int units, an int for one unit."""
        first = self.doc_first()
        if np.ndim(units) == 0:
            i = int(units)
            return i - int(first[self.unit_source[i]])
        units = np.asarray(units, dtype=np.int64)
        return units - first[self.unit_source[units]]

    @property
    def unit_index(self) -> np.ndarray:
        """``(n_units,) int64`` (read-only, made when read): each unit's position among its
        document's units (:meth:`unit_positions` of every unit)."""
        out = self.unit_positions(np.arange(self.n_units))
        out.setflags(write=False)
        return out

    @property
    def graph(self):
        """The unit graph, built on first use (a shard of a sharded index never builds it: it
        is weighed with the corpus's statistics instead)."""
        if self._graph is None:
            with self.lock:
                if self._graph is None:
                    made_E = self.table.__dict__.get("_E") is None  # not a saved index's
                    self._graph = self._build_graph()
                    if made_E:  # E's temporaries, returned to the system
                        give_back_free_memory()
        return self._graph

    def _build_graph(self):
        cfg = self.config
        E = self.table.embeddings()
        if cfg.graph == "threshold":
            return ThresholdGraph.build(E, cfg.threshold)
        return FactoredGraph(E, term_weights=self.term_weights())

    def term_weights(self) -> np.ndarray | None:
        """:func:`table_weights` of this snapshot's settings and terms."""
        return table_weights(self.config, self.table)

    def scorer(self) -> Scorer:
        """The scoring pipeline over this snapshot: one block holding every unit."""
        if self._scorer is None:
            graph = self.graph
            with self.lock:
                if self._scorer is None:
                    factored = graph.kind == "factored"
                    block = UnitBlock(
                        config=self.config,
                        stats=self.table,
                        E=graph.E if factored else self.table.embeddings(),
                        unit_doc=self.unit_source,
                        metadata=self.metadata,
                        graph=graph,
                        unit_vectors=self.unit_vectors,
                    )
                    weights = graph.term_weights if factored else None
                    # the push walk's rows: a saved index's, or the table's (never a copy)
                    rows = self._e_rows
                    if rows is None and factored:
                        rows = self.table.rows(matrix=False)
                    if rows is not None:
                        block.set_rows(rows)
                    if self._doc_first is not None:  # a filter's ranges: no pass over units
                        block._starts = (self._doc_first,)
                    sizes = None
                    if self._term_sums is not None:  # the push rule's, read at the load
                        sizes = (self._term_sums, block.term_df_partial())
                    self.block = block
                    self._scorer = Scorer(
                        LocalBlocks([block]),
                        self.config,
                        self.table,
                        weights,
                        self.n_units,
                        colsum_ready=True,
                        term_sizes=sizes,
                    )
        return self._scorer

    def prepare_queries(self) -> None:
        """Make now, once, the query-independent pieces the first query would otherwise make:
        the scorer over a loaded factored graph and ``E`` by rows (views of the loaded arrays
        and the terms' unit counts, ``(n_terms,)``) and the push rule's limits
        (:func:`~longctx.mixpr.push.strict_limits`, ``(n_terms,)`` float64). About 1 ms and
        0.6 MB at 10M words (34,840 terms); nothing of ``E``'s entries is read, so a mapped
        open stays light. A state whose graph is not held (a build's, a format-2 load's) is
        left as it is: its first query builds the graph (seconds at 10M words), too much for
        an open (issue 46: the first query after an open)."""
        graph = self._graph
        if graph is None or graph.kind != "factored" or self._e_rows is None:
            return
        scorer = self.scorer()
        if self.config.solver == "push":
            strict_limits(scorer)

    def text_ids(self) -> np.ndarray:
        """``(n_units,)`` int32 (int64 past ``2**31 - 1`` units), read-only: each unit's text
        id (:mod:`longctx.mixpr.text_ids`: units of the same normalised text share one), made
        once for this snapshot (one pass over the units' texts, with each unit's normalised
        text's hash, held for an insert's :func:`~longctx.mixpr.text_ids.spliced_ids`) unless
        a load or a change gave them; what ``unique_texts`` compares.

        Raises
        ------
        PersistError
            Ids of a mapped load whose texts do not match (checked at this first use:
            :func:`~longctx.mixpr.text_ids.verify_text_ids`), naming ``text_ids.npy``.
        """
        return self.held_text_ids(make=True)[0]

    def held_text_ids(self, *, make: bool = False):
        """``(ids, hashes)``: :meth:`text_ids` and the hashes of the units' normalised texts
        (``(n_units,)`` int64, or ``None`` for a load's ids: hashes are never saved); ``None``
        when the snapshot holds no ids and ``make`` is false (nothing is made then). A mapped
        load's ids are checked against the texts first, once (the errors of :meth:`text_ids`).
        Made, and checked, under a lock of their own, not under :attr:`lock`: a query waiting
        for the graph or the scorer never waits for the ids' pass."""
        held = self._ids
        if held is None and not make:
            return None
        if held is None or held[2] is not None:
            with self._ids_lock:
                if self._ids_refused is not None:  # checked once: every later use refused
                    raise self._ids_refused  # at once, no text read again
                held = self._ids
                if held is None:
                    made = unit_text_ids(self.texts, self.unit_source, self.starts, self.ends)
                    held = self._ids = (*made, None)
                elif held[2] is not None:
                    try:
                        verify_text_ids(
                            held[0], self.texts, self.unit_source, self.starts, self.ends,
                            held[2],
                        )  # fmt: skip
                    except PersistError as exc:
                        self._ids_refused = exc
                        raise
                    held = self._ids = (held[0], held[1], None)
        return held[:2]

    def hashed_text_ids(self):
        """``(ids, hashes)`` when this snapshot made its ids here or had them from a change
        (it holds their hashes), else ``None`` (a load's ids: no hashes): what an insert's
        :func:`~longctx.mixpr.text_ids.spliced_ids` splices. Read once (one attribute)."""
        held = self._ids
        return None if held is None or held[1] is None else held[:2]

    def checked_text_ids(self):
        """``(ids, hashes)`` as :meth:`held_text_ids` when this snapshot holds ids already
        checked (made here, by a change, or a read load's), else ``None``: what a delete
        renumbers and a save writes. A mapped load's ids not yet compared with the texts are
        left for the next query that asks (which checks them, or a change's state makes them
        anew), so a delete or a save never fails on them, as an insert never does."""
        held = self._ids
        return None if held is None or held[2] is not None else held[:2]

    def text_lengths(self) -> np.ndarray:
        """``(n_docs,) int64``: each document's length in characters (a mapped index knows
        them without decoding its texts)."""
        return text_lengths(self.texts)

    def unit_text(self, i: int) -> str:
        """Unit ``i``'s text (:func:`~longctx.mixpr.hits.text_slice` of its document)."""
        return text_slice(
            self.texts, int(self.unit_source[i]), int(self.starts[i]), int(self.ends[i])
        )

    def unit_heads(self, lo: int = 0, hi: int | None = None) -> list[list[str]]:
        """Head phrases of units ``lo .. hi`` from their documents' titles, headings, file
        names and metadata (:func:`longctx.mixpr.phrases.unit_heads`; units of a document
        may share one list: read only)."""
        from longctx.mixpr.phrases import _unit_heads

        hi = self.n_units if hi is None else hi
        return _unit_heads(
            self.texts, self.unit_source[lo:hi], self.starts[lo:hi], self.ends[lo:hi],
            self.doc_ids, self.metadata,
        )  # fmt: skip

    def is_head(self) -> np.ndarray:
        """``(n_phrases,) bool``: the phrases that head some unit."""
        if self._is_head is None:
            self._is_head = np.diff(sp.csc_array(self.phrases.heads).indptr) > 0
        return self._is_head

    def ranker(self):
        """The :class:`~longctx.mixpr.multihop.MultiHopRanker` of ``walk="multihop"``, built on
        first use."""
        if self._ranker is None:
            from longctx.mixpr.multihop import MultiHopRanker

            walk = self.config.multihop_walk()
            E = self.table.embeddings() if walk.term_share > 0 else None
            with self.lock:
                if self._ranker is None:
                    self._ranker = MultiHopRanker(self.phrases, walk, E=E)
        return self._ranker


def _chunk(config: MixPRConfig, texts, chunk: bool):
    """``(source, index, starts, ends)`` int64 arrays of the units of ``texts``."""
    if chunk:
        src, starts, ends = config.chunk_arrays(texts)
    else:
        src = np.arange(len(texts), dtype=np.int64)
        starts = np.zeros(len(texts), dtype=np.int64)
        ends = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    first = np.searchsorted(src, src, side="left")  # each unit's text's first unit
    return src, np.arange(len(src), dtype=np.int64) - first, starts, ends
