"""Checks of values read from a saved index (or about to be saved): each returns the value in
the type the loader needs or raises :class:`~longctx.persist.format.PersistError` naming the file
and the field."""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
from collections.abc import Iterable, Sequence

import numpy as np

from longctx.persist.format import MAX_METADATA_DEPTH, PersistError, is_saved_version
from longctx.tokens import MAX_TOKENS_PER_CHAR, TOKEN_SLACK


def _where(path, field: str) -> str:
    return f"{str(path)!r}: field {field!r}"


def check_format(raw, where: str, fmt: str, version: int, *, what: str, rebuild: str) -> dict:
    """``raw`` (a parsed manifest) when its ``format`` is ``fmt`` and its ``format_version`` is
    ``version``; else :class:`PersistError`: "``where`` is not a ``what``", or the version
    found (its first 40 characters) and ``rebuild``, what the user should do."""
    if not isinstance(raw, dict) or raw.get("format") != fmt:
        raise PersistError(f"{where!r} is not a {what}")
    found = raw.get("format_version")
    if not is_saved_version(found, (version,)):
        raise PersistError(
            f"{where!r} has format version {str(raw.get('format_version'))[:40]!r}; this "
            f"longctx reads {version}: {rebuild}"
        )
    return raw


def check_int_value(value, path, field: str, *, minimum=None, maximum=None, allow_none=False):
    """``value`` as an int in ``[minimum, maximum]`` (bools refused), else :class:`PersistError`."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PersistError(f"{_where(path, field)} must be an integer, got {type(value).__name__}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise PersistError(
            f"{_where(path, field)} must be in [{minimum}, {maximum}], got {str(value)[:40]}"
        )
    return int(value)


def check_float_value(value, path, field: str, *, low=None, high=None, allow_none=False):
    """``value`` as a finite float in ``[low, high]``, else :class:`PersistError`."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PersistError(f"{_where(path, field)} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or (low is not None and v < low) or (high is not None and v > high):
        raise PersistError(f"{_where(path, field)} must be in [{low}, {high}], got {v}")
    return v


def check_str_list(value, path, field: str, *, nonempty: bool = False) -> list[str]:
    """``value`` as a list of str, else :class:`PersistError`."""
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise PersistError(f"{_where(path, field)} must be a list of strings")
    if nonempty and not value:
        raise PersistError(f"{_where(path, field)} must not be empty")
    return value


def check_dict(value, path, field: str) -> dict:
    """``value`` if it is a JSON object (dict), else :class:`PersistError`."""
    if not isinstance(value, dict):
        raise PersistError(f"{_where(path, field)} must be an object, got {type(value).__name__}")
    return value


def check_token_counts(counts: np.ndarray, starts, ends, path, field: str = "token_counts") -> None:
    """Each saved unit's token count within what its text can hold: ``counts[i]`` in
    ``[1, MAX_TOKENS_PER_CHAR * (ends[i] - starts[i]) + TOKEN_SLACK]`` (a byte-level tokenizer
    gives at most one token per UTF-8 byte), the range builds clamp to
    (:func:`longctx.tokens.count_units`), so a forged count can neither make a unit free
    nor overflow a sum of counts. ``counts``, ``starts``, ``ends``: ``(n,) int64`` (characters).

    Raises
    ------
    PersistError
        A count out of range, naming ``path``, ``field`` and the unit.
    """
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    most = MAX_TOKENS_PER_CHAR * (ends - starts) + TOKEN_SLACK
    bad = (counts < 1) | (counts > most)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PersistError(
            f"{str(path)!r}: field {field!r}: unit {i} of {int(ends[i] - starts[i])} "
            f"characters counts {int(counts[i])} tokens, outside [1, {int(most[i])}]"
        )


def check_int_array(
    value, path, field: str, *, n: int | None = None, minimum=None, maximum=None
) -> np.ndarray:
    """``value`` (an array from an ``.npz`` or a JSON list) as a 1-D ``int64`` array of length
    ``n`` with values in ``[minimum, maximum]``; floats, bools, strings and 2-D arrays are
    refused with a :class:`PersistError`."""
    if isinstance(value, list):
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            raise PersistError(f"{_where(path, field)} must be a list of integers")
        try:
            value = np.asarray(value, dtype=np.int64) if value else np.zeros(0, np.int64)
        except OverflowError:
            raise PersistError(f"{_where(path, field)} holds an integer out of range") from None
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu":
        kind = getattr(value, "dtype", type(value).__name__)
        raise PersistError(f"{_where(path, field)} must be an integer array, got {kind}")
    if value.ndim != 1:
        raise PersistError(f"{_where(path, field)} must be 1-D, got shape {value.shape}")
    if n is not None and value.shape[0] != n:
        raise PersistError(f"{_where(path, field)} has {value.shape[0]} entries, expected {n}")
    if value.dtype.kind == "u" and value.size and value.max() > np.iinfo(np.int64).max:
        raise PersistError(f"{_where(path, field)} holds values out of range")
    value = value.astype(np.int64, copy=False)
    if value.size and (
        (minimum is not None and value.min() < minimum)
        or (maximum is not None and value.max() > maximum)
    ):
        raise PersistError(
            f"{_where(path, field)} holds values outside [{minimum}, {maximum}] "
            f"(min {value.min()}, max {value.max()})"
        )
    return value


def check_float_array(value, path, field: str, *, shape: Sequence[int | None]) -> np.ndarray:
    """``value`` as a finite float array of ``shape`` (``None``: any length on that axis)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu":
        kind = getattr(value, "dtype", type(value).__name__)
        raise PersistError(f"{_where(path, field)} must be a numeric array, got {kind}")
    if value.ndim != len(shape) or any(
        s is not None and s != v for s, v in zip(shape, value.shape)
    ):
        raise PersistError(
            f"{_where(path, field)} has shape {value.shape}, expected {tuple(shape)}"
        )
    if value.size and not np.isfinite(value).all():
        raise PersistError(f"{_where(path, field)} holds NaN or infinite values")
    return value


def check_spans(
    texts: Sequence[str], sources, starts, ends, path, field: str = "", *, lengths=None
) -> None:
    """Check that every ``(sources[i], starts[i], ends[i])`` is a span of ``texts``:
    ``0 <= source < len(texts)`` and ``0 <= start <= end <= len(texts[source])`` (1-D int64
    arrays of one length, as :func:`check_int_array` returns). ``lengths`` (``(len(texts),)``
    int): the texts' lengths in characters, when known without reading them (a mapped index).

    Raises
    ------
    PersistError
        Naming ``path`` and the first bad unit.
    """
    pre = f"{field}." if field else ""
    n = len(sources)
    if len(starts) != n or len(ends) != n:
        raise PersistError(f"{str(path)!r}: {pre}source/start/end have different lengths")
    if not n:
        return
    if sources.min() < 0 or sources.max() >= len(texts):
        raise PersistError(f"{_where(path, pre + 'source')} out of range for {len(texts)} texts")
    if lengths is None:
        lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    lengths = np.asarray(lengths)[sources]
    bad = (starts < 0) | (ends < starts) | (ends > lengths)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PersistError(
            f"{str(path)!r}: unit {i} has span {pre}start={int(starts[i])}, end={int(ends[i])} "
            f"outside text {int(sources[i])} of {int(lengths[i])} characters (or end < start)"
        )


def check_span_texts(texts, sources, starts, ends, unit_texts, path, field: str) -> None:
    """Check that each stored text equals ``texts[source][start:end]`` (spans already checked).

    Raises
    ------
    PersistError
        A stored text differs from its source's span (a forged or damaged file).
    """
    for i, t in enumerate(unit_texts):
        s, a, b = int(sources[i]), int(starts[i]), int(ends[i])
        if not isinstance(t, str) or texts[s][a:b] != t:
            raise PersistError(
                f"{_where(path, field)}: the text of unit {i} differs from its source text "
                f"{s} at [{a}:{b}] (damaged or forged)"
            )


def check_json_metadata(metadata, where: str) -> None:
    """Check, before anything is saved, that a user's metadata dict comes back from JSON as it
    went in: ``str`` keys only (JSON would turn ``1`` into ``"1"``), values ``None``, ``bool``,
    ``int``, finite ``float``, ``str`` and lists, tuples (read back as lists) and dicts of
    them, nested at most :data:`~longctx.persist.format.MAX_METADATA_DEPTH` levels (what an
    insert accepts; the saved file loads).

    Parameters
    ----------
    metadata : dict
    where : str
        The document, for the message (``"documents[3] (id 'doc3')"``).

    Raises
    ------
    TypeError
        A key that is not a ``str``, or a value of another type (``datetime``, ``set``,
        ``bytes``, numpy scalars...), naming ``where`` and the key.
    ValueError
        ``NaN`` / infinity, an integer of more than 4300 digits, or nesting too deep.
    """
    if not isinstance(metadata, dict):
        raise TypeError(f"{where}: metadata must be a dict, got {type(metadata).__name__}")
    limit = MAX_METADATA_DEPTH
    stack = [(metadata, "metadata", 1)]
    while stack:
        value, at, depth = stack.pop()
        if depth > limit and isinstance(value, (dict, list, tuple)):  # as an insert counts
            raise ValueError(f"{where}: {at} is nested more than {limit} levels deep")
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    raise TypeError(
                        f"{where}: {at} has the key {k!r} ({type(k).__name__}), not a str: JSON "
                        f"would store it as {json.dumps(str(k))}; use str keys"
                    )
                stack.append((v, f"{at}[{k!r}]", depth + 1))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{at}[{i}]", depth + 1) for i, v in enumerate(value))
        elif value is None or isinstance(value, (bool, str)):
            continue
        elif isinstance(value, int):
            if value.bit_length() > 14_000:  # more than ~4300 decimal digits
                raise ValueError(f"{where}: {at} is an integer too large for JSON")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(
                    f"{where}: {at} is {value}, which JSON cannot store: use None or a number"
                )
        else:
            raise TypeError(
                f"{where}: {at} is a {type(value).__module__}.{type(value).__qualname__}, which "
                "JSON cannot store: convert it (to a str, number, list or dict) before saving"
            )


def text_digest(text: str) -> str:
    """SHA-256 (hex) of a text's UTF-8 bytes, as stored to tie saved node ids to their texts."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def check_local_model_name(name, path, field: str, *, allowed: Iterable[str] = ()) -> str | None:
    """A model / encoder name read from a saved file: ``None``, one of ``allowed`` (packaged
    defaults), or an existing local directory. Anything else (a Hugging Face hub name) is refused,
    so loading never downloads.

    Raises
    ------
    PersistError
        Naming the file and field, with how to pass the model explicitly.
    """
    if name is None or name in tuple(allowed):
        return name
    if not isinstance(name, str) or len(name) > 4096:
        raise PersistError(f"{_where(path, field)} must be a model name or path")
    if os.path.isdir(name):
        return name
    raise PersistError(
        f"{_where(path, field)} names the model {name[:200]!r}, which is not a local directory: "
        "a saved index never makes longctx download a model. Pass the model (or encoder) "
        "explicitly to load()"
    )


__all__ = [
    "check_format",
    "check_int_value",
    "check_token_counts",
    "check_float_value",
    "check_str_list",
    "check_dict",
    "check_int_array",
    "check_float_array",
    "check_spans",
    "check_span_texts",
    "text_digest",
    "check_json_metadata",
    "check_local_model_name",
]
