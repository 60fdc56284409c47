"""Reading a built corpus back: one index (:func:`load_index`), every index
(:func:`load_corpus`), and one search over every document (:class:`CorpusIndex`)."""

from __future__ import annotations

import dataclasses
import logging
import tempfile
import time
from collections.abc import Mapping

from longctx.corpus.manifest import CORPUS_MANIFEST, CorpusManifest
from longctx.corpus.storage import open_storage
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
        from longctx.persist_reader import open_index_dir

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


def load_corpus(out, *, storage_options: dict | None = None, **load_kwargs) -> dict:
    """Every finished index of the corpus at ``out``: ``{doc_id: index}`` in manifest order.

    Failed documents are left out (logged); ``**load_kwargs`` go to each index's ``load``.

    Raises
    ------
    PersistError
        No corpus at ``out``, a damaged manifest, or an index listed as done that is missing or
        damaged.
    """
    storage = open_storage(out, storage_options)
    manifest = read_corpus_manifest(storage)
    out_indexes = {}
    for doc_id, e in manifest.entries.items():
        if e.status != "done":
            logger.info("corpus %s: document %r is %s; left out", storage.url, doc_id, e.status)
            continue
        if not storage.index_complete(e.path):
            raise PersistError(f"{storage.location(e.path)!r} is missing or half-written")
        out_indexes[doc_id] = load_index(storage.location(e.path), **load_kwargs)
    return out_indexes


class CorpusIndex:
    """One search over the per-document indexes of a MixPR or diversity corpus.

    Each document's index answers the query on its own (``search(query, k=k)``); the hits are
    merged by score and the ``k`` best kept, returned in document order (corpus order, then
    ``start``) like every :class:`~longctx.types.SearchResult`. ``Passage.source`` is the
    document's position in :attr:`doc_ids`.

    Scores are those of each method: for ``diversity`` the relevance reward (cosine similarity
    to the query with one encoder for all documents, so comparable across documents); for
    ``mixpr`` the personalized PageRank probability, which sums to 1 within each document: a
    short document's chunks score higher than a long one's at equal relevance. For GARLIC
    corpora use :meth:`llamaindex_longctx.GarlicIndex.from_corpus` (one graph search over all
    documents).

    Parameters
    ----------
    indexes : mapping doc_id -> MixPRIndex or DiversityIndex
    """

    def __init__(self, indexes: Mapping):
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
    def from_corpus(cls, out, *, storage_options: dict | None = None, **load_kwargs) -> CorpusIndex:
        """Load every finished index of the corpus at ``out`` (see :func:`load_corpus`)."""
        return cls(load_corpus(out, storage_options=storage_options, **load_kwargs))

    def text(self, doc_id: str) -> str:
        """The whole text of document ``doc_id``."""
        return self.indexes[doc_id].texts[0]

    def search(self, query: str, *, k: int = 10, **kwargs) -> SearchResult:
        """The ``k`` best hits over every document (see the class docstring).

        ``**kwargs`` go to each index's ``search`` (``mode`` for MixPR, ``lambda_`` for
        diversity...). ``info["per_document"]`` holds each document's ``mode`` and hit count.

        Raises
        ------
        ValueError
            ``k`` < 1 or a bad keyword for the indexes (raised by the first index).
        """
        from longctx.checks import check_int

        k = check_int(k, "k", minimum=1)
        t0 = time.perf_counter()
        scored, per_doc, method = [], {}, None
        for pos, (doc_id, ix) in enumerate(self.indexes.items()):
            r = ix.search(query, k=k, **kwargs)
            method = r.method
            per_doc[doc_id] = {"mode": r.mode, "hits": len(r.hits)}
            for h in r.hits:
                scored.append((-h.score, pos, h.start, dataclasses.replace(h, source=pos)))
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
