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


__all__ = ["RetrievalIndex", "check_texts"]
