"""The methods the harness compares, each behind the same two calls.

``build(doc) -> state`` does the query-independent work once per document (timed as *build*);
``select(state, query, token_budget) -> list of (start, end)`` answers one query (timed as
*query*). Every method fills the same token budget, counted with the same token counter (the
SmolLM2 tokenizer by default), and returns character spans of the document. The sentence-based
methods share one sentence split and one set of sentence embeddings per document
(:class:`Doc`), so baselines do not pay twice for what the methods share.

Methods: ``mixpr`` (:class:`longctx.MixPRIndex` with its defaults: ``walk="auto"``, the multi-hop
walk on a corpus of passages for a question that names one of its phrases, else the PageRank
walk), ``mixpr-seeded`` (MixPR whose walk is seeded by the ``minilm`` baseline's best
sentences, :class:`MixPRSeededMethod`: the hybrid over the app's own retriever), ``mixpr-hybrid``
(MixPR with MiniLM vectors of its units, :class:`MixPRHybridMethod`), ``mixpr-paper`` (``preset="paper"``), ``mixpr-pagerank``
(``preset="pagerank"``: the PageRank walk everywhere, the default before ``walk="auto"``),
``mixpr-multihop`` and
``mixpr-multihop-hybrid`` (MixPR's score, then the multi-hop walk of
:mod:`longctx.mixpr.multihop`: :class:`MixPRMultiHopMethod`), ``bm25`` (rank-bm25's BM25Okapi; Robertson and
Zaragoza, 2009), ``minilm`` (all-MiniLM-L6-v2 cosine to the question), ``mmr`` and ``fps``
(:func:`longctx.diversity.mmr_select` / ``fps_select`` on MiniLM sentence embeddings,
lambda 0.5), ``mixpr+mmr`` (MixPR's best chunks filling half the budget, then MMR with its
scores as rewards over the rest: :func:`longctx.diversity.rerank.rerank_select`),
``truncate`` (LongBench's middle truncation: the head and the tail, half the budget each; Bai et
al., 2023, arXiv:2308.14508), ``random`` (seeded), ``youra`` (:class:`longctx.ReactionScorer`,
``baseline="instruction"``, model tokens); ``garlic`` is in :mod:`longctx.eval.garlic` (opt-in, its
graph build runs the LLM over every document).

Corpus tasks (:data:`longctx.eval.tasks.CORPUS_TASKS`): ``build_corpus(passages, ctx) -> state``
builds one index over every passage of the pool, each passage one unit, whole (timed as
*build*), and ``rank(state, query, k) -> passage positions`` returns the ``k`` best, best first
(timed as *query*). ``mixpr``, ``mixpr-hybrid``, ``mixpr-paper`` and the ``mixpr-multihop``
methods build :class:`longctx.MixPRIndex` with ``chunk=False``; ``bm25`` and ``minilm`` score the passages
as they score sentences; ``mmr`` / ``fps`` select ``k`` passages by their MiniLM vectors;
``random`` shuffles (seeded). The others have no ranking of passages and are reported as
skipped.
"""

from __future__ import annotations

import hashlib
import random
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from longctx.selection import BudgetTooSmallError, select_top
from longctx.text import split_sentences

GLOBAL_QUERY = "Summarize the document."


@dataclass
class Context:
    """What every method of one run shares: the token counter, the sentence encoder and its
    embeddings, cached by sentence text (in memory, and in ``cache_dir`` when given, so a
    haystack is embedded once per run, or once ever), and token counts (sentences in memory,
    whole documents also in ``cache_dir``).

    ``scope`` names the cache files (one per task, e.g. ``babilong-128k``), so a worker process
    loads only the vectors of the task it runs. ``options`` holds per-method settings
    (``{"garlic": {...}}``, see :class:`longctx.eval.garlic.GarlicMethod`).
    """

    token_counter: object
    encoder_factory: object = None
    seed: int = 0
    cache_dir: object = None
    scope: str = "all"
    options: dict = field(default_factory=dict)
    _encoder: object = None
    _vectors: dict = field(default_factory=dict)
    _loaded: bool = False
    _dirty: bool = False
    _counts: dict = field(default_factory=dict)
    _doc_counts: dict | None = None

    @property
    def encoder(self):
        if self._encoder is None:
            from longctx.embeddings import get_encoder

            self._encoder = (self.encoder_factory or get_encoder)()
        return self._encoder

    def _cache_file(self, kind: str = "sentence-embeddings", ext: str = "npz"):
        from pathlib import Path

        return Path(self.cache_dir) / f"{kind}-{self.scope}.{ext}"

    def embed(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), d)`` float32 embeddings, each distinct text embedded once."""
        if self.cache_dir is not None and not self._loaded:
            self._loaded = True
            f = self._cache_file()
            if f.is_file():
                with np.load(f, allow_pickle=False) as z:
                    self._vectors.update(zip(z["keys"].tolist(), z["vectors"]))
        keys = [_key(t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        if missing:
            first = {k: t for k, t in zip(keys, texts)}
            vecs = self.encoder.embed_documents([first[k] for k in missing])
            self._vectors.update(zip(missing, np.asarray(vecs, dtype=np.float32)))
            self._dirty = True
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def count(self, text: str) -> int:
        """Tokens of ``text`` (the run's counter), memoized in memory."""
        n = self._counts.get(text)
        if n is None:
            n = self._counts[text] = int(self.token_counter(text))
        return n

    def count_document(self, text: str) -> int:
        """Tokens of a whole document, kept in ``cache_dir`` (a 128k-token haystack costs about
        a second to count, in every worker process)."""
        from longctx.persist import read_json

        if self._doc_counts is None:
            self._doc_counts = {}
            if self.cache_dir is not None and self._cache_file("doc-tokens", "json").is_file():
                self._doc_counts = read_json(self._cache_file("doc-tokens", "json"))
        k = _key(text)
        if k not in self._doc_counts:
            self._doc_counts[k] = int(self.token_counter(text))
            self._dirty = True
        return self._doc_counts[k]

    def save_cache(self) -> None:
        """Write the caches to ``cache_dir`` (never into the repository) when they grew."""
        import json

        if self.cache_dir is None or not self._dirty:
            return
        f = self._cache_file()
        f.parent.mkdir(parents=True, exist_ok=True)
        if self._vectors:
            keys = np.array(list(self._vectors))
            np.savez(f, keys=keys, vectors=np.stack([self._vectors[k] for k in keys.tolist()]))
        if self._doc_counts:
            self._cache_file("doc-tokens", "json").write_text(json.dumps(self._doc_counts))
        self._dirty = False


def _key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Doc:
    """One document and what the sentence-based methods share about it (computed lazily)."""

    text: str
    ctx: Context
    _cache: dict = field(default_factory=dict)

    @cached_property
    def sentences(self) -> list[tuple[int, int]]:
        return split_sentences(self.text)

    @cached_property
    def sentence_texts(self) -> list[str]:
        return [self.text[a:b] for a, b in self.sentences]

    @cached_property
    def counts(self) -> np.ndarray:
        return np.asarray([self.ctx.count(t) for t in self.sentence_texts], dtype=np.int64)

    @cached_property
    def embeddings(self) -> np.ndarray:
        return self.ctx.embed(self.sentence_texts)

    def spans(self, idx) -> list[tuple[int, int]]:
        return [self.sentences[i] for i in idx]


def _query_embedding(doc: Doc, query: str | None) -> np.ndarray:
    if query is None:
        m = doc.embeddings.mean(axis=0)
        return m / (np.linalg.norm(m) or 1.0)
    return np.asarray(doc.ctx.encoder.embed_query(query), dtype=np.float32)


class Method:
    name = ""
    #: whether the method needs the sentence encoder (loaded once per run)
    needs_encoder = False

    def build(self, doc: Doc):
        return doc

    def prepare(self, ctx: Context, texts: list[str]) -> None:
        """Called once per task run with every document the method will :meth:`build` (those
        not skipped), before the first build; a method may do batched work here (GARLIC builds
        every graph in shared decoding passes). Default: nothing."""
        return None

    def select(self, state, query: str | None, token_budget: int) -> list[tuple[int, int]]:
        raise NotImplementedError

    def select_budgets(self, state, query: str | None, budgets) -> list[tuple[list, float]]:
        """``(spans, seconds)`` per token budget of ``budgets`` (default: one :meth:`select`
        per budget, each timed). A method whose ranking does not depend on the budget may rank
        once and cut per budget; its seconds then include the ranking's. ``spans`` is ``None``
        where the method refused the budget as smaller than every unit
        (:class:`longctx.selection.BudgetTooSmallError`): the harness counts it as a miss."""
        out = []
        for b in budgets:
            t0 = time.perf_counter()
            try:
                spans = self.select(state, query, b)
            except BudgetTooSmallError:
                spans = None
            out.append((spans, time.perf_counter() - t0))
        return out

    def skip_reason(self, ctx: Context, n_tokens: int) -> str | None:
        """Why this method does not run on a document of ``n_tokens`` tokens (``None``: it runs)."""
        return None

    #: why the method does not rank the passages of a corpus task (``None``: it does)
    corpus_skip = "no ranking of whole passages"

    def build_corpus(self, passages: list[str], ctx: Context):
        """One index over ``passages`` (each one unit, whole) for a corpus task."""
        raise NotImplementedError(self.corpus_skip)

    def rank(self, state, query: str, k: int) -> list[int]:
        """The ``k`` best passages for ``query``, best first (positions in the corpus)."""
        raise NotImplementedError(self.corpus_skip)


def top_k(scores: np.ndarray, k: int) -> list[int]:
    """Positions of the ``k`` highest ``scores``, best first, ties to the earlier position."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.argsort(-scores, kind="stable")[:k].tolist()


class MixPRMethod(Method):
    name = "mixpr"
    corpus_skip = None

    def __init__(self, **params):
        self.params = params

    def build_corpus(self, passages, ctx):
        from longctx.mixpr import MixPRIndex

        return MixPRIndex.from_texts(
            passages, token_counter=ctx.token_counter, chunk=False, **self.params
        )

    def rank(self, state, query, k):
        scores, _, _ = state.score(query, "auto")
        return top_k(scores, k)

    def build(self, doc: Doc):
        from longctx.mixpr import MixPRIndex

        return MixPRIndex.from_texts(doc.text, token_counter=doc.ctx.token_counter, **self.params)

    def select(self, state, query, token_budget):
        mode = "global" if query is None else "auto"
        r = state.search(query or GLOBAL_QUERY, token_budget=token_budget, mode=mode)
        return [(h.start, h.end) for h in r.hits]


class MixPRHybridMethod(MixPRMethod):
    """MixPR in hybrid mode: the run's sentence encoder (MiniLM) embeds MixPR's units once per
    document (cached like the sentence vectors) and each question
    (:meth:`longctx.MixPRIndex.from_texts` with ``unit_vectors``)."""

    name = "mixpr-hybrid"
    needs_encoder = True

    def build(self, doc: Doc):
        from longctx.mixpr import MixPRIndex

        plain = MixPRIndex.from_texts(doc.text, token_counter=doc.ctx.token_counter, **self.params)
        units = [doc.text[a:b] for a, b in zip(plain.starts.tolist(), plain.ends.tolist())]
        return MixPRIndex.from_texts(
            doc.text,
            token_counter=doc.ctx.token_counter,
            unit_vectors=doc.ctx.embed(units),
            encoder=doc.ctx.encoder,
            **self.params,
        )

    def build_corpus(self, passages, ctx):
        from longctx.mixpr import MixPRIndex

        return MixPRIndex.from_texts(
            passages,
            token_counter=ctx.token_counter,
            chunk=False,
            unit_vectors=ctx.embed(list(passages)),
            encoder=ctx.encoder,
            **self.params,
        )


class MixPRSeededMethod(MixPRMethod):
    """MixPR hybrid over the app's own retriever (:mod:`longctx.mixpr.seeds`): the ``minilm``
    baseline's ``n_seeds`` best sentences (passages on a corpus task; their vectors shared with
    it, as an app's vector index already holds them) restart a walk of their own, added to
    MixPR's score (each divided by its maximum); MixPR embeds nothing. ``mixpr-hybrid`` is the
    hybrid that embeds every unit (:class:`MixPRHybridMethod`). On a corpus task ``mixpr-fused``
    (:class:`longctx.eval.fused.MixPRFusedMethod`) is this method with the baseline asked for
    the ``k`` of the result, at most 10 (:meth:`seed_count`), and ``keep_firsts``."""

    name = "mixpr-seeded"
    needs_encoder = True
    #: the baseline's hits that seed the walk (``None``: as many as the result holds)
    n_seeds: int | None = 5
    #: :meth:`longctx.MixPRIndex.search`'s ``keep_firsts`` (each retriever's first hit kept)
    keep_firsts = False

    def build(self, doc: Doc):
        doc.embeddings  # noqa: B018  (the app's vectors: shared with minilm)
        return super().build(doc), doc

    def build_corpus(self, passages, ctx):
        return super().build_corpus(passages, ctx), ctx, ctx.embed(list(passages))

    def select(self, state, query, token_budget):
        from longctx.mixpr.seeds import Seed, rank_weight

        index, doc = state
        if query is None:
            return super().select(index, query, token_budget)
        top = top_k(doc.embeddings @ _query_embedding(doc, query), self.n_seeds)
        seeds = [Seed("0", *doc.sentences[i], rank_weight(r)) for r, i in enumerate(top)]
        r = index.search(query, token_budget=token_budget, seeds=seeds)
        return [(h.start, h.end) for h in r.hits]

    def seed_count(self, k: int) -> int:
        """The baseline's best passages that seed the walk for a result of ``k``
        (``n_seeds``, else ``k``)."""
        return self.n_seeds or k

    def rank(self, state, query, k):
        index, ctx, vectors = state
        dense = vectors @ np.asarray(ctx.encoder.embed_query(query), dtype=np.float32)
        seeds = passage_seeds(top_k(dense, self.seed_count(k)))
        r = index.search(query, k=k, seeds=seeds, keep_firsts=self.keep_firsts)
        return [r.hits[j].source for j in r.positions("score")]  # keep_firsts: info["ranking"]


def passage_seeds(ranked: list[int]) -> list:
    """Another retriever's passages (positions in a corpus, best first) as seeds of a MixPR
    walk over that corpus (one unit per document ``str(position)``), each weighing its rank
    weight (:func:`longctx.mixpr.seeds.rank_weight`)."""
    from longctx.mixpr.seeds import Seed, rank_weight

    return [Seed(str(i), score=rank_weight(r)) for r, i in enumerate(ranked)]


def bm25_index(texts):
    """``(rank_bm25.BM25Okapi over texts, analyzer)``: scikit-learn's English word analyzer
    (stop words dropped, accents folded), the tokens of every BM25 baseline of the harness."""
    from rank_bm25 import BM25Okapi
    from sklearn.feature_extraction.text import TfidfVectorizer

    analyzer = TfidfVectorizer(stop_words="english", strip_accents="unicode").build_analyzer()
    return BM25Okapi([analyzer(t) or ["<empty>"] for t in texts]), analyzer


class MixPRMultiHopMethod(Method):
    """MixPR with ``preset="multihop"`` (:class:`longctx.MixPRIndex`, ``walk="multihop"``): the
    local score is the first hop, then the multi-hop walk over the units and the phrases they
    share (:mod:`longctx.mixpr.multihop`). Hybrid (``mixpr-multihop-hybrid``): the run's
    sentence encoder (MiniLM) embeds the units (``unit_vectors``) and the question
    (``query_vector``), and the nearest units seed the walk too. On a document task the units
    are MixPR's chunks; a question-free task keeps MixPR's global ranking."""

    name = "mixpr-multihop"
    corpus_skip = None

    def __init__(self, hybrid: bool = False, **params):
        self.hybrid = hybrid
        self.needs_encoder = hybrid
        self.params = params
        if hybrid:
            self.name = "mixpr-multihop-hybrid"

    def _build(self, texts, ctx, chunk: bool):
        from longctx.mixpr import MixPRIndex

        kw = dict(token_counter=ctx.token_counter, chunk=chunk, preset="multihop", **self.params)
        index = MixPRIndex.from_texts(texts, **kw)
        if self.hybrid:
            units = [u.text for u in index.units()]
            index = MixPRIndex.from_texts(texts, unit_vectors=ctx.embed(units), **kw)
        return index, ctx

    def _scores(self, state, query):
        index, ctx = state
        qv = ctx.encoder.embed_query(query) if self.hybrid else None
        return index.score(query, "local", query_vector=qv)[0]

    def build(self, doc: Doc):
        return self._build(doc.text, doc.ctx, True)

    def select(self, state, query, token_budget):
        index = state[0]
        if query is None:
            scores = index.score(GLOBAL_QUERY, "global")[0]
        else:
            scores = self._scores(state, query)
        idx = select_top(scores, token_budget=token_budget, token_counts=index.token_counts)
        return [(int(index.starts[i]), int(index.ends[i])) for i in idx]

    def build_corpus(self, passages, ctx):
        return self._build(list(passages), ctx, False)

    def rank(self, state, query, k):
        return top_k(self._scores(state, query), k)


class BM25Method(Method):
    name = "bm25"
    corpus_skip = None

    def build(self, doc: Doc):
        bm25, analyzer = bm25_index(doc.sentence_texts)
        return doc, bm25, analyzer

    def build_corpus(self, passages, ctx):
        return bm25_index(passages)

    def rank(self, state, query, k):
        bm25, analyzer = state
        return top_k(bm25.get_scores(analyzer(query)), k)

    def select(self, state, query, token_budget):
        doc, bm25, analyzer = state
        if query is None:  # no question: BM25 has nothing to rank by; take the lead
            scores = -np.arange(len(doc.sentences), dtype=float)
        else:
            scores = bm25.get_scores(analyzer(query))
        return doc.spans(select_top(scores, token_budget=token_budget, token_counts=doc.counts))


class MiniLMMethod(Method):
    name = "minilm"
    needs_encoder = True
    corpus_skip = None

    def build_corpus(self, passages, ctx):
        return ctx, ctx.embed(list(passages))

    def rank(self, state, query, k):
        ctx, emb = state
        return top_k(emb @ np.asarray(ctx.encoder.embed_query(query), dtype=np.float32), k)

    def build(self, doc: Doc):
        doc.embeddings  # noqa: B018  (embedded once, shared with mmr / fps)
        return doc

    def select(self, doc, query, token_budget):
        scores = doc.embeddings @ _query_embedding(doc, query)
        return doc.spans(select_top(scores, token_budget=token_budget, token_counts=doc.counts))


class DiversityMethod(Method):
    needs_encoder = True
    corpus_skip = None

    def __init__(self, name: str, lambda_: float = 0.5):
        self.name = name
        self.lambda_ = lambda_

    def build_corpus(self, passages, ctx):
        return ctx, ctx.embed(list(passages))

    def rank(self, state, query, k):
        from longctx.diversity import fps_select, mmr_select

        ctx, emb = state
        fn = mmr_select if self.name == "mmr" else fps_select
        q = np.asarray(ctx.encoder.embed_query(query), dtype=np.float32)
        return list(fn(emb, query_embedding=q, k=min(k, len(emb)), lambda_=self.lambda_))

    def build(self, doc: Doc):
        doc.embeddings  # noqa: B018
        return doc

    def select(self, doc, query, token_budget):
        from longctx.diversity import fps_select, mmr_select

        fn = mmr_select if self.name == "mmr" else fps_select
        idx = fn(
            doc.embeddings,
            token_counts=doc.counts,
            token_budget=token_budget,
            query_embedding=_query_embedding(doc, query),
            lambda_=self.lambda_,
        )
        return doc.spans(sorted(idx))


class MixPRMMRMethod(Method):
    name = "mixpr+mmr"
    corpus_skip = "fills a token budget of one document: no ranking of passages"
    needs_encoder = True

    def build(self, doc: Doc):
        from longctx.mixpr import MixPRIndex

        index = MixPRIndex.from_texts(doc.text, token_counter=doc.ctx.token_counter)
        units = [doc.text[a:b] for a, b in zip(index.starts.tolist(), index.ends.tolist())]
        emb = doc.ctx.embed(units)
        return index, emb

    def select(self, state, query, token_budget):
        from longctx.diversity.rerank import rerank_select

        index, emb = state
        scores, _, _ = index.score(query or GLOBAL_QUERY, "global" if query is None else "auto")
        idx = rerank_select(emb, scores, index.token_counts, token_budget=token_budget, lambda_=0.5)
        return [(int(index.starts[i]), int(index.ends[i])) for i in sorted(idx)]


class TruncateMethod(Method):
    name = "truncate"
    corpus_skip = "keeps one document's head and tail: no ranking of passages"

    def select(self, doc, query, token_budget):
        counts = doc.counts.tolist()
        half = token_budget // 2
        head, used = [], 0
        for i, c in enumerate(counts):
            if used + c > half:
                break
            head.append(i)
            used += c
        tail = []
        for i in range(len(counts) - 1, head[-1] if head else -1, -1):
            if used + counts[i] > token_budget:
                break
            tail.append(i)
            used += counts[i]
        return doc.spans(head + tail[::-1])


class RandomMethod(Method):
    name = "random"
    corpus_skip = None

    def build_corpus(self, passages, ctx):
        return len(passages), ctx.seed

    def rank(self, state, query, k):
        n, seed = state
        rng = random.Random(f"{seed}\0{query}")
        return rng.sample(range(n), min(k, n))

    def select(self, doc, query, token_budget):
        rng = random.Random(doc.ctx.seed * 1_000_003 + len(doc.text))
        scores = np.array([rng.random() for _ in doc.sentences])
        return doc.spans(select_top(scores, token_budget=token_budget, token_counts=doc.counts))


class YouraMethod(Method):
    name = "youra"
    corpus_skip = "scores the sentences of one document read by the LLM: no corpus index"
    _scorer = None

    def build(self, doc: Doc):
        if YouraMethod._scorer is None:
            from longctx.youra import ReactionScorer

            YouraMethod._scorer = ReactionScorer(baseline="instruction", max_window=2048)
        return doc

    def select(self, doc, query, token_budget):
        picked = self._scorer.select(doc.text, query or GLOBAL_QUERY, token_budget=token_budget)
        return [(s.start, s.end) for s in picked]


def get_methods(names) -> list[Method]:
    """Method objects by name (see the module docstring)."""
    table = {
        "mixpr": MixPRMethod,
        "mixpr-hybrid": MixPRHybridMethod,
        "mixpr-seeded": MixPRSeededMethod,
        "mixpr-paper": lambda: _named(MixPRMethod(preset="paper"), "mixpr-paper"),
        "mixpr-pagerank": lambda: _named(MixPRMethod(preset="pagerank"), "mixpr-pagerank"),
        "mixpr-multihop": MixPRMultiHopMethod,
        "mixpr-multihop-hybrid": lambda: MixPRMultiHopMethod(hybrid=True),
        "bm25": BM25Method,
        "minilm": MiniLMMethod,
        "mmr": lambda: DiversityMethod("mmr"),
        "fps": lambda: DiversityMethod("fps"),
        "mixpr+mmr": MixPRMMRMethod,
        "truncate": TruncateMethod,
        "random": RandomMethod,
        "youra": YouraMethod,
    }
    out = []
    for n in names:
        if n not in table:
            raise ValueError(f"method must be one of {sorted(table)}, got {n!r}")
        out.append(table[n]())
    return out


def _named(method: Method, name: str) -> Method:
    method.name = name
    return method


METHOD_NAMES = (
    "mixpr",
    "mixpr-hybrid",
    "mixpr-seeded",
    "mixpr-paper",
    "mixpr-pagerank",
    "mixpr-multihop",
    "mixpr-multihop-hybrid",
    "bm25",
    "minilm",
    "mmr",
    "fps",
    "mixpr+mmr",
    "truncate",
    "random",
    "youra",
)
