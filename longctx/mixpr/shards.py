"""Deprecated path of :mod:`longctx.corpus.shards.index` (moved in longctx 0.3, issue 39); remove
in 0.4.

``import longctx.mixpr.shards`` warns once (``DeprecationWarning``) and gives the very module
``longctx.corpus.shards.index`` (:class:`~longctx.corpus.shards.index.ShardedMixPRIndex`).
"""

from __future__ import annotations

import sys
import warnings

from longctx.corpus.shards import index as _module

warnings.warn(
    "longctx.mixpr.shards is deprecated, import longctx.corpus.shards (removed in longctx 0.4)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _module
