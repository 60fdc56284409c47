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


# ------------------------------------------------------------------- batches (issue 32)
def _counting_llamaindex(embed_batch_size=None):
    """A real LlamaIndex ``BaseEmbedding`` counting its requests (``_get_text_embeddings``)."""
    from llama_index.core.base.embeddings.base import BaseEmbedding

    calls = []

    class Counting(BaseEmbedding):
        def _get_query_embedding(self, query):
            return _vec(query)

        async def _aget_query_embedding(self, query):
            return _vec(query)

        def _get_text_embedding(self, text):
            calls.append(1)
            return _vec(text)

        def _get_text_embeddings(self, texts):
            calls.append(len(texts))
            return [_vec(t) for t in texts]

    kw = {} if embed_batch_size is None else {"embed_batch_size": embed_batch_size}
    return Counting(model_name="counting", **kw), calls


class _CountingLangChain(FakeLangChain):
    def __init__(self):
        self.calls = []

    def embed_documents(self, texts):
        self.calls.append(len(texts))
        return super().embed_documents(texts)


def test_units_go_through_the_models_batch_api_in_large_batches():
    """Issue 32: LlamaIndex's default embed_batch_size (10) sent 11k chunks 10 at a time."""
    from longctx.embeddings import LLAMAINDEX_BATCH_SIZE, embed_texts

    texts = [f"text number {i} " + "a" * (i % 7) for i in range(1000)]
    li, calls = _counting_llamaindex()
    assert li.embed_batch_size == 10  # LlamaIndex's default
    out = embed_texts(li, texts)
    assert out.shape == (1000, 3)
    assert len(calls) <= 1000 / LLAMAINDEX_BATCH_SIZE + 1 and sum(calls) == 1000
    assert max(calls) == LLAMAINDEX_BATCH_SIZE
    assert li.embed_batch_size == 10  # the app's setting is restored after the call
    # the vectors are the model's, in order
    np.testing.assert_allclose(out[17], l2_normalize(np.array([_vec(texts[17])]))[0], rtol=1e-6)
    # an embed_batch_size the app chose is kept (a memory or API limit)
    li32, calls32 = _counting_llamaindex(32)
    embed_texts(li32, texts)
    assert max(calls32) == 32 and len(calls32) <= 1000 / 32 + 1
    lc = _CountingLangChain()
    embed_texts(lc, texts)
    assert len(lc.calls) <= 1000 / 256 + 1 and sum(lc.calls) == 1000
    # a caller's batch size is rounded to whole requests: no extra partial request per call
    li2, calls2 = _counting_llamaindex()
    embed_texts(li2, texts, batch_size=100)
    assert len(calls2) == -(-1000 // 64)


def test_hybrid_mixpr_embeds_the_apps_units_in_batches():
    """Through the adapters: LlamaIndex ``embed_model=`` and LangChain ``embeddings=``."""
    from langchain_core.documents import Document
    from llama_index.core.schema import TextNode

    from langchain_longctx import MixPRRetriever as LCRetriever
    from llamaindex_longctx import MixPRRetriever as LIRetriever

    text = " ".join(f"Sentence {i} tells about item {i}." for i in range(600))
    li, calls = _counting_llamaindex()
    r = LIRetriever([TextNode(text=text, id_="n")], embed_model=li, max_words=8)
    n = r.index.n_units
    assert n >= 500 and sum(calls) == n and len(calls) <= n / 64 + 1
    lc = _CountingLangChain()
    r2 = LCRetriever(documents=[Document(page_content=text, id="d")], embeddings=lc, max_words=8)
    assert sum(lc.calls) == r2.index.n_units and len(lc.calls) <= r2.index.n_units / 256 + 1


def test_require_query_encoder():
    from longctx.embeddings import DEFAULT_MODEL_NAME, require_query_encoder

    require_query_encoder({}, None, where="x", argument="embeddings")  # not hybrid
    require_query_encoder({"name": DEFAULT_MODEL_NAME, "dim": 384}, None, where="x", argument="e")
    require_query_encoder({"name": "m", "dim": 3}, object(), where="x", argument="e")
    with pytest.raises(ValueError, match=r"'m' \(3 dimensions\).*embeddings=\.\.\."):
        require_query_encoder({"name": "m", "dim": 3}, None, where="x", argument="embeddings")


def test_framework_wrappers_of_the_packaged_model_are_its_encoder():
    """``LongctxEmbedding`` / ``LongctxEmbeddings`` unwrap to the longctx encoder (nothing loaded
    here: the model loads on first use)."""
    from langchain_longctx import LongctxEmbeddings
    from llamaindex_longctx import LongctxEmbedding
    from longctx.embeddings import DEFAULT_MODEL_NAME

    for wrapper in (LongctxEmbedding(), LongctxEmbeddings()):
        enc = get_encoder(wrapper)
        assert isinstance(enc, SentenceTransformerEncoder) and enc.name == DEFAULT_MODEL_NAME
        assert enc.model_path is None  # the packaged model, not a hub name
    li = LongctxEmbedding(model_name="/some/model", device="cpu", embed_batch_size=16)
    enc = get_encoder(li)
    assert (enc.name, enc.device, enc.batch_size) == ("/some/model", "cpu", 16)
    assert LongctxEmbedding.class_name() == "LongctxEmbedding"
    assert li.to_dict()["model_name"] == "/some/model"


@pytest.mark.slow
def test_packaged_model_as_the_llamaindex_app_model_and_langchain_embeddings(tmp_path):
    from langchain_core.documents import Document
    from llama_index.core import Settings
    from llama_index.core.schema import TextNode

    from langchain_longctx import LongctxEmbeddings
    from langchain_longctx import MixPRRetriever as LCRetriever
    from llamaindex_longctx import LongctxEmbedding
    from llamaindex_longctx import MixPRRetriever as LIRetriever

    texts = ["The cat sat on the mat.", "Stocks fell sharply."]
    want = get_encoder().embed_documents(texts)
    li, lc = LongctxEmbedding(), LongctxEmbeddings()
    np.testing.assert_allclose(li.get_text_embedding_batch(texts), want, atol=1e-5)
    np.testing.assert_allclose(lc.embed_documents(texts), want, atol=1e-5)
    q = get_encoder().embed_query("Where did the cat sit?")
    np.testing.assert_allclose(li.get_query_embedding("Where did the cat sit?"), q, atol=1e-5)
    saved = Settings._embed_model
    try:
        Settings.embed_model = LongctxEmbedding()  # the one-liner of the docs
        r = LIRetriever([TextNode(text=" ".join(texts), id_="n")], embed_model=Settings.embed_model)
        r.persist(tmp_path / "li")
    finally:
        Settings._embed_model = saved
    # saved under the model's own name: it reloads without being passed again
    loaded = LIRetriever.from_persist_dir(tmp_path / "li")
    assert loaded.index.encoder_identity["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert [n.text for n in loaded.retrieve("feline")] == [n.text for n in r.retrieve("feline")]
    r2 = LCRetriever(documents=[Document(page_content=" ".join(texts), id="d")], embeddings=lc)
    r2.save(tmp_path / "lc")
    back = LCRetriever.load(tmp_path / "lc")
    assert [d.id for d in back.invoke("feline")] == [d.id for d in r2.invoke("feline")]
