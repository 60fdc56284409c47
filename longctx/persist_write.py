"""Old path of :mod:`longctx.persist.writer` (issue 39): deprecated in longctx 0.2, removed in 0.3.

``import longctx.persist_write`` warns once (``DeprecationWarning``) and gives the very module
``longctx.persist.writer`` (same object: attributes set on one are seen on the other).
"""

from __future__ import annotations

import sys
import warnings

from longctx.persist import writer as _module

warnings.warn(
    "longctx.persist_write: deprecated in longctx 0.2, removed in 0.3; import longctx.persist.writer",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
