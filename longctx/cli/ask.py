"""``longctx ask PATH --graph DIR -q "..."`` and ``longctx retrieve PATH --method garlic --graph DIR``.

GARLIC Dynamic Graph Search (Wang, Xiang, Gui, He, 2024, arXiv:2410.04790, sec. 3.2) over a graph
built by ``longctx index PATH --out DIR``: ``ask`` prints the answer (second turn) and the trace;
``retrieve`` prints the visited level-1 chunks.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache

from longctx.cli.parsing import _add_quiet
from longctx.types import Passage


def add_parser(sub, positive_int) -> None:
    """Add the ``ask`` subcommand to the ``longctx`` parser's subparsers."""
    a = sub.add_parser(
        "ask",
        help="answer a question with GARLIC's graph search over a graph built by 'longctx index'",
        description="Search a GARLIC graph (built by 'longctx index PATH --out DIR') for a "
        "question: the model reads nodes until it says the question can be answered, then "
        "answers. Prints the answer and the trace of the search.",
    )
    a.add_argument("path", help="the UTF-8 text file the graph was built from")
    a.add_argument("--graph", required=True, help="graph directory written by 'longctx index'")
    a.add_argument("--query", "-q", required=True, help="the question")
    a.add_argument("--format", choices=["text", "json"], default="text")
    _add_quiet(a)
    add_search_args(a, positive_int)


def add_search_args(p, positive_int, *, graph: bool = False) -> None:
    g = p.add_argument_group("garlic") if hasattr(p, "add_argument_group") else p
    if graph:
        g.add_argument(
            "--graph",
            help="garlic: graph directory written by 'longctx index' (default: none; required "
            "for --method garlic)",
        )
    if not any("--model" in a.option_strings for a in p._actions):
        g.add_argument("--model", help="causal LM the graph was built with (default: SmolLM2)")
        g.add_argument("--device", help="torch device (default: cuda if available, else cpu)")
    g.add_argument("--encoder", help="sentence encoder the graph was built with (default: MiniLM)")
    g.add_argument(
        "--stop-patience", type=positive_int("--stop-patience"), default=1,
        help="'Yes' answers before the search stops (default: 1)",
    )  # fmt: skip
    g.add_argument(
        "--alpha", type=float, default=0.5,
        help="weight of the embedding similarity against attention (default: 0.5)",
    )  # fmt: skip
    g.add_argument(
        "--max-context-tokens", type=positive_int("--max-context-tokens"),
        help="largest prompt in model tokens (default: the model window less the answer)",
    )  # fmt: skip
    g.add_argument(
        "--max-new-tokens", type=positive_int("--max-new-tokens"), default=64,
        help="longest answer in model tokens (default: 64)",
    )  # fmt: skip


def _load_graph(path):
    from longctx.garlic import HWDAG

    return HWDAG.load(path)


def _encoder(spec):
    return spec  # None: the default MiniLM (GarlicSearcher resolves it)


@lru_cache(maxsize=2)
def _model(name, device):
    from longctx.models import load_causal_lm

    return load_causal_lm(name, device=device)


def searcher_for(text: str, args):
    """Load the graph (checked against ``text``), the model, and build the searcher."""
    from longctx.garlic.search import GarlicSearcher

    if not 0.0 <= args.alpha <= 1.0:
        raise ValueError(f"--alpha must be in [0, 1], got {args.alpha}")
    if not getattr(args, "graph", None):
        raise ValueError("--method garlic needs --graph DIR (a graph built by 'longctx index')")
    graph = _load_graph(args.graph)
    if list(graph.texts) and text not in graph.texts:
        raise ValueError(f"--graph {args.graph} was built from another text than PATH")
    model, tok = _model(getattr(args, "model", None), getattr(args, "device", None))
    return GarlicSearcher(
        graph,
        model,
        tok,
        encoder=_encoder(args.encoder),
        alpha=args.alpha,
        stop_patience=args.stop_patience,
        max_context_tokens=args.max_context_tokens,
        max_new_tokens=args.max_new_tokens,
    ), graph


def run(text: str, query: str, args) -> list[Passage]:
    """``retrieve --method garlic``: the level-1 chunks reached from the visited nodes
    (:meth:`~longctx.garlic.search.GarlicSearcher.reached_passages`: a visited chunk, or the
    chunks under a visited information point), in document order; ``--k`` keeps the first
    ``k`` reached; ``--budget`` is not used: the model decides when to stop. ``--explain``: each
    chunk names the visited node it was reached from, that node's path from the top level and
    where the search stopped (:func:`longctx.garlic.explain.explain_reached`)."""
    searcher, graph = searcher_for(text, args)
    explain = bool(getattr(args, "explain", False))
    result = searcher.search(query, answer=False, explain=explain)
    src = graph.texts.index(text) if text in graph.texts else 0
    hits = [h for h in searcher.reached_passages(result) if h.source == src]
    k = getattr(args, "k", None)
    if k is not None and len(hits) > k:
        keep = sorted(hits, key=lambda h: -h.score)[:k]
        hits = sorted(keep, key=lambda h: h.start)
    return hits


def main(args) -> int:
    """``longctx ask``: print the answer and the trace (``--format json``: one object)."""
    from longctx.io import InputError, read_text_file

    def error(msg):
        print(f"longctx: error: {msg}", file=sys.stderr)
        return 2

    if not args.query.strip():
        return error("--query must not be empty")
    try:
        text = read_text_file(args.path)
    except InputError as exc:
        return error(str(exc))
    except OSError as exc:
        return error(f"cannot read PATH: {exc}")
    try:
        searcher, _ = searcher_for(text, args)
        result = searcher.search(args.query)
    except (ValueError, TypeError, RuntimeError, NotImplementedError) as exc:
        return error(str(exc))
    info = result.info
    if args.format == "json":
        out = {
            "answer": info["answer"],
            "stop_reason": info["stop_reason"],
            "visited": info["visited"],
            "trace": [dict(t) for t in result.trace],
            "tokens_run": info["tokens_run"],
            "final_prompt_tokens": info["final_prompt_tokens"],
            "hits": [h.to_dict() for h in result.hits],
        }
        # strict JSON (no NaN / Infinity), written once it is whole
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=1, allow_nan=False) + "\n")
        return 0
    print(f"answer: {info['answer']}")
    print(
        f"stop: {info['stop_reason']}, {len(info['visited'])} nodes visited, "
        f"{info['tokens_run']} tokens run for a final prompt of {info['final_prompt_tokens']}"
    )
    texts = {v["id"]: v["text"] for v in info["visited_nodes"]}
    for t in result.trace:
        if t["node"] is None:
            print(f"step 0: top level {t['nodes']}  margin={t['margin']:+.3f} {t['decision']}")
        else:
            snippet = texts[t["node"]].replace("\n", " ")[:70]
            print(
                f"step {t['step']}: node {t['node']} (level {t['level']}, score "
                f"{t['score']:.3f} = z {t['z']:.3f} / sim {t['similarity']:.3f})  "
                f"margin={t['margin']:+.3f} {t['decision']}  {snippet}"
            )
    return 0
