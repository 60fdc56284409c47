"""Old path of :mod:`longctx.corpus.shards.index` (issue 39): deprecated in longctx 0.2, removed
in 0.3.

``import longctx.mixpr.shards`` warns once (``DeprecationWarning``) and gives the very module
``longctx.corpus.shards.index`` (:class:`~longctx.corpus.shards.index.ShardedMixPRIndex`).
"""

from __future__ import annotations

import sys
import warnings

from longctx.corpus.shards import index as _module

warnings.warn(
    "longctx.mixpr.shards: deprecated in longctx 0.2, removed in 0.3; import longctx.corpus.shards",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
