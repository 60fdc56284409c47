"""Hits -> LangChain documents, the same way for every method (metadata keys and ids from
``longctx.types``)."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore

from longctx.checks import check_texts_metadatas_ids
from longctx.index import free_key, source_keys, unique_ids
from longctx.types import Passage, hit_id, hit_metadata, resolve_hit


def check_vector_retriever(vr) -> None:
    """Refuse a ``vector_retriever`` that is neither ``None``, a LangChain ``BaseRetriever`` nor
    a ``VectorStore`` (the retrievers' field of that name).

    Raises
    ------
    TypeError
        Naming ``vector_retriever`` and the type given.
    """
    if vr is not None and not isinstance(vr, (BaseRetriever, VectorStore)):
        raise TypeError(
            "vector_retriever must be a LangChain BaseRetriever or VectorStore, got "
            f"{type(vr).__name__}"
        )


def ask_vector_retriever(vr, query: str, k: int) -> list[Document]:
    """The app's hits for ``query``: a ``VectorStore``'s ``similarity_search(query, k=k)``, a
    retriever's ``invoke(query)`` (its own ``k``)."""
    return vr.similarity_search(query, k=k) if isinstance(vr, VectorStore) else vr.invoke(query)


def document_keys(documents) -> list[str]:
    """Unique ids of the source documents (:func:`longctx.index.source_keys`): a document
    without id is ``"source{position}"``, one repeating an earlier document's id
    ``"{id}@{position}"``, one repeating an earlier document's id and text (the same document
    given twice) ``None``: leave its hits out."""
    documents = list(documents)
    return source_keys(
        [d.id for d in documents], "document ids", texts=[d.page_content for d in documents]
    )


def generated_keys(documents, keys) -> set[str]:
    """The keys in ``keys`` that are not their document's own id: a document's without id
    (``"source{position}"``, maybe primed) or repeating another's (``"{id}@{position}"``)."""
    return {k for d, k in zip(documents, keys) if k is not None and k != d.id}


def check_new_ids(documents, keys, ids) -> None:
    """Refuse an id (of a document to add) that is the key another document holds without
    being its own id (:func:`generated_keys`): the two would answer to one id, and a delete
    by it would remove both.

    Raises
    ------
    ValueError
        Naming the first such id.
    """
    taken = generated_keys(documents, keys)
    clash = [i for i in ids if i in taken]
    if clash:
        raise ValueError(
            f"id {clash[0]!r} is the key of a document the retriever holds without that id (a "
            "document without id is named source{position}): give another id, or delete "
            f"{clash[0]!r} first"
        )


def added_document_keys(documents, keys, added) -> list[str | None]:
    """Keys of the documents ``added`` after ``documents`` (held under ``keys``): those of
    :func:`document_keys` over all of them, except that a generated key (a document without
    id, ``"source{position}"``) that is taken, by one of ``keys`` or by a document's own id,
    held or added, takes primes until it is free, as :func:`longctx.index.source_keys` names
    a taken one: a delete moves the positions, so the name of a new one can be the key of an
    older one (``add_documents`` raised that the id was already in the index). An added
    document keeps its own id (:func:`check_new_ids` refused one that is a held key)."""
    documents, added = list(documents), list(added)
    out = document_keys(documents + added)[len(documents) :]
    used = {k for k in keys if k is not None}
    used |= {d.id for d in documents + added if d.id is not None}
    for j, k in enumerate(out):
        if k is None or k == added[j].id:
            continue
        out[j] = free_key(k, used)
    return out


def positions_of_ids(documents, keys, ids) -> list[int]:
    """Positions of the documents ``ids`` name, in order: an id names the documents whose own
    id it is (several when the documents were given with one id and different texts), else the
    document whose generated key it is (:func:`generated_keys`), never both: one id never
    removes a document named by its own id and another named by a generated key."""
    own: dict[str, list[int]] = {}
    for j, d in enumerate(documents):
        if d.id is not None:
            own.setdefault(d.id, []).append(j)
    by_key = {k: j for j, k in enumerate(keys) if k is not None}
    out: set[int] = set()
    for i in ids:
        if i in own:
            out.update(own[i])
        elif i in by_key:
            out.add(by_key[i])
    return sorted(out)


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
    disambiguated id for one repeating another's. Only the source's ``id`` and ``metadata``
    are read (:func:`hit_document`)."""
    return hit_document(hit, source.id, source.metadata, method, whole=whole, key=key)


def hit_document(
    hit: Passage,
    source_id: str | None,
    metadata: dict,
    method: str,
    *,
    whole: bool = False,
    key: str | None = None,
) -> Document:
    """:func:`hit_to_document` of a source given by its id and metadata (its text is not needed:
    the hit holds its own), for a caller that would otherwise build the source's ``Document``
    from a stored text (``CorpusRetriever``)."""
    key = source_id if key is None else key
    hit, resolved_id, chained = resolve_hit(hit, source_id, metadata)
    meta = {**metadata, **hit_metadata(hit, method, resolved_id)}
    id_base = resolved_id if chained else key
    doc_id = (source_id if source_id is None else key) if whole else hit_id(id_base, hit)
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


#: key prefixes of :func:`source_map`'s text and page entries (tuples: never equal to a
#: metadata value)
_TEXT = "longctx_text"
_PAGE = "longctx_page"


def _metadata_key(metadata) -> tuple | None:
    """A hashable form of a document's metadata without ``start_index`` (a splitter's chunk
    holds its page's metadata plus that key), or ``None`` for metadata whose values have no
    ``repr``."""
    try:
        return tuple(sorted((str(k), repr(v)) for k, v in metadata.items() if k != "start_index"))
    except Exception:  # noqa: BLE001 - a value whose repr fails: no page entry
        return None


def source_map(documents, keys, source_key: str) -> dict:
    """How the app's retriever's hits find the documents they come from: ``{metadata[source_key]:
    (key, ...)}`` (every document of each value, in order: a loader gives one document per
    page or row with the same ``source``, and a splitter's chunk copies its page's metadata),
    ``{(_PAGE, metadata): key}`` (the first document of each metadata, :func:`_metadata_key`:
    a chunk's own page, found in one look-up) and ``{(_TEXT, page_content): key}`` (the first
    of each text: a hit that is one of the documents itself, as when MixPR is built over the
    app's own splits, ``chunk_documents=False``, and the vector store gave the splits ids of
    its own)."""
    by_source: dict = {}
    out: dict = {}
    for d, k in zip(documents, keys):
        if k is None:
            continue
        v = d.metadata.get(source_key)
        if isinstance(v, str):
            by_source.setdefault(v, []).append(k)
            mk = _metadata_key(d.metadata)
            if mk is not None:
                out.setdefault((_PAGE, mk), k)
        out.setdefault((_TEXT, d.page_content), k)
    out.update((v, tuple(ks)) for v, ks in by_source.items())
    return out


def add_to_source_map(sources: dict, documents, keys, source_key: str) -> dict:
    """A new :func:`source_map` with ``documents`` added after the ones ``sources`` maps
    (``sources`` is not changed: a search may hold it). A source's added documents come after
    its earlier ones; a text or metadata already mapped keeps its first document."""
    new = source_map(documents, keys, source_key)
    out = {**new, **sources}
    for v, ks in new.items():
        if isinstance(v, str) and v in sources:
            out[v] = sources[v] + ks
    return out


def documents_to_seeds(found, index, sources: dict, source_key: str, documents=None) -> list:
    """The app's retriever's hits (``Document``, best first) as seeds of ``index``'s walk
    (:func:`longctx.mixpr.seeds.hit_seed`): a document the index holds (by ``id``, else by its
    exact text) seeds itself; a splitter's chunk seeds its span in its source document, found by
    ``metadata[source_key]`` (``sources``: :func:`source_map`, or a held id), from
    ``metadata["start_index"]`` (``RecursiveCharacterTextSplitter(add_start_index=True)``),
    checked against the chunk's text and located by it when the offset is missing.

    A source of several documents (the pages of a PDF, the rows of a CSV) gives the chunk
    several candidate parents: :func:`longctx.mixpr.seeds.pick_parent` picks the first that
    holds the chunk's text at ``start_index``, else the first that contains it. The document
    whose metadata the chunk carries (its page's, ``page`` or ``row`` included) is tried first,
    so a text found on several pages goes to its own, in one comparison. ``documents``:
    ``{key: Document}`` of the candidates (their texts); without it a chunk of a source of
    several documents seeds the first (the span is checked there)."""
    from longctx.mixpr.seeds import hit_seed

    text_of = None if documents is None else (lambda k: documents[k].page_content)
    seeds = []
    for rank, doc in enumerate(found):
        doc = doc[0] if isinstance(doc, tuple) else doc  # (Document, score) pairs
        own = doc.id if doc.id is not None and index.holds(doc.id) else None
        v = doc.metadata.get(source_key)
        parents = sources.get(v, v) if isinstance(v, str) else None
        same = sources.get((_TEXT, doc.page_content))  # a document of exactly the hit's text
        if same is not None and isinstance(parents, tuple) and same not in parents:
            same = None  # it is another source's (a short row or page repeated elsewhere)
        own = own or same
        if documents is not None and isinstance(parents, tuple) and len(parents) > 1:
            mk = _metadata_key(doc.metadata)
            page = None if mk is None else sources.get((_PAGE, mk))
            if page is not None:  # its own page first (tried again in order: harmless)
                parents = (page, *parents)
        start = doc.metadata.get("start_index")
        if isinstance(start, bool) or not isinstance(start, int) or start < 0:
            start = None
        end = None if start is None else start + len(doc.page_content)
        seed = hit_seed(index.holds, rank, own, parents, start, end, doc.page_content, text_of)
        if seed is not None:
            seeds.append(seed)
    return seeds
