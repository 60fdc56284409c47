"""Indexing a whole corpus: one persisted index per document, built in parallel on Ray (a local
Ray by default, or a cluster), resumable, written to a folder or an fsspec URL.

Layout of a corpus at ``out``::

    out/corpus.json              manifest: method, options, one entry per document
                                 (doc_id, path, status, seconds, tokens, error, text_sha256)
    out/indexes/<name>/...       one index folder per document, in each index's own JSON + .npz
                                 format (``MixPRIndex.save``, ``DiversityIndex.save``,
                                 ``build_hwdag(out_dir=...)``); <name> = safe_component(doc_id)
    out/.partial/<name>/         (local folders) a GARLIC build's checkpoint until it is finished
    out/indexes/writing.json     (MixPR) the mark of the last build: "writing" while it replaces
                                 files, then "done" (:mod:`~longctx.corpus.writers`)
    out/indexes/.build.lock      (local folders) the build lock: a build holds it from reading
                                 corpus.json to its last file, a second build waits
                                 (:func:`~longctx.corpus.writers.building`)

A MixPR corpus is one index over every document (``indexes/mixpr``), or with ``shards=N``
(``--shards N``) ``indexes/shards.json`` and ``indexes/shard-<i>/``: shards searched as one index
(:mod:`~longctx.corpus.shards.build`, :class:`longctx.corpus.shards.index.ShardedMixPRIndex`).

Modules: :mod:`~longctx.corpus.documents` (inputs, ids), :mod:`~longctx.corpus.methods` (one
builder per index kind), :mod:`~longctx.corpus.build` (:func:`build_indexes`),
:mod:`~longctx.corpus.jobs` (one document's work), :mod:`~longctx.corpus.ray_backend` (actor
pool / tasks; Ray itself is started by :mod:`longctx._ray`), :mod:`~longctx.corpus.storage`
(local or fsspec), :mod:`~longctx.corpus.manifest`, :mod:`~longctx.corpus.load` (loading,
searching), and :mod:`longctx.corpus.shards`: a MixPR corpus, one index
(:mod:`~longctx.corpus.shards.single`) or shards (:class:`~longctx.corpus.shards.ShardedMixPRIndex`,
:mod:`~longctx.corpus.shards.build`). This package uses the methods' packages (``longctx.mixpr``,
...) and is never imported by them.
"""

from __future__ import annotations

from longctx.corpus.build import CorpusBuildResult, build_indexes
from longctx.corpus.documents import read_documents, safe_component
from longctx.corpus.load import CorpusIndex, load_corpus, load_index, read_corpus_manifest
from longctx.corpus.manifest import CorpusManifest, DocumentEntry
from longctx.corpus.methods import METHODS
from longctx.corpus.storage import Storage

__all__ = [
    "METHODS",
    "CorpusBuildResult",
    "CorpusIndex",
    "CorpusManifest",
    "DocumentEntry",
    "Storage",
    "build_indexes",
    "load_corpus",
    "load_index",
    "read_corpus_manifest",
    "read_documents",
    "safe_component",
]
