"""A save refused inside a corpus's index folder through a path whose real path Python cannot
resolve whole (a link loop before a link to the corpus) is still a ``SaveTargetError`` (the
message once took ``target.relative_to(root)``, which raised ``ValueError`` there)."""

from __future__ import annotations

import os

import pytest

from longctx.corpus import build_indexes
from longctx.persist import SaveTargetError
from longctx.persist.marks import check_outside_corpus


def test_refused_through_a_link_loop_is_a_save_target_error(tmp_path, monkeypatch):
    corpus = tmp_path / "w" / "c"
    build_indexes(
        [("a", "Mary went to the kitchen.")], "mixpr", corpus, use_ray=False, progress=False
    )
    base = tmp_path / "links"
    base.mkdir()
    (base / "lnk").symlink_to(corpus)
    (base / "loop").symlink_to(base / "loop")
    monkeypatch.chdir(base)
    target = "loop/../lnk/indexes/mixpr/sub"
    # the case only arises where realpath leaves the loop unresolved; elsewhere it is refused too
    resolved = os.path.realpath(target)
    with pytest.raises(SaveTargetError, match="persist_dir") as err:
        check_outside_corpus(target, "persist_dir")
    assert "indexes/mixpr" in str(err.value), (resolved, str(err.value))
