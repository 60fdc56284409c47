"""``build_indexes`` checks that ``out`` is ours (empty, new, or a corpus) once per build: on a
local first build before the build lock's file is made there; inside the lock only where that
check did not run (a remote ``out``, which is not locked). Before, a local first build checked
twice."""

from __future__ import annotations

import pytest

import longctx.corpus.build as b
from longctx.corpus import build_indexes
from tests.corpus._build_race import build_options, doc_sets, write_folder


@pytest.fixture
def checks(monkeypatch):
    seen = []
    real = b._check_out_is_ours

    def counted(storage):
        seen.append(storage.url)
        return real(storage)

    monkeypatch.setattr(b, "_check_out_is_ours", counted)
    return seen


def _folder(tmp_path):
    folder = tmp_path / "docs"
    write_folder(folder, doc_sets()[0])
    return folder


def test_a_local_first_build_checks_out_once(tmp_path, checks):
    folder = _folder(tmp_path)
    build_indexes(str(folder), "mixpr", str(tmp_path / "out"), **build_options("mixpr", None))
    assert len(checks) == 1  # before: 2
    build_indexes(str(folder), "mixpr", str(tmp_path / "out"), **build_options("mixpr", None))
    assert len(checks) == 1  # a corpus there: not checked again


def test_a_local_folder_of_the_users_is_refused_before_the_lock(tmp_path, checks):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds files and no corpus.json"):
        build_indexes(str(_folder(tmp_path)), "mixpr", str(out), **build_options("mixpr", None))
    assert len(checks) == 1
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # no lock file made there


def test_a_remote_first_build_checks_out_inside(tmp_path, checks):
    import uuid

    url = f"memory://longctx-test-{uuid.uuid4().hex}/out"
    build_indexes(str(_folder(tmp_path)), "mixpr", url, **build_options("mixpr", None))
    assert checks == [url]
