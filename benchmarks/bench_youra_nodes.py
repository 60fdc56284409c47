"""YOURA as a postprocessor: seconds per query for 10 retrieved nodes of about 1,000 tokens.

The nodes are consecutive ~1,000-token pieces of War and Peace (cut at sentence ends); each
configuration scores them for one question with a fresh scorer (a postprocessor meets new nodes
on every query: every window is a cache miss), as ``YouraPostprocessor`` does through
:class:`longctx.YouraIndex`. Configurations (``--configs``): ``f32-b1`` (float32, one window a
pass: the behaviour before padded batches), ``f32`` (float32, padded batches: the CPU default
now), ``bf16`` (bfloat16, padded batches), ``bf16-b1``.
Wall seconds and CPU seconds (``time.process_time``, all threads) are printed with the load
average: on a shared machine CPU seconds are the steadier figure.

Usage::

    PYTHONPATH=. python benchmarks/bench_youra_nodes.py --configs f32-b1 f32 bf16
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

WAR_AND_PEACE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gutenberg"
QUESTION = "What did Prince Andrew think of his wife?"
CONFIGS = {
    "f32-b1": ("float32", 1),
    "f32": ("float32", None),
    "bf16": ("bfloat16", None),
    "bf16-b1": ("bfloat16", 1),
}


def nodes(tokenizer, n: int = 10, tokens: int = 1000) -> list[str]:
    """``n`` consecutive pieces of War and Peace of about ``tokens`` tokens, cut after a
    sentence end."""
    text = (WAR_AND_PEACE / "2600-0.txt").read_text(encoding="utf-8")
    text = text[text.index("\u201cWell, Prince, so Genoa") :]
    out, pos = [], 0
    while len(out) < n:
        piece = text[pos : pos + tokens * 6]
        ids = tokenizer(piece, add_special_tokens=False, return_offsets_mapping=True)
        cut = ids["offset_mapping"][min(tokens, len(ids["input_ids"])) - 1][1]
        end = max(piece.rfind(". ", 0, cut), piece.rfind(".\n", 0, cut))
        end = cut if end < cut // 2 else end + 1
        out.append(piece[:end].strip())
        pos += end
    return out


def main(argv=None) -> int:
    import torch

    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer, YouraIndex

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--configs", nargs="+", default=["f32-b1", "f32", "bf16"], choices=CONFIGS)
    p.add_argument("--nodes", type=int, default=10)
    p.add_argument("--tokens", type=int, default=1000)
    args = p.parse_args(argv)
    models = {}
    for name in args.configs:
        dt = CONFIGS[name][0]
        if dt not in models:
            models[dt] = load_causal_lm(device="cpu", dtype=dt)
    tok = next(iter(models.values()))[1]
    texts = nodes(tok, args.nodes, args.tokens)
    n_tok = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
    print(
        f"{len(texts)} nodes of War and Peace, {min(n_tok)}-{max(n_tok)} tokens "
        f"({sum(n_tok)} in all); question {QUESTION!r}; SmolLM2-135M-Instruct, default preset, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(f"{'config':<8} {'dtype':<9} {'batch':>5} {'passes':>6} {'wall s':>7} {'cpu s':>7}  load")
    for name in args.configs:
        dt, bs = CONFIGS[name]
        model, tok = models[dt]
        scorer = ReactionScorer(model, tok, batch_size=bs)
        index = YouraIndex.from_texts(texts, scorer)
        t, c = time.perf_counter(), time.process_time()
        _, info = index.score_units(QUESTION)
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        load = " ".join(open("/proc/loadavg").read().split()[:3])
        print(
            f"{name:<8} {dt:<9} {bs or scorer._batch_size:>5} {info['passes']:>6} {wall:>7.1f} "
            f"{cpu:>7.1f}  {load}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
