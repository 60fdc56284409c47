"""langchain_longctx._persist: metadata that JSON cannot store is refused before anything is
written, naming the document and the key (issue 28)."""

from __future__ import annotations

import datetime
import math

import numpy as np
import pytest
from langchain_core.documents import Document

from langchain_longctx import MixPRRetriever

STORY = "Mary moved to the bathroom. John went to the hallway. The milk was cold."


@pytest.mark.parametrize(
    ("value", "error", "what"),
    [
        (datetime.datetime(2024, 1, 2), TypeError, "datetime"),
        ({"a", "b"}, TypeError, "set"),
        (b"raw", TypeError, "bytes"),
        (math.nan, ValueError, "nan"),
        (math.inf, ValueError, "inf"),
        (np.int64(3), TypeError, "numpy.int64"),
        ({"deep": [1, {"x": object()}]}, TypeError, r"\['deep'\]\[1\]\['x'\].*object"),
    ],
)
def test_non_json_metadata_names_document_and_key(tmp_path, value, error, what):
    docs = [
        Document(page_content=STORY, id="ok", metadata={"page": 1}),
        Document(page_content=STORY, id="doc-b", metadata={"page": 2, "when": value}),
    ]
    r = MixPRRetriever(documents=docs, k=2)
    with pytest.raises(error, match=rf"documents\[1\] \(id 'doc-b'\).*'when'.*{what}"):
        r.save(tmp_path / "r")
    assert not (tmp_path / "r").exists() and list(tmp_path.iterdir()) == []


def test_a_non_str_metadata_key_is_refused_not_stringified(tmp_path):
    docs = [Document(page_content=STORY, id="a", metadata={1: "one"})]
    with pytest.raises(TypeError, match=r"documents\[0\] \(id 'a'\).*key 1 \(int\).*\"1\""):
        MixPRRetriever(documents=docs, k=2).save(tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_json_metadata_round_trips(tmp_path):
    meta = {"page": 1, "score": 0.5, "tags": ["a", "b"], "src": {"u": None, "ok": True}}
    docs = [Document(page_content=STORY, id="a", metadata=meta)]
    MixPRRetriever(documents=docs, k=2).save(tmp_path / "r")
    assert MixPRRetriever.load(tmp_path / "r").documents[0].metadata == meta
