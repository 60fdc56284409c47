"""YOURA as a LlamaIndex node postprocessor: keep the sentences of the retrieved nodes that react
most to the query (Soh, Huang, Tian and Zhao, "You Only Use Reactive Attention Slice For Long
Context Retrieval", 2024, arXiv:2409.13695, sec. 3.3)."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from llama_index.core.bridge.pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from llamaindex_longctx._nodes import hit_to_node, node_keys, with_unique_ids
from longctx.checks import check_size_field, check_text
from longctx.explain import check_explain
from longctx.selection import check_size
from longctx.youra import DEFAULT_K, DEFAULT_PRESET, YouraIndex, check_max_fraction, scorer_from


class YouraPostprocessor(BaseNodePostprocessor):
    """Keep the most reactive sentences of the retrieved nodes (YOURA), as nodes of their own.

    Per query, the nodes' texts (``get_content(MetadataMode.NONE)``) become a
    :class:`longctx.YouraIndex` (one text per node, scored on its own and ranked together, see
    :mod:`longctx.youra`, "Several texts"); its hits come back as nodes. A node set cannot be
    prebuilt, but the scorer's window cache is keyed by tokens, so a node seen by an earlier query
    costs only the query pass.

    Sizes: ``top_n`` sentences (default ``longctx.youra.DEFAULT_K`` = 10 when neither size is
    given) or ``token_budget`` model tokens for all kept sentences (greedy by score, at most
    ``max_fraction`` of the sentences).

    Returned nodes, in document order (input node order, then position): one per kept sentence,
    a ``TextNode`` holding the sentence exactly, id ``"{node id}#{start}-{end}"``,
    ``start_char_idx`` / ``end_char_idx`` (characters in the source node's text), the source
    node's metadata plus ``longctx_start_char_idx``, ``longctx_end_char_idx``,
    ``longctx_unit_index`` (sentence index in its node), ``longctx_score``, ``longctx_method``
    (``"youra"``) and ``longctx_source_id`` (hidden from the LLM and the embedder), and a SOURCE
    relationship to the source node. A sentence that is the whole node text returns (a copy of)
    the node itself, same id, with those keys added. No id appears twice. With ``explain=True``
    each node also gets ``longctx_explanation`` (JSON-ready, hidden from the LLM and the
    embedder): the sentence's window, the attention its tokens got before and after the question
    and the parts of its reaction score (:func:`longctx.youra.explain.explain_sentence`), as the
    core ``YouraIndex.search(explain=True)`` gives them.

    Examples
    --------
    >>> pp = YouraPostprocessor(token_budget=300)  # SmolLM2 by default, loaded lazily
    >>> pp.postprocess_nodes(retrieved, query_str="What colour ...?")  # doctest: +SKIP
    """

    # an unknown argument (a typo, another component's size name) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    top_n: int | None = Field(
        default=None,
        description=f"Sentences to keep (default {DEFAULT_K} when no token_budget is given).",
    )
    token_budget: int | None = Field(
        default=None, description="Model tokens for the kept sentences, all nodes together."
    )
    _check_sizes = field_validator("top_n", "token_budget", mode="before")(check_size_field)
    max_fraction: float = Field(
        default=0.8, description="With token_budget, keep at most this fraction of the sentences."
    )
    preset: Literal["default", "paper"] = Field(
        default=DEFAULT_PRESET,
        description="Scorer settings not given: 'default' (ratios, all layers) or 'paper' (eq. 1).",
    )
    layers: Any = Field(
        default=None, description="'last', 'all' or a list of layer indices (None: the preset's)."
    )
    aggregate: Literal["gmean", "mean"] | None = Field(
        default=None, description="Sentence score: geometric or arithmetic mean (None: preset's)."
    )
    baseline: Literal["instruction", "paper"] | None = Field(
        default=None,
        description="Reaction baseline: the authors' instruction suffix or the paper's eq. 1.",
    )
    normalize: Literal["ratio", "none"] | None = Field(
        default=None,
        description="'ratio' (comparable across windows) or 'none' (eq. 1); None: the preset's.",
    )
    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: each sentence's window, the attention "
        "its tokens got before and after the question and the parts of its reaction score.",
    )
    model: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="Causal LM or path; None: SmolLM2 (lazy).",
    )
    tokenizer: Any = Field(
        default=None, exclude=True, repr=False, description="Tokenizer of `model`."
    )
    scorer: Any = Field(
        default=None,
        exclude=True,
        repr=False,
        description="A ready longctx.youra.ReactionScorer (its window cache is shared).",
    )
    _scorer: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self):
        check_size(self.top_n, self.token_budget, default_k=DEFAULT_K, k_name="top_n")
        check_max_fraction(self.max_fraction)
        check_explain(self.explain)
        if self.scorer is not None:
            self._scorer = scorer_from(self.scorer)
        else:
            self._scorer = scorer_from(
                None,
                self.model,
                self.tokenizer,
                preset=self.preset,
                layers=self.layers,
                aggregate=self.aggregate,
                baseline=self.baseline,
                normalize=self.normalize,
            )
        return self

    @classmethod
    def class_name(cls) -> str:
        return "YouraPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("YouraPostprocessor needs a query (query_bundle or query_str)")
        query = check_text(query_bundle.query_str, "query")
        texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        sources = [i for i, t in enumerate(texts) if t.strip()]
        if not sources:
            return []
        k, budget = check_size(self.top_n, self.token_budget, default_k=DEFAULT_K, k_name="top_n")
        index = YouraIndex.from_texts(
            [texts[i] for i in sources], self._scorer, max_fraction=self.max_fraction
        )
        result = index.search(query, k=k, token_budget=budget, explain=self.explain)
        keys = node_keys([n.node for n in nodes])
        out = []
        for h in result.hits:
            i = sources[h.source]
            whole = h.start == 0 and h.end == len(texts[i])
            if keys[i] is not None:  # not a node given twice
                out.append(hit_to_node(h, nodes[i].node, "youra", whole=whole, key=keys[i]))
        return with_unique_ids(out)

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        # model work: in a worker thread, so the event loop stays free
        return await asyncio.to_thread(self._postprocess_nodes, nodes, query_bundle)
