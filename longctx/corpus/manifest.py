"""The corpus manifest ``corpus.json`` (one entry per document: id, index path, status, seconds,
tokens, error; the method and its options), as the corpus layer names it.

The format and its reader live in :mod:`longctx.persist.corpus_manifest` (floor 1): a save of
an index into a corpus's index root checks the index against ``corpus.json`` with them, from
the core too (:mod:`longctx.mixpr.writes`), which cannot import this layer.
"""

from __future__ import annotations

from longctx.persist.corpus_manifest import (  # noqa: F401 (documents.py takes _CONTROL; FORMAT,
    # STATUSES, PersistError, check_format: names this module had before the move)
    _CONTROL,
    CORPUS_MANIFEST,
    FORMAT,
    FORMAT_VERSION,
    MAX_SOURCE_CHARS,
    STATUSES,
    CorpusManifest,
    DocumentEntry,
    PersistError,
    check_entry_text,
    check_format,
    text_sha256,
)

__all__ = [
    "CORPUS_MANIFEST",
    "FORMAT_VERSION",
    "CorpusManifest",
    "DocumentEntry",
    "check_entry_text",
    "text_sha256",
]
