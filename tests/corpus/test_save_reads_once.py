"""A save of a MixPR index into its corpus (``indexes/mixpr``) tests the corpus's
``corpus.json`` once before the lock (is it a corpus's manifest: one open, at most 64 KiB read)
and reads it once under the lock (the documents' check), and resolves the target's real path
once in ``writes.save`` (the check of the corpus's folders is given it). Before: ``corpus.json``
was opened 5 times (two tests, each opening it twice, and the check) and the target resolved 4
times; what the save writes and refuses is unchanged (tests/corpus/test_save_*.py)."""

from __future__ import annotations

import builtins
import os
from unittest import mock

from longctx.corpus import build_indexes, load_corpus
from longctx.persist.marks import CORPUS_MANIFEST

DOCS = [
    ("a", "Mary went to the kitchen. She got the milk there."),
    ("b", "John walked in the garden. The roses were red."),
]


def test_a_save_into_its_corpus_reads_corpus_json_twice_and_resolves_once(tmp_path):
    out = tmp_path / "c"
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False)
    index = next(iter(load_corpus(out, use_ray=False).values()))
    target = out / "indexes" / "mixpr"
    opened, resolved = [], []
    real_open, realpath = builtins.open, os.path.realpath

    def counting_open(file, *args, **kwargs):
        opened.append(os.fspath(file) if isinstance(file, (str, os.PathLike)) else file)
        return real_open(file, *args, **kwargs)

    def counting_realpath(p, *args, **kwargs):
        resolved.append(os.fspath(p))
        return realpath(p, *args, **kwargs)

    with (
        mock.patch("builtins.open", counting_open),
        mock.patch("os.path.realpath", counting_realpath),
    ):
        index.save(target)
    manifest = str(out / CORPUS_MANIFEST)
    assert opened.count(manifest) == 2, opened  # the test before the lock, the check under it
    # writes.save's own, and the check of the folders resolving each folder it walks (a link
    # loop that realpath left unresolved in the target is resolved there)
    assert resolved.count(str(target)) == 2, resolved
    assert sorted(next(iter(load_corpus(out, use_ray=False).values())).doc_ids) == ["a", "b"]
