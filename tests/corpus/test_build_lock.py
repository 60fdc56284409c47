"""Two builds of one corpus at once (two processes, two threads) are serialized by the corpus's
build lock (:func:`longctx.corpus.writers.building`): the second waits, says for whom, then
updates the first one's result; the corpus loads and equals a fresh build of the later build's
documents. Before the lock, the held build A wrote over build B's work: a MixPR corpus of 2
shards and a diversity corpus no longer loaded ("field 'text_sha256' ... does not match the
index's text (damaged or forged)"), and build A of a one-index MixPR corpus failed."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from longctx.corpus import build_indexes
from longctx.corpus.storage import open_storage
from tests.corpus._build_race import (
    TIMEOUT,
    build_options,
    corpus_state,
    doc_sets,
    fresh_state,
    race_processes,
    race_threads,
    same,
    wait_either,
    write_folder,
)

CASES = [("mixpr", None), ("mixpr", 2), ("diversity", None)]


def _first_build(tmp_path, method, shards):
    base, set1, set2 = doc_sets()
    folder, out = tmp_path / "docs", tmp_path / "out"
    write_folder(folder, base)
    build_indexes(str(folder), method, str(out), **build_options(method, shards))
    return folder, out, set1, set2


def _check_later_build_won(tmp_path, out, method, shards, set1, set2):
    state = corpus_state(out, method)
    assert state[0] == "ok", state[1]
    sharded = shards is not None
    assert same(state, fresh_state(tmp_path / "f2", set2, method, shards), sharded)
    assert not same(state, fresh_state(tmp_path / "f1", set1, method, shards), sharded)


@pytest.mark.parametrize(("method", "shards"), CASES)
def test_two_threads_building_one_corpus_follow_each_other(tmp_path, method, shards):
    folder, out, set1, set2 = _first_build(tmp_path, method, shards)
    errors, waited = race_threads(folder, out, method, shards)
    assert not errors, errors
    assert waited  # B waited for A (before: B ran through while A was held)
    _check_later_build_won(tmp_path, out, method, shards, set1, set2)


@pytest.mark.parametrize(("method", "shards"), CASES[:2])  # diversity: the same lock (threads)
def test_two_processes_building_one_corpus_follow_each_other(tmp_path, method, shards):
    folder, out, set1, set2 = _first_build(tmp_path, method, shards)
    code_a, code_b, waited = race_processes(folder, out, method, shards)
    assert (code_a, code_b) == (0, 0)  # before: A failed (one index), or both "succeeded"
    assert waited
    _check_later_build_won(tmp_path, out, method, shards, set1, set2)


def test_two_threads_building_one_garlic_corpus_follow_each_other(tmp_path):
    """GARLIC corpora go through the same locked build (tiny random Llama, short documents):
    build B waits for the held build A, then removes A's new document and rebuilds its edited
    one; the corpus loads with exactly B's documents, A's new graph gone with its file."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from longctx.corpus import read_corpus_manifest

    base, set1, set2 = doc_sets(n_words=25)
    folder, out = tmp_path / "docs", tmp_path / "out"
    write_folder(folder, base)
    first = build_indexes(str(folder), "garlic", str(out), **build_options("garlic", None))
    assert not first.failed, first.errors
    errors, waited = race_threads(folder, out, "garlic", None, n_words=25)
    assert not errors, errors
    assert waited  # B waited for A
    state = corpus_state(out, "garlic")
    assert state[0] == "ok", state[1]
    assert {Path(d).name: texts for d, texts in state[1]} == {k: (v,) for k, v in set2.items()}
    entries = read_corpus_manifest(out).entries
    assert sorted(Path(d).name for d in entries) == sorted(set2)
    assert all(e.status == "done" for e in entries.values())
    assert not any("e.txt" in p.name for p in (out / "indexes").iterdir())  # A's graph removed


def test_a_waiting_build_names_the_build_it_waits_for(tmp_path, caplog):
    from longctx.corpus.writers import LOCK_FILE, building

    folder, out, _, set2 = _first_build(tmp_path, "mixpr", None)
    write_folder(folder, set2)
    done = []
    caplog.set_level(logging.INFO, logger="longctx.corpus.writers")
    with building(open_storage(out), "indexes"):
        t = threading.Thread(
            target=lambda: done.append(
                build_indexes(str(folder), "mixpr", str(out), **build_options("mixpr", None))
            )
        )
        t.start()
        assert wait_either([lambda: "waits for" in caplog.text, lambda: not t.is_alive()])
        assert t.is_alive() and not done  # waiting, nothing written
        holder = json.loads((out / "indexes" / LOCK_FILE).read_text())
        assert holder["pid"] == os.getpid()
    t.join(TIMEOUT)
    assert done and done[0].built  # then it built
    line = next(r.getMessage() for r in caplog.records if "waits for" in r.getMessage())
    assert (
        f"a build of this corpus by process {os.getpid()} on {socket.gethostname()[:100]!r}" in line
    )
    assert f"started {holder['started']}" in line


def _plant_lock(tmp_path, kind):
    """A first build, then ``kind`` planted as its lock file: the lock path and the victim."""
    from longctx.corpus.writers import LOCK_FILE

    folder, out, _, set2 = _first_build(tmp_path, "mixpr", None)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file")
    lock = out / "indexes" / LOCK_FILE
    lock.unlink()
    if kind == "symlink":
        lock.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(lock)
    elif kind == "directory":
        lock.mkdir()
    else:
        os.link(victim, lock)
    write_folder(folder, set2)
    return folder, out, lock, victim


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "hardlink"])
def test_a_planted_lock_file_is_refused_naming_it(tmp_path, kind):
    # before: the OSError was read as "no flock here" and the build ran with no lock across
    # processes (symlink, FIFO, folder), and a hard link's target was truncated and overwritten
    from longctx.persist import PersistError

    folder, out, lock, victim = _plant_lock(tmp_path, kind)
    t0 = time.monotonic()
    with pytest.raises(PersistError, match="build lock") as err:
        build_indexes(str(folder), "mixpr", str(out), **build_options("mixpr", None))
    assert str(lock) in str(err.value)
    assert time.monotonic() - t0 < TIMEOUT  # a FIFO is not waited on
    assert victim.read_text() == "the user's file"  # not truncated nor written
    assert os.path.lexists(lock) and lock.is_symlink() == (kind == "symlink")  # left as it is


def test_the_lock_falls_back_to_threads_only_where_flock_is_unsupported(tmp_path, monkeypatch):
    import errno
    import fcntl

    from longctx.persist.writer import exclusive_lock

    def failing(code):
        def flock(fd, op):
            raise OSError(code, os.strerror(code))

        return flock

    monkeypatch.setattr(fcntl, "flock", failing(errno.ENOLCK))
    with exclusive_lock(tmp_path, tmp_path / "x.lock", holder={"what": "t"}):
        pass  # held among this process's threads only
    monkeypatch.setattr(fcntl, "flock", failing(errno.EIO))  # not "unsupported": raised
    with pytest.raises(OSError) as err:
        with exclusive_lock(tmp_path, tmp_path / "x.lock", holder={"what": "t"}):
            pass
    assert err.value.errno == errno.EIO


def test_a_remote_corpus_is_built_without_the_lock(tmp_path):
    from longctx.corpus.writers import building

    base, _, _ = doc_sets()
    docs = sorted(base.items())
    out = "memory://longctx-build-lock-test"
    with building(open_storage(out), "indexes"):  # not a local folder: holds nothing
        result = build_indexes(docs, "mixpr", out, **build_options("mixpr", None))
    assert sorted(result.built) == [d for d, _ in docs]


def test_longctx_index_run_twice_waits_for_the_first_and_says_so(tmp_path):
    from longctx.corpus.writers import building

    folder, out, set1, set2 = _first_build(tmp_path, "mixpr", None)
    write_folder(folder, set2)
    err = tmp_path / "stderr.txt"
    cmd = [sys.executable, "-m", "longctx.cli", "index", str(folder), "--method", "mixpr"]
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "HF_HUB_OFFLINE": "1",
    }
    with building(open_storage(out), "indexes"), open(err, "w") as f:
        proc = subprocess.Popen(
            [*cmd, "--out", str(out), "--sequential"], stdout=subprocess.PIPE, stderr=f, env=env
        )
        waits = wait_either(
            [lambda: "waits for" in err.read_text(), lambda: proc.poll() is not None]
        )
        running = proc.poll() is None  # waiting (before: it ran beside the first build)
    # the lock is released: the CLI goes on
    assert waits and running
    stdout, _ = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err.read_text()
    line = next(ln for ln in err.read_text().splitlines() if "waits for" in ln)
    assert line.startswith("longctx: info: ") and f"by process {os.getpid()}" in line
    assert b"built 1, unchanged 2, removed 1" in stdout
    _check_later_build_won(tmp_path, out, "mixpr", None, set1, set2)
