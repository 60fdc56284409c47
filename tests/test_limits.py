"""Issue 44, items 2, 3, 4 and 8: every limit the API accepts saves and loads again (one source
for each limit), every float setting is finite and in its documented range (at construction and
at load), saved filters are read as strictly as they are written, the CLI's JSON is strict JSON,
and a Ray address that does not answer is one error within seconds."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.checks import MAX_WEIGHT
from longctx.filters import (
    CONDITIONS,
    MAX_DEPTH,
    OPERATORS,
    MetadataFilter,
    MetadataFilters,
    compile_filter,
)
from longctx.filters_persist import filter_from_json, filter_to_json
from longctx.mixpr import MixPRIndex
from longctx.mixpr.config import MAX_POWER, MixPRConfig
from longctx.mixpr.multihop import MultiHopWalk
from longctx.persist import MAX_JSON_DEPTH, MAX_METADATA_DEPTH, PersistError, parse_json, write_dir
from longctx.persist.format import SAVED_FILTER_DEPTH
from longctx.persist.reader import open_index_dir
from tests._persist_helpers import edit_json, restamp

PASSAGES = [
    "Kiss and Tell\nA 1945 film starring Shirley Temple as Corliss Archer.",
    "Meet Millie\nA radio comedy about a woman who held a government job.",
    "Shirley Temple\nAn actress who became Chief of Protocol.",
    "Corliss Archer\nA fictional teenager of radio and film.",
]
QUESTION = "What government position was held by the woman who starred in Kiss and Tell?"


def dict_filter(depth: int) -> dict:
    """A LangChain / Chroma filter dict ``depth`` groups deep (the innermost a condition group)."""
    f: dict = {"author": {"$ne": "Doyle"}}
    for _ in range(depth - 1):
        f = {"$and": [f]}
    return f


def deep_metadata(depth: int) -> dict:
    """A metadata dict whose dicts and lists nest ``depth`` levels (the dict itself is 1)."""
    md: dict = {"leaf": [1]}
    for _ in range(depth - 2):
        md = {"a": md}
    return md


def _float_fields(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.type in ("float", "float | None")]


# -- item 3: every float setting finite, in its range, at construction and at load -------------
@pytest.mark.parametrize(
    "cls, name",
    [(MixPRConfig, n) for n in _float_fields(MixPRConfig)]
    + [(MultiHopWalk, n) for n in _float_fields(MultiHopWalk)],
)
def test_every_float_setting_refuses_nan_and_infinity_naming_it(cls, name):
    for bad in (float("inf"), float("-inf"), float("nan"), 10**400):
        with pytest.raises(ValueError, match=name):
            cls(**{name: bad})


def test_weights_and_powers_have_a_documented_upper_bound():
    for name in ("lexical_weight", "dense_weight", "dense_restart"):
        MixPRConfig(**{name: MAX_WEIGHT})
        with pytest.raises(ValueError, match=f"{name} must be in"):
            MixPRConfig(**{name: MAX_WEIGHT * 2})
    for name in ("coverage_power", "graph_idf_power"):
        MixPRConfig(**{name: MAX_POWER})
        with pytest.raises(ValueError, match=f"{name} must be in"):
            MixPRConfig(**{name: MAX_POWER * 2})
    for name in ("head_weight", "link_boost", "phrase_seed", "lexical_weight", "dense_weight"):
        MultiHopWalk(**{name: MAX_WEIGHT})
        with pytest.raises(ValueError, match=f"{name} must be in"):
            MultiHopWalk(**{name: 1e300})
    # the reproduction: inf scored [nan, nan, nan, inf]; now refused before the build
    with pytest.raises(ValueError, match="lexical_weight must be a finite number"):
        MixPRIndex.from_texts(PASSAGES, lexical_weight=float("inf"))
    with pytest.raises(ValueError, match="head_weight must be a finite number"):
        MixPRIndex.from_texts(PASSAGES, walk="multihop", multihop={"head_weight": math.inf})


_EDGES = st.sampled_from([0.0, 1e-300, 1.0, MAX_WEIGHT])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lexical=_EDGES,
    dense=_EDGES,
    restart=_EDGES,
    power=st.sampled_from([0.0, 1e-300, 4.0, MAX_POWER]),
    idf_power=st.sampled_from([0.0, 4.0, MAX_POWER]),
    walk=st.sampled_from(["pagerank", "multihop"]),
    mh=st.fixed_dictionaries(
        {
            k: _EDGES
            for k in ("head_weight", "link_boost", "phrase_seed", "lexical_weight", "dense_weight")
        }
    ),
)
def test_any_setting_in_its_range_gives_finite_scores(
    lexical, dense, restart, power, idf_power, walk, mh
):
    index = MixPRIndex.from_texts(
        PASSAGES,
        chunk=False,
        lexical_weight=lexical,
        dense_weight=dense,
        dense_restart=restart,
        coverage_power=power,
        graph_idf_power=idf_power,
        walk=walk,
        multihop=mh,
    )
    with np.errstate(all="raise"):  # an overflow or 0/0 on the way fails too
        scores = [h.score for h in index.search(QUESTION, k=4).hits]
    assert scores and all(math.isfinite(s) for s in scores)


def test_a_saved_setting_beyond_the_float_range_is_a_persist_error(tmp_path):
    d = tmp_path / "idx"
    MixPRIndex.from_texts(PASSAGES, chunk=False).save(d)

    def overflow(field):
        def edit(cfg):
            cfg[field] = 1.5  # then written as 1e400 below: json.dumps cannot write it
            return cfg

        edit_json(d / "config.json", edit)
        raw = (d / "config.json").read_text("utf-8").replace(f'"{field}": 1.5', f'"{field}": 1e400')
        (d / "config.json").write_text(raw, "utf-8")
        restamp(d)

    overflow("lexical_weight")
    with pytest.raises(PersistError, match="config.json.*beyond the range of a 64-bit float"):
        MixPRIndex.load(d)
    # a finite value out of range: refused as a PersistError naming the field, not at search
    edit_json(d / "config.json", lambda c: {**c, "lexical_weight": 1e300})
    with pytest.raises(PersistError, match="config.json.*lexical_weight must be in"):
        MixPRIndex.load(d)
    edit_json(
        d / "config.json",
        lambda c: {**c, "lexical_weight": 0.25, "multihop": [["head_weight", 1e300]]},
    )
    with pytest.raises(PersistError, match="config.json.*head_weight must be in"):
        MixPRIndex.load(d)


def test_parse_json_refuses_numbers_beyond_the_float_range():
    for text in ("1e400", "-1e400", '{"a": [1, 2e308]}'):
        with pytest.raises(PersistError, match="beyond the range of a 64-bit float"):
            parse_json(text, "x.json")
    assert parse_json("[1.7e308, -1e-400, 1e308]", "x.json") == [1.7e308, -0.0, 1e308]


# -- item 2: every limit the API accepts round-trips ------------------------------------------
def _leaf(draw, key: str) -> MetadataFilter:
    op = draw(st.sampled_from(OPERATORS))
    scalar = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**18), 10**18),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=5),
    )
    if op in ("in", "nin", "any", "all"):
        value = draw(st.lists(scalar, max_size=3))
    elif op in (">", ">=", "<", "<="):
        value = draw(
            st.one_of(st.integers(-100, 100), st.floats(-1e300, 1e300), st.text(max_size=3))
        )
    elif op.startswith("text_match"):
        value = draw(st.text(max_size=5))
    else:
        value = draw(scalar)
    return MetadataFilter(key, value, op)


@st.composite
def filters_up_to_the_limit(draw):
    """A chain of groups ``depth`` deep (the limit itself drawn often), each with a few
    conditions beside the next group; the innermost holds a list operator (its deepest JSON)."""
    depth = draw(st.one_of(st.just(MAX_DEPTH), st.integers(1, MAX_DEPTH)))
    inner = MetadataFilters(
        (MetadataFilter("k0", [1, "a"], "in"),), draw(st.sampled_from(CONDITIONS))
    )
    for level in range(depth - 1):
        beside = [_leaf(draw, f"k{level % 3}") for _ in range(draw(st.integers(0, 2)))]
        inner = MetadataFilters((*beside, inner), draw(st.sampled_from(CONDITIONS)))
    return depth, inner


def _json_depth(x) -> int:
    if isinstance(x, dict):
        return 1 + max((_json_depth(v) for v in x.values()), default=0)
    if isinstance(x, list):
        return 1 + max((_json_depth(v) for v in x), default=0)
    return 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=filters_up_to_the_limit(),
    md=st.dictionaries(
        st.sampled_from(["k0", "k1", "k2"]), st.integers(-3, 3) | st.text(max_size=2)
    ),
)
def test_any_filter_the_api_accepts_saves_and_loads_with_the_same_meaning(
    tmp_path_factory, case, md
):
    depth, f = case
    pred = compile_filter(f)  # accepted by the API
    saved = filter_to_json(f)
    assert _json_depth(saved) <= SAVED_FILTER_DEPTH  # the levels the reader's limit counts on
    d = tmp_path_factory.mktemp("f") / "r"
    write_dir(d, kind="test.filters", version=1, json_files={"retriever": {"filters": saved}})
    raw = open_index_dir(d, kind="test.filters", versions=(1,)).json("retriever.json")
    loaded = filter_from_json(raw["filters"], "retriever.json")
    assert filter_to_json(loaded) == saved
    assert compile_filter(loaded)(md) == pred(md)


def test_a_filter_one_group_deeper_than_the_limit_is_refused_on_both_sides():
    f = MetadataFilters((MetadataFilter("a", 1),))
    for _ in range(MAX_DEPTH):
        f = MetadataFilters((f,))
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels"):
        compile_filter(f)
    with pytest.raises(ValueError, match=f"more than {MAX_DEPTH} levels"):
        filter_to_json(f)  # never written
    raw = {"condition": "and", "filters": [{"key": "a", "operator": "==", "value": 1}]}
    for _ in range(MAX_DEPTH):
        raw = {"condition": "and", "filters": [raw]}
    with pytest.raises(PersistError, match=f"more than {MAX_DEPTH} levels"):
        filter_from_json(raw, "retriever.json")
    assert filter_from_json(raw["filters"][0], "retriever.json") is not None  # the limit: read


def test_metadata_nested_to_the_limit_saves_and_loads(tmp_path):
    md: dict = {"leaf": 1}
    for _ in range(MAX_METADATA_DEPTH - 1):
        md = {"a": md}
    index = MixPRIndex.from_texts(PASSAGES[:2], metadatas=[md, {}], ids=["a", "b"])
    index.save(tmp_path / "i")
    assert MixPRIndex.load(tmp_path / "i").metadatas[0] == md
    with pytest.raises(ValueError, match=f"more than {MAX_METADATA_DEPTH} levels"):
        MixPRIndex.from_texts(PASSAGES[:2], metadatas=[{"a": md}, {}], ids=["a", "b"])


def test_the_json_limit_is_derived_from_the_api_limits():
    assert MAX_JSON_DEPTH >= SAVED_FILTER_DEPTH + 3  # retriever.json's object around a filter
    assert MAX_JSON_DEPTH >= MAX_METADATA_DEPTH + 6  # a LlamaIndex node's relationship metadata


def test_a_save_refuses_what_its_load_would_refuse_and_keeps_the_old_index(tmp_path, monkeypatch):
    from longctx.persist import writer

    d = tmp_path / "x"
    write_dir(d, kind="test.limits", version=1, json_files={"a": [1]})
    deep: list = [1]
    for _ in range(MAX_JSON_DEPTH):
        deep = [deep]
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_JSON_DEPTH}.*a load refuses"):
        write_dir(d, kind="test.limits", version=1, json_files={"a": deep})
    monkeypatch.setattr(writer, "MAX_JSON_BYTES", 100)
    with pytest.raises(ValueError, match="over the limit of 100 that a load accepts"):
        write_dir(d, kind="test.limits", version=1, json_files={"a": ["x" * 200]})
    monkeypatch.setattr(writer, "MAX_ARRAY_BYTES", 64)
    with pytest.raises(ValueError, match="array 'v'.*over the limit of 64"):
        write_dir(d, kind="test.limits", version=1, arrays={"arr": {"v": np.zeros(9)}})
    assert open_index_dir(d, kind="test.limits", versions=(1,)).json("a.json") == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]  # no temporary left


def test_max_shards_is_one_constant():
    from longctx.corpus.shards import build, index, persist

    assert build.MAX_SHARDS is persist.MAX_SHARDS and index.MAX_SHARDS is persist.MAX_SHARDS


# -- item 8: saved filters read as strictly as they are written -------------------------------
@pytest.mark.parametrize("cond", [None, "", 0, False, "AND", ["and"]])
def test_a_saved_condition_that_the_save_never_writes_is_refused(cond):
    raw = {"condition": cond, "filters": [{"key": "a", "operator": "==", "value": 1}]}
    with pytest.raises(PersistError, match="'condition' must be one of"):
        filter_from_json(raw, "retriever.json")


@pytest.mark.parametrize(
    "leaf, match",
    [
        ({"key": "a", "operator": "==", "value": math.inf}, "not a finite number"),
        ({"key": "a", "operator": "in", "value": [1, -math.inf]}, "not a finite number"),
        ({"key": "a", "operator": "==", "value": {"x": 1}}, "JSON scalar"),
        ({"key": 1, "operator": "==", "value": 1}, "'key' must be a non-empty str"),
        ({"key": "a", "operator": None, "value": 1}, "unknown operator"),
        ({"key": "a", "operator": "$eq", "value": 1}, "unknown operator"),
        ({"key": "a", "operator": "==", "value": 1, "x": 2}, "'key', 'operator' and 'value'"),
    ],
)
def test_a_saved_condition_with_a_bad_part_is_refused(leaf, match):
    with pytest.raises(PersistError, match=match):
        filter_from_json({"condition": "and", "filters": [leaf]}, "retriever.json")


# -- item 3: the CLI's JSON is strict JSON ------------------------------------------------------
def _strict(text: str):
    def refuse(name):
        raise ValueError(f"{name} in the CLI's JSON")

    return json.loads(text, parse_constant=refuse)


def test_cli_float_flags_refuse_nan_and_infinity(tmp_path, capsys):
    from longctx.cli import main

    f = tmp_path / "t.txt"
    f.write_text(PASSAGES[0], "utf-8")
    for bad in ("inf", "nan", "-1"):
        argv = ["index", str(f), "--method", "mixpr", "--out", str(tmp_path / "c")]
        assert main([*argv, "--gpus-per-worker", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--gpus-per-worker must be a finite number >= 0" in err[0]
    assert not (tmp_path / "c").exists()


def test_cli_json_output_is_strict_json(tmp_path, capsys):
    from longctx.cli import main

    f = tmp_path / "t.txt"
    f.write_text("\n\n".join(PASSAGES), "utf-8")
    assert main(["retrieve", str(f), "-q", QUESTION, "--k", "2", "--format", "json"]) == 0
    out = _strict(capsys.readouterr().out)
    assert all(math.isfinite(p["score"]) for p in out["passages"])


# -- item 4: a Ray address that does not answer ---------------------------------------------------
@pytest.mark.parametrize("address", ["bogus:1", "127.0.0.1:1", "ray://bogus:10001"])
def test_a_ray_address_that_does_not_answer_is_one_error_within_seconds(address):
    from longctx._ray import check_ray_address, start_ray

    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match=f"cannot reach the Ray cluster at {address!r}"):
        check_ray_address(address, timeout=2.0)
    with pytest.raises(ConnectionError, match="cannot reach the Ray cluster"):
        start_ray(None, address)  # before ray.init: no Ray retries
    assert time.perf_counter() - t0 < 10
    for bad in ("", "bogus", "head:notaport", "head:0"):
        with pytest.raises(ValueError, match="ray_address must"):
            check_ray_address(bad)
    check_ray_address("auto")  # Ray's to resolve


def _cli(*argv, cwd: Path):
    return subprocess.run(
        [sys.executable, "-m", "longctx.cli", *argv],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=cwd,
        env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )


def test_cli_search_with_a_bogus_ray_address(tmp_path):
    for i, t in enumerate(PASSAGES):
        (tmp_path / f"p{i}.txt").write_text(t, "utf-8")
    files = [str(tmp_path / f"p{i}.txt") for i in range(len(PASSAGES))]
    for name, extra in (("sharded", ["--shards", "2"]), ("single", ["--ray-address", "bogus:1"])):
        r = _cli(
            "index", *files, "--method", "mixpr", "--out", str(tmp_path / name), "--sequential",
            *extra, cwd=tmp_path,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    assert "warning: ray_address='bogus:1' applies to sharded MixPR corpora" in r.stderr
    t0 = time.perf_counter()
    r = _cli(
        "search",
        str(tmp_path / "sharded"),
        "-q",
        QUESTION,
        "--ray-address",
        "bogus:1",
        cwd=tmp_path,
    )
    took = time.perf_counter() - t0
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Ray cluster at 'bogus:1'" in lines[0], r.stderr
    assert took < 60  # a Python start and a corpus read; it was 828 s
    r = _cli(
        "search", str(tmp_path / "single"), "-q", QUESTION, "--ray-address", "bogus:1", cwd=tmp_path
    )
    assert r.returncode == 0 and "Shirley Temple" in r.stdout
    assert "longctx: warning: ray_address / use_ray apply to corpora built with shards" in r.stderr


# -- JSON values: the byte limit alone let ``[{},{},...]`` parse to 24x its size -----------------
def _values(obj) -> int:
    """Values of parsed JSON ``obj``: containers and scalars, not keys."""
    if isinstance(obj, dict):
        return 1 + sum(_values(v) for v in obj.values())
    if isinstance(obj, list):
        return 1 + sum(_values(v) for v in obj)
    return 1


#: text holding the characters the values bound counts or must skip (``,[{"\\`` and escapes)
_marky_text = st.text(
    alphabet=st.sampled_from(list(',[{}]:"\\ a\n\u00e9\U0001f600')) | st.characters(),
    max_size=8,
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _marky_text,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_marky_text, kids, max_size=4),
    max_leaves=20,
)


def _hex_strings(obj):
    """``obj`` with every string (keys too) as the hex of its UTF-8: one-to-one, no marks."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "surrogatepass").hex()
    if isinstance(obj, dict):
        return {_hex_strings(k): _hex_strings(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_hex_strings(v) for v in obj]
    return obj


@settings(max_examples=300, deadline=None)
@given(_json)
def test_the_counted_values_bound_every_parsed_value(obj):
    """The bound is an upper bound of the values, with strings holding ``,[{"\\`` too, and the
    marks inside strings never count (the recount when the plain count is over)."""
    from longctx.persist.format import json_values_problem

    n = _values(obj)
    outside = sum(json.dumps(_hex_strings(obj)).count(m) for m in ",[{") + 1
    for raw in (
        json.dumps(obj),
        json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    ):
        assert len(raw) >= n  # so the free path under the limit in bytes skips no real excess
        if n >= 2:  # a file of n values is refused at any limit under n
            assert json_values_problem(raw, limit=n - 1) is not None
        assert json_values_problem(raw, limit=outside) is None  # the strings' marks not counted


def test_a_text_full_of_commas_is_not_counted_as_values(tmp_path, monkeypatch):
    """Marks inside strings counted: a file of CSV-like text (LangChain ``documents.json``,
    ``texts.json``) was refused from ~334 MiB and a JSONL line of "0,1,2,..." at any size over
    the limit; ``[{},{},...]`` is still refused."""
    from longctx.corpus.documents import read_documents
    from longctx.persist import format as fmt

    monkeypatch.setattr(fmt, "MAX_JSON_VALUES", 1_000)
    csv = "\n".join(",".join(str(i) for i in range(j, j + 20)) for j in range(200))
    assert csv.count(",") > 3_000
    raw = json.dumps({"texts": [csv, '[{"a": 1}, {"b": "\\"}]', csv]}).encode()
    assert parse_json(raw, "texts.json")["texts"][0] == csv
    assert parse_json(raw.decode(), "texts.json")["texts"][2] == csv  # str input too
    (tmp_path / "d.jsonl").write_text(json.dumps({"id": "a", "text": csv}) + "\n", "utf-8")
    assert [text for _, text in read_documents(tmp_path / "d.jsonl")] == [csv]
    with pytest.raises(PersistError, match=r"'f.json' holds up to 1,001 JSON values"):
        parse_json(("[" + ",".join(["{}"] * 500) + "]").encode(), "f.json")
    with pytest.raises(PersistError, match="holds up to"):  # texts and 999 values outside them
        parse_json(json.dumps([csv] + list(range(999))), "g.json")


def test_a_json_file_of_too_many_values_is_refused_before_parsing(tmp_path, monkeypatch):
    from longctx.persist import format as fmt

    monkeypatch.setattr(fmt, "MAX_JSON_VALUES", 1_000)
    raw = ("[" + ",".join(["{}"] * 1_000) + "]").encode()
    with pytest.raises(
        PersistError, match=r"'f.json' holds up to 2,001 JSON values.*LONGCTX_MAX_JSON_VALUES"
    ):
        parse_json(raw, "f.json")
    assert parse_json(b'["' + b"x" * 5_000 + b'"]', "prose") == ["x" * 5_000]  # bytes, not values
    assert len(parse_json(("[" + ",".join(["{}"] * 499) + "]").encode(), "f.json")) == 499
    d = tmp_path / "x"
    write_dir(d, kind="test.limits", version=1, json_files={"a": [1]})
    with pytest.raises(ValueError, match="cannot save 'a.json': it holds up to .*a load refuses"):
        write_dir(d, kind="test.limits", version=1, json_files={"a": [{}] * 1_000})
    assert open_index_dir(d, kind="test.limits", versions=(1,)).json("a.json") == [1]
    (d / "b.json").write_bytes(raw)  # a file put there by hand: the load path refuses it too
    from longctx.persist.reader import read_json

    with pytest.raises(PersistError, match="JSON values, over the limit of 1,000"):
        read_json(d / "b.json")


def test_the_recount_outside_strings_is_linear_on_an_open_string():
    """A string left open before many ``\\"`` made the recount's pattern start again at each
    later quote and scan to the end: 3.5 s for 48 KB, about 10^7 s for a 100 MB file within
    the byte limit (session 21's review). The open string now runs to the end of the text."""
    import time as _time

    from longctx.persist.format import json_values_problem

    raw = b'"' + b'\\",' * 200_000  # 600 KB: hours before, on the quadratic path
    t0 = _time.perf_counter()
    assert json_values_problem(raw, limit=10) is None  # every comma inside the open string
    assert _time.perf_counter() - t0 < 5  # generous: about 0.03 s here
    with pytest.raises(PersistError, match="damaged or truncated"):  # the parser's own error
        parse_json(b'["a,,,' + b"," * 64, "open.json")
