"""LlamaIndex node postprocessor: keep a diverse, relevant subset of the retrieved nodes (MMR/FPS).

Source: ``../shared/papers/002_1b3ce547c3231824.txt``, eq. 1 (MMR) and eq. 2 (FPS), with the
recent-selection window ``w`` and the orderings of sec. 3.1.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from longctx.checks import check_choice
from longctx.diversity import (
    METHODS,
    _parse_order,
    fps_select,
    mmr_select,
    order_selection,
)
from longctx.embeddings import get_encoder
from longctx.tokens import count_many


class DiversityPostprocessor(BaseNodePostprocessor):
    """Select nodes by relevance *and* diversity (MMR or FPS), within ``top_n`` or a token budget.

    Node embeddings are reused when the nodes carry them (``node.node.embedding``, all or none);
    otherwise the node texts are embedded with ``embed_model`` (a LlamaIndex ``BaseEmbedding``, or
    the default all-MiniLM-L6-v2). The query is embedded with ``embed_model`` too (unless the
    ``QueryBundle`` carries its embedding), so pass the model that made the node embeddings. The reward is the cosine similarity to the query
    (``reward="similarity"``; without a query, to the mean node: summarization mode) or the
    retriever's node score (``reward="node_score"``, min-max rescaled to [0, 1]; a missing score
    counts as the lowest).

    Returned nodes are the input ``NodeWithScore`` objects' nodes (same ids and metadata) with their
    original scores, in the ``order`` asked for.

    Examples
    --------
    >>> pp = DiversityPostprocessor(method="mmr", lambda_=0.6, window=5, token_budget=2000)
    >>> nodes = pp.postprocess_nodes(retrieved_nodes, query_str="Who won?")  # doctest: +SKIP
    """

    method: str = Field(default="mmr", description="'mmr' (cosine, eq. 1) or 'fps' (eq. 2).")
    lambda_: float = Field(
        default=0.5, ge=0.0, le=1.0, description="Weight of relevance vs diversity; 1 = top-n."
    )
    window: int | None = Field(
        default=None, ge=1, description="Diversity against the last `window` picks; None = all."
    )
    top_n: int | None = Field(default=None, ge=1, description="Most nodes to keep.")
    token_budget: int | None = Field(
        default=None, ge=0, description="Most tokens to keep (counted by `token_counter`)."
    )
    order: str = Field(
        default="score",
        description="'score' (selection order), 'document' (by ref_doc_id then start_char_idx "
        "when all kept nodes have it, else input order) or 'm:n' interleaving.",
    )
    reward: str = Field(
        default="similarity", description="'similarity' to the query, or 'node_score'."
    )
    embed_model: Any = Field(
        default=None,
        exclude=True,
        description="LlamaIndex BaseEmbedding (or any encoder); default all-MiniLM-L6-v2.",
    )
    token_counter: Any = Field(
        default=None, exclude=True, description="str -> int; default longctx.tokens.count_tokens."
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
        _parse_order(v)
        return v

    @classmethod
    def class_name(cls) -> str:
        return "DiversityPostprocessor"

    def _get_encoder(self):
        if self._encoder is None:
            self._encoder = get_encoder(self.embed_model)
        return self._encoder

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        nodes = list(nodes)
        if not nodes:
            return []
        if self.top_n is None and self.token_budget is None:
            return nodes  # nothing asked to cut
        texts = [n.node.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
        stored = [n.node.embedding for n in nodes]
        enc = None
        if all(e is not None for e in stored) and len({len(e) for e in stored}) == 1:
            emb = np.asarray(stored, dtype=np.float32)
        else:
            enc = self._get_encoder()
            emb = enc.embed_documents(texts)
        query_emb = None
        if query_bundle is not None and self.reward == "similarity":
            if query_bundle.embedding is not None:
                query_emb = np.asarray(query_bundle.embedding, dtype=np.float32)
            else:
                query_emb = (enc or self._get_encoder()).embed_query(query_bundle.query_str)
        rewards = None
        if self.reward == "node_score":
            raw = np.array([np.nan if n.score is None else n.score for n in nodes], float)
            rewards = np.where(np.isnan(raw), np.nanmin(raw) if (~np.isnan(raw)).any() else 0, raw)
        counts = None
        if self.token_budget is not None:
            counts = count_many([n.node.get_content() for n in nodes], self.token_counter)
        select = mmr_select if self.method == "mmr" else fps_select
        picks = select(
            emb,
            rewards,
            counts,
            self.token_budget,
            query_embedding=query_emb,
            k=self.top_n,
            lambda_=self.lambda_,
            window=self.window,
        )
        if self.order == "document":
            starts = [getattr(nodes[i].node, "start_char_idx", None) for i in picks]
            if all(s is not None for s in starts):
                key = {
                    i: (str(nodes[i].node.ref_doc_id or ""), s, i) for i, s in zip(picks, starts)
                }
                picks = sorted(picks, key=key.__getitem__)
            else:
                picks = sorted(picks)
        else:
            picks = order_selection(picks, None, self.order)
        return [nodes[i] for i in picks]
