"""Diversity selection benchmark: pre-LLM answer recall and speed of MMR / FPS.

Paper: Wang et al., 2025, arXiv:2502.09017, Table 1 (recall of the answer string in the
selected sentences at compression ratios 0.05 / 0.1 / 0.2, single-document QA) and Fig. 2 (latency).

Recall part
    SQuAD (dev v2.0 first 5 articles + dev v1.1 Super_Bowl_50): the paragraphs of one article joined
    as one document, answerable questions. NarrativeQA summaries (test): one summary per document,
    questions whose reference answer occurs in the summary (after normalization). Sentences from
    :func:`longctx.text.split_sentences`, tokens from :func:`longctx.tokens.count_tokens`,
    embeddings all-MiniLM-L6-v2 (each document's sentences embedded once, reused everywhere).
    A question counts as recalled when one of its answers, lower-cased with punctuation and
    articles removed, is a substring of the selected sentences joined (same normalization).
    Methods: plain similarity (lambda = 1), MMR and FPS with (lambda, window) from a small grid.
    The grid point is chosen per dataset and method by mean recall over the three ratios on the
    even-numbered questions and reported on the odd-numbered ones (held out); a second table gives
    the best grid point per ratio on all questions (the paper's protocol, optimistic).

Speed part
    n = 10k and 100k sentences, budget 5 % of the tokens (token counts of real Gutenberg sentences),
    MMR lambda 0.5, 0.7 and 0.9 with window None, lambda 0.5 with windows 1 and 5. Embeddings:
    MiniLM embeddings of 2,000 real sentences, resampled with Gaussian noise up to n.
    ``--real-cache FILE.npz``: also time window None on the MiniLM embeddings of the first 100k
    real sentences of the Gutenberg books (embedded once, ~9 min on 2 cores, then cached in FILE).
    Baseline: a naive loop over candidates (a Python loop per pick, running maximum kept),
    timed on its first picks and extrapolated linearly to the full selection.

Index part (build once, query many; ``--skip-index`` to leave out)
    :class:`longctx.DiversityIndex` on the first ``--index-chars`` (300,000) characters of War and
    Peace with MiniLM: sentences, build time and the encoder's throughput (sentences/s), then the
    per-query time after the build (query embedding + selection). The full book's build time is
    extrapolated from that throughput (its sentences are only split and counted). The full book's
    per-query time is measured on an index of the full book's sentences whose embeddings are the
    measured ones resampled with noise (selection cost depends on the count, not the content),
    with the real MiniLM query embedding; plus save / load of that index.

Usage: ``python benchmarks/bench_diversity.py [--data ../shared/data] [--max-questions N]
[--skip-recall] [--skip-speed] [--skip-index] [--index-chars N] [--real-cache FILE.npz]``.
"""

from __future__ import annotations

import argparse
import json
import re
import string
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from longctx.diversity import DiversityIndex, fps_select, mmr_select  # noqa: E402
from longctx.embeddings import get_encoder  # noqa: E402
from longctx.text import split_sentences  # noqa: E402
from longctx.tokens import count_many  # noqa: E402

RATIOS = (0.05, 0.1, 0.2)
LAMBDAS = (0.5, 0.6, 0.7, 0.8, 0.9)
WINDOWS = (1, 3, 5, 10, None)

_PUNCT = re.compile("[" + re.escape(string.punctuation) + "‘’“”—–]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize(s: str) -> str:
    s = _PUNCT.sub(" ", s.lower())
    return " " + " ".join(_ARTICLES.sub(" ", s).split()) + " "


def load_squad(data: Path):
    docs = []
    for name in ("dev-v2.0-first5.json", "dev-v1.1-superbowl50.json"):
        for art in json.loads((data / "squad" / name).read_text())["data"]:
            text = "\n\n".join(p["context"] for p in art["paragraphs"])
            qs = [
                (q["question"], sorted({a["text"] for a in q["answers"]}))
                for p in art["paragraphs"]
                for q in p["qas"]
                if not q.get("is_impossible") and q["answers"]
            ]
            docs.append((text, qs))
    return docs


def load_narrativeqa(data: Path):
    by_passage = defaultdict(list)
    for line in (data / "narrativeqa_summaries" / "test.jsonl").read_text().splitlines():
        row = json.loads(line)
        norm_p = normalize(row["passage"])
        answers = [a for a in row["answer"] if normalize(a).strip() and normalize(a) in norm_p]
        if answers:
            by_passage[row["passage"]].append((row["question"], answers))
    return list(by_passage.items())


def settings():
    out = [("plain", 1.0, None)]
    for m in ("mmr", "fps"):
        out += [(m, lam, w) for lam in LAMBDAS for w in WINDOWS]
    return out


def recall_table(name, docs, enc, max_questions):
    """hits[q, setting, ratio] for all questions of the dataset."""
    sett = settings()
    rows = []
    n_q = 0
    for text, qs in docs:
        if max_questions and n_q >= max_questions:
            break
        qs = qs[: max_questions - n_q] if max_questions else qs
        n_q += len(qs)
        spans = split_sentences(text)
        sents = [text[a:b] for a, b in spans]
        norm_sents = [normalize(s) for s in sents]
        counts = count_many(sents)
        emb = enc.embed_documents(sents)
        qemb = enc.embed_documents([q for q, _ in qs])
        total = int(counts.sum())
        for qe, (_, answers) in zip(qemb, qs):
            r = (emb @ qe).astype(np.float64)
            norm_answers = [normalize(a) for a in answers]
            hit = np.zeros((len(sett), len(RATIOS)), bool)
            for si, (m, lam, w) in enumerate(sett):
                select = fps_select if m == "fps" else mmr_select
                for ri, ratio in enumerate(RATIOS):
                    budget = int(np.floor(ratio * total))
                    picks = select(
                        emb, r, counts, budget, lambda_=lam, window=w, rescale_rewards=False
                    )
                    chosen = " ".join(norm_sents[i] for i in sorted(picks))
                    hit[si, ri] = any(a in chosen for a in norm_answers)
            rows.append(hit)
    hits = np.stack(rows)
    print(f"{name}: {len(docs)} documents, {hits.shape[0]} questions", flush=True)
    return hits


def report(name, hits):
    sett = settings()
    tune, test = hits[0::2], hits[1::2]
    lines = []
    for method in ("plain", "mmr", "fps"):
        idx = [i for i, s in enumerate(sett) if s[0] == method]
        best = max(idx, key=lambda i: (tune[:, i].mean(), -i))
        _, lam, w = sett[best]
        rec = 100 * test[:, best].mean(axis=0)
        label = "plain (lambda=1)" if method == "plain" else f"{method} l={lam} w={w}"
        lines.append(f"| {name} | {label} | " + " | ".join(f"{x:.2f}" for x in rec) + " |")
    return lines


def report_best_per_ratio(name, hits):
    sett = settings()
    lines = []
    for method in ("plain", "mmr", "fps"):
        idx = [i for i, s in enumerate(sett) if s[0] == method]
        cells = []
        for ri in range(len(RATIOS)):
            best = max(idx, key=lambda i: (hits[:, i, ri].mean(), -i))
            _, lam, w = sett[best]
            tag = "" if method == "plain" else f" (l={lam}, w={w})"
            cells.append(f"{100 * hits[:, best, ri].mean():.2f}{tag}")
        lines.append(f"| {name} | {method} | " + " | ".join(cells) + " |")
    return lines


def naive_mmr(e, r, counts, budget, lam, max_picks):
    """A straightforward loop over candidates per pick (window None), for the speed baseline."""
    n = e.shape[0]
    maxsim = [None] * n
    taken = [False] * n
    picks, left = [], budget
    while len(picks) < max_picks:
        best, best_val = -1, -np.inf
        for i in range(n):
            if taken[i] or counts[i] > left:
                continue
            val = lam * r[i] - (1 - lam) * (maxsim[i] if maxsim[i] is not None else 0.0)
            if val > best_val:
                best, best_val = i, val
        if best < 0:
            break
        picks.append(best)
        taken[best] = True
        left -= counts[best]
        ej = e[best]
        for i in range(n):
            if not taken[i]:
                s = float(e[i] @ ej)
                maxsim[i] = s if maxsim[i] is None else max(maxsim[i], s)
    return picks


def speed(data: Path, enc):
    book = (data / "gutenberg" / "2600-0.txt").read_text(encoding="utf-8")  # War and Peace
    spans = split_sentences(book)
    sents = [book[a:b] for a, b in spans]
    counts_all = count_many(sents)
    rng = np.random.default_rng(0)
    base_idx = rng.choice(len(sents), 2000, replace=False)
    base = enc.embed_documents([sents[i] for i in base_idx])
    q = enc.embed_query("Who did Natasha marry?")
    lines = []
    for n in (10_000, 100_000):
        src = rng.integers(0, len(base), n)
        e = base[src] + rng.normal(scale=0.03, size=(n, base.shape[1])).astype(np.float32)
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        counts = counts_all[rng.integers(0, len(sents), n)]
        budget = int(0.05 * counts.sum())
        r = (e @ q).astype(np.float64)
        for lam, w in ((0.5, None), (0.7, None), (0.9, None), (0.5, 1), (0.5, 5)):
            t0 = time.perf_counter()
            picks = mmr_select(e, r, counts, budget, lambda_=lam, window=w, rescale_rewards=False)
            t_vec = time.perf_counter() - t0
            naive_cell = "-"
            if w is None:
                n_naive = 3 if n > 20_000 else 10
                t0 = time.perf_counter()
                naive = naive_mmr(e, r, counts, budget, lam, n_naive)
                t_naive = (time.perf_counter() - t0) / n_naive * len(picks)
                assert naive == picks[:n_naive], "naive and vectorized MMR disagree"
                naive_cell = f"{t_naive:.0f} (est. from {n_naive} picks)"
            lines.append(
                f"| {n:,} | {lam} | {w} | {len(picks)} | {budget:,} | {t_vec:.2f} | {naive_cell} |"
            )
            print(lines[-1], flush=True)
    return lines


def real_speed(data: Path, enc, cache: Path):
    """Window None on MiniLM embeddings of 100k real sentences (cached in ``cache``)."""
    if cache.is_file():
        z = np.load(cache)
        e, counts = z["e"], z["counts"]
    else:
        sents = []
        for f in sorted((data / "gutenberg").glob("*.txt")):
            text = f.read_text(encoding="utf-8-sig")
            sents += [text[a:b] for a, b in split_sentences(text)]
            if len(sents) >= 100_000:
                break
        sents = sents[:100_000]
        e = np.asarray(enc.embed_documents(sents), dtype=np.float32)
        counts = count_many(sents)
        np.savez(cache, e=e, counts=counts)
    q = np.asarray(enc.embed_query("Who did Natasha marry?"), dtype=np.float32)
    budget = int(0.05 * counts.sum())
    lines = []
    for lam in (0.5, 0.7, 0.9):
        t0 = time.perf_counter()
        picks = mmr_select(e, None, counts, budget, query_embedding=q, lambda_=lam)
        t_vec = time.perf_counter() - t0
        lines.append(
            f"| {len(e):,} real | {lam} | None | {len(picks)} | {budget:,} | {t_vec:.2f} | - |"
        )
        print(lines[-1], flush=True)
    return lines


INDEX_QUERIES = (
    "Who did Natasha marry?",
    "What happened at the battle of Borodino?",
    "Why did Pierre join the Freemasons?",
    "How did Prince Andrew die?",
    "What did Napoleon do in Moscow?",
)


def index_part(data: Path, enc, n_chars: int):
    """Build once / query many on War and Peace (see the module docstring)."""
    import tempfile

    book = (data / "gutenberg" / "2600-0.txt").read_text(encoding="utf-8-sig")
    part = book[:n_chars]
    lines = []
    enc.embed_query("warm up")  # model loading is not part of the throughput
    t0 = time.perf_counter()
    idx = DiversityIndex.from_texts(part, enc, progress=False)
    t_build = time.perf_counter() - t0
    n_part = len(idx)
    rate = n_part / t_build
    full_spans = split_sentences(book)
    n_full = len(full_spans)
    lines.append(
        f"| build (embed every sentence once) | first {len(part):,} chars: {n_part:,} sentences "
        f"| {t_build:.1f} s ({rate:.0f} sentences/s) | full book {n_full:,} sentences: "
        f"~{n_full / rate / 60:.1f} min (extrapolated) |"
    )
    print(lines[-1], flush=True)

    def queries(index, label):
        total = int(index.token_counts.sum())
        for size in ({"k": 50}, {"token_budget": 2000}, {"token_budget": int(0.05 * total)}):
            times, emb_t, sel_t = [], [], []
            for q in INDEX_QUERIES:
                t0 = time.perf_counter()
                res = index.search(q, lambda_=0.5, **size)
                times.append(time.perf_counter() - t0)
                emb_t.append(res.timings["embed_query"])
                sel_t.append(res.timings["select"])
            size_s = ", ".join(f"{k}={v:,}" for k, v in size.items())
            lines.append(
                f"| query after build | {label}, {size_s}, lambda 0.5 | median "
                f"{np.median(times) * 1000:.0f} ms (embed query {np.median(emb_t) * 1000:.0f} ms, "
                f"select {np.median(sel_t) * 1000:.0f} ms) | max {max(times) * 1000:.0f} ms |"
            )
            print(lines[-1], flush=True)

    queries(idx, f"{n_part:,} sentences")
    rng = np.random.default_rng(0)
    src = rng.integers(0, n_part, n_full)
    e = idx.embeddings[src] + rng.normal(scale=0.03, size=(n_full, idx.embeddings.shape[1]))
    full = DiversityIndex.from_units([book], [full_spans], enc, embeddings=e)
    queries(full, f"full book, {n_full:,} sentences (resampled embeddings)")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        full.save(Path(tmp) / "idx")
        t_save = time.perf_counter() - t0
        size_mb = sum(f.stat().st_size for f in (Path(tmp) / "idx").iterdir()) / 1e6
        t0 = time.perf_counter()
        loaded = DiversityIndex.load(Path(tmp) / "idx", encoder=enc)
        t_load = time.perf_counter() - t0
        same = (
            loaded.search(INDEX_QUERIES[0], k=50).hits == full.search(INDEX_QUERIES[0], k=50).hits
        )
    lines.append(
        f"| save / load | full book | save {t_save:.2f} s, load {t_load:.2f} s, {size_mb:.0f} MB "
        f"| same hits after load: {same} |"
    )
    print(lines[-1], flush=True)
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--max-questions", type=int, default=0, help="per dataset (0 = all)")
    ap.add_argument("--skip-recall", action="store_true")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-index", action="store_true")
    ap.add_argument("--index-chars", type=int, default=300_000, help="characters embedded")
    ap.add_argument("--real-cache", type=Path, help="also time 100k real sentences (cache .npz)")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        sys.exit(f"data folder not found: {args.data} (use --data)")
    enc = get_encoder()
    out = []
    if not args.skip_recall:
        t0 = time.perf_counter()
        tables = [
            ("SQuAD", recall_table("SQuAD", load_squad(args.data), enc, args.max_questions)),
            (
                "NarrativeQA",
                recall_table("NarrativeQA", load_narrativeqa(args.data), enc, args.max_questions),
            ),
        ]
        out.append(
            "\nAnswer recall (%) in the selected sentences; (lambda, window) tuned on even "
            "questions, reported on odd questions"
        )
        out.append("| dataset | method | cr=0.05 | cr=0.1 | cr=0.2 |")
        out.append("|---|---|---|---|---|")
        for name, hits in tables:
            out += report(name, hits)
        out.append("\nBest grid point per ratio on all questions (the paper's protocol)")
        out.append("| dataset | method | cr=0.05 | cr=0.1 | cr=0.2 |")
        out.append("|---|---|---|---|---|")
        for name, hits in tables:
            out += report_best_per_ratio(name, hits)
        out.append(f"(recall part: {time.perf_counter() - t0:.0f} s)")
    if not args.skip_speed:
        out.append("\nSpeed: MMR, 5% token budget (seconds)")
        out.append(
            "| sentences | lambda | window | picks | budget (tokens) | longctx | naive loop |"
        )
        out.append("|---|---|---|---|---|---|---|")
        out += speed(args.data, enc)
        if args.real_cache:
            out += real_speed(args.data, enc, args.real_cache)
    if not args.skip_index:
        out.append("\nBuild once, query many: DiversityIndex on War and Peace (MiniLM)")
        out.append("| stage | input | time | note |")
        out.append("|---|---|---|---|")
        out += index_part(args.data, enc, args.index_chars)
    print("\n".join(out))


if __name__ == "__main__":
    main()
