"""longctx.persist.fs: saving and its cleanup never touch a path outside the target (issue 28:
"Deletes outside its folder", kill -9 leftovers, folder modes)."""

from __future__ import annotations

import json
import os
import secrets
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError, SaveTargetError, _remove_index, write_dir
from longctx.persist import fs as persist_fs
from tests._persist_helpers import TEXTS, edit_json, mixpr_index

REPO = Path(__file__).resolve().parents[1]


def _tree(d: Path) -> dict:
    out = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_file():
            out[rel] = p.read_bytes()
        else:
            out[rel] = "dir"
    return out


def _user_folder(root: Path) -> Path:
    """A user's folder that looks like an index: its manifest lists the user's files."""
    user = root / "user"
    user.mkdir()
    (user / "important.txt").write_text("the user's work")
    (user / "manifest.json").write_text(
        json.dumps({"format": "longctx.mixpr", "files": ["important.txt"]})
    )
    return user


# -- the reproduction: "dirs": [".."] -------------------------------------------------------------
def test_dotdot_in_a_manifest_is_refused_and_never_deletes_the_parent(tmp_path):
    user = _user_folder(tmp_path)
    d = user / "idx"
    mixpr_index().save(d)
    edit_json(d / "manifest.json", lambda m: m.update(dirs=[".."]), stamp=False)
    before = _tree(user)
    with pytest.raises(PersistError, match=r"manifest\.json.*'dirs'.*'\.\.'"):
        MixPRIndex.load(d)  # the load of load-then-save
    with pytest.raises(SaveTargetError, match=r"'dirs'.*'\.\.'"):
        mixpr_index().save(d)  # a save over it without loading
    # the old-index cleanup itself, given that folder, deletes nothing
    assert _remove_index(d) is False
    assert _tree(user) == before
    assert (user / "important.txt").read_text() == "the user's work"


@pytest.mark.parametrize(
    "name",
    ["", ".", "..", "../x", "a/b", "/etc", "\\x", "a\\..\\b", "C:x", "x\x00y", "x\ny", 7, None],
)
def test_member_names_must_be_plain(name):
    assert persist_fs.member_name_problem(name) is not None


@pytest.mark.parametrize("name", ["texts.json", "index", ".hidden", "a b.npz", "日本.json"])
def test_plain_member_names_pass(name):
    assert persist_fs.member_name_problem(name) is None


@pytest.mark.parametrize("field", ["files", "dirs"])
@pytest.mark.parametrize("name", ["../user/important.txt", "/tmp", "a/b", "."])
def test_path_names_in_a_manifest_are_persist_errors(tmp_path, field, name):
    d = tmp_path / "idx"
    mixpr_index().save(d)
    edit_json(d / "manifest.json", lambda m: m.update({field: [*m.get(field, []), name]}))
    with pytest.raises(PersistError, match=rf"manifest\.json.*{field}"):
        MixPRIndex.load(d)
    with pytest.raises(SaveTargetError):
        mixpr_index().save(d)


def test_removal_never_follows_links_out_of_the_folder(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "texts.json").write_text("keep")
    (outside / "sub" / "manifest.json").write_text(json.dumps({"files": ["a.txt"]}))
    (outside / "sub" / "a.txt").write_text("keep too")
    before = _tree(outside)
    old = tmp_path / ".idx.old-x"
    old.mkdir()
    (old / "texts.json").symlink_to(outside / "texts.json")
    (old / "index").symlink_to(outside / "sub", target_is_directory=True)
    (old / "mine.json").write_text("{}")
    (old / "manifest.json").write_text(
        json.dumps({"files": ["texts.json", "mine.json"], "dirs": ["index"]})
    )
    assert _remove_index(old) is False  # the links stay (logged), so does the folder
    assert _tree(outside) == before
    assert not (old / "mine.json").exists() and (old / "texts.json").is_symlink()


def test_a_linked_index_folder_is_never_removed_through_the_link(tmp_path):
    real = tmp_path / "real"
    mixpr_index().save(real)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    before = _tree(real)
    assert _remove_index(link) is False
    assert _tree(real) == before


# -- leftovers of a killed save -------------------------------------------------------------------
def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _stale(final: Path, what: str, pid: int, files=("x.json",)) -> Path:
    token = secrets.token_hex(6)
    p = final.with_name(f".{final.name}.{what}-{persist_fs._host_tag()}-{pid}-{token}")
    p.mkdir()
    for f in files:
        (p / f).write_text("{}")
    if what == "old":
        (p / "manifest.json").write_text(json.dumps({"files": list(files)}))
    return p


def test_stale_temporaries_are_removed_on_the_next_save_and_load(tmp_path):
    final = tmp_path / "idx"
    mixpr_index().save(final)
    dead = _dead_pid()
    stale_tmp = _stale(final, "tmp", dead)
    stale_old = _stale(final, "old", dead)
    live_tmp = _stale(final, "tmp", os.getpid())  # a save of this process is under way
    legacy_new = tmp_path / ".idx.tmp-abcd1234"  # longctx 0.1's name: removed only when old
    legacy_new.mkdir()
    legacy_old = tmp_path / ".idx.tmp-zzzz9999"
    legacy_old.mkdir()
    os.utime(legacy_old, (time.time() - 3 * 86400,) * 2)
    users = tmp_path / ".idx.tmp-my-notes"  # not a longctx name: never touched
    users.mkdir()
    (users / "n.txt").write_text("n")
    decoy_target = tmp_path / "decoy"
    decoy_target.mkdir()
    (decoy_target / "keep.txt").write_text("k")
    decoy = final.with_name(f".idx.tmp-{persist_fs._host_tag()}-{dead}-{'0' * 12}")
    decoy.symlink_to(decoy_target, target_is_directory=True)  # a link is never followed

    mixpr_index().save(final)
    left = {p.name for p in tmp_path.iterdir()}
    assert stale_tmp.name not in left and stale_old.name not in left
    assert legacy_old.name not in left
    for kept in (live_tmp, legacy_new, users, decoy):
        assert kept.name in left
    assert (decoy_target / "keep.txt").read_text() == "k"
    assert (users / "n.txt").read_text() == "n"

    again = _stale(final, "tmp", dead)
    assert list(MixPRIndex.load(final).texts) == TEXTS  # loading cleans too
    assert not again.exists()


def test_nothing_is_cleaned_while_the_target_is_missing(tmp_path):
    """A save killed between its two renames leaves the only copy in a sibling: kept."""
    final = tmp_path / "idx"
    old = _stale(final, "old", _dead_pid())
    assert persist_fs.clean_stale_siblings(final) == []
    assert old.exists()


_KILLED_SAVE = """
import sys, time
from longctx.persist import write_dir

def slow(path):
    path.mkdir()
    print("writing", flush=True)
    time.sleep(60)

write_dir(sys.argv[1], kind="mixpr", version=1, json_files={"x": [1, 2]}, subdirs={"s": slow})
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_kill_9_during_a_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    final = tmp_path / "idx"
    mixpr_index().save(final)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(2):  # each killed save leaves its temporary; the next one removes it
        p = subprocess.Popen(
            [sys.executable, "-c", _KILLED_SAVE, str(final)], stdout=subprocess.PIPE, env=env
        )
        assert p.stdout.readline().strip() == b"writing"
        p.send_signal(signal.SIGKILL)
        p.wait()
        left = [x.name for x in tmp_path.iterdir() if x.name.startswith(".idx.tmp-")]
        assert len(left) == 1 and f"-{p.pid}-" in left[0]
    other = MixPRIndex.from_texts(["Another text. Two sentences."])
    other.save(final)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["idx"]
    assert list(MixPRIndex.load(final).texts) == list(other.texts)


# -- folder modes -----------------------------------------------------------------------------------
@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o755), (0o027, 0o750), (0o002, 0o775)])
def test_a_new_folder_follows_the_umask(tmp_path, umask, mask, mode):
    umask(mask)
    mixpr_index().save(tmp_path / "idx")
    assert stat.S_IMODE(os.stat(tmp_path / "idx").st_mode) == mode
    write_dir(tmp_path / "g", kind="x", version=1, json_files={"a": 1})
    assert stat.S_IMODE(os.stat(tmp_path / "g").st_mode) == mode
    assert stat.S_IMODE(os.stat(tmp_path / "g" / "a.json").st_mode) == mode & 0o666


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_an_existing_folder_keeps_its_mode_and_setgid_bit(tmp_path, umask):
    umask(0o077)
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o2775)
    mixpr_index().save(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o2775
    os.chmod(d, 0o750)
    MixPRIndex.from_texts(["Another text. Two sentences."]).save(d)  # replacing an index
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o750


def test_loads_from_a_quiet_folder_list_it_once(tmp_path, monkeypatch):
    """Loading n indexes of one folder (a corpus) lists the folder once, not n times."""
    for i in range(3):
        mixpr_index().save(tmp_path / f"i{i}")
    past = time.time() - 60
    os.utime(tmp_path, (past, past))
    persist_fs._SCANS.clear()
    listed = []
    real = os.scandir
    monkeypatch.setattr(persist_fs.os, "scandir", lambda p=".": listed.append(str(p)) or real(p))
    for _ in range(2):
        for i in range(3):
            MixPRIndex.load(tmp_path / f"i{i}")
    assert listed.count(str(tmp_path)) == 1
    stale = _stale(tmp_path / "i1", "tmp", _dead_pid())  # the folder changes: listed again
    MixPRIndex.load(tmp_path / "i1")
    assert not stale.exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_the_0700_of_an_index_saved_before_digests_is_not_kept(tmp_path, umask):
    d = tmp_path / "idx"
    mixpr_index().save(d)
    edit_json(d / "manifest.json", lambda m: m.pop("digests") and None, stamp=False)
    os.chmod(d, 0o700)  # what every save of longctx 0.1 left
    umask(0o022)
    mixpr_index().save(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o755
    os.chmod(d, 0o700)  # chosen by the user on a folder of this release: kept
    mixpr_index().save(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700


def test_open_below_opens_a_regular_file_never_through_a_link(tmp_path):
    """The one walk below a root (the corpus storage's reads use it; it rewrote part of
    ``open_member`` before): a link on the way or at the end, a file that is not regular, a
    missing one and a file on the way each get their own error."""
    import errno as errno_mod

    from longctx.persist.fs import open_below

    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "f.json").write_text("{}", "utf-8")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "f.json").write_text("outside", "utf-8")
    (root / "link").symlink_to(tmp_path / "outside")
    (root / "a" / "flink.json").symlink_to(root / "a" / "b" / "f.json")
    os.mkfifo(root / "a" / "fifo.json")
    fd = open_below(root, ("a", "b", "f.json"))
    with os.fdopen(fd, "rb") as fh:
        assert fh.read() == b"{}"
    for parts, err in [
        (("link", "f.json"), errno_mod.ELOOP),
        (("a", "flink.json"), errno_mod.ELOOP),
        (("a", "fifo.json"), errno_mod.EINVAL),
        (("a", "b"), errno_mod.EINVAL),
    ]:
        with pytest.raises(OSError) as info:
            open_below(root, parts)
        assert info.value.errno == err, parts
    with pytest.raises(FileNotFoundError):
        open_below(root, ("a", "nope", "f.json"))
    with pytest.raises(NotADirectoryError):
        open_below(root, ("a", "b", "f.json", "x"))


@pytest.mark.parametrize("dir_fd", [True, False], ids=["dir_fd", "by_path"])
def test_open_below_refuses_a_part_that_is_not_a_plain_name(tmp_path, monkeypatch, dir_fd):
    """The docstring promised ``EINVAL`` for a part that is not a plain name: a folder part got
    ``NotADirectoryError`` where the platform has ``dir_fd``, and without it a ``..`` folder part
    was walked (out of the root)."""
    import errno as errno_mod

    from longctx.persist import fs

    monkeypatch.setattr(fs, "HAVE_DIR_FD", dir_fd and fs.HAVE_DIR_FD)
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (tmp_path / "f.json").write_text("outside", "utf-8")
    (root / "a" / "f.json").write_text("{}", "utf-8")
    for parts in [("..", "f.json"), ("a/..", "a", "f.json"), ("a", "../f.json"), ("", "f.json")]:
        with pytest.raises(OSError) as info:
            fs.open_below(root, parts)
        assert info.value.errno == errno_mod.EINVAL, parts
        assert "not a plain name" in str(info.value)
    os.close(fs.open_below(root, ("a", "f.json")))
