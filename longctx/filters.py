"""Metadata filters over documents, framework-free: which documents a search may return.

Two spellings, one meaning:

- :class:`MetadataFilter` / :class:`MetadataFilters`: LlamaIndex's shape (``key``, ``value``,
  ``operator``; a list of filters joined by ``condition`` "and" / "or" / "not"), with the same
  operators and the same semantics as LlamaIndex's own simple vector store
  (``llama_index.core.vector_stores.utils.build_metadata_filter_fn``): ``==``, ``!=``, ``>``,
  ``>=``, ``<``, ``<=``, ``in``, ``nin``, ``any``, ``all``, ``contains``, ``text_match``,
  ``text_match_insensitive``, ``is_empty``. A missing key matches only ``!=`` and ``nin`` (and
  ``is_empty``). Unlike LlamaIndex's simple store, groups may nest.
- a dict (LangChain's ``filter=``, as Chroma and most LangChain vector stores take it):
  ``{"author": "Austen"}`` (equality; several keys: all must hold), ``{"year": {"$gte": 1800}}``
  with ``$eq $ne $gt $gte $lt $lte $in $nin $contains``, and ``{"$and": [...]}``,
  ``{"$or": [...]}``, ``{"$not": {...}}``. :func:`filter_from_dict` turns it into the first
  form.

:func:`compile_filter` turns either (or a plain callable ``metadata -> bool``) into one
predicate, checked once, before any search work: a bad operator, key or value raises a
``ValueError`` / ``TypeError`` naming it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OPERATORS",
    "CONDITIONS",
    "MetadataFilter",
    "MetadataFilters",
    "compile_filter",
    "filter_from_dict",
]

#: Operators of :class:`MetadataFilter` (LlamaIndex's ``FilterOperator`` values).
OPERATORS = (
    "==",
    "!=",
    ">",
    ">=",
    "<",
    "<=",
    "in",
    "nin",
    "any",
    "all",
    "contains",
    "text_match",
    "text_match_insensitive",
    "is_empty",
)
#: Conditions of :class:`MetadataFilters` (LlamaIndex's ``FilterCondition`` values).
CONDITIONS = ("and", "or", "not")

_DICT_OPERATORS = {
    "$eq": "==",
    "$ne": "!=",
    "$gt": ">",
    "$gte": ">=",
    "$lt": "<",
    "$lte": "<=",
    "$in": "in",
    "$nin": "nin",
    "$contains": "contains",
}
_ORDERED = (">", ">=", "<", "<=")
_LISTS = ("in", "nin", "any", "all")
#: Deepest nesting of filter groups accepted (a filter may come from user input).
MAX_DEPTH = 32


@dataclass(frozen=True)
class MetadataFilter:
    """One condition on a document's metadata: ``metadata[key] <operator> value``.

    Parameters
    ----------
    key : str
    value : str, number, bool, None, or a list of them (``in``, ``nin``, ``any``, ``all``)
    operator : one of :data:`OPERATORS`, default ``"=="``
    """

    key: str
    value: Any = None
    operator: str = "=="

    def __post_init__(self):
        if not isinstance(self.key, str) or not self.key:
            raise TypeError(f"filter key must be a non-empty str, got {self.key!r}")
        op = getattr(self.operator, "value", self.operator)  # a LlamaIndex enum member
        if op not in OPERATORS:
            raise ValueError(f"filter operator must be one of {', '.join(OPERATORS)}, got {op!r}")
        object.__setattr__(self, "operator", op)
        v = self.value
        if op in _LISTS:
            if isinstance(v, (str, bytes)) or not isinstance(v, Sequence):
                raise TypeError(f"filter {self.key!r} {op!r} needs a list value, got {v!r}")
            object.__setattr__(self, "value", tuple(v))
        elif op in _ORDERED and not _orderable(v):
            raise TypeError(f"filter {self.key!r} {op!r} needs a number or str, got {v!r}")
        elif op.startswith("text_match") and not isinstance(v, str):
            raise TypeError(f"filter {self.key!r} {op!r} needs a str value, got {v!r}")


@dataclass(frozen=True)
class MetadataFilters:
    """Filters joined by ``condition``: ``"and"`` (all hold), ``"or"`` (one holds), ``"not"``
    (none holds). Items may be :class:`MetadataFilter` or nested :class:`MetadataFilters`."""

    filters: tuple = ()
    condition: str = "and"

    def __post_init__(self):
        cond = getattr(self.condition, "value", self.condition) or "and"
        if cond not in CONDITIONS:
            raise ValueError(f"filter condition must be one of {CONDITIONS}, got {cond!r}")
        object.__setattr__(self, "condition", cond)
        items = tuple(self.filters)
        for i, f in enumerate(items):
            if not isinstance(f, (MetadataFilter, MetadataFilters)):
                raise TypeError(
                    f"filters[{i}] must be a MetadataFilter or MetadataFilters, got "
                    f"{type(f).__name__}"
                )
        object.__setattr__(self, "filters", items)


def _orderable(v) -> bool:
    return isinstance(v, str) or (
        isinstance(v, numbers.Real) and not isinstance(v, bool) and not math.isnan(v)
    )


def _match(op: str, value, mv) -> bool:
    """LlamaIndex's ``_process_filter_match`` (simple vector store), with comparisons between
    incomparable types false instead of a ``TypeError`` from inside a search."""
    if op == "is_empty":
        return mv is None or mv == "" or mv == []
    if mv is None:
        return op in ("!=", "nin")
    try:
        if op == "==":
            return mv == value
        if op == "!=":
            return mv != value
        if op in _ORDERED:
            if (
                isinstance(mv, bool)
                or not _orderable(mv)
                or isinstance(mv, str) != isinstance(value, str)
            ):
                return False
            return {
                ">": mv > value,
                ">=": mv >= value,
                "<": mv < value,
                "<=": mv <= value,
            }[op]
        if op == "in":
            return mv in value
        if op == "nin":
            return mv not in value
        if op == "contains":
            return isinstance(mv, (list, tuple, str)) and value in mv
        if op == "text_match":
            return isinstance(mv, str) and value in mv
        if op == "text_match_insensitive":
            return isinstance(mv, str) and value.lower() in mv.lower()
        if op == "all":
            return isinstance(mv, (list, tuple)) and all(v in mv for v in value)
        if op == "any":
            return isinstance(mv, (list, tuple)) and any(v in mv for v in value)
    except TypeError:  # e.g. a str searched in a list of dicts
        return False
    raise ValueError(f"unknown filter operator {op!r}")  # pragma: no cover (checked at init)


def _compile(f, depth: int) -> Callable[[Mapping], bool]:
    if depth > MAX_DEPTH:
        raise ValueError(f"filters are nested deeper than {MAX_DEPTH} levels")
    if isinstance(f, MetadataFilter):
        key, op, value = f.key, f.operator, f.value
        return lambda md: _match(op, value, md.get(key))
    parts = [_compile(x, depth + 1) for x in f.filters]
    if f.condition == "and":
        return lambda md: all(p(md) for p in parts)
    if f.condition == "or":
        return lambda md: any(p(md) for p in parts)
    return lambda md: not any(p(md) for p in parts)


def compile_filter(filters) -> Callable[[Mapping], bool] | None:
    """One predicate ``metadata (dict) -> bool`` from ``filters``.

    Parameters
    ----------
    filters : None, MetadataFilter, MetadataFilters, dict, or callable
        ``None`` (or an empty group): no filter, returns ``None``. A dict is read by
        :func:`filter_from_dict`; a LlamaIndex ``MetadataFilters`` / ``MetadataFilter`` (any
        object with the same fields) is converted; a callable is used as it is.

    Raises
    ------
    TypeError, ValueError
        An unknown operator or condition, a bad value for its operator, a nesting deeper than
        :data:`MAX_DEPTH`, or an object of another type; named.
    """
    if filters is None:
        return None
    f = _coerce(filters, 0)
    if f is None:
        return None
    if callable(f) and not isinstance(f, (MetadataFilter, MetadataFilters)):
        return f
    if isinstance(f, MetadataFilters) and not f.filters:
        return None
    return _compile(f, 0)


def _coerce(f, depth: int):
    if depth > MAX_DEPTH:
        raise ValueError(f"filters are nested deeper than {MAX_DEPTH} levels")
    if isinstance(f, (MetadataFilter, MetadataFilters)):
        return f
    if isinstance(f, Mapping):
        return filter_from_dict(f)
    if hasattr(f, "filters") and hasattr(f, "condition"):  # llama_index MetadataFilters
        return MetadataFilters(
            tuple(_coerce(x, depth + 1) for x in f.filters), f.condition or "and"
        )
    if hasattr(f, "key") and hasattr(f, "operator") and hasattr(f, "value"):
        return MetadataFilter(f.key, f.value, f.operator)
    if callable(f):
        return f
    raise TypeError(
        "filters must be a MetadataFilters, a MetadataFilter, a dict or a callable "
        f"metadata -> bool, got {type(f).__name__}"
    )


def filter_from_dict(d: Mapping, _depth: int = 0) -> MetadataFilters:
    """A LangChain / Chroma style filter dict as :class:`MetadataFilters` (see the module doc).

    Raises
    ------
    TypeError, ValueError
        A non-dict, an unknown ``$`` operator, or a bad value; named.
    """
    if _depth > MAX_DEPTH:
        raise ValueError(f"filter is nested deeper than {MAX_DEPTH} levels")
    if not isinstance(d, Mapping):
        raise TypeError(f"filter must be a dict, got {type(d).__name__}")
    items = []
    for key, spec in d.items():
        if not isinstance(key, str):
            raise TypeError(f"filter keys must be str, got {key!r}")
        if key in ("$and", "$or"):
            if not isinstance(spec, (list, tuple)):
                raise TypeError(f"filter {key!r} needs a list of filters, got {spec!r}")
            items.append(
                MetadataFilters(tuple(filter_from_dict(x, _depth + 1) for x in spec), key[1:])
            )
        elif key == "$not":
            items.append(MetadataFilters((filter_from_dict(spec, _depth + 1),), "not"))
        elif key.startswith("$"):
            raise ValueError(f"unknown filter operator {key!r} (use $and, $or or $not here)")
        elif isinstance(spec, Mapping):
            if not spec:
                raise ValueError(f"filter {key!r} has an empty condition")
            for op, value in spec.items():
                if op not in _DICT_OPERATORS:
                    raise ValueError(
                        f"filter {key!r}: unknown operator {op!r} (one of "
                        f"{', '.join(_DICT_OPERATORS)})"
                    )
                items.append(MetadataFilter(key, value, _DICT_OPERATORS[op]))
        else:
            items.append(MetadataFilter(key, spec, "=="))
    return MetadataFilters(tuple(items), "and")
