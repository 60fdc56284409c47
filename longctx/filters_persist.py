"""Metadata filters saved with a retriever: to JSON and back (:mod:`longctx.filters`).

A filter given as a :class:`~longctx.filters.MetadataFilters`, a LlamaIndex ``MetadataFilters``
or a LangChain / Chroma dict is saved as the JSON form of its :class:`MetadataFilters`
(``{"condition": "and", "filters": [{"key": ..., "operator": ..., "value": ...}, ...]}``, groups
nested) and read back as a :class:`MetadataFilters` with the same meaning. A plain callable
cannot be saved: :func:`filter_to_json` returns ``None`` for it and the caller says so.
Anything read is untrusted: types, operators and nesting are checked (:class:`PersistError`).
"""

from __future__ import annotations

import math

from longctx.filters import MAX_DEPTH, MetadataFilter, MetadataFilters, _coerce
from longctx.persist import PersistError

__all__ = ["filter_from_json", "filter_to_json", "is_savable_filter"]

_SCALARS = (str, int, float, bool, type(None))


def is_savable_filter(filters) -> bool:
    """Whether :func:`filter_to_json` can save ``filters`` (``None`` and every filter but a plain
    callable)."""
    if filters is None:
        return True
    return isinstance(_coerce(filters, 0), (MetadataFilter, MetadataFilters))


def filter_to_json(filters) -> dict | None:
    """The JSON form of ``filters`` (see the module doc); ``None`` for no filter or a plain
    callable (which cannot be saved).

    Raises
    ------
    TypeError, ValueError
        A bad filter (as :func:`longctx.filters.compile_filter`), or a value that JSON cannot
        hold as it is (a ``datetime``, ``NaN``...), named.
    """
    if filters is None:
        return None
    f = _coerce(filters, 0)
    if not isinstance(f, (MetadataFilter, MetadataFilters)):
        return None
    if isinstance(f, MetadataFilter):
        f = MetadataFilters((f,), "and")
    return _group(f)


def _group(f: MetadataFilters) -> dict:
    return {
        "condition": f.condition,
        "filters": [_group(x) if isinstance(x, MetadataFilters) else _one(x) for x in f.filters],
    }


def _one(f: MetadataFilter) -> dict:
    value = list(f.value) if isinstance(f.value, tuple) else f.value
    for v in value if isinstance(value, list) else [value]:
        if not isinstance(v, _SCALARS) or (isinstance(v, float) and not math.isfinite(v)):
            raise TypeError(
                f"filter {f.key!r} {f.operator!r}: value {v!r} cannot be saved as JSON (a str, "
                "a finite number, a bool or None)"
            )
    return {"key": f.key, "operator": f.operator, "value": value}


def filter_from_json(raw, where: str) -> MetadataFilters | None:
    """The :class:`MetadataFilters` that :func:`filter_to_json` saved (``None`` for ``None``).

    Raises
    ------
    PersistError
        ``raw`` is not such a form (a wrong type, an unknown operator or condition, nested deeper
        than :data:`longctx.filters.MAX_DEPTH`), naming ``where``.
    """
    if raw is None:
        return None
    try:
        return _read_group(raw, 0)
    except (TypeError, ValueError, KeyError) as exc:
        raise PersistError(f"{where!r}: field 'filters' is damaged: {str(exc)[:200]}") from None


def _read_group(raw, depth: int) -> MetadataFilters:
    if depth > MAX_DEPTH:
        raise ValueError(f"filters are nested deeper than {MAX_DEPTH} levels")
    if not isinstance(raw, dict) or set(raw) != {"condition", "filters"}:
        raise TypeError("a filter group must be an object with 'condition' and 'filters'")
    if not isinstance(raw["filters"], list):
        raise TypeError("'filters' must be a list")
    items = []
    for x in raw["filters"]:
        if isinstance(x, dict) and "condition" in x:
            items.append(_read_group(x, depth + 1))
            continue
        if not isinstance(x, dict) or set(x) != {"key", "operator", "value"}:
            raise TypeError("a filter must be an object with 'key', 'operator' and 'value'")
        v = x["value"]
        vals = v if isinstance(v, list) else [v]
        if not all(isinstance(e, _SCALARS) for e in vals):
            raise TypeError(f"filter {x['key']!r}: a value must be a JSON scalar or a list of them")
        items.append(MetadataFilter(x["key"], v, x["operator"]))
    return MetadataFilters(tuple(items), raw["condition"])
