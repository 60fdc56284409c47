"""MixPRIndex as a corpus that grows: the factored (linear) graph, insert / update / delete equal
to a fresh build, metadata filters, comparable scores across documents, persistence of all of it."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.filters import MetadataFilter, MetadataFilters
from longctx.mixpr import MixPRIndex
from longctx.mixpr.graph import FactoredGraph
from longctx.persist import PersistError
from tests._persist_helpers import restamp

POOL = [
    "Mary moved to the bathroom. John went to the hallway. Mary got the milk there.",
    "The captain told stories of the sea. The sea was grey and the milk was sour.",
    "Sandra journeyed to the garden. Daniel took the apple. Daniel went to the kitchen.",
    "The Hound of the Baskervilles was seen on the moor by Sir Henry at night.",
    "Sir Henry lost a boot at the Northumberland Hotel in London.",
    "Watson wrote to Holmes about the moor, the convict and the light in the window.",
    "The apple was red. The garden was green. Sandra ate the apple in the garden.",
    "Holmes smoked his pipe and thought about the boot and the hotel.",
]
QUERIES = [
    "Where is the milk?",
    "Who took the apple?",
    "What did Sir Henry lose at the hotel?",
    "What was seen on the moor?",
    "Summarize the stories.",
]


def _encoder(texts):
    """A deterministic bag-of-words encoder (16 dims): enough to exercise hybrid mode."""
    out = np.zeros((len(texts), 16), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, zlib.crc32(w.strip(".,?!").encode()) % 16] += 1.0
    return out


def _same(a: MixPRIndex, b: MixPRIndex, **kw):
    for q in QUERIES:
        for size in ({"k": 6}, {"token_budget": 40}):
            ra, rb = a.search(q, **size, **kw), b.search(q, **size, **kw)
            assert ra.mode == rb.mode, q
            assert [(h.source, h.start, h.end, h.text) for h in ra.hits] == [
                (h.source, h.start, h.end, h.text) for h in rb.hits
            ], q
            np.testing.assert_allclose(
                [h.score for h in ra.hits], [h.score for h in rb.hits], rtol=0, atol=1e-9
            )
        sa, _, _ = a.score(q, "local", **kw)
        sb, _, _ = b.score(q, "local", **kw)
        np.testing.assert_allclose(sa, sb, rtol=0, atol=1e-9)


def _fresh(docs: dict, **params) -> MixPRIndex:
    ids = list(docs)
    return MixPRIndex.from_texts(
        [docs[i][0] for i in ids], ids=ids, metadatas=[docs[i][1] for i in ids], **params
    )


OPS = st.lists(
    st.tuples(st.sampled_from(["insert", "delete", "update"]), st.integers(0, len(POOL) - 1)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=OPS, preset=st.sampled_from(["default", "paper-index", "multihop"]))
def test_any_inserts_and_deletes_equal_a_fresh_build(ops, preset):
    params = {
        "default": {},
        "paper-index": {"preset": "paper", "fit_query": False},
        "multihop": {"preset": "multihop", "chunk": False},
    }[preset]
    docs = {"d0": (POOL[0], {"n": 0}), "d1": (POOL[1], {"n": 1})}
    index = _fresh(docs, **params)
    serial = 2
    for op, j in ops:
        if op == "insert" or len(docs) <= 1:
            key = f"d{serial}"
            serial += 1
            docs[key] = (POOL[j], {"n": j})
            index.insert([POOL[j]], ids=[key], metadatas=[{"n": j}])
        elif op == "delete":
            key = sorted(docs)[j % len(docs)]
            del docs[key]
            index.delete([key])
        else:
            key = sorted(docs)[j % len(docs)]
            docs[key] = (POOL[(j + 3) % len(POOL)], {"n": -j})
            index.update([docs[key][0]], ids=[key], metadatas=[{"n": -j}])
    assert list(index.doc_ids) == list(docs)
    _same(index, _fresh(docs, **params))
    _same(index, _fresh(docs, **params), filters={"n": {"$gte": 2}})


def test_hybrid_insert_delete_equal_a_fresh_build():
    docs = {f"d{i}": (POOL[i], {}) for i in range(4)}
    index = _fresh(docs, encoder=_encoder)
    index.insert([POOL[5], POOL[6]], ids=["d5", "d6"])
    index.delete(["d1"])
    index.update([POOL[7]], ids=["d2"])
    docs.update({"d5": (POOL[5], {}), "d6": (POOL[6], {})})
    del docs["d1"]
    docs["d2"] = (POOL[7], {})
    fresh = _fresh(docs, encoder=_encoder)
    np.testing.assert_allclose(index.unit_vectors, fresh.unit_vectors)
    _same(index, fresh)


def test_token_counts_follow_inserts(tmp_path):
    index = MixPRIndex.from_texts(POOL[:2], ids=["a", "b"])
    before = index.token_counts.copy()  # counted, then carried over by the insert
    index.insert([POOL[2]], ids=["c"])
    fresh = MixPRIndex.from_texts(POOL[:3], ids=["a", "b", "c"])
    np.testing.assert_array_equal(index.token_counts[: len(before)], before)
    np.testing.assert_array_equal(index.token_counts, fresh.token_counts)


def test_bad_mutations_change_nothing():
    index = MixPRIndex.from_texts(POOL[:3], ids=["a", "b", "c"])
    snap = (index.doc_ids, index.n_units)
    with pytest.raises(ValueError, match="already in the index"):
        index.insert([POOL[4]], ids=["b"])
    with pytest.raises(ValueError, match="unique"):
        index.insert([POOL[4], POOL[5]], ids=["x", "x"])
    with pytest.raises(TypeError, match="ids"):
        index.insert([POOL[4]])
    with pytest.raises(KeyError, match="nope"):
        index.delete(["a", "nope"])
    with pytest.raises(KeyError, match="nope"):
        index.update([POOL[4]], ids=["nope"])
    with pytest.raises(ValueError, match=r"texts\[0\]"):
        index.insert(["   "], ids=["y"])
    with pytest.raises(ValueError, match="unit_vectors needs"):
        index.insert([POOL[4]], ids=["y"], unit_vectors=np.ones((2, 4)))
    assert (index.doc_ids, index.n_units) == snap


def test_delete_everything_then_insert():
    index = MixPRIndex.from_texts(POOL[:2], ids=["a", "b"])
    index.delete(["a", "b"])
    assert index.n_units == 0 and index.doc_ids == ()
    assert index.search("milk?", k=3).hits == ()
    index.insert([POOL[0]], ids=["a"])
    assert "milk" in " ".join(h.text for h in index.search("Where is the milk?", k=1).hits)


def test_factored_graph_equals_its_product():
    index = MixPRIndex.from_texts(POOL, ids=[str(i) for i in range(len(POOL))])
    g = index.graph
    assert isinstance(g, FactoredGraph) and index.config.graph == "factored"
    E = index.terms.embeddings().toarray()
    w = g.term_weights
    S = E @ np.diag(w) @ E.T
    v = np.random.default_rng(0).random(index.n_units)
    np.testing.assert_allclose(g.matvec(v), S @ v, atol=1e-12)
    np.testing.assert_allclose(g.colsum, S.sum(axis=0), atol=1e-12)
    idf = index.terms.idf()
    np.testing.assert_allclose(w, (idf / idf.max()) ** 4.0)


def test_terms_equal_scikit_learn():
    from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: F401

    index = MixPRIndex.from_texts(POOL, ids=[str(i) for i in range(len(POOL))])
    vec = index.config.vectorizer()
    units = [u.text for u in index.units()]
    ref = vec.fit_transform(units)
    order = [vec.vocabulary_[t] for t in index.terms.terms()]
    np.testing.assert_allclose(index.terms.embeddings().toarray(), ref[:, order].toarray())
    np.testing.assert_allclose(index.terms.idf(), vec.idf_[order])


def test_pruning_settings_follow_inserts():
    kw = {"vectorizer_kwargs": {"min_df": 2, "max_df": 0.9}}
    index = MixPRIndex.from_texts(POOL[:4], ids=list("abcd"), **kw)
    index.insert(POOL[4:], ids=list("efgh"))
    _same(index, MixPRIndex.from_texts(POOL, ids=list("abcdefgh"), **kw))


def test_a_short_note_does_not_outrank_the_answer():
    from pathlib import Path

    p = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gutenberg" / "2852-0.txt"
    if not p.is_file():
        pytest.skip(f"shared data not found at {p}")
    book = p.read_text("utf-8")
    note = "A note on travel. The Northumberland Hotel is on a street. Nothing else happened."
    index = MixPRIndex.from_texts([note, book], ids=["note", "hound"])
    # the note's unit matches "Northumberland Hotel" alone; the book's units hold more of the
    # question, and their scores are comparable: one walk over both documents
    r = index.search("What did Sir Henry lose at the Northumberland Hotel?", k=5)
    ranked = r.by_score()
    assert ranked[0].source == 1 and "Sir Henry" in ranked[0].text
    assert ranked[0].score > max(h.score for h in ranked if h.source == 0)
    r = index.search("Which hotel did Sir Henry stay at in London?", k=5)
    assert all(h.source == 1 for h in r.hits)


# -- filters ----------------------------------------------------------------------------------
def _library():
    meta = [
        {"author": "Austen", "year": 1813, "tags": ["novel", "romance"]},
        {"author": "Melville", "year": 1851, "tags": ["novel", "sea"]},
        {"author": "Doyle", "year": 1902, "tags": ["novel", "crime"], "series": "Holmes"},
        {"author": "Doyle", "year": 1892, "tags": ["stories"], "series": "Holmes"},
        {"author": "Austen", "year": 1811},
        {"author": "Carroll", "year": 1865, "tags": []},
    ]
    texts = [
        "Elizabeth walked to Netherfield through the mud to see her sister.",
        "The whale rose from the sea and the captain watched the whale.",
        "Holmes followed the hound across the moor to the old hall.",
        "Holmes found the stolen gem in the goose and laughed.",
        "Elinor kept her feelings to herself while Marianne wept.",
        "Alice followed the white rabbit down the hole.",
    ]
    return MixPRIndex.from_texts(texts, ids=[f"b{i}" for i in range(6)], metadatas=meta)


CASES = [
    (MetadataFilter("author", "Doyle"), {2, 3}),
    (MetadataFilter("author", "Doyle", "!="), {0, 1, 4, 5}),
    (MetadataFilter("year", 1851, ">"), {2, 3, 5}),
    (MetadataFilter("year", 1851, ">="), {1, 2, 3, 5}),
    (MetadataFilter("year", 1851, "<"), {0, 4}),
    (MetadataFilter("year", 1851, "<="), {0, 1, 4}),
    (MetadataFilter("author", ["Austen", "Carroll"], "in"), {0, 4, 5}),
    (MetadataFilter("author", ["Austen", "Carroll"], "nin"), {1, 2, 3}),
    (MetadataFilter("tags", ["sea", "crime"], "any"), {1, 2}),
    (MetadataFilter("tags", ["novel", "crime"], "all"), {2}),
    (MetadataFilter("tags", "novel", "contains"), {0, 1, 2}),
    (MetadataFilter("series", "olm", "text_match"), {2, 3}),
    (MetadataFilter("series", "HOLMES", "text_match_insensitive"), {2, 3}),
    (MetadataFilter("tags", None, "is_empty"), {4, 5}),
    (MetadataFilter("series", "Holmes", "!="), {0, 1, 4, 5}),  # a missing key matches !=
    (
        MetadataFilters(
            (MetadataFilter("author", "Doyle"), MetadataFilter("year", 1900, "<")), "and"
        ),
        {3},
    ),
    (
        MetadataFilters((MetadataFilter("author", "Doyle"), MetadataFilter("year", 1811)), "or"),
        {2, 3, 4},
    ),
    (MetadataFilters((MetadataFilter("author", "Doyle"),), "not"), {0, 1, 4, 5}),
    ({"author": "Doyle", "year": {"$lt": 1900}}, {3}),
    ({"$or": [{"author": "Carroll"}, {"year": {"$gte": 1900}}]}, {2, 5}),
    ({"$not": {"author": {"$in": ["Doyle", "Austen"]}}}, {1, 5}),
    ({"tags": {"$contains": "sea"}}, {1}),
    (lambda md: md.get("year", 0) % 2 == 1, {0, 1, 4, 5}),
]


@pytest.mark.parametrize("flt, keep", CASES)
def test_every_filter_operator_keeps_the_right_documents(flt, keep):
    index = _library()
    r = index.search("Who followed whom?", k=50, filters=flt)
    assert {h.source for h in r.hits} <= keep
    got = {int(i) for i in np.unique(index.unit_source[index.unit_mask(flt)])}
    assert got == keep
    assert list(r.info["doc_ids"]) == [index.doc_ids[h.source] for h in r.hits]


def test_filter_matches_llamaindex_semantics():
    pytest.importorskip("llama_index.core")
    from llama_index.core.vector_stores.types import FilterOperator
    from llama_index.core.vector_stores.types import MetadataFilter as LIFilter
    from llama_index.core.vector_stores.types import MetadataFilters as LIFilters
    from llama_index.core.vector_stores.utils import build_metadata_filter_fn

    index = _library()
    mds = index.metadatas
    for op in FilterOperator:
        value = {
            "in": ["Doyle", "Austen"],
            "nin": ["Doyle"],
            "any": ["sea", "crime"],
            "all": ["novel"],
            "contains": "novel",
            "text_match": "oyl",
            "text_match_insensitive": "DOY",
            ">": 1850,
            ">=": 1851,
            "<": 1850,
            "<=": 1851,
        }.get(op.value, "Doyle")
        key = {
            ">": "year",
            ">=": "year",
            "<": "year",
            "<=": "year",
            "any": "tags",
            "all": "tags",
            "contains": "tags",
        }.get(op.value, "author")
        li = LIFilters(filters=[LIFilter(key=key, value=value, operator=op)])
        fn = build_metadata_filter_fn(lambda i: mds[int(i)], li)
        want = {i for i in range(len(mds)) if fn(str(i))}
        got = {int(i) for i in np.unique(index.unit_source[index.unit_mask(li)])}
        assert got == want, op


def test_filter_excluding_the_best_document_returns_the_next():
    index = _library()
    q = "Where did Holmes follow the hound?"
    assert index.search(q, k=1).hits[0].source == 2
    r = index.search(q, k=3, filters={"author": {"$ne": "Doyle"}})
    assert r.hits and all(index.metadatas[h.source]["author"] != "Doyle" for h in r.hits)
    r = index.search(q, k=3, filters={"year": {"$lt": 1900}})
    assert 2 not in {h.source for h in r.hits} and r.by_score()[0].source == 3  # other Holmes
    assert index.search(q, k=3, filters={"author": "Nobody"}).hits == ()
    assert index.search("Summarize.", k=2, filters={"author": "Austen"}).mode == "global"
    assert {h.source for h in index.search("Summarize.", k=4, filters={"author": "Austen"})} <= {
        0,
        4,
    }


def test_bad_filters_are_named_before_work():
    index = _library()
    with pytest.raises(ValueError, match="operator"):
        index.search("q?", filters=MetadataFilter("a", 1, "~"))
    with pytest.raises(ValueError, match=r"\$regex"):
        index.search("q?", filters={"author": {"$regex": "D"}})
    with pytest.raises(TypeError, match="list value"):
        index.search("q?", filters=MetadataFilter("a", "x", "in"))
    with pytest.raises(TypeError, match="filters must be"):
        index.search("q?", filters=42)
    deep: dict = {"a": 1}
    for _ in range(40):
        deep = {"$not": deep}
    with pytest.raises(ValueError, match="nested"):
        index.search("q?", filters=deep)


# -- persistence ------------------------------------------------------------------------------
def test_save_load_after_mutations_keeps_ids_metadata_and_results(tmp_path):
    index = _library()
    index.insert(["The rabbit was late for the tea party."], ids=["b6"], metadatas=[{"a": [1]}])
    index.delete(["b1"])
    index.save(tmp_path / "lib")
    loaded = MixPRIndex.load(tmp_path / "lib")
    assert loaded.doc_ids == index.doc_ids and loaded.metadatas == index.metadatas
    _same(index, loaded)
    _same(index, loaded, filters={"author": "Doyle"})
    loaded.insert(["A new book about whales."], ids=["b7"])
    index.insert(["A new book about whales."], ids=["b7"])
    _same(index, loaded)


def test_saved_format_version_and_old_indexes(tmp_path):
    index = MixPRIndex.from_texts(POOL[:2])
    index.save(tmp_path / "x3")  # the default: format 3
    m = json.loads((tmp_path / "x3" / "manifest.json").read_text())
    assert m["format_version"] == 3
    assert "S_data.npy" not in m["files"] and "counts_data.npy" in m["files"]
    index.save(tmp_path / "x", mappable=False)
    m = json.loads((tmp_path / "x" / "manifest.json").read_text())
    assert m["format_version"] == 2
    assert "graph.npz" not in m["files"] and "terms.npz" in m["files"]
    m["format_version"] = 1
    (tmp_path / "x" / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(PersistError, match="rebuild"):
        MixPRIndex.load(tmp_path / "x")


def test_damaged_terms_and_documents_are_persist_errors(tmp_path):
    index = _library()
    d = tmp_path / "lib"
    index.save(d, mappable=False)
    counts = sp.load_npz(d / "terms.npz")
    counts.data[0] = 0.5
    sp.save_npz(d / "terms.npz", counts, compressed=False)
    restamp(d)
    with pytest.raises(PersistError, match="terms.npz"):
        MixPRIndex.load(d)
    index.save(d, mappable=False)
    doc = json.loads((d / "documents.json").read_text())
    doc["ids"][1] = doc["ids"][0]
    (d / "documents.json").write_text(json.dumps(doc))
    restamp(d)
    with pytest.raises(PersistError, match="unique"):
        MixPRIndex.load(d)
    index.save(d, mappable=False)
    doc = json.loads((d / "documents.json").read_text())
    doc["metadata"] = doc["metadata"][:-1]
    (d / "documents.json").write_text(json.dumps(doc))
    restamp(d)
    with pytest.raises(PersistError, match="metadata"):
        MixPRIndex.load(d)


def test_metadata_that_json_cannot_hold_is_named_at_save(tmp_path):
    import datetime

    index = MixPRIndex.from_texts(
        POOL[:2], ids=["a", "b"], metadatas=[{}, {"when": datetime.date(2020, 1, 1)}]
    )
    with pytest.raises(TypeError, match=r"document 'b'.*'when'.*date"):
        index.save(tmp_path / "x")
    assert not (tmp_path / "x").exists()
    index = MixPRIndex.from_texts(POOL[:1], ids=["a"], metadatas=[{1: "x"}])
    with pytest.raises(TypeError, match="key 1"):
        index.save(tmp_path / "y")


def test_long_query_uses_a_bounded_number_of_query_chunks(monkeypatch):
    import longctx.mixpr.scoring as mod
    from longctx.mixpr.query import MAX_QUERY_CHUNKS

    seen = []
    real = mod.query_weights

    def spy(table, qchunks, *, with_q):
        seen.append(len(qchunks))
        return real(table, qchunks, with_q=with_q)

    monkeypatch.setattr(mod, "query_weights", spy)
    index = MixPRIndex.from_texts(["猫が好き。犬も好き。", "The cat sat on the mat."])
    r = index.search("猫。" * 8000, k=2)
    assert seen == [MAX_QUERY_CHUNKS] and r.hits
    paper = MixPRIndex.from_texts(["猫が好き。犬も好き。"], preset="paper", fit_query=False)
    seen.clear()
    paper.search("猫。" * 8000, k=1, mode="local")
    assert seen == [MAX_QUERY_CHUNKS]


def test_whole_documents_ranks_the_passages_chunks_came_from():
    texts = [
        "The moors were grey. " * 20 + "Sir Henry lost a boot at the Northumberland Hotel.",
        "Elizabeth walked to Netherfield. " * 10,
        "A boot and a hotel. " * 3,
    ]
    index = MixPRIndex.from_texts(texts, ids=["hound", "pride", "note"], max_words=8)
    units = index.search("Where did Sir Henry lose a boot?", k=10)
    best_unit = max(units.hits, key=lambda h: h.score)
    r = index.search("Where did Sir Henry lose a boot?", k=2, whole_documents=True)
    assert [h.source for h in r.by_score()][0] == best_unit.source == 0
    assert r.hits[0].text == texts[0] and (r.hits[0].start, r.hits[0].end) == (0, len(texts[0]))
    assert r.hits[0].score == best_unit.score and r.info["whole_documents"] is True
    assert len(r.hits) == 2 and len({h.source for h in r.hits}) == 2
    r = index.search("boot", k=5, whole_documents=True, filters=lambda md: False)
    assert r.hits == ()
    with pytest.raises(ValueError, match="whole_documents"):
        index.search("boot", token_budget=50, whole_documents=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.text(alphabet="ab Mr. Dr.é\u0301\r\n猫。!?“”'A", min_size=1, max_size=40),
        min_size=1,
        max_size=12,
    )
)
def test_chunking_many_texts_together_equals_one_by_one(texts):
    from longctx.mixpr import MixPRConfig

    cfg = MixPRConfig(max_words=4)
    assert cfg.chunk_many(texts) == [cfg.chunk(t) for t in texts]


def test_a_threshold_graph_too_large_for_memory_is_refused_before_it_is_built(monkeypatch):
    import longctx.mixpr.graph as graph

    texts = [" ".join(f"w{(i * 7 + j) % 50}" for j in range(12)) for i in range(300)]
    E = MixPRIndex.from_texts(texts, chunk=False).terms.embeddings()
    est = graph.estimate_threshold_graph_bytes(E, 0.2)
    exact = sp.csr_array(graph.similarity_graph(E, 0.2)).nnz * 24
    assert 0.5 * exact <= est <= 2 * exact  # a sample of 256 of the 300 rows
    monkeypatch.setattr(graph, "_available_memory_bytes", lambda: est // 2)
    with pytest.raises(MemoryError, match="graph='factored'"):
        MixPRIndex.from_texts(texts, chunk=False, graph="threshold")
    MixPRIndex.from_texts(texts, chunk=False)  # the factored graph is not concerned
