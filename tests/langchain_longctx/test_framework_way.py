"""The LangChain adapters the framework's way: an ``Embeddings`` for every component that
embeds, save / load of the retrievers, ``from_texts`` with one string and short reprs."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from langchain_longctx import DiversityCompressor, MixPRRetriever
from longctx.persist import PersistError
from tests._persist_helpers import restamp

DIM = 8


def _hash8(text: str) -> list[float]:
    v = np.zeros(DIM, np.float32)
    for w in text.lower().replace(".", " ").replace("?", " ").replace(",", " ").split():
        h = int(hashlib.md5(w.encode()).hexdigest(), 16)
        v[h % DIM] += 1.0 if (h >> 8) & 1 else -1.0
    return v.tolist()


class Hash8Embeddings(Embeddings):
    """Deterministic 8-dim bag-of-words hashing: a tiny app embedding model."""

    def __init__(self):
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts):
        self.documents += len(texts)
        return [_hash8(t) for t in texts]

    def embed_query(self, text):
        self.queries += 1
        return _hash8(text)


TEXTS = [
    "The cat sat on the mat.",
    "Paris is the capital of France.",
    "Dogs bark at night.",
    "The milk is in the kitchen.",
]
STORY = (
    "Mary moved to the bathroom. The moors were grey and cold that winter. "
    "John went to the hallway. Mary got the milk there. The captain told stories of the sea. "
    "Sandra journeyed to the garden. Mary travelled to the office. Daniel went to the kitchen."
)


def _cos(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_diversity_compressor_ranks_with_the_given_embeddings():
    emb = Hash8Embeddings()
    docs = [Document(page_content=t, id=f"d{j}") for j, t in enumerate(TEXTS)]
    query = "Where is the milk?"
    out = DiversityCompressor(embeddings=emb, k=2, lambda_=1.0, cache=False).compress_documents(
        docs, query
    )
    want = sorted(range(4), key=lambda j: -_cos(_hash8(TEXTS[j]), _hash8(query)))[:2]
    assert [d.id for d in out] == [f"d{j}" for j in want]
    assert out[0].metadata["longctx_score"] == pytest.approx(
        _cos(_hash8(TEXTS[want[0]]), _hash8(query)), abs=1e-5
    )
    assert emb.documents == 4 and emb.queries == 1  # one model for the query and the units


def test_mixpr_save_load_round_trip(tmp_path, monkeypatch):
    docs = [
        Document(page_content=STORY, id="story-1", metadata={"source": "babi", "page": 1}),
        Document(page_content="", id="empty"),
        Document(page_content="The milk was cold.\nDaniel took the apple.", id="story-2"),
    ]
    r = MixPRRetriever(documents=docs, k=3, mode="local")
    r.save(tmp_path / "mixpr")
    assert (tmp_path / "mixpr" / "manifest.json").is_file()
    assert not list((tmp_path / "mixpr").rglob("*.pkl"))
    from longctx.mixpr import MixPR

    with monkeypatch.context() as m:
        m.setattr(MixPR, "index", lambda *a, **k: pytest.fail("load must not rebuild"))
        r2 = MixPRRetriever.load(tmp_path / "mixpr")
    assert (r2.k, r2.mode) == (3, "local")
    for q in ("Where is the milk?", "Who went to the kitchen?"):
        a, b = r.invoke(q), r2.invoke(q)
        assert [(d.id, d.page_content, d.metadata) for d in a] == [
            (d.id, d.page_content, d.metadata) for d in b
        ]
    assert len(MixPRRetriever.load(tmp_path / "mixpr", k=1).invoke("milk")) == 1
    # damaged or mixed folders are clear errors
    (tmp_path / "mixpr" / "documents.json").write_text("[{", "utf-8")
    with pytest.raises(PersistError, match="documents.json"):
        MixPRRetriever.load(tmp_path / "mixpr")
    r.save(tmp_path / "mixpr")
    saved = json.loads((tmp_path / "mixpr" / "documents.json").read_text("utf-8"))
    saved[0]["page_content"] = saved[0]["page_content"].replace("milk", "wine")
    (tmp_path / "mixpr" / "documents.json").write_text(json.dumps(saved), "utf-8")
    with pytest.raises(PersistError, match=r"documents\.json.*SHA-256"):
        MixPRRetriever.load(tmp_path / "mixpr")
    restamp(tmp_path / "mixpr")  # the manifest's digests rewritten too: the texts give it away
    with pytest.raises(PersistError, match="does not hold the texts of the saved documents"):
        MixPRRetriever.load(tmp_path / "mixpr")
    with pytest.raises(PersistError):
        MixPRRetriever.load(tmp_path / "nowhere")


def test_from_texts_one_string_is_one_text():
    r = MixPRRetriever.from_texts(STORY, ids="story", metadatas={"t": 1}, k=2)
    assert len(r.documents) == 1 and r.documents[0].page_content == STORY
    out = r.invoke("Where is the milk?")
    assert out and all(d.metadata["longctx_source_id"] == "story" for d in out)
    with pytest.raises(ValueError, match="ids has 2 items for 1 texts"):
        MixPRRetriever.from_texts(STORY, ids=["a", "b"])
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str"):
        MixPRRetriever.from_texts([STORY, 3])


def _garlic_params():
    from tests.langchain_longctx.test_garlic_retriever import _params

    p = _params()
    p["embeddings"] = p.pop("encoder")
    return p


def test_garlic_save_load_round_trip(tmp_path):
    from langchain_longctx import GarlicRetriever
    from tests.langchain_longctx.test_garlic_retriever import QUESTION

    p = _garlic_params()
    r = GarlicRetriever(**p)
    r.save(tmp_path / "garlic")
    run = {k: p[k] for k in ("model", "tokenizer", "embeddings")}

    def no_build(*a, **k):
        raise AssertionError("load must not rebuild the graphs")

    r2 = GarlicRetriever.load(tmp_path / "garlic", graph_builder=no_build, **run)
    assert r2.max_context_tokens == 260
    a, b = r.invoke(QUESTION), r2.invoke(QUESTION)
    assert [(d.id, d.page_content, d.metadata) for d in a] == [
        (d.id, d.page_content, d.metadata) for d in b
    ]
    with pytest.raises(ValueError, match="built with the embedding model"):
        GarlicRetriever.load(
            tmp_path / "garlic", model=p["model"], tokenizer=p["tokenizer"],
            embeddings=Hash8Embeddings(),
        )  # fmt: skip
    with pytest.raises(ValueError, match="not both"):
        GarlicRetriever(**p, encoder=p["embeddings"])


@pytest.fixture(scope="module")
def scorer():
    from tests._fixtures import shared_tiny_scorer

    return shared_tiny_scorer()


def test_youra_save_load_and_from_texts(tmp_path, scorer):
    from langchain_longctx import YouraRetriever
    from tests._youra_helpers import QUERY, TEXTS

    r = YouraRetriever.from_texts(" ".join(TEXTS), ids="alice", scorer=scorer, k=2)
    assert len(r.documents) == 1
    r.save(tmp_path / "youra")
    r2 = YouraRetriever.load(tmp_path / "youra", scorer=scorer)
    assert r2.k == 2
    a, b = r.invoke(QUERY), r2.invoke(QUERY)
    assert [(d.id, d.metadata) for d in a] == [(d.id, d.metadata) for d in b]


def test_reprs_are_short(scorer):
    from langchain_longctx import GarlicRetriever, YouraCompressor, YouraRetriever

    big = STORY * 300
    objs = [
        MixPRRetriever.from_texts(big),
        DiversityCompressor(embeddings=Hash8Embeddings(), token_counter=len),
        YouraRetriever.from_texts(big[:3000], scorer=scorer),
        YouraCompressor(scorer=scorer),
        GarlicRetriever(**_garlic_params()),
    ]
    for o in objs:
        assert len(repr(o)) < 1024, (type(o).__name__, len(repr(o)))
        assert "Mary moved to the bathroom" not in repr(o)
