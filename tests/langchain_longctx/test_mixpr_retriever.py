"""LangChain MixPRRetriever: the standard retriever suite plus ids, metadata and offsets."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_longctx.mixpr_retriever import MixPRRetriever

STORY = (
    "Mary moved to the bathroom. The moors were grey and cold that winter. "
    "John went to the hallway. Mary got the milk there. The captain told stories of the sea. "
    "Sandra journeyed to the garden. Mary travelled to the office. Daniel went to the kitchen."
)
DOCS = [
    Document(page_content=STORY, id="story-1", metadata={"source": "babi", "page": 1}),
    Document(
        page_content="The milk was cold. The bathroom was tiled.\nDaniel took the apple.",
        id="story-2",
        metadata={"source": "babi", "page": 2},
    ),
]


class TestMixPRRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[MixPRRetriever]:
        return MixPRRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"documents": DOCS, "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "Where is the milk?"


def test_documents_keep_id_metadata_and_offsets():
    r = MixPRRetriever(documents=DOCS, k=3)
    out = r.invoke("Where is the milk?")
    assert len(out) == 3
    by_id = {d.id: d for d in DOCS}
    for doc in out:
        src = by_id[doc.metadata["longctx_source_id"]]
        a, b = doc.metadata["longctx_start_char_idx"], doc.metadata["longctx_end_char_idx"]
        assert src.page_content[a:b] == doc.page_content
        assert doc.id == f"{src.id}#{a}-{b}"
        assert doc.metadata["source"] == "babi" and doc.metadata["page"] == src.metadata["page"]
        assert doc.metadata["longctx_score"] > 0 and doc.metadata["longctx_method"] == "mixpr"
    assert "Mary got the milk there." in [d.page_content for d in out]
    assert len({d.id for d in out}) == len(out)
    scores = [d.metadata["longctx_score"] for d in out]
    assert scores == sorted(scores, reverse=True)  # best first, as LangChain's retrievers
    in_doc = r.invoke("Where is the milk?", order="document")
    order = [(d.metadata["page"], d.metadata["longctx_unit_index"]) for d in in_doc]
    assert order == sorted(order)  # chronological order, one argument away
    assert DOCS[0].metadata == {"source": "babi", "page": 1}  # user's metadata untouched


async def test_async_and_kwargs():
    r = MixPRRetriever.from_texts([STORY], metadatas=[{"t": 1}], ids=["x"], k=5)
    out = await r.ainvoke("Where is the milk?", k=1)
    assert [d.page_content for d in out] == ["Mary got the milk there."]
    assert out[0].id.startswith("x#") and out[0].metadata["t"] == 1
    assert out[0].metadata["longctx_source_id"] == "x"
    budget = r.invoke("Where is the milk?", token_budget=12)
    assert 0 < sum(len(d.page_content.split()) for d in budget) <= 12
    glob = r.invoke("Summarize the story.", mode="global", k=3)
    assert len(glob) == 3


def test_bad_arguments():
    r = MixPRRetriever.from_documents(DOCS)
    with pytest.raises(ValueError, match="query"):
        r.invoke("  ")
    with pytest.raises(ValueError, match="mode"):
        r.invoke("milk?", mode="both")
    with pytest.raises(ValueError):
        MixPRRetriever(documents=DOCS, k=0)
    assert MixPRRetriever(documents=[]).invoke("milk?") == []
    index = r.index
    r.invoke("milk?")
    assert r.index is index  # built once, kept across invokes


def test_hybrid_saved_and_loaded_in_a_fresh_process_answers_the_same(tmp_path):
    """Issue 32: a saved hybrid came back without its model and failed at the first query."""
    import json
    import os
    import subprocess
    import sys

    from tests.conftest import REPO
    from tests.test_mixpr_hybrid import QUERY, TEXT, _LCEmbeddings

    r = MixPRRetriever(documents=[Document(page_content=TEXT, id="d")], embeddings=_LCEmbeddings())
    want = [[d.id, d.page_content] for d in r.invoke(QUERY, k=3)]
    assert any("automobile" in text for _, text in want)  # found through the dense vectors
    r.save(tmp_path / "r")
    code = (
        "import json, sys\n"
        "from langchain_longctx import MixPRRetriever\n"
        "from tests.test_mixpr_hybrid import QUERY, _LCEmbeddings\n"
        "r = MixPRRetriever.load(sys.argv[1], embeddings=_LCEmbeddings())\n"
        "print(json.dumps([[d.id, d.page_content] for d in r.invoke(QUERY, k=3)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "r")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == want
    # without the model: refused at load, naming the argument (not at the first query)
    with pytest.raises(ValueError, match=r"embeddings=") as err:
        MixPRRetriever.load(tmp_path / "r")
    assert "langchain:_LCEmbeddings" in str(err.value) or "_LCEmbeddings" in str(err.value)
    # a model of another dimension: refused at load too
    with pytest.raises(ValueError, match="dimensions"):
        MixPRRetriever.load(tmp_path / "r", embeddings=_OtherDim())


class _OtherDim:
    def embed_documents(self, texts):
        return [[1.0, float(len(t))] for t in texts]

    def embed_query(self, text):
        return [1.0, 0.0]
