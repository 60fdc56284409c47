"""Every notebook in notebooks/ runs top to bottom (nbclient, the test interpreter's kernel)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    if path.name == "benchmark_report.ipynb" and not SHARED.is_dir():
        pytest.skip(f"needs the benchmark data at {SHARED}")
    nb = nbformat.read(path, as_version=4)
    monkeypatch.setenv("LONGCTX_DATA", str(SHARED))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(path.parents[1]), *sys.path]))
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    assert not errors
    assert any(c.get("outputs") for c in nb.cells if c.cell_type == "code")
