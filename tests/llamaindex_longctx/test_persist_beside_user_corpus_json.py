"""A folder is a corpus only when its ``corpus.json`` is a corpus's manifest (format
``longctx.corpus``): a user's own ``proj/corpus.json`` beside ``proj/indexes/`` used to make
``MixPRRetriever.persist(proj/indexes/llama)`` refuse (review reproduction ``r1``)."""

from __future__ import annotations

import json

import pytest
from llama_index.core.schema import QueryBundle, TextNode

from llamaindex_longctx import MixPRRetriever


@pytest.mark.parametrize(
    "content",
    [json.dumps([{"text": "my own data set"}]), json.dumps({"format": "mine"}), "rows,of,csv"],
    ids=["list", "other-format", "not-json"],
)
def test_persist_beside_a_users_corpus_json_works(tmp_path, content):
    (tmp_path / "corpus.json").write_text(content)
    (tmp_path / "indexes").mkdir()
    nodes = [
        TextNode(text="Mary went to the kitchen.", id_="a"),
        TextNode(text="John went to the garden.", id_="b"),
    ]
    target = tmp_path / "indexes" / "llama"
    MixPRRetriever(nodes=nodes, similarity_top_k=1).persist(target)
    got = MixPRRetriever.from_persist_dir(target).retrieve(QueryBundle("Where did John go?"))
    assert len(got) == 1 and "garden" in got[0].node.get_content()
    assert (tmp_path / "corpus.json").read_text() == content
