"""The lock of a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex`: searches share it,
a change (insert, update, delete, a restart of dead shards) holds it alone.

A sharded index's shards change in place (a shard's block is rebuilt after a change, and the
corpus's statistics are sent to every shard again), where one :class:`~longctx.mixpr.MixPRIndex`
swaps in a new immutable state: so a search must not run while a change is half done (issue 48:
searches beside inserts met shards without their block). A change waits for the searches running
to end; the searches asked for meanwhile wait for the change (a waiting change goes first, so a
stream of searches cannot hold writes off)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ReadWriteLock"]


class ReadWriteLock:
    """Many readers at once, or one writer; a waiting writer goes before readers that come
    after it. Not reentrant: a thread holding it must not take it again (a reader asking again
    while a writer waits would wait for itself)."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._waiting = 0

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Held by a search: shared with other searches, never with a change."""
        with self._cond:
            while self._writing or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Held by a change: alone."""
        with self._cond:
            self._waiting += 1
            try:
                while self._writing or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()
