"""The methods the harness compares, each behind the same two calls.

``build(doc) -> state`` does the query-independent work once per document (timed as *build*);
``select(state, query, token_budget) -> list of (start, end)`` answers one query (timed as
*query*). Every method fills the same token budget, counted with the same token counter (the
SmolLM2 tokenizer by default), and returns character spans of the document. The sentence-based
methods share one sentence split and one set of sentence embeddings per document
(:class:`Doc`), so baselines do not pay twice for what the methods share.

Methods: ``mixpr`` (:class:`longctx.MixPRIndex`), ``bm25`` (rank-bm25's BM25Okapi; Robertson and
Zaragoza, 2009), ``minilm`` (all-MiniLM-L6-v2 cosine to the question), ``mmr`` and ``fps``
(:func:`longctx.diversity.mmr_select` / ``fps_select`` on MiniLM sentence embeddings,
lambda 0.5), ``mixpr+mmr`` (MixPR PageRank scores as MMR rewards over MixPR chunks),
``truncate`` (LongBench's middle truncation: the head and the tail, half the budget each; Bai et
al., 2023, arXiv:2308.14508), ``random`` (seeded), ``youra`` (:class:`longctx.ReactionScorer`,
``baseline="instruction"``, model tokens).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from longctx.selection import select_top
from longctx.text import split_sentences
from longctx.tokens import count_many

GLOBAL_QUERY = "Summarize the document."


@dataclass
class Context:
    """What every method of one run shares: the token counter, the sentence encoder and its
    embeddings, cached by sentence text (in memory, and in ``cache_dir`` when given, so a
    haystack is embedded once per run, or once ever)."""

    token_counter: object
    encoder_factory: object = None
    seed: int = 0
    cache_dir: object = None
    _encoder: object = None
    _vectors: dict = field(default_factory=dict)
    _loaded: bool = False

    @property
    def encoder(self):
        if self._encoder is None:
            from longctx.embeddings import get_encoder

            self._encoder = (self.encoder_factory or get_encoder)()
        return self._encoder

    def _cache_file(self):
        from pathlib import Path

        return Path(self.cache_dir) / "sentence-embeddings.npz"

    def embed(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), d)`` float32 embeddings, each distinct text embedded once."""
        if self.cache_dir is not None and not self._loaded:
            self._loaded = True
            f = self._cache_file()
            if f.is_file():
                with np.load(f, allow_pickle=False) as z:
                    self._vectors.update(zip(z["keys"].tolist(), z["vectors"]))
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        if missing:
            first = {k: t for k, t in zip(keys, texts)}
            vecs = self.encoder.embed_documents([first[k] for k in missing])
            self._vectors.update(zip(missing, np.asarray(vecs, dtype=np.float32)))
        return np.stack([self._vectors[k] for k in keys]).astype(np.float32)

    def save_cache(self) -> None:
        """Write the embeddings cache to ``cache_dir`` (never into the repository)."""
        if self.cache_dir is None or not self._vectors:
            return
        f = self._cache_file()
        f.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._vectors))
        np.savez(f, keys=keys, vectors=np.stack([self._vectors[k] for k in keys.tolist()]))


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
        return count_many(self.sentence_texts, self.ctx.token_counter)

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

    def select(self, state, query: str | None, token_budget: int) -> list[tuple[int, int]]:
        raise NotImplementedError


class MixPRMethod(Method):
    name = "mixpr"

    def __init__(self, **params):
        self.params = params

    def build(self, doc: Doc):
        from longctx.mixpr import MixPRIndex

        return MixPRIndex.from_texts(doc.text, token_counter=doc.ctx.token_counter, **self.params)

    def select(self, state, query, token_budget):
        mode = "global" if query is None else "auto"
        r = state.search(query or GLOBAL_QUERY, token_budget=token_budget, mode=mode)
        return [(h.start, h.end) for h in r.hits]


class BM25Method(Method):
    name = "bm25"

    def build(self, doc: Doc):
        from rank_bm25 import BM25Okapi
        from sklearn.feature_extraction.text import TfidfVectorizer

        analyzer = TfidfVectorizer(stop_words="english", strip_accents="unicode").build_analyzer()
        toks = [analyzer(t) or ["<empty>"] for t in doc.sentence_texts]
        return doc, BM25Okapi(toks), analyzer

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

    def build(self, doc: Doc):
        doc.embeddings  # noqa: B018  (embedded once, shared with mmr / fps)
        return doc

    def select(self, doc, query, token_budget):
        scores = doc.embeddings @ _query_embedding(doc, query)
        return doc.spans(select_top(scores, token_budget=token_budget, token_counts=doc.counts))


class DiversityMethod(Method):
    needs_encoder = True

    def __init__(self, name: str, lambda_: float = 0.5):
        self.name = name
        self.lambda_ = lambda_

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
    needs_encoder = True

    def build(self, doc: Doc):
        from longctx.mixpr import MixPRIndex

        index = MixPRIndex.from_texts(doc.text, token_counter=doc.ctx.token_counter)
        units = [doc.text[a:b] for a, b in zip(index.starts.tolist(), index.ends.tolist())]
        emb = doc.ctx.embed(units)
        return index, emb

    def select(self, state, query, token_budget):
        from longctx.diversity import mmr_select

        index, emb = state
        scores, _, _ = index.score(query or GLOBAL_QUERY, "global" if query is None else "auto")
        idx = mmr_select(emb, scores, index.token_counts, token_budget, lambda_=0.5)
        return [(int(index.starts[i]), int(index.ends[i])) for i in sorted(idx)]


class TruncateMethod(Method):
    name = "truncate"

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

    def select(self, doc, query, token_budget):
        rng = random.Random(doc.ctx.seed * 1_000_003 + len(doc.text))
        scores = np.array([rng.random() for _ in doc.sentences])
        return doc.spans(select_top(scores, token_budget=token_budget, token_counts=doc.counts))


class YouraMethod(Method):
    name = "youra"
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


METHOD_NAMES = ("mixpr", "bm25", "minilm", "mmr", "fps", "mixpr+mmr", "truncate", "random", "youra")
