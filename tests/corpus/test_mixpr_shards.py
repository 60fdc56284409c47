"""A sharded MixPR corpus without Ray (``build_indexes(..., shards=N)``, ``longctx index --shards
N``): built, grown and updated like the one-index corpus, searched as one index, equal to one
MixPRIndex over the same documents; interrupted builds, damaged files; the framework retrievers.
The Ray path: tests/corpus/test_mixpr_shards_ray.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

from longctx.corpus import CorpusIndex, build_indexes, load_corpus, read_corpus_manifest
from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError

QUERIES = ("What did the Caterpillar say?", "Who is the Queen?", "Summarize the story.")


def seq(docs, out, shards=3, **kw):
    return build_indexes(docs, "mixpr", out, shards=shards, use_ray=False, progress=False, **kw)


def assert_same(corpus, one, queries=QUERIES, **kw):
    assert corpus.doc_ids == tuple(one.doc_ids)
    for q in queries:
        for size in ({"k": 5}, {"token_budget": 120}):
            a = corpus.search(q, **size, **kw)
            b = one.search(q, **size, **kw)
            assert a.mode == b.mode
            assert [(h.source, h.start, h.end) for h in a.hits] == [
                (h.source, h.start, h.end) for h in b.hits
            ], q
            np.testing.assert_allclose(
                [h.score for h in a.hits], [h.score for h in b.hits], rtol=0, atol=1e-9
            )


def one_index(docs):
    return MixPRIndex.from_texts([t for _, t in docs], ids=[d for d, _ in docs])


def test_build_grow_update_and_search_as_one(tmp_path, docs):
    out = tmp_path / "c"
    r = seq(docs[:3], out)
    assert r.built == tuple(d for d, _ in docs[:3]) and r.backend == "sequential"
    m = read_corpus_manifest(out)
    assert m.options == {"shards": 3}
    assert [e.path for e in m.entries.values()] == ["indexes/shard-0", "indexes/shard-1",
                                                    "indexes/shard-2"]  # fmt: skip
    layout = json.loads((out / "indexes" / "shards.json").read_text())
    assert layout["n_shards"] == 3 and layout["assignment"] == "fewest-characters"
    # grow: the new document goes to the emptiest shard; an edited one is updated in place
    edited = [docs[0], (docs[1][0], docs[1][1] + " The Queen had the last word."), docs[2]]
    r = seq([*edited, docs[3]], out)
    assert r.built == (docs[1][0], docs[3][0]) and r.skipped == (docs[0][0], docs[2][0])
    final = [*edited, docs[3]]
    with CorpusIndex.from_corpus(out, use_ray=False) as corpus:
        assert corpus.sharded and corpus.text(docs[1][0]) == edited[1][1]
        assert_same(corpus, one_index(final))
        assert_same(corpus, one_index(final), queries=QUERIES[:1], mode="local")
    index = load_corpus(out, use_ray=False)[docs[0][0]]
    assert isinstance(index, ShardedMixPRIndex) and index.n_shards == 3
    # a corpus keeps its number of shards, and a one-index corpus is not a sharded one
    with pytest.raises(ValueError, match="'shards': 3"):
        seq(final, out, shards=2)
    with pytest.raises(ValueError, match="shards"):
        build_indexes(final, "mixpr", out, use_ray=False)


def test_stop_word_documents(tmp_path, docs):
    stop = ("stop", "the and of the to a in that it was")
    r = seq([docs[0], stop, docs[1]], tmp_path / "c", shards=3)  # "stop" alone in shard 1
    assert not r.failed
    with CorpusIndex.from_corpus(tmp_path / "c", use_ray=False) as corpus:
        assert_same(corpus, one_index([docs[0], stop, docs[1]]), queries=QUERIES[:1])
    with pytest.raises(ValueError, match="no term to index"):
        seq([stop], tmp_path / "d", shards=2)
    assert not (tmp_path / "d" / "corpus.json").exists()


def test_an_interrupted_build_resumes(tmp_path, docs, monkeypatch):
    import longctx.corpus.shards.persist as persist

    out = tmp_path / "c"
    seq(docs[:2], out, shards=2)

    def stop(*a, **k):
        raise KeyboardInterrupt  # after the shards were stored, before shards.json

    monkeypatch.setattr(persist, "manifest_of_order", stop)
    with pytest.raises(KeyboardInterrupt):
        seq(docs, out, shards=2)
    # the corpus is as it was: shards.json lists two documents, the shards hold four
    with pytest.raises(PersistError, match="interrupted build"):
        CorpusIndex.from_corpus(out, use_ray=False)
    monkeypatch.undo()
    r = seq(docs, out, shards=2)
    assert r.built == (docs[2][0], docs[3][0])
    with CorpusIndex.from_corpus(out, use_ray=False) as corpus:
        assert_same(corpus, one_index(docs), queries=QUERIES[:1])


def test_damaged_files_are_named(tmp_path, docs):
    out = tmp_path / "c"
    seq(docs[:3], out)
    m = json.loads((out / "corpus.json").read_text())
    m["documents"][0]["text_sha256"] = "0" * 64
    (out / "corpus.json").write_text(json.dumps(m))
    with pytest.raises(PersistError, match="text_sha256"):
        CorpusIndex.from_corpus(out, use_ray=False)
    seq(docs[:3], out)  # the forged digest reads as a changed document: rebuilt
    (out / "indexes" / "shard-2" / "starts.npy").write_bytes(b"garbage")
    with pytest.raises(PersistError, match=r"shard 2 .*starts\.npy"):
        CorpusIndex.from_corpus(out, use_ray=False)


def test_memory_url(docs):
    out = "memory://longctx-sharded-corpus"
    seq(docs[:3], out, shards=2)
    with CorpusIndex.from_corpus(out, use_ray=False) as corpus:
        assert_same(corpus, one_index(docs[:3]), queries=QUERIES[:1])


def test_cli_shards(tmp_path, docs, capsys):
    from longctx.cli import main

    (tmp_path / "in").mkdir()
    for i, (_, text) in enumerate(docs[:3]):
        (tmp_path / "in" / f"{i}.txt").write_text(text, "utf-8")
    argv = ["index", str(tmp_path / "in"), "--method", "mixpr", "--out", str(tmp_path / "c")]
    assert main([*argv, "--shards", "2", "--sequential"]) == 0
    assert "built 3, unchanged 0, failed 0" in capsys.readouterr().out
    # .build.lock: the corpus's build lock (longctx.corpus.writers.building)
    assert sorted(p.name for p in (tmp_path / "c" / "indexes").iterdir()) == [
        ".build.lock", "shard-0", "shard-1", "shards.json", "writing.json",
    ]  # fmt: skip
    assert main([*argv, "--shards", "3", "--sequential"]) == 2
    assert "'shards': 2" in capsys.readouterr().err
    assert main([*argv, "--sequential"]) == 2  # re-indexed without --shards: the flag named
    assert "choose another out or give the same options (--shards 2)" in capsys.readouterr().err
    assert main([*argv[:3], "diversity", *argv[4:], "--shards", "2"]) == 2
    assert "--shards applies to --method mixpr" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--shards", "0"])
    assert "--shards" in capsys.readouterr().err


def test_framework_retrievers_take_a_sharded_corpus(tmp_path, docs):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from langchain_longctx import CorpusRetriever as LCRetriever
    from llamaindex_longctx import CorpusRetriever as LIRetriever

    out = tmp_path / "c"
    seq(docs[:3], out, shards=2)
    texts = dict(docs[:3])
    q = "What did the Caterpillar say?"
    want = one_index(docs[:3]).search(q, k=4)
    li = LIRetriever.from_corpus(out, use_ray=False, similarity_top_k=4)
    nodes = li.retrieve(q)
    assert [n.node.node_id for n in nodes] == [
        f"{docs[h.source][0]}#{h.start}-{h.end}" for h in want.by_score()
    ]  # best first
    for n in nodes:
        src = n.node.metadata["longctx_source_id"]
        a, b = n.node.metadata["longctx_start_char_idx"], n.node.metadata["longctx_end_char_idx"]
        assert texts[src][a:b] == n.node.get_content() and n.node.ref_doc_id == src
    assert len(LIRetriever.from_corpus(out, use_ray=False, token_budget=60).retrieve(q)) >= 1
    li.close()
    lc = LCRetriever.from_corpus(out, use_ray=False, k=4, metadatas={docs[0][0]: {"t": 1}})
    got = lc.invoke(q)
    assert [d.id for d in got] == [n.node.node_id for n in nodes]
    assert all((d.metadata.get("t") == 1) == (d.metadata["longctx_source_id"] == docs[0][0])
               for d in got)  # fmt: skip
    lc.close()


def test_framework_corpus_retrievers_fuse_the_apps_hits_over_shards(tmp_path, docs):
    """issue 45: both frameworks' CorpusRetriever take the app's vector retriever
    (``vector_retriever``, ``keep_firsts``) and pass its hits to a sharded corpus as seeds, as
    one MixPRIndex over the same documents takes them."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document as LCDocument
    from langchain_core.retrievers import BaseRetriever as LCBase
    from llama_index.core.base.base_retriever import BaseRetriever as LIBase
    from llama_index.core.schema import NodeRelationship, NodeWithScore, RelatedNodeInfo, TextNode

    from langchain_longctx import CorpusRetriever as LCRetriever
    from llamaindex_longctx import CorpusRetriever as LIRetriever
    from longctx.mixpr.seeds import Seed, rank_weight

    out = tmp_path / "c"
    seq(docs[:3], out, shards=2)
    texts = dict(docs[:3])
    spans = [(docs[2][0], 300, 700), (docs[0][0], 1200, 1500)]  # the app's hits, best first
    seeds = [Seed(d, a, b, rank_weight(r), texts[d][a:b]) for r, (d, a, b) in enumerate(spans)]
    q = "What did the Caterpillar say?"
    want = one_index(docs[:3]).search(q, k=4, seeds=seeds, keep_firsts=True)
    want_ids = [f"{docs[h.source][0]}#{h.start}-{h.end}" for h in want.by_score()]
    assert docs[2][0] in want_ids[1]  # the app's first hit kept second

    class LIApp(LIBase):
        def _retrieve(self, query_bundle):
            return [
                NodeWithScore(
                    node=TextNode(
                        text=texts[d][a:b], start_char_idx=a, end_char_idx=b,
                        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=d)},
                    ),
                    score=1.0,
                )
                for d, a, b in spans
            ]  # fmt: skip

    class LCApp(LCBase):
        def _get_relevant_documents(self, query, *, run_manager=None):
            return [
                LCDocument(texts[d][a:b], metadata={"source": d, "start_index": a})
                for d, a, b in spans
            ]

    li = LIRetriever.from_corpus(
        out, use_ray=False, similarity_top_k=4, vector_retriever=LIApp(), keep_firsts=True
    )
    assert [n.node.node_id for n in li.retrieve(q)] == want_ids
    with pytest.raises(TypeError, match="keep_firsts"):
        LIRetriever(li.corpus, vector_retriever=LIApp(), keep_firsts=1)
    lc = LCRetriever.from_corpus(
        out, use_ray=False, k=4, vector_retriever=LCApp(), keep_firsts=True
    )
    assert [d.id for d in lc.invoke(q)] == want_ids
    plain = LCRetriever(corpus=lc.corpus, k=4)  # seeds given to invoke go through too
    assert [d.id for d in plain.invoke(q, seeds=seeds, keep_firsts=True)] == want_ids
    li.close()


def test_a_new_shard_of_a_corpus_saved_before_fold_decomposed_takes_its_siblings_config(
    tmp_path, caplog
):
    """A sharded corpus saved before ``MixPRConfig.fold_decomposed`` existed (its shards load
    with ``fold_decomposed=False``, persist.ADDED_FIELDS): a shard made later for new documents
    takes its siblings' settings, not today's default (before: built with True, and the corpus
    no longer loaded, "shard 1 was built with other settings"); a query with a decomposed accent
    finds its unit in the old shard and the new one alike."""
    import logging

    from longctx.corpus.methods import options_fingerprint
    from tests._persist_helpers import edit_json

    out = tmp_path / "c"
    a = ("a", "The qe\u0301yz opened the gate. A quiet garden lay beyond it, with roses.")
    b = ("b", "Another qe\u0301yz waited by the river. Boats drifted past the old mill.")
    seq([a], out, fold_decomposed=False)  # one document: shards 1 and 2 not made yet
    assert not (out / "indexes" / "shard-1").exists()
    edit_json(  # as saved before the field existed: neither the shard nor the corpus names it
        out / "indexes" / "shard-0" / "config.json",
        lambda c: {k: v for k, v in c.items() if k != "fold_decomposed"},
    )

    def old_options(m):
        m["options"] = {"shards": 3}
        m["options_sha256"] = options_fingerprint("mixpr", {"shards": 3})

    edit_json(out / "corpus.json", old_options, stamp=False)
    with caplog.at_level(logging.INFO, logger="longctx.corpus.shards.build"):
        assert seq([a, b], out).built == ("b",)
    assert "differ from the build options' in ['fold_decomposed']" in caplog.text
    config = json.loads((out / "indexes" / "shard-1" / "config.json").read_text())
    assert config["fold_decomposed"] is False
    with CorpusIndex.from_corpus(out, use_ray=False) as corpus:
        assert corpus.index.config.fold_decomposed is False
        hits = [h for h in corpus.search("qe\u0301yz", k=4).hits if h.score > 0]
        assert sorted(h.source for h in hits) == [0, 1]
        assert all("qe\u0301yz" in h.text for h in hits)
        # the loaded index's own insert into its empty shard 2: the corpus's settings too
        corpus.index.insert(["A third qe\u0301yz sang at dawn."], ids=["c"])
        assert corpus.index.shard_of("c") == 2
        hits = [h for h in corpus.index.search("qe\u0301yz", k=6).hits if h.score > 0]
    assert sorted({h.source for h in hits}) == [0, 1, 2]
