"""Hits -> LlamaIndex nodes, the same way for every method (metadata keys and ids from
``longctx.types``)."""

from __future__ import annotations

from llama_index.core.schema import BaseNode, NodeRelationship, NodeWithScore, TextNode

from longctx.types import METADATA_KEYS, Passage, hit_id, hit_metadata, resolve_hit


def hit_to_node(
    hit: Passage, source: BaseNode, method: str, *, whole: bool = False
) -> NodeWithScore:
    """One hit of ``source`` as a ``NodeWithScore``.

    ``whole=False``: a new ``TextNode`` holding the hit's text exactly, id
    ``hit_id(source.node_id, hit)``, the source's metadata plus the longctx keys (hidden from the
    LLM and the embedder), character offsets, and a SOURCE relationship to ``source``.
    ``whole=True`` (the unit is the whole source node): a copy of ``source`` (same id and
    content) with the longctx keys added to its metadata.

    When ``source`` is itself a longctx hit (a retriever's chunk given to a postprocessor), offsets,
    id and SOURCE relationship refer to the original document (:func:`longctx.types.resolve_hit`).
    """
    hit, source_id, chained = resolve_hit(hit, source.node_id, source.metadata)
    meta = {**source.metadata, **hit_metadata(hit, method, source_id)}
    llm_excluded = list(dict.fromkeys([*source.excluded_llm_metadata_keys, *METADATA_KEYS]))
    embed_excluded = list(dict.fromkeys([*source.excluded_embed_metadata_keys, *METADATA_KEYS]))
    if whole:
        node = source.model_copy()
        node.metadata = meta
        node.excluded_llm_metadata_keys = llm_excluded
        node.excluded_embed_metadata_keys = embed_excluded
    else:
        origin = source.source_node if chained and source.source_node else None
        node = TextNode(
            id_=hit_id(source_id, hit),
            text=hit.text,
            metadata=meta,
            start_char_idx=hit.start,
            end_char_idx=hit.end,
            excluded_llm_metadata_keys=llm_excluded,
            excluded_embed_metadata_keys=embed_excluded,
            relationships={NodeRelationship.SOURCE: origin or source.as_related_node_info()},
        )
    return NodeWithScore(node=node, score=float(hit.score))
