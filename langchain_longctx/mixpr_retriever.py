"""LangChain retriever for MixPR (Alonso and Millidge, "Mixture-of-PageRanks: Replacing
Long-Context with Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078)."""

from __future__ import annotations

import logging
import os
import threading
import warnings
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
    add_to_source_map,
    added_document_keys,
    ask_vector_retriever,
    check_new_ids,
    check_vector_retriever,
    document_keys,
    documents_from_texts,
    documents_to_seeds,
    hit_to_document,
    positions_of_ids,
    source_map,
    with_unique_ids,
)
from langchain_longctx._persist import (
    check_saved_keys,
    keys_from_index,
    load_retriever,
    loaded_parts,
    loading,
    save_retriever,
)
from longctx.checks import check_choice, check_size_field, check_text
from longctx.embeddings import require_query_encoder
from longctx.explain import check_explain
from longctx.filters import compile_filter
from longctx.filters_persist import filter_from_json, filter_to_json
from longctx.mixpr import MODES, MixPR, MixPRIndex
from longctx.persist import PersistError
from longctx.persist.reader import retry_on_concurrent_save
from longctx.selection import check_size
from longctx.types import check_order

logger = logging.getLogger(__name__)


class MixPRRetriever(BaseRetriever):
    """Mixture-of-PageRanks retriever over long documents or passages, built once, kept current.

    The documents' ``page_content`` are indexed at construction (:class:`longctx.MixPRIndex`:
    MixPR chunks of at most ``max_words`` words, TF-IDF, the similarity graph; with
    ``chunk_documents=False`` every document is one unit, for passages); every ``invoke`` only
    adds the query to the graph and runs personalized PageRank (local questions) or uses the
    PageRank (global tasks). ``add_documents`` and ``delete`` change the index without a rebuild
    (an id already held is replaced, as LangChain's vector stores upsert). The top ``k`` chunks
    (or ``token_budget`` tokens) come back best first, as LangChain's retrievers return them;
    ``order="document"`` (here or in ``invoke``) gives document order, the paper's for the LLM's
    reading. Chunks with the same text take one slot. ``filter=`` (a dict or a callable) keeps
    the documents whose metadata it accepts; ``save`` keeps it (all but a callable).

    **Setup**

    ```bash
    pip install "longctx-rag[langchain]"
    ```

    **Key init args**

    - `documents` (`list[Document]`): The long documents (indexed once).
    - `k` (`int`): Chunks returned (default 100, the paper's).
    - `token_budget` (`int | None`): Token budget instead of ``k``
      (``longctx.tokens.count_tokens``).
    - `mode` (`str`): ``"auto"`` (router), ``"local"`` or ``"global"``.
    - `mixpr` (`longctx.MixPR | None`): Settings and router, e.g. ``MixPR(preset="paper")`` or
      ``MixPR(router=LLMRouter(chat_model))``.
    - `embeddings` (`langchain_core.embeddings.Embeddings | None`): The app's embedding model:
      hybrid mode (every chunk embedded once at construction, each query embedded with it; its
      nearest chunks join the walk).
    - `chunk_documents` (`bool`): ``False``: every document one unit, returned whole (passages;
      with ``MixPR(preset="multihop")`` the multi-hop walk).
    - `vector_retriever` (`BaseRetriever | VectorStore | None`): The app's own vector
      retriever or store: hybrid over the vectors the app already holds (no embedding by
      longctx). Each local query asks it first (``vector_k`` documents from a store; a
      question the router sends to global mode does not: it uses no seeds) and the chunks
      it returns seed a walk of their own on the MixPR units they overlap, added to MixPR's
      score, each divided by its maximum (:mod:`longctx.mixpr.seeds`): a chunk's source
      document is found by
      ``metadata[seed_source_key]`` (``"source"``, as the document loaders and text splitters
      set it) or by its ``id``, its span by ``metadata["start_index"]``
      (``RecursiveCharacterTextSplitter(add_start_index=True)``) or by locating its text; of
      several documents of one source (a PDF's pages, a CSV's rows), the first that holds the
      chunk's text at ``start_index``, else the first that contains it
      (:func:`longctx.mixpr.seeds.pick_parent`).
      Not saved: pass it again to :meth:`load`.
    - `keep_firsts` (`bool`): With `vector_retriever`: MixPR's own best unit and the app's
      first hit (when the filter keeps it) are chosen first, then the seeded order fills the
      rest (``MixPRIndex.search(keep_firsts=True)``,
      :func:`longctx.mixpr.seeds.keep_first_units`): the guide's fusion recipe, over the app's
      own splits (``chunk_documents=False``). With ``k=1`` or a budget that holds one unit
      only MixPR's own best is kept. Each document keeps its own fused score
      (``longctx_score``); ``order="score"`` puts those two first. Default ``False``; not
      saved.
    - `filter` (`dict | callable | None`): Metadata filter, ``{"author": "Austen"}``,
      ``{"year": {"$gte": 1800}}``; ``invoke(..., filter=...)`` overrides it.
    - `order` (`str`): ``"score"`` (best first, the default) or ``"document"``.
    - `explain` (`bool`): each document's ``metadata["longctx_explanation"]`` says why it was
      retrieved (:mod:`longctx.explain`; default ``False``); ``invoke(..., explain=True)``
      overrides it.

    **Instantiate**

    ```python
    from langchain_longctx import MixPRRetriever

    retriever = MixPRRetriever.from_texts(book_text, ids=["book"], k=100)
    # or MixPRRetriever(documents=[Document(page_content=..., id=..., metadata=...)])
    ```

    **Save and load (JSON and ``.npy``, nothing rebuilt on load)**

    ```python
    retriever.save("./mixpr")
    retriever = MixPRRetriever.load("./mixpr")
    ```

    **Usage**

    ```python
    docs = retriever.invoke("Where is the milk?")
    docs = retriever.invoke("Summarize the book.", k=200)  # global: PageRank
    docs = retriever.invoke("Where is the milk?", token_budget=2000)
    docs = retriever.invoke("Where is the milk?", order="document")  # for the LLM's reading
    retriever.add_documents([Document(page_content=new_text, id="book")])  # replaces "book"
    ```

    Each returned ``Document`` is one chunk: ``page_content`` the chunk text exactly, ``id``
    ``"{source id}#{start}-{end}"``, ``metadata`` its source's plus ``longctx_start_char_idx`` /
    ``longctx_end_char_idx`` (character offsets in the source ``page_content``),
    ``longctx_unit_index``, ``longctx_score`` (MixPR's score), ``longctx_method`` and
    ``longctx_source_id``.
    """

    # an unknown argument (a typo, LangChain's ``search_kwargs``) is an error, not ignored
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    documents: list[Document] = Field(
        default_factory=list, repr=False, description="Documents to search"
    )
    k: int = Field(default=100, ge=1, description="Number of chunks returned (paper: 100)")
    token_budget: int | None = Field(
        default=None, ge=1, description="Token budget instead of k (longctx.tokens.count_tokens)"
    )
    mode: str = Field(default="auto", description="'auto' (router), 'local' or 'global'")
    max_words: int | None = Field(
        default=None, ge=1, description="Most words per chunk (default the preset's 64; paper 32)"
    )
    mixpr: MixPR | None = Field(default=None, repr=False, description="MixPR settings and router")
    chunk_documents: bool = Field(
        default=True,
        description="False: every document is one unit, returned whole (passages; the "
        "multi-hop walk, MixPR(preset='multihop'))",
    )
    embeddings: Any = Field(
        default=None,
        repr=False,
        description="The app's LangChain Embeddings for hybrid mode (chunks embedded once)",
    )

    vector_retriever: Any = Field(
        default=None,
        repr=False,
        description="The app's own BaseRetriever or VectorStore: its hits seed the walk "
        "(hybrid with no embedding by longctx)",
    )
    vector_k: int = Field(
        default=5, ge=1, description="Documents asked of vector_retriever when it is a store"
    )
    keep_firsts: bool = Field(
        default=False,
        strict=True,
        description="With vector_retriever: MixPR's best unit and the app's first hit (when "
        "the filter keeps it) chosen first, then the seeded order (the guide's fusion recipe)",
    )
    seed_source_key: str = Field(
        default="source",
        description="Metadata key naming a vector hit's source document (its value: that "
        "document's id or the same key's value in its metadata)",
    )

    filter: Any = Field(
        default=None,
        repr=False,
        description="Metadata filter: a dict ({'author': 'Austen'}, {'year': {'$gte': 1800}}) "
        "or a callable metadata -> bool; invoke(..., filter=...) overrides it",
    )
    order: str = Field(
        default="score",
        description="'score': best first (LangChain's retrievers' order); 'document': document "
        "order (the paper's, for the LLM's reading); invoke(..., order=...) overrides it",
    )
    explain: bool = Field(
        default=False,
        description="Add metadata['longctx_explanation']: why each chunk was retrieved (the "
        "restart, the walk's terms and seed chunks, the multi-hop paths); invoke(..., "
        "explain=...) overrides it",
    )

    _index: MixPRIndex | None = PrivateAttr(default=None)
    _keys: list = PrivateAttr(default_factory=list)
    _by_key: dict = PrivateAttr(default_factory=dict)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)
    _sources: dict | None = PrivateAttr(default=None)
    _check_sizes = field_validator("k", "token_budget", mode="before")(check_size_field)

    def model_post_init(self, context: Any) -> None:
        check_choice(self.mode, "mode", MODES)
        check_order(self.order)
        compile_filter(self.filter, name="filter")  # a bad filter raises now, before the build
        check_vector_retriever(self.vector_retriever)
        loaded = loaded_parts()
        self._keys = loaded.get("keys") or document_keys(self.documents)
        self._by_key = {k: d for k, d in zip(self._keys, self.documents) if k is not None}
        if "mixpr_index" in loaded:  # from load(): built
            self._index = loaded["mixpr_index"]
        else:
            texts, ids, metas = _indexed(self.documents, self._keys)
            if texts:
                self._index = self._settings().index(
                    texts,
                    ids=ids,
                    metadatas=metas,
                    encoder=self.embeddings,
                    chunk=self.chunk_documents,
                )

    def _settings(self) -> MixPR:
        if self.mixpr is not None:
            return self.mixpr
        return MixPR() if self.max_words is None else MixPR(max_words=self.max_words)

    # -- add and delete -----------------------------------------------------------------------
    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[str]:
        """Add documents (LangChain's ``VectorStore.add_documents`` name): their texts are
        chunked and indexed, the rest of the index is not rebuilt
        (:meth:`longctx.MixPRIndex.insert`). ``ids=`` (one per document) sets their ids.

        A document whose id the retriever already holds replaces it (an upsert, as LangChain's
        vector stores do): the old document is deleted and the new one added at the end, the
        same as ``delete(ids)`` then ``add_documents``; the result equals a fresh build over
        the documents in that order.

        Returns
        -------
        list of str
            The documents' ids (``"source{position}"`` for a document without one, primed
            (``"source2'"``) when an older document holds that name; ``save`` keeps them).

        Raises
        ------
        TypeError, ValueError
            A non-``Document``, ``ids`` of another length, one id given twice in the call, or
            an id that is the key of a held document without that id (``"source2'"`` of a
            document without id): refused before anything changes.
        """
        docs = list(documents)
        for i, d in enumerate(docs):
            if not isinstance(d, Document):
                raise TypeError(f"documents[{i}] must be a Document, got {type(d).__name__}")
        ids = kwargs.pop("ids", None)
        if kwargs:
            raise TypeError(f"add_documents() got unexpected arguments {sorted(kwargs)}")
        if ids is not None:
            if len(ids) != len(docs):
                raise ValueError(f"ids has {len(ids)} entries for {len(docs)} documents")
            docs = [Document(page_content=d.page_content, metadata=d.metadata, id=i)
                    for d, i in zip(docs, ids)]  # fmt: skip
        given = [d.id for d in docs if d.id is not None]
        if len(set(given)) != len(given):
            raise ValueError("add_documents: an id is given twice in one call")
        with self._lock:
            check_new_ids(self.documents, self._keys, given)  # before anything changes
            held = {d.id for d in self.documents if d.id is not None}
            dup = [i for i in given if i in held]
            if dup:  # upsert, as LangChain's vector stores: the old documents go, the new come
                self.delete(dup)
            keys = added_document_keys(self.documents, self._keys, docs)
            texts, kids, metas = _indexed(docs, keys)
            if texts:
                if self._index is None:
                    self._index = self._settings().index(
                        texts,
                        ids=kids,
                        metadatas=metas,
                        encoder=self.embeddings,
                        chunk=self.chunk_documents,
                    )
                else:
                    self._index.insert(texts, ids=kids, metadatas=metas)
            self.documents.extend(docs)
            self._keys.extend(keys)
            if self._sources is not None:  # the new documents join their sources' candidates
                # (after the earlier ones); copy on write, as _by_key
                self._sources = add_to_source_map(self._sources, docs, keys, self.seed_source_key)
            # copy on write: a search takes the map by reference under the lock
            self._by_key = {**self._by_key, **{k: d for k, d in zip(keys, docs) if k is not None}}
        return [k if k is not None else d.id for k, d in zip(keys, docs)]

    def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> bool:
        """Remove documents by id (LangChain's ``VectorStore.delete`` name and contract).

        An id names the documents that carry it as their own id, else the document without id
        (or repeating another's id) that ``add_documents`` or the constructor named so, never
        both. An id the retriever does not hold is skipped, as LangChain's
        ``InMemoryVectorStore`` skips it (logged, and the result is ``False``); the held ones
        are removed. (Before longctx 0.2 an unknown id raised ``KeyError`` and removed
        nothing.)

        Returns
        -------
        bool
            ``True`` when every id was held and removed, ``False`` when some were not held (the
            others were removed), as ``VectorStore.delete`` documents: "True if deletion is
            successful, False otherwise".

        Raises
        ------
        ValueError
            ``ids`` is missing or empty (LangChain's "delete all" is not supported).
        """
        if not ids:
            raise ValueError("delete() needs ids=[...]")
        if isinstance(ids, str):
            ids = [ids]
        with self._lock:
            drop = positions_of_ids(self.documents, self._keys, ids)
            found = {self._keys[j] for j in drop} | {self.documents[j].id for j in drop}
            missing = [i for i in ids if i not in found]
            if missing:
                logger.info("delete: ids %s are not in the retriever; skipped", missing[:5])
            held = set(self._index.doc_ids) if self._index is not None else set()
            gone = [self._keys[j] for j in drop if self._keys[j] in held]
            if gone:
                self._index.delete(gone)
            dropped_keys = {self._keys[j] for j in drop}
            self._by_key = {k: d for k, d in self._by_key.items() if k not in dropped_keys}
            dropped = set(drop)
            self.documents[:] = [d for j, d in enumerate(self.documents) if j not in dropped]
            self._keys = [k for j, k in enumerate(self._keys) if j not in dropped]
            self._sources = None
        return not missing

    async def aadd_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[str]:
        """:meth:`add_documents` in a worker thread (LangChain's ``VectorStore`` async name)."""
        return await run_in_executor(None, partial(self.add_documents, documents, **kwargs))

    async def adelete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> bool:
        """:meth:`delete` in a worker thread (LangChain's ``VectorStore`` async name)."""
        return await run_in_executor(None, partial(self.delete, ids, **kwargs))

    @property
    def index(self) -> MixPRIndex | None:
        """The core :class:`longctx.MixPRIndex` (``None`` when no document has text)."""
        return self._index

    @classmethod
    def from_documents(cls, documents: list[Document], **kwargs: Any) -> MixPRRetriever:
        """Build from LangChain documents (kept as given: ids and metadata)."""
        return cls(documents=list(documents), **kwargs)

    @classmethod
    def from_texts(
        cls,
        texts: str | Sequence[str],
        metadatas: Sequence[dict] | None = None,
        ids: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> MixPRRetriever:
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
        """Save the documents, the settings and the built index in folder ``path`` (JSON and
        ``.npy``, no pickle; the folder is replaced), with ``order`` and ``filter`` (a callable
        filter cannot be saved: a warning says to pass it again to :meth:`load`). The router is
        not saved: pass it again to :meth:`load`.

        Beside ``add_documents`` / ``delete`` in other threads, the documents and the index are
        taken together under the retriever's lock (:meth:`longctx.MixPRIndex.snapshot`,
        constant time) and written after it is released: the folder holds one version of the
        retriever, and replaces the one there only once it is whole (issue 44).

        Raises
        ------
        TypeError
            A document's metadata is not JSON-serializable.
        """
        saved_filter = filter_to_json(self.filter)
        if saved_filter is None and self.filter is not None:
            warnings.warn(
                "MixPRRetriever.save: a callable filter cannot be saved; pass filter= again to "
                "load()",
                stacklevel=2,
            )
        with self._lock:  # one version: the documents and the index as they are now, together
            documents = list(self.documents)
            keys = list(self._keys)
            index = self._index.snapshot() if self._index is not None else None
        save_retriever(
            path,
            "langchain.mixpr_retriever",
            {"k": self.k, "token_budget": self.token_budget, "mode": self.mode,
             "max_words": self.max_words, "chunk_documents": self.chunk_documents,
             "order": self.order, "filter": saved_filter},
            documents,
            json_files={"keys": keys},
            subdirs={"index": index.save} if index is not None else None,
        )  # fmt: skip

    @classmethod
    @retry_on_concurrent_save("path")
    def load(cls, path: str | os.PathLike, *, router=None, **kwargs: Any) -> MixPRRetriever:
        """Load a retriever written by :meth:`save` (nothing is rebuilt); ``kwargs`` override the
        saved settings (``k``, ``token_budget``, ``mode``, ``order``, ``filter``: the saved
        filter is restored, ``filter=None`` drops it). A hybrid retriever embeds queries
        with the model that embedded its chunks: pass it again as ``embeddings=`` (the packaged
        all-MiniLM-L6-v2, e.g. :class:`~langchain_longctx.LongctxEmbeddings`, is reloaded by
        name).

        Raises
        ------
        PersistError
            A missing, damaged or foreign file, named.
        ValueError
            A hybrid retriever loaded without ``embeddings=`` (unless its model is the packaged
            default), or with a model of another dimension.
        """
        d, settings, docs = load_retriever(path, "langchain.mixpr_retriever")
        saved_filter = settings.pop("filter", None)
        if saved_filter is not None:
            settings["filter"] = filter_from_json(saved_filter, str(d.file("retriever.json")))
        embeddings = kwargs.get("embeddings")
        index = None
        if d.has("index"):
            index = MixPRIndex.load(d.subdir("index"), router=router, encoder=embeddings)
            require_query_encoder(
                index.encoder_identity, embeddings, where=str(d.path), argument="embeddings"
            )
        data = {**settings, **kwargs, "documents": docs}
        keys = None  # no index: the documents' positions name them
        if d.has("keys.json"):
            keys = check_saved_keys(d.json("keys.json"), len(docs), str(d.file("keys.json")))
        elif index is not None:  # a save before keys.json: the names its index holds
            keys = keys_from_index(docs, index.doc_ids, str(d.file("index")))
        with loading(mixpr_index=index, keys=keys):
            retriever = cls(**data)
        texts, ids, _ = _indexed(docs, retriever._keys)
        have = list(zip(index.doc_ids, index.texts)) if index is not None else []
        if have != list(zip(ids, texts)):
            raise PersistError(
                f"{str(d.file('index'))!r} does not hold the texts of the saved documents: the "
                "folder is damaged or mixes two saves"
            )
        return retriever

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str | None = None,
        filter: Any = None,
        order: str | None = None,
        explain: bool | None = None,
    ) -> list[Document]:
        check_text(query, "query")
        order = check_order(order or self.order)
        explain = check_explain(self.explain if explain is None else explain)
        mode = check_choice(mode or self.mode, "mode", MODES)
        if filter is not None:
            compile_filter(filter, name="filter")  # named as the caller gave it
        if k is None and token_budget is None:
            k, token_budget = (None, self.token_budget) if self.token_budget else (self.k, None)
        k, token_budget = check_size(k, token_budget)
        with self._lock:  # the index and the documents of one version (writes hold the lock)
            index = self._index.snapshot() if self._index is not None else None
            by_key = self._by_key  # replaced, never changed, by writes
            if self.vector_retriever is not None and self._sources is None:
                self._sources = source_map(self.documents, self._keys, self.seed_source_key)
            sources = self._sources
        if index is None:
            return []
        flt = self.filter if filter is None else filter
        seeds = vr = self.vector_retriever
        if vr is not None:  # asked by the index for a local query only (a global one has no use)

            def seeds():
                found = ask_vector_retriever(vr, query, self.vector_k)
                return documents_to_seeds(found, index, sources, self.seed_source_key, by_key)

        result = index.search(
            query,
            k=k,
            token_budget=token_budget,
            mode=mode,
            filters=flt,
            unique_texts=True,
            seeds=seeds,
            explain=explain,
            keep_firsts=self.keep_firsts,
        )
        hits, keys = result.hits, result.info["doc_ids"]
        whole = not self.chunk_documents
        return with_unique_ids(
            [
                hit_to_document(hits[j], by_key[keys[j]], "mixpr", key=keys[j], whole=whole)
                for j in result.positions(order)
                if keys[j] in by_key
            ]
        )

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun | None = None,
        k: int | None = None,
        token_budget: int | None = None,
        mode: str | None = None,
        filter: Any = None,
        order: str | None = None,
        explain: bool | None = None,
    ) -> list[Document]:
        # CPU-bound (sparse products): run in a worker thread, keep the event loop free
        return await run_in_executor(
            None,
            partial(
                self._get_relevant_documents,
                query,
                k=k,
                token_budget=token_budget,
                mode=mode,
                filter=filter,
                order=order,
                explain=explain,
            ),
        )


def _indexed(documents, keys):
    """``(texts, ids, metadatas)`` of the documents that go into the index: those with text, not
    given twice."""
    texts, ids, metas = [], [], []
    for d, k in zip(documents, keys):
        if k is not None and d.page_content.strip():
            texts.append(d.page_content)
            ids.append(k)
            metas.append(d.metadata)
    return texts, ids, metas
