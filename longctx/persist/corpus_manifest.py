"""The corpus manifest ``corpus.json``: one entry per document (id, index path, status, seconds,
tokens, error), the method and its options.

Only the process that drives the build writes it (workers return their records), each time as a
whole (:meth:`longctx.corpus.storage.Storage.write_json`). A document is ``"done"`` only after its
index folder is complete; a resumed build skips exactly the ``"done"`` documents whose text is
unchanged and whose index folder is still complete.

The format lives on floor 1 (re-exported by :mod:`longctx.corpus.manifest`, the corpus layer's
name for it) so that a save into a corpus's index root, from the core too, can check the index
against the corpus's documents with the corpus loader's own reader and validator
(:func:`check_saved_documents`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from longctx.persist.checks import check_format
from longctx.persist.format import PersistError
from longctx.persist.marks import CORPUS_FORMAT, CORPUS_MANIFEST, INDEX_ROOT
from longctx.persist.reader import read_json

__all__ = [
    "CORPUS_MANIFEST",
    "FORMAT_VERSION",
    "MAX_MANIFEST_BYTES",
    "CorpusManifest",
    "DocumentEntry",
    "check_entry_text",
    "check_saved_documents",
    "read_local_manifest",
    "text_sha256",
]

FORMAT = CORPUS_FORMAT  # how a corpus is told from a folder (longctx.persist.marks)
FORMAT_VERSION = 1
STATUSES = ("done", "failed")
#: Largest corpus manifest read back (bytes).
MAX_MANIFEST_BYTES = 256 * 1024 * 1024


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


def read_local_manifest(corpus_root: str | Path) -> CorpusManifest:
    """The ``corpus.json`` of the local corpus folder ``corpus_root``, read as a corpus load
    reads it: at most :data:`MAX_MANIFEST_BYTES`, strict JSON, then
    :meth:`CorpusManifest.from_json` (every field checked).

    Raises
    ------
    PersistError
        Missing, too large, not JSON, not a corpus manifest, a damaged entry (named).
    """
    where = Path(corpus_root) / CORPUS_MANIFEST
    return CorpusManifest.from_json(read_json(where, max_bytes=MAX_MANIFEST_BYTES), str(where))


def check_saved_documents(
    index_root: Path, digests: Mapping[str, str], folder: str | None, name: str
) -> None:
    """Refuse to save an index into the corpus whose index root is the local folder
    ``index_root`` when its documents are not the ones the corpus's ``corpus.json`` lists there.

    A corpus's index must hold exactly the ``"done"`` documents of ``corpus.json``, each with
    the text its ``text_sha256`` records: a changed or removed document makes the corpus fail to
    load ("field 'text_sha256' does not match", "document ... is not in the index"), and a
    document ``corpus.json`` does not list is deleted by the next build (as one left by an
    interrupted build). A corpus changes through its builds (``longctx index``,
    :func:`longctx.corpus.build_indexes`), never through a save of an index.

    Parameters
    ----------
    index_root : pathlib.Path
        The corpus's index root (``<corpus>/indexes``, a real path).
    digests : mapping str -> str
        The index's documents: id -> sha256 hex digest of its UTF-8 text (:func:`text_sha256`).
    folder : str or None
        The index's folder under ``index_root`` (``"mixpr"``): compared with the entries whose
        ``path`` names it, and not checked when none does (a folder the corpus does not load,
        such as a backup). ``None``: the index is the whole index root (a sharded index),
        compared with every ``"done"`` entry.
    name : str
        The save's target as the caller named it (for the message).

    Raises
    ------
    PersistError
        ``corpus.json`` cannot be read (as a corpus load reports it), or the documents differ:
        the message counts the inserted, changed and deleted ones, names a few and says what to
        do. Checked before anything is written.
    """
    manifest = read_local_manifest(index_root.parent)
    path = None if folder is None else f"{INDEX_ROOT}/{folder}"
    listed = {
        d: e.text_sha256
        for d, e in manifest.entries.items()
        if e.status == "done" and (path is None or e.path == path)
    }
    if path is not None and not listed:
        return
    inserted = [d for d in digests if d not in listed]
    changed = [d for d in digests if d in listed and digests[d] != listed[d]]
    deleted = [d for d in listed if d not in digests]
    if not (inserted or changed or deleted):
        return
    counts = ", ".join(
        f"{len(ids)} {what}{_some(ids)}"
        for what, ids in (("inserted", inserted), ("changed", changed), ("deleted", deleted))
    )
    raise PersistError(
        f"{name!r}: this index's documents differ from the corpus's {CORPUS_MANIFEST} (the "
        f"corpus at {str(index_root.parent)!r}; {counts}): a corpus changes with `longctx index` / `build_indexes`; save this index "
        "elsewhere (nothing was written)"
    )


def _some(ids: list) -> str:
    """`` ('a', 'b' and 3 more)`` for a message; ``""`` for no id."""
    if not ids:
        return ""
    shown = ", ".join(repr(str(d)[:60]) for d in ids[:3])
    return f" ({shown}{f' and {len(ids) - 3} more' if len(ids) > 3 else ''})"
