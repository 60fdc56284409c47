"""Deprecated path of :mod:`longctx.persist.reader` (moved in longctx 0.3, issue 39); remove in 0.4.

``import longctx.persist_reader`` warns once (``DeprecationWarning``) and gives the very module
``longctx.persist.reader`` (same object: attributes set on one are seen on the other).
"""

from __future__ import annotations

import sys
import warnings

from longctx.persist import reader as _module

warnings.warn(
    "longctx.persist_reader is deprecated, import longctx.persist.reader (removed in longctx 0.4)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
