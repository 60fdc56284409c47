"""MixPR hybrid mode (dense unit vectors in the walk and the score), its persistence, its
argument checks, and ``mixpr+mmr`` keeping what MixPR found (issue 22)."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from longctx.mixpr import MixPRIndex
from longctx.mixpr.query import query_weights
from longctx.persist import PersistError
from tests._coverage import weigh_by_coverage
from tests._persist_helpers import restamp

# concept dimensions of a tiny deterministic encoder: synonyms share a dimension
CONCEPTS = {
    "car": 0,
    "automobile": 0,
    "park": 1,
    "garage": 1,
    "mary": 2,
    "kitchen": 3,
    "song": 4,
    "sang": 4,
    "river": 5,
    "sea": 5,
    "bird": 6,
    "birds": 6,
    "cat": 7,
    "mat": 7,
    "went": 8,
}
DIM = 9


def concept_encoder(texts):
    """``list[str] -> (n, 9)``: counts of concept words (a stand-in for a dense model)."""
    out = np.zeros((len(texts), DIM), np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().replace(".", " ").replace("?", " ").split():
            if w in CONCEPTS:
                out[i, CONCEPTS[w]] += 1.0
        out[i, DIM - 1] += 0.01  # no all-zero row
    return out


TEXT = "\n\n".join(
    [
        "Mary went to the kitchen.",
        "Mary sang a song.",
        "Birds fly over the river to the sea.",
        "A cat sleeps on the mat.",
        "The river is cold in winter.",
        "Birds sing in the morning.",
        "The automobile waits in the garage.",
    ]
)
QUERY = "Where did Mary park the car?"


def _rank(result_or_scores, index, needle):
    scores = result_or_scores
    order = np.argsort(-scores, kind="stable").tolist()
    unit = next(i for i, h in enumerate(index.units()) if needle in h.text)
    return order.index(unit)


def test_hybrid_ranks_a_dense_only_match_that_plain_mixpr_misses():
    plain = MixPRIndex.from_texts(TEXT)
    hybrid = MixPRIndex.from_texts(TEXT, encoder=concept_encoder)
    assert hybrid.unit_vectors.shape == (plain.n_units, DIM)
    s_plain, mode_plain, _ = plain.score(QUERY, "local")
    s_hyb, mode_hyb, _ = hybrid.score(QUERY, "local")
    assert mode_plain == mode_hyb == "local"
    # "automobile" / "garage" share no term with the question: the walk never reaches them
    auto = next(i for i, h in enumerate(plain.units()) if "automobile" in h.text)
    assert s_plain[auto] < 1e-4 and s_hyb[auto] > 0.5  # walk leftovers of the uniform start
    assert _rank(s_plain, plain, "automobile") >= 3
    # the dense restart alone (dense_weight 0, the default) ranks it with the two lexical
    # matches (dense_restart 3: the dense neighbour leads), far above the unrelated units
    assert _rank(s_hyb, hybrid, "automobile") == 0
    assert {_rank(s_hyb, hybrid, "kitchen"), _rank(s_hyb, hybrid, "sang")} == {1, 2}
    s_r1, _, _ = MixPRIndex.from_texts(TEXT, encoder=concept_encoder, dense_restart=1.0).score(
        QUERY, "local"
    )
    assert _rank(s_r1, hybrid, "automobile") == 2  # a smaller dense share: after the lexical ones
    hits = hybrid.search(QUERY, k=3, mode="local").hits
    assert any("automobile" in h.text for h in hits)
    assert not any("automobile" in h.text for h in plain.search(QUERY, k=3, mode="local").hits)
    weighted = MixPRIndex.from_texts(TEXT, encoder=concept_encoder, dense_weight=1.0)
    assert _rank(weighted.score(QUERY, "local")[0], weighted, "automobile") == 0
    # the lexical matches stay in front of the unrelated units
    assert {h.text for h in hits} & {"Mary went to the kitchen.", "Mary sang a song."}


def test_hybrid_restart_is_personalized_pagerank_as_networkx_computes_it():
    idx = MixPRIndex.from_texts(TEXT, encoder=concept_encoder, lexical_weight=0, dense_weight=0)
    scores, _, _ = idx.score(QUERY, "local")
    # the restart distribution: lexical part (sum 1) + dense_restart * dense part (sum 1)
    n = idx.n_units
    parts = idx._lexical_parts(QUERY)["cos"]
    assert parts.sum() > 0
    # the factored graph E W E^T, formed here to hand it to networkx
    E = idx.terms.embeddings().toarray()
    S = E @ np.diag(idx.graph.term_weights) @ E.T
    G = nx.from_scipy_sparse_array(sp.csr_array(S), create_using=nx.DiGraph)
    # recompute the restart here and compare the walk with networkx
    q = concept_encoder([QUERY])[0]
    dense = idx.unit_vectors.astype(np.float64) @ (q / np.linalg.norm(q))
    cfg = idx.config
    top = np.argsort(-dense, kind="stable")[: cfg.dense_top_k]
    top = top[dense[top] > 0]
    w_dense = np.zeros(n)
    w_dense[top] = dense[top]
    w_dense /= w_dense.sum()
    Eq, _ = query_weights(idx.terms, [QUERY], with_q=False)
    terms = np.unique(Eq.indices)
    Et = sp.csc_array(idx.terms.embeddings()[:, terms])
    Eqt = Eq[:, terms]
    B = sp.csr_array(Et @ sp.csr_array(Eqt).T)
    B.data[B.data < cfg.effective_query_threshold] = 0
    B.eliminate_zeros()
    B = weigh_by_coverage(B, Et, Eqt, cfg.coverage_power)
    w_lex = np.asarray(B @ np.ones(1)).ravel()
    p = w_lex / w_lex.sum() + cfg.dense_restart * w_dense
    p = p / p.sum()
    want = nx.pagerank(
        G,
        alpha=1 - cfg.alpha_local,
        personalization={i: float(p[i]) for i in range(n)},
        dangling={i: float(p[i]) for i in range(n)},
        max_iter=200,
        tol=1e-12,
        weight="weight",
    )
    want = np.array([want[i] for i in range(n)])
    # 18 power iterations (the paper's) against networkx run to convergence
    np.testing.assert_allclose(scores, want, atol=2e-3)
    assert np.argmax(scores) == np.argmax(want)


@pytest.mark.parametrize(
    "mappable, mmap, stored",
    [
        (True, False, "unit_vectors.npy"),
        (True, True, "unit_vectors.npy"),
        (False, False, "vectors.npz"),
    ],
)
def test_hybrid_persistence_round_trip(tmp_path, mappable, mmap, stored):
    idx = MixPRIndex.from_texts(TEXT, encoder=concept_encoder)
    want = idx.score(QUERY, "local")[0]
    idx.save(tmp_path / "ix", mappable=mappable)
    assert (tmp_path / "ix" / stored).is_file()
    back = MixPRIndex.load(tmp_path / "ix", encoder=concept_encoder, mmap=mmap)
    np.testing.assert_array_equal(back.unit_vectors, idx.unit_vectors)
    assert back.encoder_identity["dim"] == DIM
    np.testing.assert_allclose(back.score(QUERY, "local")[0], want, rtol=1e-6)
    # without the encoder: queries need their vector, which gives the same scores
    bare = MixPRIndex.load(tmp_path / "ix", mmap=mmap)
    with pytest.raises(ValueError, match="query_vector"):
        bare.score(QUERY, "local")
    qv = concept_encoder([QUERY])[0]
    np.testing.assert_allclose(bare.score(QUERY, "local", query_vector=qv)[0], want, rtol=1e-6)
    # a plain index saves no vectors and loads as plain
    MixPRIndex.from_texts(TEXT).save(tmp_path / "plain", mappable=mappable)
    assert not (tmp_path / "plain" / stored).exists()
    assert MixPRIndex.load(tmp_path / "plain", mmap=mmap).unit_vectors is None


def test_damaged_vectors_file_is_a_persist_error(tmp_path):
    # format 2 (vectors.npz); format 3: tests/test_security_format3.py
    MixPRIndex.from_texts(TEXT, encoder=concept_encoder).save(tmp_path / "ix", mappable=False)
    (tmp_path / "ix" / "vectors.npz").write_bytes(b"not a zip")
    with pytest.raises(PersistError, match="vectors.npz"):
        MixPRIndex.load(tmp_path / "ix")
    np.savez(tmp_path / "ix" / "vectors.npz", unit_vectors=np.zeros((2, DIM), np.float32))
    with pytest.raises(PersistError, match=r"vectors\.npz.*SHA-256"):
        MixPRIndex.load(tmp_path / "ix")
    restamp(tmp_path / "ix")  # a forger who rewrites the digests too
    with pytest.raises(PersistError, match="one row per unit"):
        MixPRIndex.load(tmp_path / "ix")


def test_wrong_vector_count_or_dimension_is_a_clear_error(tmp_path):
    n = MixPRIndex.from_texts(TEXT).n_units
    with pytest.raises(ValueError, match="unit_vectors must have one row per unit"):
        MixPRIndex.from_texts(TEXT, unit_vectors=np.ones((n + 1, 4), np.float32))
    with pytest.raises(ValueError, match="unit_vectors must be 2-D"):
        MixPRIndex.from_texts(TEXT, unit_vectors=np.ones(n, np.float32))
    with pytest.raises(ValueError, match="unit_vectors must be finite"):
        MixPRIndex.from_texts(TEXT, unit_vectors=np.full((n, 4), np.nan, np.float32))
    idx = MixPRIndex.from_texts(TEXT, unit_vectors=np.ones((n, 4), np.float32))
    with pytest.raises(ValueError, match=r"query_vector must have shape \(4,\)"):
        idx.search(QUERY, k=2, query_vector=np.ones(5))
    with pytest.raises(ValueError, match="query_vector"):
        idx.search(QUERY, k=2)  # no encoder, no vector
    with pytest.raises(ValueError, match="query_vector needs an index"):
        MixPRIndex.from_texts(TEXT).search(QUERY, k=2, query_vector=np.ones(4))
    idx.save(tmp_path / "ix")
    with pytest.raises(ValueError, match="encoder .* embeds in 9 dimensions"):
        MixPRIndex.load(tmp_path / "ix", encoder=concept_encoder)


def test_mixpr_mmr_keeps_both_babi_facts_on_a_small_haystack():
    from longctx.diversity.rerank import rerank_select
    from longctx.eval.methods import Context, Doc, MixPRMMRMethod
    from longctx.tokens import count_tokens

    hay = [f"The {w} of the old town was quiet in the evening light." for w in "abcdefghijklmnop"]
    facts = ["Daniel picked up the football there.", "Daniel went to the bedroom."]
    sents = hay[:6] + [facts[0]] + hay[6:11] + [facts[1]] + hay[11:]
    text = " ".join(sents)
    query = "Where is the football?"

    class Encoder:
        # the two facts are near-duplicates, the haystack sentences all differ: plain MMR with
        # PageRank rewards prefers any new haystack sentence to the second fact
        def embed_documents(self, texts):
            out = np.zeros((len(texts), 2 + len(hay)), np.float32)
            for i, t in enumerate(texts):
                if "Daniel" in t:
                    out[i, 0], out[i, 1] = 1.0, 0.05 * ("went" in t)
                else:
                    out[i, 2 + "abcdefghijklmnop".index(t.split()[1])] = 1.0
            return out

        def embed_query(self, q):
            return np.eye(2 + len(hay), dtype=np.float32)[0]

    ctx = Context(token_counter=count_tokens, encoder_factory=Encoder)
    doc = Doc(text, ctx)
    method = MixPRMMRMethod()
    state = method.build(doc)
    index, emb = state
    budget = count_tokens(facts[0]) + 4 * count_tokens(hay[0])  # room for one fact + 4 others
    spans = method.select(state, query, budget)
    got = [text[a:b] for a, b in spans]
    assert all(f in got for f in facts)
    # the same selection without keeping MixPR's best half loses the second fact
    scores = index.score(query, "auto")[0]
    plain = rerank_select(emb, scores, index.token_counts, token_budget=budget, keep=0)
    plain_texts = [text[index.starts[i] : index.ends[i]] for i in plain]
    assert not all(f in plain_texts for f in facts)
    with pytest.raises(ValueError, match="keep"):
        rerank_select(emb, scores, index.token_counts, token_budget=budget, keep=1.5)


class _LCEmbeddings:
    """A LangChain-style ``Embeddings`` (embed_documents / embed_query) over the concepts."""

    def embed_documents(self, texts):
        return concept_encoder(list(texts)).tolist()

    def embed_query(self, text):
        return concept_encoder([text])[0].tolist()


def test_framework_retrievers_take_the_apps_embedding_model():
    from langchain_core.documents import Document
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode

    from langchain_longctx import MixPRRetriever as LCRetriever
    from llamaindex_longctx import MixPRRetriever as LIRetriever

    lc = LCRetriever(
        documents=[Document(page_content=TEXT, id="d")], embeddings=_LCEmbeddings(), k=3
    )
    assert lc.index.unit_vectors.shape[1] == DIM
    assert any("automobile" in d.page_content for d in lc.invoke(QUERY))
    li = LIRetriever([TextNode(text=TEXT, id_="n")], embed_model=MockEmbedding(embed_dim=8))
    assert li.index.unit_vectors.shape == (li.index.n_units, 8)
    assert LIRetriever([TextNode(text=TEXT, id_="n")]).index.unit_vectors is None
