"""Hits -> LlamaIndex nodes, the same way for every method (metadata keys and ids from
``longctx.types``)."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import (
    BaseNode,
    Document,
    MediaResource,
    MetadataMode,
    Node,
    NodeRelationship,
    NodeWithScore,
    RelatedNodeInfo,
    TextNode,
)

from longctx.checks import check_texts_metadatas_ids
from longctx.index import source_keys, unique_ids
from longctx.types import (
    META_EXPLANATION,
    METADATA_KEYS,
    Passage,
    hit_id,
    hit_metadata,
    resolve_hit,
)


def node_keys(nodes) -> list[str]:
    """Unique ids of the source nodes (:func:`longctx.index.source_keys`): a node repeating an
    earlier node's id with another text is keyed ``"{id}@{position}"``; one repeating its id and
    text (the same node given twice) ``None``: leave its hits out (:func:`hits_to_nodes`)."""
    nodes = list(nodes)
    return source_keys(
        [n.node_id for n in nodes],
        "node ids",
        texts=[n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes],
    )


def with_unique_ids(out: list[NodeWithScore]) -> list[NodeWithScore]:
    """``out`` with repeated node ids renamed (:func:`longctx.index.unique_ids`), so LlamaIndex's
    deduplication by id never drops a result."""
    ids = [n.node.node_id for n in out]
    for nws, new in zip(out, unique_ids(ids)):
        if nws.node.node_id != new:
            nws.node = nws.node.model_copy()
            nws.node.id_ = new
    return out


def _hash_inputs(node: BaseNode, with_text: bool = True):
    """Everything ``node.hash`` reads, as a value to compare (``==``; the texts by reference
    first, so an unchanged node costs no pass over its text), for the node types whose hash
    LlamaIndex computes from their own fields: a ``TextNode`` (``str(text) + str(metadata)``)
    and a ``Node`` / ``Document`` whose only resource is a plain text resource
    (``get_metadata_str(ALL)`` and the resource's ``text``, ``data``, ``path``, ``url``).
    ``None`` for any other node (a subclass with a hash of its own, an image or audio
    resource): its hash is not memoised. ``with_text=False``: the text's fingerprint in its
    place (:func:`_fingerprint`), so a memo of it holds no text."""
    cls = type(node)
    if cls.hash is TextNode.hash:
        return (cls, node.text if with_text else _fingerprint(node.text), str(node.metadata))
    if cls.hash is not Node.hash:
        return None
    if not (node.image_resource is None and node.audio_resource is None):
        return None
    tr = node.text_resource
    if node.video_resource is not None or (tr is not None and type(tr) is not MediaResource):
        return None
    text = None if tr is None else tr.text if with_text else _fingerprint(tr.text)
    parts = None if tr is None else (text, tr.data, tr.path, tr.url)
    return (cls, node.get_metadata_str(mode=MetadataMode.ALL), parts)


def _fingerprint(text):
    """``(len(text), hash(text))`` of a ``str`` (``None`` stays ``None``): what a memo keeps
    of a text it must not hold. A changed text is told from the one hashed before (a
    document updated under the same id) but for a 64-bit hash collision; one pass over a
    text that is a new object (a corpus's texts are read afresh), cached by Python on it."""
    return None if text is None else (len(text), hash(text))


class QueryMemo:
    """A memo for :func:`related_info` over a retriever's shared one, for one query: reads its
    own entries, then the shared memo's; writes only its own (``fresh``), which the retriever
    merges under its lock for the sources it still holds (a delete during the query then
    leaves no entry behind). Reading costs a dict lookup or two (a ``ChainMap`` cost ten times
    that a hit)."""

    __slots__ = ("fresh", "_shared")

    def __init__(self, shared: dict) -> None:
        self.fresh: dict = {}
        self._shared = shared.get

    def get(self, key):
        held = self.fresh.get(key)
        return self._shared(key) if held is None else held

    def __setitem__(self, key, value) -> None:
        self.fresh[key] = value


def related_info(
    source: BaseNode, memo: dict | None = None, key=None, *, fixed_text: bool = False
) -> RelatedNodeInfo:
    """``source.as_related_node_info()`` (id, type, metadata and hash of ``source``), the same
    value, with the hash (a SHA-256 over the source's whole text and metadata) taken from
    ``memo[key]`` while what it reads is the same (:func:`_hash_inputs`, compared by value: an
    edited text or metadata is hashed again). ``memo``: a dict the caller keeps across hits
    and queries, or a :class:`QueryMemo` over one (``None``: no memo); ``key``: the source's key in it (default its
    ``node_id``). A retriever's hits of one document then cost one hash of its text, not one
    per hit per query (a cost that grew with the document: 0.3 ms a hit for a 500 KB book).
    ``fixed_text=True``: the memo keeps the metadata, the text's fingerprint (its length and
    Python hash, :func:`_fingerprint`) and the hash, never the text (a loaded corpus's texts
    are read afresh: a memo holding each by reference would keep every document ever returned
    alive); a document updated under the same id is hashed again.
    """
    if memo is None or type(source).as_related_node_info is not BaseNode.as_related_node_info:
        return source.as_related_node_info()
    inputs = _hash_inputs(source, with_text=not fixed_text)
    if inputs is None:
        return source.as_related_node_info()
    key = source.node_id if key is None else key
    held = memo.get(key)
    if held is not None and held[0] == inputs:
        digest = held[1]
    else:
        digest = source.hash
        memo[key] = (inputs, digest)
    return RelatedNodeInfo(
        node_id=source.node_id, node_type=source.get_type(), metadata=source.metadata, hash=digest
    )


def hit_to_node(
    hit: Passage,
    source: BaseNode,
    method: str,
    *,
    whole: bool = False,
    key: str | None = None,
    memo: dict | None = None,
    fixed_text: bool = False,
) -> NodeWithScore:
    """One hit of ``source`` as a ``NodeWithScore``.

    ``whole=False``: a new ``TextNode`` holding the hit's text exactly, id
    ``hit_id(source.node_id, hit)``, the source's metadata plus the longctx keys (hidden from the
    LLM and the embedder), character offsets, and a SOURCE relationship to the document: to
    ``source`` itself, or to ``source``'s own SOURCE when it is a node of a document (a
    splitter's chunk of a ``VectorStoreIndex``), so ``ref_doc_id`` is the document's id; then
    ``start_char_idx`` / ``end_char_idx`` are shifted by ``source.start_char_idx`` into the
    document's text, while ``longctx_start_char_idx`` / ``longctx_end_char_idx`` stay offsets in
    ``source``'s text (``longctx_source_id``).
    ``whole=True`` (the unit is the whole source node): a copy of ``source`` (same id and
    content) with the longctx keys added to its metadata.

    When ``source`` is itself a longctx hit (a retriever's chunk given to a postprocessor), offsets,
    id and SOURCE relationship refer to the original document (:func:`longctx.types.resolve_hit`).

    ``key`` (from :func:`node_keys`) replaces the source's id in the hit's id (and, with
    ``whole``, is the copy's id) when the source repeats another node's id.

    ``memo``: a dict kept by the caller across hits (and queries), where the SOURCE
    relationship's hash of ``source`` is kept while ``source`` is unchanged
    (:func:`related_info`; ``fixed_text``: the memo keeps a fingerprint of the text, not the
    text); the node is the same with or without it.
    """
    key = source.node_id if key is None else key
    hit, source_id, chained = resolve_hit(hit, source.node_id, source.metadata)
    meta = {**source.metadata, **hit_metadata(hit, method, source_id)}
    id_base = source_id if chained else key
    ours = (*METADATA_KEYS, META_EXPLANATION)  # the explanation goes to a prompt by choice
    llm_excluded = list(dict.fromkeys([*source.excluded_llm_metadata_keys, *ours]))
    embed_excluded = list(dict.fromkeys([*source.excluded_embed_metadata_keys, *ours]))
    if whole:
        node = source.model_copy()
        if key != source.node_id:
            node.id_ = key
        node.metadata = meta
        node.excluded_llm_metadata_keys = llm_excluded
        node.excluded_embed_metadata_keys = embed_excluded
    else:
        # the SOURCE (hence ref_doc_id) is the document: the source's own SOURCE when the source
        # is a node of a document (a splitter's chunk in an index's docstore, or a longctx hit),
        # with start_char_idx / end_char_idx then shifted into the document's text where the
        # source says where it starts; the longctx_* offsets stay in longctx_source_id's text
        origin = source.source_node or None
        shift = 0
        if origin is not None and not chained and source.start_char_idx is not None:
            shift = int(source.start_char_idx)
        node = TextNode(
            id_=hit_id(id_base, hit),
            text=hit.text,
            metadata=meta,
            start_char_idx=hit.start + shift,
            end_char_idx=hit.end + shift,
            excluded_llm_metadata_keys=llm_excluded,
            excluded_embed_metadata_keys=embed_excluded,
            relationships={
                NodeRelationship.SOURCE: origin
                or related_info(source, memo, key, fixed_text=fixed_text)
            },
        )
    return NodeWithScore(node=node, score=float(hit.score))


def nodes_from_defaults(index=None, nodes=None, docstore=None) -> list[BaseNode]:
    """The nodes a retriever's ``from_defaults`` is given, as LlamaIndex's ``BM25Retriever`` takes
    them: exactly one of ``index`` (its docstore), ``nodes`` or ``docstore`` (every node it
    holds, in insertion order).

    Raises
    ------
    ValueError
        None or several of the three given.
    """
    if sum(x is not None for x in (index, nodes, docstore)) != 1:
        raise ValueError("give exactly one of nodes, docstore or index")
    if index is not None:
        docstore = index.docstore
    if docstore is not None:
        return list(docstore.docs.values())
    return list(nodes)


def documents_from_texts(
    texts: str | Sequence[str],
    metadatas: Sequence[dict] | None = None,
    ids: Sequence[str] | None = None,
) -> list[Document]:
    """``Document`` objects from raw texts (a single ``str`` is one text), with optional metadata
    dicts and ids (one per text; default ids ``"text0"``, ``"text1"``...).

    Raises
    ------
    TypeError, ValueError
        A text that is not a ``str``; ``metadatas`` or ``ids`` of another length than ``texts``.
    """
    texts, metadatas, ids = check_texts_metadatas_ids(
        texts, metadatas, ids, default_id=lambda j: f"text{j}"
    )
    return [Document(text=t, metadata=m, id_=i) for t, m, i in zip(texts, metadatas, ids)]


def docstore_collections(docstore):
    """``(nodes, metadata)``: shallow copies of a key-value docstore's node and metadata
    collections (``{node_id: dict}``), or ``None`` for another docstore or when they cannot be
    read."""
    kv = getattr(docstore, "_kvstore", None)
    node_coll = getattr(docstore, "_node_collection", None)
    meta_coll = getattr(docstore, "_metadata_collection", None)
    if kv is None or node_coll is None or meta_coll is None:
        return None
    try:
        return kv.get_all(collection=node_coll), kv.get_all(collection=meta_coll)
    except Exception:  # noqa: BLE001 - fall back to the public (slower) API
        return None


def docstore_hashes(docstore, raw) -> dict[str, str | None]:
    """``{node_id: hash}`` of every node a LlamaIndex docstore holds, in insertion order, without
    deserializing the nodes where the docstore is a key-value one (the hashes it records on
    ``add_documents``); ``None`` where it recorded none. Other docstores: from ``docs``.
    ``raw``: :func:`docstore_collections` of the docstore, read by the caller (``None``: not
    a key-value docstore, or one that could not be read that way)."""
    if raw is not None:
        nodes, meta = raw
        return {i: (meta.get(i) or {}).get("doc_hash") for i in nodes}
    return {i: n.hash for i, n in docstore.docs.items()}


def docstore_state(raw):
    """A value equal (``==``) between two reads of a key-value docstore whenever
    :func:`docstore_hashes` would return the same: copies of its node ids and of its metadata
    collection, from ``raw`` (:func:`docstore_collections`; ``None``: ``None``), made and
    compared in C, the records by reference first: no Python loop over the nodes. A changed
    record (a node updated, its hash recorded again) compares unequal: LlamaIndex's key-value
    stores copy a record on ``put`` and never change a stored one in place. Copies, so the
    value neither keeps the node collection alive (a store whose ``get_all`` deserializes
    gives a new one per read) nor changes with a store whose ``get_all`` returns its own
    mapping (it would compare equal to every later read)."""
    return None if raw is None else (tuple(raw[0]), dict(raw[1]))


def nodes_to_seeds(found, index) -> list:
    """The app's retriever's hits (``NodeWithScore``, best first) as seeds of ``index``'s walk
    (:func:`longctx.mixpr.seeds.hit_seed`): a node the index holds (built over the app's own
    nodes, ``from_defaults(index=...)``) seeds itself; a chunk of a document the index holds
    (its ``ref_doc_id``) seeds its span ``start_char_idx:end_char_idx`` of that document,
    checked against the node's text and located by it when the offsets are missing."""
    from longctx.mixpr.seeds import hit_seed

    seeds = []
    for rank, nws in enumerate(found):
        node = getattr(nws, "node", nws)
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        seed = hit_seed(
            index.holds, rank, node.node_id, node.ref_doc_id,
            node.start_char_idx, node.end_char_idx, text,
        )  # fmt: skip
        if seed is not None:
            seeds.append(seed)
    return seeds
