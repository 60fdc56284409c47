"""MixPRRetriever.persist beside a LlamaIndex StorageContext, and untrusted nodes.json (issue 20)."""

from __future__ import annotations

import json

import pytest
from llama_index.core import StorageContext
from llama_index.core.schema import Document, QueryBundle

from llamaindex_longctx import MixPRRetriever
from longctx.persist import PersistError, SaveTargetError
from tests._persist_helpers import restamp

DOCS = [
    Document(text="Alice fell down the rabbit hole. She found a tiny door.", id_="alice"),
    Document(text="Bob sailed to the island. He built a small hut there.", id_="bob"),
]


def _files(d):
    return {str(p.relative_to(d)): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def test_persist_into_a_storage_context_folder_keeps_its_files(tmp_path):
    store = tmp_path / "store"
    ctx = StorageContext.from_defaults()
    ctx.docstore.add_documents(DOCS)
    ctx.persist(persist_dir=str(store))
    before = _files(store)
    assert "docstore.json" in before and "index_store.json" in before
    r = MixPRRetriever.from_documents(DOCS, similarity_top_k=2)
    r.persist(store)
    r.persist(store)  # replacing our own sub-folder works too
    after = _files(store)
    assert {k: v for k, v in after.items() if k in before} == before
    assert all(k in before or k.startswith("longctx_mixpr/") for k in after)
    loaded = MixPRRetriever.from_persist_dir(store)
    q = QueryBundle("Where did Bob sail?")
    assert [n.node.node_id for n in loaded.retrieve(q)] == [n.node.node_id for n in r.retrieve(q)]
    StorageContext.from_defaults(persist_dir=str(store))  # the framework still loads its files


def test_persist_refuses_a_foreign_longctx_mixpr_folder(tmp_path):
    (tmp_path / "longctx_mixpr").mkdir()
    (tmp_path / "longctx_mixpr" / "mine.txt").write_text("keep me")
    with pytest.raises(SaveTargetError):
        MixPRRetriever.from_documents(DOCS).persist(tmp_path)
    assert (tmp_path / "longctx_mixpr" / "mine.txt").read_text() == "keep me"


def test_reordered_nodes_json_is_a_persist_error(tmp_path):
    MixPRRetriever.from_documents(DOCS).persist(tmp_path)
    p = tmp_path / "longctx_mixpr" / "nodes.json"
    nodes = json.loads(p.read_text())
    p.write_text(json.dumps(nodes[::-1]))
    with pytest.raises(PersistError, match="nodes.json"):
        MixPRRetriever.from_persist_dir(tmp_path)


def test_edited_node_text_with_matching_ids_is_a_persist_error(tmp_path):
    MixPRRetriever.from_documents(DOCS).persist(tmp_path)
    d = tmp_path / "longctx_mixpr"
    nodes = json.loads((d / "nodes.json").read_text())
    # swap the texts but keep the ids in place: Alice's text would be attributed to Bob
    a, b = nodes[0]["__data__"], nodes[1]["__data__"]
    a["text_resource"], b["text_resource"] = b["text_resource"], a["text_resource"]
    a["text"], b["text"] = b["text"], a["text"]
    (d / "nodes.json").write_text(json.dumps(nodes))
    with pytest.raises(PersistError, match=r"nodes\.json.*SHA-256"):
        MixPRRetriever.from_persist_dir(tmp_path)
    restamp(d)  # the manifest's digests rewritten too: the saved text digests catch it
    with pytest.raises(PersistError, match="nodes.json"):
        MixPRRetriever.from_persist_dir(tmp_path)
    # even with the digests removed, the index's own texts give it away
    settings = json.loads((d / "retriever.json").read_text())
    del settings["node_ids"], settings["text_sha256"]
    (d / "retriever.json").write_text(json.dumps(settings))
    restamp(d)
    with pytest.raises(PersistError, match="nodes.json"):
        MixPRRetriever.from_persist_dir(tmp_path)


def test_bad_retriever_settings_are_persist_errors(tmp_path):
    MixPRRetriever.from_documents(DOCS).persist(tmp_path)
    p = tmp_path / "longctx_mixpr" / "retriever.json"
    s = json.loads(p.read_text())
    p.write_text(json.dumps({**s, "similarity_top_k": "many"}))
    restamp(p.parent)
    with pytest.raises(PersistError, match="retriever.json.*similarity_top_k"):
        MixPRRetriever.from_persist_dir(tmp_path)
    p.write_text(json.dumps({**s, "evil": 1}))
    restamp(p.parent)
    with pytest.raises(PersistError, match="retriever.json.*unknown"):
        MixPRRetriever.from_persist_dir(tmp_path)


def test_folders_of_the_old_layout_still_load(tmp_path):
    from llama_index.core.storage.docstore.utils import doc_to_json

    from longctx.persist import write_dir

    r = MixPRRetriever.from_documents(DOCS, similarity_top_k=2)
    d = tmp_path / "old"
    settings = {"similarity_top_k": 2, "token_budget": None, "mode": "auto", "chunk_nodes": True}
    write_dir(
        d,
        kind="llamaindex.mixpr_retriever",
        version=1,
        json_files={"retriever": settings, "nodes": [doc_to_json(n) for n in DOCS]},
    )
    r.index.save(d / "index")  # longctx 0.1 wrote the index beside, unlisted
    manifest = json.loads((d / "manifest.json").read_text())
    del manifest["digests"]  # and its manifests carried no digests
    (d / "manifest.json").write_text(json.dumps(manifest))
    loaded = MixPRRetriever.from_persist_dir(d)
    q = QueryBundle("Where did Bob sail?")
    assert [n.node.get_content() for n in loaded.retrieve(q)] == [
        n.node.get_content() for n in r.retrieve(q)
    ]


def test_hybrid_without_a_model_for_queries_fails_at_load(tmp_path):
    from llama_index.core import Settings
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode

    emb = MockEmbedding(embed_dim=8)
    r = MixPRRetriever([TextNode(text="Mary went home. The cat sat.", id_="n")], embed_model=emb)
    r.persist(tmp_path)
    saved = Settings._embed_model
    Settings._embed_model = None
    try:
        with pytest.raises(ValueError, match=r"embed_model .*Settings\.embed_model"):
            MixPRRetriever.from_persist_dir(tmp_path)
        Settings.embed_model = emb  # the app's model serves the queries
        loaded = MixPRRetriever.from_persist_dir(tmp_path)
    finally:
        Settings._embed_model = saved
    assert loaded.retrieve("Where did Mary go?")
    again = MixPRRetriever.from_persist_dir(tmp_path, embed_model=emb)
    assert [n.node_id for n in again.retrieve("cat")] == [n.node_id for n in r.retrieve("cat")]


@pytest.mark.parametrize(
    ("value", "error", "what"),
    [
        (__import__("datetime").date(2024, 1, 2), TypeError, "date"),
        (frozenset({1}), TypeError, "frozenset"),
        (b"x", TypeError, "bytes"),
        (float("nan"), ValueError, "nan"),
    ],
)
def test_non_json_node_metadata_names_node_and_key(tmp_path, value, error, what):
    docs = [Document(text="The cat sat.", id_="n0"), Document(text="A dog ran.", id_="n1")]
    docs[1].metadata = {"when": value}
    r = MixPRRetriever.from_documents(docs)
    with pytest.raises(error, match=rf"nodes\[1\] \(id 'n1'\).*'when'.*{what}"):
        r.persist(tmp_path / "p")
    assert not (tmp_path / "p").exists()  # (LlamaIndex itself refuses keys that are not str)
