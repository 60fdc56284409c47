"""Every method of ``longctx bench`` by name: those of :mod:`longctx.eval.methods` and the
fused one of :mod:`longctx.eval.fused` (a module of its own: it builds on ``methods``)."""

from __future__ import annotations

from longctx.eval import methods
from longctx.eval.fused import MixPRFusedMethod

_FUSED = {"mixpr-fused": MixPRFusedMethod}
_AFTER = "mixpr-seeded"  # where the fused methods sit in the table's column order
_at = methods.METHOD_NAMES.index(_AFTER) + 1

#: Every method name, in the order of the tables' columns.
METHOD_NAMES = methods.METHOD_NAMES[:_at] + tuple(_FUSED) + methods.METHOD_NAMES[_at:]


def get_methods(names) -> list:
    """Method objects by name (:func:`longctx.eval.methods.get_methods` and the fused ones).

    Raises
    ------
    ValueError
        An unknown name (the message lists every name).
    """
    out = []
    for n in names:
        if n in _FUSED:
            out.append(_FUSED[n]())
        elif n in methods.METHOD_NAMES:
            out.extend(methods.get_methods([n]))
        else:
            raise ValueError(f"method must be one of {sorted(METHOD_NAMES)}, got {n!r}")
    return out
