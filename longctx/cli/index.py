"""``longctx index PATH --out DIR``: build (or resume) a GARLIC HWDAG and print its shape.

Graph: Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical
Weighted Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from longctx.io import InputError, read_text_file


def add_parser(sub, positive_int) -> None:
    """Register the ``index`` subcommand on ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "index",
        help="build a GARLIC summary graph (HWDAG) of text files",
        description="Build GARLIC's hierarchical weighted summary graph of one or more UTF-8 "
        "text files (one document each) into DIR, resuming an interrupted build there.",
    )
    p.add_argument("path", nargs="+", help="UTF-8 text file(s), one document each")
    p.add_argument("--out", required=True, help="graph directory (checkpoint while building)")
    p.add_argument("--model", help="local path or cached name of a chat LM (default: SmolLM2)")
    p.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    p.add_argument("--chunk-tokens", type=positive_int("--chunk-tokens"), default=300)
    p.add_argument(
        "--batch-tokens",
        type=positive_int("--batch-tokens"),
        default=6000,
        help="node tokens per summarization batch (default 6000, for an 8k window)",
    )
    p.add_argument(
        "--max-new-tokens",
        type=positive_int("--max-new-tokens"),
        default=1024,
        help="generation limit per batch (default 1024)",
    )
    p.add_argument("--max-levels", type=positive_int("--max-levels"), default=10)
    p.add_argument(
        "--batch-size",
        type=int,
        help="summarization prompts decoded together per forward pass (default: 8 on CPU, 32 "
        "on CUDA; lower it if memory runs short)",
    )
    p.add_argument(
        "--bullets",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="force every summary line to start with '* ' (the paper's format); --no-bullets "
        "lets the model write freely",
    )
    p.add_argument("--encoder", help="sentence-transformers model path (default: MiniLM)")
    p.add_argument("--no-embeddings", action="store_true", help="store no node embeddings")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--no-progress", action="store_true", help="never show a progress bar")


def _error(message: str) -> int:
    print(f"longctx: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    """Read the files, build the graph, print nodes per level, edges, tokens and seconds."""
    t0 = time.perf_counter()
    if args.max_levels < 2:
        return _error(f"--max-levels must be >= 2, got {args.max_levels}")
    if args.chunk_tokens > args.batch_tokens:
        return _error("--chunk-tokens must be <= --batch-tokens")
    try:
        texts = [read_text_file(p) for p in args.path]
    except InputError as exc:
        return _error(str(exc))
    except OSError as exc:
        return _error(f"cannot read PATH: {exc}")
    try:
        from longctx.garlic import build_hwdag
        from longctx.garlic.build import check_documents
        from longctx.models import load_causal_lm
        from longctx.persist import PersistError

        check_documents(texts)
        model, tokenizer = load_causal_lm(args.model, device=args.device)
        graph = build_hwdag(
            texts,
            model,
            tokenizer,
            out_dir=args.out,
            encoder=False if args.no_embeddings else args.encoder,
            chunk_tokens=args.chunk_tokens,
            batch_tokens=args.batch_tokens,
            max_new_tokens=args.max_new_tokens,
            max_levels=args.max_levels,
            batch_size=args.batch_size,
            force_bullets=args.bullets,
            progress=not args.no_progress and sys.stderr.isatty(),
        )
    except ModuleNotFoundError as exc:
        return _error(
            f"'longctx index' needs a missing package ({exc.name}): pip install 'longctx[all]'"
        )
    except (ValueError, TypeError, RuntimeError, PersistError, FileNotFoundError) as exc:
        return _error(str(exc))
    out = {
        "levels": [len(x) for x in graph.levels],
        "edges": int(graph.edges.nnz),
        "tokens_generated": int(graph.info.get("tokens_generated_this_run", 0)),
        "seconds": round(time.perf_counter() - t0, 3),
        "out": str(args.out),
    }
    if args.format == "json":
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for i, n in enumerate(out["levels"], 1):
            print(f"level {i}: {n} nodes")
        print(f"edges: {out['edges']}")
        print(f"tokens generated: {out['tokens_generated']}")
        print(f"seconds: {out['seconds']}")
        print(f"graph: {out['out']}")
    return 0
