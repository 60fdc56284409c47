"""YOURA as a LangChain retriever over given long documents (Soh, Huang, Tian and Zhao, "You
Only Use Reactive Attention Slice For Long Context Retrieval", 2024, arXiv:2409.13695)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from langchain_longctx._documents import (
    document_keys,
    documents_from_texts,
    hit_to_document,
    with_unique_ids,
)
from langchain_longctx._persist import (
    check_index_texts,
    load_retriever,
    loaded_parts,
    loading,
    save_retriever,
)
from longctx.checks import check_size_field, check_text
from longctx.explain import check_explain
from longctx.persist.reader import retry_on_concurrent_save
from longctx.selection import check_size
from longctx.types import check_order
from longctx.youra import DEFAULT_K, YouraIndex, scorer_from


class YouraRetriever(BaseRetriever):
    """Retrieve the sentences of long documents that react most to the query (YOURA), built once.

    The documents' ``page_content`` are indexed at construction (:class:`longctx.YouraIndex`:
    sentences, token alignment, window layout) and the index is kept across ``invoke``s; the
    model's query-independent work (each window's KV cache) stays in the scorer's window cache
    under its memory budget, so later queries run only the query tokens over cached windows.
    Sentences of all documents are ranked together (:mod:`longctx.youra`, "Several texts").

    **Setup**

    ```bash
    pip install "longctx-rag[langchain,models]"
    ```

    **Key init args**

    - `documents` (`list[Document]`): The long documents (indexed once).
    - `k` (`int`): Sentences returned (default ``longctx.youra.DEFAULT_K`` = 10).
    - `token_budget` (`int | None`): Model tokens for all returned sentences instead of ``k``.
    - `scorer` (`longctx.youra.ReactionScorer | None`): A ready scorer; otherwise one from
      ``model``, ``tokenizer`` and ``scorer_kwargs`` (``preset`` ``"default"`` or ``"paper"``,
      ``cache_bytes``, ``max_window``...).

    **Instantiate**

    ```python
    from langchain_core.documents import Document
    from langchain_longctx import YouraRetriever

    retriever = YouraRetriever(
        documents=[Document(page_content=book_text, id="alice")], k=5
    )
    ```

    **Usage**

    ```python
    docs = retriever.invoke("What colour were the Rabbit's eyes?")
    docs = retriever.invoke("Who is the Queen?", k=3)  # per-call size
    docs = retriever.invoke("Who is the Queen?", token_budget=200)
    for d in docs:
        print(d.metadata["longctx_start_char_idx"], d.metadata["longctx_score"])
    ```

    Each returned ``Document`` is one sentence, best first (``order="score"``; ``"document"``:
    in document order, the paper's for the LLM's reading): ``page_content`` the sentence
    exactly, ``id`` ``"{source id}#{start}-{end}"`` (``"source{n}#..."`` for a source without id;
    the source's own id when the sentence is the whole document), ``metadata`` the source's plus
    ``longctx_start_char_idx`` / ``longctx_end_char_idx`` (characters in the source
    ``page_content``), ``longctx_unit_index``, ``longctx_score``, ``longctx_method`` and
    ``longctx_source_id``.
    """

    # an unknown argument (a typo, LangChain's ``search_kwargs``) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    documents: list[Document] = Field(
        repr=False, description="The long documents to retrieve from."
    )
    k: int = Field(default=DEFAULT_K, ge=1, description="Sentences returned.")
    token_budget: int | None = Field(
        default=None, ge=1, description="Model tokens for all returned sentences instead of k."
    )
    max_fraction: float = Field(
        default=0.8, gt=0.0, le=1.0, description="With token_budget: cap on the sentences kept."
    )
    scorer_kwargs: dict = Field(
        default_factory=dict, description="ReactionScorer options (layers, baseline, ...)."
    )
    model: Any = Field(
        default=None, exclude=True, repr=False, description="Causal LM or path (lazy)."
    )
    tokenizer: Any = Field(
        default=None, exclude=True, repr=False, description="Tokenizer of `model`."
    )
    scorer: Any = Field(
        default=None, exclude=True, repr=False, description="A ready ReactionScorer."
    )
    order: str = Field(
        default="score",
        description="'score': best first; 'document': document order; invoke(..., order=...) "
        "overrides it",
    )
    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: each sentence's window, the attention "
        "its tokens got before and after the question and the parts of its reaction score; "
        "invoke(..., explain=...) overrides it",
    )

    _index: YouraIndex | None = PrivateAttr(default=None)
    _sources: list[int] = PrivateAttr(default_factory=list)
    _check_sizes = field_validator("k", "token_budget", mode="before")(check_size_field)

    def model_post_init(self, context: Any) -> None:
        check_order(self.order)
        self._sources = [i for i, d in enumerate(self.documents) if d.page_content.strip()]
        if not self._sources:
            raise ValueError("documents must hold some text")
        scorer = scorer_from(self.scorer, self.model, self.tokenizer, **self.scorer_kwargs)
        loaded = loaded_parts()
        if "youra_index_dir" in loaded:  # from load()
            self._index = YouraIndex.load(loaded["youra_index_dir"], scorer)
            return
        self._index = YouraIndex.from_texts(
            [self.documents[i].page_content for i in self._sources],
            scorer,
            max_fraction=self.max_fraction,
        )

    @classmethod
    def from_texts(
        cls,
        texts: str | Sequence[str],
        metadatas: Sequence[dict] | None = None,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> YouraRetriever:
        """Build from raw texts (a single ``str`` is one text) with optional metadata dicts and
        ids (one per text).

        Raises
        ------
        TypeError, ValueError
            A non-``str`` text; ``metadatas`` / ``ids`` of another length than ``texts``.
        """
        return cls(documents=documents_from_texts(texts, metadatas, ids), **kwargs)

    # -- persistence --------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Save the documents, the settings and the index (sentences, token counts) in folder
        ``path`` (JSON and ``.npz``, no pickle; the folder is replaced). The model is not saved:
        pass it again to :meth:`load`.

        Raises
        ------
        TypeError
            A document's metadata is not JSON-serializable.
        """
        save_retriever(
            path,
            "langchain.youra_retriever",
            {
                "k": self.k,
                "token_budget": self.token_budget,
                "max_fraction": self.max_fraction,
                "order": self.order,
            },
            self.documents,
            subdirs={"index": self._index.save},
        )

    @classmethod
    @retry_on_concurrent_save("path")
    def load(cls, path: str | os.PathLike, **kwargs: Any) -> YouraRetriever:
        """Load a retriever written by :meth:`save`; ``kwargs`` give the model as to the
        constructor (``model``, ``tokenizer``, ``scorer``, ``scorer_kwargs``) and may override
        the saved settings (``k``, ``token_budget``).

        Raises
        ------
        PersistError
            A missing, damaged or foreign file, named.
        """
        d, settings, docs = load_retriever(path, "langchain.youra_retriever")
        data = {**settings, **kwargs, "documents": docs}
        with loading(youra_index_dir=d.subdir("index")):
            retriever = cls(**data)
        check_index_texts(retriever.index.texts, docs, retriever._sources, str(d.file("index")))
        return retriever

    @property
    def index(self) -> YouraIndex:
        """The core :class:`longctx.YouraIndex`."""
        return self._index

    @classmethod
    def from_documents(cls, documents: list[Document], **kwargs: Any) -> YouraRetriever:
        return cls(documents=list(documents), **kwargs)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        order: str | None = None,
        explain: bool | None = None,
    ) -> list[Document]:
        check_text(query, "query")
        order = check_order(order or self.order)
        explain = check_explain(self.explain if explain is None else explain)
        if k is None and token_budget is None:
            k, token_budget = (None, self.token_budget) if self.token_budget else (self.k, None)
        k, token_budget = check_size(k, token_budget)
        result = self._index.search(query, k=k, token_budget=token_budget, explain=explain)
        keys = document_keys(self.documents)
        out = []
        for h in (result.hits[j] for j in result.positions(order)):
            i = self._sources[h.source]
            src = self.documents[i]
            whole = h.start == 0 and h.end == len(src.page_content)
            if keys[i] is not None:  # not a document given twice
                out.append(hit_to_document(h, src, "youra", whole=whole, key=keys[i]))
        return with_unique_ids(out)

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        order: str | None = None,
        explain: bool | None = None,
    ) -> list[Document]:
        # model work: in a worker thread, so the event loop stays free
        return await run_in_executor(
            None,
            partial(
                self._get_relevant_documents,
                query,
                k=k,
                token_budget=token_budget,
                order=order,
                explain=explain,
            ),
        )
