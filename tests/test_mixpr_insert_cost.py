"""Appending small documents to a MixPR index costs the documents, not the index (the term
table keeps appended rows apart until a search needs the counts), and the table then equals one
built at once, bit for bit, along any chain or branch of appends."""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRConfig, MixPRIndex
from longctx.mixpr.tfidf import TermTable, TfidfSettings

WORDS = ["castle", "dragon", "knight", "whale", "sea", "ship", "apple", "garden", "moor"]


def _same_table(a: TermTable, b: TermTable) -> None:
    assert a.vocabulary == b.vocabulary and list(a.vocabulary) == list(b.vocabulary)
    assert a.n_units == b.n_units
    for x, y in ((a.counts, b.counts), (a.embeddings(), b.embeddings())):
        x, y = sp.csr_array(x), sp.csr_array(y)
        assert np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)
        assert np.array_equal(x.data, y.data)  # bit for bit
    assert np.array_equal(a.df, b.df) and np.array_equal(a.cf, b.cf)
    assert np.array_equal(a.idf(), b.idf())


TEXT = st.lists(st.sampled_from(WORDS + ["zq", "zr", "zs", "zt"]), min_size=1, max_size=6).map(
    " ".join
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(TEXT, min_size=1, max_size=4),
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "branch", "use", "remove"]), st.lists(TEXT, max_size=3)),
        min_size=1,
        max_size=8,
    ),
)
def test_appends_equal_a_table_built_at_once(first, steps):
    s = TfidfSettings(MixPRConfig(stop_words=None))
    table, texts = TermTable.build(s, first), list(first)
    for op, new in steps:
        if op == "use":  # a search in between: the pending rows take their canonical form
            table.embeddings()
        elif op == "remove" and len(texts) > 1:
            table = table.remove(np.arange(len(texts)) != 0)
            texts = texts[1:]
        elif op == "branch" and new:  # two tables grown from one: each its own vocabulary
            other = table.add(["unseen words only here"] + new)
            _same_table(other, TermTable.build(s, texts + ["unseen words only here"] + new))
            table, texts = table.add(new), texts + new
        elif new:
            table, texts = table.add(new), texts + new
    _same_table(table, TermTable.build(s, texts))


def test_index_appends_and_snapshot_branches_equal_fresh_builds():
    base = [f"The {a} saw the {b} near the {c}." for a, b, c in zip(WORDS, WORDS[3:], WORDS[5:])]
    index = MixPRIndex.from_texts(base)
    for i in range(30):
        index.insert([f"The knight met traveller zz{i}x near the castle."], ids=[f"n{i}"])
    snap = index.snapshot()
    snap.insert(["A branch about the whale zzbranch."], ids=["b"])
    index.insert(["Another branch about the sea zzother."], ids=["c"])
    for ix in (index, snap):
        fresh = MixPRIndex.from_texts(list(ix.texts), ids=list(ix.doc_ids))
        _same_table(ix.terms, fresh.terms)
        for q in ("Where did the knight meet the traveller?", "whale sea"):
            a, b = ix.search(q, k=10, mode="local"), fresh.search(q, k=10, mode="local")
            assert [(h.source, h.start, h.score) for h in a.hits] == [
                (h.source, h.start, h.score) for h in b.hits
            ]


def _corpus(n_words: int, seed: int = 0) -> list[str]:
    """Sentences of Zipf-drawn words over a vocabulary that grows with the text."""
    rng = np.random.default_rng(seed)
    ids = rng.zipf(1.3, n_words) % (n_words // 4)
    words = [f"w{int(i)}x" for i in ids]
    sents = [" ".join(words[i : i + 15]) + "." for i in range(0, n_words, 15)]
    return [" ".join(sents[i : i + 40]) for i in range(0, len(sents), 40)]


def _insert_time(n_words: int) -> float:
    index = MixPRIndex.from_texts(_corpus(n_words))
    index.search("w1x w2x", k=5)  # canonical, as after any search
    best = float("inf")
    for r in range(6):
        t0 = time.perf_counter()
        for i in range(60):
            index.insert([f"The traveller new{r}q{i}word reached the castle."], ids=[f"{r}-{i}"])
        best = min(best, time.perf_counter() - t0)
        index.search("w1x w2x", k=5)
    return best


def test_one_small_insert_costs_the_same_in_a_4x_larger_index():
    # before: each insert re-sorted the vocabulary and remapped every count (4x the index, 4x)
    small, large = _insert_time(50_000), _insert_time(200_000)
    assert large / small < 2.5, (small, large)
