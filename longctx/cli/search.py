"""``longctx search CORPUS -q "..." [--k N | --budget T] [--format json]``: one search over every document of a
corpus built by ``longctx index PATH... --method mixpr|diversity --out CORPUS``.

Through the public API only: :meth:`longctx.corpus.CorpusIndex.from_corpus` then
:meth:`~longctx.corpus.CorpusIndex.search`; each hit's ``source`` is its document's position in
``info["doc_ids"]``, printed as the document id.
"""

from __future__ import annotations

import json
import sys
import time

from longctx.cli.parsing import BUDGET_UNIT, _HelpFormatter

#: passages printed when neither ``--k`` nor ``--budget`` is given
DEFAULT_K = 10
#: the unit of ``--budget`` (a MixPR corpus counts its units' tokens with the default counter)


def add_parser(sub, positive_int, add_output_options) -> None:
    """Register the ``search`` subcommand on ``sub`` (an argparse subparsers object)."""
    s = sub.add_parser(
        "search",
        formatter_class=_HelpFormatter,
        help="search every document of a corpus built by 'longctx index --method'",
        description="Search a corpus built by 'longctx index PATH... --method mixpr|diversity\n"
        "--out CORPUS': every document's index answers the query, the best passages of all\n"
        "are printed in corpus order (document, then position), each with its document id.",
        epilog="examples:\n"
        "  longctx index books/ --method mixpr --out corpus\n"
        '  longctx search corpus -q "Who stole the tarts?" --k 5\n'
        '  longctx search corpus -q "Who stole the tarts?" --budget 500\n'
        '  longctx search s3://bucket/corpus -q "Who stole the tarts?" --format json',
    )
    s.add_argument("corpus", help="corpus folder or fsspec URL written by 'longctx index --method'")
    s.add_argument("--query", "-q", required=True, help="the question (or task) to search for")
    g = s.add_argument_group("size of the selection (one of)")
    size = g.add_mutually_exclusive_group()
    size.add_argument(
        "--k",
        "-k",
        type=positive_int("--k"),
        help=f"passages over the whole corpus (default: {DEFAULT_K} when --budget is not given)",
    )
    size.add_argument(
        "--budget",
        type=positive_int("--budget"),
        help="token budget for all selected passages together, SmolLM2's tokens counted without "
        "a model (longctx.tokens.count_tokens), as 'longctx retrieve'; a MixPR corpus (one index "
        "or shards) only; default: none",
    )
    s.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text: a line '[DOC_ID] chars START-END  score=S' then the passage; json: passages "
        "(with doc_id) plus method, mode, budget, doc_ids, timings (load, the search's stages, "
        "total) and trace "
        "(MixPR: the walk it chose and why)",
    )
    s.add_argument(
        "--explain",
        action="store_true",
        help="say why each passage was retrieved (text: a 'why:' line; json: each passage's "
        "'explanation'); a corpus built with --shards too",
    )
    s.add_argument(
        "--ray-address",
        help="a corpus built with --shards: search its shards in Ray actors on this cluster "
        "(default: in this process, no Ray started)",
    )
    s.add_argument(
        "--ray",
        action="store_true",
        help="a corpus built with --shards: search its shards in actors of a local Ray started "
        "for this search (seconds of start-up; worth it only for shards too big for one process)",
    )
    add_output_options(s)


def run(args) -> int:
    """Load the corpus, search it, print the passages (errors: :class:`longctx.cli.errors.CliError`)."""
    from longctx.cli.errors import CliError
    from longctx.persist import PersistError
    from longctx.selection import BudgetTooSmallError

    if not args.query.strip():
        raise CliError("--query must not be empty")
    t0 = time.perf_counter()
    try:
        from longctx.corpus import CorpusIndex

        use_ray = True if args.ray or args.ray_address else None
        index = CorpusIndex.from_corpus(
            args.corpus, ray_address=args.ray_address or None, use_ray=use_ray
        )
    except ModuleNotFoundError as exc:
        raise CliError(
            f"'longctx search' needs a missing package ({exc.name}): pip install 'longctx-rag[all]'"
        ) from None
    except PersistError as exc:
        raise CliError(f"cannot load the corpus: {exc}") from None
    except (ValueError, TypeError, OSError) as exc:
        raise CliError(f"cannot search the corpus at {args.corpus!r}: {exc}") from None
    t1 = time.perf_counter()
    budget = getattr(args, "budget", None)
    size = {"k": args.k or DEFAULT_K} if budget is None else {"token_budget": budget}
    try:
        if budget is not None and index.index is None:
            raise CliError(
                "--budget: a per-document corpus (--method diversity) selects by --k only; a "
                "MixPR corpus takes a token budget"
            )
        result = index.search(args.query, explain=bool(getattr(args, "explain", False)), **size)
    except BudgetTooSmallError as exc:
        raise CliError(f"{exc}: give a larger --budget") from None
    except (ValueError, TypeError, RuntimeError) as exc:
        raise CliError(str(exc)) from None
    except NotImplementedError as exc:
        raise CliError(f"--explain: {exc}") from None
    finally:
        index.close()
    t2 = time.perf_counter()
    doc_ids = list(result.info["doc_ids"])
    if not result.hits:
        raise CliError("no passage of the corpus was found for this query")
    timings = {"load": t1 - t0, **dict(result.timings), "total": t2 - t0}
    if args.format == "json":
        out = {
            "method": result.method,
            "mode": result.mode,
            "query": args.query,
            "corpus": str(args.corpus),
            "doc_ids": doc_ids,
            # as 'longctx retrieve': {"k": N} or {"token_budget": N, "unit": ...}
            "budget": _budget_out(size, result),
            "timings": {k: round(float(v), 6) for k, v in timings.items()},
            "trace": [dict(t) for t in result.trace],
            "passages": [{**p.to_dict(), "doc_id": doc_ids[p.source]} for p in result.hits],
        }
        # strict JSON (no NaN / Infinity), written once it is whole
        sys.stdout.write(
            json.dumps(out, ensure_ascii=False, indent=1, default=str, allow_nan=False) + "\n"
        )
        return 0
    for p in result.hits:
        print(f"[{doc_ids[p.source]}] chars {p.start}-{p.end}  score={p.score:.6g}")
        if p.explanation is not None:
            from longctx.explain import explanation_text

            print(f"why: {explanation_text(p.explanation)}")
        print(p.text)
        print()
    return 0


def _budget_out(size: dict, result) -> dict:
    """The JSON ``budget``, as ``longctx retrieve``'s: ``{"k": N}`` or ``{"token_budget": N,
    "unit": ...}`` (the default counter in retrieve's words; another one by the core's name)."""
    if "k" in size:
        return {"k": size["k"]}
    unit = result.budget.get("unit")
    return {**size, "unit": BUDGET_UNIT if unit in (None, "count_tokens") else str(unit)}
