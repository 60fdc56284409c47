"""The README's and the quickstart notebook's code stays valid: Python parses, and every
name imported exists."""

import ast
import importlib
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_python_blocks_parse_and_imports_resolve():
    blocks = _python_blocks()
    assert len(blocks) >= 3
    for block in blocks:
        tree = ast.parse(block)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module}.{alias.name}"


def test_readme_names_the_test_command():
    text = README.read_text(encoding="utf-8")
    assert "make test" in text and "make demo" in text


def test_quickstart_notebook_cells_parse_and_imports_resolve():
    import json

    nb = json.loads((README.parent / "notebooks" / "quickstart.ipynb").read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code) >= 5
    for cell in code:
        for node in ast.walk(ast.parse(cell)):
            if isinstance(node, ast.ImportFrom):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
