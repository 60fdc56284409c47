"""A keyword a corpus's indexes do not take is refused by ``CorpusIndex.search`` before any
search work, naming it and the ones they take (a new user's pass, session 20: LangChain's
``CorpusRetriever.invoke(q, kk=3)`` raised ``MixPRIndex.search() got an unexpected keyword
argument 'kk'``, naming an internal method)."""

from __future__ import annotations

import pytest

from longctx.corpus import CorpusIndex, build_indexes

DOCS = [
    ("a", "Alice went down the rabbit hole. The white rabbit was late."),
    ("b", "Scrooge hated Christmas. Marley was dead."),
]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("kw") / "corpus"
    assert not build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False).failed
    return out


def test_an_unknown_keyword_is_named_with_the_ones_taken(corpus_dir):
    corpus = CorpusIndex.from_corpus(corpus_dir)
    with pytest.raises(TypeError, match=r"'kk' for a search of this corpus .*token_budget"):
        corpus.search("Who was late?", kk=3)
    assert corpus.search("Who was late?", k=1, token_budget=None).hits  # known ones still work


def test_langchain_corpus_retriever_names_a_per_call_typo(corpus_dir):
    from langchain_longctx import CorpusRetriever

    r = CorpusRetriever.from_corpus(corpus_dir, k=2)
    assert r.invoke("Who was late?", token_budget=20)  # a per-call budget, as documented
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'kk' for a search"):
        r.invoke("Who was late?", kk=3)
