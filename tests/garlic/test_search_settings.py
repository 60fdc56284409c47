"""GARLIC's search settings have their bounds in one place (``longctx.garlic.options``):
LangChain's ``GarlicRetriever`` refuses what LlamaIndex's ``GarlicIndex`` refuses, with the
same message naming the argument (it took ``stop_patience=2_000_000``, ``max_context_tokens=
2**31``, ``stop_patience=True``, which the index refused since session 20)."""

from __future__ import annotations

import re

import pytest

from longctx.garlic.options import SEARCH_SETTINGS_MAX, check_search_settings

BAD = [
    {"stop_patience": SEARCH_SETTINGS_MAX["stop_patience"] + 1},
    {"stop_patience": 0},
    {"stop_patience": True},
    {"stop_patience": "3"},
    {"alpha": 1.5},
    {"alpha": float("nan")},
    {"alpha": "x"},
    {"max_context_tokens": 2**31},
    {"max_context_tokens": 0},
    {"max_context_tokens": 2.0},
]


def _refusal(make, setting) -> Exception:
    with pytest.raises((TypeError, ValueError)) as info:
        make(**setting)
    return info.value


@pytest.mark.parametrize(
    "setting", BAD, ids=lambda s: f"{next(iter(s))}={next(iter(s.values()))!r}"
)
def test_langchain_refuses_what_llamaindex_refuses_with_the_same_message(setting):
    from langchain_longctx import GarlicRetriever
    from llamaindex_longctx import GarlicIndex

    with pytest.raises((TypeError, ValueError)) as core:
        check_search_settings(setting)
    want = str(core.value)
    (name,) = setting
    assert want.startswith(f"{name} must ")
    index = _refusal(lambda **kw: GarlicIndex(nodes=[], **kw), setting)
    assert type(index) is type(core.value) and str(index) == want
    retriever = _refusal(lambda **kw: GarlicRetriever(documents=[], **kw), setting)
    assert isinstance(retriever, type(core.value))  # pydantic's ValidationError is a ValueError
    assert re.search(rf"(^|Value error, ){re.escape(want)}", str(retriever)), str(retriever)


def test_the_bounds_themselves_are_taken_by_both():
    from langchain_longctx import GarlicRetriever

    top = {"stop_patience": SEARCH_SETTINGS_MAX["stop_patience"], "alpha": 1.0,
           "max_context_tokens": SEARCH_SETTINGS_MAX["max_context_tokens"]}  # fmt: skip
    assert check_search_settings(top) == top
    r = GarlicRetriever(documents=[], **top)
    assert (r.stop_patience, r.alpha, r.max_context_tokens) == tuple(top.values())
    with pytest.raises(TypeError, match="unknown GARLIC search settings"):
        check_search_settings({"temperature": 1.0})


def test_the_defaults_are_one_table():
    """``SEARCH_DEFAULTS`` is the default of ``GarlicSearcher``'s arguments and of LangChain's
    ``GarlicRetriever``'s fields (the two spelled them out, apart from the table); the
    LlamaIndex module's former names are aliases of the core's (removed in session 20)."""
    import inspect

    from langchain_longctx import GarlicRetriever
    from llamaindex_longctx import garlic_index
    from longctx.garlic.options import SEARCH_DEFAULTS
    from longctx.garlic.search import GarlicSearcher

    params = inspect.signature(GarlicSearcher).parameters
    assert {k: params[k].default for k in SEARCH_DEFAULTS} == SEARCH_DEFAULTS
    fields = GarlicRetriever.model_fields
    shared = [k for k in SEARCH_DEFAULTS if k in fields]
    assert shared == ["alpha", "stop_patience", "max_context_tokens"]  # no answer: no max_new
    assert {k: fields[k].default for k in shared} == {k: SEARCH_DEFAULTS[k] for k in shared}
    assert garlic_index.SEARCH_DEFAULTS is SEARCH_DEFAULTS
    assert garlic_index.SETTINGS_MAX is SEARCH_SETTINGS_MAX
