"""The LlamaIndex adapters the framework's way: the app's embedding model (``Settings``),
``from_defaults`` / ``from_texts``, short reprs, ``as_query_engine(llm=...)`` and loading a
GARLIC index in a fresh process."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_longctx import DiversityPostprocessor, MixPRRetriever

DIM = 8


def _hash8(text: str) -> list[float]:
    v = np.zeros(DIM, np.float32)
    for w in text.lower().replace(".", " ").replace("?", " ").split():
        h = int(hashlib.md5(w.encode()).hexdigest(), 16)
        v[h % DIM] += 1.0 if (h >> 8) & 1 else -1.0
    return v.tolist()


class Hash8Embedding(BaseEmbedding):
    """Deterministic 8-dim bag-of-words hashing: a tiny app embedding model."""

    calls: int = 0

    def _get_query_embedding(self, query: str):
        return _hash8(query)

    async def _aget_query_embedding(self, query: str):
        return _hash8(query)

    def _get_text_embedding(self, text: str):
        self.calls += 1
        return _hash8(text)


class Shifted8Embedding(Hash8Embedding):
    """Another 8-dim model: same dimension, different vectors."""

    def _get_query_embedding(self, query: str):
        return np.roll(_hash8(query + " x"), 3).tolist()


@pytest.fixture
def app_settings():
    """Set ``Settings.embed_model`` / ``llm`` for one test and restore them after it."""
    saved = (Settings._embed_model, Settings._llm)
    Settings.embed_model = Hash8Embedding()
    Settings.llm = MockLLM()
    try:
        yield Settings
    finally:
        Settings._embed_model, Settings._llm = saved


TEXTS = [
    "The cat sat on the mat.",
    "The cat sat on the mat again.",
    "Paris is the capital of France.",
    "Dogs bark at night.",
    "The milk is in the kitchen.",
]


def _cos(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_diversity_in_query_engine_uses_settings_embed_model(app_settings):
    docs = [Document(text=t, id_=f"d{j}") for j, t in enumerate(TEXTS)]
    index = VectorStoreIndex.from_documents(docs)  # embeds with Settings.embed_model (8 dims)
    pp = DiversityPostprocessor(top_n=3, lambda_=1.0)  # lambda 1: plain top-n by similarity
    assert pp._get_encoder().embed_model is app_settings.embed_model
    engine = RetrieverQueryEngine.from_args(
        index.as_retriever(similarity_top_k=5), node_postprocessors=[pp]
    )
    query = "Where is the milk?"
    resp = engine.query(query)
    got = [(n.node.ref_doc_id, n.score) for n in resp.source_nodes]
    q = _hash8(query)
    want = sorted(
        ((f"d{j}", _cos(_hash8(t), q)) for j, t in enumerate(TEXTS)), key=lambda x: -x[1]
    )[:3]
    assert [d for d, _ in got] == [d for d, _ in want]
    assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)


def test_explicit_embed_model_wins_over_settings(app_settings):
    mine = Hash8Embedding(model_name="hash8-explicit")  # its own cache key: it must embed
    pp = DiversityPostprocessor(top_n=2, embed_model=mine)
    nodes = [NodeWithScore(node=TextNode(text=t, id_=f"n{j}")) for j, t in enumerate(TEXTS)]
    pp.postprocess_nodes(nodes, query_str="the milk")
    assert mine.calls == len(TEXTS) and app_settings.embed_model.calls == 0


def test_mismatched_query_embedding_raises(app_settings):
    nodes = [NodeWithScore(node=TextNode(text=t, id_=f"n{j}")) for j, t in enumerate(TEXTS)]
    pp = DiversityPostprocessor(top_n=2)
    query = "Where is the milk?"
    ok = pp.postprocess_nodes(nodes, QueryBundle(query, embedding=_hash8(query)))
    assert len(ok) == 2
    # another dimension (e.g. a 384-dim MiniLM query vector)
    with pytest.raises(ValueError, match="dimension 384 but the node embeddings"):
        pp.postprocess_nodes(nodes, QueryBundle(query, embedding=[0.1] * 384))
    # same dimension, another model: refused, not scored
    other = Shifted8Embedding().get_query_embedding(query)
    with pytest.raises(ValueError, match="made by another model"):
        pp.postprocess_nodes(nodes, QueryBundle(query, embedding=other))


def test_stored_node_embeddings_and_query_model_must_agree(app_settings):
    nodes = [NodeWithScore(node=TextNode(text=t, id_=f"n{j}")) for j, t in enumerate(TEXTS)]
    for n in nodes:
        n.node.embedding = [0.5] * 16  # made by a 16-dim model, the postprocessor's has 8
    with pytest.raises(
        ValueError, match=r"dimension 8 but the nodes' own embeddings \(node.embedding\) have 16"
    ):
        DiversityPostprocessor(top_n=2).postprocess_nodes(nodes, query_str="milk")


def test_top_n_errors_name_top_n():
    with pytest.raises(ValueError, match="top_n must be"):
        DiversityPostprocessor(top_n=0)
    with pytest.raises(ValueError, match="at most one of top_n and token_budget"):
        DiversityPostprocessor(top_n=2, token_budget=10)


def test_mixpr_from_defaults_and_from_texts(tmp_path):
    from llama_index.core.storage.docstore import SimpleDocumentStore

    nodes = [TextNode(text=t, id_=f"n{j}") for j, t in enumerate(TEXTS)]
    a = MixPRRetriever.from_defaults(nodes=nodes, similarity_top_k=2, chunk_nodes=False)
    store = SimpleDocumentStore()
    store.add_documents(nodes)
    b = MixPRRetriever.from_defaults(docstore=store, similarity_top_k=2, chunk_nodes=False)
    index = VectorStoreIndex(nodes=[], embed_model=Hash8Embedding())
    index.docstore.add_documents(nodes)
    c = MixPRRetriever.from_defaults(index=index, similarity_top_k=2, chunk_nodes=False)
    want = [n.node.node_id for n in a.retrieve("Where is the milk?")]
    assert want and "n4" in want
    assert [n.node.node_id for n in b.retrieve("Where is the milk?")] == want
    assert [n.node.node_id for n in c.retrieve("Where is the milk?")] == want
    with pytest.raises(ValueError, match="one of nodes, docstore or index"):
        MixPRRetriever.from_defaults()
    one = MixPRRetriever.from_texts(" ".join(TEXTS), similarity_top_k=3)
    assert len(one.index.texts) == 1  # a str is one text, not a sequence of characters
    hits = one.retrieve("Where is the milk?")
    assert any("milk" in n.node.get_content() for n in hits)
    many = MixPRRetriever.from_texts(TEXTS, ids=[f"t{j}" for j in range(5)], similarity_top_k=1)
    assert many.retrieve("Where is the milk?")[0].node.metadata["longctx_source_id"] == "t4"


def test_reprs_are_short(app_settings, tiny_model, smollm2_tokenizer):
    from llamaindex_longctx import YouraPostprocessor, YouraRetriever

    big = "The milk is in the kitchen. " * 5000
    tiny = {"model": tiny_model, "tokenizer": smollm2_tokenizer}
    objs = [
        MixPRRetriever.from_texts(big),
        DiversityPostprocessor(top_n=2, embed_model=Hash8Embedding(), token_counter=len),
        YouraPostprocessor(top_n=2, **tiny),
        YouraRetriever.from_texts(big[:2000], similarity_top_k=2, **tiny),
    ]
    for o in objs:
        assert len(repr(o)) < 1024, (type(o).__name__, len(repr(o)))
        assert "kitchen. The milk" not in repr(o)
    # YouraRetriever.from_defaults takes nodes / docstore / index like MixPR's
    nodes = [TextNode(text=t, id_=f"n{j}") for j, t in enumerate(TEXTS)]
    a = YouraRetriever.from_defaults(nodes=nodes, similarity_top_k=2, **tiny)
    b = YouraRetriever(nodes=nodes, similarity_top_k=2, **tiny)
    assert [n.node.node_id for n in a.retrieve("milk")] == [
        n.node.node_id for n in b.retrieve("milk")
    ]


# -- GARLIC ------------------------------------------------------------------------------------
@pytest.fixture
def garlic_kit(tiny_model, smollm2_tokenizer):
    from tests._fixtures import garlic_parts

    kit = garlic_parts(tiny_model, smollm2_tokenizer)
    kit["embed_model"] = kit.pop("encoder")  # LlamaIndex's name
    return {**kit, "max_new_tokens": 2}


def _garlic(garlic_kit, **kw):
    from llamaindex_longctx import GarlicIndex
    from tests.garlic._graphs import STORY as GARLIC_STORY

    docs = [Document(text=GARLIC_STORY, id_="tabitha")]
    return GarlicIndex.from_documents(docs, **garlic_kit, **kw)


def test_garlic_as_query_engine_honours_llm(garlic_kit):
    index = _garlic(garlic_kit)
    own = index.as_query_engine(max_context_tokens=300).query("Where did Tom lose his clothes?")
    assert "stop_reason" in own.metadata  # GARLIC's own second turn
    engine = index.as_query_engine(llm=MockLLM(), max_context_tokens=300, response_mode="compact")
    assert isinstance(engine, RetrieverQueryEngine)
    resp = engine.query("Where did Tom lose his clothes?")
    assert "stop_reason" not in (resp.metadata or {})  # the given LLM answered
    assert resp.source_nodes and {n.node.metadata["longctx_method"] for n in resp.source_nodes} == {
        "garlic"
    }
    # MockLLM echoes its prompt: the LLM given wrote the answer, from the visited nodes
    assert "Where did Tom lose his clothes?" in str(resp)
    assert resp.source_nodes[-1].node.get_content()[:30] in str(resp)
    assert len(repr(engine)) < 1024 and len(repr(index.as_query_engine())) < 1024


def test_garlic_refuses_another_embedding_model(garlic_kit, tmp_path):
    from llama_index.core import StorageContext, load_index_from_storage

    index = _garlic(garlic_kit)
    index.storage_context.persist(str(tmp_path))
    sc = StorageContext.from_defaults(persist_dir=str(tmp_path))
    run = {k: garlic_kit[k] for k in ("model", "tokenizer", "max_new_tokens")}
    same = load_index_from_storage(sc, embed_model=garlic_kit["embed_model"], **run)
    assert same.as_retriever(max_context_tokens=300).retrieve("Tom Kitten")
    other = load_index_from_storage(sc, embed_model=Hash8Embedding(), **run)
    with pytest.raises(ValueError, match="built with the embedding model 'callable:"):
        other.as_retriever().retrieve("Tom Kitten")


def test_garlic_load_in_fresh_process(garlic_kit, tmp_path):
    index = _garlic(garlic_kit)
    index.storage_context.persist(str(tmp_path))
    load = textwrap.dedent(
        f"""
        import sys
        from llama_index.core import StorageContext, load_index_from_storage
        {{}}
        sc = StorageContext.from_defaults(persist_dir={str(tmp_path)!r})
        try:
            index = load_index_from_storage(sc)
        except KeyError as exc:
            print("KeyError", exc)
            sys.exit(3)
        assert "llamaindex_longctx" in sys.modules
        print(type(index).__name__, len(index.index_struct.graphs))
        """
    )
    env_run = {"capture_output": True, "text": True, "timeout": 120}
    bare = subprocess.run([sys.executable, "-c", load.format("")], **env_run)
    assert bare.returncode == 3, bare.stderr[-2000:]
    assert "import llamaindex_longctx" in bare.stdout  # the error says which import to add
    ok = subprocess.run([sys.executable, "-c", load.format("import llamaindex_longctx")], **env_run)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert ok.stdout.split() == ["GarlicIndex", "1"]


def test_garlic_index_takes_settings_embed_model(app_settings):
    from llamaindex_longctx import GarlicIndex

    index = GarlicIndex(nodes=[], model=object(), tokenizer=object())
    assert index._encoder.embed_model is app_settings.embed_model
    with pytest.raises(ValueError, match="not both"):
        GarlicIndex(nodes=[], embed_model=Hash8Embedding(), encoder=Hash8Embedding())


def test_garlic_store_of_the_older_struct_type_still_loads(garlic_kit, tmp_path):
    import json

    from llama_index.core import StorageContext, load_index_from_storage

    from llamaindex_longctx.garlic_index import GARLIC_STRUCT_TYPE, GarlicIndex

    _garlic(garlic_kit).storage_context.persist(str(tmp_path))
    f = tmp_path / "index_store.json"
    store = json.loads(f.read_text("utf-8"))
    (entry,) = store["index_store/data"].values()
    assert entry["__type__"] == GARLIC_STRUCT_TYPE
    entry["__type__"] = "longctx_garlic"
    data = json.loads(entry["__data__"])
    data.pop("encoder")  # stores written before the model's name was saved
    entry["__data__"] = json.dumps(data)
    f.write_text(json.dumps(store), "utf-8")
    sc = StorageContext.from_defaults(persist_dir=str(tmp_path))
    index = load_index_from_storage(sc, embed_model=garlic_kit["embed_model"])
    assert type(index) is GarlicIndex and index.index_struct.encoder is None
