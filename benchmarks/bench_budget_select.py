"""Token-budget selection before / after (session 20): MixPR budget queries at ``--words`` words.

Corpus: the growth table's Gutenberg books (``bench_mixpr_growth.corpus``, as
``bench_vs_bm25.py``), indexed twice (``preset="default"``: the walk the router picks;
``preset="pagerank"``: the PageRank walk, dense scores), saved under ``--cache`` and reused.
Each of the 20 growth-table questions is asked with budgets 1,000 / 3,000 / 10,000 tokens,
``unique_texts`` off and on, by the selection of ``--before`` (a copy of an older
``longctx/selection.py``, put in place of ``longctx.mixpr.hits``'s ``select_top`` and
``select_distinct``) and by the current one, interleaved (the two alternate first), ``--repeats``
times; the figure is the CPU time of the whole ``search`` (``time.process_time``), median over
repeats and questions. The hits of the two must be identical (asserted).

Usage: ``python benchmarks/bench_budget_select.py --before /tmp/selection_before.py``
(e.g. ``git show <rev>:longctx/selection.py > /tmp/selection_before.py``).

Since the text ids (session 21, :mod:`longctx.mixpr.text_ids`) the ``--before`` side also reads
each reached unit's text as its key, as the selection did before them (:func:`text_key`, a copy
of the old ``longctx.mixpr.hits.unit_text_key``), and the current side compares the index's
text ids. Printed besides: the ids' memory and the one-time cost of making them
(:func:`~longctx.mixpr.text_ids.unit_text_ids`, once per index state) and of checking saved ones
at a load (:func:`~longctx.mixpr.text_ids.check_text_ids`); and with ``--adapter-budget`` the
LlamaIndex ``MixPRRetriever(token_budget=...)`` query (``unique_texts=True``, the adapters'
default) over the same index, before / after interleaved the same way, its nodes asserted
identical.

Measured 2026-11-29 (session 21, ``--before`` ``git show 221edb7:longctx/selection.py``,
``--repeats 5``, 1M words, 51,262 units; a 2-core machine shared with four other sessions):
see ``docs/notes/mixpr-scale.md``, "The keys: text ids made once".
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import longctx.mixpr.hits as hits  # noqa: E402
from longctx import selection  # noqa: E402
from longctx.mixpr import MixPRIndex  # noqa: E402

BUDGETS = (1000, 3000, 10000)


def load_before(path: Path):
    spec = importlib.util.spec_from_file_location("selection_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.SparseScores = selection.SparseScores  # the scores the index makes
    return mod


def index_for(preset: str, words: int, data: Path, cache: Path) -> MixPRIndex:
    path = cache / f"mixpr-{preset}-{words}"
    if path.exists():
        return MixPRIndex.load(path)
    from bench_mixpr_growth import corpus

    docs = corpus(data, words)
    idx = MixPRIndex.from_texts([t for _, t in docs], ids=[i for i, _ in docs], preset=preset)
    idx.save(path)
    return idx


def text_key(st, allowed):
    """The key of the selection before the text ids: ``j -> text`` of the ``j``-th unit (of
    ``allowed`` when given), sliced and its whitespace runs made one space when read."""

    def key(j: int) -> str:
        i = int(j if allowed is None else allowed[j])
        d, a, b = int(st.unit_source[i]), int(st.starts[i]), int(st.ends[i])
        return " ".join(hits.text_slice(st.texts, d, a, b).split())

    return key


ID_KEY = hits.unit_text_key


def use(mod) -> None:
    hits.select_top, hits.select_distinct = mod.select_top, mod.select_distinct
    hits.unit_text_key = ID_KEY if mod is selection else text_key


def ids_cost(idx: MixPRIndex, repeats: int) -> dict:
    """The text ids of ``idx``: units, distinct texts, bytes held (the ids, and the hashes a
    state that made them holds), and the CPU ms of making them (once per state) and of
    checking saved ones (a load), best of ``repeats``."""
    from longctx.mixpr.text_ids import check_text_ids, unit_text_ids

    st = idx._state
    made, checked = [], []
    for _ in range(repeats):
        c0 = time.process_time()
        ids, hashes = unit_text_ids(st.texts, st.unit_source, st.starts, st.ends)
        made.append(time.process_time() - c0)
        c0 = time.process_time()
        check_text_ids(ids, st.n_units, "ids")
        checked.append(time.process_time() - c0)
    assert ids.tolist() == st.text_ids().tolist()
    return {
        "units": st.n_units,
        "distinct texts": int(np.count_nonzero(ids == np.arange(len(ids)))),
        "bytes": int(ids.nbytes),
        "hash bytes": int(hashes.nbytes),
        "make ms": round(1000 * min(made), 1),
        "check ms": round(1000 * min(checked), 2),
    }


def adapter_cell(idx: MixPRIndex, words: int, data: Path, budget: int, before, args) -> dict:
    """The LlamaIndex budget query over ``idx`` (its own documents as nodes), before / after
    interleaved as the core cells; CPU ms per query, median over repeats then questions."""
    from bench_mixpr_growth import QUESTIONS, corpus
    from llama_index.core import Document

    import llamaindex_longctx as li

    docs = [Document(text=t, id_=i) for i, t in corpus(data, words)]
    retriever = li.MixPRRetriever(docs, token_budget=budget, _index=idx)
    t = {"before": [], "after": []}
    for q in QUESTIONS:
        per = {"before": [], "after": []}
        got = {}
        for r in range(args.repeats):
            pair = [("before", before), ("after", selection)]
            for name, mod in pair if r % 2 == 0 else pair[::-1]:
                use(mod)
                c0 = time.process_time()
                out = retriever.retrieve(q)
                per[name].append(time.process_time() - c0)
                got[name] = [(n.node.node_id, n.score, n.node.get_content()) for n in out]
            assert got["before"] == got["after"], ("llamaindex", budget, q)
        for name in per:
            t[name].append(statistics.median(per[name]))
    cell = {k: round(1000 * statistics.median(v), 2) for k, v in t.items()}
    cell["ratio"] = round(cell["before"] / max(cell["after"], 1e-9), 2)
    return cell


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", type=Path, required=True)
    p.add_argument("--words", type=int, default=1_000_000)
    p.add_argument("--data", type=Path, default=Path("../shared/data"))
    p.add_argument("--cache", type=Path, default=Path("/tmp/budget_aside"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--presets", default="default,pagerank")
    p.add_argument(
        "--adapter-budget", type=int, default=0, help="also the LlamaIndex budget query (tokens)"
    )
    args = p.parse_args(argv)
    from bench_mixpr_growth import QUESTIONS

    before, after = load_before(args.before), selection
    out = {}
    for preset in args.presets.split(","):
        idx = index_for(preset, args.words, args.data, args.cache)
        n_units = len(idx.token_counts)
        saved = idx._state._ids is not None
        out[f"{preset} text ids"] = cell = {"saved": saved, **ids_cost(idx, 3)}
        print(preset, "text ids", cell, flush=True)
        if args.adapter_budget and preset == "default":
            cell = adapter_cell(idx, args.words, args.data, args.adapter_budget, before, args)
            out[f"{preset} llamaindex budget={args.adapter_budget}"] = cell
            print(preset, n_units, "llamaindex", args.adapter_budget, cell, flush=True)
        for budget in BUDGETS:
            for unique in (False, True):
                t = {"before": [], "after": []}
                for q in QUESTIONS:
                    per = {"before": [], "after": []}
                    for r in range(args.repeats):
                        pair = [("before", before), ("after", after)]
                        got = {}
                        for name, mod in pair if r % 2 == 0 else pair[::-1]:
                            use(mod)
                            c0 = time.process_time()
                            res = idx.search(q, token_budget=budget, unique_texts=unique)
                            per[name].append(time.process_time() - c0)
                            got[name] = [(h.index, h.score) for h in res.hits]
                        assert got["before"] == got["after"], (preset, budget, unique, q)
                    for name in per:
                        t[name].append(statistics.median(per[name]))
                cell = {k: round(1000 * statistics.median(v), 2) for k, v in t.items()}
                cell["ratio"] = round(cell["before"] / max(cell["after"], 1e-9), 2)
                out[f"{preset} budget={budget} unique_texts={unique}"] = cell
                print(preset, n_units, budget, unique, cell, flush=True)
    use(after)
    return out


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
