"""Sentence-to-token alignment: exact match rate and speed of offsets vs EASY (YOURA sec. 4.2).

For every sentence of the splitter (``longctx.text.split_sentences``), "exact match" means that
decoding its token span gives back the sentence text, modulo leading/trailing whitespace (the
paper's criterion, Soh et al., 2024, arXiv:2409.13695, sec. 4.2, Table 4: 93.7% on
average for EASY). Methods, all with SmolLM2-135M-Instruct's tokenizer:

- offsets      : ``offset_token_spans`` from the fast tokenizer's offset_mapping (exact).
- easy         : EASY (Algorithm 1, tol 30) with candidates from the real text prefix
                 (``sentence_token_spans(method="easy")``).
- easy-concat  : EASY with the paper's ``Concat(P)`` as sentences joined by one space (no text).

"possible" is the share of sentences whose boundaries do not cut through a token (an upper bound
for any token-span method). Speed: seconds per MB of text (UTF-8), tokenization + alignment, sentence splitting excluded.

Run: ``PYTHONPATH=. python benchmarks/bench_alignment.py [--data ../shared/data]
[--gutenberg-kb 128]``. Takes about a minute on one CPU core.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from longctx.align import easy_token_spans, sentence_token_spans  # noqa: E402
from longctx.models import load_tokenizer  # noqa: E402
from longctx.text import split_sentences  # noqa: E402

METHODS = ("offsets", "easy", "easy-concat")


def gutenberg_docs(data: Path, kb: int, seed: int) -> list[str]:
    """A ``kb`` KB window of each book, at a random (seeded) line start past the PG header."""
    rng = random.Random(seed)
    docs = []
    for path in sorted((data / "gutenberg").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        size = kb * 1024
        if len(text) <= size:
            docs.append(text)
            continue
        start = rng.randrange(len(text) // 20, len(text) - size)
        start = text.find("\n", start) + 1
        docs.append(text[start : start + size])
    return docs


def squad_docs(data: Path) -> list[str]:
    docs = []
    for path in sorted((data / "squad").glob("*.json")):
        for article in json.loads(path.read_text(encoding="utf-8"))["data"]:
            docs.extend(p["context"] for p in article["paragraphs"])
    return docs


def hotpot_docs(data: Path) -> list[str]:
    path = data / "hotpotqa" / "dev-distractor-first100.json"
    docs = []
    for ex in json.loads(path.read_text(encoding="utf-8")):
        paras = [f"{title}\n" + "".join(sents) for title, sents in ex["context"]]
        docs.append("\n\n".join(paras))
    return docs


def run_method(method: str, text: str, sents, tok):
    if method == "easy-concat":
        ids = tok(text, add_special_tokens=False, verbose=False)["input_ids"]
        spans = easy_token_spans([text[a:b] for a, b in sents], ids, tok)
        return ids, spans
    return sentence_token_spans(text, sents, tok, method=method)


def achievable(text: str, sents, tok) -> int:
    """Sentences whose start and end fall on a token boundary (or whitespace at a token's edge):
    the others cut through a token such as "!”" or ".[" and no token span can match them."""
    offsets = tok(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)[
        "offset_mapping"
    ]
    cut = set()
    for a, b in offsets:
        for p in range(a + 1, b):
            if text[a:p].strip() and text[p:b].strip():
                cut.add(p)
    return sum(s not in cut and e not in cut for s, e in sents)


def evaluate(docs: list[str], tok) -> dict:
    split = [split_sentences(d) for d in docs]
    n_sent = sum(len(s) for s in split)
    mb = sum(len(d.encode("utf-8")) for d in docs) / 1e6
    row = {"docs": len(docs), "sentences": n_sent, "MB": mb}
    row["possible"] = sum(achievable(d, s, tok) for d, s in zip(docs, split)) / max(n_sent, 1)
    for method in METHODS:
        t0 = time.perf_counter()
        results = [run_method(method, d, s, tok) for d, s in zip(docs, split)]
        elapsed = time.perf_counter() - t0
        hits = 0
        for d, sents, (ids, spans) in zip(docs, split, results):
            for (a, b), (s, e) in zip(spans, sents):
                hits += tok.decode(ids[a:b]).strip() == d[s:e].strip()
        row[method] = (hits / max(n_sent, 1), elapsed / mb)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--gutenberg-kb", type=int, default=128, help="KB sampled from each book")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        print(f"data folder not found: {args.data} (pass --data)", file=sys.stderr)
        return 2
    tok = load_tokenizer()
    sets = {
        f"gutenberg ({args.gutenberg_kb} KB x book)": gutenberg_docs(
            args.data, args.gutenberg_kb, args.seed
        ),
        "squad (paragraphs)": squad_docs(args.data),
        "hotpotqa (10 paragraphs)": hotpot_docs(args.data),
    }
    head = f"{'dataset':28} {'docs':>5} {'sents':>6} {'MB':>5} {'possible':>8}"
    for m in METHODS:
        head += f" | {m + ' match':>17} {'s/MB':>6}"
    print("Exact sentence match rate (decoded span == sentence, whitespace-stripped), SmolLM2")
    print(head)
    print("-" * len(head))
    for name, docs in sets.items():
        row = evaluate(docs, tok)
        line = f"{name:28} {row['docs']:>5} {row['sentences']:>6} {row['MB']:>5.2f}"
        line += f" {100 * row['possible']:>7.2f}%"
        for m in METHODS:
            rate, spm = row[m]
            line += f" | {100 * rate:>16.2f}% {spm:>6.2f}"
        print(line, flush=True)
    print("possible: sentences not cut through a token (the best any token span can do)")
    print("paper (EASY, LongBench, Llama2/3/Mistral tokenizers): 93.7% on average")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
