"""LlamaIndex node postprocessor: keep a diverse, relevant subset of the retrieved nodes (MMR/FPS).

Source: Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an LLM's Performance in RAG and
Long-context Task", 2025, arXiv:2502.09017 (https://arxiv.org/abs/2502.09017), eq. 1 (MMR) and
eq. 2 (FPS), with the recent-selection window ``w`` and the orderings of sec. 3.1. The selection is
:class:`longctx.DiversityIndex`; this class only translates nodes to it and hits back.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
from llama_index.core.bridge.pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from llamaindex_longctx._embed import app_encoder
from llamaindex_longctx._nodes import hit_to_node, node_keys, with_unique_ids
from longctx.checks import check_choice, check_size_field
from longctx.diversity import METHODS, DiversityIndex
from longctx.diversity.ordering import check_order
from longctx.embeddings import check_query_embedding, default_cache, embed_texts
from longctx.explain import check_explain, name_pick_sources
from longctx.selection import check_size

#: nodes kept when neither ``top_n`` nor ``token_budget`` is given
DEFAULT_TOP_N = 5


class DiversityPostprocessor(BaseNodePostprocessor):
    """Select nodes by relevance *and* diversity (MMR or FPS), within ``top_n`` or a token budget.

    With no size given, the ``DEFAULT_TOP_N`` (5) best nodes are kept. Each node is one unit (no
    chunking). The embedding model is the app's, as for every LlamaIndex component:
    ``embed_model`` when given, else ``Settings.embed_model`` when the app set one (resolved at
    construction), else the longctx default all-MiniLM-L6-v2. Node embeddings are reused when the
    nodes carry them (``node.node.embedding``, all or none); otherwise the node texts (with their
    embed metadata) are embedded with that model, and the vectors are kept in a bounded cache
    keyed by the text's SHA-256 (:func:`longctx.embeddings.default_cache`), so nodes seen again
    are not embedded again. One model embeds the query and the nodes: a query embedding carried
    by the ``QueryBundle`` (a vector retriever puts its own there) is used only when it has the
    nodes' dimension and, when this postprocessor embedded the nodes, equals its own embedding of
    the query (:func:`longctx.embeddings.check_query_embedding`); otherwise ``ValueError`` names
    the mismatch, never a silent score. The reward is the cosine similarity to the
    query (``reward="similarity"``; without a query, to the mean node: summarization mode) or the
    retriever's node score (``reward="node_score"``, min-max rescaled to [0, 1]; a missing score
    counts as the lowest). Nodes without text are left out.

    Returned nodes are copies of the input nodes (same ids, content and relationships) whose
    metadata holds the user's keys plus ``longctx.types.METADATA_KEYS`` (hidden from the LLM and
    the embedder); their score is the reward used (cosine similarity, or the node score).

    Examples
    --------
    >>> pp = DiversityPostprocessor(method="mmr", lambda_=0.6, window=5, token_budget=2000)
    >>> nodes = pp.postprocess_nodes(retrieved_nodes, query_str="Who won?")  # doctest: +SKIP
    """

    # an unknown argument (a typo, another component's size name) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    method: str = Field(default="mmr", description="'mmr' (cosine, eq. 1) or 'fps' (eq. 2).")
    lambda_: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of relevance vs diversity; 1 = top-n."
    )
    window: int | None = Field(
        default=None, ge=1, description="Diversity against the last `window` picks; None = all."
    )
    top_n: int | None = Field(
        default=None,
        description=f"Most nodes to keep (int >= 1); {DEFAULT_TOP_N} when no token_budget.",
    )
    token_budget: int | None = Field(
        default=None,
        description="Most tokens to keep (int >= 1, counted by `token_counter`), instead of top_n.",
    )
    _check_sizes = field_validator("top_n", "token_budget", mode="before")(check_size_field)
    order: str = Field(
        default="score",
        description="'score' (selection order), 'document' (by ref_doc_id then start_char_idx "
        "when all nodes have it, else input order) or 'm:n' interleaving.",
    )
    reward: str = Field(
        default="similarity", description="'similarity' to the query, or 'node_score'."
    )
    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: each kept item's relevance, the "
        "redundancy penalty it had when picked and the kept item it was measured against "
        "(its 'doc_id').",
    )
    cache: bool = Field(
        default=True,
        description="Reuse embeddings of node texts seen before (bounded LRU by content hash).",
    )
    embed_model: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="LlamaIndex BaseEmbedding (or any encoder); default Settings.embed_model "
        "when the app set one, else all-MiniLM-L6-v2.",
    )
    token_counter: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="str -> int; default longctx.tokens.count_tokens.",
    )
    _encoder: Any = PrivateAttr(default=None)

    @field_validator("method")
    @classmethod
    def _check_method(cls, v):
        return check_choice(v, "method", METHODS)

    @field_validator("reward")
    @classmethod
    def _check_reward(cls, v):
        return check_choice(v, "reward", ("similarity", "node_score"))

    @field_validator("order")
    @classmethod
    def _check_order(cls, v):
        return check_order(v, "order")

    @model_validator(mode="after")
    def _check_size(self):
        check_size(self.top_n, self.token_budget, default_k=DEFAULT_TOP_N, k_name="top_n")
        # the app's model, resolved once as LlamaIndex components do (loaded on first use)
        self._encoder = app_encoder(self.embed_model)
        return self

    @classmethod
    def class_name(cls) -> str:
        return "DiversityPostprocessor"

    def _get_encoder(self):
        if self._encoder is None:
            self._encoder = app_encoder(self.embed_model)
        return self._encoder

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        k, budget = check_size(
            self.top_n, self.token_budget, default_k=DEFAULT_TOP_N, k_name="top_n"
        )
        keep = [j for j, n in enumerate(nodes) if n.node.get_content().strip()]
        if not keep:
            return []
        if self.order == "document":  # sources in document order: hits come back in it
            start = {j: nodes[j].node.start_char_idx for j in keep}
            if all(s is not None for s in start.values()):
                keep.sort(key=lambda j: (str(nodes[j].node.ref_doc_id or ""), start[j]))
        stored = [nodes[j].node.embedding for j in keep]
        enc = None
        if all(e is not None for e in stored) and len({len(e) for e in stored}) == 1:
            emb = np.asarray(stored, dtype=np.float32)
        else:
            enc = self._get_encoder()
            emb = embed_texts(
                enc,
                [nodes[j].node.get_content(metadata_mode=MetadataMode.EMBED) for j in keep],
                cache=default_cache() if self.cache else None,
            )
        query_emb = rewards = None
        if self.reward == "node_score":
            raw = np.array([np.nan if nodes[j].score is None else nodes[j].score for j in keep])
            missing = np.isnan(raw)
            rewards = np.where(missing, np.nanmin(raw) if (~missing).any() else 0.0, raw)
        elif query_bundle is not None and query_bundle.embedding is not None:
            query_emb = check_query_embedding(
                query_bundle.embedding,
                emb.shape[1],
                encoder=enc,  # None when the nodes carried their own embeddings
                query=query_bundle.query_str,
                argument="QueryBundle.embedding",
                units="the node embeddings" + (f" of {enc.name!r}" if enc else ""),
            )
        elif query_bundle is not None and query_bundle.query_str.strip():
            qenc = enc or self._get_encoder()
            query_emb = check_query_embedding(
                qenc.embed_query(query_bundle.query_str),
                emb.shape[1],
                argument=f"the query embedding of {qenc.name!r} (embed_model)",
                units="the nodes' own embeddings (node.embedding)",
            )
        index = DiversityIndex.from_texts(
            [nodes[j].node.get_content() for j in keep],
            enc,
            token_counter=self.token_counter,
            unit="text",
            embeddings=emb,
        )
        result = index.search(
            k=k,
            token_budget=budget,
            method=self.method,
            lambda_=self.lambda_,
            window=self.window,
            order=self.order,
            explain=check_explain(self.explain),
            query_embedding=query_emb,
            rewards=rewards,
        )
        keys = node_keys([n.node for n in nodes])
        name_pick_sources(result.hits, [keys[j] for j in keep])
        return with_unique_ids(
            [
                hit_to_node(
                    h,
                    nodes[keep[h.source]].node,
                    result.method,
                    whole=True,
                    key=keys[keep[h.source]],
                )
                for h in result.hits
                if keys[keep[h.source]] is not None  # not a node given twice
            ]
        )

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        # embedding and selection are model / CPU work: keep the event loop free
        return await asyncio.to_thread(self._postprocess_nodes, nodes, query_bundle)
