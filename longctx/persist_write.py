"""Deprecated path of :mod:`longctx.persist.writer` (moved in longctx 0.3, issue 39); remove in 0.4.

``import longctx.persist_write`` warns once (``DeprecationWarning``) and gives the very module
``longctx.persist.writer`` (same object: attributes set on one are seen on the other).
"""

from __future__ import annotations

import sys
import warnings

from longctx.persist import writer as _module

warnings.warn(
    "longctx.persist_write is deprecated, import longctx.persist.writer (removed in longctx 0.4)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
