"""Hits -> LangChain documents, the same way for every method (metadata keys and ids from
``longctx.types``)."""

from __future__ import annotations

from langchain_core.documents import Document

from longctx.types import Passage, hit_id, hit_metadata, resolve_hit


def hit_to_document(
    hit: Passage, source: Document, method: str, *, whole: bool = False
) -> Document:
    """One hit of ``source`` as a new ``Document``: the hit's text exactly, the source's metadata
    plus the longctx keys (``longctx_source_id`` holds the source's id). Its id is
    ``hit_id(source.id, hit)``, or the source's own id when ``whole`` (the unit is the whole
    source document). When ``source`` is itself a longctx hit (a retriever's chunk given to a
    compressor), offsets and ids refer to the original document
    (:func:`longctx.types.resolve_hit`)."""
    hit, source_id, _ = resolve_hit(hit, source.id, source.metadata)
    meta = {**source.metadata, **hit_metadata(hit, method, source_id)}
    doc_id = source.id if whole else hit_id(source_id, hit)
    return Document(page_content=hit.text, metadata=meta, id=doc_id)
