"""Session 20 (2026-11-29): a hostile-input pass over what longctx reads from disk or a user.

Each test names the defect it found (it fails on the code before the fix) or, for the property
tests, the attack it keeps repeating. The table is in ``docs/notes/security.md``, section
"Session 20 (2026-11-29): a hostile-input pass"."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from longctx.corpus import build_indexes, load_corpus
from longctx.corpus.documents import read_documents
from longctx.io import InputError, read_text_file
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError, parse_json
from tests._persist_helpers import TEXTS, mixpr_index, restamp

DOCS = [("a", TEXTS[0]), ("b", TEXTS[1]), ("c", "Fish swim in the river. Birds fly over hills.")]


def _corpus(tmp_path: Path, **kw) -> Path:
    out = tmp_path / "corpus"
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False, **kw)
    return out


# -- JSON: a key twice ----------------------------------------------------------------------------
def test_a_json_object_with_a_key_twice_is_refused_naming_the_key():
    """``json.loads`` kept the last of two values silently (other readers keep the first)."""
    assert parse_json('{"a": 1, "b": {"c": 2}}', "x.json") == {"a": 1, "b": {"c": 2}}
    for raw in ('{"a": 1, "a": 2}', '[{"k": [], "z": 0, "k": {}}]', '{"o": {"a": 1, "a": 1}}'):
        with pytest.raises(PersistError, match=r"'x\.json'.*key '[ak]' appears twice"):
            parse_json(raw, "x.json")


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mapped"])
def test_a_saved_setting_given_twice_is_refused(tmp_path, mmap):
    """A ``config.json`` holding ``max_iter`` twice (digests rewritten) loaded with the second
    value; now a PersistError naming the file and the key."""
    d = tmp_path / "idx"
    mixpr_index().save(d)
    p = d / "config.json"
    text = p.read_text("utf-8")
    p.write_text(text.replace('"max_iter":', '"max_iter": 5, "max_iter":', 1), "utf-8")
    restamp(d)
    with pytest.raises(PersistError, match=r"config\.json.*'max_iter' appears twice"):
        MixPRIndex.load(d, mmap=mmap)


def test_a_manifest_with_a_key_twice_is_refused(tmp_path):
    d = tmp_path / "idx"
    mixpr_index().save(d)
    p = d / "manifest.json"
    text = p.read_text("utf-8")
    p.write_text('{"format": "longctx.other", ' + text.lstrip()[1:], "utf-8")
    with pytest.raises(PersistError, match=r"manifest\.json.*'format' appears twice"):
        MixPRIndex.load(d)


# -- format versions that are not ints ------------------------------------------------------------
@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mapped"])
def test_a_format_version_that_no_save_writes_is_refused(tmp_path, mmap):
    """``"format_version": 3.0`` was accepted (``3.0 in (2, 3)``); saves write an int."""
    d = tmp_path / "idx"
    mixpr_index().save(d)
    m = json.loads((d / "manifest.json").read_text("utf-8"))
    m["format_version"] = float(m["format_version"])
    (d / "manifest.json").write_text(json.dumps(m), "utf-8")
    with pytest.raises(PersistError, match="format version 3.0"):
        MixPRIndex.load(d, mmap=mmap)


@pytest.mark.parametrize("value", [1.0, True], ids=["float", "bool"])
@pytest.mark.parametrize("name", ["corpus.json", "indexes/shards.json"])
def test_a_corpus_or_shards_format_version_that_no_save_writes_is_refused(tmp_path, value, name):
    """``check_format`` compared with ``!=``: ``1.0`` and ``true`` passed for version 1."""
    out = _corpus(tmp_path, shards=2)
    p = out / name
    m = json.loads(p.read_text("utf-8"))
    m["format_version"] = value
    p.write_text(json.dumps(m), "utf-8")
    with pytest.raises(PersistError, match="format version"):
        load_corpus(out)


def test_a_garlic_search_graph_format_version_that_no_save_writes_is_refused():
    from longctx.garlic.search_graph import SearchGraph

    with pytest.raises(ValueError, match="format_version"):
        SearchGraph.from_dict({"format_version": 1.0})


# -- corpus files read through a link, or not regular ---------------------------------------------
@pytest.mark.parametrize("name", ["corpus.json", "indexes/shards.json"])
def test_a_corpus_file_that_is_a_link_is_refused_never_followed(tmp_path, name):
    """``Storage.read_json`` used ``is_file()`` / ``read_bytes()``, which follow links: a
    ``corpus.json`` linked to a file outside the corpus loaded that file."""
    out = _corpus(tmp_path, shards=2)
    outside = tmp_path / "outside.json"
    shutil.move(out / name, outside)
    (out / name).symlink_to(outside)
    with pytest.raises(PersistError, match="symbolic link"):
        load_corpus(out)


def test_a_corpus_file_below_a_linked_folder_is_refused(tmp_path):
    """``indexes`` itself a link to a copy outside: ``shards.json`` is not read through it."""
    out = _corpus(tmp_path, shards=2)
    outside = tmp_path / "outside"
    shutil.move(out / "indexes", outside)
    (out / "indexes").symlink_to(outside)
    with pytest.raises(PersistError, match="symbolic link"):
        load_corpus(out)


@pytest.mark.parametrize("when", ["after the check", "during the load"])
def test_a_sharded_index_root_linked_after_the_check_is_refused(tmp_path, monkeypatch, when):
    """Session 20 review (time of check, time of use): ``indexes`` was checked not to be a link,
    then ``shards.json`` and the shards were opened by path below it, following a link put
    there in between. The race is simulated (the link to a copy outside swapped in just after
    the check, or once the load has begun); the folder's identity is compared before and after
    the load, so either is refused (this narrows the window, it does not close it)."""
    import longctx.corpus.shards.persist as shards_persist
    from longctx.corpus.storage import Storage

    out = _corpus(tmp_path, shards=2)
    shutil.copytree(out / "indexes", tmp_path / "outside")

    def swap():
        if not (out / "indexes").is_symlink():
            (out / "indexes").rename(tmp_path / "moved")
            (out / "indexes").symlink_to(tmp_path / "outside")

    if when == "after the check":
        real_check = Storage.local_index

        def racing(self, rel):
            p = real_check(self, rel)
            if rel == "indexes":
                swap()
            return p

        monkeypatch.setattr(Storage, "local_index", racing)
    else:
        real_load = shards_persist.load_sharded_once

        def racing(*a, **kw):
            swap()
            return real_load(*a, **kw)

        monkeypatch.setattr(shards_persist, "load_sharded_once", racing)
    with pytest.raises(PersistError, match="indexes'"):
        load_corpus(out)
    assert (out / "indexes").is_symlink()  # the race did happen


def test_a_corpus_folder_linked_after_the_check_is_never_read_through(tmp_path, monkeypatch):
    """Session 20 review (time of check, time of use): each folder on the way to a corpus file
    was checked with ``is_symlink()``, then the file opened by its whole path, following a link
    put there in between. The race is simulated: ``indexes`` is swapped for a link to a copy
    outside just before the file's open; the file read is the one inside (or refused)."""
    from longctx.corpus.storage import Storage

    (tmp_path / "c" / "indexes").mkdir(parents=True)
    (tmp_path / "c" / "indexes" / "shards.json").write_text('{"inside": 1}', "utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "shards.json").write_text('{"outside": 1}', "utf-8")
    real_open = os.open

    def racing(path, *a, **kw):
        if os.fspath(path).endswith("shards.json") and not (tmp_path / "moved").exists():
            (tmp_path / "c" / "indexes").rename(tmp_path / "moved")
            (tmp_path / "c" / "indexes").symlink_to(tmp_path / "outside")
        return real_open(path, *a, **kw)

    monkeypatch.setattr(os, "open", racing)
    try:
        got = Storage(tmp_path / "c").read_json("indexes/shards.json")
    except PersistError as exc:
        assert "symbolic link" in str(exc)
    else:
        assert got == {"inside": 1}
    assert (tmp_path / "moved").exists()  # the race did happen


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_corpus_json_that_is_not_a_regular_file_is_named(tmp_path, kind):
    """A FIFO never blocks the load; a folder is named as such (it read as "no corpus")."""
    out = _corpus(tmp_path)
    (out / "corpus.json").unlink()
    if kind == "fifo":
        os.mkfifo(out / "corpus.json")
    else:
        (out / "corpus.json").mkdir()
    with pytest.raises(PersistError, match="corpus.json' is not a regular file"):
        load_corpus(out)


# -- text files: a FIFO put in place after the check ----------------------------------------------
def _refused_without_blocking(read, fifo: Path) -> InputError:
    """The error ``read()`` raises at once on ``fifo``; fails the test when it blocks (and
    releases it by opening the FIFO for writing)."""
    box: dict = {}

    def run():
        try:
            read()
        except Exception as exc:  # noqa: BLE001 - checked by the caller
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(5)
    if t.is_alive():  # blocked in open(): release it (a writer opens the FIFO) and fail
        with open(fifo, "wb"):
            pass
        t.join(5)
        pytest.fail(f"blocked on the FIFO {fifo}")
    assert isinstance(box.get("error"), InputError), box
    return box["error"]


def test_read_text_file_checks_the_file_it_opened_not_the_path(tmp_path, monkeypatch):
    """``read_text_file`` checked ``os.stat(path)`` and then opened the path: a FIFO put there
    in between blocked the open for ever. Here ``os.stat`` is made to answer for a regular file
    (the state before the swap); the FIFO must still be refused, at once."""
    import longctx.io as io_mod

    regular = tmp_path / "regular.txt"
    regular.write_text("some text", "utf-8")
    fifo = tmp_path / "swapped.txt"
    os.mkfifo(fifo)
    real_stat = os.stat
    monkeypatch.setattr(
        io_mod.os, "stat", lambda p, *a, **k: real_stat(regular if Path(p) == fifo else p)
    )
    error = _refused_without_blocking(lambda: read_text_file(fifo), fifo)
    assert "not a regular file" in str(error)


def test_a_jsonl_file_swapped_for_a_fifo_after_the_check_is_refused(tmp_path):
    """A ``.jsonl`` input is checked with ``is_file()`` and then read: the read opened the path
    again, so a FIFO put there in between blocked it."""
    from longctx.corpus.documents import _read_jsonl

    fifo = tmp_path / "docs.jsonl"
    os.mkfifo(fifo)
    error = _refused_without_blocking(lambda: list(_read_jsonl(fifo, "id", "text")), fifo)
    assert "not a regular file" in str(error)


# -- JSONL corpus inputs --------------------------------------------------------------------------
def _jsonl(tmp_path: Path, raw: bytes) -> Path:
    p = tmp_path / "docs.jsonl"
    p.write_bytes(raw)
    return p


GOOD = b'{"id": "a", "text": "The cat sat on the mat."}\n'


def test_a_jsonl_line_that_is_not_utf8_is_named_by_file_and_line(tmp_path):
    """The text codec's error named neither the file nor the line ("'utf-8' codec can't
    decode byte 0xff in position 42")."""
    p = _jsonl(tmp_path, GOOD + GOOD.replace(b'"a"', b'"b"') + b'{"id": "c", "text": "\xff"}\n')
    with pytest.raises(InputError, match=r"docs\.jsonl' line 3: not UTF-8"):
        read_documents(p)


def test_a_jsonl_line_with_a_key_twice_is_refused(tmp_path):
    """``{"id": 5, "text": "...", "id": "b"}`` was read as document ``"b"``."""
    p = _jsonl(tmp_path, GOOD + b'{"id": 5, "text": "x y.", "id": "b"}\n')
    with pytest.raises(
        InputError, match=r"docs\.jsonl' line 2: the key 'id' appears twice"
    ) as info:
        read_documents(p)
    assert "forged" not in str(info.value)  # the user's input, not a saved file


@pytest.mark.parametrize(
    ("record", "field"),
    [(b'{"id": "b", "text": 5}', "text"), (b'{"id": ["b"], "text": "x"}', "id")],
)
def test_a_jsonl_field_of_the_wrong_type_is_named_by_file_and_line(tmp_path, record, field):
    """Named as ``documents[1] ('b')`` before, without the file or the line."""
    p = _jsonl(tmp_path, GOOD + record + b"\n")
    with pytest.raises(InputError, match=rf"docs\.jsonl' line 2: field '{field}' must be"):
        read_documents(p)


def test_a_jsonl_line_over_the_limit_is_refused_reading_at_most_the_limit(tmp_path, monkeypatch):
    """A line longer than ``MAX_JSONL_LINE_BYTES`` is refused naming it; lines are counted as
    text mode counts them (``\\r`` ends a line too), as before the reads became binary."""
    import longctx.corpus.documents as documents

    monkeypatch.setattr(documents, "MAX_JSONL_LINE_BYTES", 1000)
    p = _jsonl(tmp_path, GOOD + b'{"id": "b", "text": "' + b"word " * 400 + b'"}\n')
    with pytest.raises(InputError, match=r"line 2: longer than the limit of 1,000 bytes"):
        read_documents(p)
    cr = _jsonl(tmp_path, GOOD.rstrip(b"\n") + b'\r{"id": "b", "text": "Dogs bark."}\r\n\r')
    assert read_documents(cr) == [("a", "The cat sat on the mat."), ("b", "Dogs bark.")]
    bad = _jsonl(tmp_path, GOOD.rstrip(b"\n") + b"\r\r[1]\n")
    with pytest.raises(InputError, match="line 3: expected an object"):
        read_documents(bad)


def test_cli_refuses_a_device_or_a_fifo_at_once(tmp_path, capsys):
    """``/dev/zero`` or a FIFO given as a document (as a file, a link named ``.jsonl``, or
    inside a folder) never hangs nor fills memory: refused or skipped, in one line each."""
    from longctx.cli import main

    os.mkfifo(tmp_path / "fifo.txt")
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    for path in ("/dev/zero", tmp_path / "fifo.txt", tmp_path / "zero.jsonl"):
        out = tmp_path / f"out-{Path(path).name}"
        assert main(["index", str(path), "--method", "mixpr", "--out", str(out)]) == 2
        assert "is not a file" in capsys.readouterr().err
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.txt").write_text("The cat sat on the mat.", "utf-8")
    (folder / "zero.txt").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo.txt")
    (folder / "loop").symlink_to(folder)  # a link loop: never walked into
    assert main(["index", str(folder), "--method", "mixpr", "--out", str(tmp_path / "c")]) == 0
    assert list(load_corpus(tmp_path / "c")) == ["a.txt"]


def test_cli_names_a_jsonl_line_that_is_not_utf8(tmp_path, capsys):
    from longctx.cli import main

    p = _jsonl(tmp_path, GOOD + b'{"id": "b", "text": "caf\xe9"}\n')
    assert main(["index", str(p), "--method", "mixpr", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "docs.jsonl' line 2: not UTF-8" in err and err.count("\n") == 1


# -- npy members replaced in a corpus's shards ----------------------------------------------------
def _npy_header(shape, descr="<i8", fortran=False) -> bytes:
    h = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}"
    h = h.ljust(118) + "\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h.encode()


@pytest.mark.parametrize("shards", [None, 2], ids=["one-index", "sharded"])
@pytest.mark.parametrize("forge", ["huge", "object", "fortran", "float", "2d"])
def test_a_corpus_member_replaced_by_another_array_is_refused(tmp_path, forge, shards):
    """A corpus's index (one, or each shard: mapped) is checked as any index: a ``.npy``
    member replaced by a header claiming 10**12 entries (refused before anything is
    allocated), an object array (never unpickled), a Fortran-order, float or 2-D array (the
    digests rewritten, as a forger would)."""
    out = _corpus(tmp_path, shards=shards)
    d = out / "indexes" / ("mixpr" if shards is None else "shard-0")
    p = d / "starts.npy"
    a = np.load(p)
    if forge == "huge":
        p.write_bytes(_npy_header((10**12,)) + a.tobytes())
    elif forge == "object":
        np.save(p, np.array([{"x": 1}] * len(a), dtype=object), allow_pickle=True)
    elif forge == "fortran":
        p.write_bytes(_npy_header((len(a), 1), fortran=True) + a.tobytes())
    elif forge == "float":
        np.save(p, a.astype(np.float64))
    else:
        np.save(p, np.stack([a, a]))
    restamp(d)
    with pytest.raises(PersistError, match=r"starts\.npy"):
        load_corpus(out)


# -- a remote corpus ------------------------------------------------------------------------------
def _no_whole_read(monkeypatch, fs, suffix: str) -> None:
    """Make ``fs.cat_file`` (a whole read) of a path ending in ``suffix`` fail the test."""
    cat_file = type(fs).cat_file

    def whole(self, path, *a, **k):
        assert not str(path).endswith(suffix), f"{path} read whole before its size was checked"
        return cat_file(self, path, *a, **k)

    monkeypatch.setattr(type(fs), "cat_file", whole)


def test_a_remote_index_file_over_the_limit_is_refused_before_it_is_read(monkeypatch):
    """``Storage.fetch_index`` read every remote file whole into memory (``cat_file``),
    whatever its size; now a file larger than ``MAX_FETCH_BYTES`` is refused before it is
    read, and the others are copied in blocks."""
    import fsspec

    import longctx.corpus.storage as storage

    out = "memory://longctx-hostile-fetch"
    fs = fsspec.filesystem("memory")
    if fs.exists(out):
        fs.rm(out, recursive=True)
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False)
    assert len(load_corpus(out)) == 3
    big = f"{out}/indexes/mixpr/starts.npy"
    fs.pipe_file(big, b"\0" * 5000)
    monkeypatch.setattr(storage, "MAX_FETCH_BYTES", 4096, raising=False)
    _no_whole_read(monkeypatch, fs, "starts.npy")
    try:
        with pytest.raises(PersistError, match=r"starts\.npy. is 5000 bytes, more than the limit"):
            load_corpus(out)
    finally:
        fs.rm(out, recursive=True)


# -- LlamaIndex persist_dir -----------------------------------------------------------------------
def test_a_llamaindex_index_subfolder_that_is_a_link_is_refused(tmp_path):
    """``persist_dir/longctx_mixpr`` linked to an index outside ``persist_dir`` was loaded
    through the link (``persist`` refuses to write through one)."""
    from llama_index.core.schema import Document

    from llamaindex_longctx import MixPRRetriever

    docs = [Document(text=t, id_=d) for d, t in DOCS]
    MixPRRetriever.from_documents(docs, similarity_top_k=2).persist(tmp_path / "elsewhere")
    persist_dir = tmp_path / "storage"
    persist_dir.mkdir()
    (persist_dir / "longctx_mixpr").symlink_to(tmp_path / "elsewhere" / "longctx_mixpr")
    with pytest.raises(PersistError, match="longctx_mixpr' is a symbolic link"):
        MixPRRetriever.from_persist_dir(persist_dir)
    assert MixPRRetriever.from_persist_dir(tmp_path / "elsewhere").retrieve("cat")


def test_a_llamaindex_index_subfolder_linked_after_the_check_is_refused(tmp_path, monkeypatch):
    """Session 20 review (time of check, time of use): ``is_symlink()`` was checked, then the
    folder opened by path, following a link put there in between. The race is simulated: the
    link is swapped in just before the folder is opened; it is opened without following one."""
    from llama_index.core.schema import Document

    import llamaindex_longctx._mixpr_persist as mod
    from llamaindex_longctx import MixPRRetriever

    docs = [Document(text=t, id_=d) for d, t in DOCS]
    MixPRRetriever.from_documents(docs, similarity_top_k=2).persist(tmp_path / "elsewhere")
    MixPRRetriever.from_documents(docs[:1], similarity_top_k=2).persist(tmp_path / "storage")
    sub = tmp_path / "storage" / "longctx_mixpr"
    real_open = mod.open_index_dir

    def racing(d, **kw):
        if Path(d) == sub and not sub.is_symlink():
            sub.rename(tmp_path / "moved")
            sub.symlink_to(tmp_path / "elsewhere" / "longctx_mixpr")
        return real_open(d, **kw)

    monkeypatch.setattr(mod, "open_index_dir", racing)
    with pytest.raises(PersistError, match="longctx_mixpr' is a symbolic link"):
        MixPRRetriever.from_persist_dir(tmp_path / "storage")


# -- globs through links to folders ---------------------------------------------------------------
def test_a_glob_never_walks_into_a_link_to_a_folder(tmp_path):
    """``glob.glob(recursive=True)`` follows links under ``**``: a folder holding two links to
    itself made ``DIR/**/*.txt`` walk 2**40 paths (it never finished), one such link read the
    file 41 times. Run in a child process: the code before this change would hang this one."""
    import subprocess
    import sys

    d = tmp_path / "docs"
    d.mkdir()
    (d / "a.txt").write_text("The cat sat on the mat.", "utf-8")
    (d / "l1").symlink_to(".")
    (d / "l2").symlink_to(".")
    code = (
        "import sys; from longctx.corpus.documents import read_documents; "
        "print([i for i, _ in read_documents(sys.argv[1])])"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(d / "**" / "*.txt")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert run.returncode == 0, run.stderr[-500:]
    assert run.stdout.strip() == "['a.txt']"


@pytest.mark.parametrize(
    "pattern",
    ["**/*.txt", "*.txt", "**", "sub/**", "*/*.txt", ".*", "**/.*/*.txt", "s?b/*", "**/b*"]
    # session 20 review: a hidden name only where that one part starts with "." (every part
    # could match one once any part did); ``a**`` is ``a*``; a trailing "/" matches folders only
    + ["*/.hid/*.txt", "*/../a.txt", "**/.hid/*", "sub/*/../*.txt", "**/.*"]
    + ["s**/*.txt", "**/de**/*", "sub/*/", "**/", "sub/**/"],
)
def test_a_glob_without_links_matches_what_glob_glob_matches(tmp_path, pattern, monkeypatch):
    """The glob of a corpus input finds the files ``glob.glob(recursive=True)`` finds (hidden
    names only where the pattern's part naming them starts with "."), absolute or relative to
    the working folder."""
    import glob

    from longctx.corpus.documents import _glob_files

    hidden = ["sub/.hid/c.txt", "sub/.hid/.secret.txt", ".h/d.txt", ".h/.hid/w.txt", ".e.txt"]
    for rel in ["a.txt", "sub/b.txt", "sub/deep/b2.txt", *hidden]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x", "utf-8")
    for pat in (str(tmp_path / pattern), pattern):
        monkeypatch.chdir(tmp_path)
        want = sorted({f for f in glob.glob(pat, recursive=True) if os.path.isfile(f)})
        assert want or pattern.endswith("/")
        assert _glob_files(pat) == want


def test_a_remote_json_file_of_unknown_size_is_read_bounded(monkeypatch):
    """A store that gives no size (``size`` is ``None``) had its ``corpus.json`` read whole
    (``cat_file``) before the limit was checked; now at most the limit + 1 bytes are read."""
    import fsspec

    from longctx.corpus.storage import Storage

    fs = fsspec.filesystem("memory")
    root = "memory://longctx-hostile-size"
    fs.pipe_file(f"{root}/big.json", b"[" + b"0," * 5000 + b"0]")
    monkeypatch.setattr(type(fs), "size", lambda self, path: None)
    _no_whole_read(monkeypatch, fs, "big.json")
    try:
        with pytest.raises(PersistError, match=r"big\.json' is larger than 100 bytes"):
            Storage(root).read_json("big.json", limit=100)
        assert Storage(root).read_json("big.json", limit=1 << 20)[:2] == [0, 0]
    finally:
        fs.rm(root, recursive=True)
