"""``longctx.explain.explanation_text`` (the ``why:`` line of ``longctx search --explain`` and
``longctx retrieve --explain``): a share is named only from 0.1% (``SHOWN_SHARE``); an evidence
list says how many of its items it left under that, never "0.0%" or "0%"."""

from __future__ import annotations

import re

from longctx.cli import main
from longctx.explain import SHOWN_SHARE, explanation_text, make_explanation

ZERO = re.compile(r"(?<![\d.])0(\.0)?%")  # "0%" or "0.0%", not "10%" or "0.4%"


def _seed(i: int, share: float) -> dict:
    return {"unit": i, "doc_id": "book", "index": i, "score": share, "share": share}


def test_evidence_under_the_shown_precision_is_counted_not_listed():
    e = make_explanation(
        "mixpr", "pagerank", 1.0, {"restart_lexical": 0.9, "walk": 0.0996, "unsettled": 0.0004},
        terms=[{"term": "rabbit", "score": 0.05, "share": 0.05},
               {"term": "hole", "score": 0.0004, "share": 0.0004}],
        seeds=[_seed(3, 0.02), _seed(7, 0.0003), _seed(9, 0.00001)],
    )  # fmt: skip
    text = explanation_text(e)
    assert text == (
        "restart_lexical 90%, walk 10%; terms 'rabbit' 5%, and 1 more under 0.1%; "
        "from book#3 2%, and 2 more under 0.1%"
    )
    assert not ZERO.search(text)
    # every item under it: the count alone; the limit counts only the items it would name
    e["seeds"] = [_seed(1, 0.0002), _seed(2, 0.0001), _seed(3, 0.00005), _seed(4, 0.00001)]
    assert explanation_text(e).endswith("; from 3 under 0.1%")
    assert explanation_text(e, limit=1).endswith("; from 1 under 0.1%")


def test_small_shown_shares_keep_one_decimal():
    e = make_explanation("mixpr", "pagerank", 1.0, {"restart_lexical": 0.9944, "walk": 0.0056},
                         seeds=[_seed(1, 0.0094), _seed(2, SHOWN_SHARE), _seed(3, 0.0095)])  # fmt: skip
    text = explanation_text(e)
    assert "walk 0.6%" in text and "book#1 0.9%" in text and "book#2 0.1%" in text
    assert "book#3 1%" in text and not ZERO.search(text)


def test_paths_keep_their_separator():
    e = make_explanation(
        "mixpr", "multihop", 1.0, {"walk_phrases": 1.0},
        paths=[{"path": ["question", {"phrase": "alice"}, "hit"], "score": 0.6, "share": 0.6},
               {"path": ["question", {"phrase": "queen"}, "hit"], "score": 0.0001,
                "share": 0.0001}],
    )  # fmt: skip
    assert explanation_text(e).endswith(
        "; paths question -> 'alice' -> hit 60%; and 1 more under 0.1%"
    )


def test_search_why_lines_on_a_book_name_no_zero_share(tmp_path, capsys):
    """``longctx search --explain`` on a book (the new user's pass of session 18 saw seed units
    at "0.0%"): no share of a why line reads 0%, and the line counts what it left."""
    from longctx.corpus import build_indexes
    from longctx.io import sample_text

    out = tmp_path / "corpus"
    assert not build_indexes([("alice", sample_text("alice"))], "mixpr", out, use_ray=False).failed
    whys = []
    for q in ("Who gave Alice the bottle?", "What did the Cheshire Cat say?"):
        assert main(["search", str(out), "-q", q, "--k", "10", "--explain"]) == 0
        whys += [x for x in capsys.readouterr().out.splitlines() if x.startswith("why: ")]
    assert len(whys) == 20
    assert not any(ZERO.search(w) for w in whys), [w for w in whys if ZERO.search(w)]
    assert any("more under 0.1%" in w for w in whys)  # seeds under it exist on this book
