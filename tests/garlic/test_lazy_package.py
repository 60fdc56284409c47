"""``longctx.garlic`` imports its public names on first use: ``import longctx.garlic.options``
loaded torch and transformers through the package's eager imports (2.3 s), and so did
``GarlicIndex(stop_patience=0)`` and LangChain's ``GarlicRetriever`` validator, to refuse a
value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_PROBE = """
import sys
import longctx.garlic.options
from longctx.garlic.options import check_search_settings
try:
    check_search_settings({"stop_patience": 0})
except ValueError:
    pass
from llamaindex_longctx import GarlicIndex
try:
    GarlicIndex(nodes=[], stop_patience=0)
except ValueError:
    pass
from langchain_longctx import GarlicRetriever
try:
    GarlicRetriever(documents=[], stop_patience=0)
except ValueError:
    pass
print(sorted(m for m in ("torch", "transformers") if m in sys.modules))
"""


def test_the_options_and_a_refused_setting_load_no_torch():
    # cwd: the checkout first on sys.path (``-c``), whatever is installed
    r = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout


def test_every_public_name_is_still_there():
    import longctx.garlic as garlic
    from longctx.garlic import build, graph, prompts, search

    kept = "HWDAG GarlicSearcher Node build_hwdag build_hwdags chunk_text parse_ips"
    assert garlic.__all__ == kept.split()
    homes = {"HWDAG": graph, "Node": graph, "GarlicSearcher": search, "parse_ips": prompts}
    for name in garlic.__all__:
        assert getattr(garlic, name) is getattr(homes.get(name, build), name)
    assert set(garlic.__all__) <= set(dir(garlic))
    from longctx.garlic import HWDAG, build_hwdag  # noqa: F401  (the from-import form)

    with pytest.raises(AttributeError, match="not_a_name"):
        garlic.not_a_name  # noqa: B018


def test_the_submodules_are_attributes_of_the_package_as_before():
    """``import longctx.garlic; longctx.garlic.search.GarlicSearcher`` (the guides' and
    docstrings' dotted paths) worked while the package imported its modules eagerly."""
    code = (
        "import longctx.garlic as g, sys\n"
        "assert 'longctx.garlic.search' not in sys.modules\n"
        "print(g.search.GarlicSearcher.__name__, g.options.__name__, g.build.__name__,"
        " g.graph.__name__, g.prompts.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out == [
        "GarlicSearcher",
        "longctx.garlic.options",
        "longctx.garlic.build",
        "longctx.garlic.graph",
        "longctx.garlic.prompts",
    ]
