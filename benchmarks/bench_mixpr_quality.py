"""MixPR quality benchmark (issue #12): single-hop QA next to BM25 and TF-IDF, multi-hop bAbI.

Usage: python benchmarks/bench_mixpr_quality.py [--data ../shared/data] [--explore] [--router]
       [--questions] [--variants v1-default,default+cov2,...] [--babi-questions 20]
       [--babi-lengths 16000,128000] [--skip-qa] [--skip-babi] [--skip-1m]

Every method ranks the same units (the default's MixPR chunks, ``longctx.text.chunk_words``,
N=64 words since issue 22, 32 before) and
fills the same budget (a share of the document's SmolLM2 tokens, ``longctx.select_top``):

- SQuAD dev v2.0, first five articles, each article one document (paragraphs joined by a blank
  line); every fourth answerable question (177); a hit when one gold answer string is inside the
  selected chunks (joined in document order, case and spacing normalized). Budgets 5/10/20%.
- NarrativeQA summaries: every 25th question of the test file (120 questions over ~100 stories);
  a hit when >= 60% of the normalized answer tokens (SQuAD normalization, best of the two
  answers) are in the selection (as in the diversity paper). Budgets 10/20/40%.
- HotpotQA dev distractor (first 100): the ten paragraphs joined ("title" line, then its
  sentences); "all": every supporting sentence selected (>= half of its characters inside
  selected chunks), "share": the mean share of supporting sentences selected. Budgets 10/20/40%.
- bAbI qa1/qa2/qa3 BABILong-style (``bench_mixpr``'s haystack: facts at random sentence
  boundaries of Gutenberg text) at 16k and 128k tokens: all supporting facts in the top-100 chunks.
- 1M tokens: build + one query, seconds.

Methods: ``paper`` = ``MixPR(preset="paper")`` (query chunks appended before the TF-IDF fit,
every edge thresholded at .27, one-hot personalization on the query node, refitted per query);
``default`` = ``MixPRIndex.from_texts(text)`` (the shipped default preset, built once per
document, many queries); with ``--explore``: ``paper-graph-index`` (the paper's graph built once)
and MixPR candidates prototyped here with scipy/scikit-learn (``Cfg``: TF-IDF fitted on the
chunks only, the query transformed with it; ``v1-default-prototype`` is the prototype of the default before the coverage weighting);
``bm25`` (rank-bm25's BM25Okapi, scikit-learn's English analyzer);
``tfidf`` (cosine of the question to each chunk); the baselines rank the default's chunks
(``bm25@paper``: the paper chunker's). "fb" columns count the questions where MixPR
found no query edge and fell back to query-independent PageRank.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_mixpr import babi_questions, build_haystack, load_gutenberg  # noqa: E402

from longctx.mixpr import (  # noqa: E402
    PRESETS,
    MixPR,
    MixPRConfig,
    MixPRIndex,
    column_normalize,
    personalized_pagerank,
    similarity_graph,
)
from longctx.selection import select_top  # noqa: E402
from longctx.text import chunk_words, split_sentences  # noqa: E402

# Question words and auxiliaries that scikit-learn's English list lacks.
QUESTION_WORDS = frozenset({"did", "does", "doing", "type", "kind", "called", "named"})


# -- candidates ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cfg:
    """A MixPR candidate (prototype of the ``MixPRConfig`` knobs)."""

    name: str
    threshold: float = 0.2
    query_threshold: float | None = 0.05  # 0: no threshold on the query's edges
    top_m: int | None = None  # keep only the m most similar chunks as query neighbours
    personalization: str = "similarity"  # "query" (one-hot on query node) | "similarity"
    alpha_local: float = 0.6
    max_iter: int = 18
    tol: float = 1e-6
    max_words: int = 32
    split_lines: bool = False
    stop_words: str = "english+q"  # "english" | "english+q"
    strip_accents: str | None = "unicode"
    sublinear_tf: bool = True
    stemmer: str | None = "english"  # "english": Snowball (Porter2) via PyStemmer
    query_sim: str = "cosine"  # "cosine" (TF-IDF) | "bm25" (k1=1.2, b=bm25_b on the same terms)
    bm25_b: float = 0.75


PAPER = "paper"


@lru_cache(maxsize=4)
def _stemmer(language: str):
    import Stemmer  # PyStemmer: the Snowball stemmers in C

    return Stemmer.Stemmer(language)


def make_vectorizer(cfg: Cfg):
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

    stop = "english" if cfg.stop_words == "english" else sorted(ENGLISH_STOP_WORDS | QUESTION_WORDS)
    kw = dict(
        stop_words=stop, strip_accents=cfg.strip_accents, sublinear_tf=cfg.sublinear_tf, norm="l2"
    )
    if cfg.stemmer is None:
        return TfidfVectorizer(**kw)
    base = TfidfVectorizer(**kw).build_analyzer()
    stem = _stemmer(cfg.stemmer).stemWords
    return TfidfVectorizer(
        analyzer=lambda doc: stem(base(doc)),
        sublinear_tf=cfg.sublinear_tf,
        norm="l2",
    )


class ProtoIndex:
    """Build once per document: TF-IDF fitted on the chunks, thresholded chunk graph."""

    def __init__(self, chunks: list[str], cfg: Cfg):
        self.cfg = cfg
        self.n = len(chunks)
        self.vec = make_vectorizer(cfg)
        try:
            self.E = sp.csr_array(self.vec.fit_transform(chunks))
        except ValueError:  # empty vocabulary
            self.vec = None
            self.E = sp.csr_array((self.n, 1))
        # similarity_graph sorts the indices of a float32 view that shares them with E (main
        # at 1e09761): sort first, or E's columns get scrambled for the query products.
        self.E.sort_indices()
        self.S = similarity_graph(self.E, cfg.threshold, n_jobs=1)
        self.A = column_normalize(self.S)
        self._pr = None
        if cfg.query_sim == "bm25" and self.vec is not None:
            self.W = bm25_weights(self.vec, chunks, b=cfg.bm25_b)

    def pagerank(self) -> np.ndarray:
        if self._pr is None:
            u = np.full(self.n, 1.0 / self.n)
            self._pr = personalized_pagerank(self.A, u, 0.0, self.cfg.max_iter, self.cfg.tol)
        return self._pr

    def query_sims(self, query: str) -> np.ndarray:
        if self.vec is None:
            return np.zeros(self.n)
        q = sp.csr_array(self.vec.transform([query]))
        if self.cfg.query_sim == "bm25":
            q.data[:] = 1.0  # each query term once
            s = (self.W @ q.T).toarray().ravel()
            return s / s.max() if s.max() > 0 else s
        return (self.E @ q.T).toarray().ravel()

    def score(self, query: str) -> tuple[np.ndarray, bool]:
        """(scores, fell_back)."""
        cfg = self.cfg
        s = self.query_sims(query)
        w = s.copy()
        if cfg.query_threshold:
            w[w < cfg.query_threshold] = 0.0
        if cfg.top_m is not None and np.count_nonzero(w) > cfg.top_m:
            w[np.argsort(-w, kind="stable")[cfg.top_m :]] = 0.0
        if not w.any():
            return self.pagerank(), True
        if cfg.personalization == "similarity":
            pi = personalized_pagerank(self.A, w, cfg.alpha_local, cfg.max_iter, cfg.tol)
            return pi, False
        col = sp.csr_array(w[:, None])
        S2 = sp.csr_array(sp.block_array([[self.S, col], [col.T, sp.csr_array([[1.0]])]]))
        A2 = column_normalize(S2)
        p = np.zeros(self.n + 1)
        p[-1] = 1.0
        pi = personalized_pagerank(A2, p, cfg.alpha_local, cfg.max_iter, cfg.tol)
        return pi[: self.n], False


def bm25_weights(vec, chunks, k1: float = 1.2, b: float = 0.75) -> sp.csr_array:
    """(n, V) BM25 term weights of the chunks over ``vec``'s vocabulary (Lucene idf)."""
    from sklearn.feature_extraction.text import CountVectorizer

    cv = CountVectorizer(analyzer=vec.build_analyzer(), vocabulary=vec.vocabulary_)
    C = sp.csr_array(cv.transform(chunks), dtype=np.float64)
    n = C.shape[0]
    df = np.bincount(C.indices, minlength=C.shape[1])
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    dl = np.asarray(C.sum(axis=1)).ravel()
    norm = k1 * (1 - b + b * dl / max(dl.mean(), 1e-9))
    rows = np.repeat(np.arange(n), np.diff(C.indptr))
    tf = C.data
    C.data = idf[C.indices] * tf * (k1 + 1) / (tf + norm[rows])
    return C


class PaperIndex:
    """``MixPR(preset="paper")``: the paper-literal pipeline, everything refitted per query."""

    def __init__(self, chunks: list[str], text: str | None = None):
        self.chunks = chunks
        self.mp = MixPR(preset="paper")

    def score(self, query: str) -> tuple[np.ndarray, bool]:
        scores, mode = self.mp.rank_with_mode(self.chunks, query, mode="local")
        return scores, mode == "global-fallback"


class LibIndex:
    """``MixPRIndex.from_texts(text, preset=...)``: built once per document, many queries."""

    def __init__(self, chunks: list[str], text: str, preset: str = "default", **params):
        self.index = MixPRIndex.from_texts(text, preset=preset, **params)
        if self.index.n_units != len(chunks):  # the benchmark's units are the index's units
            raise RuntimeError("MixPRIndex chunked the text differently from the benchmark")

    def score(self, query: str) -> tuple[np.ndarray, bool]:
        scores, mode, _ = self.index.score(query, "local")
        return scores, mode == "global-fallback"


class BM25Index:
    def __init__(self, chunks: list[str]):
        from rank_bm25 import BM25Okapi
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.an = TfidfVectorizer(stop_words="english").build_analyzer()
        self.bm = BM25Okapi([self.an(c) or [""] for c in chunks])

    def score(self, query: str) -> tuple[np.ndarray, bool]:
        return np.asarray(self.bm.get_scores(self.an(query)), dtype=np.float64), False


class TfidfIndex:
    def __init__(self, chunks: list[str]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vec = TfidfVectorizer(stop_words="english")
        self.E = sp.csr_array(self.vec.fit_transform(chunks))

    def score(self, query: str) -> tuple[np.ndarray, bool]:
        q = sp.csr_array(self.vec.transform([query]))
        return (self.E @ q.T).toarray().ravel(), False


def make_index(method, chunks: list[str], text: str):
    if isinstance(method, Cfg):
        return ProtoIndex(chunks, method)
    if method == DEFAULT_NAME:
        return LibIndex(chunks, text)
    if method == HYBRID:
        from longctx.embeddings import get_encoder

        return LibIndex(chunks, text, encoder=get_encoder())
    if method in LIB_VARIANTS:
        return LibIndex(chunks, text, **LIB_VARIANTS[method])
    if method == "paper-graph-index":
        return LibIndex(chunks, text, preset="paper", fit_query=False)
    base = method.split("@")[0]
    return {PAPER: PaperIndex, "bm25": BM25Index, "tfidf": TfidfIndex}[base](chunks)


def method_name(m) -> str:
    return m.name if isinstance(m, Cfg) else m


def unit_key(m) -> tuple[bool, int]:
    """(split_lines, max_words) of the chunker a method ranks."""
    if isinstance(m, Cfg):
        return m.split_lines, m.max_words, None
    if m in (PAPER, "paper-graph-index") or m.endswith("@paper"):
        return True, 32, None
    if m in LIB_VARIANTS:
        return _cfg_key(MixPRConfig.from_preset(**LIB_VARIANTS[m]))
    if m.split("@")[-1] in UNIT_VARIANTS:
        return _cfg_key(MixPRConfig.from_preset(**UNIT_VARIANTS[m.split("@")[-1]]))
    return _cfg_key(PRESETS["default"])  # the default and the baselines rank the same units


def _cfg_key(c) -> tuple:
    return c.split_lines, c.max_words, c.min_words


# -- documents ---------------------------------------------------------------------------------
@dataclass
class Doc:
    text: str
    questions: list = field(default_factory=list)  # task specific tuples
    _units: dict = field(default_factory=dict)

    def units(self, key: tuple[bool, int], counter):
        if key not in self._units:
            spans = chunk_words(self.text, key[1], split_lines=key[0], min_words=key[2])
            chunks = [self.text[a:b] for a, b in spans]
            counts = np.array([counter(c) for c in chunks], dtype=np.int64)
            self._units[key] = (spans, chunks, counts)
        return self._units[key]


def norm_text(s: str) -> str:
    return " ".join(s.lower().split())


_PUNCT = set(string.punctuation)


def norm_tokens(s: str) -> list[str]:
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return s.split()


def load_squad(data: Path) -> list[Doc]:
    d = json.loads((data / "squad" / "dev-v2.0-first5.json").read_text())
    docs, i = [], 0
    for art in d["data"]:
        doc = Doc("\n\n".join(p["context"] for p in art["paragraphs"]))
        for p in art["paragraphs"]:
            for qa in p["qas"]:
                if qa.get("is_impossible") or not qa["answers"]:
                    continue
                if i % 4 == 0:
                    doc.questions.append((qa["question"], [a["text"] for a in qa["answers"]]))
                i += 1
        docs.append(doc)
    return docs


def load_narrativeqa(data: Path, every: int = 25) -> list[Doc]:
    by_passage: dict[str, Doc] = {}
    lines = (data / "narrativeqa_summaries" / "test.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        if i % every:
            continue
        r = json.loads(line)
        doc = by_passage.setdefault(r["passage"], Doc(r["passage"]))
        doc.questions.append((r["question"], list(r["answer"])))
    return list(by_passage.values())


def load_hotpot(data: Path) -> list[Doc]:
    ex = json.loads((data / "hotpotqa" / "dev-distractor-first100.json").read_text())
    docs = []
    for e in ex:
        parts, pos, sent_span = [], 0, {}
        for title, sents in e["context"]:
            head = title + "\n"
            parts.append(head)
            pos += len(head)
            for j, s in enumerate(sents):
                a = pos + (len(s) - len(s.lstrip()))
                b = pos + len(s.rstrip())
                if b > a:
                    sent_span[(title, j)] = (a, b)
                parts.append(s)
                pos += len(s)
            parts.append("\n\n")
            pos += 2
        text = "".join(parts)
        gold = [sent_span[(t, j)] for t, j in e["supporting_facts"] if (t, j) in sent_span]
        doc = Doc(text)
        doc.questions.append((e["question"], gold))
        docs.append(doc)
    return docs


def covered_share(span, chosen_spans) -> float:
    a, b = span
    cov = sum(max(0, min(b, y) - max(a, x)) for x, y in chosen_spans)
    return cov / max(1, b - a)


# -- QA evaluation ------------------------------------------------------------------------------
TASKS = {
    "squad": (load_squad, (0.05, 0.10, 0.20)),
    "nqa": (load_narrativeqa, (0.10, 0.20, 0.40)),
    "hotpot": (load_hotpot, (0.10, 0.20, 0.40)),
}


def judge(task: str, q, spans, chunks, idx, text) -> float | tuple[float, float]:
    chosen = [chunks[i] for i in idx.tolist()]
    if task == "squad":
        sel = norm_text(" ".join(chosen))
        return float(any(norm_text(a) in sel for a in q[1]))
    if task == "nqa":
        ctx = set(norm_tokens(" ".join(chosen)))
        best = 0.0
        for ans in q[1]:
            toks = set(norm_tokens(ans))
            if toks:
                best = max(best, len(toks & ctx) / len(toks))
        return float(best >= 0.6)
    gold = q[1]
    cs = [spans[i] for i in idx.tolist()]
    got = [covered_share(g, cs) >= 0.5 for g in gold]
    return float(all(got)), float(np.mean(got)) if got else 0.0


def run_qa(task: str, docs: list[Doc], methods, counter) -> dict:
    """{method: {"fb": n, pct: score (or "all"/"share" pairs)}}."""
    pcts = TASKS[task][1]
    out = {}
    for m in methods:
        hits = defaultdict(list)
        fb = 0
        t0 = time.perf_counter()
        for doc in docs:
            spans, chunks, counts = doc.units(unit_key(m), counter)
            index = make_index(m, chunks, doc.text)
            total = int(counts.sum())
            for q in doc.questions:
                scores, fell = index.score(q[0])
                fb += fell
                for pct in pcts:
                    idx = select_top(
                        scores, token_budget=max(1, round(pct * total)), token_counts=counts
                    )
                    hits[pct].append(judge(task, q, spans, chunks, idx, doc.text))
        res = {"fb": fb, "n": sum(len(d.questions) for d in docs), "s": time.perf_counter() - t0}
        for pct in pcts:
            arr = np.asarray(hits[pct], dtype=np.float64)
            res[pct] = arr.mean(axis=0) * 100
        out[method_name(m)] = res
    return out


def print_qa(results: dict) -> None:
    heads = []
    for task, (_, pcts) in TASKS.items():
        if task not in results:
            continue
        for pct in pcts:
            heads.append(f"{task}{int(pct * 100)}" + ("(all/share)" if task == "hotpot" else ""))
    print(f"{'method':<30}" + "".join(f"{h:>21}" for h in heads) + "   fallbacks s/q/sq")
    names = list(next(iter(results.values())).keys())
    for name in names:
        row, fbs = [], []
        for task, (_, pcts) in TASKS.items():
            if task not in results:
                continue
            r = results[task][name]
            fbs.append(f"{r['fb']}/{r['n']}")
            for pct in pcts:
                v = r[pct]
                row.append(f"{v[0]:.1f}/{v[1]:.1f}" if np.ndim(v) else f"{float(v):.1f}")
        print(f"{name:<30}" + "".join(f"{c:>21}" for c in row) + "   " + " ".join(fbs))


# -- bAbI ---------------------------------------------------------------------------------------
def run_babi(data: Path, methods, lengths, n_questions: int) -> None:
    tasks = ["qa1_single-supporting-fact", "qa2_two-supporting-facts", "qa3_three-supporting-facts"]
    print(
        f"== BABILong-style: all supporting facts in the top-100 chunks ({n_questions} q/task) =="
    )
    for n_tok in lengths:
        hay = load_gutenberg(data, n_tok)
        hay_sents = split_sentences(hay)
        hits = {method_name(m): Counter() for m in methods}
        fbs = Counter()
        secs = Counter()
        for task in tasks:
            rng = random.Random(0)
            qs = list(babi_questions(data / "babi" / "en" / f"{task}_test.txt"))
            qs = rng.sample(qs, n_questions)
            for facts, q, sup in qs:
                text, fspans = build_haystack(hay, hay_sents, facts, rng)
                sents = split_sentences(text)
                units = {}
                for m in methods:
                    key = unit_key(m)
                    if key not in units:
                        spans = chunk_words(
                            text,
                            key[1],
                            sentences=sents,
                            split_lines=key[0],
                            min_words=key[2],
                        )
                        units[key] = (spans, [text[a:b] for a, b in spans])
                    spans, chunks = units[key]
                    t0 = time.perf_counter()
                    scores, fell = make_index(m, chunks, text).score(q)
                    idx = select_top(scores, k=100)
                    secs[method_name(m)] += time.perf_counter() - t0
                    got = [spans[i] for i in idx.tolist()]
                    ok = all(
                        any(a <= fspans[s][0] and fspans[s][1] <= b for a, b in got) for s in sup
                    )
                    hits[method_name(m)][task[:3]] += ok
                    fbs[method_name(m)] += fell
        for m in methods:
            nm = method_name(m)
            cells = "  ".join(f"{t}={hits[nm][t] / n_questions:.2f}" for t in ("qa1", "qa2", "qa3"))
            per_q = secs[nm] / (3 * n_questions)
            print(f"{n_tok:>8} {nm:<18} {cells}  fb={fbs[nm]}  {per_q:.2f} s/q")


def run_1m(data: Path, methods) -> None:
    """Wall and CPU seconds (``time.process_time``: all threads of this process) for chunking,
    building and one query on 1M tokens; on a loaded machine the CPU time is the fairer figure."""
    print("== 1M tokens: chunk + build + one query (seconds: wall, and CPU of this process) ==")
    text = load_gutenberg(data, 1_000_000)
    q = "What did the captain say about the white whale?"
    for m in methods:
        c0, t0 = time.process_time(), time.perf_counter()
        key = unit_key(m)
        spans = chunk_words(text, key[1], split_lines=key[0], min_words=key[2])
        chunks = [text[a:b] for a, b in spans]
        t1 = time.perf_counter()
        index = make_index(m, chunks, text)
        t2 = time.perf_counter()
        scores, _ = index.score(q)
        select_top(scores, k=100)
        c3, t3 = time.process_time(), time.perf_counter()
        print(
            f"{method_name(m):<18} chunks={len(chunks)} chunk={t1 - t0:.2f} build={t2 - t1:.2f} "
            f"query={t3 - t2:.2f} total={t3 - t0:.2f} cpu={c3 - c0:.2f}"
        )


# -- natural questions on books (make demo and others) ---------------------------------------
# (book, question, regex an answering unit matches after whitespace is collapsed). "alice" is the
# bundled sample (``make demo`` asks its first question); the others are Gutenberg files.
BOOK_QUESTIONS = [
    ("alice", "What did the Mock Turtle sing about?", r"Beautiful Soup|Turtle Soup,”|Soup of the"),
    ("alice", "What was written on the little bottle?", r"DRINK ME"),
    ("alice", "What was the Caterpillar smoking?", r"hookah"),
    ("alice", "What did the Queen use as croquet mallets?", r"flamingo"),
    ("alice", "Who stole the tarts?", r"Knave"),
    (
        "2600-0.txt",
        "Whom did Natasha marry?",
        r"(Natásha|Pierre)[^.]*(married|marriage|wife|wedding)"
        r"|(married|marriage|wife|wedding)[^.]*(Natásha|Pierre)",
    ),
    ("2701-0.txt", "What was the name of Ahab's ship?", r"Pequod"),
    ("2701-0.txt", "What is the narrator's name?", r"Ishmael"),
    ("pg1342.txt", "What is the name of the Bennets' estate?", r"Longbourn"),
]


def run_questions(data: Path, methods) -> None:
    """Top-5 of each method for BOOK_QUESTIONS: hit (an answering unit in the top 5) and the
    rank of the first answering unit (1-based, '-' past 200)."""
    from longctx.io import sample_text

    print("== natural questions on books: answer in the top 5 (rank of the first answer) ==")
    texts = {}
    tally = Counter()
    for book, q, pat in BOOK_QUESTIONS:
        if book not in texts:
            texts[book] = (
                sample_text("alice")
                if book == "alice"
                else (data / "gutenberg" / book).read_text(encoding="utf-8-sig")
            )
        doc = Doc(texts[book])
        cells = []
        for m in methods:
            spans, chunks, _ = doc.units(unit_key(m), len)
            scores, _ = make_index(m, chunks, doc.text).score(q)
            order = np.argsort(-scores, kind="stable")[:200]
            first = next(
                (
                    r
                    for r, i in enumerate(order.tolist())
                    if re.search(pat, " ".join(chunks[i].split()))
                ),
                None,
            )
            hit = first is not None and first < 5
            tally[method_name(m)] += hit
            cells.append(
                f"{method_name(m)}={'HIT' if hit else 'miss'}({'-' if first is None else first + 1})"
            )
        print(f"{book:<11} {q:<45} " + "  ".join(cells))
    print("top-5 hits: " + "  ".join(f"{k}={v}/{len(BOOK_QUESTIONS)}" for k, v in tally.items()))


# -- router -------------------------------------------------------------------------------------
# Global requests over Multi-LexSum case documents (the dataset gives documents and expert
# summaries, not requests): one of these per document, in turn.
GLOBAL_REQUESTS = [
    "Summarize this case.",
    "Write a short summary of the lawsuit.",
    "Give me an overview of the document.",
    "What are the main points of this case?",
    "Summarize the complaint and how the case ended.",
    "What is this document about?",
    "Describe the whole case from filing to settlement.",
    "Provide a brief synopsis of the litigation.",
    "What are the key events of the case?",
    "Can you sum up this court record in a paragraph?",
    "TL;DR of this case please",
    "Which words are most frequent in the document?",
]


def router_queries(data: Path, n_global: int = 48):
    """[(query, chunks for the LLM prompt, expected mode)] over the QA sets and Multi-LexSum."""
    out = []
    for task in TASKS:
        for doc in TASKS[task][0](data):
            head = [doc.text[a:b] for a, b in chunk_words(doc.text[:2000], 32)]
            out += [(q[0], head, "local") for q in doc.questions]
    rng = random.Random(0)
    for task in ("qa1_single-supporting-fact", "qa2_two-supporting-facts"):
        qs = list(babi_questions(data / "babi" / "en" / f"{task}_test.txt"))
        out += [(q, facts, "local") for facts, q, _ in rng.sample(qs, 25)]
    lines = (data / "multilexsum" / "test.jsonl").read_text().splitlines()[:n_global]
    for i, line in enumerate(lines):
        text = json.loads(line)["document"]
        head = [text[a:b] for a, b in chunk_words(text[:2000], 32)]
        out.append((GLOBAL_REQUESTS[i % len(GLOBAL_REQUESTS)], head, "global"))
    return out


def smollm2_llm(logits: bool):
    """SmolLM2-135M-Instruct as a ``str -> str`` completion (its chat template, greedy).

    ``logits=True`` answers "y" or "n" by the larger next-token probability instead of parsing
    generated text (the model is weak at writing yes/no, /work/shared/MODELS.md).
    """
    import torch

    from longctx.models import load_causal_lm

    model, tok = load_causal_lm(device="cpu")
    y_id = tok.encode("y", add_special_tokens=False)[0]
    n_id = tok.encode("n", add_special_tokens=False)[0]

    def complete(prompt: str) -> str:
        msgs = [{"role": "user", "content": prompt}]
        ids = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt")
        ids = ids["input_ids"] if not torch.is_tensor(ids) else ids
        with torch.no_grad():
            if logits:
                last = model(ids).logits[0, -1]
                return "y" if last[y_id] > last[n_id] else "n"
            gen = model.generate(ids, max_new_tokens=4, do_sample=False)
        return tok.decode(gen[0, ids.shape[1] :], skip_special_tokens=True)

    return complete


def run_router(data: Path, n_llm: int) -> None:
    from longctx.mixpr import KeywordRouter, LLMRouter

    qs = router_queries(data)
    kw = KeywordRouter()
    print("== router: share routed right ==")
    for want in ("local", "global"):
        sub = [(q, c) for q, c, m in qs if m == want]
        right = sum(kw(q, c) == want for q, c in sub)
        wrong = [q for q, c in sub if kw(q, c) != want][:6]
        print(f"keyword  {want:<6} {right}/{len(sub)} = {right / len(sub):.3f}  misses: {wrong}")
    if n_llm <= 0:
        return
    rng = random.Random(1)
    subs = {w: rng.sample([(q, c) for q, c, m in qs if m == w], n_llm) for w in ("local", "global")}
    for logits in (False, True):
        router = LLMRouter(smollm2_llm(logits))
        for want, sub in subs.items():
            t0 = time.perf_counter()
            right = sum(router(q, c) == want for q, c in sub)
            dt = (time.perf_counter() - t0) / len(sub)
            how = "logit y/n" if logits else "generated"
            print(f"LLM ({how}) {want:<6} {right}/{len(sub)}  {dt:.1f} s/query")


# -- candidates -------------------------------------------------------------------------------
# The shipped default (``MixPRIndex`` / ``MixPR()``, preset "default") and its prototype here.
DEFAULT_NAME = "default"
DEFAULT = Cfg("v1-default-prototype")  # prototype of the v1 default (no coverage weighting)
BASELINES = [PAPER, "bm25", "tfidf", DEFAULT_NAME]
#: ``--hybrid``: the default with all-MiniLM-L6-v2 vectors of its units (issue 22)
HYBRID = "hybrid"
# Variants of the shipped index (``MixPRIndex.from_texts(text, **params)``), issue #12 demo work.
LIB_VARIANTS = {
    # main before the coverage weighting (issue #12 first round)
    "v1-default": dict(coverage_power=0.0, alpha_local=0.6),
    # one change away from the default
    "default-cov": dict(coverage_power=0.0),
    "default+a.6": dict(alpha_local=0.6),
    "default+a.7": dict(alpha_local=0.7),
    "default+cov1": dict(coverage_power=1.0),
    "default+cov2": dict(coverage_power=2.0),
    "default+cov3": dict(coverage_power=3.0),
    "default+cov6": dict(coverage_power=6.0),
    "default+thr.15": dict(threshold=0.15),
    # short chunks merged up to N words inside a paragraph (chunk_words(min_words=16))
    "v1-default+min16": dict(coverage_power=0.0, alpha_local=0.6, min_words=16),
    "default+min16": dict(min_words=16),
}
# Baselines on a variant's units (``name@variant``).
UNIT_VARIANTS = {"min16": dict(min_words=16)}
EXPLORE = [
    # the paper's graph with the query's edges as in the paper, then unthresholded (issue #12)
    Cfg(
        "paperlike+fit-chunks",
        threshold=0.27,
        query_threshold=0.27,
        personalization="query",
        split_lines=True,
        stop_words="english",
        strip_accents=None,
        sublinear_tf=False,
        stemmer=None,
    ),
    Cfg(
        "q-nothr+onehot",
        threshold=0.27,
        query_threshold=0.0,
        personalization="query",
        split_lines=True,
        stop_words="english",
        strip_accents=None,
        sublinear_tf=False,
        stemmer=None,
    ),
    Cfg(
        "+spread",
        threshold=0.27,
        query_threshold=0.0,
        split_lines=True,
        stop_words="english",
        strip_accents=None,
        sublinear_tf=False,
        stemmer=None,
    ),
    Cfg(
        "+unwrap+fold",
        threshold=0.27,
        query_threshold=0.0,
        stop_words="english",
        sublinear_tf=False,
        stemmer=None,
    ),
    Cfg("+stem", threshold=0.27, query_threshold=0.0, stop_words="english", sublinear_tf=False),
    Cfg("+sublinear+qwords", threshold=0.27, query_threshold=0.0),
    Cfg("+thr.2", query_threshold=0.0),
    # one change away from the default
    Cfg("default-qt0", query_threshold=0.0),
    Cfg("default-thr.27", threshold=0.27),
    Cfg("default+onehot", personalization="query"),
    Cfg("default+top50", top_m=50),
    Cfg("default+a.4", alpha_local=0.4),
    Cfg("default+a.8", alpha_local=0.8),
    Cfg("default-stem", stemmer=None),
    Cfg("default-sublinear", sublinear_tf=False),
    Cfg("default-qwords", stop_words="english"),
    Cfg("default-fold", strip_accents=None),
    Cfg("default+split_lines", split_lines=True),
    Cfg("default+N24", max_words=24),
    Cfg("default+N48", max_words=48),
    Cfg("default+bm25-personalization", query_sim="bm25"),
    Cfg("default+bm25(b=.3)-pers.+a.8", query_sim="bm25", bm25_b=0.3, alpha_local=0.8),
    "bm25@paper",
    "tfidf@paper",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--explore", action="store_true", help="also run the candidate grid")
    ap.add_argument("--babi-questions", type=int, default=30)
    ap.add_argument("--explore-babi", action="store_true", help="bAbI for the grid too (slow)")
    ap.add_argument("--skip-qa", action="store_true")
    ap.add_argument("--skip-babi", action="store_true")
    ap.add_argument("--skip-1m", action="store_true")
    ap.add_argument("--babi-lengths", default="16000,128000")
    ap.add_argument("--tasks", default="squad,nqa,hotpot")
    ap.add_argument("--questions", action="store_true", help="natural questions on books")
    ap.add_argument("--router", action="store_true", help="router accuracy (keyword and LLM)")
    ap.add_argument("--llm-queries", type=int, default=8, help="LLM-routed queries per class")
    ap.add_argument("--variants", default="", help="comma-separated LIB_VARIANTS to add")
    ap.add_argument("--only", default="", help="comma-separated method names to run (all if empty)")
    ap.add_argument("--hybrid", action="store_true", help="also the default + MiniLM (QA only)")
    args = ap.parse_args()
    if not (args.data / "squad").is_dir():
        sys.exit(f"bench_mixpr_quality: no data under {args.data} (use --data)")
    from longctx.models import load_tokenizer
    from longctx.tokens import hf_token_counter

    counter = hf_token_counter(load_tokenizer())
    methods = BASELINES + ([DEFAULT, "paper-graph-index"] + EXPLORE if args.explore else [])
    if args.only:
        keep = set(args.only.split(","))
        methods = [m for m in methods if method_name(m) in keep]
    if args.variants:
        methods += args.variants.split(",")
    if args.hybrid:
        methods.append(HYBRID)
    if not args.skip_qa:
        results = {}
        for task in args.tasks.split(","):
            docs = TASKS[task][0](args.data)
            results[task] = run_qa(task, docs, methods, counter)
        print("== single-hop QA: answer in the selection, % (budget = share of SmolLM2 tokens) ==")
        print_qa(results)
    if not args.skip_babi:
        babi = [
            m
            for m in methods
            if method_name(m) in (PAPER, "bm25", DEFAULT_NAME) or method_name(m) in LIB_VARIANTS
        ]
        if args.explore_babi:
            babi += [m for m in methods if isinstance(m, Cfg) and m is not DEFAULT]
        lengths = [int(x) for x in args.babi_lengths.split(",")]
        run_babi(args.data, babi, lengths, args.babi_questions)
    if args.questions:
        names = (PAPER, "bm25", DEFAULT_NAME, "v1-default")
        run_questions(args.data, [m for m in methods if method_name(m) in names])
    if args.router:
        run_router(args.data, args.llm_queries)
    if not args.skip_1m:
        names = (PAPER, DEFAULT_NAME, *LIB_VARIANTS)
        run_1m(args.data, [m for m in methods if method_name(m) in names])


if __name__ == "__main__":
    main()
