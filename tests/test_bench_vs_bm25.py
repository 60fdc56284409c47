"""benchmarks/bench_vs_bm25.py's first-query measure (session 20): every open asks another
question first, the ratios are taken within each open, then their median over the opens."""

from __future__ import annotations

import pytest

from tests._fixtures import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("benchmarks/bench_vs_bm25.py")


def test_rotated_asks_every_question_once_then_the_first_again(bench):
    assert bench.rotated(4, 0) == [0, 1, 2, 3, 0]
    assert bench.rotated(4, 2) == [2, 3, 0, 1, 2]
    for first in range(10):
        order = bench.rotated(10, first)
        assert order[0] == order[-1] == first
        assert sorted(order[:-1]) == list(range(10))
    with pytest.raises(ValueError, match="first must be"):
        bench.rotated(4, 4)
    with pytest.raises(ValueError, match="n must be"):
        bench.rotated(1, 0)


def test_first_query_figures_are_within_the_open(bench):
    wall = [0.010, 0.002, 0.004, 0.003, 0.005]  # first, three next ones, the first again
    cpu = [0.008, 0.002, 0.002, 0.004, 0.004]
    f = bench.first_query_figures(wall, cpu)
    assert f["first_ms"] == pytest.approx(10.0)
    assert f["next_ms"] == pytest.approx(3.0)  # the median of the next ones, not the last one
    assert f["again_ms"] == pytest.approx(5.0)
    assert f["first_over_next"] == pytest.approx(10 / 3)
    assert f["first_over_again"] == pytest.approx(2.0)
    assert f["first_over_next_cpu"] == pytest.approx(4.0)
    assert f["first_over_again_cpu"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="same n"):
        bench.first_query_figures(wall, cpu[:-1])
    with pytest.raises(ValueError, match="same n"):
        bench.first_query_figures(wall[:2], cpu[:2])


def _open(bench, first, times):
    return {
        "first_question": first,
        "open_s": 0.1 * (first + 1),
        "open_rss_gb": 0.01,
        **bench.first_query_figures(times, times),
    }


def test_summary_is_the_median_of_each_opens_ratio_and_keeps_question_0_alone(bench):
    opens = [
        _open(bench, 0, [0.009, 0.003, 0.003, 0.003, 0.006]),  # a heavy question 0: 3x
        _open(bench, 1, [0.004, 0.002, 0.002, 0.002, 0.002]),  # 2x
        _open(bench, 2, [0.003, 0.002, 0.002, 0.002, 0.002]),  # 1.5x
        {"error": "killed"},
    ]
    s = bench.summarize_opens(opens)
    assert s["opens"] == 3 and s["failed"] == 1
    assert s["first_questions"] == [0, 1, 2]
    assert s["first_over_next"] == pytest.approx(2.0)  # not 3x, question 0's own weight
    assert s["first_over_again"] == pytest.approx(1.5)
    assert s["first_ms"] == pytest.approx(4.0)
    assert s["open_s"] == pytest.approx(0.2)
    assert s["single_open"]["first_over_next"] == pytest.approx(3.0)  # the old measure
    assert s["single_open"]["first_ms"] == pytest.approx(9.0)
    # the median of the ratios, not the ratio of the medians
    odd = [
        _open(bench, 0, [0.010, 0.001, 0.001, 0.001, 0.010]),
        _open(bench, 1, [0.004, 0.004, 0.004, 0.004, 0.004]),
        _open(bench, 2, [0.002, 0.004, 0.004, 0.004, 0.004]),
    ]
    s = bench.summarize_opens(odd)
    assert s["first_over_next"] == pytest.approx(1.0)
    assert s["first_ms"] / s["next_ms"] == pytest.approx(1.0)
    assert s["first_over_again"] == pytest.approx(1.0)
    assert bench.summarize_opens(odd[1:])["single_open"] is None
    assert bench.summarize_opens([{"error": "boom"}]) == {"error": "boom"}


def test_goal_line_is_the_rotated_measure(bench, capsys):
    opens = [
        _open(bench, 0, [0.009, 0.003, 0.003, 0.003, 0.006]),
        _open(bench, 1, [0.004, 0.002, 0.002, 0.002, 0.002]),
        _open(bench, 2, [0.003, 0.002, 0.002, 0.002, 0.002]),
    ]
    build = {"build_s": 1.0, "query_ms": 2.0, "peak_gb": 0.1, "held_gb": 0.1}
    rows = {"mixpr": {"build": build, "open": {"": bench.summarize_opens(opens)}}}
    bench.print_tables(1, {"units": 10, "documents": 1}, rows)
    out = capsys.readouterr().out
    assert (
        "| mixpr | - | - | 0.20 | +0.010 | 4.0 (4.0) | 2.0 (2.0) | 2.00 (2.00) | 1.50 (1.50) | "
        in out
    )
    assert "MixPR: first query / next 2.00x (CPU 2.00x) (goal <= 2; median of 3 opens" in out
    assert "question 0 first, one open: 3.00x (CPU 3.00x)" in out


def test_a_row_with_a_failed_open_shows_its_opens_and_no_rotated_median(bench, capsys):
    """Session 20 review: a row whose open failed showed a median over fewer opens (so over
    other first questions) while the header printed the largest count of opens."""
    full = [
        _open(bench, 0, [0.009, 0.003, 0.003, 0.003, 0.006]),
        _open(bench, 1, [0.004, 0.002, 0.002, 0.002, 0.002]),
        _open(bench, 2, [0.003, 0.002, 0.002, 0.002, 0.002]),
    ]
    part = [full[0], {"error": "killed"}, full[2]]  # question 1 never asked first
    build = {"build_s": 1.0, "query_ms": 2.0, "peak_gb": 0.1, "held_gb": 0.1}
    rows = {
        "mixpr": {"build": build, "open": {"": bench.summarize_opens(full)}},
        "bm25s": {"build": build, "open": {"": bench.summarize_opens(part)}},
    }
    bench.print_tables(1, {"units": 10, "documents": 1}, rows)
    out = capsys.readouterr().out
    table = {ln.split(" | ")[0][2:]: ln for ln in out.splitlines() if ln.startswith("| ")}
    assert table["mixpr"].endswith("| 3 |") and "2.00 (2.00)" in table["mixpr"]
    bm = table["bm25s"]
    assert bm.endswith("| 2 (1 failed) |")
    assert "no median: without question 1 first" in bm
    assert "2.25" not in bm  # the median of the two opens' ratios, over other questions
    assert "3 opens a row" not in out
    assert "MixPR: first query / next 2.00x" in out
    assert "bm25s: first query / next: no median: without question 1 first" in out
