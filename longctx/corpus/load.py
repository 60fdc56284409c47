"""Reading a built corpus back: one index (:func:`load_index`), every index
(:func:`load_corpus`), and one search over every document (:class:`CorpusIndex`)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import tempfile
import time
import warnings
from collections.abc import Mapping

from longctx.corpus.manifest import CORPUS_MANIFEST, CorpusManifest, check_entry_text
from longctx.corpus.storage import open_storage
from longctx.corpus.writers import loads_beside_writers
from longctx.persist import PersistError
from longctx.types import SearchResult

logger = logging.getLogger(__name__)

__all__ = ["CorpusIndex", "load_index", "load_corpus", "read_corpus_manifest"]

_LOADERS = {
    "longctx.mixpr": ("longctx.mixpr", "MixPRIndex"),
    "longctx.diversity": ("longctx.diversity", "DiversityIndex"),
    "longctx.garlic": ("longctx.garlic", "HWDAG"),
}


def _loader(fmt: str, where: str):
    import importlib

    if fmt not in _LOADERS:
        raise PersistError(f"{where!r} holds a {fmt!r} index, which longctx.corpus cannot load")
    module, name = _LOADERS[fmt]
    return getattr(importlib.import_module(module), name)


def load_index(uri, *, storage_options: dict | None = None, **load_kwargs):
    """Load one saved index folder from a local path or an fsspec URL, whatever its kind.

    Parameters
    ----------
    uri : str or PathLike
        The index folder (``<corpus>/indexes/<name>``, or any folder an index's ``save`` wrote).
    storage_options : dict, optional
        ``fsspec`` options.
    **load_kwargs :
        Passed to the index's ``load`` (``router`` for MixPR, ``encoder`` for diversity).

    Returns
    -------
    MixPRIndex, DiversityIndex or HWDAG
        As its own ``load`` returns it; a remote folder is copied into a temporary folder,
        loaded, and the copy removed.

    Raises
    ------
    PersistError
        No index there, a damaged or half-written one, an unknown kind.
    """
    storage = open_storage(uri, storage_options)
    with tempfile.TemporaryDirectory(prefix="longctx-load-") as tmp:
        if storage.local is not None:
            local = storage.local
        else:
            if not storage.index_complete(""):
                raise PersistError(f"{storage.url!r} holds no finished longctx index")
            local = storage.fetch_index("", tmp)
        from longctx.persist.reader import open_index_dir

        with open_index_dir(local, kind=None) as r:  # any kind: the format picks the loader
            fmt = r.manifest["format"]
        cls = _loader(fmt, storage.url)
        return cls.load(local, **load_kwargs)


def read_corpus_manifest(out, *, storage_options: dict | None = None) -> CorpusManifest:
    """The manifest of the corpus at ``out`` (``PersistError`` when there is none)."""
    storage = open_storage(out, storage_options)
    raw = storage.read_json(CORPUS_MANIFEST)
    if raw is None:
        raise PersistError(f"{storage.location(CORPUS_MANIFEST)!r} is missing: no corpus there")
    return CorpusManifest.from_json(raw, storage.location(CORPUS_MANIFEST))


def _index_root(arguments: dict):
    """The index root of the corpus at ``arguments["out"]``, where a rebuild marks itself."""
    from longctx.corpus.shards.build import index_storage

    return index_storage(open_storage(arguments["out"], arguments["storage_options"]))


@loads_beside_writers(_index_root)  # read again while a rebuild replaces the corpus's files
def load_corpus(
    out,
    *,
    storage_options: dict | None = None,
    ray_address: str | None = None,
    use_ray: bool | None = None,
    workers: int | None = None,
    **load_kwargs,
) -> dict:
    """Every finished index of the corpus at ``out``: ``{doc_id: index}`` in manifest order.
    A MixPR corpus has one index holding every document: it is the value of every key (a
    :class:`longctx.MixPRIndex`, or for a corpus built with ``shards`` a
    :class:`longctx.corpus.shards.index.ShardedMixPRIndex`).

    Failed documents are left out (logged); ``**load_kwargs`` go to each index's ``load``.

    Parameters
    ----------
    ray_address, use_ray, workers :
        Sharded MixPR corpora only: where the shards' actors run (``use_ray=None``: Ray actors for
        the cluster at ``ray_address`` or when this process already runs Ray, else in this
        process, no Ray started; ``True``: Ray actors, a local Ray started here when needed), see :meth:`ShardedMixPRIndex.load
        <longctx.corpus.shards.index.ShardedMixPRIndex.load>`. Call ``close()`` on the index when done.
        Given for a corpus that is not sharded, they do nothing: a warning says so.

    Raises
    ------
    PersistError
        No corpus at ``out``, a damaged manifest, an index listed as done that is missing or
        damaged (a shard that cannot be loaded is named), or one whose text is not the one its
        entry's ``text_sha256`` records (named). A MixPR corpus whose checks fail while a
        rebuild replaces its files is read again (:mod:`longctx.corpus.writers`); a
        :class:`~longctx.persist.ConcurrentSaveError` names the rebuild still running (or
        stopped half way) at the last attempt.
    """
    storage = open_storage(out, storage_options)
    manifest = read_corpus_manifest(storage)
    if (
        manifest.method == "mixpr"
        and isinstance(manifest.options, dict)
        and (manifest.options.get("shards") is not None)
    ):
        from longctx.corpus.shards.build import load_sharded_corpus

        done = [d for d, e in manifest.entries.items() if e.status == "done"]
        if not done:
            return {}
        index = load_sharded_corpus(
            storage, manifest, use_ray=use_ray, ray_address=ray_address, workers=workers,
            **load_kwargs,
        )  # fmt: skip
        return {d: index for d in done}
    if ray_address is not None or use_ray:
        warnings.warn(
            f"ray_address / use_ray apply to corpora built with shards; the corpus at "
            f"{storage.url} is not sharded, so it is searched in this process without Ray",
            stacklevel=2,
        )
    if manifest.method == "mixpr":
        from longctx.corpus.shards.single import check_entries, load_mixpr_index

        done = [d for d, e in manifest.entries.items() if e.status == "done"]
        if not done:
            return {}
        index = load_mixpr_index(storage, **load_kwargs)
        check_entries(index, manifest, storage.location(CORPUS_MANIFEST))
        return {d: index for d in done}
    out_indexes = {}
    for doc_id, e in manifest.entries.items():
        if e.status != "done":
            logger.info("corpus %s: document %r is %s; left out", storage.url, doc_id, e.status)
            continue
        if not storage.index_complete(e.path):
            raise PersistError(f"{storage.location(e.path)!r} is missing or half-written")
        where = storage.local_index(e.path) if storage.local is not None else None
        index = load_index(where or storage.location(e.path), **load_kwargs)
        check_entry_text(e, getattr(index, "texts", ()), storage.location(CORPUS_MANIFEST))
        out_indexes[doc_id] = index
    return out_indexes


def check_corpus(corpus, owner: str) -> CorpusIndex:
    """``corpus`` when it is a :class:`CorpusIndex`; a ``TypeError`` naming ``corpus`` and
    ``owner.from_corpus`` (which loads one from its folder or URL) otherwise (a path given as
    ``corpus=`` failed only at the first search before)."""
    if not isinstance(corpus, CorpusIndex):
        raise TypeError(
            f"corpus must be a loaded longctx.corpus.CorpusIndex, got {type(corpus).__name__}"
            f" {corpus!r:.80}: load a built corpus with {owner}.from_corpus(out, ...) (out: "
            "the corpus's folder or URL)"
        )
    return corpus


@functools.cache
def _search_keywords(cls) -> frozenset | None:
    """The keywords ``cls.search`` takes (``None``: any, it takes ``**kwargs``)."""
    params = inspect.signature(cls.search).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(n for n in params if n not in ("self", "query"))


class CorpusIndex:
    """One search over a corpus: a MixPR corpus is one :class:`longctx.MixPRIndex` over every
    document (one walk, corpus-wide term statistics: scores comparable across documents), or
    for a corpus built with ``shards`` a :class:`longctx.corpus.shards.index.ShardedMixPRIndex`
    (the same search over shards held by Ray actors); a
    diversity corpus is one index per document, each answering the query on its own (its
    relevance reward is the cosine to the query with one encoder for all documents, so
    comparable too), the hits merged by score. Hits come back in document order (corpus order,
    then ``start``) like every :class:`~longctx.types.SearchResult`; ``Passage.source`` is the
    document's position in :attr:`doc_ids`. For GARLIC corpora use
    :meth:`llamaindex_longctx.GarlicIndex.from_corpus` (one graph search over all documents).

    Parameters
    ----------
    indexes : MixPRIndex, or mapping doc_id -> DiversityIndex (or MixPRIndex)
        A mapping whose values are all one MixPRIndex (what :func:`load_corpus` gives for a
        MixPR corpus) is that index.
    """

    def __init__(self, indexes):
        from longctx.corpus.shards.index import ShardedMixPRIndex
        from longctx.mixpr import MixPRIndex

        one = (MixPRIndex, ShardedMixPRIndex)
        if isinstance(indexes, Mapping) and indexes:
            values = list(indexes.values())
            if isinstance(values[0], one) and all(v is values[0] for v in values):
                indexes = values[0]
        self.index = None
        self._positions = None  # (the index's doc_ids, {doc_id: position}): _position
        self.sharded = isinstance(indexes, ShardedMixPRIndex)
        if isinstance(indexes, one):
            self.index = indexes
            self.indexes = {}
            self.doc_ids = tuple(indexes.doc_ids)
            return
        if not indexes:
            raise ValueError("indexes is empty: the corpus has no finished document")
        for doc_id, ix in indexes.items():
            if not hasattr(ix, "search") or not hasattr(ix, "texts"):
                raise TypeError(
                    f"indexes[{doc_id!r}] is a {type(ix).__name__}, not a MixPR or diversity "
                    "index (GARLIC corpora: GarlicIndex.from_corpus)"
                )
        self.indexes = dict(indexes)
        self.doc_ids = tuple(self.indexes)

    @classmethod
    def from_corpus(
        cls,
        out,
        *,
        storage_options: dict | None = None,
        ray_address: str | None = None,
        use_ray: bool | None = None,
        workers: int | None = None,
        **load_kwargs,
    ) -> CorpusIndex:
        """Load the corpus at ``out`` (see :func:`load_corpus`; ``ray_address``, ``use_ray``
        and ``workers`` place a sharded MixPR corpus's shard actors). Close it (:meth:`close`,
        or ``with``) to stop the actors.

        Raises
        ------
        PersistError
            No corpus, a damaged manifest or index, an entry whose digest does not match, a
            shard that cannot be loaded (named).
        ValueError
            The corpus has no finished document.
        """
        return cls(
            load_corpus(
                out, storage_options=storage_options, ray_address=ray_address, use_ray=use_ray,
                workers=workers, **load_kwargs,
            )
        )  # fmt: skip

    def text(self, doc_id: str) -> str:
        """The whole text of document ``doc_id`` (from its shard for a sharded corpus).

        Raises
        ------
        KeyError
            No such document.
        """
        if self.index is not None:
            if self.sharded:
                return self.index.text(doc_id)
            return self.index.texts[self._position(doc_id)]
        return self.indexes[doc_id].texts[0]

    def _position(self, doc_id: str) -> int:
        """The position of ``doc_id`` in the one index's documents (``KeyError`` when absent),
        from a map made once per version of its ids (an insert or delete gives new ones), not
        once per call: a retriever asks for each hit's document."""
        ids = self.index.doc_ids
        held = self._positions
        if held is None or held[0] is not ids:
            held = self._positions = (ids, {d: i for i, d in enumerate(ids)})
        return held[1][doc_id]

    def metadata(self, doc_id: str) -> dict:
        """The metadata the corpus's index holds for ``doc_id``, the metadata a ``filters=``
        search reads: on a per-document corpus, that of the document's own index when it is a
        :class:`longctx.MixPRIndex` (of its first text, the one :meth:`text` returns), ``{}`` for
        an index without metadata (``DiversityIndex``); ``KeyError`` when there is no such
        document."""
        if self.index is None:
            metadatas = getattr(self.indexes[doc_id], "metadatas", None)
            return dict(metadatas[0]) if metadatas else {}
        if self.sharded:
            return self.index.metadata(doc_id)
        return dict(self.index.metadatas[self._position(doc_id)])

    def _check_keywords(self, kwargs: dict) -> None:
        """A keyword the indexes' ``search`` does not take is a ``TypeError`` naming it and
        the ones it takes, raised here before any search work (the frameworks' retrievers pass
        their per-call keywords through: the error named the index's own method)."""
        ix = self.index if self.index is not None else next(iter(self.indexes.values()), None)
        taken = None if ix is None else _search_keywords(type(ix))
        if taken is not None:
            unknown = sorted(set(kwargs) - taken)
            if unknown:
                raise TypeError(
                    f"unexpected keyword argument{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(map(repr, unknown))} for a search of this corpus (its "
                    f"{type(ix).__name__} takes: {', '.join(sorted(taken))})"
                )

    def check_filters(self, filters, name: str = "filters"):
        """``filters`` when this corpus can filter by them, checked before any search work.

        A MixPR corpus (one index or sharded) filters on the metadata its index holds for each
        document (:func:`longctx.filters.compile_filter`: LlamaIndex ``MetadataFilters``, a
        LangChain-style dict or a callable ``metadata -> bool``). A corpus built by
        :func:`longctx.corpus.build_indexes` (``longctx index``) stores no metadata: every
        document's is ``{}``. A per-document corpus filters when every document's index is a
        :class:`longctx.MixPRIndex` (each on its own metadata); one holding another kind
        (a diversity corpus: ``DiversityIndex``) cannot filter.

        Raises
        ------
        ValueError
            A per-document corpus holding an index that cannot filter given a filter (``name``
            and the index's kind named), or a bad filter.
        TypeError
            A filter of a wrong type.
        """
        from longctx.filters import compile_filter

        if filters is None:
            return None
        if self.index is None:
            from longctx.mixpr import MixPRIndex

            other = next(
                (ix for ix in self.indexes.values() if not isinstance(ix, MixPRIndex)), None
            )
            if other is not None:
                raise ValueError(
                    f"{name}: a per-document corpus of {type(other).__name__} indexes cannot "
                    "filter by metadata; filters apply to MixPR corpora (one index, sharded, or "
                    "one MixPRIndex per document)"
                )
        compile_filter(filters, name=name)  # a bad filter raises now, naming its key or operator
        return filters

    def close(self) -> None:
        """Stop a sharded corpus's shard actors (nothing for other corpora)."""
        if self.sharded:
            self.index.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        unique_texts: bool | None = False,
        explain: bool = False,
        **kwargs,
    ) -> SearchResult:
        """The ``k`` best hits over every document (see the class docstring).

        ``unique_texts``: units with the same text take one slot
        (:meth:`longctx.MixPRIndex.search`); ``True`` on a one-index MixPR corpus, ``None`` where
        the corpus supports it (a one-index MixPR corpus; the frameworks' retrievers pass it),
        ``False`` never. A sharded or diversity corpus does not implement it
        (``NotImplementedError`` for ``True``).

        ``explain=True``: every hit says why it was retrieved (``Passage.explanation``,
        :mod:`longctx.explain`; a sharded MixPR corpus gives one index's explanations,
        :mod:`longctx.corpus.shards.explain`).

        ``**kwargs`` go to the index's ``search`` (``mode``, ``filters``, ``token_budget`` for
        MixPR; ``lambda_`` for diversity...). ``info["doc_ids"]`` holds the corpus's document
        ids (``Passage.source`` indexes it); a per-document corpus also gives
        ``info["per_document"]`` (each document's ``mode`` and hit count).

        Raises
        ------
        ValueError
            ``k`` < 1, a bad keyword for the indexes (raised by the first index), ``filters``
            on a per-document corpus of indexes that cannot filter (:meth:`check_filters`).
        NotImplementedError
            ``unique_texts=True`` on a sharded MixPR corpus or a diversity corpus.
        TypeError
            A keyword the indexes' ``search`` does not take (named, with the ones it takes).
        """
        from longctx.checks import check_int
        from longctx.explain import check_explain

        k = check_int(k, "k", minimum=1)
        one_index = self.index is not None and not self.sharded
        if unique_texts and not one_index:
            raise NotImplementedError(
                "unique_texts=True is implemented for a one-index MixPR corpus only (not for a "
                "sharded or a diversity corpus)"
            )
        if unique_texts is not False and one_index:
            kwargs["unique_texts"] = True
        if check_explain(explain):
            kwargs["explain"] = True
        self.check_filters(kwargs.get("filters"))
        self._check_keywords(kwargs)
        if self.index is not None:
            if kwargs.get("token_budget") is not None:
                r = self.index.search(query, **kwargs)
            else:
                r = self.index.search(query, k=k, **kwargs)
            return dataclasses.replace(r, info={**r.info, "doc_ids": self.doc_ids})
        t0 = time.perf_counter()
        scored, per_doc, method = [], {}, None
        for pos, (doc_id, ix) in enumerate(self.indexes.items()):
            r = ix.search(query, k=k, **kwargs)
            method = r.method
            per_doc[doc_id] = {"mode": r.mode, "hits": len(r.hits)}
            for h in r.hits:
                h = dataclasses.replace(h, source=pos, explanation=_in_corpus(h, pos, doc_id))
                scored.append((-h.score, pos, h.start, h))
        scored.sort(key=lambda x: x[:3])
        hits = sorted((x[3] for x in scored[:k]), key=lambda h: (h.source, h.start))
        return SearchResult(
            hits=tuple(hits),
            method=method or "",
            mode="corpus",
            timings={"search": time.perf_counter() - t0},
            budget={"k": k},
            info={"doc_ids": self.doc_ids, "per_document": per_doc},
        )


def _in_corpus(hit, pos: int, doc_id: str):
    """``hit``'s explanation with the unit it was measured against (``"against"``, MMR / FPS)
    moved from its document's own index to the corpus: ``source`` = ``pos``, ``doc_id`` added."""
    e = hit.explanation
    if not e or not e.get("against"):
        return e
    return {**e, "against": {**e["against"], "source": pos, "doc_id": doc_id}}
