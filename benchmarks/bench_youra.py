"""YOURA cost against a plain forward pass of the same model over the same tokens.

For each size N (tokens of Alice in Wonderland, the bundled sample; repeated if needed) and in a
fresh subprocess (so peak memory is per size), it measures:

- ``forward``: a plain forward pass of the model over the N tokens (``logits_to_keep=1``, KV cache
  kept, windows of the same size as YOURA's when N exceeds the model window),
- ``youra``: ``ReactionScorer.score_sentences`` for a first query (context pass with attention
  statistics + query pass, sentence split and alignment included),
- ``2nd query``: the same document with another query (cached KV: only the query tokens run;
  best of 3 queries),

with the peak resident memory (VmRSS sampled every 20 ms in a thread; on CUDA also
``torch.cuda.max_memory_allocated``) of each phase, in GB.

Targets (issue 3): youra <= 1.5x forward; memory linear in N (8k under 4 GB); 2nd query < 10%
of the first.

``--eviction`` (issue 8): a :class:`longctx.YouraIndex` over the first ``--chars`` characters of
War and Peace (``/work/shared/data/gutenberg/2600-0.txt``, from its first chapter) with
``--max-window`` tokens a pass and a window cache budget ``--cache-mb`` small enough to force
evictions: seconds and peak RSS of the build, a first and a second query (the second reuses what
the budget kept and recomputes the rest), the cache counters, and an extrapolation to the whole
book (not run: about 40 minutes of CPU a query here).

Measured (2026-11-23, SmolLM2 float32 on the 2 shared CPU cores, load average 10-14 from other
jobs; ``/usr/bin/time -v``: 556 s user time in all, maximum resident set 1.65 GB)::

    War and Peace, first 150,000 characters from CHAPTER I: 39,578 SmolLM2 tokens, 27 windows
    (max_window=2048), cache_bytes=300 MiB, cache_dtype=None, baseline=instruction
    RSS after loading the model: 0.47 GB
    phase                             seconds peak RSS GB  cache (this query)
    build (tokenize, align, layout)       0.5        0.48
    query 1                             978.5        1.69  hits 0, misses 27 of 27 windows
    query 2                             413.5        1.63  hits 5, misses 22 of 27 windows
    cache: 4 windows, 266 MiB used, peak 294 MiB <= budget 300 MiB, 45 evictions

Extrapolated (not run) to the whole book (x21.5: ~581 windows): peak RSS = this run's 1.65 GB
- 0.29 GB of cache + the default 2 GiB budget = about 3.5 GB (tokens and spans add ~0.05 GB);
time about 11 s of CPU a window (556 s / 49 context passes), so ~1.8 h of CPU, ~55 min on two
free cores, for a query that recomputes every window (a 2 GiB float32 budget keeps ~30 of the
~581 windows; each later query reuses those).

``--bf16-effect``: how storing the cached keys/values in bfloat16 (``cache_dtype="bfloat16"``)
changes SmolLM2's scores against a float32 cache, on ``--chars`` characters of War and Peace and
five questions: relative error of the reaction vector, Spearman correlation of the sentence scores
and overlap of the top-10 sentences. Measured (SmolLM2 float32, 8,000 characters = 2,186 tokens,
``--max-window 1024``, two questions before the 10-minute limit of a loaded machine): relative
error 0.0039 and 0.0074, Spearman 1.0000, top-10 overlap 10/10.

Usage::

    PYTHONPATH=. python benchmarks/bench_youra.py --sizes 2048 8192
    PYTHONPATH=. python benchmarks/bench_youra.py --sizes 32768            # windows of ~7.6k
    PYTHONPATH=. python benchmarks/bench_youra.py --device cuda --dtype bfloat16
    PYTHONPATH=. python benchmarks/bench_youra.py --eviction --chars 150000 --max-window 2048 \
        --cache-mb 300
    PYTHONPATH=. python benchmarks/bench_youra.py --bf16-effect --chars 20000 --max-window 2048
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
Q1 = "What did the Mock Turtle sing about?"
QS = [
    "Who was the Queen of Hearts angry with?",
    "Why did Alice follow the White Rabbit?",
    "What did the Caterpillar smoke?",
]


class PeakRSS:
    """Peak VmRSS (bytes) while the block runs, sampled in a thread."""

    def __init__(self, interval=0.02):
        self.interval = interval
        self.peak = 0

    @staticmethod
    def rss() -> int:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            self._stop.wait(self.interval)

    def __enter__(self):
        self._stop = threading.Event()
        self.peak = self.rss()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.rss())


def _text_of_tokens(tokenizer, n_tokens: int) -> str:
    from longctx.io import sample_text

    base = sample_text("alice")
    text = base
    while len(tokenizer(text, add_special_tokens=False)["input_ids"]) < n_tokens:
        text = text + "\n\n" + base
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    end = enc["offset_mapping"][n_tokens - 1][1]
    return text[:end]


def run_one(size: int, device: str | None, dtype: str | None, layers: str, baseline: str) -> dict:
    import torch

    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer

    model, tok = load_causal_lm(device=device, dtype=dtype)
    dev = next(model.parameters()).device
    cuda = dev.type == "cuda"
    text = _text_of_tokens(tok, size)
    scorer = ReactionScorer(model, tok, layers=layers, baseline=baseline)
    ids, _, _ = scorer.encode_context(text)
    windows = list(scorer._layout(text).windows)
    base_rss = PeakRSS.rss()

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def phase(fn):
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        with PeakRSS() as peak:
            sync()
            t = time.perf_counter()
            fn()
            sync()
            dt = time.perf_counter() - t
        gpu = torch.cuda.max_memory_allocated() / 1e9 if cuda else None
        return dt, peak.peak / 1e9, gpu

    def plain():
        with torch.inference_mode():
            for a, b in windows:
                x = torch.tensor([ids[a:b]], device=dev)
                out = model(input_ids=x, use_cache=True, logits_to_keep=1)
                del out

    # warm-up on a short piece (kernels, allocator), not timed
    with torch.inference_mode():
        model(input_ids=torch.tensor([ids[:64]], device=dev), logits_to_keep=1)
    f_s, f_rss, f_gpu = phase(plain)
    y_s, y_rss, y_gpu = phase(lambda: scorer.score_sentences(text, Q1))
    # other queries on the cached document: best of 3 (small ops suffer most from CPU contention)
    seconds = [phase(lambda q=q: scorer.score_sentences(text, q)) for q in QS]
    s_s, s_rss = min(x[0] for x in seconds), max(x[1] for x in seconds)
    return {
        "tokens": len(ids),
        "windows": len(windows),
        "device": str(dev),
        "dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
        "threads": torch.get_num_threads(),
        "forward_s": f_s,
        "youra_s": y_s,
        "second_s": s_s,
        "base_rss_gb": base_rss / 1e9,
        "forward_rss_gb": f_rss,
        "youra_rss_gb": y_rss,
        "second_rss_gb": s_rss,
        "forward_gpu_gb": f_gpu,
        "youra_gpu_gb": y_gpu,
    }


WAR_AND_PEACE = Path("/work/shared/data/gutenberg/2600-0.txt")
WP_QUERIES = [
    "Who is Anna Pavlovna Scherer?",
    "What did Prince Andrew think of his wife?",
    "Where did Pierre go after the soiree?",
    "Who is Prince Vasili's son?",
    "What happened at the name-day party?",
]


def _war_and_peace(n_chars: int) -> tuple[str, int]:
    """The first ``n_chars`` characters of War and Peace from its first chapter, and the
    length of the whole book from there."""
    text = WAR_AND_PEACE.read_text(encoding="utf-8")
    start = text.index("CHAPTER I")
    return text[start : start + n_chars], len(text) - start


def _max_rss_gb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB on Linux


def run_eviction(args) -> int:
    import torch

    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer, YouraIndex

    model, tok = load_causal_lm(device=args.device, dtype=args.dtype)
    text, book_chars = _war_and_peace(args.chars)
    scorer = ReactionScorer(
        model,
        tok,
        max_window=args.max_window,
        cache_bytes=int(args.cache_mb * 2**20),
        cache_dtype=args.cache_dtype,
        show_progress=args.progress,
    )
    base = PeakRSS.rss() / 1e9
    with PeakRSS() as peak:
        t = time.perf_counter()
        index = YouraIndex.from_texts(text, scorer)
        build_s = time.perf_counter() - t
    n_tokens = sum(len(lay.ids) for lay in index._layouts)
    n_windows = sum(len(lay.windows) for lay in index._layouts)
    print(
        f"War and Peace, first {len(text):,} characters from CHAPTER I: {n_tokens:,} SmolLM2 "
        f"tokens, {n_windows} windows (max_window={args.max_window}), "
        f"dtype={next(model.parameters()).dtype}, threads={torch.get_num_threads()}, "
        f"cache_bytes={args.cache_mb} MiB, cache_dtype={args.cache_dtype}, "
        f"baseline={scorer.baseline}"
    )
    print(f"RSS after loading the model: {base:.2f} GB")
    print(f"{'phase':<32} {'seconds':>8} {'peak RSS GB':>11}  cache (this query)")
    print(f"{'build (tokenize, align, layout)':<32} {build_s:>8.1f} {peak.peak / 1e9:>11.2f}")
    first_s = None
    for name, q in (("query 1", WP_QUERIES[0]), ("query 2", WP_QUERIES[1])):
        with PeakRSS() as peak:
            t = time.perf_counter()
            res = index.search(q, k=10)
            dt = time.perf_counter() - t
        first_s = first_s or dt
        qi = res.info
        print(
            f"{name:<32} {dt:>8.1f} {peak.peak / 1e9:>11.2f}  hits {qi['cache_hits']}, misses "
            f"{qi['cache_misses']} of {qi['windows']} windows",
            flush=True,
        )
    info = scorer.cache_info()
    print(
        f"cache: {info['windows']} windows, {info['bytes'] / 2**20:.0f} MiB used, peak "
        f"{info['peak_bytes'] / 2**20:.0f} MiB <= budget {info['budget'] / 2**20:.0f} MiB, "
        f"{info['evictions']} evictions; ru_maxrss {_max_rss_gb():.2f} GB"
    )
    per_window = first_s / n_windows
    scale = book_chars / len(text)
    print(
        f"extrapolation (not run) to the whole book ({book_chars:,} characters, x{scale:.1f}): "
        f"~{n_windows * scale:.0f} windows, first query ~{per_window * n_windows * scale / 60:.0f}"
        f" min at {per_window:.1f} s a window; peak RSS ~ model + cache_bytes + one window's pass"
        f" (the cache never grows past its budget; tokens and spans add ~{scale * n_tokens * 60 / 1e9:.2f} GB)"
    )
    return 0


def run_bf16_effect(args) -> int:
    import numpy as np
    from scipy.stats import spearmanr

    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer

    model, tok = load_causal_lm(device=args.device, dtype=args.dtype)
    text, _ = _war_and_peace(args.chars)
    kw = dict(max_window=args.max_window)
    f32 = ReactionScorer(model, tok, **kw)
    b16 = ReactionScorer(model, tok, cache_dtype="bfloat16", **kw)
    f32.warm(text)
    b16.warm(text)
    print(
        f"War and Peace, {len(text):,} characters ({len(f32.encode_context(text)[0]):,} tokens), "
        f"SmolLM2 {next(model.parameters()).dtype}, baseline={f32.baseline}: bfloat16 against "
        f"float32 cached keys/values; cache bytes {b16.cache_info()['bytes'] / 2**20:.0f} MiB vs "
        f"{f32.cache_info()['bytes'] / 2**20:.0f} MiB"
    )
    print(f"{'query':<45} {'vec rel err':>11} {'spearman':>8} {'top-10':>6}")
    for q in WP_QUERIES:
        v32 = f32.reaction_vector(text, q).astype(np.float64)
        v16 = b16.reaction_vector(text, q).astype(np.float64)
        rel = np.linalg.norm(v16 - v32) / np.linalg.norm(v32)
        s32 = np.array([s.score for s in f32.score_sentences(text, q)])
        s16 = np.array([s.score for s in b16.score_sentences(text, q)])
        rho = spearmanr(s32, s16).statistic
        top = len(set(np.argsort(-s32)[:10]) & set(np.argsort(-s16)[:10]))
        print(f"{q:<45} {rel:>11.4f} {rho:>8.4f} {top:>4}/10")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 8192, 32768])
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default=None, help="float32 (CPU default) or bfloat16")
    p.add_argument("--layers", default="last")
    p.add_argument("--baseline", default="instruction", choices=["paper", "instruction"])
    p.add_argument("--eviction", action="store_true", help="the window cache budget run")
    p.add_argument("--bf16-effect", action="store_true", help="bfloat16 cache vs float32")
    p.add_argument("--chars", type=int, default=150_000, help="characters of War and Peace")
    p.add_argument("--max-window", type=int, default=2048)
    p.add_argument("--cache-mb", type=float, default=300.0, help="window cache budget, MiB")
    p.add_argument("--cache-dtype", default=None, choices=[None, "bfloat16"])
    p.add_argument("--progress", action="store_true")
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: run one size, print JSON
    args = p.parse_args(argv)
    if args.eviction:
        return run_eviction(args)
    if args.bf16_effect:
        return run_bf16_effect(args)
    if args.one:
        print(json.dumps(run_one(args.one, args.device, args.dtype, args.layers, args.baseline)))
        return 0
    rows = []
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--one", str(n), "--device", args.device]
        cmd += ["--layers", args.layers, "--baseline", args.baseline]
        if args.dtype:
            cmd += ["--dtype", args.dtype]
        env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if res.returncode != 0:
            print(res.stderr[-3000:], file=sys.stderr)
            return 1
        r = json.loads(res.stdout.strip().splitlines()[-1])
        rows.append(r)
        print(json.dumps(r), file=sys.stderr)
    r0 = rows[0]
    print(
        f"device={r0['device']} dtype={r0['dtype']} threads={r0['threads']} "
        f"layers={args.layers} baseline={args.baseline}"
    )
    hdr = (
        f"{'tokens':>7} {'win':>3} {'forward s':>9} {'youra s':>8} {'ratio':>5} "
        f"{'2nd q s':>7} {'2nd/1st':>7} {'RSS fwd GB':>10} {'RSS youra GB':>12} {'RSS base GB':>11}"
    )
    print(hdr)
    for r in rows:
        print(
            f"{r['tokens']:>7} {r['windows']:>3} {r['forward_s']:>9.2f} {r['youra_s']:>8.2f} "
            f"{r['youra_s'] / r['forward_s']:>5.2f} {r['second_s']:>7.2f} "
            f"{r['second_s'] / r['youra_s']:>7.1%} {r['forward_rss_gb']:>10.2f} "
            f"{r['youra_rss_gb']:>12.2f} {r['base_rss_gb']:>11.2f}"
        )
        if r["youra_gpu_gb"] is not None:
            print(
                f"        GPU peak GB: forward {r['forward_gpu_gb']:.2f}, youra {r['youra_gpu_gb']:.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
