"""Encoder wrappers (longctx.embeddings): duck-typed LlamaIndex / LangChain / callables, MiniLM."""

from __future__ import annotations

import numpy as np
import pytest

from longctx.embeddings import (
    CallableEncoder,
    LangChainEncoder,
    LlamaIndexEncoder,
    SentenceTransformerEncoder,
    get_encoder,
    l2_normalize,
)


def _vec(t):
    return [float(len(t)), float(t.count("a")), 1.0]


class FakeLlamaIndex:
    def get_text_embedding_batch(self, texts, **kw):
        return [_vec(t) for t in texts]

    def get_query_embedding(self, q):
        return [0.0, 0.0, 2.0]


class FakeLangChain:
    def embed_documents(self, texts):
        return [_vec(t) for t in texts]

    def embed_query(self, q):
        return [0.0, 3.0, 0.0]


def test_duck_typed_wrappers_normalize_float32():
    li, lc = get_encoder(FakeLlamaIndex()), get_encoder(FakeLangChain())
    assert isinstance(li, LlamaIndexEncoder) and isinstance(lc, LangChainEncoder)
    for enc in (li, lc):
        e = enc.embed_documents(["banana", "kiwi", "a"])
        assert e.dtype == np.float32 and e.shape == (3, 3)
        np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(
            e[0], np.array(_vec("banana")) / np.linalg.norm(_vec("banana")), rtol=1e-6
        )
    np.testing.assert_allclose(li.embed_query("x"), [0, 0, 1])
    np.testing.assert_allclose(lc.embed_query("x"), [0, 1, 0])
    fn = get_encoder(lambda texts: np.array([_vec(t) for t in texts]))
    assert isinstance(fn, CallableEncoder)
    np.testing.assert_allclose(
        fn.embed_query("aa"), np.array(_vec("aa")) / np.linalg.norm(_vec("aa"))
    )
    assert get_encoder(li) is li
    assert isinstance(get_encoder(None), SentenceTransformerEncoder)  # lazy: nothing loaded yet


def test_bad_inputs_and_outputs():
    enc = get_encoder(FakeLangChain())
    with pytest.raises(TypeError, match="texts"):
        enc.embed_documents("one string")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        enc.embed_documents(["ok", 3])
    with pytest.raises(TypeError, match="query"):
        enc.embed_query(None)
    assert enc.embed_documents([]).shape[0] == 0
    with pytest.raises(TypeError, match="encoder"):
        get_encoder(42)
    bad = get_encoder(lambda texts: np.full((len(texts), 2), np.nan))
    with pytest.raises(ValueError, match="NaN"):
        bad.embed_documents(["x"])
    short = get_encoder(lambda texts: np.ones((1, 2)))
    with pytest.raises(RuntimeError, match="2 texts"):
        short.embed_documents(["x", "y"])
    z = l2_normalize(np.zeros((2, 3)))
    assert np.all(z == 0)


@pytest.mark.slow
def test_minilm_default_encoder_and_diversify(tmp_path):
    from longctx.diversity import diversify

    enc = get_encoder()
    e = enc.embed_documents(
        ["The cat sat on the mat.", "A cat was sitting on a mat.", "Stocks fell."]
    )
    assert e.shape == (3, 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, rtol=1e-5)
    assert e[0] @ e[1] > 0.6 > e[0] @ e[2]
    assert enc.model is get_encoder().model  # loaded once, shared
    text = (
        "The cat sat on the mat. A cat was sitting on a mat. The cat sat on the mat today. "
        "Stock markets fell sharply on Monday. The weather is sunny."
    )
    plain = diversify(text, "Where did the cat sit?", k=2, lambda_=1.0, encoder=enc)
    mmr = diversify(text, "Where did the cat sit?", k=2, lambda_=0.5, encoder=enc)
    assert all("cat" in p.text for p in plain)
    assert sum("cat" in p.text for p in mmr) == 1
    # an index built with the default encoder reloads it by name (identity saved, dim checked)
    from longctx import DiversityIndex

    index = DiversityIndex.from_texts(text)
    index.save(tmp_path / "idx")
    loaded = DiversityIndex.load(tmp_path / "idx")
    assert loaded.encoder_identity == {"name": enc.name, "dim": 384}
    q = "Where did the cat sit?"
    assert loaded.search(q, k=2).hits == index.search(q, k=2).hits == tuple(mmr)


def test_encoder_identity_and_cache_keys():
    from longctx.embeddings import DEFAULT_MODEL_NAME

    st = get_encoder(None)
    assert st.name == DEFAULT_MODEL_NAME and st.identity() == {
        "name": DEFAULT_MODEL_NAME,
        "dim": None,
    }
    assert st.cache_key == get_encoder(None).cache_key  # same model, same cached vectors

    class Named(FakeLangChain):
        model_name = "my-model"

    class Unknown(FakeLlamaIndex):
        model_name = "unknown"

    a, b = get_encoder(Named()), get_encoder(Named())
    assert a.name == "langchain:Named:my-model" and a.cache_key == b.cache_key
    u1, u2 = get_encoder(Unknown()), get_encoder(Unknown())
    assert u1.name == "llamaindex:Unknown" and u1.cache_key != u2.cache_key  # unnamed: per object

    def batch(texts):
        return np.array([_vec(t) for t in texts])

    f = get_encoder(batch)
    assert f.name.endswith(".batch") and f.name.startswith("callable:tests.test_embeddings.")
    f.embed_documents(["abc"])
    assert f.identity()["dim"] == 3


def test_progress_bar_only_on_a_terminal(capsys, monkeypatch):
    """``progress=None`` (the default of the indexes) draws no bar into a redirected stderr."""
    import sys

    from longctx.embeddings import embed_texts, progress_default

    def enc(texts):
        return np.ones((len(texts), 4), np.float32)

    embed_texts(enc, ["a", "b"], progress=None)
    assert capsys.readouterr().err == ""  # pytest's captured stderr is not a terminal
    embed_texts(enc, ["a", "b"], progress=True)
    assert "embedding" in capsys.readouterr().err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert progress_default() is True


def test_no_progress_bar_when_stderr_is_not_a_terminal(capsys):
    from longctx.diversity import DiversityIndex
    from tests.test_diversity import HashEncoder

    DiversityIndex.from_texts("The cat sat. The dog ran. " * 50, get_encoder(HashEncoder()))
    assert capsys.readouterr().err == ""  # progress=None: tqdm draws only on a terminal
