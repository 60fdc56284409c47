"""LlamaIndex's hybrid when many documents share one file (a PDF reader's pages): a node's
``ref_doc_id`` names its own page's document, so a later page's chunk seeds its span in that
page already (issue 45: LangChain's ``source`` maps to several documents; LlamaIndex needs no
choice)."""

from __future__ import annotations

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter

from llamaindex_longctx import MixPRRetriever
from llamaindex_longctx._nodes import nodes_to_seeds
from tests._fixtures import SEED_BOOK, SEED_OTHER
from tests.llamaindex_longctx._fixtures import HashEmbedding

FILLER = [
    "The baker kneaded the dough before sunrise. Flour settled on the wooden counter. ",
    "A tram rattled past the closed market. Pigeons waited on the fountain's rim. ",
    "Rain drummed on the greenhouse roof. Tomatoes ripened along the trellis. ",
]


def _pages() -> list[Document]:
    """Pages as ``SimpleDirectoryReader`` reads a PDF: one document per page, one file name,
    an id of its own each; the chalk sentence is on the last page only."""
    texts = [SEED_BOOK * 2] + [f * 3 for f in FILLER] + [SEED_OTHER * 2]
    return [Document(text=t, id_=f"report.pdf_part_{i}",
                     metadata={"file_name": "report.pdf", "page_label": str(i + 1)})
            for i, t in enumerate(texts)]  # fmt: skip


def test_every_pages_chunk_seeds_its_own_span_of_its_own_page():
    pages = _pages()
    r = MixPRRetriever.from_documents(pages, similarity_top_k=3)
    nodes = SentenceSplitter(chunk_size=40, chunk_overlap=4)(pages)
    seeds = nodes_to_seeds(nodes, r.index)
    assert len(seeds) == len(nodes) > len(pages)
    texts = dict(zip(r.index.doc_ids, r.index.texts))
    for s, n in zip(seeds, nodes):
        assert s.doc_id == n.ref_doc_id
        assert texts[s.doc_id][s.start : s.end] == n.get_content()
    assert {s.doc_id for s in seeds} == {p.id_ for p in pages}


def test_a_later_pages_chunk_brings_in_what_the_query_alone_does_not_reach():
    pages = _pages()
    nodes = SentenceSplitter(chunk_size=40, chunk_overlap=4)(pages)
    chalk = [n for n in nodes if "Chalk dust" in n.get_content()][-1]
    assert chalk.ref_doc_id == pages[-1].id_ and chalk.start_char_idx > 0
    vr = VectorStoreIndex([chalk], embed_model=HashEmbedding()).as_retriever(similarity_top_k=1)
    q = "Where were the ships counted at dawn?"
    plain = MixPRRetriever.from_documents(pages, similarity_top_k=3)
    hybrid = MixPRRetriever.from_documents(pages, similarity_top_k=3, vector_retriever=vr)
    assert not any("Chalk" in n.node.get_content() for n in plain.retrieve(q))
    got = [n for n in hybrid.retrieve(q) if "Chalk" in n.node.get_content()]
    assert got and all(n.node.metadata["page_label"] == "5" for n in got)
