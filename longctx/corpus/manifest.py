"""The corpus manifest ``corpus.json``: one entry per document (id, index path, status, seconds,
tokens, error), the method and its options.

Only the process that drives the build writes it (workers return their records), each time as a
whole (:meth:`longctx.corpus.storage.Storage.write_json`). A document is ``"done"`` only after its
index folder is complete; a resumed build skips exactly the ``"done"`` documents whose text is
unchanged and whose index folder is still complete.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import asdict, dataclass, field

from longctx.persist import PersistError, check_format
from longctx.persist.marks import CORPUS_MANIFEST

__all__ = [
    "CORPUS_MANIFEST",
    "FORMAT_VERSION",
    "CorpusManifest",
    "DocumentEntry",
    "check_entry_text",
    "text_sha256",
]

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
    source : str or None
        The folder, glob or JSONL file (absolute path or pattern) the document was read from,
        ``None`` for documents given as pairs or single files: a later build naming the same
        source removes the documents no longer in it (:func:`longctx.corpus.build_indexes`).
        Absent in manifests written before it existed.
    """

    doc_id: str
    path: str
    status: str
    seconds: float = 0.0
    tokens: int | None = None
    error: str | None = None
    text_sha256: str = ""
    extra: dict = field(default_factory=dict)
    source: str | None = None


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
            "documents": [_entry_json(e) for e in self.entries.values()],
        }

    @classmethod
    def from_json(cls, data, where: str) -> CorpusManifest:
        """Parse and check a manifest read from ``where``: every field typed, every entry's
        ``path`` a plain folder name under ``indexes/``, no document id or path given twice,
        every ``text_sha256`` 64 hex digits (checked against the index's text when it is
        loaded: :func:`check_entry_text`).

        Raises
        ------
        PersistError
            Not a corpus manifest, another format version, a damaged entry (named).
        """
        check_format(
            data, where, FORMAT, FORMAT_VERSION, what="longctx corpus manifest",
            rebuild="rebuild the corpus into another location",
        )  # fmt: skip
        for key, kind in (("method", str), ("options", dict), ("options_sha256", str)):
            if not isinstance(data.get(key), kind):
                raise PersistError(
                    f"{where!r}: field {key!r} must be a {kind.__name__}, got "
                    f"{type(data.get(key)).__name__}"
                )
        docs = data.get("documents")
        if not isinstance(docs, list):
            raise PersistError(f"{where!r}: field 'documents' must be a list")
        entries, paths = {}, set()
        for j, d in enumerate(docs):
            e = _check_entry(d, where, f"documents[{j}]")
            if e.doc_id in entries:
                raise PersistError(f"{where!r}: field 'documents[{j}].doc_id' repeats {e.doc_id!r}")
            # a MixPR corpus is one index holding every document: its entries share one path
            if data["method"] == "mixpr" and not _MIXPR_PATH.fullmatch(e.path):
                raise PersistError(
                    f"{where!r}: field 'documents[{j}].path' must be 'indexes/mixpr' or "
                    f"'indexes/shard-<n>' in a MixPR corpus, got {e.path[:80]!r}"
                )
            if e.path in paths and data["method"] != "mixpr":
                raise PersistError(f"{where!r}: field 'documents[{j}].path' repeats {e.path!r}")
            entries[e.doc_id] = e
            paths.add(e.path)
        return cls(data["method"], data["options"], data["options_sha256"], entries.values())


def _entry_json(e: DocumentEntry) -> dict:
    """An entry as written: ``source`` only when there is one, so that a corpus built from pairs
    writes what readers before ``source`` existed read."""
    d = asdict(e)
    if d["source"] is None:
        del d["source"]
    return d


_ENTRY_TYPES = {
    "doc_id": (str,),
    "path": (str,),
    "status": (str,),
    "seconds": (int, float),
    "tokens": (int, type(None)),
    "error": (str, type(None)),
    "text_sha256": (str,),
    "extra": (dict,),
    "source": (str, type(None)),
}
#: Longest ``source`` read from a manifest (characters).
MAX_SOURCE_CHARS = 4096
#: The index folders of a MixPR corpus: its one index, or its shards.
_MIXPR_PATH = re.compile(r"indexes/(?:mixpr|shard-\d{1,6})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SHA256_HEX = frozenset("0123456789abcdef")
#: An index folder name as :func:`longctx.corpus.documents.safe_component` writes it.
_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")


def _check_entry(d, where: str, f: str) -> DocumentEntry:
    """One ``documents[j]`` entry of a manifest, every field typed (``PersistError`` naming it)."""
    if not isinstance(d, dict):
        raise PersistError(f"{where!r}: field {f!r} must be an object")
    unknown = sorted(set(d) - set(_ENTRY_TYPES))
    missing = sorted({"doc_id", "path", "status", "text_sha256"} - set(d))
    if unknown or missing:
        raise PersistError(
            f"{where!r}: field {f!r} has unknown keys {[str(k)[:40] for k in unknown[:5]]} "
            f"or lacks {missing}"
        )
    for key, kinds in _ENTRY_TYPES.items():
        if key in d and (isinstance(d[key], bool) or not isinstance(d[key], kinds)):
            raise PersistError(
                f"{where!r}: field '{f}.{key}' has type {type(d[key]).__name__}, expected "
                f"{' or '.join(k.__name__ for k in kinds)}"
            )
    e = DocumentEntry(**d)
    if e.status not in STATUSES:
        raise PersistError(f"{where!r}: field '{f}.status' must be one of {STATUSES}")
    name = e.path[len("indexes/") :]
    if not e.path.startswith("indexes/") or name in (".", "..") or not _NAME.fullmatch(name):
        raise PersistError(
            f"{where!r}: field '{f}.path' must be 'indexes/<folder name>' (letters, digits, "
            f"'.', '_', '-'), got {e.path[:80]!r}"
        )
    if e.source is not None and (len(e.source) > MAX_SOURCE_CHARS or _CONTROL.search(e.source)):
        raise PersistError(
            f"{where!r}: field '{f}.source' is longer than {MAX_SOURCE_CHARS} characters or holds "
            "a control character"
        )
    if len(e.text_sha256) != 64 or not set(e.text_sha256) <= _SHA256_HEX:
        raise PersistError(f"{where!r}: field '{f}.text_sha256' is not a sha256 hex digest")
    if not math.isfinite(e.seconds) or e.seconds < 0 or (e.tokens is not None and e.tokens < 0):
        raise PersistError(f"{where!r}: field '{f}.seconds' or '{f}.tokens' is out of range")
    return e


def check_entry_text(entry: DocumentEntry, texts, where: str) -> None:
    """Check that a loaded index holds exactly the text the manifest recorded for ``entry``.

    Parameters
    ----------
    entry : DocumentEntry
    texts : sequence of str
        The loaded index's texts (one per-document index holds one).
    where : str
        The corpus manifest's location (named in the error).

    Raises
    ------
    PersistError
        The index holds another number of texts or another text than the entry's
        ``text_sha256`` (entries' paths swapped or edited, an index replaced), naming the entry.
    """
    texts = list(texts)
    if len(texts) != 1 or text_sha256(texts[0]) != entry.text_sha256:
        raise PersistError(
            f"{where!r}: the index of document {entry.doc_id!r} ({entry.path!r}) does not hold "
            "the text its entry's 'text_sha256' records (paths swapped or edited, or the index "
            "replaced)"
        )
