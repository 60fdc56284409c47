"""Dump raw per-layer attention column sums of YOURA scoring runs, for offline study of how
reaction scores are normalized and compared across windows (issue 13).

One model pass feeds every candidate normalization: for each scoring window of a document this
records, per decoder layer (mean over heads, float32):

- ``C``: column sums over the window's own rows (the paper baseline's ``colsum_C``),
- ``S``: column sums over the instruction suffix rows (``colsum_S``, ``s`` rows),
- ``Q[k]``: column sums of question ``k``'s rows (instruction template, ``q_k`` rows),
- ``A[k]``: the part of ``Q[k]`` from the template's last rows (``"\\n\\nAnswer:"``, ``a`` rows),

and writes one ``.npz`` per document (``--out``, default /tmp/youra_raw). Read them with
``benchmarks/studies/youra_study.py``.

Usage::

    PYTHONPATH=. python benchmarks/studies/youra_dump.py --task squad --n 20 --seed 1 --max-window 2048
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"


def items(task: str, n: int, seed: int, offset: int = 0):
    """Documents with their questions: ``[(doc_id, text, [(query, answers, gold_spans)])]``."""
    from longctx.eval import tasks

    if task == "hotpotqa":
        groups = list(tasks.hotpotqa(DATA, n + offset, seed))[offset:]
    else:
        groups = list(getattr(tasks, task)(DATA, n, seed))
    return [
        (g[0].doc_id, g[0].text, [(e.query, list(e.answers), list(e.gold_spans)) for e in g])
        for g in groups
    ]


def dump_doc(scorer, text: str, questions, path: Path, sentences=None) -> float:
    """Record C, S and Q of every window of ``text``; returns seconds."""
    import torch

    from longctx.attention import record_attention_stats

    lay = scorer._make_layout(text, sentences)
    t = time.perf_counter()
    arr = {"C": [], "S": [], "Q": [[] for _ in questions], "A": [[] for _ in questions]}
    qids = [scorer._query_ids(q) for q, _, _ in questions]
    tail = scorer._encode("\n\nAnswer:")
    assert all(x[-len(tail) :] == tail for x in qids), "answer rows not at the end"
    with torch.inference_mode(), record_attention_stats(scorer.model, "all") as rec:

        def grab(c):
            out = np.stack([rec.column_sums(la)[0].mean(0)[:c].cpu().numpy() for la in rec.layers])
            rec.reset()
            return out.astype(np.float32)

        for t0, t1 in lay.windows:
            ids = list(lay.ids[t0:t1])
            c = len(ids)
            cache = scorer._forward(ids)
            arr["C"].append(grab(c))
            cache = scorer._forward(scorer._suffix_ids, cache)
            arr["S"].append(grab(c))
            kv = [(x.keys.clone(), x.values.clone()) for x in cache.layers]
            for k, q in enumerate(qids):
                from transformers import DynamicCache

                cc = DynamicCache(
                    ddp_cache_data=[(a.clone(), b.clone()) for a, b in kv],
                    config=scorer.model.config,
                )
                scorer._forward(q[: -len(tail)], cc)
                head = grab(c)
                scorer._forward(q[-len(tail) :], cc)
                ans = grab(c)
                arr["Q"][k].append(head + ans)
                arr["A"][k].append(ans)
    secs = time.perf_counter() - t
    np.savez_compressed(
        path,
        C=np.concatenate(arr["C"], axis=1),
        S=np.concatenate(arr["S"], axis=1),
        Q=np.stack([np.concatenate(x, axis=1) for x in arr["Q"]]),
        A=np.stack([np.concatenate(x, axis=1) for x in arr["A"]]),
        a=len(tail),
        s=len(scorer._suffix_ids),
        q=np.asarray([len(x) for x in qids]),
        windows=np.asarray(lay.windows),
        token_spans=np.asarray(lay.token_spans),
        sentences=np.asarray(lay.sentences),
        meta=json.dumps({"text": text, "questions": questions}),
    )
    return secs


def add_document_arguments(p: argparse.ArgumentParser, out: str) -> None:
    """The arguments that name the documents and questions to dump (shared with
    ``youra_heads_study.py dump``)."""
    p.add_argument("--task", required=True, help="squad, narrativeqa, hotpotqa or a text file")
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--offset", type=int, default=0, help="hotpotqa: skip this many rows")
    p.add_argument("--chars", type=int, default=0, help="text file: first N characters")
    p.add_argument(
        "--question",
        action="append",
        default=[],
        help='text file: a question, or "question||marker" with a substring of its answer sentence',
    )
    p.add_argument("--max-window", type=int, default=2048)
    p.add_argument("--out", default=out)


def documents(args):
    """``(path, text, questions)`` for every document the arguments name (paths under
    ``args.out``, one per text and window size)."""
    if Path(args.task).is_file():
        text = Path(args.task).read_text(encoding="utf-8-sig")
        text = text[: args.chars] if args.chars else text
        # "question||marker": the marker (a substring of the answer sentence) is kept as the answer
        qs = [tuple(q.split("||", 1)) if "||" in q else (q, None) for q in args.question]
        docs = [(text, [(q, [m] if m else [], []) for q, m in qs])]
        tag = f"book-{Path(args.task).stem}-{args.chars}-{args.max_window}"
    else:
        docs = [(t, qs) for _, t, qs in items(args.task, args.n, args.seed, args.offset)]
        tag = f"{args.task}-s{args.seed}-{args.max_window}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for text, qs in docs:
        yield out / f"{tag}-{hashlib.sha1(text.encode()).hexdigest()[:10]}.npz", text, qs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    add_document_arguments(p, "/tmp/youra_raw")
    p.add_argument(
        "--null-question",
        action="append",
        default=[],
        help="generic questions appended to every document's (a query-independent reference)",
    )
    args = p.parse_args(argv)

    from longctx.models import load_causal_lm
    from longctx.youra import ReactionScorer

    model, tok = load_causal_lm(device="cpu")
    scorer = ReactionScorer(model, tok, baseline="instruction", max_window=args.max_window)
    scorer._setup()
    for path, text, qs in documents(args):
        qs = qs + [(q, [], []) for q in args.null_question]
        if path.exists():
            continue
        secs = dump_doc(scorer, text, qs, path)
        print(f"{path.name}: {len(qs)} questions, {len(text)} chars, {secs:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
