"""Metadata filters saved with a retriever: to JSON and back (:mod:`longctx.filters`).

A filter given as a :class:`~longctx.filters.MetadataFilters`, a LlamaIndex ``MetadataFilters``
or a LangChain / Chroma dict is saved as the JSON form of its :class:`MetadataFilters`
(``{"condition": "and", "filters": [{"key": ..., "operator": ..., "value": ...}, ...]}``, groups
nested) and read back as a :class:`MetadataFilters` with the same meaning. A plain callable
cannot be saved: :func:`filter_to_json` returns ``None`` for it and the caller says so.
Anything read is untrusted: types, operators, conditions, values and nesting are checked
(:class:`PersistError`), as strictly as the save writes them: a ``"condition"`` of ``null``,
``""``, ``0`` or ``false`` is refused, not read as ``"and"``, and so is a number beyond the float
range (issue 44). The nesting limit is :data:`longctx.filters.MAX_DEPTH` groups on both sides: a
filter the API accepts saves and loads (its JSON takes
:data:`longctx.persist.format.SAVED_FILTER_DEPTH` levels, within what a load reads).
"""

from __future__ import annotations

import math

from longctx.filters import (
    CONDITIONS,
    MAX_DEPTH,
    OPERATORS,
    MetadataFilter,
    MetadataFilters,
    _coerce,
)
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
    return _group(f, 1)


def _group(f: MetadataFilters, level: int) -> dict:
    if level > MAX_DEPTH:  # what compile_filter and the load refuse is not written
        raise ValueError(f"filters are nested more than {MAX_DEPTH} levels deep")
    return {
        "condition": f.condition,
        "filters": [
            _group(x, level + 1) if isinstance(x, MetadataFilters) else _one(x) for x in f.filters
        ],
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
        return _read_group(raw, 1)
    except (TypeError, ValueError, KeyError) as exc:
        raise PersistError(f"{where!r}: field 'filters' is damaged: {str(exc)[:200]}") from None


def _read_group(raw, level: int) -> MetadataFilters:
    """A group at ``level`` (the top group is level 1, as in :func:`longctx.filters.compile_filter`)."""
    if level > MAX_DEPTH:
        raise ValueError(f"filters are nested more than {MAX_DEPTH} levels deep")
    if not isinstance(raw, dict) or set(raw) != {"condition", "filters"}:
        raise TypeError("a filter group must be an object with 'condition' and 'filters'")
    cond = raw["condition"]
    if not isinstance(cond, str) or cond not in CONDITIONS:
        raise ValueError(f"'condition' must be one of {', '.join(CONDITIONS)}, got {cond!r}"[:200])
    if not isinstance(raw["filters"], list):
        raise TypeError("'filters' must be a list")
    items = []
    for j, x in enumerate(raw["filters"]):
        if isinstance(x, dict) and "condition" in x:
            items.append(_read_group(x, level + 1))
            continue
        if not isinstance(x, dict) or set(x) != {"key", "operator", "value"}:
            raise TypeError(f"filters[{j}] must be an object with 'key', 'operator' and 'value'")
        key, op, v = x["key"], x["operator"], x["value"]
        if not isinstance(key, str) or not key:
            raise TypeError(f"filters[{j}]: 'key' must be a non-empty str")
        if not isinstance(op, str) or op not in OPERATORS:
            raise ValueError(f"filters[{j}]: unknown operator {op!r}"[:200])
        for e in v if isinstance(v, list) else [v]:
            if not isinstance(e, _SCALARS):
                raise TypeError(f"filter {key!r}: a value must be a JSON scalar or a list of them")
            if isinstance(e, float) and not math.isfinite(e):
                raise ValueError(f"filter {key!r}: the value {e} is not a finite number")
        items.append(MetadataFilter(key, v, op))
    return MetadataFilters(tuple(items), cond)
