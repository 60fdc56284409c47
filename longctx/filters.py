"""Metadata filters over documents, framework-free: which documents a search may return.

Two spellings, one meaning:

- :class:`MetadataFilter` / :class:`MetadataFilters`: LlamaIndex's shape (``key``, ``value``,
  ``operator``; a list of filters joined by ``condition`` "and" / "or" / "not"), with the same
  operators and the same semantics as LlamaIndex's own simple vector store
  (``llama_index.core.vector_stores.utils.build_metadata_filter_fn``): ``==``, ``!=``, ``>``,
  ``>=``, ``<``, ``<=``, ``in``, ``nin``, ``any``, ``all``, ``contains``, ``text_match``,
  ``text_match_insensitive``, ``is_empty``: Python's own comparison of the two values (``True
  >= 1`` holds; ``any`` / ``all`` / ``contains`` on a str value test substrings, on a dict its
  keys). A missing key matches only ``!=`` and ``nin`` (and ``is_empty``). Two differences: a
  comparison Python refuses (``"a" > 1``) is false, where LlamaIndex raises a ``TypeError``
  from inside the search; and groups may nest, at most :data:`MAX_DEPTH` levels deep. The
  values of ``in`` / ``nin`` / ``any`` / ``all`` must be hashable (str, number, bool, None):
  they are looked up in a set, so a filter of ``m`` values over ``n`` documents costs
  ``m + n``, not ``m * n``.
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

import hashlib
import math
import numbers
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OPERATORS",
    "CONDITIONS",
    "MetadataFilter",
    "MetadataFilters",
    "compile_filter",
    "filter_digest",
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
            _hashable_values(self.key, op, self.value)  # named now, not at the first search
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


def _hashable_values(key: str, op: str, values: tuple) -> frozenset:
    """The values of a list operator as a set (each document is one lookup, not a scan)."""
    for i, v in enumerate(values):
        try:
            hash(v)
        except TypeError:
            raise TypeError(
                f"filter {key!r} {op!r}: value[{i}] is a {type(v).__name__}, which cannot be "
                "looked up; use str, number, bool or None values"
            ) from None
    return frozenset(values)


def _members(mv) -> frozenset | None:
    """What ``v in mv`` tests for a list / tuple (its hashable items: a filter value, always
    hashable, never equals an unhashable one) or a dict (its keys); ``None`` for other types."""
    if isinstance(mv, dict):
        return frozenset(mv)
    if isinstance(mv, (list, tuple)):
        out = set()
        for x in mv:
            try:
                out.add(x)
            except TypeError:
                continue
        return frozenset(out)
    return None


def _leaf(f: MetadataFilter) -> Callable[[Mapping], bool]:
    """LlamaIndex's ``_process_filter_match`` (simple vector store,
    ``llama_index.core.vector_stores.utils.build_metadata_filter_fn``): Python's own comparison
    of the metadata value with the filter's (so ``True >= 1`` holds, ``any`` / ``all`` on a str
    value test substrings, ``contains`` on a dict tests its keys), with one difference: a
    comparison Python refuses (a ``TypeError``, e.g. ``"a" > 1``) is false instead of an error
    from inside a search. ``in`` / ``nin`` / ``any`` / ``all`` are set lookups: each document
    costs its value's size, not the filter list's."""
    key, op, value = f.key, f.operator, f.value
    if op == "is_empty":

        def pred(md):
            mv = md.get(key)
            return mv is None or mv == "" or mv == []

        return pred
    if op in ("in", "nin"):
        values = _hashable_values(key, op, value)
        want = op == "in"

        def pred(md):
            mv = md.get(key)
            if mv is None:
                return not want
            try:
                return (mv in values) == want
            except TypeError:  # an unhashable value equals no filter value
                return not want

        return pred
    if op in ("any", "all"):
        values = _hashable_values(key, op, value)
        is_any = op == "any"

        def pred(md):
            mv = md.get(key)
            if mv is None:
                return False
            if isinstance(mv, str):  # substrings, in order, as LlamaIndex's generator
                for v in value:
                    if not isinstance(v, str):
                        return False  # LlamaIndex: TypeError
                    if (v in mv) == is_any:
                        return is_any
                return not is_any
            members = _members(mv)
            if members is not None:
                return not values.isdisjoint(members) if is_any else values <= members
            try:
                hits = (v in mv for v in value)
                return any(hits) if is_any else all(hits)
            except TypeError:
                return False

        return pred
    compare = _COMPARE.get(op)
    if compare is None:  # pragma: no cover (checked at init)
        raise ValueError(f"unknown filter operator {op!r}")

    def pred(md):
        mv = md.get(key)
        if mv is None:
            return op == "!="
        try:
            return bool(compare(mv, value))
        except TypeError:  # e.g. "a" > 1, or a str searched in a number
            return False

    return pred


def _text_match(mv, value) -> bool:
    return isinstance(mv, str) and value in mv


def _text_match_insensitive(mv, value) -> bool:
    return isinstance(mv, str) and value.lower() in mv.lower()


_COMPARE = {
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "contains": lambda mv, value: value in mv,
    "text_match": _text_match,
    "text_match_insensitive": _text_match_insensitive,
}


def _too_deep() -> ValueError:
    return ValueError(f"filters are nested more than {MAX_DEPTH} levels deep")


def _compile(f, level: int) -> Callable[[Mapping], bool]:
    """``level``: the groups (``MetadataFilters``) around ``f``, counting ``f`` if a group."""
    if isinstance(f, MetadataFilter):
        return _leaf(f)
    if level > MAX_DEPTH:
        raise _too_deep()
    parts = [_compile(x, level + 1) for x in f.filters]
    if f.condition == "and":
        return lambda md: all(p(md) for p in parts)
    if f.condition == "or":
        return lambda md: any(p(md) for p in parts)
    return lambda md: not any(p(md) for p in parts)


def compile_filter(filters, *, name: str = "filters") -> Callable[[Mapping], bool] | None:
    """One predicate ``metadata (dict) -> bool`` from ``filters``.

    Parameters
    ----------
    filters : None, MetadataFilter, MetadataFilters, dict, or callable
        ``None`` (or an empty group): no filter, returns ``None``. A dict is read by
        :func:`filter_from_dict`; a LlamaIndex ``MetadataFilters`` / ``MetadataFilter`` (any
        object with the same fields) is converted; a callable is used as it is.
    name : str, default "filters"
        The caller's name of the argument, in the error for an object of another type (a
        LangChain retriever's ``filter``).

    Raises
    ------
    TypeError, ValueError
        An unknown operator or condition, a bad value for its operator, a nesting deeper than
        :data:`MAX_DEPTH`, or an object of another type; named.
    """
    if filters is None:
        return None
    f = _coerce(filters, 1, name)
    if f is None:
        return None
    if callable(f) and not isinstance(f, (MetadataFilter, MetadataFilters)):
        return f
    if isinstance(f, MetadataFilters) and not f.filters:
        return None
    return _compile(f, 1)


_SCALARS = (str, int, float, bool, type(None))


def filter_digest(filters) -> bytes | None:
    """A 32-byte digest of what ``filters`` keeps, for caching its mask: equal for filters that
    read the same (a dict and the :class:`MetadataFilters` it spells give one digest), ``None``
    when it cannot be told (no filter, a callable, a value of another type than str, number,
    bool, None or a list of them). Costs one pass over the filter; call it after
    :func:`compile_filter` has checked the filter."""
    if filters is None:
        return None
    f = _coerce(filters, 1)
    if not isinstance(f, (MetadataFilter, MetadataFilters)):
        return None
    h = hashlib.blake2b(digest_size=32)
    stack = [f]
    while stack:
        x = stack.pop()
        if isinstance(x, MetadataFilters):
            h.update(f"({x.condition} {len(x.filters)} ".encode())
            stack.extend(reversed(x.filters))
            continue
        v = x.value
        if isinstance(v, tuple):
            if not all(type(e) in _SCALARS for e in v):
                return None
        elif type(v) not in _SCALARS:
            return None
        h.update(repr((x.key, x.operator, v)).encode("utf-8", "surrogatepass"))
    return h.digest()


def _coerce(f, level: int, name: str = "filters"):
    if isinstance(f, (MetadataFilter, MetadataFilters)):
        return f
    if isinstance(f, Mapping):
        return filter_from_dict(f, level - 1)
    if hasattr(f, "filters") and hasattr(f, "condition"):  # llama_index MetadataFilters
        if level > MAX_DEPTH:
            raise _too_deep()
        return MetadataFilters(
            tuple(_coerce(x, level + 1) for x in f.filters), f.condition or "and"
        )
    if hasattr(f, "key") and hasattr(f, "operator") and hasattr(f, "value"):
        return MetadataFilter(f.key, f.value, f.operator)
    if callable(f):
        return f
    raise TypeError(
        f"{name} must be a MetadataFilters, a MetadataFilter, a dict or a callable "
        f"metadata -> bool, got {type(f).__name__}"
    )


def filter_from_dict(d: Mapping, _depth: int = 0) -> MetadataFilters:
    """A LangChain / Chroma style filter dict as :class:`MetadataFilters` (see the module doc).

    Each dict is one group; a dict whose one key is ``$and``, ``$or`` or ``$not`` is that group
    (so ``{"$and": [{"$and": [...]}]}`` nests as deep as it reads).

    Raises
    ------
    TypeError, ValueError
        A non-dict, an unknown ``$`` operator, a bad value, or groups nested more than
        :data:`MAX_DEPTH` levels deep; named.
    """
    level = _depth + 1  # the groups around this dict's group, counting it
    if level > MAX_DEPTH:
        raise _too_deep()
    if not isinstance(d, Mapping):
        raise TypeError(f"filter must be a dict, got {type(d).__name__}")
    single = len(d) == 1 and next(iter(d)) in ("$and", "$or", "$not")
    inner = level if single else level + 1  # the level of a $and / $or / $not group
    items = []
    for key, spec in d.items():
        if not isinstance(key, str):
            raise TypeError(f"filter keys must be str, got {key!r}")
        if key in ("$and", "$or"):
            if not isinstance(spec, (list, tuple)):
                raise TypeError(f"filter {key!r} needs a list of filters, got {spec!r}")
            items.append(MetadataFilters(tuple(filter_from_dict(x, inner) for x in spec), key[1:]))
        elif key == "$not":
            items.append(MetadataFilters((filter_from_dict(spec, inner),), "not"))
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
    if single:
        return items[0]
    return MetadataFilters(tuple(items), "and")
