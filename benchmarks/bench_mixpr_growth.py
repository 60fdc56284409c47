"""MixPR cost and quality as a corpus grows: build, memory and query time at 0.5, 1, 2, 4 and 10
million words (``--sizes``; the README's row ran ``--sizes 1,10,20``), 100k one-paragraph documents, and inserting / deleting a 100k-word document in the
largest index; beside them the recall of needle facts planted in the haystack. Prints the growth
table (issue 29's targets beside it).

Usage::

    python benchmarks/bench_mixpr_growth.py [--data ../shared/data] [--sizes 0.5,1,2,4,10]
        [--graph factored|threshold] [--queries 20] [--paragraphs 100000] [--skip-updates]
        [--needles 40] [--chains 20]

Quality columns (the same meaning at every size): ``--needles`` one-fact needles and
``--chains`` two-fact chains, made of invented rare words (fixed seed 0, so the same facts at
every size), each fact put in as a paragraph of its own at a paragraph break of a random
document (a chain's two facts in two random documents). A one-fact needle is
``"The <w1> lantern was hidden inside the <w2> cellar."``, asked as ``"Where was the <w1>
lantern hidden?"``; a chain is ``"The <a> medallion was given to the <b> guild."`` and ``"The
<b> guild meets every winter in the <c> tower."``, asked as ``"Where does the guild that
received the <a> medallion meet?"`` (the second fact shares no word but ``guild`` with the
question: it is reached through ``<b>``). Recall@k: the share of needles (chains: of chains
with both facts) whose paragraph overlaps one of the ``k`` best units (local mode, k = 100; @10
the ten best by score).

Corpus generator (documented so the figures can be reproduced): the Gutenberg books of
``data/gutenberg/INDEX.tsv`` in file order, each book one document (id = file name), taken
whole until the word budget (``str.split`` words) is reached, the last one cut at a line; past
the 6.3M words of the 37 books, the books are taken again as new documents (id ``"<file>#2"``),
so 10M words is every book once and the first ones twice. Paragraphs: blank-line separated
paragraphs of 20+ words of the same books, in order, repeated likewise.

Each size runs in its own process, so its peak RSS (``ru_maxrss``) is its own: the build
(``MixPRIndex.from_texts``: chunking, term counts, the graph) plus the queries. Query time is the
median over ``--queries`` questions (fixed list, local mode, k=100) after one warm-up query, in
wall time and in the process's CPU time (``time.process_time``: the fairer clock on a shared
machine).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

QUESTIONS = [
    "What did Sir Henry lose at the Northumberland Hotel?",
    "Who gave Alice the bottle marked drink me?",
    "Where did Captain Ahab lose his leg?",
    "Why did Elizabeth refuse Mr. Darcy the first time?",
    "What did Pierre find in the Freemasons' lodge?",
    "Who killed Fyodor Pavlovich Karamazov?",
    "What is the name of Robinson Crusoe's servant?",
    "Where was Dorian Gray's portrait hidden?",
    "What happened to the Time Traveller's machine?",
    "How did Jonathan Harker escape from the castle?",
    "Who is the prisoner in the Chateau d'If next to Dantes?",
    "What did Scrooge see in the first ghost's visit?",
    "Who was the convict on the moor?",
    "What did Tom Sawyer and Huck find in the cave?",
    "Why did Jane Eyre leave Thornfield Hall?",
    "What did Gulliver see in Lilliput?",
    "Who wrote the letter to Heathcliff?",
    "What did Dr. Jekyll drink to become Mr. Hyde?",
    "Where did the Martians land first?",
    "Who betrayed Edmond Dantes?",
]

TARGETS = {
    1.0: {"build_s": 2.0, "query_ms": 20.0},
    10.0: {"build_s": 30.0, "query_ms": 100.0, "rss_gb": 4.0},
}


def books(data: Path) -> list[tuple[str, str]]:
    g = data / "gutenberg"
    rows = (g / "INDEX.tsv").read_text("utf-8").splitlines()[1:]
    return [(r.split("\t")[0], (g / r.split("\t")[0]).read_text("utf-8")) for r in rows]


def corpus(data: Path, words: int) -> list[tuple[str, str]]:
    """``(id, text)`` documents holding ``words`` words (see the module doc)."""
    out, total, rep = [], 0, 1
    src = books(data)
    while total < words:
        for name, text in src:
            n = len(text.split())
            doc_id = name if rep == 1 else f"{name}#{rep}"
            if total + n <= words:
                out.append((doc_id, text))
                total += n
            else:
                lines, kept, cnt = text.splitlines(keepends=True), [], 0
                for line in lines:
                    c = len(line.split())
                    if total + cnt + c > words:
                        break
                    kept.append(line)
                    cnt += c
                if cnt:
                    out.append((doc_id, "".join(kept)))
                    total += cnt
                return out
        rep += 1
    return out


def paragraphs(data: Path, count: int) -> list[tuple[str, str]]:
    import re

    out, rep = [], 1
    while len(out) < count:
        for name, text in books(data):
            for j, p in enumerate(re.split(r"\n\s*\n", text)):
                if len(p.split()) >= 20:
                    out.append((f"{name}:{j}" + (f"#{rep}" if rep > 1 else ""), p))
                    if len(out) == count:
                        return out
        rep += 1
    return out


SYLLABLES = ("ka", "zu", "vor", "qel", "tri", "mox", "bal", "dun", "wex", "ryn", "pho", "lig",
             "sna", "gor", "vix", "tal", "quo", "zem", "ful", "ikr")  # fmt: skip


def rare_words(count: int, rng) -> list[str]:
    """``count`` distinct invented words of three syllables (not English words)."""
    out: dict[str, None] = {}
    while len(out) < count:
        out["".join(rng.choice(SYLLABLES, 3))] = None
    return list(out)


def needle_facts(n_needles: int, n_chains: int, seed: int = 0):
    """``(facts, questions)``: facts are sentences; each question is ``(text, [fact indices])``
    (see the module doc)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    words = rare_words(2 * n_needles + 3 * n_chains, rng)
    facts, questions = [], []
    for i in range(n_needles):
        w1, w2 = words[2 * i : 2 * i + 2]
        facts.append(f"The {w1} lantern was hidden inside the {w2} cellar.")
        questions.append((f"Where was the {w1} lantern hidden?", [len(facts) - 1]))
    base = 2 * n_needles
    for i in range(n_chains):
        a, b, c = words[base + 3 * i : base + 3 * i + 3]
        facts.append(f"The {a} medallion was given to the {b} guild.")
        facts.append(f"The {b} guild meets every winter in the {c} tower.")
        q = f"Where does the guild that received the {a} medallion meet?"
        questions.append((q, [len(facts) - 2, len(facts) - 1]))
    return facts, questions


def plant(docs: list[tuple[str, str]], facts: list[str], seed: int = 0):
    """Put each fact, as a paragraph of its own, at a random paragraph break of a random document
    (fixed seed). Returns ``(documents, spans)``: the new documents and each fact's ``(document
    position, start, end)``."""
    import re

    import numpy as np

    rng = np.random.default_rng(seed + 1)
    where: dict[int, list[tuple[int, int]]] = {}
    for f in range(len(facts)):
        d = int(rng.integers(len(docs)))
        text = docs[d][1]
        breaks = [0, len(text)] + [m.start() for m in re.finditer(r"\n\n", text)]
        where.setdefault(d, []).append((breaks[int(rng.integers(len(breaks)))], f))
    out = list(docs)
    spans: list = [None] * len(facts)
    for d, items in where.items():
        text, parts, last, pos = docs[d][1], [], 0, 0
        for at, f in sorted(items):
            parts.append(text[last:at])
            pos += at - last
            piece = f"\n\n{facts[f]}\n\n"
            spans[f] = (d, pos + 2, pos + 2 + len(facts[f]))
            parts.append(piece)
            pos += len(piece)
            last = at
        parts.append(text[last:])
        out[d] = (docs[d][0], "".join(parts))
    return out, spans


def needle_recall(index, questions, spans) -> dict:
    """Recall@10 / @100 of the one-fact needles and of the chains (every fact found)."""
    found = {"needle": {10: [], 100: []}, "chain": {10: [], 100: []}}
    for q, fs in questions:
        res = index.search(q, k=100, mode="local")
        for k, hits in ((100, res.hits), (10, res.by_score()[:10])):
            got = [(h.source, h.start, h.end) for h in hits]
            ok = all(
                any(s == spans[f][0] and a < spans[f][2] and spans[f][1] < b for s, a, b in got)
                for f in fs
            )
            found["needle" if len(fs) == 1 else "chain"][k].append(ok)
    return {
        f"{kind}_r{k}": round(sum(v) / len(v), 3) if v else None
        for kind, by_k in found.items()
        for k, v in by_k.items()
    }


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2


def run_one(args) -> dict:
    """One size in this process: build, queries, optionally insert / delete."""
    from longctx.mixpr import MixPRIndex

    docs = (
        paragraphs(args.data, args.paragraphs)
        if args.one == "paragraphs"
        else corpus(args.data, int(float(args.one) * 1e6))
    )
    facts, questions = needle_facts(args.needles, args.chains)
    docs, spans = plant(docs, facts)
    words = sum(len(t.split()) for _, t in docs)
    base = peak_gb()
    t0 = time.perf_counter()
    index = MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs], graph=args.graph)
    build = time.perf_counter() - t0
    index.search(QUESTIONS[0], k=100, mode="local")  # warm-up
    times, cpu = [], []
    for q in QUESTIONS[: args.queries]:
        t0, c0 = time.perf_counter(), time.process_time()
        index.search(q, k=100, mode="local")
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out = {
        "size": args.one,
        "documents": len(docs),
        "words": words,
        "units": index.n_units,
        "terms": index.terms.n_terms,
        "graph_nnz": index.graph.nnz,
        "build_s": round(build, 2),
        "query_ms": round(1000 * statistics.median(times), 1),
        "query_max_ms": round(1000 * max(times), 1),
        "query_cpu_ms": round(1000 * statistics.median(cpu), 1),
        "peak_rss_gb": round(peak_gb(), 2),
        "base_rss_gb": round(base, 2),
        **needle_recall(index, questions, spans),
    }
    if args.updates:
        extra = "\n\n".join(t for _, t in corpus(args.data, 100_000))  # 100k words, one text
        out["insert_words"] = len(extra.split())
        t0 = time.perf_counter()
        index.insert([extra], ids=["inserted-100k"])
        out["insert_100k_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        index.delete(["inserted-100k"])
        out["delete_100k_s"] = round(time.perf_counter() - t0, 2)
        out["peak_rss_gb"] = round(peak_gb(), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument(
        "--data", type=Path, default=REPO.parent / "shared" / "data",
        help="the benchmark data folder (default: ../shared/data beside the repository)",
    )  # fmt: skip
    ap.add_argument(
        "--sizes", default="0.5,1,2,4,10",
        help="corpus sizes in million words, comma separated (default: 0.5,1,2,4,10; the "
        "README's growth row ran --sizes 1,10,20)",
    )  # fmt: skip
    ap.add_argument(
        "--graph", default="factored", choices=("factored", "threshold"),
        help="MixPR's graph (default: factored)",
    )  # fmt: skip
    ap.add_argument("--queries", type=int, default=20, help="queries timed per size (default: 20)")
    ap.add_argument(
        "--paragraphs", type=int, default=100_000,
        help="one-paragraph documents of the paragraphs row (default: 100000; 0 skips it)",
    )  # fmt: skip
    ap.add_argument(
        "--skip-updates", action="store_true",
        help="leave out inserting / deleting a 100k-word document in the largest index",
    )  # fmt: skip
    ap.add_argument(
        "--needles", type=int, default=40, help="one-fact needles planted (default: 40)"
    )
    ap.add_argument("--chains", type=int, default=20, help="two-fact chains planted (default: 20)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--updates", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args)))
        return
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    jobs = [(s, s == sizes[-1] and not args.skip_updates) for s in sizes]
    if args.paragraphs:
        jobs.append(("paragraphs", False))
    rows = []
    for size, updates in jobs:
        cmd = [sys.executable, __file__, "--one", size, "--data", str(args.data)]
        cmd += ["--graph", args.graph, "--queries", str(args.queries)]
        cmd += ["--needles", str(args.needles), "--chains", str(args.chains)]
        cmd += ["--paragraphs", str(args.paragraphs)] + (["--updates"] if updates else [])
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            print(f"size {size} failed:\n{res.stderr[-2000:]}", file=sys.stderr)
            continue
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
        print(f"  {size}: {rows[-1]}", file=sys.stderr, flush=True)
    print(f"\n== MixPR growth (graph={args.graph}; seconds, ms, GB; 2-core CPU) ==\n")
    print("| corpus | documents | words | units | graph nnz | build s "
          "| query ms (median / max / CPU) | peak RSS GB | needles R@10 / R@100 "
          "| chains R@10 / R@100 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        name = "100k paragraphs" if r["size"] == "paragraphs" else f"{r['size']}M words"
        print(
            f"| {name} | {r['documents']:,} | {r['words']:,} | {r['units']:,} | "
            f"{r['graph_nnz']:,} | {r['build_s']} | {r['query_ms']} / {r['query_max_ms']} / "
            f"{r['query_cpu_ms']} | "
            f"{r['peak_rss_gb']} | {r['needle_r10']} / {r['needle_r100']} | "
            f"{r['chain_r10']} / {r['chain_r100']} |"
        )
    print(f"\n(needles: {args.needles} one-fact, {args.chains} two-fact chains, seed 0; "
          "recall of their paragraphs among the 10 / 100 best units)")  # fmt: skip
    sized = [r for r in rows if r["size"] != "paragraphs"]
    if len(sized) >= 2:
        a, b = sized[0], sized[-1]
        f = b["words"] / a["words"]
        print(
            f"\n{f:.1f}x the words: {b['build_s'] / max(a['build_s'], 1e-9):.1f}x the build time, "
            f"{b['query_ms'] / max(a['query_ms'], 1e-9):.1f}x the query time "
            f"({b['query_cpu_ms'] / max(a['query_cpu_ms'], 1e-9):.1f}x in CPU time), "
            f"{b['peak_rss_gb'] / max(a['peak_rss_gb'], 1e-9):.1f}x the peak RSS, "
            f"{b['graph_nnz'] / max(a['graph_nnz'], 1):.1f}x the graph's non-zeros"
        )
    for r in sized:
        if "insert_100k_s" in r:
            print(
                f"\nin the {r['size']}M-word index: inserting a 100k-word document "
                f"{r['insert_100k_s']} s ({100 * r['insert_100k_s'] / r['build_s']:.1f}% of the "
                f"build), deleting it {r['delete_100k_s']} s"
            )
    print("\ntargets (issue 29): 1M words build <= 2 s, query <= 20 ms; 10M words build <= 30 s, "
          "peak RSS <= 4 GB, query <= 100 ms; 100k paragraphs build <= 10 s, query <= 50 ms; "
          "10x the words <= 12x the time and memory; insert 100k words <= 5% of a build")  # fmt: skip


if __name__ == "__main__":
    main()
