"""Argument checks run before any heavy work. Every error names the argument."""

from __future__ import annotations

import math
import numbers
import re

from longctx.word_pieces import has_char

#: Most characters of the user's text an error message quotes (:func:`excerpt`).
MAX_QUOTE_CHARS = 80
#: Most characters of a query (:func:`check_query`). MixPR's query time grows with the square of
#: the query's length (its query chunks are compared pairwise): 16,000 characters (~2,700 English
#: words, 500 query chunks of Chinese) answer in well under a second.
MAX_QUERY_CHARS = 16_000
#: Largest weight a setting accepts (:func:`check_weight`: MixPR's ``lexical_weight``, the
#: multi-hop walk's ``head_weight``...). Sums of a few weighted scores, each at most 1, or of a
#: unit's edges stay finite below it (1e6 x the 64-bit float's precision is ~2e-10, so a larger
#: weight would rank as this one does); ``float("inf")`` made every score NaN (issue 44).
MAX_WEIGHT = 1e6

_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_NONSPACE_RE = re.compile(r"\S")


def excerpt(value, limit: int = MAX_QUOTE_CHARS) -> str:
    """``repr(value)`` cut to about ``limit`` characters, for error messages: a 5 MB text is
    quoted as its first ``limit`` characters and its length, never whole."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value):,} characters)"
    r = repr(value)
    return r if len(r) <= limit + 2 else r[:limit] + "..."


def check_text(value, name: str = "text", *, allow_empty: bool = False) -> str:
    """Return ``value`` if it is a ``str`` with some non-space character.

    Raises
    ------
    TypeError
        If ``value`` is not a ``str``.
    ValueError
        If ``value`` is empty or only whitespace (unless ``allow_empty``), or holds a lone
        surrogate (U+D800-U+DFFF, which no tokenizer or UTF-8 file can hold); the message quotes
        at most :data:`MAX_QUOTE_CHARS` characters of it.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not allow_empty and _NONSPACE_RE.search(value) is None:  # no stripped copy of a book
        raise ValueError(f"{name} must contain some non-whitespace text, got {excerpt(value)}")
    m = _SURROGATE_RE.search(value) if has_char(_SURROGATE_RE, value) else None
    if m is not None:
        raise ValueError(
            f"{name} holds a lone surrogate (U+{ord(m.group()):04X}) at character {m.start()}: "
            "not valid Unicode text (decode bytes with errors='replace', not 'surrogateescape')"
        )
    return value


def check_query(value, name: str = "query", *, max_chars: int | None = None) -> str:
    """:func:`check_text` plus a length limit (default :data:`MAX_QUERY_CHARS`).

    Raises
    ------
    TypeError
        If ``value`` is not a ``str``.
    ValueError
        If it is empty, only whitespace, holds a lone surrogate, or is longer than ``max_chars``.
    """
    check_text(value, name)
    limit = MAX_QUERY_CHARS if max_chars is None else max_chars
    if len(value) > limit:
        raise ValueError(
            f"{name} is {len(value):,} characters long, over the limit of {limit:,} "
            f"(longctx.checks.MAX_QUERY_CHARS): ask with a shorter {name}, got {excerpt(value)}"
        )
    return value


def check_int(
    value,
    name: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    allow_none: bool = False,
):
    """Return ``value`` as ``int`` after checking type and bounds.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (``bool`` is rejected too).
    ValueError
        If ``value < minimum`` or ``value > maximum``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum:,}, got {str(value)[:40]}")
    return int(value)


def check_size_field(value, info):
    """``k`` / ``top_n`` / ``token_budget`` as a pydantic ``mode="before"`` field validator (the
    adapters' fields): the core rule of :func:`check_int`, an int >= 1 or None, named by the
    field. ``True`` and ``2.0`` are refused, where pydantic would coerce them to 1 and 2.

    Raises
    ------
    TypeError, ValueError
        As :func:`check_int`, naming ``info.field_name``.
    """
    return check_int(value, info.field_name, minimum=1, allow_none=True)


def check_float(
    value,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    allow_none: bool = False,
):
    """Return ``value`` as ``float`` after checking it is finite and lies in ``[low, high]``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is NaN, infinite (every setting is finite: ``inf`` as a weight made every
        score NaN, issue 44) or outside ``[low, high]``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond the float range
        raise ValueError(f"{name} must be a finite number, got {str(value)[:40]}") from None
    if value != value:
        raise ValueError(f"{name} must not be NaN")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def check_weight(value, name: str) -> float:
    """A weight: a finite float in ``[0, MAX_WEIGHT]`` (:data:`MAX_WEIGHT`, :func:`check_float`).

    Raises
    ------
    TypeError, ValueError
        As :func:`check_float`, naming ``name``.
    """
    return check_float(value, name, low=0.0, high=MAX_WEIGHT)


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError`` naming them."""
    try:
        known = value in choices
    except TypeError:  # an unhashable value
        known = False
    if not known:
        raise ValueError(f"{name} must be one of {sorted(choices, key=repr)}, got {excerpt(value)}")
    return value


def check_texts_metadatas_ids(texts, metadatas=None, ids=None, *, default_id=None):
    """The ``from_texts`` inputs of both frameworks as three equal-length lists.

    A single ``str`` is one text (never a sequence of characters), as are a single ``dict`` of
    metadata and a single ``str`` id. ``default_id(j)`` names a text without id (``None``: the id
    stays ``None``).

    Returns
    -------
    (texts, metadatas, ids) : tuple of lists
        ``list[str]``, ``list[dict]`` (copies), ``list[str | None]``.

    Raises
    ------
    TypeError
        A text that is not a ``str`` (named ``texts[j]``).
    ValueError
        ``metadatas`` or ``ids`` of another length than ``texts``.
    """
    texts = [texts] if isinstance(texts, str) else list(texts)
    if isinstance(ids, str):
        ids = [ids]
    if isinstance(metadatas, dict):
        metadatas = [metadatas]
    for j, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{j}] must be a str, got {type(t).__name__}")
    metadatas = [dict(m) for m in metadatas] if metadatas is not None else [{} for _ in texts]
    if ids is None:
        ids = [default_id(j) if default_id is not None else None for j in range(len(texts))]
    ids = list(ids)
    if len(metadatas) != len(texts):
        raise ValueError(f"metadatas has {len(metadatas)} items for {len(texts)} texts")
    if len(ids) != len(texts):
        raise ValueError(f"ids has {len(ids)} items for {len(texts)} texts")
    return texts, metadatas, ids
