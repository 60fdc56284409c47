"""YOURA on two long inputs of issue 13, paper preset against the default.

- War and Peace, first 100,000 characters, "Why is Prince Andrew going to the war?": the rank of
  the answer sentence ("... I am going because the life I am leading here does not suit me!",
  around character 61.9k), and for ``k=100`` the largest ratio of a window's share of the picks to
  its share of the tokens (and that window's number; the answer's window is given too);
- Alice (``longctx retrieve --sample alice``), "What did the Mock Turtle sing about?": how many of
  the ``k=10`` (the CLI's default) picks lie in the Project Gutenberg licence footer, and the
  picks themselves. ``--alice-tail N`` scores only the last N characters (the song and the
  footer): windows are scored on their own, so footer sentences outside the top 10 there stay
  outside it when the rest of the book adds competitors (up to where the windows are cut).

Usage::

    PYTHONPATH=. python benchmarks/studies/youra_long_checks.py --max-window 2048 --presets default paper
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
WP_QUESTION = "Why is Prince Andrew going to the war?"
WP_ANSWER = "the life I am leading here does not suit"
ALICE_QUESTION = "What did the Mock Turtle sing about?"


def war_and_peace(scorer) -> None:
    from longctx.youra import YouraIndex

    text = (DATA / "gutenberg" / "2600-0.txt").read_text(encoding="utf-8-sig")[:100_000]
    t = time.perf_counter()
    index = YouraIndex.from_texts(text, scorer)
    scores, _ = index.score_units(WP_QUESTION)
    spans, counts = index.units(0)
    gold = next(i for i, (a, b) in enumerate(spans) if WP_ANSWER in text[a:b])
    rank = 1 + int(np.sum(scores > scores[gold]))
    lay = index._layouts[0]
    hits = index.search(WP_QUESTION, k=100).hits
    starts = np.asarray([lay.token_spans[h.index][0] for h in hits])
    picked = np.asarray([counts[h.index] for h in hits])
    ratios = []
    for t0, t1 in lay.windows:
        inside = (starts >= t0) & (starts < t1)
        ratios.append((picked[inside].sum() / picked.sum()) / ((t1 - t0) / len(lay.ids)))
    gold_window = next(
        w for w, (t0, t1) in enumerate(lay.windows) if t0 <= lay.token_spans[gold][0] < t1
    )
    top = sorted(np.argsort(-scores, kind="stable")[:5].tolist())
    print(
        f"War and Peace 100k chars, {scorer.preset}: answer sentence (char {spans[gold][0]}) "
        f"rank {rank} of {len(spans)}; k=100 pick share / text share per window "
        f"{np.round(ratios, 2).tolist()} (answer in window {gold_window}); top 5 at chars "
        f"{[spans[i][0] for i in top]}; {time.perf_counter() - t:.0f} s",
        flush=True,
    )


def alice(scorer, tail: int = 0) -> None:
    from longctx.io import sample_text
    from longctx.youra import DEFAULT_K, YouraIndex

    text = sample_text("alice")
    if tail:  # the last `tail` characters (the story's end, the song, the footer), from a line
        text = text[text.index("\n", len(text) - tail) + 1 :]
    footer = text.index("End of Project Gutenberg")
    t = time.perf_counter()
    hits = YouraIndex.from_texts(text, scorer).search(ALICE_QUESTION, k=DEFAULT_K).hits
    n_footer = sum(h.start >= footer for h in hits)
    print(
        f"Alice{f' (last {tail} chars)' if tail else ''}, {scorer.preset}: {n_footer} of "
        f"{len(hits)} picks in the licence footer (from char {footer}); "
        f"{time.perf_counter() - t:.0f} s",
        flush=True,
    )
    for h in hits:
        print(f"    {h.start:>7} {h.score:.3g} {' '.join(h.text.split())[:110]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--max-window", type=int, default=None)
    p.add_argument("--presets", nargs="+", default=["default", "paper"])
    p.add_argument("--only", choices=["wp", "alice"], default=None)
    p.add_argument(
        "--alice-tail", type=int, default=0, help="Alice: only the last N characters (faster)"
    )
    args = p.parse_args(argv)

    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer

    model, tok = load_causal_lm(device="cpu")
    for preset in args.presets:
        scorer = ReactionScorer(model, tok, preset=preset, max_window=args.max_window)
        if args.only in (None, "wp"):
            war_and_peace(scorer)
        if args.only in (None, "alice"):
            alice(scorer, args.alice_tail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
