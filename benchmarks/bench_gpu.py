"""The GPU check: YOURA, GARLIC and the attention recorder on a Llama-3-8B-shaped model.

Nothing is downloaded: the model is a randomly initialized ``LlamaForCausalLM`` with the
Llama-3-8B configuration (``LlamaConfig(hidden_size=4096, intermediate_size=14336,
num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
max_position_embeddings=131072, rope_theta=500000)``) in bfloat16 with SDPA attention (YOURA and
GARLIC record their attention statistics on top of it, :mod:`longctx.attention`); the tokenizer
is a word-level one built in-process (``w0`` ... ``w{vocab-1}``, one token a word, a ChatML chat
template) and the texts are random words of it. Random weights do not change the cost of a pass.

It prints three tables:

- **YOURA**: the first query (:meth:`longctx.youra.ReactionScorer.score_sentences` on a fresh
  scorer: sentence split and alignment, context pass, suffix and query passes with attention
  statistics, all layers) against a plain forward pass (KV cache kept, ``logits_to_keep=1``) of
  the same number of tokens, at 8k, 32k and 128k tokens a pass: seconds, their ratio (target
  <= 1.2x) and peak GPU memory of each;
- **GARLIC**: the build's generated tokens/s (:func:`longctx.garlic.build_hwdag` over as many
  one-chunk documents as the batch holds) at batch 1, 8 and 32 (``batch_size=`` when
  ``build_hwdag`` takes it, else batch 1 only and a note), and for one search the tokens run
  against the final prompt's tokens;
- **recorder**: the overhead per recorded layer of :func:`longctx.attention.record_attention_stats`
  (all rows of a context pass recorded) against the same pass without it.

On CUDA it uses the 8B shape; elsewhere (or with ``--small``) a tiny Llama and short lengths, so
the script itself stays tested on CPU (``tests/test_bench_gpu.py``). Run it on a GPU machine::

    PYTHONPATH=. python benchmarks/bench_gpu.py            # CUDA: 8B shape, 8k/32k/128k
    PYTHONPATH=. python benchmarks/bench_gpu.py --small    # any device, seconds
    PYTHONPATH=. python benchmarks/bench_gpu.py --sizes 8192 32768 --batches 1 8
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
import traceback

LLAMA3_8B = dict(
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=128256,
    max_position_embeddings=131072,
    rope_theta=500000,
)
SMALL = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=4096,
    max_position_embeddings=4096,
    rope_theta=500000,
)
SPECIALS = ["[UNK]", "<|im_start|>", "<|im_end|>", ".", "?", ":", "*", ",", "Yes", "No"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def synthetic_tokenizer(vocab_size: int):
    """A fast word-level tokenizer of ``vocab_size`` ids: specials, punctuation, then words
    ``w<i>`` (one token each), with character offsets and a ChatML chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {s: i for i, s in enumerate(SPECIALS)}
    for i in range(len(SPECIALS), vocab_size):
        vocab[f"w{i}"] = i
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def synthetic_text(n_tokens: int, vocab_size: int, seed: int = 0, words: int = 19) -> str:
    """About ``n_tokens`` tokens of random words: sentences of ``words`` words and a period."""
    import random

    rng = random.Random(seed)
    out, n = [], 0
    while n + words + 1 <= max(n_tokens, words + 1):
        out.append(" ".join(f"w{rng.randrange(len(SPECIALS), vocab_size)}" for _ in range(words)))
        n += words + 1
    return ". ".join(out) + "."


def hash_encoder(texts):
    """A deterministic stand-in sentence encoder (64 dims, normalized; no model)."""
    import numpy as np

    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.split():
            out[i, hash(w) % 64] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def build_model(shape: dict, device, dtype):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**shape, tie_word_embeddings=False)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, dtype=dtype)
    return model.eval()


class _Timer:
    def __init__(self, device):
        import torch

        self.torch, self.cuda = torch, device.type == "cuda"

    def __enter__(self):
        if self.cuda:
            self.torch.cuda.synchronize()
            self.torch.cuda.empty_cache()
            self.torch.cuda.reset_peak_memory_stats()
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.torch.cuda.synchronize()
            self.peak = self.torch.cuda.max_memory_allocated() / 2**30
        else:
            self.peak = float("nan")
        self.seconds = time.perf_counter() - self.t


def youra_rows(model, tok, sizes, device) -> list[dict]:
    import torch

    from longctx.youra import ReactionScorer

    vocab = model.config.vocab_size
    rows = []
    q = "w11 w12 w13 w14 w15 w16 w17 w18 ?"
    for size in sizes:
        row = {"tokens": size}
        try:
            scorer = ReactionScorer(model, tok, max_window=size, max_query_tokens=32)
            text = synthetic_text(scorer._ctx_window - 20, vocab, seed=size)
            n_ctx = len(tok(text, add_special_tokens=False)["input_ids"])  # no layout yet
            n_all = n_ctx + len(scorer._suffix_ids) + len(scorer._query_ids(q))
            ids = torch.randint(len(SPECIALS), vocab, (1, n_all), device=device)
            with torch.inference_mode(), _Timer(device) as plain:
                model(input_ids=ids, use_cache=True, logits_to_keep=1)
            del ids
            with _Timer(device) as first:
                spans = scorer.score_sentences(text, q)
            assert len(scorer._layout(text).windows) == 1
            scorer.clear_cache()
            row.update(
                pass_tokens=n_all,
                sentences=len(spans),
                plain_s=plain.seconds,
                youra_s=first.seconds,
                ratio=first.seconds / plain.seconds,
                plain_gb=plain.peak,
                youra_gb=first.peak,
            )
        except Exception as exc:  # a row that cannot run (memory) is reported, not fatal
            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        rows.append(row)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


def recorder_rows(model, n_tokens: int, device) -> list[dict]:
    import torch

    from longctx.attention import record_attention_stats

    n_layers = model.config.num_hidden_layers
    ids = torch.randint(len(SPECIALS), model.config.vocab_size, (1, n_tokens), device=device)
    rows = []
    with torch.inference_mode():
        with _Timer(device) as plain:
            model(input_ids=ids, use_cache=False, logits_to_keep=1)
        for layers, n in (("all", n_layers), ("last", 1)):
            with record_attention_stats(model, layers) as rec, _Timer(device) as t:
                model(input_ids=ids, use_cache=False, logits_to_keep=1)
                rec.pop()
            rows.append(
                {
                    "layers": layers,
                    "tokens": n_tokens,
                    "plain_s": plain.seconds,
                    "recorded_s": t.seconds,
                    "per_layer_ms": 1000 * (t.seconds - plain.seconds) / n,
                    "per_layer_pct": 100 * (t.seconds - plain.seconds) / n / plain.seconds,
                }
            )
    return rows


def garlic_rows(model, tok, batches, chunk: int, max_new: int) -> tuple[list[dict], list[str]]:
    from longctx.garlic import GarlicSearcher, build_hwdag

    vocab = model.config.vocab_size
    params = inspect.signature(build_hwdag).parameters
    notes, rows = [], []
    if "batch_size" not in params:
        notes.append(
            "build_hwdag has no batch_size option in this checkout: batch 1 only (one sequence "
            "a forward pass)"
        )
        batches = [1]
    graph = None
    for b in batches:
        texts = [synthetic_text(chunk, vocab, seed=100 + i) for i in range(b)]
        kw = dict(chunk_tokens=chunk, batch_tokens=chunk, max_new_tokens=max_new, max_levels=2)
        if "batch_size" in params:
            kw["batch_size"] = b
        row = {"batch": b, "documents": b}
        try:
            t = time.perf_counter()
            g = build_hwdag(texts, model, tok, encoder=hash_encoder, **kw)
            secs = time.perf_counter() - t
            n = int(g.info["tokens_generated"])
            row.update(generated=n, seconds=secs, tokens_per_s=n / secs, ips=len(g.nodes) - b)
            if graph is None:
                graph = g
        except Exception as exc:
            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            if os.environ.get("BENCH_GPU_TRACE"):
                traceback.print_exc()
        rows.append(row)
    search = {}
    if graph is not None:
        try:
            s = GarlicSearcher(graph, model, tok, encoder=hash_encoder, max_new_tokens=8)
            t = time.perf_counter()
            res = s.search("w11 w12 w13 ?")
            search = {
                "seconds": time.perf_counter() - t,
                "tokens_run": int(res.info["tokens_run"]),
                "final_prompt_tokens": int(res.info["final_prompt_tokens"]),
                "steps": int(res.info.get("steps", 0)),
            }
        except Exception as exc:
            search = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return rows, notes, search


def _fmt(x, spec):
    return "n/a" if x is None or x != x else format(x, spec)


def main(argv=None) -> int:
    import torch

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--small", action="store_true", help="tiny model and short lengths (any device)")
    p.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    p.add_argument("--sizes", type=int, nargs="+", help="YOURA tokens a pass")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32], help="GARLIC batches")
    p.add_argument("--max-new-tokens", type=int, help="GARLIC tokens generated a sequence")
    p.add_argument("--recorder-tokens", type=int, help="tokens of the recorder's pass")
    p.add_argument("--skip", nargs="*", default=[], choices=["youra", "garlic", "recorder"])
    args = p.parse_args(argv)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    small = args.small or device.type != "cuda"
    shape = SMALL if small else LLAMA3_8B
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    sizes = args.sizes or ([256, 512, 1024] if small else [8192, 32768, 131072])
    max_new = args.max_new_tokens or (16 if small else 128)
    rec_tokens = args.recorder_tokens or (512 if small else 8192)
    chunk = 64 if small else 1000
    load = lambda: " ".join(open("/proc/loadavg").read().split()[:3])  # noqa: E731

    t = time.perf_counter()
    model = build_model(shape, device, dtype)
    tok = synthetic_tokenizer(shape["vocab_size"])
    with torch.inference_mode():  # warm-up (kernels, allocator) before any timing
        model(input_ids=torch.randint(len(SPECIALS), shape["vocab_size"], (1, 64), device=device))
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(
        f"bench_gpu: {'small (tiny Llama)' if small else 'Llama-3-8B shape'}, {dtype}, "
        f"{device} ({gpu}), random init in {time.perf_counter() - t:.1f} s; torch "
        f"{torch.__version__}; load average {load()}"
    )
    status = 0
    if "youra" not in args.skip:
        print("\nYOURA first query vs a plain forward pass of the same tokens (target <= 1.2x)")
        print(f"{'window':>8} {'tokens':>8} {'plain s':>8} {'youra s':>8} {'ratio':>6} "
              f"{'plain GB':>9} {'youra GB':>9}  sentences")  # fmt: skip
        for r in youra_rows(model, tok, sizes, device):
            if "error" in r:
                print(f"{r['tokens']:>8}  n/a: {r['error']}")  # fmt: skip
                status = 1
                continue
            print(
                f"{r['tokens']:>8} {r['pass_tokens']:>8} {r['plain_s']:>8.2f} {r['youra_s']:>8.2f} "
                f"{r['ratio']:>5.2f}x {_fmt(r['plain_gb'], '>9.1f')} {_fmt(r['youra_gb'], '>9.1f')}"
                f"  {r['sentences']}"
            )
    if "garlic" not in args.skip:
        rows, notes, search = garlic_rows(model, tok, args.batches, chunk, max_new)
        print(f"\nGARLIC build: generated tokens/s ({max_new} new tokens a sequence, one "
              f"{chunk}-token document a sequence)")  # fmt: skip
        print(f"{'batch':>6} {'generated':>10} {'seconds':>8} {'tokens/s':>9}")
        for r in rows:
            if "error" in r:
                print(f"{r['batch']:>6}  n/a: {r['error']}")
                status = 1
                continue
            print(
                f"{r['batch']:>6} {r['generated']:>10} {r['seconds']:>8.2f} "
                f"{r['tokens_per_s']:>9.1f}"
            )
        for n in notes:
            print(f"note: {n}")
        if "error" in search:
            print(f"GARLIC search: n/a: {search['error']}")
            status = 1
        elif search:
            print(
                f"GARLIC search: {search['tokens_run']} tokens run for a final prompt of "
                f"{search['final_prompt_tokens']} tokens "
                f"({search['tokens_run'] / max(1, search['final_prompt_tokens']):.2f}x), "
                f"{search['steps']} steps, {search['seconds']:.2f} s"
            )
    if "recorder" not in args.skip:
        print(f"\nattention recorder: overhead per recorded layer ({rec_tokens} tokens, all rows)")
        print(f"{'layers':>6} {'plain s':>8} {'recorded s':>11} {'ms/layer':>9} {'%/layer':>8}")
        for r in recorder_rows(model, rec_tokens, device):
            print(
                f"{r['layers']:>6} {r['plain_s']:>8.3f} {r['recorded_s']:>11.3f} "
                f"{r['per_layer_ms']:>9.2f} {r['per_layer_pct']:>7.2f}%"
            )
    print(f"\nload average at end: {load()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
