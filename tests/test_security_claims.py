"""The claims of SECURITY.md and docs/notes/security.md about what a load checks, where and in
what order, one test each (the claim is named in the docstring), with the reproductions of
issue 35 (findings 3, 8 and 11, a shard folder linked out of its corpus, ``count_tokens``'s
memory on long texts).

Tests that edit a saved file rewrite the manifest's digests too (:func:`restamp`: what a forger
does), so they reach the value checks behind the digests."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError, read_arrays, read_sparse
from tests._persist_helpers import (
    TEXTS,
    assert_units_consistent,
    copied,
    edit_json,
    edit_npz,
    garlic_graph,
    mixpr_index,
    npy_header,
    raw_npy,
    restamp,
    traced_peak,
)

MiB = 1 << 20


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A saved MixPR index (token counts included) to copy and damage."""
    d = tmp_path_factory.mktemp("claims") / "idx"
    mixpr_index().save(d, mappable=False)
    return d


@pytest.fixture
def idx(tmp_path, saved):
    """A copy of ``saved`` to damage."""
    return copied(saved, tmp_path / "idx")


def _arrays(d: Path) -> dict:
    with np.load(d / "arrays.npz", allow_pickle=False) as z:
        return {k: z[k].copy() for k in z.files}


def _write_npz(path: Path, **arrays) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    path.write_bytes(buf.getvalue())


def _forged_csc(path: Path, rows: int, cols: int) -> None:
    """A scipy ``.npz`` of a CSC matrix of ``rows`` rows holding nothing (about 1 KB)."""
    _write_npz(
        path,
        format=np.array(b"csc"),
        shape=np.array([rows, cols], dtype=np.int64),
        data=np.zeros(0),
        indices=np.zeros(0, np.int32),
        indptr=np.zeros(cols + 1, np.int32),
    )


# -- where a load starts: the manifest and the digests ----------------------------------------------
def test_claim_a_file_is_checked_against_its_digest_before_it_is_parsed(idx):
    """Claim (order): each file's bytes are checked against the manifest's SHA-256 and size
    before they are parsed, so an edit without a new digest is named as such, whatever it
    holds (here a NaN that the JSON check would refuse too)."""
    cfg = json.loads((idx / "config.json").read_text())
    cfg["tol"] = float("nan")
    (idx / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(PersistError, match=r"config\.json.*SHA-256 digest"):
        MixPRIndex.load(idx)


def test_claim_a_member_that_is_a_link_is_refused_named(idx, tmp_path):
    """Claim: a member of an index folder that is a symbolic link is a PersistError naming
    it, never opened through the link."""
    outside = tmp_path / "outside.json"
    outside.write_text((idx / "texts.json").read_text())
    (idx / "texts.json").unlink()
    os.symlink(outside, idx / "texts.json")
    with pytest.raises(PersistError, match=r"texts\.json.*symbolic link"):
        MixPRIndex.load(idx)


def _set(key, value):
    def edit(d):
        d[key] = value

    return edit


def _drop(key):
    def edit(d):
        del d[key]

    return edit


def manifest_edits(member: str) -> list:
    """``(file, edit, match)`` of the manifest edits a load refuses in every format
    (``member``: a file the manifest lists)."""
    return [
        ("manifest.json", lambda m: [m], r"manifest\.json.*not a longctx manifest"),
        ("manifest.json", lambda m: m["digests"].pop(member) and None, r"'digests' lacks"),
        ("manifest.json", _set("format_version", 99), r"format version 99"),
        ("manifest.json", _set("format_version", 1), r"format version 1.*rebuild"),
    ]


@pytest.mark.parametrize(
    "name, edit, match",
    [
        *manifest_edits("texts.json"),
        ("texts.json", lambda t: {"a": 1}, r"texts\.json.*'texts'"),
        ("texts.json", lambda t: [t[0], "  \n "], r"texts\.json.*non-whitespace"),
        ("config.json", _set("token_counter", 5), r"config\.json.*'token_counter'"),
        ("config.json", _set("chunk", "yes"), r"config\.json.*'chunk'"),
        ("config.json", _set("surprise", 1), r"config\.json.*unknown field"),
        ("config.json", _drop("alpha_local"), r"config\.json.*missing field"),
        ("config.json", _set("encoder", 3), r"config\.json.*'encoder'"),
        ("documents.json", _set("extra", 1), r"documents\.json.*unknown field"),
        ("documents.json", lambda d: d["ids"].__setitem__(1, d["ids"][0]), r"'ids'.*unique"),
        ("documents.json", _set("metadata", [1, 2]), r"documents\.json.*'metadata'"),
        ("vocabulary.json", lambda v: v.__setitem__(1, v[0]), r"'terms' has duplicates"),
    ],
)
def test_claim_each_mixpr_file_is_typed_and_checked_field_by_field(idx, name, edit, match):
    """Claim (steps 2-6 and 12-18 of docs/notes/security.md): the manifest (an object, digests
    for every file, the format version; version 1 says to rebuild), the settings (typed, no
    unknown or missing field), the texts, the documents (ids unique, metadata objects) and the
    vocabulary (unique) are each a PersistError naming the file and the field."""
    edit_json(idx / name, edit, stamp=name != "manifest.json")
    with pytest.raises(PersistError, match=match):
        MixPRIndex.load(idx)


def test_claim_settings_are_checked_before_the_unit_arrays(idx):
    """Claim (order): the settings (step 14) are checked before the unit arrays (step 17): an
    index damaged in both reports ``config.json``."""
    edit_npz(idx / "arrays.npz", **units_edit(_arrays(idx), "overlap"), stamp=False)
    edit_json(idx / "config.json", _set("max_iter", 10**9))
    with pytest.raises(PersistError, match=r"config\.json.*max_iter"):
        MixPRIndex.load(idx)


def test_claim_term_counts_are_whole_numbers_of_at_least_one(idx):
    """Claim (step 19): ``terms.npz`` holds whole counts >= 1."""
    with np.load(idx / "terms.npz", allow_pickle=False) as z:
        data = z["data"].copy()
    data[0] = 0.5
    edit_npz(idx / "terms.npz", data=data)
    with pytest.raises(PersistError, match=r"terms\.npz.*whole numbers"):
        MixPRIndex.load(idx)


# -- .npz: headers, then arrays ---------------------------------------------------------------------
def test_claim_npy_headers_are_bounded_before_any_array_is_read(tmp_path):
    """Claim: every ``.npy`` header of an ``.npz`` is read first and its shape x itemsize
    checked against the bytes stored; a header claiming 8 TB over 8 bytes is refused without
    allocating it."""
    from tests._persist_helpers import forged_npy_header_npz

    p = tmp_path / "x.npz"
    forged_npy_header_npz(p, "starts", (10**12,), "<i8")
    peak, err = traced_peak(lambda: read_arrays(p, ["starts"]))
    assert isinstance(err, PersistError) and "claims shape" in str(err)
    assert peak < 8 * MiB


@pytest.mark.parametrize(
    "header",
    [
        "{'descr': '<i8', 'fortran_order': False, 'shape': (8,), ",  # unclosed: TokenError
        "{" * 5000 + "}" * 5000,  # nested: RecursionError or a too-complex literal
        "__import__('os').system('touch PWNED')",
        npy_header("__import__('os').getcwd()", "(1,)"),
        npy_header("'<i8'", "(" * 400 + "1" + ",)" * 400),
    ],
)
def test_claim_a_forged_npz_header_is_one_persist_error(idx, header):
    """Claim: an ``.npz`` member whose ``.npy`` header is no literal dict (unclosed, nested,
    code) is a PersistError naming the file and the array, its code never run, whatever
    numpy's parser raises (an unclosed bracket raised ``tokenize.TokenError``); the
    format-3 twin is ``test_f3_npy_headers_are_bounded_and_typed_before_any_value_is_read``."""
    raw = raw_npy(header, b"\0" * 64)
    with zipfile.ZipFile(idx / "arrays.npz", "a") as zf:
        zf.writestr("forged.npy", raw)
    restamp(idx)
    with pytest.raises(PersistError, match=r"arrays\.npz.*'forged'"):
        MixPRIndex.load(idx)
    assert not Path("PWNED").exists()


def test_claim_object_dtypes_are_refused_and_nothing_is_unpickled(tmp_path):
    """Claim: ``allow_pickle=False`` and no object dtype: an ``.npz`` holding a pickled object
    array is a PersistError, the pickle never runs."""
    p = tmp_path / "x.npz"
    np.savez(p, starts=np.array([{"a": 1}], dtype=object))
    with pytest.raises(PersistError, match=r"x\.npz.*'starts'.*not a plain one"):
        read_arrays(p, ["starts"])


@pytest.mark.parametrize(
    "dtype",
    [object, [("a", "<i4")], [("a", "<i4", (2,))], "V4", "<M8[s]", "<m8[s]", "<c16"],
    ids=["object", "structured", "subarray-field", "void", "datetime", "timedelta", "complex"],
)
def test_claim_only_plain_number_and_string_dtypes_are_read(tmp_path, dtype):
    """Claim: an ``.npz`` member of a dtype other than bool, int, uint, float or string (an
    object, a structured dtype, with a subarray field or not, raw bytes, a date, a complex
    number) is a PersistError naming the array, its values never read: the dtype's kind refuses
    each of these (``S0`` / ``U0``, of an allowed kind: ``test_persist``; a plain kind with
    fields: the test below)."""
    p = tmp_path / "x.npz"
    arr = np.zeros(3, dtype=np.dtype(dtype)) if dtype is not object else np.array([1], object)
    np.savez(p, starts=arr)
    with pytest.raises(PersistError, match=r"x\.npz.*'starts'.*not a plain one"):
        read_arrays(p, ["starts"])


@pytest.mark.parametrize(
    "descr",
    [
        ("<i8", [("lo", "<i4"), ("hi", "<i4")]),
        ("<f8", [("x", "<i8")]),
        ("|S3", [("c", "|u1"), ("d", "|u1"), ("e", "|u1")]),
        ("<i8", (1,)),
    ],
    ids=["int64-fields", "float64-fields", "S3-fields", "subarray"],
)
def test_claim_a_plain_kind_with_fields_or_a_subarray_is_refused(tmp_path, descr):
    """Claim: a header ``descr`` of a plain kind with fields (``('<i8', [('lo', '<i4'), ('hi',
    '<i4')])``: kind ``i``, equal to int64) or a sub-array is a PersistError naming the array,
    as the structured dtypes above; ``np.savez`` cannot write such a header, a forger can (the
    member's header is written by hand). Before, the first three loaded as plain arrays."""
    from tests._persist_helpers import forged_npy_header_npz

    p = tmp_path / "x.npz"
    forged_npy_header_npz(p, "starts", (1,), descr)  # 8 bytes of values: exactly 1 x 8
    with pytest.raises(PersistError, match=r"x\.npz.*'starts'.*not a plain one"):
        read_arrays(p, ["starts"])


# -- sparse matrices (finding 3) -------------------------------------------------------------------
def test_claim_a_forged_csc_row_count_is_refused_before_anything_is_allocated(idx):
    """Claim (finding 3): a sparse ``.npz`` is checked on its raw arrays (format, shape against
    the shape the index expects, dtypes, lengths, indptr, indices) before a matrix is built or
    a CSC one converted. Before: a 1.4 KB ``terms.npz`` stored as CSC with 400M rows made the
    load allocate 3.2 GB for 8.8 s before the PersistError."""
    vocab = json.loads((idx / "vocabulary.json").read_text())
    _forged_csc(idx / "terms.npz", 4 * 10**8, len(vocab))
    restamp(idx)
    assert (idx / "terms.npz").stat().st_size < 4096
    peak, err = traced_peak(lambda: MixPRIndex.load(idx))
    assert isinstance(err, PersistError), err
    assert "terms.npz" in str(err) and "'shape'" in str(err)
    assert peak < 32 * MiB


def test_claim_read_sparse_bounds_the_rows_of_a_csc_matrix_without_an_expected_shape(tmp_path):
    """Claim: without a shape to compare with, a CSC matrix may have at most
    ``len(indptr) + 2 * nnz + 1024`` rows (its CSR copy allocates one pointer per row)."""
    p = tmp_path / "m.npz"
    _forged_csc(p, 15 * 10**8, 3)
    peak, err = traced_peak(lambda: read_sparse(p))
    assert isinstance(err, PersistError) and "CSC matrix of 1500000000 rows" in str(err)
    assert peak < 8 * MiB
    m = sp.random(50, 7, density=0.3, format="csc", random_state=0)
    sp.save_npz(p, m)
    got = read_sparse(p, shape=(50, 7))
    assert got.format == "csr" and (got != m.tocsr()).nnz == 0


@pytest.mark.parametrize(
    "edit, message",
    [
        ({"format": np.array(b"coo")}, "not csr or csc"),
        ({"format": np.array([1, 2])}, "'format' must be a short string"),
        ({"shape": np.array([3, 4, 5])}, "'shape' must hold 2 integers"),
        ({"shape": np.array([-1, 4])}, "negative"),
        ({"indices": np.array([0.5, 1.0, 2.0])}, "'indices' must be a 1-D integer"),
        ({"indptr": np.array([0, 2, 1, 3])}, "'indptr' must rise"),
        ({"indptr": np.array([0, 1, 2, 4])}, "'indptr' must rise"),
        ({"indices": np.array([0, 1, 9])}, r"'indices' holds values outside \[0, 4\)"),
        ({"data": np.array([1.0, np.inf, 2.0])}, "non-finite"),
        ({"data": np.array([[1.0, 2.0, 3.0]])}, "'data' must be 1-D numeric"),
        ({"indptr": np.array([0, 1, 2])}, "'indptr' has 3 entries"),
    ],
)
def test_claim_sparse_arrays_are_checked_one_by_one(tmp_path, edit, message):
    """Claim: format ``csr``/``csc``, a 2-D non-negative shape, 1-D integer ``indices`` /
    ``indptr`` and 1-D numeric finite ``data`` of consistent lengths, ``indptr`` rising from 0
    to nnz, ``indices`` in range: each a PersistError naming the file."""
    arrays = {
        "format": np.array(b"csr"),
        "shape": np.array([3, 4]),
        "data": np.array([1.0, 2.0, 3.0]),
        "indices": np.array([0, 1, 2], np.int32),
        "indptr": np.array([0, 1, 2, 3], np.int32),
    }
    p = tmp_path / "m.npz"
    _write_npz(p, **{**arrays, **edit})
    with pytest.raises(PersistError, match=r"m\.npz.*" + message):
        read_sparse(p)
    _write_npz(p, **arrays)
    assert read_sparse(p, shape=(3, 4)).nnz == 3


def test_claim_a_thresholded_graph_of_another_shape_is_refused_before_it_is_built(tmp_path):
    """Claim: ``graph.npz`` (paper preset) must be ``n_units x n_units``, checked on the raw
    arrays."""
    d = tmp_path / "idx"
    ix = MixPRIndex.from_texts(TEXTS, preset="paper", max_words=8)
    ix.save(d, mappable=False)
    _forged_csc(d / "graph.npz", 4 * 10**8, ix.n_units)
    restamp(d)
    peak, err = traced_peak(lambda: MixPRIndex.load(d))
    assert isinstance(err, PersistError) and "graph.npz" in str(err), err
    assert peak < 32 * MiB


def test_claim_garlic_edges_of_another_shape_are_refused_before_they_are_built(tmp_path):
    """Claim: GARLIC's ``edges.npz`` must be ``n_nodes x n_nodes``, checked on the raw arrays
    (the same reader as MixPR's)."""
    from longctx.garlic import HWDAG

    d = tmp_path / "g"
    g = garlic_graph()
    g.save(d)
    _forged_csc(d / "edges.npz", 4 * 10**8, len(g.nodes))
    restamp(d)
    peak, err = traced_peak(lambda: HWDAG.load(d))
    assert isinstance(err, PersistError) and "edges.npz" in str(err), err
    assert peak < 32 * MiB


# -- MixPR units (finding 11) and token counts (finding 8) -------------------------------------------
def units_edit(a: dict, how: str) -> dict:
    """The unit arrays ``a`` damaged as ``how`` says (the arrays changed only)."""
    s, e, src = a["starts"], a["ends"], a["unit_source"]
    first = np.flatnonzero(src == src[0])
    if how == "overlap":  # five units of text 0 on one span: five identical hits before
        s, e = s.copy(), e.copy()
        s[first[:5]], e[first[:5]] = s[first[0]], e[first[0]]
        return {"starts": s, "ends": e}
    if how == "reversed":  # the units of text 0 in reverse order: hits out of order before
        s, e = s.copy(), e.copy()
        s[first], e[first] = s[first][::-1], e[first][::-1]
        return {"starts": s, "ends": e}
    if how == "empty":  # empty units: empty hits before
        return {"ends": s.copy()}
    if how == "unit_index":
        u = a["unit_index"].copy()
        u[1] = 10**6
        return {"unit_index": u}
    if how == "counts0":
        return {"token_counts": np.zeros_like(a["token_counts"])}
    if how == "counts_huge":
        return {"token_counts": np.full_like(a["token_counts"], 2**62)}
    raise AssertionError(how)


#: ``(how, the field a load names)`` of :func:`units_edit` (also used by the format-3 twins).
UNIT_EDITS = [
    ("overlap", "starts"),
    ("reversed", "starts"),
    ("empty", "ends"),
    ("unit_index", "unit_index"),
    ("counts0", "token_counts"),
    ("counts_huge", "token_counts"),
]


@pytest.mark.parametrize("how, field", UNIT_EDITS)
def test_claim_unit_arrays_are_cross_checked_at_load(idx, how, field):
    """Claim (findings 8 and 11): ``arrays.npz`` is checked against itself and the texts
    (``longctx.mixpr.persist.check_units``): units non-empty, inside their text, sorted and
    non-overlapping per text, ``unit_index`` the unit's position in its text, token counts in
    ``[1, 4 * characters + 1024]``; a PersistError names the file and the field. Before:
    overlapping units gave 5 identical hits, reversed units hits out of order, empty units
    empty hits, counts of 0 made ``token_budget=1`` return every unit, counts near 2**62
    overflowed the budget's sum."""
    edit_npz(idx / "arrays.npz", **units_edit(_arrays(idx), how))
    with pytest.raises(PersistError, match=rf"arrays\.npz.*'{field}'"):
        MixPRIndex.load(idx)


def test_claim_unit_arrays_are_checked_before_the_term_counts_are_read(idx):
    """Claim (order): the unit arrays are checked before ``terms.npz`` is read, whose shape
    comes from them: damaged units and a forged ``terms.npz`` report the units, with nothing
    allocated for the forged matrix."""
    edit_npz(idx / "arrays.npz", **units_edit(_arrays(idx), "overlap"), stamp=False)
    _forged_csc(idx / "terms.npz", 4 * 10**8, 3)
    restamp(idx)
    peak, err = traced_peak(lambda: MixPRIndex.load(idx))
    assert isinstance(err, PersistError) and "arrays.npz" in str(err), err
    assert peak < 32 * MiB


def test_claim_units_of_an_index_without_texts_are_refused(idx):
    """Claim: an empty index (every document deleted) loads, but units with no text to lie in
    are refused."""
    edit_json(idx / "texts.json", lambda t: [], stamp=False)
    edit_json(idx / "documents.json", lambda d: {"ids": [], "metadata": []})
    with pytest.raises(PersistError, match=r"arrays\.npz.*source.*out of range for 0 texts"):
        MixPRIndex.load(idx)


def _counter(value):
    def count(text: str) -> int:
        return value

    return count


@pytest.mark.parametrize("value", [0, 10**15])
@pytest.mark.parametrize(
    "mappable, mmap",
    [(False, False), (True, False), (True, True)],
    ids=["format2", "format3-read", "format3-mapped"],
)
def test_claim_built_token_counts_are_clamped_to_the_range_a_load_accepts(
    tmp_path, value, mappable, mmap
):
    """Claim: a build stores each unit's count clamped to ``[1, 4 * characters + 1024]``
    (``longctx.tokens.count_units``), so a counter returning 0 or 10**15 still saves an index
    that loads (in both formats, read or mapped), and a budget of the smallest count returns at
    most one unit."""
    ix = MixPRIndex.from_texts(TEXTS, max_words=8, token_counter=_counter(value))
    lengths = ix.ends - ix.starts
    assert ix.token_counts.min() >= 1
    assert (ix.token_counts <= 4 * lengths + 1024).all()
    ix.save(tmp_path / "idx", mappable=mappable)
    loaded = MixPRIndex.load(tmp_path / "idx", mmap=mmap)
    assert np.array_equal(loaded.token_counts, ix.token_counts)
    budget = int(loaded.token_counts.min())
    assert len(loaded.search("cat", token_budget=budget).hits) <= 1


#: The hypothesis settings and strategies of the unit-array edits (both formats).
UNIT_EDIT_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
UNIT_EDIT_ARGS = {
    "field": st.sampled_from(["starts", "ends", "unit_index", "unit_source", "token_counts"]),
    "at": st.integers(0, 10**6),
    "delta": st.sampled_from([-(10**6), -50, -7, -1, 1, 3, 20, 10**6, 2**40]),
}


@UNIT_EDIT_SETTINGS
@given(**UNIT_EDIT_ARGS)
def test_claim_any_edit_of_a_unit_array_loads_consistent_units_or_is_refused(
    saved, tmp_path_factory, field, at, delta
):
    """Claim: whatever a forger writes in ``arrays.npz``, a load gives units that are
    non-empty, sorted and non-overlapping slices of their texts with ``unit_index`` their
    position and counts in range, or a PersistError naming ``arrays.npz``."""
    import shutil

    d = tmp_path_factory.mktemp("h") / "idx"
    shutil.copytree(saved, d)
    a = _arrays(d)
    v = a[field].copy()
    v[at % len(v)] += delta
    edit_npz(d / "arrays.npz", **{field: v})
    try:
        ix = MixPRIndex.load(d)
    except PersistError as exc:
        assert "arrays.npz" in str(exc)
        return
    assert_units_consistent(ix)


# -- sharded indexes and corpora -------------------------------------------------------------------
def _sharded(tmp_path):
    from longctx.corpus.shards.index import ShardedMixPRIndex
    from tests.test_mixpr_corpus import POOL

    sharded = ShardedMixPRIndex.from_texts(POOL[:4], ids=list("abcd"), shards=2)
    root = tmp_path / "ix"
    sharded.save(root)
    return sharded, root


def test_claim_a_shard_unit_index_out_of_range_is_refused(tmp_path):
    """Claim (finding 11): a shard is a MixPR index folder loaded by ``MixPRIndex.load``, so its
    ``unit_index`` is checked too. Before: a ``unit_index`` of 10**6 changed which hits came
    back and ``ShardedMixPRIndex.score`` raised a raw IndexError."""
    import shutil

    from longctx.corpus.shards.index import ShardedMixPRIndex

    # a sharded index saved in format 2 (the checked-in one of tests/test_saved_format2.py; a
    # save now writes format 3: tests/test_security_format3.py has the twin)
    root = tmp_path / "ix"
    shutil.copytree(Path(__file__).parent / "fixtures" / "saved_format2" / "shards", root)
    d = root / "shard-1"
    a = _arrays(d)
    u = a["unit_index"].copy()
    u[-1] = 10**6
    edit_npz(d / "arrays.npz", unit_index=u)
    with pytest.raises(PersistError, match=r"shard-1.*arrays\.npz.*'unit_index'"):
        ShardedMixPRIndex.load(root, use_ray=False)


def test_claim_a_shard_folder_linked_out_of_its_index_is_refused(tmp_path):
    """Claim: a shard folder (or a corpus's index folder) that is a symbolic link is never
    followed (``longctx.corpus.storage.Storage.local_index``): a PersistError naming it."""
    import shutil

    from longctx.corpus.shards.index import ShardedMixPRIndex

    _, root = _sharded(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(root / "shard-0", elsewhere)
    os.symlink(elsewhere, root / "shard-0")
    with pytest.raises(PersistError, match=r"shard-0.*symbolic link"):
        ShardedMixPRIndex.load(root, use_ray=False)


def test_claim_a_corpus_index_folder_linked_out_of_the_corpus_is_refused(tmp_path):
    """Claim: a MixPR corpus whose ``indexes/mixpr`` folder is a link out of the corpus is
    refused, named."""
    import shutil

    from longctx.corpus import build_indexes, load_corpus
    from longctx.corpus.shards.single import MIXPR_INDEX

    out = tmp_path / "c"
    build_indexes([("a", TEXTS[0]), ("b", TEXTS[1])], "mixpr", out, use_ray=False)
    assert len(load_corpus(out)) == 2
    target = out / MIXPR_INDEX
    elsewhere = tmp_path / "elsewhere"
    shutil.move(target, elsewhere)
    os.symlink(elsewhere, target)
    with pytest.raises(PersistError, match="symbolic link"):
        load_corpus(out)


# -- count_tokens on long texts ---------------------------------------------------------------------
def test_claim_count_tokens_holds_a_bounded_list_of_pieces():
    """Claim: ``count_tokens`` cuts texts over 256k characters into blocks at a space after a
    non-space character, so its memory does not grow with the text. Before: 20 MB of ``"a "``
    added 450 MB (one list of 10M strings)."""
    from longctx.tokens import count_tokens

    text = "a " * (2 * MiB)  # 4 MB; the list of its pieces alone took ~100 MB
    count_tokens("a b")  # the merge table, read once
    peak, err = traced_peak(lambda: count_tokens(text))
    assert err is None
    assert count_tokens(text) == 2 * MiB + 1  # "a", " a" x (n - 1), " "
    assert peak < 40 * MiB


_PIECES = st.sampled_from(
    ["a", "b", " ", "  ", "\n", "\t", "\u3000", ".", "'s", "'ll", "12", "é", "漢", "_", "x y"]
)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(_PIECES, max_size=80), block=st.integers(1, 12))
def test_claim_count_tokens_by_blocks_equals_one_pass(parts, block):
    """Claim: the blocks give the count of one pass over the whole text (a space after a
    non-space character is always a boundary of the pre-tokenizer's pieces)."""
    import longctx.tokens as T

    text = "".join(parts)
    whole = sum(map(T._PIECE_COUNTS.__getitem__, T._PRETOKEN_RE.findall(text)))
    old = T.COUNT_BLOCK_CHARS
    T.COUNT_BLOCK_CHARS = block
    try:
        assert T.count_tokens(text) == whole
    finally:
        T.COUNT_BLOCK_CHARS = old


def test_claim_read_sparse_zip_bytes_are_the_stored_ones(tmp_path):
    """Claim: a damaged ``.npz`` (not a zip) is one PersistError naming the file."""
    p = tmp_path / "m.npz"
    p.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(PersistError, match=r"m\.npz"):
        read_sparse(p)
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("format.npy", b"garbage")
    with pytest.raises(PersistError, match=r"m\.npz"):
        read_sparse(p)
