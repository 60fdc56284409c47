"""``MixPRRetriever.persist`` refuses a ``persist_dir`` inside a corpus's ``indexes/`` folder.

Before, a retriever persisted into a built corpus's ``indexes/mixpr`` (or anywhere under
``indexes/``) went into its own ``longctx_mixpr/`` there, and the next ``longctx index`` that
changed the corpus's documents replaced ``indexes/mixpr`` whole: the user's retriever was gone
without a word. Now the persist raises ``SaveTargetError`` naming ``persist_dir`` and saying
where to persist instead, before anything is written; any folder outside ``indexes/`` (beside
the corpus, the corpus's root) is persisted as before and survives a rebuild.
"""

from __future__ import annotations

import pytest
from llama_index.core.schema import Document, QueryBundle

from llamaindex_longctx import MixPRRetriever
from longctx.corpus import build_indexes
from longctx.persist import SaveTargetError
from tests.corpus import _build_race as race

DOCS = [
    Document(text="Alice fell down the rabbit hole. She found a tiny door.", id_="alice"),
    Document(text="Bob sailed to the island. He built a small hut there.", id_="bob"),
]
QUERY = QueryBundle("Where did Bob sail?")


def _build(folder, out) -> None:
    build_indexes(str(folder), "mixpr", str(out), **race.build_options("mixpr", None))


def _new_corpus(root):
    """``(folder, out, set1)``: a one-index MixPR corpus ``out`` built from ``folder``, and a
    changed document set for a rebuild."""
    base, set1, _ = race.doc_sets()
    race.write_folder(root / "docs", base)
    _build(root / "docs", root / "out")
    return root / "docs", root / "out", set1


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A built corpus the refusal tests only read (each checks it is left as it was)."""
    return _new_corpus(tmp_path_factory.mktemp("corpus"))[1]


def _files(d):
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "where",
    ["indexes/mixpr", "indexes", "indexes/mixpr/nested/new", "indexes/mine", "docs/../indexes"],
)
def test_persist_inside_a_corpus_index_folder_is_refused_before_writing(corpus, where):
    before = _files(corpus)
    target = corpus / where
    with pytest.raises(SaveTargetError, match="persist_dir") as err:
        MixPRRetriever.from_documents(DOCS).persist(target)
    message = str(err.value)
    assert repr(str(target)) in message  # names the argument as given
    assert str(corpus) in message and "outside the corpus's indexes/" in message
    assert _files(corpus) == before  # nothing written, no longctx_mixpr/ anywhere
    assert race.corpus_state(corpus, "mixpr")[0] == "ok"


@pytest.mark.parametrize("link", ["persist_dir", "subfolder"])
def test_persist_through_a_symbolic_link_into_a_corpus_is_refused(corpus, tmp_path, link):
    """A link outside the corpus to its ``indexes/mixpr`` (``persist_dir`` itself, or the
    ``longctx_mixpr`` folder inside an ordinary ``persist_dir``) is the corpus's folder. (The
    second was refused before too, by the writer's "it is a symbolic link"; now with the reason.)"""
    before = _files(corpus)
    if link == "persist_dir":
        target = tmp_path / "alias"
        target.symlink_to(corpus / "indexes" / "mixpr", target_is_directory=True)
    else:
        target = tmp_path / "plain"
        target.mkdir()
        (target / "longctx_mixpr").symlink_to(corpus / "indexes" / "mine", target_is_directory=True)
    says = "is inside the index folder" if link == "persist_dir" else "leaves 'indexes/mine' alone"
    with pytest.raises(SaveTargetError, match=says):
        MixPRRetriever.from_documents(DOCS).persist(target)
    assert _files(corpus) == before


@pytest.mark.parametrize("where", ["beside", "root"])
def test_persist_outside_indexes_works_and_survives_a_rebuild(tmp_path, where):
    folder, out, set1 = _new_corpus(tmp_path)
    target = tmp_path / "saved" if where == "beside" else out  # the corpus's root: not indexes/
    r = MixPRRetriever.from_documents(DOCS, similarity_top_k=1)
    r.persist(target)
    race.write_folder(folder, set1)
    _build(folder, out)  # changes the documents: indexes/mixpr is replaced
    assert race.corpus_state(out, "mixpr")[0] == "ok"
    loaded = MixPRRetriever.from_persist_dir(target)
    got = loaded.retrieve(QUERY)
    assert [n.node.node_id for n in got] == [n.node.node_id for n in r.retrieve(QUERY)]
    assert [n.node.ref_doc_id for n in got] == ["bob"]


def test_a_folder_named_indexes_outside_a_corpus_is_not_refused(tmp_path):
    """Only an ``indexes`` folder beside a ``corpus.json`` is a corpus's."""
    target = tmp_path / "indexes" / "mine"
    MixPRRetriever.from_documents(DOCS).persist(target)
    assert (target / "longctx_mixpr").is_dir()
