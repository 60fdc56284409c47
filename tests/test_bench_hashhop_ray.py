"""benchmarks/bench_mixpr_hashhop_ray.py: its lean Hash-Hop generator makes the texts, chains and
link positions of bench_mixpr_hashhop.make_hashhop, and its memory watch reads a process tree."""

from __future__ import annotations

import os

import numpy as np

from tests._fixtures import load_script


def test_lean_generator_equals_make_hashhop():
    ray_bench = load_script("benchmarks/bench_mixpr_hashhop_ray.py")
    hop_bench = load_script("benchmarks/bench_mixpr_hashhop.py")
    texts, h, line_doc, line_start, tokens = hop_bench.make_hashhop(400_000, 4)
    docs, hb, ld, ls, tk = ray_bench.hashhop_docs(400_000, 4)
    assert len(texts) > 1 and [t for _, t in docs] == texts
    assert [d for d, _ in docs] == [f"doc{i:06d}" for i in range(len(texts))]
    assert (hb.astype("U16") == h).all() and tk == tokens
    assert np.array_equal(ld, line_doc) and np.array_equal(ls, line_start)
    none, hb2, ld2, ls2, _ = ray_bench.hashhop_docs(400_000, 4, texts=False)
    assert none is None and np.array_equal(hb2, hb) and np.array_equal(ls2, ls)
    c, i = 5, 2  # link i of chain c is the line where it says
    line = texts[int(ld[c, i])][int(ls[c, i]) : int(ls[c, i]) + ray_bench.LINE]
    assert line == f"'{h[c, i]}' = '{h[c, i + 1]}'\n"


def test_memory_watch_samples_a_process_tree():
    ray_bench = load_script("benchmarks/bench_mixpr_hashhop_ray.py")
    watch = ray_bench.MemoryWatch([os.getpid()])
    watch.phase("a")
    rep = watch.report()
    assert rep["a"]["node0"]["rss_gb"] > 0 and rep["held"]["driver"]["pss_gb"] > 0
    assert rep["held"]["total"]["rss_gb"] >= rep["held"]["node0"]["rss_gb"]
