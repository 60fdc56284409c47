"""MixPR settings: :class:`MixPRConfig` (every setting, shared by :class:`MixPR` and
:class:`MixPRIndex`), the stop-word lists, the stemming analyzer and the :data:`PRESETS`
(``"paper"``, ``"default"``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from longctx.checks import check_choice, check_float, check_int, check_weight
from longctx.mixpr.lines import chunk_regions, looks_line_structured  # its patterns compiled
from longctx.terms import (
    ScriptAnalyzer,
    fold_accents_ascii,
    fold_accents_unicode,
    fold_accents_unicode_kept,
)
from longctx.text import chunk_words
from longctx.word_pieces import shared_words

#: Question words and auxiliaries that scikit-learn's English stop-word list lacks (it holds
#: who / what / which / when / where / why / how / do / is / was already): ``"english+questions"``.
QUESTION_STOP_WORDS = ("called", "did", "does", "doing", "kind", "named", "type")

STOP_WORD_NAMES = ("english", "english+questions")

#: Upper bounds of the power iteration (a saved index is untrusted: ``max_iter=10**9, tol=0``
#: would hang every search). networkx's default is 100 iterations; the paper uses 18.
MAX_ITER_LIMIT = 10_000
#: Largest ``coverage_power`` and ``graph_idf_power``: a share in [0, 1] to this power is already
#: 0 in float64 for shares under ~1e-5 (``0.99 ** 64`` is 0.53, so the power still ranks).
MAX_POWER = 64.0


class _StemmedAnalyzer(ScriptAnalyzer):
    """scikit-learn word analyzer followed by a Snowball stemmer (PyStemmer), with CJK and Thai
    runs indexed as character bigrams (:class:`longctx.terms.ScriptAnalyzer`): a plain object, so
    the vectorizer is rebuilt from the config's ``stemmer`` name, never pickled."""

    def __init__(self, base, language: str | None):
        super().__init__(base, language)


@dataclass(frozen=True, kw_only=True)
class MixPRConfig:
    """Every MixPR setting, shared by :class:`MixPR` (one-off calls) and :class:`MixPRIndex`, so a
    built index and a one-off call rank alike. Pick a preset with ``preset=`` and override fields
    by keyword (``MixPRIndex.from_texts(texts, preset="paper", threshold=0.3)``). The field
    defaults are the ``"default"`` preset's; :data:`PRESETS` ``["paper"]`` holds the paper's.
    Fields are keyword-only (``MixPRConfig(threshold=0.3)``): a field added among the others
    never shifts a positional argument.

    Attributes
    ----------
    threshold : float in [0, 1], default 0.2 (paper: 0.27)
        Chunk-chunk cosine similarities below it are dropped from the graph (appendix A.2).
    query_threshold : float in [0, 1] or None, default 0.05 (paper: None)
        Threshold of the query's edges; ``None``: the same as ``threshold`` (the paper).
    alpha_local : float in (0, 1], default 0.8 (paper: 0.6)
        Restart weight of personalized PageRank for local queries (eq. 2). With
        ``coverage_power`` the restart is the better-aimed part, so it gets more weight.
    coverage_power : float in [0, 64], default 4.0 (paper: 0, off)
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
    max_iter : int in [1, 10000], default 18
        Power iterations (appendix A.2); stops earlier at ``tol``. Bounded (:data:`MAX_ITER_LIMIT`)
        so that no setting, saved or given, can make a search run without end.
    tol : float in [0, 1], default 1e-6
        The walk stops when the probability mass still moving is below it, or when nothing
        moves any more (``tol=0``: the push stops once its mass is settled or parked, the power
        iteration at a step that changes nothing, else at ``max_iter``): for
        the power iteration ``||x_t - x_{t-1}||_1 < tol``, for the push walk the mass still
        moving from one level to the next. The push walk's mass *parked* on terms below
        ``push_threshold`` is not bounded by ``tol`` but by ``push_threshold``; the trace
        reports it (``parked``, and ``residual`` = moving + parked): with the defaults about
        0.009 on War and Peace, 9,000 x ``tol``, whose top 100 is the exact walk's all the same
        (issue 44). ``push_threshold=0`` parks nothing.
        An L1 bound on a probability vector, so it means the same at every corpus size
        (networkx's ``n * tol`` loosened with the corpus: 3 steps at 58k units, 1 at 2M).
    max_words : int >= 1, default 64 (paper: 32)
        N of the chunker (sec. 4 "Chunking method"): a sentence longer than it is cut into equal
        word pieces. At 32 the long sentences of Wikipedia (HotpotQA) were cut in two, and a
        supporting fact then needed both pieces: HotpotQA "all facts" at 20 / 40% 0.35 / 0.53
        -> 0.48 / 0.67 with 64 (``docs/notes/mixpr-recall.md``).
    stop_words : "english", "english+questions", tuple of str or None
        Stop words (``"english+questions"``: scikit-learn's English list plus
        :data:`QUESTION_STOP_WORDS`, so "did" / "does" do not rank chunks). The paper does not
        state its TF-IDF settings;
        dropping English stop words keeps ``E E^T`` cheap on long texts (1M tokens of Gutenberg,
        ~70k chunks: ~1.4e8 term-pair products instead of ~4.1e9, ~1.5 s instead of over a minute
        here) and stops "the" / "is" from linking unrelated sentences.
    strip_accents : None, "unicode" or "ascii"
        ``TfidfVectorizer`` accent folding ("Natásha" == "Natasha").
    fold_decomposed : bool, default True
        With ``strip_accents="unicode"``: combining marks are dropped from every Latin, Greek
        or Cyrillic run that is not ASCII (and from symbols and punctuation), as
        scikit-learn's ``strip_accents_unicode`` does there (other scripts keep their marks:
        :mod:`longctx.terms`), so an accent written
        decomposed (``"qe\\u0301yz"``) or ``"İ"`` (lower-cased to i + a combining dot) gives the
        terms of its composed form, in the build and in a query alike
        (:func:`longctx.terms.fold_accents_unicode`). ``False``: the folding of indexes saved
        before this field (:func:`longctx.terms.fold_accents_unicode_kept`: a text that NFKD
        leaves as it is kept its marks, so the build, which folds 512 units at a time, and a
        query could fold a unit apart); such an index loads with it, so that its queries and
        inserts keep the vocabulary it was saved with.
    sublinear_tf : bool
        ``1 + log(tf)`` term frequencies.
    stemmer : str or None
        A Snowball stemmer language of PyStemmer (``"english"``: Porter2) applied to every term
        after stop-word removal, or None. Stored by name (persisted as JSON).
    split_lines : bool or None, default None (paper: True)
        The chunker's newline step (:func:`longctx.text.chunk_words`): True cuts a sentence over
        ``max_words`` words at every line break (the paper); False only at blank lines, then into
        equal word pieces, so hard-wrapped text is not cut into line fragments. None (the
        default) decides per region of the text: a block of short records, one a line
        (``key = value``, hash assignments, log lines, CSV rows, lists; any line break
        :meth:`str.splitlines` knows: :func:`longctx.mixpr.lines.record_blocks`, which reads
        every line), keeps each line as a unit (:func:`longctx.mixpr.lines.line_units`); the
        text before, between and after such blocks is chunked as with False. Packed 21 records
        to a unit, Hash-Hop chains were lost in the walk (``docs/notes/mixpr-scale.md``).
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
    lexical_weight : float in [0, 1e6], default 0.25 (paper: 0, off)
        Not in the paper. The score of a local query is the walk's score plus
        ``lexical_weight`` times the unit's direct TF-IDF cosine to the query, each divided by
        its maximum over the units. The walk's mass leaves the question's terms after the first
        matches, so without it the tail of the ranking is the walk's diffusion, not relevance:
        recall stopped growing with the budget (``docs/notes/mixpr-recall.md``).
    dense_weight : float in [0, 1e6], default 0.0
        Hybrid mode only (an index built with ``encoder=`` or ``unit_vectors=``): weight of the
        unit's dense cosine to the query (clipped at 0, divided by its maximum) added to the
        score. Off by default: at 1.0 the haystack sentences nearest to a bAbI question push
        the second supporting fact out (``longctx bench`` qa2 at 16k: 0.00), while the dense
        restart alone keeps bAbI at 1.00 (``docs/notes/mixpr-recall.md``).
    dense_restart : float in [0, 1e6], default 3.0
        Hybrid mode only: the restart distribution of the walk is the lexical one plus
        ``dense_restart`` times the dense one (each summing to 1): the ``dense_top_k``
        nearest units by dense cosine, in proportion to it. So a unit that shares no term with
        the question, but is near it in the embedding space, starts the walk too. 3.0 puts 75%
        of the restart on the dense neighbours. It was 4.0 (80%) on the thresholded graph; on
        the factored graph 4.0 lost two bAbI qa3 questions at 5% of 16k tokens, 3.0 one, with
        SQuAD, NarrativeQA and HotpotQA as good or better (``docs/notes/mixpr-linear.md``).
    dense_top_k : int >= 1, default 6
        Hybrid mode only: how many nearest units join the restart. 6 neighbours were chosen on
        ``longctx bench`` (MiniLM vectors, 60 questions a task): at least MiniLM top-k on the
        same units at every budget of SQuAD, NarrativeQA and HotpotQA, and bAbI qa1-qa3 at
        1.00 at 16k and 128k; more neighbours (16) or a smaller share (1.0) each lost one of
        those by a question or two (``docs/notes/mixpr-recall.md``).
    graph : {"factored", "threshold"}, default "factored" (paper: "threshold")
        The unit graph of the walk. ``"threshold"``: the paper's ``S = E E^T`` with entries below
        ``threshold`` dropped (:func:`~longctx.mixpr.graph.similarity_graph`); its size grows
        with the square of the text where terms repeat (4M words of Gutenberg: 136M entries,
        9 GB, 19x the build time of 1M words), so it suits texts of up to about a million
        words. ``"factored"``: ``S = E W E^T`` kept as its factor
        (:class:`~longctx.mixpr.graph.FactoredGraph`): a walk step costs two passes over
        ``E``'s non-zeros, so build, memory and query time grow linearly with the text, and
        documents can be inserted and deleted without rebuilding anything quadratic. ``threshold``
        is not used by it.
    graph_idf_power : float in [0, 64], default 4.0
        ``"factored"`` only: each term links units with weight ``(idf / max idf) **
        graph_idf_power``, so terms held by many units (which link everything) carry little of
        the walk, as the threshold removed their weak edges. 4 was chosen on ``longctx bench``
        (60 questions a task): at powers 1, 2 and 4 SQuAD, NarrativeQA and bAbI qa1-qa3 are
        within one question of the thresholded graph at every budget; power 0 (plain cosine,
        no threshold) lost two HotpotQA questions at 20% (``docs/notes/mixpr-linear.md``).
    solver : {"push", "power"}, default "push" (paper: "power")
        How the local walk is computed: on the factored graph with
        ``personalization="similarity"`` (:mod:`longctx.mixpr.push`), and on the thresholded
        graph (``graph="threshold"``) with either restart, the query nodes of the paper
        included (:mod:`longctx.mixpr.push_graph`); the factored graph's bordered walk
        (``personalization="query"``) and the global PageRank always use the power iteration.
        ``"push"``: forward push level by level from the restart (after Andersen, Chung and
        Lang, FOCS 2006): a query costs the graph entries its walk reaches, not a pass over
        every unit per step, so the walk can run until ``tol`` at any corpus size. ``"power"``:
        the power iteration over every unit. Both compute the same fixed point (eq. 2); the
        push leaves out what the rule below parks. (The one-off paper-literal pipeline,
        ``MixPR`` with ``fit_query=True``, keeps
        :func:`~longctx.mixpr.graph.personalized_pagerank`.)
    push_threshold : float in [0, 1], default 1e-7 (paper: 1e-8)
        ``solver="push"``: a term (factored graph) or a unit (thresholded graph) passes its
        mass on only when each of the units it links would get about this much or more
        (``w_j t_j s_j >= push_threshold * df_j``; ``r_u >= push_threshold * k_u``, ``k_u``
        the unit's neighbours); below, the mass stays parked (reported in the walk's trace as
        ``parked``; on the thresholded graph a parked unit keeps ``alpha`` of it as its own
        score). 0 pushes everything reached (the exact series, as the power iteration). The
        paper preset with ``solver="push"`` and its 1e-8 gives the power iteration's top 100
        on War and Peace + Monte Cristo (8 questions) at about a fifth of its query time; 1e-7
        lost one unit of the top 100 on one question of eight. The paper preset keeps the
        power iteration: on short documents (HotpotQA, NarrativeQA) the push moved ``longctx
        bench`` cells by up to 2-3 questions, through the order of the units the walk never
        reaches (``docs/notes/mixpr-scale.md``).
    push_df_power : float in [1, 4], default 1.5
        ``solver="push"`` on the factored graph: a term other than the query's own at the
        first level, and every term at the later levels, passes its mass on only when
        ``w_j t_j s_j >= push_threshold * df_j ** push_df_power``, i.e. a term held by many
        units needs more mass for each of them; the query's own terms keep the rule above at
        the first level (``1``: the rule above everywhere). On prose the restart units' other
        terms and the later levels spread little mass over tens of thousands of units through
        common terms, which moved no unit of a top 100 at 10M and 20M words of Gutenberg (20
        questions; one unit of one question's top 100 at 1M) and cut the query's CPU time
        3.2x / 4.3x there; a Hash-Hop term (held by 2 units) is pushed as before
        (``docs/notes/mixpr-scale.md``, section 7).
    walk : {"auto", "pagerank", "multihop"}, default "auto" (presets ``"multihop"``:
        "multihop", ``"paper"`` and ``"pagerank"``: "pagerank")
        ``"auto"``: chosen per index and per query (:func:`longctx.mixpr.router.plan_walk`,
        :func:`~longctx.mixpr.router.choose_walk`): a corpus of passages (two or more
        documents of at most 8 units each on average, e.g. ``chunk=False``) builds the phrase
        graph, and its local queries that name one of its phrases take the multi-hop walk;
        one document or long documents keep the PageRank walk and its build cost. The choice
        is in the result's ``trace`` (``{"stage": "route", ...}``). On ``longctx bench``
        ``hotpotqa-corpus`` it ranks as the ``"multihop"`` preset; on the single-document
        tasks as ``"pagerank"`` (``docs/notes/multihop-default.md``).
        ``"multihop"``: after the local score (the first hop), a personalized PageRank over
        the units and the capitalised phrases they share (:mod:`longctx.mixpr.multihop`,
        after HippoRAG, Gutierrez et al., 2024, arXiv:2405.14831, and HippoRAG 2, 2025,
        arXiv:2502.14802), seeded from the query's own phrases, its best units and, in hybrid
        mode, its nearest units: the second passage of a multi-hop question, which shares no
        word with it, is reached through the name the first passage mentions. For corpora of
        passages (``chunk=False``): on ``longctx bench``'s ``hotpotqa-corpus`` R@2 / R@5
        77 / 93 where MixPR has 57 / 79 and BM25 54 / 73 (``docs/notes/multihop.md``); on
        chunked single documents it loses a little (HotpotQA at 20%).
    multihop : dict
        Settings of :class:`longctx.mixpr.multihop.MultiHopWalk` (stored as sorted pairs).
    sentences : {"rules", "auto", "nupunkt", "stanza"}, default "rules" (paper: "auto")
        The sentence splitter of the chunker (:func:`longctx.text.split_sentences`).
        ``"rules"``: one regular-expression pass, about 4x the speed of nupunkt's Punkt model
        (``"auto"``) with the grapheme and script handling around it, which was over half of
        the build of a large corpus; on War and Peace 98% of nupunkt's boundaries are its own.
    """

    threshold: float = 0.2
    query_threshold: float | None = 0.05
    alpha_local: float = 0.8
    max_iter: int = 18
    tol: float = 1e-6
    max_words: int = 64
    stop_words: str | tuple[str, ...] | None = "english+questions"
    strip_accents: str | None = "unicode"
    fold_decomposed: bool = True
    sublinear_tf: bool = True
    personalization: str = "similarity"
    fit_query: bool = False
    vectorizer_kwargs: tuple[tuple[str, Any], ...] = ()
    stemmer: str | None = "english"
    split_lines: bool | None = None
    min_words: int | None = None
    coverage_power: float = 4.0
    literal_query_weights: bool = False
    lexical_weight: float = 0.25
    dense_weight: float = 0.0
    dense_restart: float = 3.0
    dense_top_k: int = 6
    graph: str = "factored"
    graph_idf_power: float = 4.0
    walk: str = "auto"
    solver: str = "push"
    push_threshold: float = 1e-7
    push_df_power: float = 1.5
    multihop: tuple[tuple[str, Any], ...] = ()
    sentences: str = "rules"

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
        if self.max_iter > MAX_ITER_LIMIT:
            raise ValueError(f"max_iter must be <= {MAX_ITER_LIMIT}, got {self.max_iter}")
        set_(self, "tol", check_float(self.tol, "tol", low=0.0, high=1.0))
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
        if not isinstance(self.fold_decomposed, bool):
            raise TypeError(
                f"fold_decomposed must be a bool, got {type(self.fold_decomposed).__name__}"
            )
        set_(self, "sublinear_tf", bool(self.sublinear_tf))
        check_choice(self.personalization, "personalization", PERSONALIZATIONS)
        set_(self, "fit_query", bool(self.fit_query))
        if self.split_lines is not None and not isinstance(self.split_lines, bool):
            raise TypeError(
                f"split_lines must be a bool or None, got {type(self.split_lines).__name__}"
            )
        set_(
            self,
            "coverage_power",
            check_float(self.coverage_power, "coverage_power", low=0.0, high=MAX_POWER),
        )
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
        for name in ("lexical_weight", "dense_weight", "dense_restart"):
            set_(self, name, check_weight(getattr(self, name), name))
        set_(self, "dense_top_k", check_int(self.dense_top_k, "dense_top_k", minimum=1))
        check_choice(self.graph, "graph", GRAPHS)
        check_choice(self.walk, "walk", WALKS)
        check_choice(self.solver, "solver", SOLVERS)
        set_(
            self,
            "push_threshold",
            check_float(self.push_threshold, "push_threshold", low=0.0, high=1.0),
        )
        set_(
            self,
            "push_df_power",
            check_float(self.push_df_power, "push_df_power", low=1.0, high=4.0),
        )
        from longctx.text import SENTENCE_BACKENDS

        check_choice(self.sentences, "sentences", SENTENCE_BACKENDS)
        mh = self.multihop
        if isinstance(mh, dict):
            mh = tuple(sorted(mh.items()))
        mh = tuple((str(k), v) for k, v in mh)
        set_(self, "multihop", mh)
        self.multihop_walk()  # raises now on a bad setting
        set_(
            self,
            "graph_idf_power",
            check_float(self.graph_idf_power, "graph_idf_power", low=0.0, high=MAX_POWER),
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

    def multihop_walk(self):
        """The :class:`longctx.mixpr.multihop.MultiHopWalk` of ``multihop`` (its settings)."""
        from longctx.mixpr.multihop import MultiHopWalk

        try:
            return MultiHopWalk(**dict(self.multihop))
        except TypeError as exc:
            raise ValueError(f"bad multihop setting: {exc}") from None

    def chunk(self, text: str) -> list[tuple[int, int]]:
        """The units of ``text`` under these settings (:func:`longctx.text.chunk_words`):
        ``(start, end)`` character spans."""
        if self.split_lines is None:
            return chunk_regions(text, self.max_words, self._chunk_prose, self.sentences)
        return self._chunk_prose(text, self.split_lines)

    def _chunk_prose(self, text: str, split: bool | None = None) -> list[tuple[int, int]]:
        """:func:`longctx.text.chunk_words` with these settings (``split``: ``split_lines``,
        False where it is None)."""
        if split is None:
            split = bool(self.split_lines)
        return chunk_words(
            text,
            self.max_words,
            split_lines=split,
            min_words=self.min_words,
            backend=self.sentences,
        )

    def chunk_many(self, texts) -> list[list[tuple[int, int]]]:
        """``[self.chunk(t) for t in texts]``, the same spans, with short texts chunked together
        (:meth:`chunk_arrays`)."""
        import numpy as np

        src, starts, ends = self.chunk_arrays(texts)
        bounds = np.searchsorted(src, np.arange(len(texts) + 1), side="left").tolist()
        pairs = list(zip(starts.tolist(), ends.tolist()))
        return [pairs[bounds[i] : bounds[i + 1]] for i in range(len(texts))]

    def chunk_arrays(self, texts):
        """The units of every text as ``(source, starts, ends)`` int64 arrays, in text order:
        the spans of :meth:`chunk`, with short texts chunked together. With the ``"rules"``
        splitter (whose decisions look one character ahead and a word back) texts of under
        :data:`BATCH_TEXT_CHARS` characters are joined by blank lines, which always end a
        sentence there, chunked as one text and cut apart again, so 100k one-paragraph
        documents do not pay the per-call costs of the chunker 100k times. A batch in which a
        unit would cross from one text into the next (a text ending in an abbreviation such as
        "Mr.") is chunked text by text instead."""
        with shared_words():  # each text's words found once for its lines, sentences, chunks
            return self._chunk_arrays(texts)

    def _chunk_arrays(self, texts):
        import numpy as np

        parts: list = []  # (source, starts, ends) arrays, in any order
        alone: list[int] = []
        if self.sentences != "rules":
            alone = list(range(len(texts)))
        else:
            batch: list[int] = []
            size = 0
            auto = self.split_lines is None
            for i, t in enumerate(texts):
                if (
                    len(t) >= BATCH_TEXT_CHARS
                    or not _joinable(t)
                    or (auto and looks_line_structured(t))
                ):
                    alone.append(i)
                    continue
                batch.append(i)
                size += len(t) + 2
                if size >= BATCH_CHARS:
                    alone += self._chunk_batch(texts, batch, parts)
                    batch, size = [], 0
            alone += self._chunk_batch(texts, batch, parts)
        for i in alone:
            spans = np.asarray(self.chunk(texts[i]), dtype=np.int64).reshape(-1, 2)
            parts.append((np.full(len(spans), i, dtype=np.int64), spans[:, 0], spans[:, 1]))
        if not parts:
            z = np.zeros(0, dtype=np.int64)
            return z, z.copy(), z.copy()
        src = np.concatenate([p[0] for p in parts])
        starts = np.concatenate([p[1] for p in parts])
        ends = np.concatenate([p[2] for p in parts])
        order = np.lexsort((starts, src))
        return src[order], starts[order], ends[order]

    def _chunk_batch(self, texts, batch: list[int], parts: list) -> list[int]:
        """Chunk the texts ``batch`` joined; their units go to ``parts``; returns the texts to
        chunk one by one (a unit crossed into them)."""
        if not batch:
            return []
        import numpy as np

        lens = np.fromiter((len(texts[i]) for i in batch), np.int64, len(batch))
        offsets = np.concatenate([[0], np.cumsum(lens + len(_JOIN))[:-1]])
        joined = _JOIN.join(texts[i] for i in batch)  # none of them line-structured
        arr = np.asarray(self._chunk_prose(joined), dtype=np.int64).reshape(-1, 2)
        doc = np.searchsorted(offsets, arr[:, 0], side="right") - 1
        last = np.searchsorted(offsets, arr[:, 1] - 1, side="right") - 1
        bad = np.zeros(len(batch), dtype=bool)
        for d0, d1 in zip(doc[last > doc].tolist(), last[last > doc].tolist()):
            bad[d0 : d1 + 1] = True  # every text a crossing unit touches
        keep = ~bad[doc]
        ids = np.asarray(batch, dtype=np.int64)
        d = doc[keep]
        parts.append((ids[d], arr[keep, 0] - offsets[d], arr[keep, 1] - offsets[d]))
        return ids[bad].tolist()

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
        # accents folded on Latin, Greek and Cyrillic only (Japanese で stays で)
        unicode = fold_accents_unicode if self.fold_decomposed else fold_accents_unicode_kept
        fold = {"unicode": unicode, "ascii": fold_accents_ascii}.get(self.strip_accents)
        try:
            vec = TfidfVectorizer(
                stop_words=sw,
                strip_accents=fold,
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
            # CJK and Thai runs become character bigrams; other text keeps the word analyzer's
            # terms (stemmed when a stemmer is set)
            analyzer = _StemmedAnalyzer(vec.build_analyzer(), self.stemmer)
            analyzer.word_vectorizer = vec  # its settings, for the batched analysis of MixPR
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
        d["multihop"] = dict(self.multihop)
        return d

    @classmethod
    def from_preset(cls, preset: str = "default", **overrides) -> MixPRConfig:
        """The preset's settings with ``overrides`` applied (unknown names raise ``TypeError``)."""
        check_choice(preset, "preset", PRESETS)
        return replace(PRESETS[preset], **overrides) if overrides else PRESETS[preset]


#: Texts shorter than this (characters) are chunked in batches (:meth:`MixPRConfig.chunk_many`).
BATCH_TEXT_CHARS = 20_000
#: About how many characters one batch of :meth:`MixPRConfig.chunk_many` holds.
BATCH_CHARS = 1_000_000
_JOIN = "\n\n"


def _joinable(text: str) -> bool:
    """Whether ``text`` can be joined to others by a blank line without changing its grapheme
    clusters (it ends in no carriage return and starts with no mark that joins the character
    before it, e.g. a combining accent or a zero-width joiner)."""
    import unicodedata

    if not text or text.endswith("\r"):
        return False
    c = text[0]
    return not (
        unicodedata.category(c) in ("Mn", "Mc", "Me", "Cf") or "\U0001f3fb" <= c <= "\U0001f3ff"
    )


PERSONALIZATIONS = ("query", "similarity")
GRAPHS = ("factored", "threshold")
WALKS = ("auto", "pagerank", "multihop")
SOLVERS = ("push", "power")

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
#: folding, no stemming, alpha .6, no coverage weighting, the thresholded graph, the power
#: iteration; ``solver="push"`` computes the same walk by forward push on that graph,
#: :mod:`longctx.mixpr.push_graph`).
#: ``"default"``: built once per corpus, tuned on SQuAD, NarrativeQA,
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
    max_words=32,
    coverage_power=0.0,
    min_words=None,
    literal_query_weights=True,
    lexical_weight=0.0,
    graph="threshold",
    sentences="auto",
    walk="pagerank",
    solver="power",
    push_threshold=1e-8,  # with solver="push" (docs/notes/mixpr-scale.md)
)
PRESETS["default"] = MixPRConfig()
PRESETS["multihop"] = MixPRConfig(walk="multihop")
#: the default before ``walk="auto"``: the PageRank walk everywhere, no phrase graph
PRESETS["pagerank"] = MixPRConfig(walk="pagerank")
