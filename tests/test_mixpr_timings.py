"""The stages a MixPR search reports in ``SearchResult.timings`` (and ``longctx search`` /
``retrieve --format json``): ``embed_query`` only when a dense query vector was made (hybrid:
an encoder or ``query_vector``); the query's TF-IDF rows and edges are ``query_edges``. Before,
every local search reported ``embed_query`` though no model ran (the edges' seconds)."""

from __future__ import annotations

import json

import numpy as np

from longctx.cli import main
from longctx.corpus import build_indexes
from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.mixpr import MixPRIndex
from tests.test_mixpr_hybrid import QUERY, TEXT, concept_encoder

DOCS = TEXT.split("\n\n")
LOCAL = {"route", "query_edges", "rank", "select"}


def test_a_search_without_a_model_reports_no_embed_query():
    for index in (
        MixPRIndex.from_texts(DOCS),
        ShardedMixPRIndex.from_texts(DOCS, shards=2),
    ):
        r = index.search(QUERY, k=3)
        assert r.mode == "local" and "embed_query" not in r.timings, type(index)
        assert set(r.timings) >= LOCAL, (type(index), r.timings)
        assert all(isinstance(v, float) and v >= 0 for v in r.timings.values())


def test_a_hybrid_search_reports_its_embed_query():
    for index in (
        MixPRIndex.from_texts(DOCS, encoder=concept_encoder),
        ShardedMixPRIndex.from_texts(DOCS, shards=2, encoder=concept_encoder),
    ):
        r = index.search(QUERY, k=3)
        assert set(r.timings) >= LOCAL | {"embed_query"}, (type(index), r.timings)
        # the same stages with the app's own query vector (normalized, no model call)
        qvec = np.asarray(concept_encoder([QUERY])[0])
        r = index.search(QUERY, k=3, mode="local", query_vector=qvec)
        assert "embed_query" in r.timings and "route" not in r.timings
        r = index.search(QUERY, k=3, mode="global")  # no query vector for a global query
        assert "embed_query" not in r.timings and "query_edges" not in r.timings


def test_cli_json_timings_name_no_embedding(tmp_path, capsys):
    argv = ["retrieve", "--sample", "alice", "-q", "Who stole the tarts?", "--format", "json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["method"] == "mixpr" and "embed_query" not in data["timings"]
    assert {"query_edges", "rank", "select"} <= set(data["timings"])
    out = tmp_path / "corpus"
    assert not build_indexes([(f"d{i}", t) for i, t in enumerate(DOCS)], "mixpr", out).failed
    assert main(["search", str(out), "-q", QUERY, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "embed_query" not in data["timings"] and {"load", "query_edges"} <= set(data["timings"])
