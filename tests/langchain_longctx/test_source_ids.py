"""Duplicate and missing document ids in the LangChain adapters: no id twice, documents without
id labelled by their true position; k / token_budget checked by the core rule."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document

from langchain_longctx import DiversityCompressor, MixPRRetriever, YouraCompressor
from langchain_longctx.youra_retriever import YouraRetriever
from longctx.text import split_sentences
from tests._fixtures import SOURCE_A as A
from tests._fixtures import SOURCE_B as B
from tests._fixtures import shared_tiny_scorer as tiny_scorer
from tests._youra_helpers import QUERY
from tests.langchain_longctx._fixtures import HashEmbeddings


def test_mixpr_documents_with_one_id_give_unique_ids():
    docs = [Document(page_content=A, id="x"), Document(page_content=B, id="x")]
    out = MixPRRetriever(documents=docs, k=6, order="document").invoke(
        "What did the cat and dog do?"
    )
    ids = [d.id for d in out]
    assert len(ids) == len(set(ids)) == 6
    assert ids[:3] == ["x#0-23", "x#24-45", "x#46-67"] and all(
        i.startswith("x@1#") for i in ids[3:]
    )
    assert all(d.metadata["longctx_source_id"] == "x" for d in out)  # the user's id, kept


def test_documents_without_id_are_labelled_by_their_true_position():
    docs = [Document(page_content="   "), Document(page_content=B), Document(page_content=A)]
    out = MixPRRetriever(documents=docs, k=6).invoke("What did the cat do?")
    for d in out:
        pos = 1 if d.page_content in B else 2
        assert d.id.startswith(f"source{pos}#")
        a, b = d.metadata["longctx_start_char_idx"], d.metadata["longctx_end_char_idx"]
        assert docs[pos].page_content[a:b] == d.page_content


def test_diversity_compressor_never_returns_an_id_twice():
    docs = [
        Document(page_content="The cat sat on the mat.", id="x#40-76"),
        Document(page_content="Dogs bark at night.", id="x#40-76"),
    ]
    out = DiversityCompressor(k=2, lambda_=0.5, embeddings=HashEmbeddings()).compress_documents(
        docs, "cat"
    )
    assert sorted(d.id for d in out) == ["x#40-76", "x#40-76@1"]


def test_youra_adapters_keep_both_documents_with_one_id():
    docs = [Document(page_content=A, id="x"), Document(page_content=B, id="x")]
    n_sent = len(split_sentences(A)) + len(split_sentences(B))
    out = YouraRetriever(documents=docs, scorer=tiny_scorer(), k=50).invoke(QUERY)
    assert len(out) == n_sent == len({d.id for d in out})
    out = YouraCompressor(scorer=tiny_scorer(), k=50).compress_documents(docs, QUERY)
    assert len(out) == n_sent == len({d.id for d in out})


@pytest.mark.parametrize("bad", [True, 2.0, 0])
def test_k_checked_by_the_core_rule(bad):
    docs = [Document(page_content=A, id="a")]
    with pytest.raises((TypeError, ValueError), match="k"):
        MixPRRetriever(documents=docs, k=bad)
    with pytest.raises((TypeError, ValueError), match="token_budget"):
        MixPRRetriever(documents=docs, token_budget=bad)
    with pytest.raises((TypeError, ValueError), match="k"):
        MixPRRetriever(documents=docs).invoke("cat", k=bad)
    with pytest.raises((TypeError, ValueError), match="k"):
        DiversityCompressor(k=bad, embeddings=HashEmbeddings())
    with pytest.raises((TypeError, ValueError), match="k"):
        YouraCompressor(scorer=tiny_scorer(), k=bad)
    with pytest.raises((TypeError, ValueError), match="k"):
        YouraRetriever(documents=docs, scorer=tiny_scorer(), k=bad)


def test_longctx_source_id_is_there_exactly_when_the_document_has_an_id():
    """What README.md and the guide say: ``longctx_source_id`` is the source's id, absent for a
    ``Document`` without id (its hits' ids name it ``source{position}``, which ``add_documents``
    returns and ``delete`` takes)."""
    docs = [Document(page_content=A, id="cat"), Document(page_content=B)]
    r = MixPRRetriever(documents=docs, k=10)
    out = r.invoke("What did the cat and the dog do?")
    assert {d.id.split("#")[0] for d in out} == {"cat", "source1"}
    for d in out:
        assert d.metadata.get("longctx_source_id") == ("cat" if d.id.startswith("cat#") else None)
        assert ("longctx_source_id" in d.metadata) == d.id.startswith("cat#")
    assert r.add_documents([Document(page_content="The bird sang.")]) == ["source2"]
    assert r.delete(["source1"]) is True
    assert {d.id.split("#")[0] for d in r.invoke("What did the dog do?")} <= {"cat", "source2"}
    for d in DiversityCompressor(top_n=4).compress_documents(docs, "What did the dog do?"):
        of_cat = d.id is not None and d.id.split("#")[0] == "cat"  # a whole document: its id
        assert d.metadata.get("longctx_source_id") == ("cat" if of_cat else None)


def test_garlic_summaries_of_a_document_without_id_have_no_source_id():
    """Level-2 summary documents too (they used to carry ``longctx_source_id: None``)."""
    from langchain_longctx.garlic_retriever import GarlicRetriever
    from tests._fixtures import garlic_parts
    from tests._tiny_models import smollm2_tokenizer, tiny_llama
    from tests.garlic._graphs import STORY

    tok = smollm2_tokenizer()
    docs = [Document(page_content=STORY), Document(page_content=A, id="cat")]
    r = GarlicRetriever(documents=docs, **garlic_parts(tiny_llama(len(tok)), tok))
    out = r.invoke("Where did Tom Kitten lose his clothes?")
    levels = {(d.id.split("#")[0], d.metadata["longctx_level"]) for d in out}
    assert {("source0", 1), ("source0", 2), ("cat", 2)} <= levels
    for d in out:
        assert d.metadata.get("longctx_source_id") == ("cat" if d.id.startswith("cat#") else None)
        assert ("longctx_source_id" in d.metadata) == d.id.startswith("cat#")
