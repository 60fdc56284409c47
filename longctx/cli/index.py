"""``longctx index PATH --out DIR``: build (or resume) a GARLIC HWDAG and print its shape.

``longctx index PATH... --method garlic|diversity|mixpr --out URI [--workers N] [--ray-address
ADDR] [--gpus-per-worker G] [--shards N] [--whole-documents]``: a corpus (files, folders, globs,
JSONL), resumable (:func:`longctx.corpus.build_indexes`), with a progress bar over documents and
a summary line. A MixPR corpus is one index over every document, built in this process (with
``--shards N``, N shards searched as one); ``--whole-documents`` keeps every document (JSONL
record or file) one unit, as ``chunk=False`` in Python. Diversity and GARLIC corpora are one
index per document, built in parallel on Ray. Without ``--method`` the command keeps its first
meaning: one GARLIC graph over all the files, in ``--out``.

Graph: Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical
Weighted Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time

from longctx.cli.parsing import _add_quiet
from longctx.io import InputError, read_text_file


def add_parser(sub, positive_int) -> None:
    """Register the ``index`` subcommand on ``sub`` (an argparse subparsers object)."""
    p = sub.add_parser(
        "index",
        help="build GARLIC graphs, or a corpus searched by 'longctx search' (--method)",
        description="Without --method: build GARLIC's hierarchical weighted summary graph of one "
        "or more UTF-8 text files (one document each) into DIR, resuming an interrupted build "
        "there. With --method: build a corpus of documents (files, folders, globs, JSONL files "
        "with id/text fields) at --out (a folder or an fsspec URL), skipping documents already "
        "done there and removing those no longer in a folder, glob or JSONL file read again; "
        "a file that is not text is skipped with a warning. --method mixpr builds one index over every document in this process (no "
        "Ray; with --shards N, N shards searched as one); --method diversity|garlic builds one "
        "index per document, in parallel on Ray (a local Ray by default).",
        epilog="examples:\n"
        "  longctx index books/ --method mixpr --out corpus\n"
        "  longctx index passages.jsonl --method mixpr --preset multihop --whole-documents "
        "--out corpus-mh",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "path",
        nargs="+",
        help="UTF-8 text file(s), one document each (with --method also folders, globs, .jsonl)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="graph directory (checkpoint while building); with --method a corpus folder or "
        "fsspec URL (s3://..., gs://..., file://...; not memory://)",
    )
    p.add_argument(
        "--method",
        choices=["garlic", "diversity", "mixpr"],
        help="corpus build: mixpr (one index over every document, in this process), "
        "diversity or garlic (one index per document, on Ray)",
    )
    p.add_argument(
        "--workers", type=positive_int("--workers"), help="Ray workers (default: CPU count)"
    )
    p.add_argument("--ray-address", help="existing Ray cluster (default: a local Ray)")
    p.add_argument(
        "--gpus-per-worker",
        type=float,
        default=0.0,
        help="GPUs per Ray worker (garlic, diversity; default 0)",
    )
    p.add_argument("--sequential", action="store_true", help="build in this process, without Ray")
    p.add_argument(
        "--shards",
        type=positive_int("--shards"),
        help="--method mixpr: split the corpus into N shards searched as one index (each "
        "shard's build a Ray task when Ray is installed; 'longctx search' searches them in "
        "its own process, or on a Ray cluster with --ray-address)",
    )
    p.add_argument("--preset", help="MixPR preset (--method mixpr)")
    p.add_argument(
        "--whole-documents",
        "--no-chunk",
        dest="whole_documents",
        action="store_true",
        help="--method mixpr: keep every document (one JSONL record or one file) as one unit, "
        "returned whole, instead of cutting it into MixPR chunks (Python: chunk=False; the "
        "frameworks: chunk_documents=False / chunk_nodes=False). Use it for a corpus of short "
        "passages (a JSONL of 'title\\ntext' paragraphs), e.g. with --preset multihop",
    )
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
        "--prompt-lookup",
        type=int,
        help="most draft tokens per summary and decoding pass for prompt-lookup decoding "
        "(default 32, at most 63; 0 turns it off; the summaries are the same either way)",
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
    _add_quiet(p)
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="also print INFO log messages (the corpus build's decisions, Ray's start-up notices)",
    )


def _error(message: str) -> int:
    print(f"longctx: error: {message}", file=sys.stderr)
    return 2


def _corpus_options(args) -> dict:
    if args.method == "mixpr":
        opts = {"preset": args.preset} if args.preset else {}
        if args.whole_documents:
            opts["chunk"] = False
        return opts
    if args.preset:
        raise ValueError("--preset applies to --method mixpr only")
    if args.whole_documents:
        raise ValueError("--whole-documents applies to --method mixpr only")
    opts = {}
    if args.device:
        opts["device"] = args.device
    if args.method == "diversity":
        if args.encoder:
            opts["encoder"] = args.encoder
        return opts
    if args.model:
        opts["model"] = args.model
    opts["encoder"] = False if args.no_embeddings else args.encoder
    opts.update(
        chunk_tokens=args.chunk_tokens,
        batch_tokens=args.batch_tokens,
        max_new_tokens=args.max_new_tokens,
        max_levels=args.max_levels,
    )
    return opts


def run_corpus(args: argparse.Namespace) -> int:
    """``--method``: build the corpus, print a summary line (and the failed documents)."""
    from longctx.corpus import build_indexes
    from longctx.persist import PersistError

    if not 0 <= args.gpus_per_worker < float("inf"):  # NaN and inf fail both
        return _error(f"--gpus-per-worker must be a finite number >= 0, got {args.gpus_per_worker}")
    if "://" in args.out and args.out.split("://", 1)[0].lower().split("::")[-1] == "memory":
        return _error(
            f"--out {args.out!r} is an in-memory file system: the corpus would vanish when "
            "longctx exits; give a folder or a persistent URL (file://, s3://, gs://...)"
        )
    if args.shards is not None and args.method != "mixpr":
        return _error("--shards applies to --method mixpr only")
    shown = logging.getLogger("longctx.corpus.writers")
    level = shown.level
    if not getattr(args, "quiet", False):  # "this build waits for ...": shown without --verbose
        shown.setLevel(logging.INFO)
    try:
        result = build_indexes(
            args.path,
            args.method,
            args.out,
            workers=args.workers,
            ray_address=args.ray_address,
            gpus_per_worker=args.gpus_per_worker,
            use_ray=False if args.sequential else None,
            progress=not args.no_progress and sys.stderr.isatty(),
            shards=args.shards,
            **_corpus_options(args),
        )
    except InputError as exc:
        return _error(str(exc))
    except ModuleNotFoundError as exc:
        return _error(f"'longctx index' needs a missing package ({exc.name}): {exc}")
    except (ValueError, TypeError, PersistError, OSError) as exc:
        return _error(str(exc))
    finally:
        shown.setLevel(level)
    if not args.quiet:  # a note (counted by the core's walk of each folder), in both formats
        for passed in result.passed_over:
            print(f"longctx: note: {passed} (see the CLI guide: hidden files and links)",
                  file=sys.stderr)  # fmt: skip
    if args.format == "json":
        json.dump(
            {
                "built": list(result.built),
                "skipped": list(result.skipped),
                "removed": list(result.removed),
                "unreadable": list(result.unreadable),
                "passed_over": [
                    {
                        "folder": x.folder,
                        "hidden_files": x.hidden_files,
                        "hidden_folders": x.hidden_folders,
                        "folder_links": x.folder_links,
                    }
                    for x in result.passed_over
                ],
                "failed": list(result.failed),
                "errors": result.errors,
                "seconds": result.seconds,
                "backend": result.backend,
                "workers": result.workers,
                "out": result.out,
            },
            sys.stdout,
            indent=1,
        )
        sys.stdout.write("\n")
    else:
        for doc_id in result.failed:
            print(f"failed: {doc_id}: {result.errors[doc_id]}")
        if result.removed:
            print(f"removed (no longer in their folder or file): {_names(result.removed)}")
        print(result.summary())
        print(f"corpus: {result.out}")
    return 1 if result.failed else 0


def _names(ids, limit: int = 10) -> str:
    """``a, b, c`` (the first ``limit`` ids, then ``and N more``), for one line."""
    ids = list(ids)
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def run(args: argparse.Namespace) -> int:
    """Read the files, build the graph, print nodes per level, edges, tokens and seconds."""
    if getattr(args, "method", None):
        return run_corpus(args)
    folders = [p for p in args.path if os.path.isdir(p)]
    if folders:
        return _error(
            f"PATH {folders[0]!r} is a folder: a corpus of its files needs --method, e.g. "
            f"'longctx index {folders[0]} --method mixpr --out {args.out}' (one MixPR index over "
            "every file, searched by 'longctx search'; --method diversity|garlic: one index per "
            "file); without --method, index builds one GARLIC graph of text files"
        )
    for flag, value in (
        ("--workers", args.workers),
        ("--ray-address", args.ray_address),
        ("--preset", args.preset),
        ("--shards", args.shards),
        ("--whole-documents", args.whole_documents or None),
    ):
        if value is not None:
            return _error(f"{flag} needs --method (a corpus build)")
    if args.gpus_per_worker or args.sequential:
        return _error("--gpus-per-worker and --sequential need --method (a corpus build)")
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
            prompt_lookup_num_tokens=args.prompt_lookup,
            force_bullets=args.bullets,
            progress=not args.no_progress and sys.stderr.isatty(),
        )
    except ModuleNotFoundError as exc:
        return _error(
            f"'longctx index' needs a missing package ({exc.name}): pip install 'longctx-rag[all]'"
        )
    except (
        ValueError,
        TypeError,
        RuntimeError,
        PersistError,
        FileNotFoundError,
        FileExistsError,
    ) as exc:
        return _error(str(exc))
    out = {
        "levels": [len(x) for x in graph.levels],
        "edges": int(graph.edges.nnz),
        "tokens_generated": int(graph.info.get("tokens_generated_this_run", 0)),
        "seconds": round(time.perf_counter() - t0, 3),
        "out": str(args.out),
    }
    if args.format == "json":
        # strict JSON (no NaN / Infinity), written once it is whole
        sys.stdout.write(json.dumps(out, indent=1, allow_nan=False) + "\n")
    else:
        for i, n in enumerate(out["levels"], 1):
            print(f"level {i}: {n} nodes")
        print(f"edges: {out['edges']}")
        print(f"tokens generated: {out['tokens_generated']}")
        print(f"seconds: {out['seconds']}")
        print(f"graph: {out['out']}")
    return 0
