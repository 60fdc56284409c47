"""Argument checks run before any heavy work. Every error names the argument."""

from __future__ import annotations

import numbers


def check_text(value, name: str = "text", *, allow_empty: bool = False) -> str:
    """Return ``value`` if it is a ``str`` with some non-space character.

    Raises
    ------
    TypeError
        If ``value`` is not a ``str``.
    ValueError
        If ``value`` is empty or only whitespace (unless ``allow_empty``).
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{name} must contain some non-whitespace text, got {value!r}")
    return value


def check_int(value, name: str, *, minimum: int | None = None, allow_none: bool = False):
    """Return ``value`` as ``int`` after checking type and lower bound.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (``bool`` is rejected too).
    ValueError
        If ``value < minimum``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_float(
    value,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    allow_none: bool = False,
):
    """Return ``value`` as ``float`` after checking it lies in ``[low, high]``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is NaN or outside ``[low, high]``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if value != value:
        raise ValueError(f"{name} must not be NaN")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
    return value


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ValueError`` naming them."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {sorted(choices)}, got {value!r}")
    return value
