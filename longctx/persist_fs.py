"""Old path of :mod:`longctx.persist.fs` (issue 39): deprecated in longctx 0.2, removed in 0.3.

``import longctx.persist_fs`` warns once (``DeprecationWarning``) and gives the very module
``longctx.persist.fs`` (same object: attributes set on one are seen on the other).
"""

from __future__ import annotations

import sys
import warnings

from longctx.persist import fs as _module

warnings.warn(
    "longctx.persist_fs: deprecated in longctx 0.2, removed in 0.3; import longctx.persist.fs",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
