"""An index whose documents were all deleted saves, loads and searches to nothing (issue 35,
finding 4: the save replaced a good index with one that could not be loaded, ``texts.json must
hold at least one text``), for ``MixPRIndex``, LlamaIndex ``MixPRRetriever.persist`` and LangChain
``MixPRRetriever.save``; and a save that fails never replaces the index on disk."""

from __future__ import annotations

import pytest

from longctx.mixpr import MixPRIndex
from tests._persist_helpers import TEXTS


def test_mixpr_index_with_every_document_deleted_saves_loads_and_searches_to_nothing(tmp_path):
    """Claim: an empty index saves and loads (SECURITY.md, "Saving"); the load still refuses
    units when there is no text."""
    ix = MixPRIndex.from_texts(TEXTS, ids=["a", "b"], max_words=8)
    d = tmp_path / "idx"
    ix.save(d)
    ix.delete(["a", "b"])
    ix.save(d)  # replaces the good index: the result must load
    loaded = MixPRIndex.load(d)
    assert loaded.n_units == 0 and loaded.doc_ids == () and loaded.texts == ()
    assert loaded.search("cat", k=3).hits == ()
    assert loaded.search("cat", token_budget=50).hits == ()
    assert loaded.search("Summarize the whole text.", k=3).hits == ()
    loaded.insert(["The cat sat on the mat."], ids=["c"])
    assert [h.text for h in loaded.search("cat", k=3).hits] == ["The cat sat on the mat."]


@pytest.mark.parametrize("preset", ["paper", "multihop"])
def test_empty_index_of_other_presets_round_trips(tmp_path, preset):
    """Claim: an empty index saves and loads, with the thresholded graph (``graph.npz`` of
    shape (0, 0)) and the multi-hop walk too."""
    ix = MixPRIndex.from_texts(TEXTS, ids=["a", "b"], preset=preset, max_words=8)
    ix.delete(["a", "b"])
    ix.save(tmp_path / "idx")
    loaded = MixPRIndex.load(tmp_path / "idx")
    assert loaded.n_units == 0
    assert loaded.search("Where is Paris?", k=2).hits == ()


def test_llamaindex_retriever_with_every_node_deleted_persists_and_loads(tmp_path):
    """Claim: LlamaIndex ``MixPRRetriever.persist`` of an empty retriever loads back."""
    from llama_index.core import Document

    from llamaindex_longctx import MixPRRetriever

    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(TEXTS)]
    r = MixPRRetriever.from_documents(docs, similarity_top_k=2)
    r.persist(tmp_path / "p")
    r.delete_ref_doc("d0")
    r.delete_ref_doc("d1")
    r.persist(tmp_path / "p")
    loaded = MixPRRetriever.from_persist_dir(tmp_path / "p")
    assert loaded.nodes == [] and loaded.retrieve("cat") == []
    loaded.insert_nodes([Document(text="The cat sat on the mat.", id_="c")])
    assert [n.node.metadata["longctx_source_id"] for n in loaded.retrieve("cat")] == ["c"]


def test_langchain_retriever_with_every_document_deleted_saves_and_loads(tmp_path):
    """Claim: LangChain ``MixPRRetriever.save`` of an empty retriever loads back."""
    from langchain_core.documents import Document

    from langchain_longctx import MixPRRetriever

    docs = [Document(page_content=t, id=f"d{i}") for i, t in enumerate(TEXTS)]
    r = MixPRRetriever.from_documents(docs, k=2)
    r.save(tmp_path / "r")
    assert r.delete(ids=["d0", "d1"]) is True
    r.save(tmp_path / "r")
    loaded = MixPRRetriever.load(tmp_path / "r")
    assert loaded.documents == [] and loaded.invoke("cat") == []
    loaded.add_documents([Document(page_content="The cat sat on the mat.", id="c")])
    assert [d.metadata["longctx_source_id"] for d in loaded.invoke("cat")] == ["c"]
