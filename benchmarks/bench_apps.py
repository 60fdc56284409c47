"""Two RAG apps written from the frameworks' docs, with and without longctx (issue 45).

Four Gutenberg books (Treasure Island, The Hound of the Baskervilles, The Time Machine, The
Wonderful Wizard of Oz, from ``../shared/data/gutenberg``), six questions with the strings their
answer holds, k=5. A question is found when one of the 5 texts a retriever returns holds every
pattern of its answer (case-insensitive, whitespace runs as one space).

- LlamaIndex: ``Document`` per book, ``SentenceSplitter()`` (defaults), ``VectorStoreIndex`` with
  the packaged all-MiniLM-L6-v2 (:class:`llamaindex_longctx.LongctxEmbedding`),
  ``as_retriever(similarity_top_k=5)``.
- LangChain: ``Document`` per book (``metadata={"source": path}``),
  ``RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200, add_start_index=True)``,
  ``InMemoryVectorStore`` with :class:`langchain_longctx.LongctxEmbeddings`.

Retrievers per app: the app's vector retriever; MixPR alone; the MixPR hybrid seeded by the app's
retriever (``vector_retriever=``, no embedding by longctx); with ``--old-hybrid`` the hybrid that
embeds every MixPR unit (``embed_model=`` / ``embeddings=``); MixPR over the app's own chunks
(one unit each); the frameworks' fusion as the guides first showed it (defaults, top 5); the
frameworks' reciprocal-rank fusion over MixPR on the app's chunks (top 5); the former fusion
recipe, reciprocal rank (:func:`rank_fusion_llamaindex` / :func:`rank_fusion_langchain`); and
the guides' fusion recipe, :func:`fusion_llamaindex` / :func:`fusion_langchain` (top 5): MixPR
over the app's chunks seeded by the app's retriever, each one's first chunk kept
(``keep_firsts=True``; the row ``hybrid (app's chunks)`` is the same without it, the recipe
before session 17).

MixPR's units (up to 64 words) are far shorter than the apps' chunks (1,024 LlamaIndex tokens,
1,000 characters), so the rows ``... @ app's tokens`` also ask MixPR and the hybrid for as many
tokens (``longctx.tokens.count_tokens``) as the app's 5 chunks hold for the same question.

The app's chunk vectors (and the old hybrid's unit vectors) are cached in ``--cache`` (a folder,
``/tmp/longctx_bench_apps`` by default) keyed by the text's SHA-256, so a rerun does not embed
again; the first run's embedding time is printed and kept in the cache's ``seconds.json`` with its
date (``embed_date`` of each app in ``--out``). Query
times are the mean of ``--repeat`` passes over the six questions, the retrievers interleaved
within a pass; they are noisy on a shared machine.

Run: ``PYTHONPATH=. python benchmarks/bench_apps.py [--apps llamaindex langchain]
[--old-hybrid] [--out results.json]``; ``--out`` writes ``{"settings": {date, command, repeat,
questions, k}, "results": {app: ...}}`` (``docs/bench-apps.json`` is the guides' source, rendered
by ``benchmarks/doc_tables.py``).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gutenberg"
BOOKS = (
    ("pg120.txt", "Treasure Island"),
    ("2852-0.txt", "The Hound of the Baskervilles"),
    ("35-0.txt", "The Time Machine"),
    ("pg55.txt", "The Wonderful Wizard of Oz"),
)
#: (question, patterns of its answer string: a hit holding all of them answers it)
QUESTIONS = (
    ("What does Long John Silver call his parrot?", (r"cap(?:tain|['’]n) flint",)),
    ("What did Dr. Mortimer see near the body of Sir Charles?", (r"footprints",)),
    ("What was the name of the little Eloi woman the Time Traveller saved from drowning?",
     (r"weena",)),
    ("How can Dorothy use the Silver Shoes to go back to Kansas?", (r"heels",)),
    ("Who is the escaped convict hiding on the moor?", (r"selden",)),
    ("What did the Scarecrow want to ask the great Oz for?", (r"brains",)),
)  # fmt: skip
K = 5
#: the guides' fusion recipe (docs/guide/*.md, "Fusing with the app's retriever"): its top K
RECIPE = "fusion (recipe)"
#: the former recipe: reciprocal-rank fusion of MixPR over the app's chunks and the app's
#: retriever (``RankFusionRetriever`` / ``EnsembleRetriever``), its top K
RANK_FUSION = "fusion (rrf, former recipe)"


def found(texts, patterns) -> bool:
    """Whether one of ``texts`` holds every pattern (case-insensitive, whitespace as one)."""
    for t in texts:
        t = " ".join(t.lower().split())
        if all(re.search(p, t) for p in patterns):
            return True
    return False


class VectorCache:
    """Text -> vector, kept in ``folder/name.npz`` (SHA-256 keys), filled by ``encoder``."""

    def __init__(self, folder: Path, name: str, encoder):
        self.path = folder / f"{name}.npz"
        self.encoder = encoder
        self.vecs: dict[str, np.ndarray] = {}
        self.embed_seconds = 0.0
        if self.path.is_file():
            with np.load(self.path, allow_pickle=False) as z:
                self.vecs = dict(zip(z["keys"].tolist(), z["vectors"]))

    @staticmethod
    def key(t: str) -> str:
        return hashlib.sha256(t.encode("utf-8")).hexdigest()

    def embed(self, texts: list[str]) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in self.vecs}.items())
        if todo:
            t0 = time.perf_counter()
            new = self.encoder.embed_documents([t for _, t in todo])
            self.embed_seconds += time.perf_counter() - t0
            self.vecs.update({k: np.asarray(v, dtype=np.float32) for (k, _), v in zip(todo, new)})
            self.path.parent.mkdir(parents=True, exist_ok=True)
            ks = sorted(self.vecs)
            np.savez(self.path, keys=np.array(ks), vectors=np.stack([self.vecs[k] for k in ks]))
        return np.stack([self.vecs[k] for k in keys]) if keys else np.zeros((0, 384))


def _books():
    return [(name, title, (DATA / name).read_text(encoding="utf-8")) for name, title in BOOKS]


def _timed_build(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _seconds_file(cache: Path) -> dict:
    p = cache / "seconds.json"
    return json.loads(p.read_text()) if p.is_file() else {}


def _remember_seconds(cache: Path, key: str, seconds: float) -> float:
    """The first (uncached) embedding time of ``key``, kept in ``seconds.json`` with its date
    (under ``"dates"``: :func:`_embed_date`)."""
    saved = _seconds_file(cache)
    if seconds > 1.0 or key not in saved:
        saved[key] = round(seconds, 1)
        saved.setdefault("dates", {})[key] = datetime.date.today().isoformat()
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "seconds.json").write_text(json.dumps(saved, indent=1))
    return saved[key]


def _embed_date(cache: Path, key: str) -> str | None:
    """The date ``key``'s embedding time was measured (``None``: a cache older than the dates)."""
    return _seconds_file(cache).get("dates", {}).get(key)


def _mixpr_rows(make, vector, units: VectorCache, old_hybrid_kw, cache: Path) -> dict:
    """The longctx rows of an app: ``make(**kw)`` builds its MixPRRetriever at size ``K``; plain,
    seeded by ``vector`` (the app's retriever or store) and, with ``old_hybrid_kw``, the former
    hybrid embedding every unit (through ``units``, whose first embedding time is counted)."""
    out = {"mixpr": _timed_build(make)}
    out["hybrid"] = _timed_build(lambda: make(vector_retriever=vector))
    if old_hybrid_kw:
        r, t = _timed_build(lambda: make(**old_hybrid_kw))
        out["old hybrid"] = (r, t + _remember_seconds(cache, "mixpr_units", units.embed_seconds))
    return out


def llamaindex_app(cache: Path, encoder, old_hybrid: bool) -> dict:
    """The LlamaIndex app's retrievers: ``{name: (retriever, build seconds)}`` and notes."""
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.retrievers import QueryFusionRetriever

    from llamaindex_longctx import LongctxEmbedding, MixPRRetriever

    docs = [Document(text=t, doc_id=name, metadata={"title": title}) for name, title, t in _books()]
    nodes = SentenceSplitter()(docs)
    vc = VectorCache(cache, "llamaindex_chunks", encoder)
    vecs = vc.embed([n.get_content() for n in nodes])
    for n, v in zip(nodes, vecs):
        n.embedding = v.tolist()
    embed = LongctxEmbedding()
    vindex, t_index = _timed_build(lambda: VectorStoreIndex(nodes, embed_model=embed))
    app = vindex.as_retriever(similarity_top_k=K)
    out = {"app": (app, _remember_seconds(cache, "llamaindex_chunks", vc.embed_seconds))}
    uc = VectorCache(cache, "mixpr_units", encoder)
    out.update(
        _mixpr_rows(
            lambda **kw: MixPRRetriever.from_documents(docs, similarity_top_k=K, **kw),
            app, uc, {"embed_model": uc.embed} if old_hybrid else None, cache,
        )
    )  # fmt: skip
    mixpr = out["mixpr"][0]
    out["fusion (defaults)"] = (
        QueryFusionRetriever(
            [app, mixpr], similarity_top_k=K, num_queries=1, use_async=False, llm=MockLLM()
        ),
        0.0,
    )
    chunks, t = _timed_build(
        lambda: MixPRRetriever.from_defaults(index=vindex, chunk_nodes=False, similarity_top_k=K)
    )
    out[ON_CHUNKS] = (chunks, t)
    out[HYBRID_CHUNKS] = _timed_build(lambda: fusion_llamaindex(vindex, keep_firsts=False))
    out["fusion (rrf, app's chunks)"] = (
        QueryFusionRetriever(
            [chunks, app], mode="reciprocal_rerank", similarity_top_k=K, num_queries=1,
            use_async=False, llm=MockLLM(),
        ),
        0.0,
    )  # fmt: skip
    out[RANK_FUSION] = _timed_build(lambda: rank_fusion_llamaindex(vindex))
    out[RECIPE] = _timed_build(lambda: fusion_llamaindex(vindex))
    return {
        "retrievers": out, "units": out["mixpr"][0].index.n_units, "chunks": len(nodes),
        "embed_date": _embed_date(cache, "llamaindex_chunks"),
    }  # fmt: skip


#: MixPR over the app's own chunks, one unit each (the recipe's MixPR)
ON_CHUNKS = "mixpr (app's chunks)"
#: the seeded hybrid over the app's own chunks, one unit each (the same grain as the app's):
#: the recipe without ``keep_firsts`` (the recipe until session 17)
HYBRID_CHUNKS = "hybrid (app's chunks)"


def fusion_llamaindex(vector_index, keep_firsts: bool = True):
    """The guide's recipe (docs/guide/llamaindex.md, "Fusing with the app's retriever"), as-is:
    MixPR over the vector index's own nodes, seeded by the app's retriever asked for 5 (MixPR's
    score plus the seeds' walk, each divided by its maximum), each one's first node kept
    (``keep_firsts=False``: the seeded hybrid over the app's nodes, the former recipe), top 5."""
    from llamaindex_longctx import MixPRRetriever

    app = vector_index.as_retriever(similarity_top_k=5)
    return MixPRRetriever.from_defaults(
        index=vector_index, chunk_nodes=False, similarity_top_k=5, vector_retriever=app,
        keep_firsts=keep_firsts,
    )  # fmt: skip


def fusion_langchain(vector_store, splits, keep_firsts: bool = True):
    """The guide's recipe (docs/guide/langchain.md, "Fusing with the app's retriever"), as-is:
    MixPR over the app's own splits, seeded by the store's retriever asked for 5, each one's
    first split kept (``keep_firsts=False``: the former recipe), first 5."""
    from langchain_longctx import MixPRRetriever

    app = vector_store.as_retriever(search_kwargs={"k": 5})
    return MixPRRetriever(
        documents=splits, chunk_documents=False, k=5, vector_retriever=app, keep_firsts=keep_firsts
    )


def rank_fusion_llamaindex(vector_index):
    """The former recipe (until 2026-11-29): MixPR over the index's own nodes and the app's
    retriever, both asked for 5, fused by reciprocal rank (equal weights, ``c=60``), top 5."""
    from llamaindex_longctx import MixPRRetriever, RankFusionRetriever

    app = vector_index.as_retriever(similarity_top_k=5)
    mixpr = MixPRRetriever.from_defaults(index=vector_index, chunk_nodes=False, similarity_top_k=5)
    return RankFusionRetriever([mixpr, app], similarity_top_k=5)


def rank_fusion_langchain(vector_store, splits):
    """The former recipe (until 2026-11-29): MixPR over the app's own splits and the store, both
    asked for 5, ``EnsembleRetriever`` at equal weights (reciprocal rank, ``c=60``); the caller
    reads its first 5."""
    from langchain_classic.retrievers import EnsembleRetriever

    from langchain_longctx import MixPRRetriever

    app = vector_store.as_retriever(search_kwargs={"k": 5})
    mixpr = MixPRRetriever(documents=splits, chunk_documents=False, k=5)
    return EnsembleRetriever(retrievers=[mixpr, app], weights=[0.5, 0.5])


def langchain_app(cache: Path, encoder, old_hybrid: bool) -> dict:
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from langchain_longctx import LongctxEmbeddings, MixPRRetriever

    docs = [Document(page_content=t, metadata={"source": name}) for name, _, t in _books()]
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=1000, chunk_overlap=200, add_start_index=True
    )
    splits = splitter.split_documents(docs)
    vc = VectorCache(cache, "langchain_chunks", encoder)
    live = LongctxEmbeddings()

    class Cached(Embeddings):
        def embed_documents(self, texts):
            return vc.embed(list(texts)).tolist()

        def embed_query(self, text):
            return live.embed_query(text)

    store = InMemoryVectorStore(Cached())
    store.add_documents(splits)
    app = store.as_retriever(search_kwargs={"k": K})
    out = {"app": (app, _remember_seconds(cache, "langchain_chunks", vc.embed_seconds))}
    uc = VectorCache(cache, "mixpr_units", encoder)

    class CachedUnits(Embeddings):
        def embed_documents(self, texts):
            return uc.embed(list(texts)).tolist()

        def embed_query(self, text):
            return live.embed_query(text)

    out.update(
        _mixpr_rows(
            lambda **kw: MixPRRetriever.from_documents(docs, k=K, **kw),
            store, uc, {"embeddings": CachedUnits()} if old_hybrid else None, cache,
        )
    )  # fmt: skip
    mixpr = out["mixpr"][0]
    out["fusion (defaults)"] = (EnsembleRetriever(retrievers=[app, mixpr]), 0.0)
    out[ON_CHUNKS] = _timed_build(
        lambda: MixPRRetriever(documents=splits, chunk_documents=False, k=K)
    )
    out[HYBRID_CHUNKS] = _timed_build(lambda: fusion_langchain(store, splits, keep_firsts=False))
    out[RANK_FUSION] = _timed_build(lambda: rank_fusion_langchain(store, splits))
    out[RECIPE] = _timed_build(lambda: fusion_langchain(store, splits))
    return {
        "retrievers": out, "units": mixpr.index.n_units, "chunks": len(splits),
        "embed_date": _embed_date(cache, "langchain_chunks"),
    }  # fmt: skip


def _ask(retriever, q: str, budget: int | None = None, k: int = K) -> list[str]:
    """The texts ``retriever`` returns for ``q``: its top ``k``, or with ``budget`` (a longctx
    retriever) as many units as fill ``budget`` tokens."""
    if hasattr(retriever, "retrieve"):  # LlamaIndex
        if budget is not None:
            retriever.token_budget = budget
        texts = [n.node.get_content() for n in retriever.retrieve(q)]
        if budget is not None:
            retriever.token_budget = None
        return texts if budget is not None else texts[:k]
    if budget is not None:
        return [d.page_content for d in retriever.invoke(q, token_budget=budget)]
    return [d.page_content for d in retriever.invoke(q)][:k]


#: rows that ask a longctx retriever for the tokens the app's 5 chunks hold (same question)
SAME_TOKENS = {"mixpr @ app's tokens": "mixpr", "hybrid @ app's tokens": "hybrid"}


def run_app(app: dict, repeat: int) -> dict:
    from longctx.tokens import count_tokens

    rs = dict(app["retrievers"])
    rs.update({row: rs[base] for row, base in SAME_TOKENS.items()})
    hits = {name: [] for name in rs}
    distinct = {name: [] for name in rs}  # distinct texts among those read
    secs = {name: 0.0 for name in rs}
    for ret, _ in rs.values():  # warm-up (models loaded, caches filled), not timed
        _ask(ret, "Who is the captain of the ship?")
    for r in range(repeat):
        for q, pats in QUESTIONS:
            budget = None
            for name, (ret, _) in rs.items():
                t0 = time.perf_counter()
                texts = _ask(ret, q, budget if name in SAME_TOKENS else None)
                secs[name] += time.perf_counter() - t0
                if name == "app":
                    budget = sum(count_tokens(t) for t in texts)
                if r == 0:
                    hits[name].append(found(texts, pats))
                    distinct[name].append(len(set(texts)))
    n = repeat * len(QUESTIONS)
    return {
        name: {
            "found": int(sum(hits[name])),
            "per_question": hits[name],
            "distinct_texts": distinct[name],
            "ms_per_query": round(1000 * secs[name] / n, 1),
            "build_s": round(rs[name][1], 2),
        }
        for name in rs
    }


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--apps",
        nargs="+",
        default=["llamaindex", "langchain"],
        choices=["llamaindex", "langchain"],
        help="the apps to run (default: both)",
    )
    p.add_argument(
        "--old-hybrid",
        action="store_true",
        help="also the hybrid that embeds every MixPR unit (embed_model= / embeddings=)",
    )
    p.add_argument(
        "--cache",
        type=Path,
        default=Path("/tmp/longctx_bench_apps"),
        help="folder of the cached chunk and unit vectors, keyed by the text's SHA-256 "
        "(default: /tmp/longctx_bench_apps)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="passes over the six questions; a query time is their mean (default: 3)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the settings and results as JSON there (default: print only; "
        "docs/bench-apps.json is the guides' source)",
    )
    args = p.parse_args(argv)
    from longctx.embeddings import get_encoder

    encoder = get_encoder(None)
    results = {}
    for name in args.apps:
        build = llamaindex_app if name == "llamaindex" else langchain_app
        app = build(args.cache, encoder, args.old_hybrid)
        res = run_app(app, args.repeat)
        results[name] = {
            "units": app["units"], "chunks": app["chunks"], "embed_date": app["embed_date"],
            "retrievers": res,
        }  # fmt: skip
        print(f"\n{name}: {app['chunks']} app chunks, {app['units']} MixPR units")
        for r, v in res.items():
            print(
                f"  {r:18s} {v['found']}/{len(QUESTIONS)}  {v['ms_per_query']:7.1f} ms/query  "
                f"build/embed {v['build_s']:7.2f} s  {v['per_question']}  distinct "
                f"{v['distinct_texts']}"
            )
    if args.out:
        settings = {
            "date": datetime.date.today().isoformat(),
            "command": "benchmarks/bench_apps.py "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "repeat": args.repeat,
            "questions": len(QUESTIONS),
            "k": K,
        }
        out = {"settings": settings, "results": results}
        args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return results


if __name__ == "__main__":
    main()
