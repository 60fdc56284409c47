"""The ids and metadata given to a MixPR index, checked before any work: ids unique strings,
metadata JSON-like dicts, frozen read-only (:class:`_ReadOnlyDict`) so that every hit can hand
them out without a copy."""

from __future__ import annotations

import copy
from collections.abc import Container, Mapping, Sequence

from longctx.checks import _SURROGATE_RE
from longctx.persist.format import MAX_METADATA_DEPTH


def _check_ids(ids, n: int, default=None) -> tuple[str, ...]:
    if ids is None:
        if default is None:
            raise TypeError("ids is required: one unique str per text")
        return tuple(default)
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise TypeError(f"ids must be a sequence of str, got {type(ids).__name__}")
    ids = tuple(ids)
    if len(ids) != n:
        raise ValueError(f"ids has {len(ids)} entries for {n} texts")
    for i, x in enumerate(ids):
        if not isinstance(x, str) or not x:
            raise TypeError(f"ids[{i}] must be a non-empty str, got {x!r}")
        _check_unicode(x, f"ids[{i}]")
    if len(set(ids)) != len(ids):
        seen, dup = set(), []
        for x in ids:
            if x in seen:
                dup.append(x)
            seen.add(x)
        raise ValueError(f"ids must be unique: {dup[:5]} repeat")
    return ids


def check_held(ids, held: Container[str]) -> None:
    """Raise ``KeyError`` naming (the first five of) the ``ids`` that ``held`` (the ids an
    index holds) lacks: the check of an update or a delete, before anything changes."""
    missing = [i for i in ids if i not in held]
    if missing:
        raise KeyError(f"ids {missing[:5]} are not in the index")


def check_change(
    ids, metadatas, n: int, held: Container[str], *, replace: bool
) -> tuple[tuple[str, ...], tuple[Mapping, ...]]:
    """The ids and metadata of an insert (``replace=False``) or an update (``replace=True``) of
    ``n`` texts into an index holding the ids ``held``, checked in this order before anything
    changes: the ids (:func:`_check_ids`), then none of them held (insert) or all of them held
    (update, :func:`check_held`), then the metadata (:func:`_check_metadatas`). Returns
    ``(ids, metadatas)``, both of length ``n``.

    Raises
    ------
    TypeError, ValueError
        Bad ids or metadata; an insert of an id already held (ValueError).
    KeyError
        An update of an id not held.
    """
    ids = _check_ids(ids, n)
    if replace:
        check_held(ids, held)
    else:
        taken = [i for i in ids if i in held]
        if taken:
            raise ValueError(
                f"ids {taken[:5]} are already in the index: use update() to replace them"
            )
    return ids, _check_metadatas(metadatas, n, ids)


def _check_metadatas(metadatas, n: int, ids) -> tuple[Mapping, ...]:
    if metadatas is None:
        return tuple(_READONLY_EMPTY for _ in range(n))
    if isinstance(metadatas, Mapping) or not isinstance(metadatas, Sequence):
        raise TypeError(f"metadatas must be a sequence of dicts, got {type(metadatas).__name__}")
    if len(metadatas) != n:
        raise ValueError(f"metadatas has {len(metadatas)} entries for {n} texts")
    out = []
    for i, md in enumerate(metadatas):
        if md is None:
            out.append(_READONLY_EMPTY)
            continue
        if not isinstance(md, Mapping):
            raise TypeError(f"metadatas[{i}] (document {ids[i]!r}) must be a dict")
        out.append(_freeze(md, f"metadatas[{i}] (document {ids[i]!r})", 1))
    return tuple(out)


def _check_unicode(s: str, where: str) -> None:
    """A lone surrogate cannot be written as UTF-8: refused here, not by a later save."""
    m = _SURROGATE_RE.search(s)
    if m is not None:
        raise ValueError(
            f"{where} holds a lone surrogate (U+{ord(m.group()):04X}) at character {m.start()}: "
            "not valid Unicode text (decode bytes with errors='replace', not 'surrogateescape')"
        )


def _freeze(value, where: str, depth: int):
    """A deep, read-only copy of a metadata value: dicts as :class:`_ReadOnlyDict`, lists as
    :class:`_ReadOnlyList`, tuples as tuples of frozen items, str / numbers / bool / None as
    they are, anything else deep-copied; so no later change by the caller, and no change
    through :attr:`MixPRIndex.metadatas`, reaches the index (or its cached filter masks).

    Raises ValueError for a str (key or value) holding a lone surrogate, or nesting deeper than
    :data:`longctx.persist.format.MAX_METADATA_DEPTH` (what a save writes and a load reads
    again), naming ``where``."""
    if isinstance(value, str):
        _check_unicode(value, where)
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth > MAX_METADATA_DEPTH:
        raise ValueError(f"{where} is nested more than {MAX_METADATA_DEPTH} levels deep")
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if isinstance(k, str):
                _check_unicode(k, f"{where} key {k!r}")
            out[k] = _freeze(v, f"{where}[{k!r}]", depth + 1)
        return _ReadOnlyDict(out)
    if isinstance(value, (list, tuple)):
        items = [_freeze(v, f"{where}[{j}]", depth + 1) for j, v in enumerate(value)]
        return _ReadOnlyList(items) if isinstance(value, list) else tuple(items)
    return copy.deepcopy(value)


class _ReadOnlyDict(dict):
    """A copy of a metadata dict that refuses changes (the index shares it with every search)."""

    def _refuse(self, *a, **k):
        raise TypeError("a document's metadata in the index is read-only: use update()")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self):
        return (dict, (dict(self),))

    def __deepcopy__(self, memo):
        return {k: copy.deepcopy(v, memo) for k, v in self.items()}


class _ReadOnlyList(list):
    """A list inside a document's metadata that refuses changes (see :class:`_ReadOnlyDict`)."""

    _refuse = _ReadOnlyDict._refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce__(self):
        return (list, (list(self),))

    def __deepcopy__(self, memo):
        return [copy.deepcopy(v, memo) for v in self]


_READONLY_EMPTY = _ReadOnlyDict()
