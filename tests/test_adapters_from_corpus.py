"""Both adapters' ``CorpusRetriever.from_corpus``: an argument the retriever does not take is
refused before the corpus loads, and a bad value closes the corpus it loaded (on Ray its shard
actors kept running: the corpus was neither returned nor closed)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from longctx.corpus import CorpusIndex, build_indexes
from longctx.io import sample_text

pytest.importorskip("langchain_core")
pytest.importorskip("llama_index.core")


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    t = sample_text("alice")
    out = tmp_path_factory.mktemp("c") / "corpus"
    build_indexes([("a", t[5_000:9_000]), ("b", t[60_000:64_000])], "mixpr", out, progress=False)
    return out


@pytest.fixture
def opened(monkeypatch):
    """``[loaded, closed]``: how many corpora ``CorpusIndex.from_corpus`` loaded and
    ``CorpusIndex.close`` closed."""
    counts = [0, 0]
    load, close = CorpusIndex.from_corpus.__func__, CorpusIndex.close

    def counted_load(cls, *args, **kwargs):
        counts[0] += 1
        return load(cls, *args, **kwargs)

    def counted_close(self):
        counts[1] += 1
        return close(self)

    monkeypatch.setattr(CorpusIndex, "from_corpus", classmethod(counted_load))
    monkeypatch.setattr(CorpusIndex, "close", counted_close)
    return counts


def _retriever(framework):
    if framework == "langchain":
        from langchain_longctx import CorpusRetriever
    else:
        from llamaindex_longctx import CorpusRetriever
    return CorpusRetriever


@pytest.mark.parametrize(
    "framework, size", [("langchain", "k"), ("llamaindex", "similarity_top_k")]
)
def test_from_corpus_loads_nothing_for_an_unknown_argument(corpus_dir, opened, framework, size):
    cls = _retriever(framework)
    # a typo, named as each constructor names it: before, the corpus loaded first
    with pytest.raises(ValidationError if framework == "langchain" else TypeError, match="top_kk"):
        cls.from_corpus(corpus_dir, top_kk=3)
    assert opened == [0, 0]
    with pytest.raises((TypeError, ValueError)):
        cls.from_corpus(corpus_dir, **{size: 0})  # a bad value: known only once constructed
    assert opened == [1, 1]  # before: loaded, never closed
    r = cls.from_corpus(corpus_dir, **{size: 2})
    assert opened == [2, 1] and r.corpus.doc_ids == ("a", "b")
    r.close()
    assert opened == [2, 2]
