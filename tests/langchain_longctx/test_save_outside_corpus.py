"""A LangChain retriever saved inside a corpus's ``indexes/`` folder is refused (the next
``longctx index`` of the corpus replaces its index folders whole and would delete it), as the
LlamaIndex persist is; beside the corpus, or beside a user's own ``corpus.json`` that is no
corpus's manifest, it is saved as anywhere. Before, the save went through."""

from __future__ import annotations

import json

import pytest
from langchain_core.documents import Document

from langchain_longctx import MixPRRetriever
from longctx.corpus import build_indexes
from longctx.persist import SaveTargetError
from tests.corpus import _build_race as race

DOCS = [
    Document(page_content="Alice fell down the rabbit hole. She found a door.", id="alice"),
    Document(page_content="Bob sailed to the island. He built a hut there.", id="bob"),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus") / "c"
    pairs = [(d.id, d.page_content) for d in DOCS]
    build_indexes(pairs, "mixpr", out, **race.build_options("mixpr", None))
    return out


def _files(d):
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("indexes/mine", "a rebuild leaves 'indexes/mine' alone.* a retriever's persist is not"),
        ("indexes/mixpr/nested", "is inside the index folder 'indexes/mixpr'.* would delete"),
        ("indexes", "is the indexes/ folder of the corpus"),
    ],
)
def test_save_inside_a_corpus_index_folder_is_refused(corpus, where, says):
    """One wording per case: only a folder a rebuild replaces is said to be deleted by it."""
    before = _files(corpus)
    target = corpus / where
    with pytest.raises(SaveTargetError, match=says) as err:
        MixPRRetriever.from_documents(DOCS).save(target)
    assert repr(str(target)) in str(err.value) and "outside the corpus's indexes/" in str(err.value)
    assert _files(corpus) == before
    assert race.corpus_state(corpus, "mixpr")[0] == "ok"


def test_save_beside_a_corpus_or_a_users_corpus_json_works(corpus, tmp_path):
    proj = tmp_path / "proj"
    (proj / "indexes").mkdir(parents=True)
    (proj / "corpus.json").write_text(json.dumps([{"text": "my own data, not a corpus"}]))
    for target in (corpus.parent / "beside", proj / "indexes" / "mine"):
        MixPRRetriever.from_documents(DOCS, k=1).save(target)
        got = MixPRRetriever.load(target).invoke("Where did Bob sail?")
        assert len(got) == 1 and "Bob sailed" in got[0].page_content
