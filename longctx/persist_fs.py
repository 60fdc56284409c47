"""Deprecated path of :mod:`longctx.persist.fs` (moved in longctx 0.3, issue 39); remove in 0.4.

``import longctx.persist_fs`` warns once (``DeprecationWarning``) and gives the very module
``longctx.persist.fs`` (same object: attributes set on one are seen on the other).
"""

from __future__ import annotations

import sys
import warnings

from longctx.persist import fs as _module

warnings.warn(
    "longctx.persist_fs is deprecated, import longctx.persist.fs (removed in longctx 0.4)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
