"""The GARLIC summarization prompt and the parsing of its bullet-point answer.

Prompt: Table 4 (appendix A.1) of Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress
Control with Hierarchical Weighted Graph for Long Document QA", 2024, arXiv:2410.04790 (published
as PECAN, Findings of ACL 2025), verbatim, including its "Summary the following information" typo.
"""

from __future__ import annotations

import re

__all__ = [
    "PROMPT_HEAD",
    "PROMPT_TAIL",
    "PROMPT_VERSION",
    "segment_text",
    "parse_ips",
    "parse_list_items",
]

# Bump when the prompt changes: a checkpoint built with another prompt is not resumed.
PROMPT_VERSION = 1

PROMPT_HEAD = (
    "Summary the following information. Each segment is separated by a new line symbol.\n\n"
)

PROMPT_TAIL = (
    "\n\n\nSplit your summary into different summary points according to the semantic "
    "information in these information points. It is not necessary to generate each summary "
    "point for each information point. Gather and organize information into summary points. "
    "In each summary point, try to avoid using pronouns like he/she/they and instead use full "
    "names. Generate in the format of:\n\n"
    "* summary point\n* summary point\n* summary point\n……\n\n"
    "Do not provide any explanation and start the summary directly."
)

# Between two input nodes: the "new line symbol" of the prompt.
SEPARATOR = "\n"
# In front of an information point given as input (level >= 2), as in the Table 4 example.
BULLET = "* "

_WS_RE = re.compile(r"\s+")
_LINE_RE = re.compile(r"[^\n]*")
_BULLET_RE = re.compile(r"[ \t]*\*+[ \t]*")
_ITEM_RE = re.compile(r"[ \t]*(?:[-\u2022]|\d{1,3}[.)])[ \t]+")


def segment_text(text: str) -> str:
    """How a node's text appears inside the prompt: whitespace runs (newlines included) collapsed
    to one space, so each input node is exactly one line."""
    return _WS_RE.sub(" ", text).strip()


def parse_ips(text: str) -> list[tuple[int, int]]:
    """Information points of a generated summary, as character spans into ``text``.

    Every line whose first non-blank character is ``*`` is one information point (IP); its span
    covers the line after the bullet (``*`` and the spaces after it), without trailing spaces.
    Lines before the first bullet or without one are dropped, and so are blank bullets.

    Parameters
    ----------
    text : str
        The generated answer (special tokens removed).

    Returns
    -------
    list of (start, end)
        Character offsets (end exclusive) of each IP's text, in order.
    """
    spans = []
    for m in _LINE_RE.finditer(text):
        line_start, line_end = m.start(), m.end()
        b = _BULLET_RE.match(text, line_start, line_end)
        if b is None or "*" not in b.group(0):
            continue
        start, end = b.end(), line_end
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
    return spans


def parse_list_items(text: str) -> list[tuple[int, int]]:
    """Fallback for answers without ``*`` bullets: lines starting with ``-``, ``•`` or a number
    (``1.``, ``2)``), as character spans of the text after the marker (blank items dropped)."""
    spans = []
    for m in _LINE_RE.finditer(text):
        b = _ITEM_RE.match(text, m.start(), m.end())
        if b is None:
            continue
        start, end = b.end(), m.end()
        while end > start and text[end - 1].isspace():
            end -= 1
        if end > start:
            spans.append((start, end))
    return spans
