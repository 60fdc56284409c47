"""Hits -> LangChain documents, the same way for every method (metadata keys and ids from
``longctx.types``)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document

from longctx.checks import check_texts_metadatas_ids
from longctx.index import source_keys, unique_ids
from longctx.types import Passage, hit_id, hit_metadata, resolve_hit


def document_keys(documents) -> list[str]:
    """Unique ids of the source documents (:func:`longctx.index.source_keys`): a document
    without id is ``"source{position}"``, one repeating an earlier document's id
    ``"{id}@{position}"``, one repeating an earlier document's id and text (the same document
    given twice) ``None``: leave its hits out."""
    documents = list(documents)
    return source_keys(
        [d.id for d in documents], "document ids", texts=[d.page_content for d in documents]
    )


def with_unique_ids(docs: list[Document]) -> list[Document]:
    """``docs`` with repeated ids renamed (:func:`longctx.index.unique_ids`)."""
    named = [d for d in docs if d.id is not None]
    for d, new in zip(named, unique_ids([d.id for d in named])):
        d.id = new
    return docs


def hit_to_document(
    hit: Passage, source: Document, method: str, *, whole: bool = False, key: str | None = None
) -> Document:
    """One hit of ``source`` as a new ``Document``: the hit's text exactly, the source's metadata
    plus the longctx keys (``longctx_source_id`` holds the source's id). Its id is
    ``hit_id(source.id, hit)``, or the source's own id when ``whole`` (the unit is the whole
    source document). When ``source`` is itself a longctx hit (a retriever's chunk given to a
    compressor), offsets and ids refer to the original document
    (:func:`longctx.types.resolve_hit`). ``key`` (from :func:`document_keys`) stands for the
    source's id in the hit's id: the source's position for a document without id, a
    disambiguated id for one repeating another's."""
    key = source.id if key is None else key
    hit, source_id, chained = resolve_hit(hit, source.id, source.metadata)
    meta = {**source.metadata, **hit_metadata(hit, method, source_id)}
    id_base = source_id if chained else key
    doc_id = (source.id if source.id is None else key) if whole else hit_id(id_base, hit)
    return Document(page_content=hit.text, metadata=meta, id=doc_id)


def documents_from_texts(
    texts: str | Sequence[str],
    metadatas: Sequence[dict] | None = None,
    ids: Sequence[str] | None = None,
) -> list[Document]:
    """``Document`` objects from raw texts, as LangChain's ``from_texts`` takes them: a single
    ``str`` is one text (never a sequence of characters), with optional metadata dicts and ids
    (one per text; ids default to ``None``).

    Raises
    ------
    TypeError, ValueError
        A text that is not a ``str``; ``metadatas`` or ``ids`` of another length than ``texts``.
    """
    texts, metadatas, ids = check_texts_metadatas_ids(texts, metadatas, ids)
    return [Document(page_content=t, metadata=m, id=i) for t, m, i in zip(texts, metadatas, ids)]


#: key prefix of :func:`source_map`'s text entries (a tuple: never equal to a metadata value)
_TEXT = "longctx_text"


def source_map(documents, keys, source_key: str) -> dict:
    """How the app's retriever's hits find the documents they come from: ``{metadata[source_key]:
    key}`` (the first of each value: a splitter's chunk copies its source's metadata) and
    ``{(_TEXT, page_content): key}`` (the first of each text: a hit that is one of the
    documents itself, as when MixPR is built over the app's own splits, ``chunk_documents=False``,
    and the vector store gave the splits ids of its own)."""
    out: dict = {}
    for d, k in zip(documents, keys):
        if k is None:
            continue
        v = d.metadata.get(source_key)
        if isinstance(v, str) and v not in out:
            out[v] = k
        out.setdefault((_TEXT, d.page_content), k)
    return out


def documents_to_seeds(found, index, sources: dict, source_key: str) -> list:
    """The app's retriever's hits (``Document``, best first) as seeds of ``index``'s walk
    (:func:`longctx.mixpr.seeds.hit_seed`): a document the index holds (by ``id``, else by its
    exact text) seeds itself; a splitter's chunk seeds its span in its source document, found by
    ``metadata[source_key]`` (``sources``: :func:`source_map`, or a held id), from
    ``metadata["start_index"]`` (``RecursiveCharacterTextSplitter(add_start_index=True)``),
    checked against the chunk's text and located by it when the offset is missing."""
    from longctx.mixpr.seeds import hit_seed

    seeds = []
    for rank, doc in enumerate(found):
        doc = doc[0] if isinstance(doc, tuple) else doc  # (Document, score) pairs
        own = doc.id if doc.id is not None and index.holds(doc.id) else None
        own = own or sources.get((_TEXT, doc.page_content))
        v = doc.metadata.get(source_key)
        parent = sources.get(v, v) if isinstance(v, str) else None
        start = doc.metadata.get("start_index")
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            start = None
        end = None if start is None else start + len(doc.page_content)
        seed = hit_seed(index.holds, rank, own, parent, start, end, doc.page_content)
        if seed is not None:
            seeds.append(seed)
    return seeds
