"""A save into a corpus at an fsspec URL (``memory://``, as the corpus tests use it) is refused
as the same save into a local corpus is: inside the corpus's ``indexes/`` (its index folders
replaced whole by the next build), with the same message naming the corpus at its URL (its
``corpus.json`` read through fsspec, bounded; no lock is taken for a refusal).

Before, a core index's save, a LangChain retriever's ``save`` and a LlamaIndex retriever's
``persist`` given ``memory://corpus/indexes/mixpr/x`` were accepted, and wrote a local folder
``./memory:/corpus/indexes/mixpr/x`` (a URL taken as a relative path): these saves write local
folders only, so every other URL is refused too, naming the argument. A sharded index, which
saves to fsspec URLs, is refused inside the corpus's index folders and still saves at its
``indexes`` (no lock there, as documented) and at other URLs."""

from __future__ import annotations

import uuid

import fsspec
import pytest

from longctx.corpus import build_indexes
from longctx.corpus.shards import ShardedMixPRIndex
from longctx.mixpr import MixPRIndex
from longctx.persist import SaveTargetError

DOCS = [
    ("a", "Mary went to the kitchen. She got the milk there."),
    ("b", "John walked in the garden. The roses were red."),
]
TEXTS = [t for _, t in DOCS]


@pytest.fixture
def url_corpus(tmp_path, monkeypatch):
    """A MixPR corpus at ``memory://<unique>/c``, the working folder an empty ``tmp_path``
    (where a URL taken as a local path would land); removed afterwards."""
    monkeypatch.chdir(tmp_path)
    root = f"longctx-url-save-{uuid.uuid4().hex}"
    url = f"memory://{root}/c"
    assert not build_indexes(DOCS, "mixpr", url, use_ray=False, progress=False).failed
    yield url
    fsspec.filesystem("memory").rm(f"/{root}", recursive=True)
    assert list(tmp_path.iterdir()) == []  # nothing written locally


def _saves():
    from langchain_longctx import MixPRRetriever as LangChainMixPR
    from llamaindex_longctx import MixPRRetriever as LlamaIndexMixPR

    return {
        "core": ("path", lambda p: MixPRIndex.from_texts(TEXTS).save(p)),
        "langchain": ("path", lambda p: LangChainMixPR.from_texts(TEXTS).save(p)),
        "llamaindex": ("persist_dir", lambda p: LlamaIndexMixPR.from_texts(TEXTS).persist(p)),
    }


@pytest.mark.parametrize("kind", ["core", "langchain", "llamaindex"])
def test_a_save_inside_a_url_corpus_is_refused_as_a_local_one(url_corpus, tmp_path, kind):
    argument, save = _saves()[kind]
    target = f"{url_corpus}/indexes/mixpr/x"
    with pytest.raises(SaveTargetError) as err:
        save(target)
    message = str(err.value)
    assert message.startswith(f"{argument} {target!r}") or f"{argument} {target!r}" in message
    assert f"the index folder 'indexes/mixpr' of the corpus at {url_corpus!r}" in message
    assert "would delete what is saved there" in message
    # elsewhere in indexes/: the rule of a folder a build leaves alone, as for a local corpus
    with pytest.raises(SaveTargetError, match="a rebuild leaves 'indexes/backup' alone"):
        save(f"{url_corpus}/indexes/backup/x")


@pytest.mark.parametrize("kind", ["core", "langchain", "llamaindex"])
def test_a_local_only_save_refuses_any_url(url_corpus, kind):
    argument, save = _saves()[kind]
    elsewhere = url_corpus.rsplit("/", 1)[0] + "/elsewhere"
    with pytest.raises(SaveTargetError, match=f"{argument} .* is a URL: .*'memory:'"):
        save(elsewhere)
    # indexes/<name>: a core index's own place in a local corpus (under its lock), a URL here;
    # a retriever's persist is refused there by the corpus's rule, as in a local corpus
    own = "is a URL" if kind == "core" else "a retriever's persist is not one"
    with pytest.raises(SaveTargetError, match=own):
        save(f"{url_corpus}/indexes/mine")


def test_a_file_url_is_checked_as_its_local_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where a URL taken as a relative path would land
    out = tmp_path / "local"
    build_indexes(DOCS, "mixpr", out, use_ray=False, progress=False)
    with pytest.raises(SaveTargetError, match="index folder 'indexes/mixpr'.*would delete"):
        MixPRIndex.from_texts(TEXTS).save(f"file://{out}/indexes/mixpr/x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local"]


def test_a_sharded_save_at_a_url_corpus(url_corpus):
    index = ShardedMixPRIndex.from_texts(TEXTS, ids=["a", "b"], shards=2)
    try:
        with pytest.raises(SaveTargetError, match="index folder 'indexes/shard-0' of the corpus"):
            index.save(f"{url_corpus}/indexes/shard-0")
        index.save(f"{url_corpus}/indexes")  # its own place there: as documented, no lock
        other = url_corpus.rsplit("/", 1)[0] + "/sharded"
        index.save(other)
        again = ShardedMixPRIndex.load(other, use_ray=False)
        assert again.doc_ids == index.doc_ids
        again.close()
    finally:
        index.close()
