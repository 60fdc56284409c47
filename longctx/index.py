"""The build-once / query-many contract every longctx method follows.

An index does a method's query-independent work once per corpus (chunks, vocabularies, graphs,
embeddings, KV caches) and answers many queries from it. ``search`` never changes the index: what a
query produced (the hits, the mode used, timings, a trace) comes back in a
:class:`longctx.types.SearchResult`, so one index can serve threads and asyncio tasks at once.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence

from longctx.checks import check_text
from longctx.types import SearchResult


def check_texts(texts, name: str = "texts") -> tuple[str, ...]:
    """One text or a sequence of texts -> tuple of str, each with some non-space character.

    Raises
    ------
    TypeError
        ``texts`` is neither a str nor a sequence of str.
    ValueError
        ``texts`` is empty, or one of them is empty or only whitespace (named by position).
    """
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, Sequence):
        raise TypeError(f"{name} must be a str or a sequence of str, got {type(texts).__name__}")
    out = tuple(texts)
    if not out:
        raise ValueError(f"{name} must hold at least one text")
    for i, t in enumerate(out):
        check_text(t, f"{name}[{i}]")
    return out


def source_keys(ids, name: str = "ids", texts=None) -> list[str | None]:
    """One unique, deterministic id per source, for the ids of hits (the adapters' rule).

    ``ids[i]`` is source ``i``'s own id or ``None``. A source keeps its id when it is the first to
    carry it; a source without id is named by its true position, ``"source{i}"``; a later source
    repeating an id with another text (or whose ``"source{i}"`` name is taken) becomes
    ``"{id}@{i}"`` (``i`` its position), so two sources never share hit ids and no hit is dropped
    as a duplicate. A later source repeating both the id and the text (``texts``) of an earlier
    one is that source given twice: its key is ``None`` and its hits are left out, so no text
    comes back twice.

    Parameters
    ----------
    ids : sequence of (str or None)
        Source ids in the order the sources were given.
    name : str
        The argument named in errors.
    texts : sequence of str, optional
        The sources' texts (to recognise a source given twice).

    Returns
    -------
    list of (str or None), ``len(ids)`` long: the str keys are unique.

    Raises
    ------
    TypeError
        ``ids`` is not a sequence, or an id is neither a str nor None (named by position).
    """
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise TypeError(f"{name} must be a sequence of str or None, got {type(ids).__name__}")
    first: dict[str, int] = {}
    for i, v in enumerate(ids):
        if v is not None and not isinstance(v, str):
            raise TypeError(f"{name}[{i}] must be a str or None, got {type(v).__name__}")
        if v is not None:
            first.setdefault(v, i)
    used = set(first)
    keys: list[str | None] = []
    for i, v in enumerate(ids):
        if v is not None and first[v] == i:
            keys.append(v)
            continue
        if v is not None and texts is not None and texts[i] == texts[first[v]]:
            keys.append(None)  # the same source given twice
            continue
        keys.append(free_key(f"source{i}" if v is None else f"{v}@{i}", used))
    return keys


def free_key(key: str, used: set) -> str:
    """``key``, primed (``key'``, ``key''``...) until it is not in ``used``; added to
    ``used``."""
    while key in used:
        key += "'"
    used.add(key)
    return key


def unique_ids(ids) -> list[str]:
    """``ids`` of one result list with every repeat renamed ``"{id}@{n}"`` (``n`` its position
    in the list), so a framework that deduplicates by id never drops a result."""
    used = set(ids)
    seen: set[str] = set()
    out = []
    for n, v in enumerate(ids):
        if v in seen:
            v = free_key(f"{v}@{n}", used)
        seen.add(v)
        out.append(v)
    return out


class RetrievalIndex(ABC):
    """Abstract base: ``from_texts`` builds, ``search`` queries, ``save`` / ``load`` persist.

    Subclasses set :attr:`method` and implement the four methods; ``texts`` are the sources in
    the order given (``Passage.source`` indexes them).
    """

    #: method name reported in results and metadata
    method: str = ""

    @property
    @abstractmethod
    def texts(self) -> tuple[str, ...]:
        """The source texts, in the order given at build time."""

    @classmethod
    @abstractmethod
    def from_texts(cls, texts, **params) -> RetrievalIndex:
        """Build the index from one text or a sequence of texts."""

    @abstractmethod
    def search(
        self, query: str, *, k: int | None = None, token_budget: int | None = None, **kwargs
    ) -> SearchResult:
        """Answer one query; never modifies the index."""

    @abstractmethod
    def save(self, path: str | os.PathLike) -> None:
        """Write the index to directory ``path`` (JSON + ``.npz``, see :mod:`longctx.persist`)."""

    @classmethod
    @abstractmethod
    def load(cls, path: str | os.PathLike) -> RetrievalIndex:
        """Read an index written by :meth:`save`; raises ``PersistError`` naming a bad file."""


__all__ = ["RetrievalIndex", "check_texts", "free_key", "source_keys", "unique_ids"]
