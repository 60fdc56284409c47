"""Speed of ``longctx.tokens.count_tokens`` and its ratio to SmolLM2's own tokenizer.

Prints, for Gutenberg books (``../shared/data/gutenberg``) and the test samples of 27 languages:
characters per second (cold: the piece cache empty; warm: counted again; per sentence: the way
MixPR and Diversity count units), and ``count_tokens / SmolLM2 count`` (1.000 where it is exact).
Also times sentence splitting on the punctuation patterns that were quadratic (issue 28).

Run: ``PYTHONPATH=. python benchmarks/bench_tokens.py [--data ../shared/data] [--books 6]``.
About a minute on one CPU core.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import longctx.tokens as tokens  # noqa: E402
from longctx.text import split_sentences  # noqa: E402


def _rate(fn, text: str) -> float:
    t0 = time.perf_counter()
    fn(text)
    return len(text) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--books", type=int, default=6, help="Gutenberg books to count")
    args = ap.parse_args()

    real = None
    try:
        from longctx.models import load_tokenizer

        tok = load_tokenizer(None)
        real = tokens.hf_token_counter(tok)
    except Exception as exc:  # noqa: BLE001 - the ratio column is optional
        print(f"SmolLM2's tokenizer unavailable ({type(exc).__name__}): no ratios")

    t0 = time.perf_counter()
    tokens._merges()
    print(f"merge table read in {time.perf_counter() - t0:.2f} s")

    books = sorted((Path(args.data) / "gutenberg").glob("*.txt"))[: args.books]
    print(
        f"{'book':<14}{'chars':>10}{'cold Mc/s':>11}{'warm Mc/s':>11}{'sent Mc/s':>11}{'ratio':>8}"
    )
    for path in books:
        text = path.read_text(encoding="utf-8-sig")
        tokens._PIECE_COUNTS.clear()
        cold = _rate(tokens.count_tokens, text)
        warm = _rate(tokens.count_tokens, text)
        sents = [text[a:b] for a, b in split_sentences(text[:500_000])]
        t0 = time.perf_counter()
        for s in sents:
            tokens.count_tokens(s)
        per_sent = sum(map(len, sents)) / (time.perf_counter() - t0)
        ratio = f"{tokens.count_tokens(text) / real(text):.3f}" if real else "-"
        print(
            f"{path.name:<14}{len(text):>10,}{cold / 1e6:>11.2f}{warm / 1e6:>11.2f}"
            f"{per_sent / 1e6:>11.2f}{ratio:>8}"
        )

    from tests._intl_texts import JA, LANGS, TH, ZH

    samples = {**LANGS, "zh": ZH, "ja": JA, "th": TH}
    if real:
        print("languages (count_tokens / SmolLM2):")
        print(
            "  "
            + ", ".join(f"{k} {tokens.count_tokens(t) / real(t):.2f}" for k, t in samples.items())
        )
    for name, text in [("Chinese x300", ZH * 300), ("Thai x300", TH * 300)]:
        tokens._PIECE_COUNTS.clear()
        print(f"{name}: {_rate(tokens.count_tokens, text) / 1e6:.2f} M chars/s cold")

    print("sentence splitting, seconds for 200k / 800k characters:")
    for pattern in ['."', ".)", ".]", ".'", "!)", "!!!!!!!!a", "..", "猫。"]:
        row = []
        for n in (200_000, 800_000):
            text = (pattern * (n // len(pattern) + 1))[:n]
            t0 = time.perf_counter()
            split_sentences(text)
            row.append(time.perf_counter() - t0)
        print(f"  {pattern!r:<14}{row[0]:6.2f}{row[1]:7.2f}  (x{row[1] / row[0]:.1f})")


if __name__ == "__main__":
    main()
