"""The corpus manifest ``corpus.json``: one entry per document (id, index path, status, seconds,
tokens, error), the method and its options.

Only the process that drives the build writes it (workers return their records), each time as a
whole (:meth:`longctx.corpus.storage.Storage.write_json`). A document is ``"done"`` only after its
index folder is complete; a resumed build skips exactly the ``"done"`` documents whose text is
unchanged and whose index folder is still complete.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field

from longctx.persist import PersistError

__all__ = ["CORPUS_MANIFEST", "FORMAT_VERSION", "CorpusManifest", "DocumentEntry", "text_sha256"]

CORPUS_MANIFEST = "corpus.json"
FORMAT = "longctx.corpus"
FORMAT_VERSION = 1
STATUSES = ("done", "failed")


def text_sha256(text: str) -> str:
    """sha256 of the UTF-8 text (detects a changed document on resume)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class DocumentEntry:
    """One document of the corpus manifest.

    Attributes
    ----------
    doc_id : str
        The user's id, unchanged.
    path : str
        The index folder, relative to the corpus root (``indexes/<safe component>``).
    status : {"done", "failed"}
    seconds : float
        Wall-clock seconds of its last build (in the worker).
    tokens : int or None
        The document's tokens as its index counts them (MixPR/diversity: unit token counts;
        GARLIC: level-1 chunk tokens of the model's tokenizer).
    error : str or None
        ``"ExceptionType: message"`` of a failed build.
    text_sha256 : str
    extra : dict
        ``cpu_seconds`` (CPU time of the building process, all its threads) and method extras
        (GARLIC: ``tokens_generated`` in this build).
    """

    doc_id: str
    path: str
    status: str
    seconds: float = 0.0
    tokens: int | None = None
    error: str | None = None
    text_sha256: str = ""
    extra: dict = field(default_factory=dict)


class CorpusManifest:
    """The parsed ``corpus.json`` (see the module docstring)."""

    def __init__(self, method: str, options: dict, options_sha256: str, entries=()):
        self.method = method
        self.options = options
        self.options_sha256 = options_sha256
        self.entries: dict[str, DocumentEntry] = {e.doc_id: e for e in entries}

    def reorder(self, doc_ids) -> None:
        """Entries in the order of ``doc_ids`` (the input order), others after them as they were
        (workers finish in any order; the manifest keeps the corpus order)."""
        rank = {d: i for i, d in enumerate(doc_ids)}
        old = list(self.entries)
        key = {d: (rank[d], 0) if d in rank else (len(rank), i) for i, d in enumerate(old)}
        self.entries = {d: self.entries[d] for d in sorted(old, key=key.__getitem__)}

    def to_json(self) -> dict:
        from longctx import __version__

        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "longctx_version": __version__,
            "method": self.method,
            "options": self.options,
            "options_sha256": self.options_sha256,
            "documents": [asdict(e) for e in self.entries.values()],
        }

    @classmethod
    def from_json(cls, data, where: str) -> CorpusManifest:
        """Parse and check a manifest read from ``where``.

        Raises
        ------
        PersistError
            Not a corpus manifest, another format version, a damaged entry.
        """
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise PersistError(f"{where!r} is not a longctx corpus manifest")
        if data.get("format_version") != FORMAT_VERSION:
            raise PersistError(
                f"{where!r} has format version {data.get('format_version')!r}; this longctx "
                f"reads {FORMAT_VERSION}: rebuild the corpus into another location"
            )
        try:
            entries = []
            for d in data["documents"]:
                e = DocumentEntry(**d)
                if e.status not in STATUSES or not isinstance(e.path, str):
                    raise ValueError(f"bad entry {d!r}")
                if not e.path.startswith("indexes/") or ".." in e.path.split("/"):
                    raise ValueError(f"entry path {e.path!r} is outside indexes/")
                entries.append(e)
            return cls(str(data["method"]), data["options"], str(data["options_sha256"]), entries)
        except (KeyError, TypeError, ValueError) as exc:
            raise PersistError(f"{where!r} is damaged: {exc}") from None
