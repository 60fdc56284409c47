"""``build_indexes`` on a local Ray (2 CPUs, started once for the module): GARLIC with the tiny
random Llama and diversity in actor pools, ``memory://`` through the driver."""

from __future__ import annotations

import os

import pytest

ray = pytest.importorskip("ray")
torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from longctx.corpus import build_indexes, load_corpus, read_corpus_manifest  # noqa: E402
from tests.conftest import REPO  # noqa: E402
from tests.corpus._helpers import BulletForcer, hash_embed, tiny_garlic_lm  # noqa: E402
from tests.corpus.conftest import index_files  # noqa: E402

GARLIC_DOCS = [
    (
        "kitten",
        "Tom Kitten lived with his mother and his sisters. One day she expected fine company "
        "for tea. She fetched the kittens indoors to wash them. Tom was fat and burst several "
        "buttons off his clothes. His mother sewed them on again.",
    ),
    (
        "ducks",
        "The Puddle-Ducks came marching along the high road, pit pat paddle pat! They stopped "
        "and stared up at the kittens on the wall. Mr. Drake Puddle-Duck picked up the clothes "
        "and put them on himself. Then the ducks went away down the road.",
    ),
]
GARLIC_OPTIONS = dict(
    model=tiny_garlic_lm,
    encoder=hash_embed,
    logits_processor=BulletForcer(),
    chunk_tokens=30,
    batch_tokens=70,
    max_new_tokens=20,
)


def test_ray_build_from_a_folder_holding_a_longctx_directory(tmp_path, docs):
    """Issue 32: Ray put the driver's current folder first on the workers' ``sys.path``, so a
    ``longctx/`` folder there (a checkout) was imported instead of the package and every document
    failed. Here that folder's ``__init__.py`` even raises (a regular package shadows any path
    entry; an empty folder only shadows an editable install). Runs in its own process (its own
    Ray, started by ``run_on_ray``); Ray's token-authentication notice is not printed."""
    import json
    import subprocess
    import sys

    cwd = tmp_path / "cwd"
    (cwd / "longctx").mkdir(parents=True)
    (cwd / "longctx" / "__init__.py").write_text("raise ImportError('the folder, not longctx')\n")
    books = tmp_path / "books"
    books.mkdir()
    for i, (_, text) in enumerate(docs[:2]):
        (books / f"part{i}.txt").write_text(text[:2000], encoding="utf-8")
    script = tmp_path / "bin" / "run_longctx.py"  # not `python -m`: that puts cwd on sys.path
    script.parent.mkdir()
    script.write_text("import sys\nfrom longctx.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = str(REPO)
    out = tmp_path / "corpus"
    args = [str(books), "--method", "mixpr", "--out", str(out), "--shards", "2", "--workers", "2"]
    res = subprocess.run(
        [sys.executable, str(script), "index", *args, "--format", "json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(res.stdout)
    assert data["backend"] == "ray-local" and sorted(data["built"]) == ["part0.txt", "part1.txt"]
    assert "Token authentication" not in res.stderr, res.stderr
    assert len(load_corpus(out)) == 2


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs) for the module; workers import ``tests`` through PYTHONPATH."""
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), old) if p)
    if ray.is_initialized():  # one left by another module (or started by a library call)
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


@pytest.fixture(scope="module")
def garlic_corpora(local_ray, tmp_path_factory):
    """The GARLIC corpus built sequentially (1 torch thread, as in a 1-CPU Ray worker) and on Ray
    with 2 workers."""
    root = tmp_path_factory.mktemp("garlic")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # floats reduce in thread-dependent order
    try:
        seq = build_indexes(GARLIC_DOCS, "garlic", root / "seq", use_ray=False, **GARLIC_OPTIONS)
    finally:
        torch.set_num_threads(threads)
    par = build_indexes(GARLIC_DOCS, "garlic", root / "ray", workers=2, **GARLIC_OPTIONS)
    return root, seq, par


def test_garlic_on_ray_equals_sequential(garlic_corpora):
    root, seq, par = garlic_corpora
    assert seq.backend == "sequential" and not seq.failed, seq.errors
    assert par.backend == "ray-local" and par.workers == 2 and not par.failed, par.errors
    assert set(par.built) == {"kitten", "ducks"}
    assert len(par.peak_rss_mib) == 2  # each actor built one document
    files = index_files(root / "ray")
    assert any(k.endswith("edges.npz") for k in files)
    assert files == index_files(root / "seq")
    m = read_corpus_manifest(root / "ray")
    assert [e.status for e in m.entries.values()] == ["done", "done"]
    assert all(e.extra["tokens_generated"] > 0 for e in m.entries.values())
    graphs = load_corpus(root / "ray")
    assert [g.texts for g in graphs.values()] == [[t] for _, t in GARLIC_DOCS]
    again = build_indexes(GARLIC_DOCS, "garlic", root / "ray", workers=2, **GARLIC_OPTIONS)
    assert again.skipped == ("kitten", "ducks") and not again.built


def test_garlic_corpus_in_llamaindex(garlic_corpora):
    pytest.importorskip("llama_index.core")
    from llamaindex_longctx import GarlicIndex

    root, _, _ = garlic_corpora
    model, tok = tiny_garlic_lm()
    index = GarlicIndex.from_corpus(root / "ray", model=model, tokenizer=tok, encoder=hash_embed)
    assert set(index.index_struct.graphs) == {"kitten", "ducks"}
    assert set(index.ref_doc_info) == {"kitten", "ducks"}
    s = index.searcher()
    assert len(s.graph.ids) == sum(len(g.nodes) for g in load_corpus(root / "ray").values())


def test_diversity_actors_resume_and_memory(local_ray, tmp_path, docs):
    first = build_indexes(docs[:2], "diversity", tmp_path / "c", workers=2, encoder=hash_embed)
    assert first.backend == "ray-local" and set(first.built) == {d for d, _ in docs[:2]}
    resumed = build_indexes(docs, "diversity", tmp_path / "c", workers=2, encoder=hash_embed)
    assert set(resumed.skipped) == {d for d, _ in docs[:2]}
    assert set(resumed.built) == {d for d, _ in docs[2:]}
    whole = build_indexes(docs, "diversity", tmp_path / "whole", use_ray=False, encoder=hash_embed)
    assert len(whole.built) == 4
    assert index_files(tmp_path / "c") == index_files(tmp_path / "whole")
    # memory:// lives in the driver: the workers hand their files over
    out = "memory://longctx-ray-corpus"
    r = build_indexes(docs[:2], "diversity", out, workers=2, encoder=hash_embed)
    assert r.backend == "ray-local" and len(r.built) == 2
    loaded = load_corpus(out, encoder=hash_embed)
    assert [ix.texts[0] for ix in loaded.values()] == [t for _, t in docs[:2]]


def test_garlic_corpus_in_langchain(garlic_corpora):
    pytest.importorskip("langchain_core")
    from langchain_longctx import GarlicRetriever

    root, _, _ = garlic_corpora
    model, tok = tiny_garlic_lm()
    r = GarlicRetriever.from_corpus(
        root / "ray", model=model, tokenizer=tok, encoder=hash_embed, metadatas={"ducks": {"x": 1}}
    )
    assert [d.id for d in r.documents] == ["kitten", "ducks"]
    assert r.documents[1].metadata == {"x": 1}
    assert r.documents[0].page_content == GARLIC_DOCS[0][1]
    assert r.searcher is not None and len(r.searcher.graph.ids) > 4


def test_ray_start_notices_only_at_info_level():
    """Ray's token-authentication notice is hidden unless longctx logs at INFO (``--verbose``);
    the logger's level is restored after; the workers import longctx at start-up."""
    import logging

    from longctx import _ray

    notice = logging.getLogger(_ray._RAY_NOTICE_LOGGERS[0])
    log = logging.getLogger("longctx")
    saved = (notice.level, log.level)
    try:
        notice.setLevel(logging.NOTSET)
        log.setLevel(logging.WARNING)
        with _ray.quiet_ray_start():
            assert not notice.isEnabledFor(logging.WARNING)
        assert notice.level == logging.NOTSET
        log.setLevel(logging.INFO)
        with _ray.quiet_ray_start():
            assert notice.isEnabledFor(logging.WARNING)
    finally:
        notice.setLevel(saved[0])
        log.setLevel(saved[1])


def test_every_ray_start_goes_through_one_module(monkeypatch):
    """The corpus build and the shards start Ray through ``longctx._ray.start_ray``, whose
    start-up hook imports longctx and the modules the caller names (data, not imports of a
    higher package); a name that is not a longctx module is refused."""
    import importlib
    import sys

    from longctx import _ray
    from longctx.corpus import ray_backend
    from longctx.corpus.shards import backends, build

    env = _ray.runtime_env(["longctx.corpus.ray_backend", "longctx.corpus.shards.backends"])
    module, name = env["worker_process_setup_hook"].rsplit(".", 1)
    assert module == "longctx._ray" and callable(getattr(importlib.import_module(module), name))
    assert (
        env["env_vars"][_ray.PRELOAD_ENV]
        == "longctx.corpus.ray_backend,longctx.corpus.shards.backends"
    )
    for bad in (["os"], ["longctx.a,b"], [3]):
        with pytest.raises(ValueError, match="preload"):
            _ray.runtime_env(bad)
    # the hook imports the named modules
    monkeypatch.setenv(_ray.PRELOAD_ENV, "longctx.corpus.jobs")
    monkeypatch.delitem(sys.modules, "longctx.corpus.jobs", raising=False)
    getattr(_ray, name)()
    assert "longctx.corpus.jobs" in sys.modules
    for m in (ray_backend.run_on_ray, backends.RayShards.__init__, build._run_jobs):
        assert "start_ray" in m.__code__.co_names and "init" not in m.__code__.co_names
