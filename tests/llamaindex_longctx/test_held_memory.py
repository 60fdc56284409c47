"""What a LlamaIndex retriever keeps between queries: its memo of the sources' hashes holds no
document text a loaded corpus gives it afresh (a long-running app held every document it had
ever returned: ``test_query_overhead.py``'s corpus test), nor entries of nodes deleted while a
query ran; its docstore snapshot holds copies of ids and hash records, not the nodes."""

from __future__ import annotations

import gc
import json

import pytest
from llama_index.core import Document
from llama_index.core.schema import TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.storage.kvstore.simple_kvstore import SimpleKVStore

from llamaindex_longctx import MixPRRetriever
from tests._fixtures import BOOK_QUERIES, book_rows
from tests.llamaindex_longctx._fixtures import book_docs, strings_in


def test_a_fixed_text_memo_follows_the_metadata():
    from llamaindex_longctx._nodes import related_info

    memo: dict = {}
    doc = Document(text="The hound ran across the moor.", id_="d", metadata={"a": 1})
    assert related_info(doc, memo, fixed_text=True) == doc.as_related_node_info()
    assert doc.text not in list(strings_in(memo))
    edited = Document(text=doc.text, id_="d", metadata={"a": 2})
    assert related_info(edited, memo, fixed_text=True) == edited.as_related_node_info()
    assert related_info(doc, memo, fixed_text=True) == doc.as_related_node_info()


class _LiveKV(SimpleKVStore):
    """A key-value store whose ``get_all`` gives its own mapping, not a copy."""

    def get_all(self, collection: str = "data") -> dict:
        return self._get_collection_mapping(collection)


class _RemoteLikeKV(SimpleKVStore):
    """A key-value store whose ``get_all`` deserializes every record afresh (Redis, Mongo,
    Postgres...)."""

    def get_all(self, collection: str = "data") -> dict:
        return json.loads(json.dumps(self._get_collection_mapping(collection)))


def _reaches(obj, text: str) -> bool:
    """Whether ``text`` is reachable from ``obj`` through containers (dicts, their views,
    lists, tuples, sets)."""
    views = (type({}.keys()), type({}.values()), type({}.items()))
    seen, todo = set(), [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            if text in x:
                return True
            continue
        if id(x) in seen or not isinstance(x, (dict, list, tuple, set, frozenset, *views)):
            continue
        seen.add(id(x))
        todo.extend(gc.get_referents(x))
    return False


def test_the_docstore_snapshot_keeps_no_node():
    store = SimpleDocumentStore(simple_kvstore=_RemoteLikeKV())
    store.add_documents(
        [TextNode(text=f"{t} marker{i}", id_=f"n{i}") for i, (_, t, _) in enumerate(book_rows())]
    )
    r = MixPRRetriever.from_defaults(docstore=store, similarity_top_k=3)
    assert r.retrieve("Who lost a boot?") and r._synced is not None
    # before: the state held the read's node collection (every node's JSON, a second copy)
    assert not _reaches(r._synced, "marker0")
    assert r.retrieve("marker2")[0].node.ref_doc_id == "n2"


@pytest.mark.parametrize("kv", [SimpleKVStore, _LiveKV, _RemoteLikeKV])
def test_the_docstore_is_followed_whatever_get_all_gives(kv):
    store = SimpleDocumentStore(simple_kvstore=kv())
    store.add_documents([TextNode(text=t, id_=i) for i, t, _ in book_rows()])
    r = MixPRRetriever.from_defaults(docstore=store, similarity_top_k=3)
    assert r.retrieve("Who lost a boot?")
    store.add_documents([TextNode(text="The Cheshire Cat grinned at the zebra.", id_="z")])
    # before, with _LiveKV: the state was the store's own mapping, equal to every later read
    assert "z" in [n.node.ref_doc_id for n in r.retrieve("zebra")]
    store.add_documents([TextNode(text="The walrus ate a pineapple.", id_="z")], allow_update=True)
    assert "pineapple" in r.retrieve("pineapple")[0].node.text
    store.delete_document("z")
    assert "z" not in [n.node.ref_doc_id for n in r.retrieve("pineapple")]
    assert "z" not in [n.node_id for n in r.nodes]


def test_a_delete_during_a_query_leaves_no_memo_entry(monkeypatch):
    import llamaindex_longctx.mixpr_retriever as mixpr_module

    docs = book_docs()
    r = MixPRRetriever.from_documents(docs, similarity_top_k=4)
    assert r.retrieve(BOOK_QUERIES[0]) and r._hashes  # a query remembers its sources' hashes
    r = MixPRRetriever.from_documents(docs, similarity_top_k=4)
    real, fired = mixpr_module.hit_to_node, []

    def deleting(*args, **kwargs):  # another thread deletes every node while hits are built
        if not fired:
            fired.append(1)
            r.delete_nodes([d.node_id for d in docs])
        return real(*args, **kwargs)

    monkeypatch.setattr(mixpr_module, "hit_to_node", deleting)
    assert r.retrieve(BOOK_QUERIES[0]) and not r.nodes
    # before: the query wrote its hashes (and their texts) after the delete had dropped them
    assert r._hashes == {}
    monkeypatch.setattr(mixpr_module, "hit_to_node", real)
    r.insert_nodes(docs[:1])
    assert r.retrieve(BOOK_QUERIES[0]) and set(r._hashes) == {docs[0].node_id}


def test_a_fixed_text_memo_hashes_a_changed_text_again():
    """A corpus's document updated under the same id and metadata: its SOURCE hash is the new
    text's (review of session 20: the memo kept no sign of the text, so the old hash came
    back)."""
    from llamaindex_longctx._nodes import related_info

    memo: dict = {}
    doc = Document(text="The white rabbit was late.", id_="a")
    assert related_info(doc, memo, fixed_text=True) == doc.as_related_node_info()
    changed = Document(text="The white rabbit was late again.", id_="a")
    assert related_info(changed, memo, fixed_text=True).hash == changed.hash != doc.hash
    assert changed.text not in list(strings_in(memo))


def test_a_corpus_retrievers_source_hash_follows_an_update(tmp_path):
    from llama_index.core.schema import NodeRelationship

    from llamaindex_longctx import CorpusRetriever
    from longctx.corpus import build_indexes

    out = tmp_path / "corpus"
    docs = [
        ("a", "Alice went down the rabbit hole. The white rabbit was late."),
        ("b", "Scrooge hated Christmas. Marley was dead."),
    ]
    build_indexes(docs, "mixpr", out, use_ray=False, progress=False)
    r = CorpusRetriever.from_corpus(out, similarity_top_k=2)

    def source_hashes_right() -> bool:
        hits = r.retrieve("Who was late?")
        assert hits
        for n in hits:
            d = n.node.ref_doc_id
            truth = Document(text=r.corpus.text(d), id_=d, metadata=r.corpus.metadata(d)).hash
            if n.node.relationships[NodeRelationship.SOURCE].hash != truth:
                return False
        return True

    assert source_hashes_right()
    r.corpus.index.update(["The white rabbit was late again, very late."], ids=["a"])
    assert source_hashes_right()
