"""Shared corpora of the adapters' ``CorpusRetriever`` filter tests: three documents with
metadata, as one MixPR index, two shards or one MixPR index per document, and a stand-in
per-document (diversity) corpus."""

from __future__ import annotations

from longctx.corpus import CorpusIndex
from longctx.corpus.shards.index import ShardedMixPRIndex
from longctx.io import sample_text
from longctx.mixpr import MixPRIndex

_T = sample_text("alice")
TEXTS = [_T[5_000:12_000], _T[60_000:67_000], _T[90_000:97_000]]
IDS = ["a", "b", "c"]
METAS = [{"lang": "en", "part": 1}, {"lang": "fr", "part": 2}, {"lang": "en", "part": 3}]
QUERY = "Who sits at the tea party with the Hatter?"


def metadata_corpus(kind: str) -> CorpusIndex:
    """The three documents as one MixPR index (``"one"``), two shards (``"sharded"``) or one
    MixPR index each (``"per_document"``)."""
    if kind == "one":
        return CorpusIndex(MixPRIndex.from_texts(TEXTS, ids=IDS, metadatas=METAS))
    if kind == "per_document":
        return CorpusIndex(
            {
                i: MixPRIndex.from_texts([t], ids=[i], metadatas=[m])
                for t, i, m in zip(TEXTS, IDS, METAS, strict=True)
            }
        )
    return CorpusIndex(ShardedMixPRIndex.from_texts(TEXTS, shards=2, ids=IDS, metadatas=METAS))


class _PerDocument:
    """A stand-in of one document's diversity index (``search`` and ``texts``)."""

    texts = ("x",)

    def search(self, query, **kw):  # pragma: no cover - never reached: refused before
        raise AssertionError("searched")


def per_document_corpus() -> CorpusIndex:
    """A per-document corpus (what a diversity corpus loads as)."""
    return CorpusIndex({"d": _PerDocument()})
