"""LlamaIndex MixPRRetriever searched while other threads update its documents: every returned
node's text, offsets and metadata come from one version of its document."""

from __future__ import annotations

import pytest
from llama_index.core import Document

from llamaindex_longctx import MixPRRetriever
from tests._concurrency import (
    QUERIES,
    Churn,
    base_docs,
    saves_beside_writes,
    searches_beside_writes,
)
from tests._fixtures import VERSIONED_N_DOCS, search_while_updating
from tests.llamaindex_longctx._fixtures import versioned_doc


def test_hits_under_concurrent_updates_are_each_from_one_version():
    r = MixPRRetriever.from_documents(
        [versioned_doc(i, 0) for i in range(VERSIONED_N_DOCS)], similarity_top_k=50
    )

    def search():
        return [(n.node.get_content(), n.node.metadata) for n in r.retrieve("castle knight dragon")]

    seen, errors = search_while_updating(lambda i, v: r.update_ref_doc(versioned_doc(i, v)), search)
    assert seen > 500
    assert not errors, f"{len(errors)} of {seen} hits mix versions, e.g. {errors[0]}"


# -- issue 48 and issue 44 item 1: writes beside searches and persists ------------------------
def _retriever(docs):
    return MixPRRetriever.from_documents(
        [Document(text=t, id_=d) for d, t in docs], similarity_top_k=5
    )


def _churn(r, seed):
    return Churn(
        lambda d: r.insert_nodes([Document(text=t, id_=i) for i, t in d]), r.delete_nodes, seed
    )


def _hits(r, q):
    return [(n.node.node_id, n.node.get_content(), n.score) for n in r.retrieve(q)]


def test_retrievals_beside_writes_leave_the_retriever_equal_to_a_fresh_build():
    r = _retriever(base_docs())

    def same():
        fresh = MixPRRetriever.from_documents(r.nodes, similarity_top_k=5)
        assert all(_hits(r, q) == _hits(fresh, q) for q in QUERIES)

    searches_beside_writes(_churn(r, 1), lambda i: r.retrieve(QUERIES[i]), lambda: r._index, same)


def test_persists_beside_inserts_each_load_as_one_version(tmp_path):
    r = _retriever(base_docs())
    sub = tmp_path / "longctx_mixpr"
    saves_beside_writes(
        _churn(r, 2),
        lambda: [n.node_id for n in r.nodes],
        lambda: r.persist(tmp_path),
        lambda: MixPRRetriever.from_persist_dir(tmp_path) if sub.exists() else None,
        lambda got: [n.node_id for n in got.nodes],
        lambda got: got._index,
    )


def test_a_load_during_the_swap_of_a_save_waits_for_it(tmp_path, monkeypatch):
    """A save swaps ``persist_dir/longctx_mixpr`` out (renamed to a hidden ``old`` sibling) and
    its new copy in: a load in between met no subfolder and opened ``persist_dir`` itself
    ("manifest.json is missing", a PersistError: CI, session 15). It now opens the subfolder,
    sees the save under way and loads again once the new copy is in place (here: put back
    during the load's first wait, so the test needs no timing)."""
    import time
    import types

    import longctx.persist.reader as reader
    from longctx.persist import PersistError
    from longctx.persist.fs import sibling_name

    r = _retriever(base_docs())
    r.persist(tmp_path)
    sub = tmp_path / "longctx_mixpr"
    moved = sibling_name(sub, "old")
    waits = []

    def sleep(seconds):
        waits.append(seconds)
        if moved.exists():
            moved.rename(sub)  # the save's second rename

    clock = {k: getattr(time, k) for k in dir(time) if not k.startswith("_")}
    monkeypatch.setattr(reader, "time", types.SimpleNamespace(**{**clock, "sleep": sleep}))
    sub.rename(moved)  # the window between the save's two renames
    got = MixPRRetriever.from_persist_dir(tmp_path)
    assert waits and not moved.exists()  # it met the window, waited, then loaded
    assert [n.node_id for n in got.nodes] == [n.node_id for n in r.nodes]
    assert _hits(got, QUERIES[0]) == _hits(r, QUERIES[0])
    got = MixPRRetriever.from_persist_dir(sub)  # the subfolder itself still loads
    assert [n.node_id for n in got.nodes] == [n.node_id for n in r.nodes]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PersistError, match="longctx_mixpr"):
        MixPRRetriever.from_persist_dir(empty)  # names the folder it looked for
