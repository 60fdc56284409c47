"""The phrase graph's fast paths give what the plain definitions give: the run expression
(:data:`longctx.mixpr.phrases._RUN_RE`) finds the runs of the look-behind-first expression it
replaced, and the graph's batched build (one extraction per distinct run, the heads of a unit
without a title line read from its mentions) gives the incidence of
:meth:`PhraseExtractor.phrases` and :meth:`PhraseExtractor.heads` unit by unit."""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.mixpr.phrases import (
    _CONN,
    _ELEM,
    _RUN_RE,
    _STOP,
    _WORD_RE,
    PhraseExtractor,
    PhraseGraph,
    _drop_qualifier,
    _norm,
)

# the run expression as first written: the look-behind tried at every character
REFERENCE_RUN_RE = re.compile(rf"(?<![\w'’\-–]){_ELEM}(?: (?:(?:{_CONN}) ){{0,3}}{_ELEM})*")

# words and marks that make runs, break them or sit at their edges
PIECES = [
    "Shirley", "Temple", "Black", "St.", "O.", "Ph.D.", "U.S.A.", "No.", "2", "1945", "17-year",
    "RAAF", "of", "the", "and", "van", "de", "la", "&", "for", "y", "The", "He", "It", "in",
    "Élodie", "Café", "ÆRØ", "Łódź", "Ивана", "ΑΘΗΝΑ", "李白", "東京", "Tokyo", "x", "a", "I",
    "(1945 film)", "Kansas,", "Brown_County", "the Film", "O'Brien", "Poison's", "d'If", "A–B", "x-Ray", "_Under", "’Tis", "Ǆemal", "ǅ", "Ⅻ", "٣",
    " ", " ", " ", "  ", "\n", "\n\n", ",", ".", ";", "(", ")", "'", "’", "-", "–", "—", "#",
    "_", "…", "\t", "\u00a0", "\u3000", "\x00", "\r", "\x0b", "\x1c",
]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
mixed = st.one_of(texts, st.text(max_size=60), st.text("Aa. -'’–&0\nÉ_", max_size=40))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed)
def test_run_expression_finds_the_reference_runs(text):
    assert _RUN_RE.findall(text) == REFERENCE_RUN_RE.findall(text)
    spans = [m.span() for m in _RUN_RE.finditer(text)]
    assert spans == [m.span() for m in REFERENCE_RUN_RE.finditer(text)]


def reference_phrases(ex, text):
    """:meth:`PhraseExtractor.phrases` as first written."""
    out = []
    for m in REFERENCE_RUN_RE.finditer(text):
        ex._spans_of_run(_norm(m.group()), out)
    return out


def reference_heads(ex, text):
    """:meth:`PhraseExtractor.heads` as first written."""
    first, sep, rest = text.strip().partition("\n")
    if sep and rest.strip() and 0 < len(first.split()) <= ex.max_head_words:
        names = [first, _drop_qualifier(first), first.split(",")[0]]
        out = []
        for name in dict.fromkeys(names):
            toks = _norm(" ".join(_WORD_RE.findall(name)))
            while toks and toks[0] in _STOP:
                toks = toks[1:]
            if toks and len(toks) <= ex.max_words:
                out.append(" ".join(toks))
        return list(dict.fromkeys(out))
    spans = []
    for m in REFERENCE_RUN_RE.finditer(text):
        ex._spans_of_run(_norm(m.group()), spans)
        if spans:
            return spans[:1]
    return []


EXTRACTORS = [PhraseExtractor(), PhraseExtractor(max_words=2, min_words=2, max_head_words=3)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(texts, texts.map(lambda t: t.replace(",", " ").replace(")", " "))),
    st.sampled_from(EXTRACTORS),
)
def test_phrases_and_heads_are_the_reference_ones(text, ex):
    assert ex.phrases(text) == reference_phrases(ex, text)
    assert ex.heads(text) == reference_heads(ex, text)


@settings(max_examples=400, deadline=None)
@given(mixed, st.integers(1, 4))
def test_title_line_is_the_reference_test(text, max_words):
    from longctx.mixpr.phrases import _title_line

    first, sep, rest = text.strip().partition("\n")
    is_title = bool(sep and rest.strip() and 0 < len(first.split()) <= max_words)
    assert _title_line(text, max_words) == (first if is_title else None)


def _reference_graph(units, ex, more_heads=None):
    """The incidence of ``units`` unit by unit from the extractor as first written."""
    vocab = sorted(
        {p for i, t in enumerate(units) for p in reference_phrases(ex, t) + reference_heads(ex, t)}
        | {p for hs in (more_heads or []) for p in hs}
    )
    col = {p: j for j, p in enumerate(vocab)}
    m = np.zeros((len(units), len(vocab)), np.float32)
    h = np.zeros((len(units), len(vocab)), np.float32)
    for i, t in enumerate(units):
        for p in reference_phrases(ex, t):
            m[i, col[p]] += 1
        for p in reference_heads(ex, t) + (more_heads[i] if more_heads else []):
            h[i, col[p]] = 1
    return vocab, m, h


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(texts, min_size=1, max_size=8),
    st.sampled_from(EXTRACTORS),
    st.booleans(),
)
def test_batched_build_gives_the_unit_by_unit_incidence(units, ex, with_heads):
    more = [["shirley temple", "x"][: i % 3] for i in range(len(units))] if with_heads else None
    g = PhraseGraph.from_texts(units, ex, heads=more)
    vocab, m, h = _reference_graph(units, ex, more)
    assert g.vocabulary == vocab
    np.testing.assert_array_equal(g.mentions.toarray(), m)
    np.testing.assert_array_equal(g.heads.toarray(), h)
    assert sp.csr_array(g.mentions).has_sorted_indices


def test_batched_build_shares_runs_across_units_and_blocks(monkeypatch):
    """Units of several blocks repeating the same runs: each unit keeps its own count."""
    import longctx.mixpr.phrases as ph

    monkeypatch.setattr(ph, "_BLOCK_UNITS", 3)
    units = [f"Alice met Bob in Paris. Alice {'and Bob ' * (i % 4)}left.\nBody." for i in range(10)]
    units += ["no names", "Carol Carol Carol", "Alice"]
    ex = PhraseExtractor()
    g = PhraseGraph.from_texts(units, ex)
    vocab, m, h = _reference_graph(units, ex)
    assert g.vocabulary == vocab
    np.testing.assert_array_equal(g.mentions.toarray(), m)
    np.testing.assert_array_equal(g.heads.toarray(), h)


def test_block_search_gives_each_text_its_runs():
    """Texts searched joined by NUL, or one by one when a text holds NUL: the same runs."""
    from longctx.mixpr.phrases import _SEP, _block_runs

    block = ["Alice met Bob.", "", "St.", "Louis Pasteur and", "X\n", "no", "Élodie Café"]
    block += ["Ludwig of the and Beethoven, Bank of the and of America", "Roger O. Egeberg"]
    runs, ends = _block_runs(block)
    per_text = [_RUN_RE.findall(t) for t in block]
    got = [[r for r in runs[a:b] if r != _SEP] for a, b in zip([0, *ends[:-1]], ends)]
    assert got == per_text
    with_nul = [*block, "Carol\x00Dave Smith"]
    runs, ends = _block_runs(with_nul)
    assert (
        _SEP not in runs
        and ends.tolist()
        == np.cumsum([len(r) for r in per_text + [_RUN_RE.findall(with_nul[-1])]]).tolist()
    )
    assert runs[-2:] == ["Carol", "Dave Smith"]


def test_unit_heads_gives_each_unit_its_own_list():
    """The build's _unit_heads shares a document's list between its units; unit_heads copies."""
    from longctx.mixpr.phrases import _unit_heads, unit_heads

    texts = ["Kiss and Tell\nA film. More text.", "no title here, Shirley Temple Black was", "x"]
    args = (texts, [0, 0, 0, 1, 2], [0, 14, 22, 0, 0], [14, 22, len(texts[0]), 40, 1])
    shared, fresh = _unit_heads(*args, doc_ids=["a", "b", "c"]), unit_heads(*args)
    assert shared == fresh and fresh[1] == fresh[2] == ["kiss and tell"]
    assert fresh[3] == [
        "shirley temple",
        "temple black",
    ]  # the lead heads of an untitled first unit
    assert shared[1] is shared[2] and fresh[1] is not fresh[2]
    fresh[1].append("x")
    assert fresh[2] == ["kiss and tell"]


def _passages(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    names = [f"Name{i} Surname{i % 97}" for i in rng.integers(0, 10 * n, n)]
    return [
        f"Title {i} of Things\nThe {nm} met Dr. Who in St. Louis, then {nm.split()[0]} left."
        if i % 3
        else f"the {nm} and the No. {i} Squadron RAAF went to Paris with {nm}."
        for i, nm in enumerate(names)
    ]


def test_each_distinct_run_is_extracted_once(monkeypatch):
    calls = []
    real = PhraseExtractor._run_phrases
    monkeypatch.setattr(PhraseExtractor, "_run_phrases", lambda s, r: calls.append(r) or real(s, r))
    units = _passages(300, 0)
    PhraseGraph.from_texts(units * 4)
    assert len(calls) == len(set(calls)) == len({r for t in units for r in _RUN_RE.findall(t)})


def test_build_cost_is_linear():
    """CPU seconds for 4x the units (new names throughout) within 6x those of 1x (best of 3)."""
    import time

    def cost(units):
        best = float("inf")
        for _ in range(3):
            t0 = time.process_time()
            PhraseGraph.from_texts(units)
            best = min(best, time.process_time() - t0)
        return best

    small, large = _passages(3000, 1), _passages(12000, 2)
    assert cost(large) < 6 * cost(small)
