"""Helpers of the concurrency tests (issue 48, issue 44 items 1 and 6): a seeded writer that
inserts and deletes documents beside searching threads, with the thread switch interval made
short so that the threads interleave finely, and the log of its writes to replay them one by one
on a fresh object afterwards."""

from __future__ import annotations

import random
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

#: Thread switch interval during a stress run (CPython's default is 5 ms): many more switches,
#: so a few seconds cover many interleavings of a search with a write.
SWITCH_INTERVAL = 1e-4


def churn_doc(rng: random.Random, tag: str, n_words: int = 120) -> str:
    """A document of ``n_words`` words drawn from 2,000 shared ones plus a few of its own (new
    terms: an insert extends the vocabulary, as a new book does), in sentences."""
    words = [f"w{rng.randrange(2000)}" for _ in range(n_words)]
    words += [f"{tag}x{j}" for j in range(3)]
    rng.shuffle(words)
    return " ".join(w + ("." if rng.random() < 0.1 else "") for w in words) + "."


def base_docs(n: int = 12, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` documents ``(id, text)`` to build from."""
    rng = random.Random(seed)
    return [(f"b{i}", churn_doc(rng, f"b{i}", 200)) for i in range(n)]


#: Queries over the words of :func:`churn_doc`.
QUERIES = ["w1 w2 w3", "w10 w200 w300", "w5 w6 w7 w8 w9", "w1999 w17"]


class Churn:
    """The writer: rounds of three inserts then a delete of two of them (so the index keeps
    growing slowly, and inserts follow inserts: the appended rows of the term table stay apart
    while searches give it its canonical form). ``log`` records every write as
    ``("insert", [(id, text)])`` or ``("delete", [id])``, in order."""

    def __init__(self, insert: Callable, delete: Callable, seed: int = 1):
        self.insert, self.delete = insert, delete
        self.rng = random.Random(seed)
        self.log: list = []
        self.n = 0

    def step(self) -> None:
        new = []
        for _ in range(3):
            self.n += 1
            doc = (f"n{self.n}", churn_doc(self.rng, f"n{self.n}"))
            self.insert([doc])
            self.log.append(("insert", [doc]))
            new.append(doc[0])
        gone = self.rng.sample(new, 2)
        self.delete(gone)
        self.log.append(("delete", gone))

    def replay(self, insert: Callable, delete: Callable) -> None:
        """The same writes, one after the other, on another object."""
        for op, arg in self.log:
            (insert if op == "insert" else delete)(arg)


@contextmanager
def fine_switching(interval: float = SWITCH_INTERVAL):
    old = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


class Turns:
    """Writes that replace files (saves, rebuilds) one after the other beside loads: after each
    write the writer waits until a load has ended (at most ``limit`` s, or until ``stop``), so
    loads overlap the writes and meet them, and a load that met one finds the files still at
    its next attempt, on a machine of any speed.

    A fixed pause of 20 ms between the writes did not leave that room on a busy machine (load
    5+ on 2 cores: a load slower than the pause): a load then met a new write at each of its
    attempts and raised the documented :class:`~longctx.persist.ConcurrentSaveError` (measured:
    with the attempts lowered to 1 / 2 it is the only error; with the defaults, loads of a
    corpus beside rebuilds took 1, 2, 3, 4 attempts 318 / 88 / 16 / 6 times in 428 loads,
    about one load in 100 runs exhausting all 6)."""

    def __init__(self, stop: threading.Event, limit: float = 10.0):
        self.stop, self.limit = stop, limit
        self._read = threading.Event()

    def after_write(self) -> None:
        """Called by the writer after each write: wait for a load to end."""
        self._read.clear()
        end = time.monotonic() + self.limit
        while not self._read.wait(0.02) and not self.stop.is_set() and time.monotonic() < end:
            pass

    def after_read(self) -> None:
        """Called by a loader after each load."""
        self._read.set()


def run_beside(
    write: Callable[[], None],
    search: Callable[[int], None],
    *,
    n_search: int = 4,
    seconds: float = 2.0,
    min_writes: int = 0,
    min_searches: int = 0,
    stop: threading.Event | None = None,
) -> dict:
    """``write()`` in a loop in one thread beside ``n_search`` threads calling ``search(i)``
    (``i``: the thread's number) for ``seconds`` (and until ``min_writes`` writes and
    ``min_searches`` searches are done, at most 30 x ``seconds``: on a busy machine the counts
    need longer, not a weaker test).
    ``stop``: the event that ends the threads (a new one by default).
    Returns ``{"searches", "writes", "errors"}`` (the exceptions raised in the threads)."""
    stop = threading.Event() if stop is None else stop
    errors: list = []
    counts = {"searches": 0, "writes": 0}
    lock = threading.Lock()

    def writer():
        try:
            while not stop.is_set():
                write()
                with lock:
                    counts["writes"] += 1
        except Exception as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)

    def searcher(i):
        try:
            while not stop.is_set():
                search(i)
                with lock:
                    counts["searches"] += 1
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    # daemon threads: a call that never returns (the deadlock this catches) fails the test at
    # the deadline and cannot keep the test process from exiting
    threads = [threading.Thread(target=writer, daemon=True)]
    threads += [threading.Thread(target=searcher, args=(i,), daemon=True) for i in range(n_search)]
    with fine_switching():
        for t in threads:
            t.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds or (
            (counts["writes"] < min_writes or counts["searches"] < min_searches) and not errors
        ):
            if not any(t.is_alive() for t in threads):
                break
            time.sleep(0.05)
            if time.monotonic() - t0 > 30 * seconds:
                break
        stop.set()
        for t in threads:
            t.join()
    return {**counts, "errors": errors}


def run_counted(
    write: Callable[[], None],
    search: Callable[[int], None],
    *,
    writes: int,
    n_search: int = 4,
    deadline: float = 60.0,
    grace: float = 30.0,
) -> dict:
    """Exactly ``writes`` calls of ``write()`` in one thread beside ``n_search`` threads calling
    ``search(i)`` while the writes run: every thread starts at one barrier, and after each
    write the writer waits until a search has ended since that write began (so each write
    meets searches however busy the machine: at least ``writes`` searches overlap the writes,
    where a time-boxed loop counted what a busy machine left). The searches stop with the last
    write. Past ``deadline`` seconds every thread stops at its next call and the result says
    ``"timed_out": True`` (the caller fails, rather than waiting); a call under way then has
    ``grace`` more seconds (all threads together) and a call that never returns is left behind
    (the threads are daemons: they cannot keep the process from exiting).
    Returns ``{"searches", "writes", "errors", "timed_out", "seconds"}``."""
    done, searched = threading.Event(), threading.Event()
    start = threading.Barrier(n_search + 1)
    errors: list = []
    counts = {"searches": 0, "writes": 0}
    lock = threading.Lock()
    end = time.monotonic() + deadline

    def late() -> bool:
        return time.monotonic() > end

    def writer():
        try:
            start.wait(timeout=deadline)
            for _ in range(writes):
                if late() or errors:
                    break
                searched.clear()
                write()
                with lock:
                    counts["writes"] += 1
                while not searched.wait(0.05) and not late() and not errors:
                    pass
        except Exception as exc:  # noqa: BLE001 (reported by the test)
            errors.append(exc)
        finally:
            done.set()

    def searcher(i):
        try:
            start.wait(timeout=deadline)
            while not done.is_set() and not late():
                search(i)
                with lock:
                    counts["searches"] += 1
                searched.set()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    # daemon threads: a call that never returns (the deadlock this catches) fails the test at
    # the deadline and cannot keep the test process from exiting
    threads = [threading.Thread(target=writer, daemon=True)]
    threads += [threading.Thread(target=searcher, args=(i,), daemon=True) for i in range(n_search)]
    t0 = time.monotonic()
    with fine_switching():
        for th in threads:
            th.start()
        limit = end + grace  # one budget for all threads
        for th in threads:
            th.join(max(limit - time.monotonic(), 0.0))
    return {
        **counts,
        "errors": errors,
        "timed_out": late() or any(th.is_alive() for th in threads),
        "seconds": time.monotonic() - t0,
    }


def same_table(a, b) -> None:
    """The same terms, counts, document frequencies and TF-IDF rows (bit for bit)."""
    assert a.terms() == b.terms()
    assert (a.counts != b.counts).nnz == 0
    assert np.array_equal(a.df, b.df)
    assert (a.embeddings() != b.embeddings()).nnz == 0


def _fresh(index):
    from longctx.mixpr import MixPRIndex

    return MixPRIndex.from_texts(
        list(index.texts), ids=list(index.doc_ids), metadatas=[dict(m) for m in index.metadatas]
    )


def assert_equals_fresh_build(index) -> None:
    """Same documents, term table, PageRank and scores (bit for bit) as a fresh build."""
    fresh = _fresh(index)
    same_table(index.terms, fresh.terms)
    assert np.array_equal(index.global_pagerank(), fresh.global_pagerank())
    for q in QUERIES:
        assert np.array_equal(index.score(q)[0], fresh.score(q)[0]), q


def saves_beside_writes(
    churn: Churn,
    ids_now: Callable[[], list],
    save: Callable[[], None],
    load: Callable[[], object | None],
    ids_of: Callable[[object], list],
    index_of: Callable[[object], object] | None = None,
    *,
    seconds: float = 2.0,
) -> list:
    """``churn`` writes beside one thread saving (``save()``) and one loading (``load()``, from
    the end of the first save; ``None``: nothing to load); the object's version (``ids_now()``: its
    documents' ids) is recorded after every write. Checks that no thread raised, that every
    loaded object's version (``ids_of(obj)``) is one the object went through, and with
    ``index_of`` that the last loaded objects' core index holds their documents and equals a
    fresh build. Returns the loaded objects, the last one loaded after the writes stopped."""
    versions = {tuple(ids_now())}
    insert, delete = churn.insert, churn.delete

    def recorded(write):
        def run(arg):
            write(arg)
            versions.add(tuple(ids_now()))

        return run

    churn.insert, churn.delete = recorded(insert), recorded(delete)
    loaded: list = []
    saved = threading.Event()  # loads begin once a first save is whole (before: no index there)
    stop = threading.Event()
    turns = Turns(stop)

    def save_or_load(i):
        if i == 0:
            save()
            saved.set()
            turns.after_write()  # saves in a loop; a load that met one finds a pause after it
        elif saved.is_set():
            got = load()
            turns.after_read()
            if got is not None:
                loaded.append(got)

    out = run_beside(
        churn.step, save_or_load, n_search=2, seconds=seconds, min_writes=10, stop=stop
    )
    assert not out["errors"], out["errors"][:3]
    loaded.append(load())
    assert len(loaded) >= 3 and out["writes"] >= 10
    for got in loaded:
        assert tuple(ids_of(got)) in versions
    if index_of is not None:
        for got in loaded[-2:]:
            assert list(index_of(got).doc_ids) == list(ids_of(got))
            assert_equals_fresh_build(index_of(got))
    return loaded


def run_for(threads: list[threading.Thread], stop: threading.Event, seconds: float) -> None:
    """Start ``threads``, let them run ``seconds`` (threads switching every 1 ms), set ``stop``
    and join them."""
    with fine_switching(1e-3):
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()


def searches_beside_writes(churn: Churn, search: Callable[[int], object], index, same) -> None:
    """An adapter searched (``search(i)``) beside ``churn``'s writes: no thread raised, and
    afterwards its core index (``index()``) equals a fresh build and ``same()`` (its hits against
    a fresh adapter's) holds."""
    out = run_beside(churn.step, search, seconds=2.5, min_writes=30, min_searches=30)
    assert not out["errors"], out["errors"][:3]
    assert out["searches"] >= 30
    assert_equals_fresh_build(index())
    same()
