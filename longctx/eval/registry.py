"""Every method of ``longctx bench`` by name: those of :mod:`longctx.eval.methods`, the fused one
of :mod:`longctx.eval.fused` and ``garlic`` of :mod:`longctx.eval.garlic` (modules of their own:
they build on ``methods``)."""

from __future__ import annotations

from longctx.eval import methods
from longctx.eval.fused import MixPRFusedMethod
from longctx.eval.garlic import GarlicMethod

_FUSED = {"mixpr-fused": MixPRFusedMethod}
_AFTER = "mixpr-seeded"  # where the fused methods sit in the table's column order
_at = methods.METHOD_NAMES.index(_AFTER) + 1

_LAST = {"garlic": GarlicMethod}  # opt-in, the tables' last column

#: Every method name, in the order of the tables' columns.
METHOD_NAMES = (
    methods.METHOD_NAMES[:_at] + tuple(_FUSED) + methods.METHOD_NAMES[_at:] + tuple(_LAST)
)
_OWN = {**_FUSED, **_LAST}


def get_methods(names) -> list:
    """Method objects by name (:func:`longctx.eval.methods.get_methods`, the fused one and ``garlic``).

    Raises
    ------
    ValueError
        An unknown name (the message lists every name).
    """
    out = []
    for n in names:
        if n in _OWN:
            out.append(_OWN[n]())
        elif n in methods.METHOD_NAMES:
            out.extend(methods.get_methods([n]))
        else:
            raise ValueError(f"method must be one of {sorted(METHOD_NAMES)}, got {n!r}")
    return out
