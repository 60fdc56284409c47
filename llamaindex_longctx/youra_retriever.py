"""YOURA as a LlamaIndex retriever over long documents (000_ac75cd36fe64736e.txt, sec. 3.3)."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import (
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    TextNode,
)

from longctx.youra import check_select_args, scorer_from


class YouraRetriever(BaseRetriever):
    """Retrieve the sentences of long documents that react most to the query (YOURA).

    Each document is one context: its sentences are scored by reaction score with a causal LM
    (long documents in windows) and selected under ``token_budget`` (model tokens, greedy by
    score, at most ``max_fraction`` of the sentences) or ``top_n``, **per document**. The
    document's KV cache is kept (LRU of the scorer), so later queries on the same documents cost
    only the query tokens.

    Returns one ``NodeWithScore`` per selected sentence, document by document and in document
    order: a ``TextNode`` with the sentence text exactly as in the document,
    ``start_char_idx``/``end_char_idx`` (characters in the document), the document's metadata plus
    ``youra_score`` and ``sentence_index``, a SOURCE relationship to the document, and an id
    ``"{doc_id}:{start}-{end}"`` (stable across queries).

    Parameters
    ----------
    documents : list of llama_index Document, optional
    text : str, optional
        Instead of ``documents``: one text (wrapped as a Document with id ``"text"``).
    token_budget, top_n : int, exactly one
    max_fraction : float, default 0.8
    scorer : longctx.youra.ReactionScorer, optional
        Otherwise one is built from ``model``, ``tokenizer`` and ``scorer_kwargs``.

    Raises
    ------
    TypeError, ValueError
        Bad arguments, at construction.
    """

    def __init__(
        self,
        documents: list[Document] | None = None,
        *,
        text: str | None = None,
        token_budget: int | None = None,
        top_n: int | None = None,
        max_fraction: float = 0.8,
        scorer: Any = None,
        model: Any = None,
        tokenizer: Any = None,
        callback_manager: CallbackManager | None = None,
        **scorer_kwargs: Any,
    ) -> None:
        if (documents is None) == (text is None):
            raise ValueError("give exactly one of documents and text")
        if text is not None:
            if not isinstance(text, str) or not text.strip():
                raise ValueError("text must be a non-empty str")
            documents = [Document(text=text, id_="text")]
        if not isinstance(documents, list) or not documents:
            raise ValueError("documents must be a non-empty list of Document")
        check_select_args(token_budget, top_n, max_fraction)
        self.documents = documents
        self.token_budget = token_budget
        self.top_n = top_n
        self.max_fraction = max_fraction
        self.scorer = scorer_from(scorer, model, tokenizer, **scorer_kwargs)
        super().__init__(callback_manager=callback_manager)

    @classmethod
    def from_documents(cls, documents: list[Document], **kwargs: Any) -> YouraRetriever:
        return cls(documents, **kwargs)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must contain some non-whitespace text")
        out: list[NodeWithScore] = []
        for doc in self.documents:
            text = doc.get_content(metadata_mode=MetadataMode.NONE)
            if not text.strip():
                continue
            chosen = self.scorer.select(
                text, query, self.token_budget, self.max_fraction, top_n=self.top_n
            )
            for s in chosen:
                node = TextNode(
                    text=text[s.start : s.end],
                    id_=f"{doc.id_}:{s.start}-{s.end}",
                    start_char_idx=s.start,
                    end_char_idx=s.end,
                    metadata={**doc.metadata, "youra_score": s.score, "sentence_index": s.index},
                    excluded_llm_metadata_keys=[
                        *doc.excluded_llm_metadata_keys,
                        "youra_score",
                        "sentence_index",
                    ],
                    excluded_embed_metadata_keys=[
                        *doc.excluded_embed_metadata_keys,
                        "youra_score",
                        "sentence_index",
                    ],
                )
                node.relationships[NodeRelationship.SOURCE] = doc.as_related_node_info()
                out.append(NodeWithScore(node=node, score=s.score))
        return out
