"""longctx.persist: saving never deletes what it did not write; saved files are untrusted input.

One test per reproduction of issue 20 ("Data loss", "Saved files trusted too much")."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from longctx.diversity import DiversityIndex
from longctx.garlic import HWDAG
from longctx.mixpr import MixPRConfig, MixPRIndex
from longctx.persist import (
    PersistError,
    SaveTargetError,
    read_arrays,
    read_json,
    read_sparse,
    write_dir,
)
from tests._persist_helpers import (
    TEXTS,
    diversity_index,
    edit_json,
    edit_npz,
    forged_npy_header_npz,
    garlic_graph,
    hash_encoder,
    mixpr_index,
)


@pytest.fixture(scope="module")
def mixpr():
    return mixpr_index()


@pytest.fixture(scope="module")
def diversity():
    return diversity_index()


@pytest.fixture(scope="module")
def graph():
    return garlic_graph()


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


# -- saving -------------------------------------------------------------------------------------
def test_saving_into_a_user_directory_keeps_its_files(tmp_path, mixpr):
    user = tmp_path / "userdir"
    (user / "sub").mkdir(parents=True)
    (user / "notes.txt").write_text("my notes")
    (user / "sub" / "data.csv").write_text("a,b")
    before = _tree(user)
    with pytest.raises(SaveTargetError, match="not a longctx index"):
        mixpr.save(user)
    assert _tree(user) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["userdir"]  # no temporary left


def test_saving_onto_a_file_is_a_clear_error_and_keeps_it(tmp_path, mixpr):
    f = tmp_path / "report.txt"
    f.write_text("precious")
    with pytest.raises(SaveTargetError, match="a file of that name exists"):
        mixpr.save(f)
    assert f.read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.txt"]  # no *.old, no temp


def test_saving_over_another_kind_or_extra_files_is_refused(tmp_path, mixpr, diversity):
    d = tmp_path / "idx"
    mixpr.save(d)
    before = _tree(d)
    with pytest.raises(SaveTargetError, match="longctx.mixpr"):
        diversity.save(d)
    assert _tree(d) == before
    (d / "mine.txt").write_text("user file inside the index folder")
    with pytest.raises(SaveTargetError, match="did not write"):
        mixpr.save(d)
    assert (d / "mine.txt").read_text() == "user file inside the index folder"


def test_replacing_an_index_is_atomic_and_leaves_nothing_behind(tmp_path, mixpr):
    d = tmp_path / "idx"
    (d).mkdir()  # an empty directory is a fine target
    mixpr.save(d)
    other = MixPRIndex.from_texts(["Completely different words live here now."])
    other.save(d)
    assert MixPRIndex.load(d).texts == other.texts
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]
    assert set(os.listdir(d)) == set(json.loads((d / "manifest.json").read_text())["files"]) | {
        "manifest.json"
    }


def test_concurrent_saves_to_one_path_leave_one_complete_index(tmp_path):
    a, b = mixpr_index(), MixPRIndex.from_texts(["One other small text. With two sentences."])
    d = tmp_path / "shared"
    errors = []

    def work(index):
        try:
            for _ in range(15):
                index.save(d)
        except BaseException as exc:  # noqa: BLE001 - the test reports any
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(x,)) for x in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    loaded = MixPRIndex.load(d)
    assert loaded.texts in (a.texts, b.texts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared"]


def test_a_failing_save_leaves_the_previous_index(tmp_path, mixpr):
    d = tmp_path / "idx"
    mixpr.save(d)
    before = _tree(d)

    def boom(path):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_dir(d, kind="mixpr", version=1, json_files={"x": 1}, subdirs={"bad": boom})
    assert _tree(d) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


# -- generic readers ----------------------------------------------------------------------------
def test_huge_npy_header_shape_is_refused_before_allocation(tmp_path):
    p = tmp_path / "x.npz"
    forged_npy_header_npz(p, "embeddings", (10**12,))
    with pytest.raises(PersistError, match=r"x\.npz.*embeddings.*claims shape"):
        read_arrays(p, ["embeddings"])


def test_deeply_nested_json_is_a_persist_error(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(PersistError, match="deep.json"):
        read_json(deep)
    medium = tmp_path / "medium.json"
    medium.write_text("[" * 100 + "]" * 100)  # parses, but deeper than MAX_JSON_DEPTH
    with pytest.raises(PersistError, match="medium.json.*nested deeper"):
        read_json(medium)


def test_json_limits_size_and_nan(tmp_path):
    p = tmp_path / "c.json"
    p.write_text('{"tol": NaN}')
    with pytest.raises(PersistError, match="c.json"):
        read_json(p)
    p.write_text(json.dumps(list(range(1000))))
    with pytest.raises(PersistError, match="more than the limit"):
        read_json(p, max_bytes=100)


def test_sparse_indices_out_of_range_are_refused(tmp_path, mixpr):
    d = tmp_path / "idx"
    mixpr.save(d, mappable=False)
    with np.load(d / "terms.npz") as z:
        indices = z["indices"].copy()
    indices[0] = 10**6
    edit_npz(d / "terms.npz", indices=indices)
    with pytest.raises(PersistError, match="terms.npz"):
        read_sparse(d / "terms.npz")
    with pytest.raises(PersistError, match="terms.npz"):
        MixPRIndex.load(d)


# -- MixPR ------------------------------------------------------------------------------------------
def test_mixpr_huge_max_iter_and_zero_tol_are_refused(tmp_path, mixpr):
    with pytest.raises(ValueError, match="max_iter"):
        MixPRConfig(max_iter=1_000_000_000, tol=0)
    with pytest.raises(ValueError, match="tol"):
        MixPRConfig(tol=5.0)
    d = tmp_path / "idx"
    mixpr.save(d)
    edit_json(d / "config.json", lambda c: c.update(max_iter=1_000_000_000, tol=0))
    with pytest.raises(PersistError, match=r"config\.json.*max_iter"):
        MixPRIndex.load(d)


@pytest.mark.parametrize(
    "arrays, field",
    [
        ({"starts": "shift"}, "start"),
        ({"ends": "big"}, "end"),
        ({"unit_source": "big"}, "source"),
        ({"starts": "2d"}, "starts"),
        ({"unit_index": "str"}, "unit_index"),
        ({"token_counts": "neg"}, "token_counts"),
    ],
)
def test_mixpr_crafted_arrays_are_persist_errors(tmp_path, mixpr, arrays, field):
    d = tmp_path / "idx"
    mixpr.save(d, mappable=False)
    with np.load(d / "arrays.npz") as z:
        data = {k: z[k] for k in z.files}
    ((key, how),) = arrays.items()
    a = data[key]
    new = {
        "shift": a - 35752,
        "big": a + 10**6,
        "2d": np.stack([a, a]),
        "str": a.astype(str),
        "neg": -np.ones_like(a) * 5,
    }[how]
    edit_npz(d / "arrays.npz", **{key: new})
    with pytest.raises(PersistError, match=rf"arrays\.npz.*{field}"):
        MixPRIndex.load(d)


def test_mixpr_file_options_that_read_files_are_refused(tmp_path, mixpr):
    d = tmp_path / "idx"
    mixpr.save(d)
    edit_json(d / "config.json", lambda c: c.update(vectorizer_kwargs={"input": "filename"}))
    with pytest.raises(PersistError, match="vectorizer_kwargs.input"):
        MixPRIndex.load(d)


def test_mixpr_unknown_config_field_is_a_persist_error(tmp_path, mixpr):
    d = tmp_path / "idx"
    mixpr.save(d)
    edit_json(d / "config.json", lambda c: c.update(evil=1))
    with pytest.raises(PersistError, match="unknown field"):
        MixPRIndex.load(d)


# -- Diversity ------------------------------------------------------------------------------------
def test_diversity_negative_token_counts_and_bad_spans(tmp_path, diversity):
    d = tmp_path / "idx"
    diversity.save(d)
    before = (d / "units.json").read_text()
    edit_json(d / "units.json", lambda u: u.update(token_counts=[-5] * len(u["token_counts"])))
    with pytest.raises(PersistError, match=r"units\.json.*token_counts"):
        DiversityIndex.load(d, encoder=hash_encoder())
    (d / "units.json").write_text(before)
    edit_json(d / "units.json", lambda u: u["end"].__setitem__(0, 10**6))
    with pytest.raises(PersistError, match=r"units\.json.*outside text"):
        DiversityIndex.load(d, encoder=hash_encoder())
    (d / "units.json").write_text(before)
    edit_json(d / "units.json", lambda u: u["start"].__setitem__(0, "0"))
    with pytest.raises(PersistError, match=r"units\.json.*start"):
        DiversityIndex.load(d, encoder=hash_encoder())


def test_diversity_hub_encoder_name_is_never_downloaded(tmp_path, diversity, monkeypatch):
    import sentence_transformers

    calls = []
    monkeypatch.setattr(
        sentence_transformers, "SentenceTransformer", lambda *a, **k: calls.append((a, k))
    )
    d = tmp_path / "idx"
    diversity.save(d)
    edit_json(d / "config.json", lambda c: c["encoder"].update(name="evil-org/evil-model"))
    loaded = DiversityIndex.load(d)
    with pytest.raises(ValueError, match="evil-org/evil-model.*encoder="):
        loaded.search("Where did the cat sit?", token_budget=50)
    assert calls == []


def test_sentence_transformer_encoder_loads_local_files_only(monkeypatch):
    import sentence_transformers

    from longctx.embeddings import SentenceTransformerEncoder

    seen = {}

    class Fake:
        def __init__(self, path, **kwargs):
            seen.update(kwargs, path=path)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Fake)
    SentenceTransformerEncoder("some-org/some-model-not-cached", device="cpu").model  # noqa: B018
    assert seen["local_files_only"] is True


# -- GARLIC ---------------------------------------------------------------------------------------
def test_garlic_round_trip(tmp_path, graph):
    graph.save(tmp_path / "g")
    assert HWDAG.load(tmp_path / "g") == graph


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda g: g["nodes"][0].update(level=100_000_000), r"nodes\[0\]\.level"),
        (lambda g: g["nodes"][0].update(level="1"), r"nodes\[0\]\.level"),
        (lambda g: g["nodes"][1].update(text="Other words entirely."), r"nodes\[1\]\.text"),
        (lambda g: g["nodes"][0].update(start=-3), r"nodes\[0\]\.start"),
        (lambda g: g["nodes"][0].update(end=10**6), r"nodes\[0\]\.end"),
        (lambda g: g["nodes"][0].update(source=7), r"nodes\[0\]\.source"),
        (lambda g: g["nodes"][-1].update(batch=99), r"nodes\[\d\]\.batch"),
        (lambda g: g["nodes"][0].update(evil=1), r"nodes\[0\]"),
        (lambda g: g.update(info=[1, 2]), "info"),
        (lambda g: g.update(batches={"a": 1}), "batches"),
        (lambda g: g["batches"][0].update(inputs=[0, 10**6]), r"batches\[0\]\.inputs"),
        (lambda g: g["batches"][0].update(level=None), r"batches\[0\]\.level"),
    ],
)
def test_garlic_crafted_graph_json_is_a_persist_error(tmp_path, graph, edit, field):
    d = tmp_path / "g"
    graph.save(d)
    edit_json(d / "graph.json", edit)
    with pytest.raises(PersistError, match=rf"graph\.json.*{field}"):
        HWDAG.load(d)


def test_garlic_edges_out_of_range_or_across_levels(tmp_path, graph):
    d = tmp_path / "g"
    graph.save(d)
    with np.load(d / "edges.npz") as z:
        indices = z["indices"].copy()
    saved = indices.copy()
    indices[0] = 10**5
    edit_npz(d / "edges.npz", indices=indices)
    with pytest.raises(PersistError, match="edges.npz"):
        HWDAG.load(d)
    indices = saved.copy()
    indices[0] = len(graph) - 1  # a level-2 node as a child of a level-2 node
    edit_npz(d / "edges.npz", indices=indices)
    with pytest.raises(PersistError, match="edges.npz"):
        HWDAG.load(d)


def test_garlic_search_graph_dict_checks_texts_against_the_document(graph):
    from longctx.garlic.search import SearchGraph, as_search_graph

    d = as_search_graph(graph).to_dict()
    SearchGraph.from_dict(d, source_text=TEXTS[0])
    forged = {**d, "texts": ["Forged words."] + d["texts"][1:]}
    with pytest.raises(ValueError, match="differs from its document"):
        SearchGraph.from_dict(forged, source_text=TEXTS[0])
    with pytest.raises(ValueError, match="levels"):
        SearchGraph.from_dict({**d, "levels": [10**8] * len(d["levels"])})


def test_garlic_checkpoint_records_are_checked(tmp_path):
    from longctx.garlic.build import _check_records

    good = {
        "source": 0,
        "level": 1,
        "pos": 0,
        "n_generated": 3,
        "text": "* a",
        "ips": ["a"],
        "ip_tokens": [1],
        "weights": [[0.5, 0.5]],
        "inputs": [0, 1],
    }
    assert _check_records([good], tmp_path / "checkpoint.json") == [good]
    with pytest.raises(PersistError, match=r"checkpoint\.json.*records\[0\]"):
        _check_records([{**good, "weights": [[0.5]]}], tmp_path / "checkpoint.json")
    with pytest.raises(PersistError, match=r"checkpoint\.json.*records\[0\]\.level"):
        _check_records([{**good, "level": "x"}], tmp_path / "checkpoint.json")


# -- YOURA ----------------------------------------------------------------------------------------
def test_youra_unknown_scorer_option_is_a_persist_error(tmp_path):
    from longctx.youra import YouraIndex

    d = tmp_path / "y"
    text = "The cat sat. The dog ran."
    write_dir(
        d,
        kind="youra",
        version=YouraIndex.FORMAT_VERSION,
        json_files={
            "config": {
                "max_fraction": 0.8,
                "score_scale": None,
                "scorer": {"model": None, "preset": "default", "evil_option": 1},
            },
            "texts": [text],
        },
        arrays={
            "sentences": {
                "spans": np.array([[0, 12], [13, 25]]),
                "offsets": np.array([0, 2]),
                "token_counts": np.array([4, 4]),
            }
        },
    )
    with pytest.raises(PersistError, match=r"config\.json.*evil_option"):
        YouraIndex.load(d)


def test_every_kind_refuses_a_foreign_directory(tmp_path):
    from longctx.youra import YouraIndex

    d = tmp_path / "x"
    d.mkdir()
    (d / "notes.txt").write_text("n")
    for cls in (MixPRIndex, DiversityIndex, HWDAG, YouraIndex):
        with pytest.raises(PersistError, match="manifest.json"):
            cls.load(d)
    shutil.rmtree(d)


def _save_many(path: str, seed: int) -> None:
    index = mixpr_index() if seed % 2 else MixPRIndex.from_texts(["Another text. Two lines."])
    for _ in range(15):
        index.save(path)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_concurrent_saves_from_processes_leave_one_complete_index(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    d = tmp_path / "shared"
    procs = [ctx.Process(target=_save_many, args=(str(d), i)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert MixPRIndex.load(d).n_units > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared"]


@pytest.mark.parametrize("count", [0, 2**62])
def test_diversity_token_counts_outside_what_a_unit_can_hold(tmp_path, diversity, count):
    """A forged count can neither make a unit free (0) nor overflow a budget's sum (2**62):
    the same range as MixPR's load and every build (MAX_TOKENS_PER_CHAR * chars + TOKEN_SLACK)."""
    d = tmp_path / "idx"
    diversity.save(d)
    edit_json(d / "units.json", lambda u: u["token_counts"].__setitem__(1, count))
    with pytest.raises(PersistError, match=r"units\.json.*'token_counts': unit 1 .*outside \[1, "):
        DiversityIndex.load(d, encoder=hash_encoder())


def test_youra_token_counts_outside_what_a_sentence_can_hold(tmp_path):
    from longctx.youra import YouraIndex

    d = tmp_path / "y"
    text = "The cat sat. The dog ran."
    write_dir(
        d,
        kind="youra",
        version=YouraIndex.FORMAT_VERSION,
        json_files={
            "config": {"max_fraction": 0.8, "score_scale": None, "scorer": {"model": None}},
            "texts": [text],
        },
        arrays={
            "sentences": {
                "spans": np.array([[0, 12], [13, 25]]),
                "offsets": np.array([0, 2]),
                "token_counts": np.array([4, 12 * 4 + 1025]),
            }
        },
    )
    with pytest.raises(
        PersistError, match=r"sentences\.npz.*unit 1 of 12 characters .*\[1, 1072\]"
    ):
        YouraIndex.load(d)


def test_diversity_given_token_counts_are_clamped_so_the_index_loads(tmp_path):
    """Saving keeps what loads: counts of 0 or 10**15 given to the build are clamped to the
    range the load checks, and a budget then costs every unit at least one token."""
    texts = ["The cat sat. The dog ran. A bird sang."]
    spans = [[(0, 12), (13, 25), (26, 38)]]
    ix = DiversityIndex.from_units(
        texts, spans, hash_encoder(), token_counts=[0, 10**15, 3], progress=False
    )
    assert ix.token_counts.tolist() == [1, 4 * 12 + 1024, 3]
    ix.save(tmp_path / "d")
    loaded = DiversityIndex.load(tmp_path / "d", encoder=hash_encoder())
    assert loaded.token_counts.tolist() == [1, 4 * 12 + 1024, 3]


def test_npy_members_are_hashed_while_written_not_read_again(tmp_path, monkeypatch):
    """``write_dir`` takes an ``.npy`` member's SHA-256 and size from its writing (the file
    is never read back to hash it), byte for byte ``np.save``'s file, and a load checks them
    (code-health review of issue 46)."""
    import longctx.persist.fs as fs
    from longctx.persist import open_index_dir
    from longctx.persist.fs import file_sha256
    from longctx.persist.npy import write_npy
    from longctx.persist.writer import write_dir

    arrays = {"a": np.arange(10), "b": np.zeros((0, 4), np.float32), "c": np.random.rand(70_000)}
    for name, a in arrays.items():
        got = write_npy(tmp_path / f"{name}.npy", a)
        np.save(tmp_path / f"{name}-np.npy", a)
        assert (tmp_path / f"{name}.npy").read_bytes() == (tmp_path / f"{name}-np.npy").read_bytes()
        assert got == file_sha256(tmp_path / f"{name}.npy")
    hashed = []
    real = fs.file_sha256
    monkeypatch.setattr(fs, "file_sha256", lambda p: hashed.append(Path(p).name) or real(p))
    write_dir(tmp_path / "ix", kind="test", version=1, json_files={"x": 1}, npy=arrays)
    assert hashed == []
    with open_index_dir(tmp_path / "ix", kind="test", versions=(1,)) as r:
        for name, a in arrays.items():
            assert np.array_equal(r.npy(f"{name}.npy", dtypes=(a.dtype,), ndim=a.ndim), a)


def test_npy_headers_are_parsed_one_thread_at_a_time(tmp_path, monkeypatch):
    """numpy parses a header with ``ast.literal_eval``, which CPython 3.11 can fail when two
    threads build ASTs at once (SystemError: AST constructor recursion depth mismatch, met in
    tests/corpus/test_concurrency.py): every header parse of a load runs under one lock, the
    ``.npz`` members' (format 2) and the ``.npy`` files' (format 3) alike, and a format-2 load
    never calls ``np.load`` (which would parse every header again)."""
    import io

    from longctx.persist import format as fmt

    held = []
    real = dict(fmt._NPY_READERS)

    def spy(version):
        def read(fh, **kw):
            held.append(fmt.NPY_PARSE_LOCK.locked())
            return real[version](fh, **kw)

        return read

    monkeypatch.setattr(fmt, "_NPY_READERS", {v: spy(v) for v in real})
    buf = io.BytesIO()
    np.save(buf, np.arange(5))
    buf.seek(0)
    assert fmt.read_npy_header(buf, "x")[0] == (5,)
    raw = io.BytesIO()
    np.savez(raw, a=np.arange(3), b=np.ones((2, 3), np.float32))
    monkeypatch.setattr(fmt.np, "load", lambda *a, **kw: pytest.fail("np.load called"))
    out = fmt._load_npz_bytes(raw.getvalue(), tmp_path / "a.npz")
    assert out["a"].tolist() == [0, 1, 2]
    assert out["b"].shape == (2, 3) and out["b"].dtype == np.float32
    assert held == [True, True, True], held


def test_npz_members_read_as_np_load_reads_them(tmp_path):
    """The member reader returns what ``np.load`` returns: dtypes (big-endian too), shapes
    (0-d, empty, Fortran order), strings, writeable arrays, compressed or stored."""
    import io

    from longctx.persist import format as fmt

    arrays = {
        "i": np.arange(7, dtype=np.int32),
        "f": np.random.default_rng(0).random((5, 3)),
        "be": np.arange(4, dtype=">f8"),
        "scalar": np.array(3.5),
        "empty": np.zeros((0, 4), np.float32),
        "fortran": np.asfortranarray(np.arange(12.0).reshape(3, 4)),
        "s": np.array("csr"),
        "b": np.array(b"csc"),
        "big": np.arange(300_000, dtype=np.int64),  # more than one read block
    }
    for save in (np.savez, np.savez_compressed):
        raw = io.BytesIO()
        save(raw, **arrays)
        got = fmt._load_npz_bytes(raw.getvalue(), tmp_path / "a.npz")
        with np.load(io.BytesIO(raw.getvalue()), allow_pickle=False) as z:
            assert sorted(got) == sorted(z.files)
            for k in z.files:
                assert got[k].dtype == z[k].dtype and got[k].shape == z[k].shape, k
                assert np.array_equal(got[k], z[k]), k
                assert got[k].flags.writeable


def test_format2_loads_in_two_threads_overlap(tmp_path, monkeypatch):
    """Two threads loading format-2 indexes at once: the parse lock is held for the headers
    only, so while one thread reads a member's values the other can parse its headers and read
    too (before, ``np.load`` ran under the lock and the loads took turns: this barrier, met by
    both threads inside a values read, timed out)."""
    import threading
    import zipfile

    from longctx.mixpr import MixPRIndex
    from longctx.persist import format as fmt

    texts = [f"unit {i} speaks of whales and of rabbits number {i % 97}." for i in range(4000)]
    index = MixPRIndex.from_texts(texts)
    for name in ("a", "b"):
        index.save(tmp_path / name, mappable=False)
    barrier = threading.Barrier(2, timeout=20)
    met, lock_held = [], []
    real_read = zipfile.ZipExtFile.read

    def read(self, n=-1):
        if n is not None and n >= 4096 and not met:  # a values read, not a header's
            lock_held.append(fmt.NPY_PARSE_LOCK.locked())
            barrier.wait()
            met.append(True)
        return real_read(self, n)

    monkeypatch.setattr(zipfile.ZipExtFile, "read", read)
    loaded, errors = {}, []

    def load(name):
        try:
            loaded[name] = MixPRIndex.load(tmp_path / name)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=load, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert met and lock_held and not any(lock_held)
    want = [h.text for h in index.search("whales rabbits number 5", k=3).hits]
    for name in ("a", "b"):
        assert [h.text for h in loaded[name].search("whales rabbits number 5", k=3).hits] == want


def test_an_npz_header_claiming_gigabytes_is_refused_before_it_is_read(tmp_path):
    """A deflated ``.npz`` member whose version-2.0 header claims 300 MiB (numpy reads that
    many bytes before its own bound applies): refused from the 4-byte length field, nothing
    read, the parse lock never taken."""
    import io
    import struct
    import zipfile

    from longctx.persist import PersistError
    from longctx.persist import format as fmt

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open("a.npy", "w", force_zip64=True) as fh:
            fh.write(b"\x93NUMPY\x02\x00" + struct.pack("<I", 300 << 20))
            fh.write(b" " * (4 << 20))  # a few MiB of the claimed header
    p = tmp_path / "arrays.npz"
    p.write_bytes(buf.getvalue())
    with pytest.raises(PersistError, match="more than 65536"):
        fmt._load_npz_bytes(buf.getvalue(), p)
    assert not fmt.NPY_PARSE_LOCK.locked()


def _npy_header(dtype: str, shape: tuple) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": shape}
    )
    return buf.getvalue()


def _zip(members, compression) -> bytearray:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as zf:
        for name, data in members:
            zf.writestr(name, data)
    return bytearray(buf.getvalue())


def _refused_within(raw: bytes, match: str, peak_bytes: int = 8 << 20) -> None:
    """``_load_npz_bytes(raw)`` raises a PersistError matching ``match`` and allocates at most
    ``peak_bytes`` on the way (tracemalloc traces numpy's and bz2/lzma's buffers)."""
    import tracemalloc
    from pathlib import Path

    from longctx.persist import PersistError
    from longctx.persist import format as fmt

    tracemalloc.start()
    try:
        with pytest.raises(PersistError, match=match) as err:
            fmt._load_npz_bytes(bytes(raw), Path("x.npz"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "'x.npz'" in str(err.value) and "'a'" in str(err.value)
    assert peak < peak_bytes, peak


@pytest.mark.parametrize("method", ["bzip2", "lzma"])
def test_an_npz_member_neither_stored_nor_deflated_is_refused_unopened(method):
    """A bzip2 / LZMA member (numpy writes neither) whose central directory claims 136 bytes:
    before, opening it let the decompressor allocate GiBs from an archive under 1 KB (bzip2's
    bound was the member's compressed size x 1100); now refused before it is opened."""
    import struct
    import zipfile

    comp = {"bzip2": zipfile.ZIP_BZIP2, "lzma": zipfile.ZIP_LZMA}[method]
    raw = _zip([("a.npy", _npy_header("<u1", (8,)) + bytes(8) + bytes(1 << 20))], comp)
    assert len(raw) < 2048
    cd = raw.rfind(b"PK\x01\x02")
    struct.pack_into("<I", raw, cd + 24, 136)  # the uncompressed size: the header and 8 values
    _refused_within(raw, "compression method")


@pytest.mark.parametrize("dtype", ["|S0", "<U0"])
def test_an_npz_member_of_a_zero_size_dtype_is_refused(dtype):
    """``S0`` / ``U0`` pass every size bound (0 bytes) and numpy makes them ``S1`` / ``U1``
    arrays of uninitialised values: 2**40 of them allocated before."""
    import zipfile

    _refused_within(_zip([("a.npy", _npy_header(dtype, (2**20,)))], zipfile.ZIP_STORED), "dtype")


def test_a_stored_npz_member_cannot_claim_more_bytes_than_the_archive_has():
    """A 252-byte archive whose stored member claims 2 GiB in its headers: before, 2 GiB were
    allocated before the read found the member short; now refused from the archive's length."""
    import struct
    import zipfile

    raw = _zip([("a.npy", _npy_header("<u1", (2**31,)) + bytes(16))], zipfile.ZIP_STORED)
    big = 2**31 + 200
    struct.pack_into("<II", raw, raw.rfind(b"PK\x01\x02") + 20, big, big)
    struct.pack_into("<II", raw, raw.find(b"PK\x03\x04") + 18, big, big)
    assert len(raw) < 300
    _refused_within(raw, "claims 2147483848 bytes in an archive of")


def test_an_npz_member_ending_early_says_so():
    """A stored member claiming as many bytes as the archive has, from its offset past the
    archive's end: zipfile's EOFError (no message: before, "damaged or truncated: " and
    nothing) becomes a PersistError that says what is wrong."""
    import struct
    import zipfile

    raw = _zip([("a.npy", _npy_header("<u1", (150,)) + bytes(64))], zipfile.ZIP_STORED)
    size = len(raw) - 1  # within the archive's length, but not from the member's offset
    assert size >= 128 + 150  # the header and the values it claims
    struct.pack_into("<II", raw, raw.rfind(b"PK\x01\x02") + 20, size, size)
    struct.pack_into("<II", raw, raw.find(b"PK\x03\x04") + 18, size, size)
    _refused_within(raw, "array 'a' ends before its stated size")
