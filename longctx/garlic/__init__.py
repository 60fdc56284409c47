"""GARLIC: hierarchical weighted summary graph (HWDAG) built from summarization attention.

Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790 (PECAN, Findings of ACL 2025), sec. 3.1.
Part 1 (this package): building and storing the graph. Searching it is part 2.
"""

from __future__ import annotations

from longctx.garlic.build import build_hwdag, build_hwdags, chunk_text
from longctx.garlic.graph import HWDAG, Node
from longctx.garlic.prompts import parse_ips
from longctx.garlic.search import GarlicSearcher

__all__ = [
    "HWDAG",
    "GarlicSearcher",
    "Node",
    "build_hwdag",
    "build_hwdags",
    "chunk_text",
    "parse_ips",
]
