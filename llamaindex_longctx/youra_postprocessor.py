"""YOURA as a LlamaIndex node postprocessor: keep the sentences of the retrieved nodes that react
most to the query (000_ac75cd36fe64736e.txt, sec. 3.3)."""

from __future__ import annotations

from typing import Any, Literal

from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from longctx.youra import check_select_args, scorer_from

#: Metadata keys added to each returned node (also hidden from the LLM and embedding text).
SCORE_KEY = "youra_score"
SPANS_KEY = "youra_char_spans"
SENTENCE_SCORES_KEY = "youra_sentence_scores"


class YouraPostprocessor(BaseNodePostprocessor):
    """Keep only the most reactive sentences of the retrieved nodes (YOURA).

    The nodes' texts are read as one context, in the order received (joined with a blank line),
    split into sentences inside each node, scored by reaction score with a causal LM and selected
    under ``token_budget`` (model tokens, greedy by score, at most ``max_fraction`` of the
    sentences) or ``top_n`` sentences, for all nodes together.

    Returned nodes: each node with at least one kept sentence is returned once, in the input
    order, as a copy whose text is replaced by its kept sentences (consecutive sentences keep the
    original text between them, separate runs are joined by one space). The copy keeps the node's
    ``id_``, relationships and metadata, with added metadata (excluded from LLM/embedding text):
    ``youra_char_spans`` (``[start, end]`` character spans of the kept sentences in the original
    node text), ``youra_sentence_scores`` and ``youra_score`` (the best kept reaction score, also
    the ``NodeWithScore.score``). Nodes with no kept sentence are dropped. With
    ``keep_full_text=True`` the node text is left whole (only filtering and scores).
    """

    token_budget: int | None = Field(
        default=None, description="Token budget (model tokens) for the kept sentences, all nodes."
    )
    top_n: int | None = Field(default=None, description="Number of sentences to keep instead.")
    max_fraction: float = Field(
        default=0.8, description="With token_budget, keep at most this fraction of the sentences."
    )
    layers: Any = Field(default="last", description="'last', 'all' or a list of layer indices.")
    aggregate: Literal["gmean", "mean"] = Field(
        default="gmean", description="Sentence score: geometric or arithmetic mean."
    )
    baseline: Literal["paper", "instruction"] = Field(
        default="paper", description="Reaction baseline: the paper's eq. 1 or the authors' code."
    )
    keep_full_text: bool = Field(
        default=False, description="Keep the whole node text instead of only kept sentences."
    )
    model: Any = Field(
        default=None, exclude=True, description="Causal LM or path; None: SmolLM2 (lazy)."
    )
    tokenizer: Any = Field(default=None, exclude=True, description="Tokenizer of `model`.")
    scorer: Any = Field(
        default=None, exclude=True, description="A ready longctx.youra.ReactionScorer to use."
    )
    _scorer: Any = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _check(self):
        check_select_args(self.token_budget, self.top_n, self.max_fraction)
        self._scorer = scorer_from(
            self.scorer,
            self.model,
            self.tokenizer,
            layers=self.layers,
            aggregate=self.aggregate,
            baseline=self.baseline,
        )
        return self

    @classmethod
    def class_name(cls) -> str:
        return "YouraPostprocessor"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        from longctx.youra import join_selected, select_in_texts

        if query_bundle is None:
            raise ValueError("YouraPostprocessor needs a query (query_bundle or query_str)")
        if not nodes:
            return []
        texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        if not any(t.strip() for t in texts):
            return []
        chosen = select_in_texts(
            self._scorer,
            texts,
            query_bundle.query_str,
            token_budget=self.token_budget,
            top_n=self.top_n,
            max_fraction=self.max_fraction,
        )
        per_node: dict[int, list] = {}
        for i, span in chosen:
            per_node.setdefault(i, []).append(span)
        out = []
        for i, nws in enumerate(nodes):
            spans = per_node.get(i)
            if not spans:
                continue
            node = nws.node.model_copy(deep=True)
            best = max(s.score for s in spans)
            node.metadata = {
                **nws.node.metadata,
                SCORE_KEY: best,
                SPANS_KEY: [[s.start, s.end] for s in spans],
                SENTENCE_SCORES_KEY: [s.score for s in spans],
            }
            for key in (SCORE_KEY, SPANS_KEY, SENTENCE_SCORES_KEY):
                if key not in node.excluded_llm_metadata_keys:
                    node.excluded_llm_metadata_keys = [*node.excluded_llm_metadata_keys, key]
                if key not in node.excluded_embed_metadata_keys:
                    node.excluded_embed_metadata_keys = [*node.excluded_embed_metadata_keys, key]
            if not self.keep_full_text:
                node.set_content(join_selected(texts[i], spans))
            out.append(NodeWithScore(node=node, score=best))
        return out
