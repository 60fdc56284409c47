"""Two builds of one corpus at once, the overlap forced (no sleeps): build A is held at a hook
inside its build, after it read the corpus's previous manifest and before it writes anything,
until build B has started and either finished (nothing serializes them: the code before the
corpus build lock) or logged that it waits for A (the lock); then A goes on. Importable by
``multiprocessing`` spawn children (``tests.corpus._build_race``).

The documents come from one folder: A reads it as set 1 (the base plus a new file), then the
folder is changed to set 2 (the base less one file, one file edited) and B reads it. A build
that waits and then builds on A's result leaves exactly set 2 (B removes A's new file, whose
source is the folder); two builds not serialized leave A's set 1 over B's work."""

from __future__ import annotations

import logging
import random
import shutil
import threading
from pathlib import Path

from tests._concurrency import churn_doc

#: A log message of the waiting build contains this.
WAITS = "waits for"
#: Longest wait of any step (s): a test that hangs fails instead.
TIMEOUT = 120


def corpus_files(d: Path) -> dict:
    """Every file under ``d`` (relative path -> bytes) but the build lock's (it holds its last
    holder): what a refused save must leave as it was."""
    from longctx.persist.marks import LOCK_FILE

    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and p.name != LOCK_FILE
    }


def doc_sets(seed: int = 0, n_words: int = 120) -> tuple[dict, dict, dict]:
    """``(base, set1, set2)``: ``{file name: text}`` of the first build, of build A (base plus
    ``e.txt``) and of build B (base less ``d.txt``, ``a.txt`` edited); documents of about
    ``n_words`` words."""
    rng = random.Random(seed)
    base = {f"{c}.txt": churn_doc(rng, c, n_words) for c in "abcd"}
    set1 = {**base, "e.txt": churn_doc(rng, "e", n_words)}
    set2 = {k: v for k, v in base.items() if k != "d.txt"}
    set2["a.txt"] = churn_doc(rng, "a2", n_words)
    return base, set1, set2


def write_folder(folder: Path, docs: dict) -> None:
    """Make ``folder`` hold exactly ``docs``."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, text in docs.items():
        (folder / name).write_text(text, encoding="utf-8")


def build_options(method: str, shards: int | None) -> dict:
    """``build_indexes`` keywords of a small, quick build."""
    opts = {"use_ray": False, "progress": False}
    if shards is not None:
        opts["shards"] = shards
    if method == "diversity":
        from tests.corpus._helpers import hash_embed

        opts["encoder"] = hash_embed
    if method == "garlic":  # the tiny random Llama, made to answer one short bullet
        from tests.corpus._helpers import BulletForcer, hash_embed, tiny_garlic_lm

        opts.update(
            model=tiny_garlic_lm, encoder=hash_embed, logits_processor=BulletForcer("* A story.\n"),
            chunk_tokens=250, batch_tokens=600, max_new_tokens=8,
        )  # fmt: skip
    return opts


class _Seen(logging.Handler):
    def __init__(self, event):
        super().__init__(logging.INFO)
        self.event = event

    def emit(self, record):
        if WAITS in record.getMessage():
            self.event.set()


def watch_waits(event) -> logging.Handler:
    """A handler on ``longctx`` that sets ``event`` when a build logs that it waits."""
    handler = _Seen(event)
    log = logging.getLogger("longctx")
    log.addHandler(handler)
    if log.getEffectiveLevel() > logging.INFO:
        log.setLevel(logging.INFO)
    return handler


def hold_inside_build(method: str, started, go, only_thread: str | None = None):
    """Patch the build's inner step (MixPR: ``_build_mixpr``; the others: ``_run_sequential``)
    so that it sets ``started`` then waits for ``go`` (in the thread named ``only_thread``
    when given). Returns a function undoing the patch."""
    import longctx.corpus.build as b

    name = "_build_mixpr" if method == "mixpr" else "_run_sequential"
    original = getattr(b, name)

    def held(*args, **kwargs):
        if only_thread is None or threading.current_thread().name == only_thread:
            started.set()
            if not go.wait(TIMEOUT):
                raise RuntimeError("the test never let the held build go on")
        return original(*args, **kwargs)

    setattr(b, name, held)
    return lambda: setattr(b, name, original)


def child_build(folder, out, method, shards, started, go, waiting, hold) -> None:
    """One build in a spawned process: held inside (build A) or watching for its wait (B)."""
    from longctx.corpus import build_indexes

    if hold:
        hold_inside_build(method, started, go)
    else:
        watch_waits(waiting)
    build_indexes(str(folder), method, str(out), **build_options(method, shards))


def wait_either(events_or_checks, timeout: float = TIMEOUT) -> bool:
    """Poll until one of the callables returns true (``False`` after ``timeout``)."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(f() for f in events_or_checks):
            return True
        time.sleep(0.01)
    return False


def _race(make, folder: Path, seed: int, events, n_words: int = 120) -> bool:
    """The choreography: the folder holds set 1, A (``make("A")``: a started Thread or Process)
    runs to its hook, the folder is changed to set 2, B runs until it finished or waits, then A
    goes on; both joined. Returns ``(A, B, whether B waited)``."""
    _, set1, set2 = doc_sets(seed, n_words)
    started, go, waiting = events
    write_folder(folder, set1)
    a, b = make("A"), None
    try:
        if not started.wait(TIMEOUT):
            raise RuntimeError("build A never reached its hook")
        write_folder(folder, set2)  # B reads its documents from here (A read them already)
        b = make("B")
        wait_either([waiting.is_set, lambda: not b.is_alive()])
        waited = waiting.is_set()
    finally:
        go.set()
        a.join(TIMEOUT)
        if b is not None:
            b.join(TIMEOUT)
    return a, b, waited


def race_processes(folder: Path, out: Path, method: str, shards: int | None, seed: int = 0):
    """Build A and B of one corpus at once in two spawned processes (A held until B finished or
    waits). Returns ``(exit code of A, exit code of B, whether B waited)``."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    events = (ctx.Event(), ctx.Event(), ctx.Event())

    def make(name):
        args = (folder, out, method, shards, *events, name == "A")
        p = ctx.Process(target=child_build, args=args)
        p.start()
        return p

    a, b, waited = _race(make, folder, seed, events)
    return a.exitcode, b.exitcode, waited


def race_threads(
    folder: Path, out: Path, method: str, shards: int | None, seed: int = 0, n_words: int = 120
):
    """The same with two threads of this process (documents of ``n_words`` words). Returns
    ``(errors, whether B waited)``."""
    from longctx.corpus import build_indexes

    events = (threading.Event(), threading.Event(), threading.Event())
    errors = []

    def run(name):
        try:
            build_indexes(str(folder), method, str(out), **build_options(method, shards))
        except Exception as exc:  # noqa: BLE001 (returned)
            errors.append((name, exc))

    def make(name):
        t = threading.Thread(target=run, args=(name,), name=f"build-{name}")
        t.start()
        return t

    undo = hold_inside_build(method, events[0], events[1], only_thread="build-A")
    handler = watch_waits(events[2])
    try:
        waited = _race(make, folder, seed, events, n_words)[2]
    finally:
        undo()
        logging.getLogger("longctx").removeHandler(handler)
    return errors, waited


def corpus_state(out, method: str):
    """What a load of the corpus at ``out`` holds: ``("error", message)`` or ``("ok", docs, scores)``
    with ``docs`` the ``[(doc_id, text)]`` and ``scores`` the scores of :data:`QUERIES` (MixPR:
    one array per query over all units; diversity: ``None``)."""
    from longctx.corpus import load_corpus
    from tests._concurrency import QUERIES

    try:
        got = load_corpus(out, use_ray=False)
    except Exception as exc:  # noqa: BLE001 (reported)
        return ("error", f"{type(exc).__name__}: {exc}")
    if method != "mixpr":
        docs = [(d, tuple(got[d].texts)) for d in got]  # its units
        return ("ok", docs, None)
    index = next(iter(got.values()))
    if hasattr(index, "texts"):
        docs = list(zip(index.doc_ids, index.texts))
    else:
        docs = [(d, index.text(d)) for d in index.doc_ids]
    scores = [index.score(q)[0] for q in QUERIES]
    if hasattr(index, "close"):
        index.close()
    return ("ok", docs, scores)


def fresh_state(tmp: Path, docs: dict, method: str, shards: int | None):
    """:func:`corpus_state` of a fresh build of ``docs`` (into ``tmp``)."""
    from longctx.corpus import build_indexes

    write_folder(tmp / "docs", docs)
    build_indexes(str(tmp / "docs"), method, str(tmp / "out"), **build_options(method, shards))
    return corpus_state(tmp / "out", method)


def same(state, fresh, sharded: bool) -> bool:
    """Whether a loaded corpus equals a fresh build: same documents, and the same scores of
    every query (bit for bit; to 1e-12 for a sharded corpus, whose shards sum in another order)."""
    import numpy as np

    if state[0] != "ok" or fresh[0] != "ok":
        return False
    if [(Path(d).name, t) for d, t in state[1]] != [(Path(d).name, t) for d, t in fresh[1]]:
        return False
    if state[2] is None:
        return True
    tol = 1e-12 if sharded else 0.0
    return all(
        a.shape == b.shape and np.allclose(a, b, rtol=0, atol=tol)
        for a, b in zip(state[2], fresh[2])
    )
