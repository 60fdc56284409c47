"""Metadata filters (longctx.filters): LlamaIndex's semantics checked against its own filter
function, set lookups for list operators, a true nesting limit, and a mask cache whose memory is
bounded."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.filters import (
    MAX_DEPTH,
    MetadataFilter,
    MetadataFilters,
    compile_filter,
    filter_digest,
)

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.5, 1.0, 2.5, -1.5]),
    st.text("abAB", max_size=3),
)
META_VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=4),
    st.dictionaries(st.text("ab", max_size=2), SCALARS, max_size=2),
)
METADATA = st.dictionaries(st.sampled_from(["a", "b", "c"]), META_VALUES, max_size=3)
FILTER_SCALARS = st.one_of(
    st.integers(-3, 3), st.sampled_from([0.5, 1.0, 2.5]), st.text("abAB", max_size=3)
)
FILTER_LISTS = st.one_of(
    st.lists(st.integers(-3, 3), max_size=3),
    st.lists(st.sampled_from([0.5, 1.0, 2.5]), max_size=3),
    st.lists(st.text("abAB", max_size=3), max_size=3),
)


@st.composite
def llama_filter(draw):
    from llama_index.core.vector_stores.types import FilterOperator
    from llama_index.core.vector_stores.types import MetadataFilter as LIFilter

    op = draw(st.sampled_from(list(FilterOperator)))
    if op.value in ("in", "nin", "any", "all"):
        value = draw(FILTER_LISTS)
    elif op.value.startswith("text_match"):
        value = draw(st.text("abAB", max_size=3))
    elif op.value == "is_empty":
        value = None
    elif op.value == "contains":
        value = draw(st.one_of(FILTER_SCALARS, FILTER_LISTS))
    else:
        value = draw(FILTER_SCALARS)
    return LIFilter(key=draw(st.sampled_from(["a", "b", "c"])), value=value, operator=op)


def _llama_keeps(li, md) -> bool:
    """LlamaIndex's filter function, each filter alone (a comparison Python refuses raises a
    TypeError there and is false here, so under "not" it cannot sink the whole filter), the
    results joined by the condition as LlamaIndex joins them."""
    from llama_index.core.vector_stores.types import MetadataFilters as LIFilters
    from llama_index.core.vector_stores.utils import build_metadata_filter_fn

    got = []
    for f in li.filters:
        fn = build_metadata_filter_fn(lambda _: md, LIFilters(filters=[f]))
        try:
            got.append(bool(fn("x")))
        except TypeError:
            got.append(False)
    if li.condition.value == "and":
        return all(got)
    return any(got) if li.condition.value == "or" else not any(got)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    filters=st.lists(llama_filter(), min_size=1, max_size=3),
    condition=st.sampled_from(["and", "or", "not"]),
    metadatas=st.lists(METADATA, min_size=1, max_size=4),
)
def test_our_mask_equals_llamaindex_on_random_metadata_and_filters(filters, condition, metadatas):
    pytest.importorskip("llama_index.core")
    from llama_index.core.vector_stores.types import FilterCondition
    from llama_index.core.vector_stores.types import MetadataFilters as LIFilters

    li = LIFilters(filters=filters, condition=FilterCondition(condition))
    pred = compile_filter(li)
    for md in metadatas:
        assert pred(md) == _llama_keeps(li, md), (md, li)


def test_the_reported_semantic_differences_follow_llamaindex():
    # ordered operators on bool metadata: Python's True >= 1
    assert compile_filter(MetadataFilter("x", 1, ">="))({"x": True})
    assert not compile_filter(MetadataFilter("x", 1, ">"))({"x": True})
    # any / all on a str value test substrings
    assert compile_filter(MetadataFilter("x", ["ob", "zz"], "any"))({"x": "Bob"})
    assert not compile_filter(MetadataFilter("x", ["ob", "zz"], "all"))({"x": "Bob"})
    assert compile_filter(MetadataFilter("x", ["B", "ob"], "all"))({"x": "Bob"})
    # contains on a dict tests its keys; incomparable types are false, not an error
    assert compile_filter(MetadataFilter("x", "k", "contains"))({"x": {"k": 1}})
    assert not compile_filter(MetadataFilter("x", 1, "<"))({"x": "a"})


def _nested_and(levels: int) -> dict:
    f: dict = {"a": 1}
    for _ in range(levels - 1):
        f = {"$and": [f]}
    return f


def test_nesting_limit_counts_the_levels_the_filter_has():
    keep = compile_filter(_nested_and(16))
    assert keep({"a": 1}) and not keep({"a": 2})
    compile_filter(_nested_and(MAX_DEPTH))  # exactly the limit: accepted
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels deep"):
        compile_filter(_nested_and(MAX_DEPTH + 1))
    g = MetadataFilter("a", 1)
    for _ in range(MAX_DEPTH):
        g = MetadataFilters((g,), "and")
    compile_filter(g)
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels deep"):
        compile_filter(MetadataFilters((g,), "or"))
    loop: dict = {}
    loop["$not"] = loop
    with pytest.raises(ValueError, match="levels deep"):
        compile_filter(loop)


def test_unhashable_list_values_are_named():
    with pytest.raises(TypeError, match=r"'tags' 'in': value\[1\] is a list"):
        MetadataFilter("tags", ["a", ["b"]], "in")
    with pytest.raises(TypeError, match=r"value\[0\] is a dict"):
        compile_filter({"tags": {"$nin": [{"x": 1}]}})
    # an unhashable metadata value is simply not among the (hashable) filter values
    assert not compile_filter({"x": {"$in": [1]}})({"x": [1]})
    assert compile_filter({"x": {"$nin": [1]}})({"x": [1]})


def _in_time(n_docs: int, n_values: int) -> float:
    mds = [{"n": i} for i in range(n_docs)]
    flt = {"n": {"$in": list(range(-n_values, 0)) + [7]}}
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        keep = compile_filter(flt)
        got = [i for i, md in enumerate(mds) if keep(md)]
        best = min(best, time.perf_counter() - t0)
    assert got == [7]
    return best


def test_in_costs_the_filter_plus_the_documents_not_their_product():
    # a scan would cost n_docs * n_values: 16 times more for 4x both; lookups cost 4 times more
    small, large = _in_time(2_000, 20_000), _in_time(8_000, 80_000)
    assert large / small < 8, (small, large)


def test_digest_is_the_same_for_equal_filters_and_none_for_callables():
    a = filter_digest({"author": "Austen", "year": {"$gte": 1800}})
    b = filter_digest(
        MetadataFilters(
            (MetadataFilter("author", "Austen"), MetadataFilter("year", 1800, ">=")), "and"
        )
    )
    assert a == b and len(a) == 32
    assert filter_digest({"year": {"$gte": 1800.0}}) != filter_digest({"year": {"$gte": 1800}})
    assert filter_digest({"x": True}) != filter_digest({"x": 1})
    assert filter_digest(lambda md: True) is None
    assert filter_digest({"x": object()}) is None


def test_mask_cache_is_bounded_in_memory(monkeypatch):
    import longctx.mixpr.scoring as scoring
    from longctx.mixpr import MixPRIndex

    texts = [f"document number {i} about whales and ships" for i in range(50)]
    index = MixPRIndex.from_texts(texts, metadatas=[{"n": i} for i in range(50)])
    block = (index.unit_mask({"n": 1}), index._state.block)[1]
    per_entry = index.n_units + scoring._MASK_OVERHEAD
    monkeypatch.setattr(scoring, "MAX_MASK_CACHE_BYTES", 5 * per_entry)
    big = list(range(100, 300_100))
    for i in range(64):  # distinct 300k-entry $in lists, as in the report
        flt = {"n": {"$in": big + [i]}}
        want = np.isin(index.unit_source, [i])
        assert (index.unit_mask(flt) == want).all()
    assert len(block._masks) <= 5 and block._mask_bytes <= 5 * per_entry
    assert all(isinstance(k, bytes) and len(k) == 32 for k in block._masks)
    monkeypatch.setattr(scoring, "MAX_MASK_CACHE_BYTES", per_entry - 1)
    index.unit_mask({"n": 2})  # larger than the cache: computed, not kept
    assert filter_digest({"n": 2}) not in block._masks
