"""An argument a LlamaIndex postprocessor or embedding does not take is an error naming it, never
ignored: before, ``DiversityPostprocessor(similarity_top_k=2)`` kept 5 nodes and
``DiversityPostprocessor(mmr_threshold=0.2)`` (LlamaIndex's own MMR name) ran at 0.5."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from llamaindex_longctx import DiversityPostprocessor, LongctxEmbedding, YouraPostprocessor


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: DiversityPostprocessor(similarity_top_k=2), "similarity_top_k"),
        (lambda: DiversityPostprocessor(mmr_threshold=0.2), "mmr_threshold"),
        (lambda: YouraPostprocessor(similarity_top_k=2, scorer=object()), "similarity_top_k"),
        (lambda: LongctxEmbedding(batchsize=8), "batchsize"),
    ],
)
def test_unknown_argument_is_named(make, name):
    with pytest.raises(ValidationError, match=name) as err:
        make()
    assert "Extra inputs are not permitted" in str(err.value)


def test_known_arguments_still_build():
    pp = DiversityPostprocessor(method="fps", lambda_=0.3, window=2, top_n=3)
    assert (pp.method, pp.lambda_, pp.window, pp.top_n) == ("fps", 0.3, 2, 3)
