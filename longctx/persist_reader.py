"""Old path of :mod:`longctx.persist.reader` (issue 39): deprecated in longctx 0.2, removed in 0.3.

``import longctx.persist_reader`` warns once (``DeprecationWarning``) and gives the very module
``longctx.persist.reader`` (same object: attributes set on one are seen on the other).
"""

from __future__ import annotations

import sys
import warnings

from longctx.persist import reader as _module

warnings.warn(
    "longctx.persist_reader: deprecated in longctx 0.2, removed in 0.3; import longctx.persist.reader",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
