"""A multi-hop walk over passages and the names they share, found without an LLM.

Multi-hop questions chain on names: "What government position was held by the woman who
portrayed Corliss Archer in the film Kiss and Tell?" matches the passage about the film by its
words; that passage names "Shirley Temple", whose own passage holds the answer but shares no
word with the question. Lexical and dense retrieval rank that second passage low. A walk that
goes from the first passage to the names it mentions, and from a name to the passage *about*
it, reaches it.

The graph and the walk follow HippoRAG (Bernal Jiménez Gutiérrez, Yiheng Shu, Yu Gu, Michihiro
Yasunaga and Yu Su, "HippoRAG: Neurobiologically Inspired Long-Term Memory for Large Language
Models", 2024, arXiv:2405.14831) and HippoRAG 2 (Bernal Jiménez Gutiérrez, Yiheng Shu, Weijian
Qi, Sizhe Zhou and Yu Su, "From RAG to Memory: Non-Parametric Continual Learning for Large
Language Models", 2025, arXiv:2502.14802): passage nodes and phrase nodes in one graph,
personalized PageRank (damping 0.5) restarting on the query's phrases, each weighted by its
specificity ``1 / df`` (HippoRAG's node specificity), and on the passages nearest to the query
(HippoRAG 2's passage nodes in the restart), the passage score being the walk's mass on the
passage node. Where they run an LLM over every passage (OpenIE triples) and link phrases by
embedding similarity, here:

- the phrases are capitalised spans and their sub-spans (:class:`~longctx.mixpr.phrases.PhraseExtractor`,
  a regular expression: linear, CPU-fast);
- a passage's **heads** (its title line, ``title\\ntext``, else its first capitalised span)
  say what it is *about*. A walk at a phrase goes mostly to the passages it heads
  (``head_weight``), and from a passage mostly to the phrases that head some passage
  (``link_boost``), never back to its own heads (``skip_own_heads``): the steps from a mention
  of "Shirley Temple" to the passage about her, as a hyperlink would;
- the passage restart comes from a first-hop ranking the caller already has (MixPR's local
  score, BM25, a TF-IDF cosine) and, in hybrid mode, from dense cosines;
- the score is the mass that *arrives* through the graph (``score="propagated"``, the walk's
  mass less its restart), so a passage reached from several seeds can pass the seeds that only
  matched the question's words. The flip side, at any corpus size: the passage a name of the
  question heads can outrank the passage that holds the question's words, even its exact text
  (``docs/notes/multihop-default.md``, "A passage the question names can outrank the passage
  with the question's words"; ``walk="pagerank"`` for lookups).

On ``hotpotqa-corpus`` (991 passages, 100 questions; settings chosen on the first 50) the walk
with MixPR's score as first hop reaches R@2 / R@5 73.5 / 92.5 (held-out half 74 / 91) where BM25
has 54.0 / 72.5 and MixPR 57.0 / 78.5; the ablation is in ``docs/notes/multihop.md``
(``benchmarks/studies/multihop_walk_study.py``).

Everything is linear in the corpus: the graph is the passage-phrase incidence (and, with
``term_share``, the passage-term TF-IDF matrix ``E``, MixPR's factored graph), never a
passage-by-passage product. The walk is a forward push by default
(:mod:`longctx.mixpr.multihop_push`: a query reads the rows its mass reaches over a threshold,
not the whole graph, and stops at a residual below ``tol``); the power iteration
(``solver="power"``) costs ``nnz`` of those matrices a step.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from longctx.checks import check_choice, check_float, check_int, check_query, check_weight
from longctx.mixpr.multihop_push import Bipartite, push_multihop
from longctx.mixpr.phrases import PhraseExtractor, PhraseGraph
from longctx.types import walk_record

__all__ = ["MultiHopWalk", "MultiHopRanker", "PhraseExtractor", "PhraseGraph"]

logger = logging.getLogger(__name__)

SCORES = ("propagated", "mass")
SOLVERS = ("push", "power")


@dataclass(frozen=True)
class MultiHopWalk:
    """Settings of the walk (:class:`MultiHopRanker`). Defaults chosen on the first 50
    questions of ``hotpotqa-corpus`` (``benchmarks/studies/multihop_walk_study.py``).

    Restart (seeds): the query's phrases found in the graph (longest matches), each weighted by
    ``1 / df``, share ``phrase_seed``; the ``seed_top`` best passages of the first hop in
    proportion to their score, share ``lexical_seed``; in hybrid mode the ``seed_top`` nearest
    passages by dense cosine, share ``dense_seed``. Shares are normalised over the seeds that
    are present.

    Steps: from a passage, ``1 - term_share`` of the moving mass goes to its phrases in
    proportion to ``idf * (1 + link_boost * heads_some_passage)`` (``idf = log((1 + n) / (1 +
    df)) + 1``; none to its own heads with ``skip_own_heads``), ``term_share`` to its index
    terms in proportion to its TF-IDF weights; from a phrase, to the passages holding it, a
    passage it heads weighing ``1 + head_weight``; from a term, to the passages holding it in
    proportion to their weights. ``alpha`` of the mass restarts at each step (the damping is
    ``1 - alpha``: 0.5 as in HippoRAG 2), and so does mass at a passage with no edge.

    Score: ``score="propagated"`` the mass arriving through edges at convergence (the walk's
    mass less its restart), ``"mass"`` the whole mass; divided by its maximum, plus
    ``lexical_weight`` times the first-hop score and ``dense_weight`` times the dense cosine
    (each clipped at 0 and divided by its maximum).

    Attributes
    ----------
    alpha : float in (0, 1], default 0.5
    solver : {"push", "power"}, default "push"
        ``"push"``: forward push over the bipartite unit <-> phrase graph, frontier only
        (:mod:`longctx.mixpr.multihop_push`): the cost of a query is set by the mass it moves,
        not by the number of units. ``"power"``: the power iteration over every unit and
        phrase at each step (the reference; the same fixed point).
    max_iter : int in [1, 10000], default 100
        A safety cap: the walk stops at ``tol``. ``"power"`` counts steps, ``"push"`` levels
        (a level moves mass unit -> phrase -> unit, two steps). At damping 0.5 a push reaches
        ``tol = 1e-6`` in about 10 levels, the power iteration in about 20-25 steps.
    tol : float >= 0, default 1e-6
        Stop when the mass still to move (push; the mass parked under ``push_threshold`` is
        not counted, the trace's ``parked`` reports it) or the L1 change of the passage and
        phrase mass (power) is below it, or when nothing moves any more (so with ``tol=0`` the
        push stops when all its mass is settled or parked; the power iteration, whose float
        steps rarely repeat exactly, runs to ``max_iter`` unless they do): an L1 bound on a probability vector, the same at every
        corpus size (until issue 36 the power iteration ran its 15 steps, a residual of
        about 3e-5).
    push_threshold : float >= 0, default 1e-7
        ``"push"`` only: a phrase (term) is pushed to its ``deg`` units only when its
        residual reaches ``push_threshold * deg`` (Andersen, Chung and Lang's ``r(u) >= eps
        d(u)``); below, its mass stays parked on it and is counted in the residual. 0 pushes
        every node (the exact series).
    head_weight : float in [0, 1e6], default 32
    link_boost : float in [0, 1e6], default 16
    skip_own_heads : bool, default True
    term_share : float in [0, 1], default 0 (needs ``E``)
    max_df : float in (0, 1], default 0.05
        A phrase held by more than this share of the passages (and by more than two) is no
        node of the walk: it links everything, as a stop word would.
    phrase_seed, lexical_seed, dense_seed : float in [0, 1e6], default 1
    seed_top : int >= 1, default 5
    score : {"propagated", "mass"}
    lexical_weight : float in [0, 1e6], default 0.5
        0 ranks by the walk alone: the best R@2 on the tuning half of ``hotpotqa-corpus``
        (78 against 73 at 0.5, R@5 alike), but a question that names nothing is then ranked
        by how the first hop's passages link, not by relevance: on chunked single documents
        (``longctx bench`` SQuAD at 5%, bAbI qa2/qa3) it fell far below MixPR, where 0.5 stays
        within a question of it (``docs/notes/multihop.md``).
    dense_weight : float in [0, 1e6], default 0

    Every float is finite (``inf`` is refused here, not at the first search); the weights are
    at most :data:`longctx.checks.MAX_WEIGHT`, so a phrase's or a passage's summed edge
    weights stay finite.
    """

    alpha: float = 0.5
    max_iter: int = 100
    tol: float = 1e-6
    head_weight: float = 32.0
    link_boost: float = 16.0
    skip_own_heads: bool = True
    term_share: float = 0.0
    max_df: float = 0.05
    phrase_seed: float = 1.0
    lexical_seed: float = 1.0
    dense_seed: float = 1.0
    seed_top: int = 5
    score: str = "propagated"
    lexical_weight: float = 0.5
    dense_weight: float = 0.0
    solver: str = "push"  # new fields last: positional construction keeps its meaning
    push_threshold: float = 1e-7

    def __post_init__(self):
        set_ = object.__setattr__
        a = check_float(self.alpha, "alpha", low=0.0, high=1.0)
        if a == 0:
            raise ValueError("alpha must be > 0 (alpha is the restart probability)")
        set_(self, "alpha", a)
        set_(self, "max_iter", check_int(self.max_iter, "max_iter", minimum=1))
        if self.max_iter > 10_000:
            raise ValueError(f"max_iter must be <= 10000, got {self.max_iter}")
        set_(self, "tol", check_float(self.tol, "tol", low=0.0))
        set_(self, "push_threshold", check_float(self.push_threshold, "push_threshold", low=0.0))
        check_choice(self.solver, "solver", SOLVERS)
        set_(self, "term_share", check_float(self.term_share, "term_share", low=0.0, high=1.0))
        mdf = check_float(self.max_df, "max_df", low=0.0, high=1.0)
        if mdf == 0:
            raise ValueError("max_df must be > 0")
        set_(self, "max_df", mdf)
        for name in (
            "head_weight",
            "link_boost",
            "phrase_seed",
            "lexical_seed",
            "dense_seed",
            "lexical_weight",
            "dense_weight",
        ):
            set_(self, name, check_weight(getattr(self, name), name))
        set_(self, "seed_top", check_int(self.seed_top, "seed_top", minimum=1))
        if not isinstance(self.skip_own_heads, bool):
            raise TypeError(
                f"skip_own_heads must be a bool, got {type(self.skip_own_heads).__name__}"
            )
        check_choice(self.score, "score", SCORES)

    def to_dict(self) -> dict:
        return asdict(self)


def _row_normalize(M) -> sp.csr_array:
    M = sp.csr_array(M, dtype=np.float64)
    s = np.asarray(M.sum(axis=1)).ravel()
    inv = np.divide(1.0, s, out=np.zeros_like(s), where=s > 0)
    return sp.csr_array(sp.diags_array(inv) @ M)


def _by_max(x: np.ndarray) -> np.ndarray:
    top = float(x.max()) if len(x) else 0.0
    return x / top if top > 0 else x


class MultiHopRanker:
    """The multi-hop walk over one corpus: built once (query-independent transition matrices),
    then :meth:`scores` per query; nothing on it changes, so threads can share it.

    Parameters
    ----------
    graph : PhraseGraph
        The passage-phrase incidence (:meth:`PhraseGraph.from_texts` over the units).
    walk : MultiHopWalk, optional
        Settings (defaults when omitted).
    extractor : PhraseExtractor, optional
        Finds the query's phrases; use the one that built ``graph`` (defaults when omitted).
    E : (n_units, n_terms) sparse, optional
        The units' TF-IDF rows (MixPR's ``E``); used only with ``walk.term_share > 0``.

    Raises
    ------
    TypeError, ValueError
        ``E`` not sparse, of another number of rows, or with negative or non-finite weights;
        ``term_share > 0`` without ``E``.

    Examples
    --------
    >>> import numpy as np
    >>> from longctx.mixpr.multihop import MultiHopRanker
    >>> units = [
    ...     "Kiss and Tell\\nA 1945 film starring Shirley Temple as Corliss Archer.",
    ...     "Meet Millie\\nA radio comedy about a woman who held a government job.",
    ...     "Shirley Temple\\nAn actress who became Chief of Protocol.",
    ... ]
    >>> ranker = MultiHopRanker.from_texts(units)
    >>> q = "What government position was held by the woman who starred in Kiss and Tell?"
    >>> first_hop = np.array([1.0, 0.7, 0.0])  # lexical: the radio show second
    >>> np.argsort(-ranker.scores(q, first_hop))[:2].tolist()  # the actress it names
    [0, 2]
    """

    def __init__(
        self, graph: PhraseGraph, walk: MultiHopWalk | None = None, *, extractor=None, E=None
    ):
        if not isinstance(graph, PhraseGraph):
            raise TypeError(f"graph must be a PhraseGraph, got {type(graph).__name__}")
        walk = walk if walk is not None else MultiHopWalk()
        if not isinstance(walk, MultiHopWalk):
            raise TypeError(f"walk must be a MultiHopWalk, got {type(walk).__name__}")
        self.graph = graph
        self.walk = walk
        self.extractor = extractor if extractor is not None else PhraseExtractor()
        n = graph.n_units
        df = graph.df.astype(np.float64)
        # phrases held by too many passages are no nodes (a phrase of two passages, the least
        # that links, is always kept)
        self.keep = (df > 0) & (df <= max(2.0, walk.max_df * n))
        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        inc = sp.csr_array(graph.mentions + graph.heads)
        inc.data[:] = 1.0
        # the walk's phrase nodes link passages (df >= 2); a phrase of one passage only seeds
        # it (its mass goes straight to that passage), so no step is spent on self-loops
        link = self.keep & (df >= 2)
        self._cols = np.flatnonzero(link)
        single = np.flatnonzero(self.keep & (df == 1))
        by_phrase = sp.csc_array(inc)
        self._single_unit = np.full(graph.n_phrases, -1, dtype=np.int64)
        self._single_unit[single] = by_phrase.indices[by_phrase.indptr[single]]
        inc = sp.csr_array(inc[:, self._cols])
        heads = sp.csr_array(graph.heads[:, self._cols])
        heads.data[:] = 1.0
        is_head = np.diff(sp.csc_array(heads).indptr) > 0
        # passage -> phrase: idf, more to a phrase that heads a passage (a link)
        w_out = idf[self._cols] * (1.0 + walk.link_boost * is_head)
        fwd = sp.csr_array(inc @ sp.diags_array(w_out))
        if walk.skip_own_heads:
            fwd = sp.csr_array(fwd - fwd.multiply(heads))
            fwd.eliminate_zeros()
        # phrase -> passage: a passage the phrase heads weighs 1 + head_weight
        back = sp.csr_array(inc + walk.head_weight * heads)
        # each direction kept once, by rows (the push reads a frontier's rows); the power
        # iteration multiplies by the transposes, CSC views of the same arrays (no copy)
        self._phr = (Bipartite(_row_normalize(fwd)), Bipartite(_row_normalize(back.T)))
        self._up_T = self._phr[0].rows.T  # (n_link, n_units)
        self._pu_T = self._phr[1].rows.T  # (n_units, n_link)
        has_p = np.diff(fwd.indptr) > 0
        self._ut_T = self._tu_T = self._trm = None
        has_t = np.zeros(n, dtype=bool)
        if walk.term_share > 0:
            if E is None:
                raise ValueError("term_share > 0 needs E (the units' TF-IDF rows)")
            E = _check_E(E, n)
            self._trm = (Bipartite(_row_normalize(E)), Bipartite(_row_normalize(E.T)))
            self._ut_T = self._trm[0].rows.T
            self._tu_T = self._trm[1].rows.T
            has_t = np.diff(E.indptr) > 0
        ts = walk.term_share
        # share of a passage's moving mass to phrases and to terms (all to the one it has)
        self._to_p = np.where(has_p, np.where(has_t, 1.0 - ts, 1.0), 0.0)
        self._to_t = np.where(has_t, np.where(has_p, ts, 1.0), 0.0)
        self._stuck = 1.0 - self._to_p - self._to_t

    @classmethod
    def from_texts(cls, texts, walk: MultiHopWalk | None = None, *, extractor=None, E=None):
        """``MultiHopRanker(PhraseGraph.from_texts(texts, extractor), walk, ...)``."""
        extractor = extractor if extractor is not None else PhraseExtractor()
        return cls(PhraseGraph.from_texts(texts, extractor), walk, extractor=extractor, E=E)

    @property
    def n_units(self) -> int:
        return self.graph.n_units

    def query_phrases(self, query: str) -> np.ndarray:
        """``(n_phrases,) float64`` restart weights of the query's phrases: ``1 / df`` of each
        node phrase that the query holds as a word n-gram with a capitalised word
        (:meth:`PhraseExtractor.query_candidates`), longest matches only ("kiss and tell", not
        also "kiss"). Linear in the query: a match is dropped when it is a run of words of
        another match, found by listing the runs of each match (at most ``max_words`` words:
        ``max_words * (max_words + 1) / 2`` runs), not by comparing every pair."""
        check_query(query, "query")
        g = self.graph
        cols = g.lookup(self.extractor.query_candidates(query))
        w = np.zeros(g.n_phrases)
        cols = cols[self.keep[cols]] if len(cols) else cols
        if len(cols):
            names = [g.vocabulary[c] for c in cols]
            inner = set()  # the runs of words of each match, but the whole match
            for q in names:
                words = q.split(" ")
                k = len(words)
                inner.update(
                    " ".join(words[i:j]) for i in range(k) for j in range(i + 1, k + 1) if j - i < k
                )
            longest = [c for c, p in zip(cols.tolist(), names) if p not in inner]
            idx = np.asarray(longest, dtype=np.int64)
            w[idx] = 1.0 / g.df[idx]
        return w

    def scores(
        self,
        query: str | None = None,
        first_hop=None,
        dense=None,
        *,
        phrase_weights=None,
        allowed=None,
        trace: list | None = None,
        keep: dict | None = None,
    ) -> np.ndarray:
        """``(n_units,) float64`` scores of every unit (higher is better; see
        :class:`MultiHopWalk`). The walk itself is a push (it reads the entries it reaches),
        but its seeds and its result are ``(n_units,)`` vectors: a query of the multi-hop walk
        makes a few passes over every unit (the first hop's scores densified, the seeds, the
        filter's mask, the scores).

        Parameters
        ----------
        query : str, optional
            Its phrases seed the walk (:meth:`query_phrases`); or give ``phrase_weights``.
        first_hop : (n_units,) float, optional
            First-hop scores (MixPR's local score, BM25, a TF-IDF cosine; higher is better).
        dense : (n_units,) float, optional
            Cosine of each unit to the query (hybrid mode).
        phrase_weights : (n_phrases,) float, optional
            Restart weights of phrases instead of the query's own.
        allowed : (n_units,) bool, optional
            A filter (metadata filters): only these units are seeds, and the others score 0
            (the caller drops them from the results). The walk may still pass through them, as
            a name links passages whatever their metadata.
        trace : list, optional
            Receives the walk's record ``{"stage": "multihop", "solver", "steps",
            "residual"}`` (push also ``"parked"`` and ``"read"``, the matrix entries read;
            :func:`~longctx.mixpr.multihop_push.push_multihop`); nothing without a seed.
        keep : dict, optional
            Receives the walk's vectors for :func:`longctx.mixpr.explain.explain_multihop`
            (``mass``, ``arrived``, ``r_u``, ``r_p``, ``d_u``, ``phrase_weights``,
            ``first_hop``, ``dense``, ``r_u_dense``: the dense seeds' part of ``r_u``;
            references, no copy); nothing without a seed.

        Returns
        -------
        (n_units,) float64
            Without any seed (no phrase of the query in the graph, no positive first-hop or
            dense score) the first-hop scores as given (zeros without them), logged.

        Raises
        ------
        ValueError
            An array of the wrong length or with non-finite values, named.
        """
        n = self.n_units
        first_hop = _check_vector(first_hop, "first_hop", n)
        dense = _check_vector(dense, "dense", n)
        if phrase_weights is None and query is not None:
            phrase_weights = self.query_phrases(query)
        phrase_weights = _check_vector(phrase_weights, "phrase_weights", self.graph.n_phrases)
        if phrase_weights is not None and phrase_weights.min(initial=0.0) < 0:
            raise ValueError("phrase_weights must be non-negative")
        if allowed is not None:
            allowed = np.asarray(allowed)
            if allowed.shape != (n,) or allowed.dtype != bool:
                raise ValueError(f"allowed must be a bool array of shape ({n},)")
            first_hop = None if first_hop is None else np.where(allowed, first_hop, 0.0)
            dense = None if dense is None else np.where(allowed, dense, 0.0)
            out = self._scores(query, first_hop, dense, phrase_weights, allowed, trace, keep)
            return np.where(allowed, out, 0.0)
        return self._scores(query, first_hop, dense, phrase_weights, None, trace, keep)

    def _scores(
        self, query, first_hop, dense, phrase_weights, allowed, trace, keep=None
    ) -> np.ndarray:
        n = self.n_units
        w = self.walk
        r_u, r_p = np.zeros(n), np.zeros(len(self._cols))
        d_u = np.zeros(n)  # restart on phrases of one passage, moved to that passage
        parts = []
        if phrase_weights is not None and w.phrase_seed > 0 and phrase_weights.sum() > 0:
            parts.append((True, w.phrase_seed, phrase_weights / phrase_weights.sum()))
        for scores, share in ((first_hop, w.lexical_seed), (dense, w.dense_seed)):
            seeds = _top_share(scores, w.seed_top) if share > 0 else None
            if seeds is not None:
                parts.append((False, share, seeds))
        total = sum(share for _, share, _ in parts)
        if total <= 0:
            logger.info("multi-hop walk: no seed for query %.80r; first-hop scores kept", query)
            return np.zeros(n) if first_hop is None else first_hop.copy()
        for on_phrase, share, v in parts:
            if on_phrase:
                r_p += (share / total) * v[self._cols]
                on = np.flatnonzero(v * (self._single_unit >= 0))
                d_u += np.bincount(
                    self._single_unit[on], weights=(share / total) * v[on], minlength=n
                )
            else:
                r_u += (share / total) * v
        if allowed is not None:  # a phrase of one passage seeds only an allowed passage
            d_u[~allowed] = 0.0
        mass, arrived = self._iterate(r_u, r_p, d_u, trace)
        if keep is not None:  # explain=True (longctx.mixpr.explain)
            near = _top_share(dense, w.seed_top) if w.dense_seed > 0 else None
            keep.update(
                mass=mass, arrived=arrived, r_u=r_u, r_p=r_p, d_u=d_u, first_hop=first_hop,
                dense=dense, phrase_weights=phrase_weights,
                r_u_dense=None if near is None else (w.dense_seed / total) * near,
            )  # fmt: skip
        out = _by_max(arrived if w.score == "propagated" else mass)
        if first_hop is not None and w.lexical_weight:
            out = out + w.lexical_weight * _by_max(np.maximum(first_hop, 0.0))
        if dense is not None and w.dense_weight:
            out = out + w.dense_weight * _by_max(np.maximum(dense, 0.0))
        return out

    def _iterate(self, r_u: np.ndarray, r_p: np.ndarray, d_u: np.ndarray, trace=None):
        """Personalized PageRank on the bipartite graph, matrix-free: ``(mass, arrived)`` of
        the passages, ``(n_units,) float64`` each, ``arrived`` the part of ``mass`` that came
        through edges. ``r_u`` and ``r_p`` restart on passages and linking phrases; ``d_u`` is
        the restart on phrases of one passage each, which reaches that passage one step later.
        ``walk.solver`` picks forward push (:func:`~longctx.mixpr.multihop_push.push_multihop`)
        or the power iteration (:meth:`_power`); both append their record to ``trace``."""
        w = self.walk
        if w.solver == "power":
            return self._power(r_u, r_p, d_u, trace)
        return push_multihop(
            self.n_units, self._phr, self._trm, self._to_p, self._to_t, self._stuck,
            r_u, r_p, d_u, alpha=w.alpha, tol=w.tol, max_iter=w.max_iter,
            push_threshold=w.push_threshold, trace=trace,
        )  # fmt: skip

    def _power(self, r_u: np.ndarray, r_p: np.ndarray, d_u: np.ndarray, trace=None):
        """The power iteration of :meth:`_iterate`: every unit and phrase at each step, until
        the L1 change of the whole state is below ``tol`` (or ``max_iter`` steps)."""
        a = self.walk.alpha
        steps, delta = 0, float("inf")
        x, y = r_u.copy(), r_p.copy()
        z = None if self._ut_T is None else np.zeros(self._ut_T.shape[0])
        arrived = np.zeros_like(x)
        last_restart = 1.0  # the walk starts at the restart distribution
        for _ in range(self.walk.max_iter):
            moving = (1.0 - a) * x
            arrived = self._pu_T @ ((1.0 - a) * y) + ((1.0 - a) * last_restart) * d_u
            y_next = self._up_T @ (moving * self._to_p)
            if z is not None:
                arrived = arrived + self._tu_T @ ((1.0 - a) * z)
                z = self._ut_T @ (moving * self._to_t)
            # the whole mass is 1: alpha of it restarts, and what reached a passage with no edge
            # no BLAS dot: on a busy CPU its threads spin (2.8 ms instead of 5 us at 36k units)
            restart = a + float((moving * self._stuck).sum())
            x_next = arrived + restart * r_u
            y_next += restart * r_p
            # the change of the whole state (the passages alone can stand still for a step)
            delta = float(np.abs(x_next - x).sum() + np.abs(y_next - y).sum())
            x, y, last_restart = x_next, y_next, restart
            steps += 1
            if delta < self.walk.tol or delta == 0.0:  # or a fixed point (tol=0)
                break
        if trace is not None:
            trace.append(walk_record("multihop", "power", steps, delta))
        return x, arrived


def _top_share(scores: np.ndarray | None, top: int) -> np.ndarray | None:
    """The ``top`` highest positive ``scores`` as a distribution (others 0), or None."""
    if scores is None or not len(scores):
        return None
    k = min(top, len(scores))
    idx = np.argpartition(-scores, k - 1)[:k]
    idx = idx[scores[idx] > 0]
    if not len(idx):
        return None
    w = np.zeros(len(scores))
    w[idx] = scores[idx]
    return w / w.sum()


def _check_vector(v, name: str, n: int) -> np.ndarray | None:
    if v is None:
        return None
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} must be finite")
    return v


def _check_E(E, n: int) -> sp.csr_array:
    if not sp.issparse(E):
        raise TypeError(f"E must be a scipy.sparse matrix, got {type(E).__name__}")
    E = sp.csr_array(E, dtype=np.float64)
    if E.shape[0] != n:
        raise ValueError(f"E must have one row per unit ({n}), got {E.shape[0]}")
    if E.nnz and (not np.isfinite(E.data).all() or E.data.min() < 0):
        raise ValueError("E must hold finite non-negative weights")
    return E
