"""DiversityIndex (longctx.diversity.index): build once, query many, persistence, concurrency."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import numpy as np
import pytest

import longctx
import longctx.diversity as div
from longctx.diversity import DiversityIndex, fps_select, mmr_select
from longctx.embeddings import EmbeddingCache, embed_texts, get_encoder
from longctx.persist import PersistError
from longctx.types import SearchResult
from tests._persist_helpers import restamp
from tests.test_diversity import HashEncoder

BOOK = [
    "The cat sat on the mat. The cat sat on the mat again. The cat sat on a mat. "
    "Paris is the capital of France. Dogs bark at night. The cat likes fish.",
    "Rome is the capital of Italy. Cats and dogs play. The weather in Paris is mild. "
    "A mat is on the floor. Fish swim in the river.",
]
QUERIES = ["Where did the cat sit?", "capital of France", "dogs at night", "fish", "weather"]


class CountingEncoder(HashEncoder):
    def __init__(self):
        self.calls = 0

    def __call__(self, texts):
        self.calls += len(texts)
        return super().__call__(texts)


@pytest.fixture
def index():
    return DiversityIndex.from_texts(BOOK, get_encoder(HashEncoder()))


def _ids(result):
    return [(h.source, h.start, h.end) for h in result.hits]


def test_package_exports():
    assert set(div.__all__) == {
        "mmr_select",
        "fps_select",
        "reference_select",
        "compute_rewards",
        "order_selection",
        "diversify",
        "rerank",
        "DiversityIndex",
        "METHODS",
    }
    for name in div.__all__:
        assert getattr(div, name) is not None
    assert longctx.DiversityIndex is DiversityIndex and "DiversityIndex" in longctx.__all__


def test_hits_are_exact_slices_and_modes(index):
    res = index.search("Where did the cat sit?", k=4, lambda_=0.5)
    assert isinstance(res, SearchResult) and res.method == "mmr" and res.mode == "query"
    assert len(res) == 4 and set(res.timings) >= {"embed_query", "select"}
    for h in res.hits:
        assert index.texts[h.source][h.start : h.end] == h.text
    assert [(h.source, h.start) for h in res.hits] == sorted((h.source, h.start) for h in res.hits)
    # unit index counts within its own source text
    assert {h.index for h in res.hits if h.source == 1} <= set(range(5))
    summary = index.search(k=3, method="fps")
    assert summary.mode == "summary" and summary.method == "fps" and len(summary) == 3
    assert summary.timings["embed_query"] < 0.01
    budget = index.search("cat", token_budget=12)
    assert budget.budget["token_budget"] == 12 and budget.info["tokens_selected"] <= 12
    by_score = index.search("cat", k=3, order="score")
    assert sorted(_ids(by_score)) == sorted(_ids(index.search("cat", k=3)))


def test_search_agrees_with_select_functions(index):
    enc = get_encoder(HashEncoder())
    q = enc.embed_query("capital of France")
    for method, select in (("mmr", mmr_select), ("fps", fps_select)):
        for window in (None, 1, 2):
            res = index.search(
                "capital of France", k=5, method=method, lambda_=0.4, window=window, order="score"
            )
            picks = select(index.embeddings, k=5, query_embedding=q, lambda_=0.4, window=window)
            spans = index.spans()
            assert _ids(res) == [spans[i] for i in picks]


def test_bad_arguments_are_named(index):
    for kwargs, name in [
        (dict(k=0), "k"),
        (dict(token_budget=0), "token_budget"),
        (dict(), "k, token_budget or ratio"),
        (dict(k=1, method="xyz"), "method"),
        (dict(k=1, order="sideways"), "order"),
        (dict(k=1, lambda_=2.0), "lambda_"),
        (dict(k=1, window=0), "window"),
        (dict(k=1, rewards=[1.0]), "rewards"),
        (dict(k=1, query_embedding=np.ones(3)), "dimension"),
    ]:
        with pytest.raises((TypeError, ValueError), match=name):
            index.search(**kwargs)
    with pytest.raises(ValueError, match="query"):
        index.search("   ", k=1)
    with pytest.raises(ValueError, match=r"texts\[1\]"):
        DiversityIndex.from_texts(["fine", " "], get_encoder(HashEncoder()))
    with pytest.raises(ValueError, match="unit"):
        DiversityIndex.from_texts("x", get_encoder(HashEncoder()), unit="word")


def test_no_encoder_means_query_embedding_needed():
    e = np.random.default_rng(0).normal(size=(2, 8))
    idx = DiversityIndex.from_texts(["one.", "two."], unit="text", embeddings=e)
    with pytest.raises(ValueError, match="no encoder"):
        idx.search("q", k=1)
    assert len(idx.search(query_embedding=e[1], k=1)) == 1
    assert idx.search(query_embedding=e[1], k=1).hits[0].source == 1


def test_save_load_round_trip(index, tmp_path):
    index.save(tmp_path / "idx")
    files = sorted(p.name for p in (tmp_path / "idx").iterdir())
    assert files == ["config.json", "embeddings.npz", "manifest.json", "texts.json", "units.json"]
    loaded = DiversityIndex.load(tmp_path / "idx", encoder=HashEncoder())
    assert loaded.texts == index.texts and np.array_equal(loaded.embeddings, index.embeddings)
    assert loaded.embeddings.dtype == np.float32
    assert loaded.encoder_identity == index.encoder_identity
    for q in QUERIES + [None]:
        for method in ("mmr", "fps"):
            a = index.search(q, k=4, method=method, window=2)
            b = loaded.search(q, k=4, method=method, window=2)
            assert a.hits == b.hits
    # without an encoder: summary mode and query embeddings still work
    bare = DiversityIndex.load(tmp_path / "idx")
    assert bare.search(k=3).hits == index.search(k=3).hits
    with pytest.raises(ValueError, match="no encoder"):
        bare.search("cat", k=1)


def test_load_checks_the_encoder(index, tmp_path):
    index.save(tmp_path / "idx")
    with pytest.raises(ValueError, match="dimensions"):
        DiversityIndex.load(tmp_path / "idx", encoder=lambda texts: np.ones((len(texts), 5)))

    def other(texts):  # same dimension, another model
        return np.ones((len(texts), HashEncoder.dim))

    with pytest.warns(UserWarning, match="built with encoder") as rec:
        DiversityIndex.load(tmp_path / "idx", encoder=other)
    assert [w.filename for w in rec] == [__file__]  # the warning names the caller's line


@pytest.mark.parametrize(
    ("damage", "name"),
    [
        (lambda d: (d / "embeddings.npz").unlink(), "embeddings.npz"),
        (lambda d: (d / "embeddings.npz").write_bytes(b"PK\x03\x04trunc"), "embeddings.npz"),
        (lambda d: (d / "units.json").write_text("{", "utf-8"), "units.json"),
        (lambda d: (d / "units.json").write_text('{"source": [0]}', "utf-8"), "units.json"),
        (  # a forger who rewrites the manifest's digests too: the spans still catch it
            lambda d: ((d / "texts.json").write_text('["short"]', "utf-8"), restamp(d)),
            "units.json",
        ),
        (lambda d: (d / "config.json").unlink(), "config.json"),
        (lambda d: (d / "manifest.json").unlink(), "manifest.json"),
        (
            lambda d: (d / "manifest.json").write_text(
                json.dumps({**json.loads((d / "manifest.json").read_text()), "format_version": 99}),
                "utf-8",
            ),
            "format version",
        ),
    ],
)
def test_damaged_files_raise_persist_error_naming_them(index, tmp_path, damage, name):
    d = tmp_path / "idx"
    index.save(d)
    damage(d)
    with pytest.raises(PersistError, match=name):
        DiversityIndex.load(d, encoder=HashEncoder())


def test_concurrent_searches_match_sequential(index):
    jobs = [
        dict(query=q, k=3, method=m, window=w)
        for q in QUERIES
        for m in ("mmr", "fps")
        for w in (None, 1)
    ]
    before = index.embeddings.copy()
    sequential = [index.search(**j).hits for j in jobs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        parallel = list(pool.map(lambda j: index.search(**j).hits, jobs))
    assert parallel == sequential
    assert np.array_equal(index.embeddings, before) and not index.embeddings.flags.writeable


def test_large_index_concurrency_uses_blas_guard():
    """8 threads on an index big enough for the lazy greedy and BLAS thread control."""
    rng = np.random.default_rng(5)
    e = rng.normal(size=(3000, 80)).astype(np.float32)  # > 2048 rows, > 64 dims: probes on
    idx = DiversityIndex.from_texts(
        [f"s{j}." for j in range(3000)], unit="text", embeddings=e, token_counter=lambda t: 1
    )
    qs = rng.normal(size=(8, 80))
    seq = [idx.search(query_embedding=q, token_budget=150, lambda_=0.5).hits for q in qs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        par = list(pool.map(lambda q: idx.search(query_embedding=q, token_budget=150).hits, qs))
    assert par == seq
    # the index keeps the probe projection; the picks are those of the plain function
    picks = mmr_select(e, None, np.ones(3000, int), 150, query_embedding=qs[0], lambda_=0.5)
    assert [h.source for h in seq[0]] == sorted(picks)


def test_embedding_cache_by_content_hash():
    enc = get_encoder(CountingEncoder())
    cache = EmbeddingCache(max_entries=4)
    a = embed_texts(enc, ["one", "two", "one"], cache=cache)
    assert enc.fn.calls == 2 and np.array_equal(a[0], a[2]) and len(cache) == 2
    b = embed_texts(enc, ["two", "one", "three"], cache=cache)
    assert enc.fn.calls == 3 and np.allclose(b[:2], a[[1, 0]])
    embed_texts(enc, ["4", "5", "6"], cache=cache)  # bounded: the oldest entries go
    assert len(cache) == 4
    other = get_encoder(CountingEncoder())  # another encoder never sees these vectors
    embed_texts(other, ["one"], cache=cache)
    assert other.fn.calls == 1
    # the one-off diversify reuses the process-wide cache
    counting = CountingEncoder()
    enc2 = get_encoder(counting)
    div.diversify(BOOK[0], "cat", k=2, encoder=enc2)
    n = counting.calls
    div.diversify(BOOK[0], "dogs", k=2, encoder=enc2)
    assert counting.calls == n + 1  # only the query


def test_cli_run_returns_search_result(monkeypatch):
    import longctx.cli.diversity as cli

    monkeypatch.setattr(cli, "_encoder", lambda args: get_encoder(HashEncoder()))
    args = SimpleNamespace(method="fps", lambda_=0.5, window=None, k=2, budget=None)
    res = cli.run(BOOK[0], "cat", args)
    assert isinstance(res, SearchResult) and res.method == "fps" and len(res) == 2
    spans, scores, counts = cli.score_units(BOOK[0], "cat", args)
    assert len(spans) == len(scores) == len(counts) == 6
    assert all(BOOK[0][a:b] for a, b in spans)


def test_user_embeddings_stay_writeable_and_unchanged():
    e = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32)
    e /= np.linalg.norm(e, axis=1, keepdims=True)  # unit rows: used without a copy
    before = e.copy()
    idx = DiversityIndex.from_texts(["a.", "b.", "c.", "d."], unit="text", embeddings=e)
    idx.search(k=2)
    assert e.flags.writeable and np.array_equal(e, before)
    assert not idx.embeddings.flags.writeable


def _no_punctuation(n_words=20_000):
    rng = np.random.default_rng(14)
    vocab = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "lamp", "north"]
    return " ".join(vocab[i] for i in rng.integers(0, len(vocab), n_words))


def test_long_sentences_are_split_on_word_boundaries():
    """Issue #14: a text without punctuation is not one huge unit; no hit exceeds the cut."""
    from longctx.tokens import count_tokens

    text = _no_punctuation()
    idx = DiversityIndex.from_texts(text, get_encoder(HashEncoder()))
    assert idx.max_unit_tokens == 128 and len(idx) > 1
    spans = idx.spans()
    assert all(count_tokens(text[a:b]) <= 128 for _, a, b in spans)
    assert max(idx.token_counts) <= 128
    # every non-space character exactly once, pieces in order and not overlapping
    assert "".join(text[a:b] for _, a, b in spans).replace(" ", "") == text.replace(" ", "")
    assert all(b1 <= a2 for (_, _, b1), (_, a2, _) in zip(spans, spans[1:]))
    res = idx.search("river stone", token_budget=300, method="mmr")
    sizes = [count_tokens(h.text) for h in res.hits]
    assert res.hits and all(s <= 128 for s in sizes) and sum(sizes) <= 300
    assert res.info["tokens_selected"] <= 300
    # the one-off form splits too
    hits = div.diversify(text, "river", token_budget=300, encoder=get_encoder(HashEncoder()))
    assert hits and sum(count_tokens(h.text) for h in hits) <= 300


def test_max_unit_tokens_none_keeps_sentences_whole():
    text = _no_punctuation(2_000)
    idx = DiversityIndex.from_texts(text, get_encoder(HashEncoder()), max_unit_tokens=None)
    assert idx.max_unit_tokens is None and len(idx) == 1
    assert idx.spans() == [(0, 0, len(text))]
    # one unit per text: nothing is cut
    whole = DiversityIndex.from_texts(text, get_encoder(HashEncoder()), unit="text")
    assert len(whole) == 1 and whole.max_unit_tokens is None


@pytest.mark.parametrize("bad", [0, -3, "x", 2.5, True])
def test_bad_max_unit_tokens_is_named(bad):
    with pytest.raises((TypeError, ValueError), match="max_unit_tokens"):
        DiversityIndex.from_texts(BOOK, get_encoder(HashEncoder()), max_unit_tokens=bad)
    with pytest.raises((TypeError, ValueError), match="max_unit_tokens"):
        div.diversify(BOOK[0], "cat", k=1, encoder=HashEncoder(), max_unit_tokens=bad)


def test_max_unit_tokens_survives_save_load(tmp_path):
    text = _no_punctuation(1_000)
    idx = DiversityIndex.from_texts(text, get_encoder(HashEncoder()), max_unit_tokens=50)
    assert idx.max_unit_tokens == 50 and max(idx.token_counts) <= 50
    idx.save(tmp_path / "idx")
    config = json.loads((tmp_path / "idx" / "config.json").read_text("utf-8"))
    assert config["max_unit_tokens"] == 50
    loaded = DiversityIndex.load(tmp_path / "idx", encoder=HashEncoder())
    assert loaded.max_unit_tokens == 50 and loaded.spans() == idx.spans()
    # an index saved before the setting existed loads as built (not cut)
    del config["max_unit_tokens"]
    (tmp_path / "idx" / "config.json").write_text(json.dumps(config), "utf-8")
    restamp(tmp_path / "idx")
    old = DiversityIndex.load(tmp_path / "idx", encoder=HashEncoder())
    assert old.max_unit_tokens is None and old.spans() == idx.spans()


def test_cli_index_splits_long_sentences(monkeypatch):
    import longctx.cli.diversity as cli
    from longctx.tokens import count_tokens

    monkeypatch.setattr(cli, "_encoder", lambda args: get_encoder(HashEncoder()))
    text = _no_punctuation(2_000)
    args = SimpleNamespace(method="mmr", lambda_=0.5, window=None, k=None, budget=300)
    res = cli.run(text, "river", args)
    sizes = [count_tokens(h.text) for h in res.hits]
    assert res.hits and all(s <= 128 for s in sizes) and sum(sizes) <= 300
