"""``longctx retrieve PATH --query "..."``: read one text, run one method on it (its module of this
package: ``run(text, query, args)`` and ``score_units(text, query, args)``, see :data:`METHODS`),
optionally re-rank with ``--diversify``, print the passages."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import time
import traceback
from dataclasses import replace

from longctx.cli.console import _first_line, _setup_third_party
from longctx.cli.errors import CliError
from longctx.cli.parsing import BUDGET_UNIT, _add_output_options, _HelpFormatter, _positive_int
from longctx.explain import explanation_text
from longctx.io import MAX_FILE_BYTES, InputError, read_text_file, sample_text
from longctx.selection import BudgetTooSmallError, check_budget_fits
from longctx.types import Passage, SearchResult

# method name -> module implementing run(text, query, args) and score_units(text, query, args)
METHODS = {
    "mixpr": "longctx.cli.mixpr",
    "youra": "longctx.cli.youra",
    "mmr": "longctx.cli.diversity",
    "fps": "longctx.cli.diversity",
    "garlic": "longctx.cli.ask",
}

#: The methods ``--explain`` covers (every method; the others would raise NotImplementedError).
EXPLAINED = ("mixpr", "youra", "mmr", "fps", "garlic")

#: Default number of passages when neither ``--k`` nor ``--budget`` is given (the MixPR paper's).
DEFAULT_K = 100

#: Inputs at least this many characters long show a progress bar on an interactive stderr (per
#: method: a language model is far slower per character than TF-IDF). ``--progress`` forces it.
PROGRESS_MIN_CHARS = {"mixpr": 200_000, "youra": 10_000, "mmr": 50_000, "fps": 50_000, "garlic": 0}

#: What the character offsets of ``--format json`` count (also in docs/guide/offsets.md).
OFFSETS = (
    "characters of the decoded text, line endings kept (\\r\\n is 2 characters), BOM removed: "
    "open(path, encoding=<encoding>, newline='').read()[start:end] == text"
)

DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"

logger = logging.getLogger(__name__)


def _add_retrieve(sub) -> argparse.ArgumentParser:
    r = sub.add_parser(
        "retrieve",
        formatter_class=_HelpFormatter,
        help="select the passages of a long text that matter for a query",
        description="Select the passages of a long text that matter for a query, printed in\n"
        "document order with their character positions and scores.\n\n"
        "Offsets are characters of the text as decoded, with its line endings kept:\n"
        "  open(path, encoding=ENCODING, newline='').read()[start:end]\n"
        "gives a passage back (ENCODING is in the --format json output).",
        epilog="examples:\n"
        '  longctx retrieve book.txt -q "Who gave Alice the bottle?" --k 10\n'
        '  longctx retrieve book.txt -q "Who stole the tarts?" --method youra --budget 300\n'
        '  longctx retrieve --sample alice -q "Summarize the book" --budget 2000 --format json',
    )
    r.set_defaults(handler=_retrieve)
    g = r.add_argument_group("input")
    g.add_argument(
        "path",
        nargs="?",
        help="text file (UTF-8, or another encoding detected and named on stderr); "
        "default: none, give PATH or --sample",
    )
    g.add_argument(
        "--sample", choices=["alice"], help="use a bundled public-domain text (default: none)"
    )
    g.add_argument(
        "--max-bytes",
        type=_positive_int("--max-bytes"),
        default=MAX_FILE_BYTES,
        help="refuse a PATH larger than this many bytes (default: 200 MiB)",
    )
    g.add_argument(
        "--query", "-q", required=True, help="the question (or task) to retrieve for (required)"
    )
    g.add_argument(
        "--method",
        "-m",
        choices=sorted(set(METHODS)),
        default="mixpr",
        help="mixpr: TF-IDF graph + PageRank; youra: a small LM's attention reaction; mmr/fps: "
        "sentence embeddings, diverse selection",
    )
    g = r.add_argument_group("size of the selection (one of)")
    size = g.add_mutually_exclusive_group()
    size.add_argument(
        "--k",
        "-k",
        type=_positive_int("--k"),
        help=f"number of passages (default: {DEFAULT_K} when --budget is not given)",
    )
    size.add_argument(
        "--budget",
        type=_positive_int("--budget"),
        help="token budget for all selected passages together: the model's tokens for youra, "
        "otherwise SmolLM2's tokens, counted without a model (longctx.tokens.count_tokens); "
        "default: none",
    )
    g = r.add_argument_group("format")
    g.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text: a line '[INDEX] chars START-END  score=S' then the passage; json: passages plus "
        "method, mode, budget, timings, encoding and the offsets convention",
    )
    g.add_argument(
        "--explain",
        action="store_true",
        help="say why each passage was retrieved (text: a 'why:' line; json: each passage's "
        "'explanation'): the share of its score from the question's own match and from the "
        "walk, the terms and passages that carried it, the multi-hop paths (mixpr); the "
        "window and the attention before and after the question (youra); the redundancy "
        "penalty and the pick it was measured against (mmr, fps); the visited node each chunk "
        "was reached from, its path from the top level and where the search stopped (garlic)",
    )
    g = r.add_argument_group("mixpr options")
    g.add_argument(
        "--mode",
        choices=["auto", "local", "global"],
        default="auto",
        help="local: personalized PageRank from the query; global: PageRank; auto: the router "
        "decides per query",
    )
    g.add_argument(
        "--max-words",
        type=_positive_int("--max-words"),
        default=None,
        help="most words per chunk, N of the MixPR paper: 32 (default: the preset's, 64)",
    )
    g.add_argument(
        "--walk",
        choices=["auto", "pagerank", "multihop"],
        default=None,
        help="(default: auto) multihop: after the local score, a walk over the chunks and the capitalised names "
        "they share (multi-hop questions; MixPRConfig walk=, preset 'multihop'); auto: the "
        "multi-hop walk for a corpus of passages and a question naming one of its phrases, else "
        "pagerank (one text file is one document: pagerank)",
    )
    g = r.add_argument_group("youra options")
    g.add_argument(
        "--model",
        help=f"local path or cached Hugging Face name of a causal LM (default: {DEFAULT_MODEL_NAME}, "
        "bundled); nothing is downloaded",
    )
    g.add_argument(
        "--device", help="torch device, also for mmr/fps (default: cuda if available, else cpu)"
    )
    g.add_argument(
        "--preset",
        choices=["default", "paper"],
        default="default",
        help="youra settings: 'default' (instruction baseline, ratios comparable across windows, "
        "all layers) or 'paper' (eq. 1 as written, last layer)",
    )
    g.add_argument(
        "--baseline",
        choices=["instruction", "paper"],
        help="reaction baseline (default: the preset's): 'instruction' is the authors' released "
        "code (an instruction suffix; recalls better with small models), 'paper' is eq. 1",
    )
    g.add_argument(
        "--layers",
        choices=["last", "all"],
        help="attention layers whose reactions are averaged (default: the preset's)",
    )
    g.add_argument(
        "--max-window",
        type=_positive_int("--max-window"),
        help="model tokens per scoring window (default: the model's window); smaller is faster "
        "on CPU",
    )
    g.add_argument(
        "--dtype",
        choices=["bfloat16", "float32", "float16"],
        help="youra model dtype (default float32 on CPU, bfloat16 on CUDA; bfloat16 gives the "
        "same sentence ranks, see docs/notes/youra-speed.md)",
    )
    g = r.add_argument_group("mmr / fps options (and --diversify)")
    g.add_argument(
        "--lambda",
        dest="lambda_",
        metavar="LAMBDA",
        type=float,
        default=0.5,
        help="weight of relevance against diversity, in [0, 1]",
    )
    g.add_argument(
        "--window",
        type=_positive_int("--window"),
        help="MMR: compare only with the last N selected units (default: all of them)",
    )
    g.add_argument(
        "--diversify",
        action="store_true",
        help="mixpr/youra: re-select the method's scored units with MMR (its scores as rewards)",
    )
    from longctx.cli.ask import add_search_args

    add_search_args(r, _positive_int, graph=True)
    _add_output_options(r)
    return r


# ------------------------------------------------------------------------------- retrieve
def _budget(args) -> dict:
    if args.budget is None:
        return {"k": args.k}
    unit = (
        f"tokens of {args.model or DEFAULT_MODEL_NAME}" if args.method == "youra" else BUDGET_UNIT
    )
    return {"token_budget": args.budget, "unit": unit}


def _as_result(out, args, seconds: float) -> SearchResult:
    """A method's return value (SearchResult, or a list of Passage) as a SearchResult with the
    method, budget and timings filled in."""
    if isinstance(out, SearchResult):
        stages = dict(out.timings)
        # the method's own stages time its search; the rest of the run built the index (and
        # loaded the model): without it the timings of a one-shot run sum to a fraction of it
        timings = (
            {"build": max(0.0, seconds - sum(stages.values())), **stages}
            if stages
            else {"retrieve": seconds}
        )
        return replace(
            out,
            timings=timings,
            # one wording of the budget's unit for every method (the core names its counter)
            budget=_budget(args) if args.budget is not None else dict(out.budget) or _budget(args),
        )
    hits = list(out)
    if not all(isinstance(h, Passage) for h in hits):
        raise TypeError(f"--method {args.method} returned {type(out).__name__}, not passages")
    mode = args.mode if args.method == "mixpr" and args.mode != "auto" else None
    if args.method in ("mmr", "fps"):
        mode = "query"
    return SearchResult(
        hits=tuple(sorted(hits, key=lambda p: (p.source, p.start))),
        method=args.method,
        mode=mode,
        timings={"retrieve": seconds},
        budget=_budget(args),
    )


def _from_model_loader(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while loading a model: in ``longctx.models``, the Hugging Face
    hub client, safetensors, or a loading function of transformers (not in a forward pass)."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename.replace("\\", "/")
        func = frame.f_code.co_name.lower()
        if (
            name.endswith("longctx/models.py")
            or "/huggingface_hub/" in name
            or "/safetensors/" in name
            or (
                "/transformers/" in name
                and any(w in func for w in ("pretrained", "load", "cached"))
            )
        ):
            return True
    return False


def _empty_selection(module, text: str, args) -> CliError:
    """The error for an empty selection: the budget is smaller than every unit, or (should not
    happen) nothing else was selected."""
    if args.budget is not None:
        _, _, counts = module.score_units(text, args.query, args)
        try:
            check_budget_fits(args.budget, counts)
        except ValueError as exc:
            return CliError(f"{exc}: give a larger --budget")
    return CliError(f"--method {args.method} selected no passage from the text")


def _run_method(module, text: str, args) -> SearchResult:
    t0 = time.perf_counter()
    if args.diversify:
        from longctx.cli.diversity import diversify_units

        spans, scores, token_counts = module.score_units(text, args.query, args)
        # a budget below every unit: BudgetTooSmallError from the re-ranker (_call_method)
        out = diversify_units(text, spans, scores, token_counts, args.query, args)
    else:
        out = module.run(text, args.query, args)
    result = _as_result(out, args, time.perf_counter() - t0)
    if not result.hits:
        if not text.strip():
            raise CliError("the text holds no words to retrieve from")
        raise _empty_selection(module, text, args)
    return result


def _call_method(module, text: str, args) -> SearchResult:
    """``_run_method`` with every failure turned into a one-line :class:`CliError`."""
    model_opt = f"--model {args.model or DEFAULT_MODEL_NAME}"
    try:
        return _run_method(module, text, args)
    except CliError:
        raise
    except BudgetTooSmallError as exc:
        raise CliError(f"{exc}: give a larger --budget") from None
    except ModuleNotFoundError as exc:
        raise CliError(
            f"--method {args.method} needs a missing package ({exc.name}): "
            "pip install 'longctx-rag[all]'"
        ) from exc
    except (OSError, ImportError, ValueError, RuntimeError, TypeError) as exc:
        if args.verbose:
            traceback.print_exc()
        msg = _first_line(str(exc)) or type(exc).__name__
        if args.method == "youra" and (
            isinstance(exc, (OSError, ImportError)) or _from_model_loader(exc)
        ):
            raise CliError(f"cannot load {model_opt}: {msg}") from exc
        raise CliError(msg) from exc
    except NotImplementedError as exc:
        raise CliError(f"--method {args.method}: not implemented: {exc}") from exc


def _print_result(result: SearchResult, args, text: str, encoding: str) -> None:
    if args.format == "json":
        out = {
            "method": result.method,
            "mode": result.mode,
            "query": args.query,
            "source": args.path if args.path else f"sample:{args.sample}",
            "encoding": encoding,
            "n_chars": len(text),
            "offsets": OFFSETS,
            "budget": dict(result.budget),
            "diversify": bool(args.diversify),
            "timings": {k: round(float(v), 6) for k, v in result.timings.items()},
            "passages": [p.to_dict() for p in result.hits],
        }
        if result.info:
            out["info"] = dict(result.info)
        # strict JSON (no NaN / Infinity), written once it is whole
        sys.stdout.write(
            json.dumps(out, ensure_ascii=False, indent=1, default=str, allow_nan=False) + "\n"
        )
        return
    for p in result.hits:
        print(f"[{p.index}] chars {p.start}-{p.end}  score={p.score:.6g}")
        if p.explanation is not None:
            print(f"why: {explanation_text(p.explanation)}")
        print(p.text)
        print()


def _check_retrieve_args(args) -> None:
    """Argument checks that need no file and no model (before any heavy work)."""
    if not args.query.strip():
        raise CliError("--query must not be empty")
    if (args.path is None) == (args.sample is None):
        raise CliError("give exactly one of PATH and --sample")
    if not 0.0 <= args.lambda_ <= 1.0:
        raise CliError(f"--lambda must be in [0, 1], got {args.lambda_}")
    if args.walk is not None and args.method != "mixpr":
        raise CliError(f"--walk applies to --method mixpr only, not --method {args.method}")
    youra_only = [
        flag
        for flag, given in (
            ("--preset", args.preset != "default"),
            ("--baseline", args.baseline is not None),
            ("--layers", args.layers is not None),
        )
        if given
    ]
    if youra_only and args.method != "youra":
        hint = (
            " (MixPR's presets: `longctx index PATH --method mixpr --preset NAME`, then "
            "`longctx search`)"
            if args.method == "mixpr" and "--preset" in youra_only
            else ""
        )
        raise CliError(
            f"{', '.join(youra_only)} applies to --method youra only, not --method "
            f"{args.method}{hint}"
        )
    if getattr(args, "explain", False) and args.method not in EXPLAINED:
        raise CliError(
            f"--explain is not implemented for --method {args.method} yet (it is for "
            f"{', '.join(EXPLAINED)})"
        )
    if getattr(args, "explain", False) and args.diversify:
        raise CliError("--explain explains a method's own selection: leave out --diversify")
    if args.diversify and args.method in ("mmr", "fps"):
        raise CliError(
            f"--diversify applies to --method mixpr or youra; --method {args.method} already "
            "selects for diversity (tune it with --lambda and --window)"
        )


def _read_input(args) -> tuple[str, str]:
    if args.sample:
        return sample_text(args.sample), "utf-8-sig"
    try:
        text, encoding = read_text_file(args.path, return_encoding=True, max_bytes=args.max_bytes)
    except InputError as exc:
        if os.path.isdir(args.path):  # a folder: say how to index it
            raise InputError(
                f"{exc}: to search a folder of files, build a corpus once "
                f"('longctx index {args.path} --method mixpr --out corpus') and search it "
                "('longctx search corpus -q ...')"
            ) from None
        raise
    except OSError as exc:
        raise CliError(f"cannot read PATH: {exc}") from None
    if encoding not in ("utf-8", "utf-8-sig") and not args.quiet:
        print(f"longctx: note: read {args.path} as {encoding}", file=sys.stderr)
    return text, encoding


def _retrieve(args) -> int:
    _check_retrieve_args(args)
    t0 = time.perf_counter()
    try:
        text, encoding = _read_input(args)
    except InputError as exc:
        raise CliError(str(exc)) from None
    read_s = time.perf_counter() - t0
    if args.progress is None:
        args.progress = (
            not args.quiet and sys.stderr.isatty() and len(text) >= PROGRESS_MIN_CHARS[args.method]
        )
    args.progress = bool(args.progress)
    args.no_progress = not args.progress  # the name earlier method modules read
    if args.k is None and args.budget is None:
        args.k = DEFAULT_K
    t1 = time.perf_counter()
    _setup_third_party(args)
    try:
        module = importlib.import_module(METHODS[args.method])
    except ModuleNotFoundError as exc:
        raise CliError(
            f"--method {args.method} needs a missing package ({exc.name}): "
            "pip install 'longctx-rag[all]'"
        ) from None
    import_s = time.perf_counter() - t1
    result = _call_method(module, text, args)
    timings = {"read": read_s, "import": import_s, **result.timings}
    result = replace(result, timings={**timings, "total": time.perf_counter() - t0})
    if result.mode == "global-fallback" and not args.quiet:
        print(
            "longctx: note: no chunk is similar enough to the query, so passages are ranked by "
            "PageRank alone (mode global-fallback); ask with words that occur in the text",
            file=sys.stderr,
        )
    logger.info(
        "%s (mode %s): %d passages in %.2f s",
        result.method,
        result.mode or "n/a",
        len(result.hits),
        result.timings["total"],
    )
    _print_result(result, args, text, encoding)
    return 0
