"""Offline study of YOURA score normalizations on the raw dumps of ``youra_dump.py`` (issue 13).

Every candidate is computed from the same recorded column sums (no model pass here): the
current instruction-baseline reaction ``|S/s - (S+Q)/(s+q)|`` and rescalings of it, and the
log-ratio ``log((Q/q) / (S/s))`` of the query rows' mean attention to the suffix rows' (per layer,
then averaged), for several layer sets and sentence aggregations. Figures: answer recall at 10%
and 20% of the document's model tokens (the harness's metrics), and on books the largest ratio of
a window's share of the picks to its share of the tokens; for book questions given with a marker
(``youra_dump.py --question "question||marker"``), the rank of the first sentence holding it.

Dumps that hold ``A`` (the template's ``"\\n\\nAnswer:"`` rows) and null questions
(``youra_dump.py --null-question``) also feed ``distmed-ans`` (the answer rows' share over the
suffix's) and ``distmed-null`` (the query's share over the null questions' mean share); null
questions are never scored themselves.

Usage::

    PYTHONPATH=. python benchmarks/studies/youra_study.py /tmp/youra_raw
    PYTHONPATH=. python benchmarks/studies/youra_study.py /tmp/youra_raw --match squad \
        --kinds instr,lograt --layer-sets last,all --aggs gmean

(``--help`` lists the options: ``--match`` keeps the dumps whose file name matches a regular
expression, ``--kinds``, ``--layer-sets`` and ``--aggs`` name the candidates, comma-separated.)
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

EPS = 1e-12
FRACTIONS = (0.1, 0.2)


def load(path):
    z = np.load(path, allow_pickle=False)
    d = {k: z[k] for k in z.files if k != "meta"}
    d["meta"] = json.loads(str(z["meta"]))
    d["name"] = Path(path).name
    return d


LAYER_SETS = {
    "last": lambda n: [n - 1],
    "all": lambda n: list(range(n)),
    "top-third": lambda n: list(range(2 * n // 3, n)),
    "mid-third": lambda n: list(range(n // 3, 2 * n // 3)),
    "low-third": lambda n: list(range(0, n // 3)),
    "upper-half": lambda n: list(range(n // 2, n)),
}


def vector(d, k, kind, layers):
    """Per-token value of candidate ``kind`` for question ``k``: (n_tokens,) float64."""
    C, S = d["C"][layers].astype(np.float64), d["S"][layers].astype(np.float64)
    Q = d["Q"][k][layers].astype(np.float64)
    s, q = int(d["s"]), int(d["q"][k])
    out = np.empty(S.shape[1])
    for t0, t1 in d["windows"]:
        c = t1 - t0
        Sm, Qm = S[:, t0:t1].mean(0), Q[:, t0:t1].mean(0)
        r = np.abs(Sm / s - (Sm + Qm) / (s + q))
        if kind in ("distmed-ans", "distmed-null"):  # shares ratio over its median, eps 0.1 / c
            e = 0.1 / c
            if kind == "distmed-ans":
                num, den = d["A"][k][layers][:, t0:t1].astype(np.float64).mean(0), Sm
            else:
                num = Qm
                den = d["Q"][n_real(d) :][:, layers, t0:t1].astype(np.float64).mean((0, 1))
            v = (num / num.sum() + e) / (den / den.sum() + e)
            v = v / np.median(v)
        elif kind == "instr":
            v = r
        elif kind == "instr*c":
            v = r * c
        elif kind == "instr/mean":
            v = r / r.mean()
        elif kind == "instr-rank":
            v = (np.argsort(np.argsort(r)) + 1) / c
        elif kind == "ratio":  # layer-mean then ratio
            v = (Qm / q + EPS) / (Sm / s + EPS)
        elif kind.startswith("distmed-e"):  # shares ratio over its median in the window
            e = float(kind[9:]) / c
            v = (Qm / Qm.sum() + e) / (Sm / Sm.sum() + e)
            v = v / np.median(v)
        elif kind.startswith("dist-e"):  # distributions over the window's tokens
            e = float(kind[6:]) / c
            v = (Qm / Qm.sum() + e) / (Sm / Sm.sum() + e)
        elif kind.startswith("ratio-e"):  # smoothed: eps = f / c (a share of the uniform share)
            e = float(kind[7:]) / c
            v = (Qm / q + e) / (Sm / s + e)
        elif kind == "lograt":  # per-layer log ratio, mean over layers; exp for gmean
            lr = np.log((Q[:, t0:t1] / q + EPS) / (S[:, t0:t1] / s + EPS)).mean(0)
            v = np.exp(lr)
        elif kind == "abslograt":
            lr = np.log((Q[:, t0:t1] / q + EPS) / (S[:, t0:t1] / s + EPS)).mean(0)
            v = np.exp(np.abs(lr))
        elif kind == "absdiff/S":
            v = r / (Sm / s + EPS)
        elif kind == "Q/C":  # query attention over the context rows' mean attention
            Cm = C[:, t0:t1].mean(0)
            rows = c - np.arange(c)  # rows that see token j
            v = (Qm / q + EPS) / (Cm / rows + EPS)
        else:
            raise ValueError(kind)
        out[t0:t1] = v
    return out


def n_real(d) -> int:
    """Questions to score: those with answers, gold spans or a marker (null questions have none;
    dumps without null questions score every question)."""
    qs = d["meta"]["questions"]
    real = sum(1 for _, answers, gold in qs if answers or gold)
    return real if real else len(qs)


def sentence_scores(d, vec, agg):
    out = np.empty(len(d["token_spans"]))
    n = len(vec)
    for i, (t0, t1) in enumerate(d["token_spans"]):
        v = vec[t0:t1] if t1 > t0 else vec[min(max(t0 - 1, 0), n - 1)][None]
        if agg == "gmean":
            out[i] = np.exp(np.mean(np.log(np.maximum(v, EPS))))
        elif agg == "mean":
            out[i] = v.mean()
        elif agg == "max":
            out[i] = v.max()
        elif agg.startswith("shrink"):  # mean shrunk toward the window median (1) by m tokens
            m = float(agg[6:])
            out[i] = (v.sum() + m) / (len(v) + m)
    return out


def select(scores, counts, budget):
    from longctx.selection import select_top

    return select_top(scores, token_budget=budget, token_counts=counts)


def task_of(name):
    return name.split("-")[0]


def recall(d, k, chosen):
    from longctx.eval.metrics import score
    from longctx.eval.tasks import Example

    text = d["meta"]["text"]
    q, answers, gold = d["meta"]["questions"][k]
    ex = Example(task_of(d["name"]), "", text, q, tuple(answers), tuple(map(tuple, gold)))
    spans = [tuple(map(int, d["sentences"][i])) for i in chosen]
    return score(ex, text, spans)


def window_share(d, chosen, counts):
    """max over windows of (share of picked tokens in the window) / (window's share of tokens)."""
    spans = d["token_spans"]
    tot = counts.sum()
    picked = counts[chosen].sum()
    ratios = []
    for t0, t1 in d["windows"]:
        ins = [i for i in chosen if t0 <= spans[i][0] < t1]
        win_share = (t1 - t0) / spans[-1][1]
        ratios.append((counts[ins].sum() / picked) / win_share)
    del tot
    return max(ratios), min(ratios)


def tail_share(d, chosen):
    """Share of picks whose start lies in the last 10% of its window."""
    spans, wins = d["token_spans"], d["windows"]
    n = 0
    for i in chosen:
        t = spans[i][0]
        for t0, t1 in wins:
            if t0 <= t < t1:
                n += (t - t0) >= 0.9 * (t1 - t0)
    return n / max(1, len(chosen))


def baselines(d, k, kind):
    n = len(d["token_spans"])
    if kind == "lead":
        return -np.arange(n, dtype=float)
    if kind == "random":
        return np.random.default_rng(k + n).random(n)
    if kind == "bm25":
        from rank_bm25 import BM25Okapi
        from sklearn.feature_extraction.text import TfidfVectorizer

        text = d["meta"]["text"]
        an = TfidfVectorizer(stop_words="english", strip_accents="unicode").build_analyzer()
        toks = [an(text[a:b]) or ["<empty>"] for a, b in d["sentences"]]
        return BM25Okapi(toks).get_scores(an(d["meta"]["questions"][k][0]))
    raise ValueError(kind)


#: The candidates ``vector`` computes (``distmed-*`` need dumps with answer rows / null questions).
KINDS = (
    "instr",
    "instr*c",
    "instr/mean",
    "instr-rank",
    "absdiff/S",
    "ratio",
    "lograt",
    "abslograt",
    "Q/C",
    "distmed-ans",
    "distmed-null",
)
DEFAULT_KINDS = KINDS[:9]
#: Sentence aggregations of ``sentence_scores`` (and ``shrinkM``, M a number of tokens).
AGGS = ("gmean", "mean", "max")


def _names(allowed, what):
    """An argparse type: comma-separated names, each one of ``allowed``."""

    def parse(value: str) -> list[str]:
        names = [n for n in value.split(",") if n]
        bad = [n for n in names if n not in allowed and not _is_shrink(n, what)]
        if not names or bad:
            raise argparse.ArgumentTypeError(
                f"{what}: {bad or value!r} not among {', '.join(allowed)}"
                + (", shrinkM (M a number)" if what == "aggs" else "")
            )
        return names

    return parse


def _is_shrink(name: str, what: str) -> bool:
    if what != "aggs" or not name.startswith("shrink"):
        return False
    try:
        return float(name[6:]) >= 0
    except ValueError:
        return False


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="youra_study.py",
        description="Compare YOURA score normalizations on the raw dumps of youra_dump.py.",
    )
    parser.add_argument("folder", type=Path, help="the folder of youra_dump.py's .npz dumps")
    parser.add_argument(
        "--match",
        type=re.compile,
        default=None,
        metavar="REGEX",
        help="only the dumps whose file name matches (re.search); default all",
    )
    parser.add_argument(
        "--kinds",
        type=_names(KINDS, "kinds"),
        default=list(DEFAULT_KINDS),
        help=f"candidates, comma-separated (default {','.join(DEFAULT_KINDS)})",
    )
    parser.add_argument(
        "--layer-sets",
        type=_names(tuple(LAYER_SETS), "layer-sets"),
        default=list(LAYER_SETS),
        help=f"layer sets, comma-separated (default {','.join(LAYER_SETS)})",
    )
    parser.add_argument(
        "--aggs",
        type=_names(AGGS, "aggs"),
        default=["gmean", "mean"],
        help="sentence aggregations: gmean, mean, max, shrinkM (default gmean,mean)",
    )
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        parser.error(f"folder: {str(args.folder)!r} is not a folder")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    docs = [load(p) for p in sorted(args.folder.glob("*.npz"))]
    if args.match:
        docs = [d for d in docs if args.match.search(d["name"])]
    if not docs:
        print(f"no dumps (*.npz) to study in {str(args.folder)!r}", file=sys.stderr)
        return 2
    n_layers = docs[0]["S"].shape[0]
    kinds, lsets, aggs = args.kinds, args.layer_sets, args.aggs
    cands = [(kd, ls, agg) for kd in kinds for ls in lsets for agg in aggs]
    cands += [(b, "-", "-") for b in ("bm25", "lead", "random")]
    rows = []
    for kd, ls, agg in cands:
        res = {}
        for d in docs:
            counts = np.maximum(1, np.diff(d["token_spans"], axis=1)[:, 0])
            for k in range(n_real(d)):
                if ls == "-":
                    sc = baselines(d, k, kd)
                else:
                    layers = LAYER_SETS[ls](n_layers)
                    sc = sentence_scores(d, vector(d, k, kd, layers), agg)
                for frac in FRACTIONS:
                    b = max(1, round(frac * counts.sum()))
                    ch = select(sc, counts, b)
                    t = task_of(d["name"])
                    if t == "book":
                        hi, lo = window_share(d, ch, counts)
                        res.setdefault((t + "-max", frac), []).append(hi)
                        res.setdefault((t + "-tail", frac), []).append(tail_share(d, ch))
                        markers = d["meta"]["questions"][k][1]
                        if markers and frac == FRACTIONS[0]:
                            top = np.argsort(-sc, kind="stable")
                            txt = d["meta"]["text"]
                            marker = " ".join(markers[0].split())
                            rank = next(
                                r
                                for r, i in enumerate(top)
                                if marker in " ".join(txt[slice(*d["sentences"][i])].split())
                            )
                            res.setdefault((f"rank-q{k}", frac), []).append(rank + 1)
                    else:
                        r = recall(d, k, ch)
                        res.setdefault((t, frac), []).append(r["recall"])
                        if "share" in r:
                            res.setdefault((t[:3] + "-share", frac), []).append(r["share"])
        rows.append(((kd, ls, agg), {key: float(np.mean(v)) for key, v in res.items()}))
    keys = sorted({key for _, r in rows for key in r})
    print(f"{'candidate':<34}" + "".join(f"{k[0][:9]}@{int(k[1] * 100):<3}" for k in keys))
    for (kd, ls, agg), r in rows:
        print(
            f"{kd + ' ' + ls + ' ' + agg:<34}" + "".join(f"{r.get(k, np.nan):>13.3f}" for k in keys)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
