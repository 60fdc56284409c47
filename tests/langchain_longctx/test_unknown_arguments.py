"""An argument a LangChain component does not take is an error naming it, never ignored: before,
``MixPRRetriever.from_documents(docs, search_kwargs={"k": 1})`` (a ``VectorStoreRetriever``'s
name) returned 100 documents, ``DiversityCompressor(lambda_mult=0.2)`` ran at 0.5."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from pydantic import ValidationError

from langchain_longctx import (
    CorpusRetriever,
    DiversityCompressor,
    GarlicRetriever,
    LongctxEmbeddings,
    MixPRRetriever,
    YouraCompressor,
    YouraRetriever,
)

DOCS = [Document(page_content="Alice saw the cat. The cat grinned.", id="a")]


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: MixPRRetriever.from_documents(DOCS, search_kwargs={"k": 1}), "search_kwargs"),
        (lambda: MixPRRetriever.from_documents(DOCS, top_k=1), "top_k"),
        (lambda: DiversityCompressor(lambda_mult=0.2), "lambda_mult"),
        (lambda: YouraCompressor(top_k=2, scorer=object()), "top_k"),
        (lambda: YouraRetriever(documents=DOCS, top_k=2), "top_k"),
        (lambda: GarlicRetriever(graph=None, top_k=2), "top_k"),
        (lambda: CorpusRetriever(path="nowhere", top_k=2), "top_k"),
        (lambda: LongctxEmbeddings(batchsize=8), "batchsize"),
    ],
)
def test_unknown_argument_is_named(make, name):
    with pytest.raises(ValidationError, match=name) as err:
        make()
    assert "Extra inputs are not permitted" in str(err.value)
