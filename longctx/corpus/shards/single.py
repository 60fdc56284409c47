"""A MixPR corpus is one index over every document (``indexes/mixpr``): corpus-wide term
statistics and one walk, so scores are comparable across documents (Alonso and Millidge,
"Mixture-of-PageRanks: Replacing Long-Context with Real-Time, Sparse GraphRAG", 2024,
arXiv:2412.06078; the linear graph of :class:`longctx.mixpr.graph.FactoredGraph`).

A build that finds the corpus already there inserts the new documents, updates the changed ones
(:meth:`longctx.MixPRIndex.insert` / :meth:`~longctx.MixPRIndex.update`) and skips the rest;
documents of the corpus that the call does not name stay, except those read before from a folder,
glob or JSONL file the call reads again and no longer in it: they are deleted
(:meth:`~longctx.MixPRIndex.delete`). The index is written whole each time
(into a temporary folder, then moved into place).
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

from longctx.corpus.manifest import CORPUS_MANIFEST, DocumentEntry, text_sha256
from longctx.persist import PersistError
from longctx.persist.marks import INDEX_ROOT

logger = logging.getLogger(__name__)

#: The one index folder of a MixPR corpus, relative to its root.
MIXPR_INDEX = f"{INDEX_ROOT}/mixpr"

#: ``build_indexes`` options of a MixPR corpus besides :class:`~longctx.mixpr.MixPRConfig` fields.
_EXTRA_OPTIONS = ("preset", "chunk", "mappable")


def check_mixpr_options(options: dict) -> None:
    """Refuse unknown or bad MixPR options before anything is read or recorded.

    Raises
    ------
    TypeError, ValueError
        Naming the option.
    """
    from longctx.mixpr.config import MixPRConfig

    opts = dict(options)
    bad = sorted(set(opts) - set(MixPRConfig.__dataclass_fields__) - set(_EXTRA_OPTIONS))
    if bad:
        raise ValueError(
            f"method 'mixpr' takes no option(s) {bad} (it takes 'preset', 'chunk', 'mappable' "
            "and the MixPRConfig fields)"
        )
    for name, default in (("chunk", True), ("mappable", True)):
        value = opts.pop(name, default)
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    MixPRConfig.from_preset(opts.pop("preset", "default"), **opts)


def load_mixpr_index(storage, tmp: str | None = None, **load_kwargs):
    """The corpus's MixPR index (from a local root, or copied from a remote one into ``tmp``).

    Raises
    ------
    PersistError
        No finished index there, or a damaged one.
    """
    from longctx.mixpr import MixPRIndex

    if not storage.index_complete(MIXPR_INDEX):
        raise PersistError(f"{storage.location(MIXPR_INDEX)!r} is missing or half-written")
    if storage.local is not None:
        return MixPRIndex.load(storage.local_index(MIXPR_INDEX), **load_kwargs)
    if tmp is None:
        with tempfile.TemporaryDirectory(prefix="longctx-load-") as d:
            return MixPRIndex.load(storage.fetch_index(MIXPR_INDEX, d), **load_kwargs)
    return MixPRIndex.load(storage.fetch_index(MIXPR_INDEX, tmp), **load_kwargs)


def check_entries(index, manifest, where: str) -> None:
    """Every done entry of ``manifest`` names a document of ``index`` whose text has the entry's
    digest (a swapped or edited ``corpus.json`` is an error, never another document's text).

    Raises
    ------
    PersistError
    """
    pos = {d: i for i, d in enumerate(index.doc_ids)}
    for doc_id, e in manifest.entries.items():
        if e.status != "done":
            continue
        if doc_id not in pos:
            raise PersistError(f"{where!r}: document {doc_id!r} is not in the corpus's index")
        if e.path != MIXPR_INDEX or text_sha256(index.texts[pos[doc_id]]) != e.text_sha256:
            raise PersistError(
                f"{where!r}: document {doc_id!r}: field 'text_sha256' does not match the "
                "index's text (damaged or forged)"
            )


def stale_documents(held, manifest, docs, removed=()) -> list:
    """Ids the index holds that ``corpus.json`` does not list as done and this call does not
    give, nor removes: left by a build that stopped between storing the index and writing the
    manifest (a document it was inserting, or one it was removing). They are deleted, as the
    manifest says they are not in the corpus."""
    done = {d for d, e in manifest.entries.items() if e.status == "done"}
    given = {d for d, _ in docs} | set(removed)
    return sorted(d for d in held if d not in done and d not in given)


def sort_documents(docs, held, manifest) -> tuple[list, list, list]:
    """``(new, changed, skipped)``: the ``(doc_id, text)`` pairs the corpus does not hold yet, the
    ones it holds with another text (or not finished), and the ids of those it holds as they
    are (their manifest entry done with the same text digest)."""
    new, changed, skipped = [], [], []
    for doc_id, text in docs:
        e = manifest.entries.get(doc_id)
        if doc_id in held:
            if e is not None and e.status == "done" and e.text_sha256 == text_sha256(text):
                skipped.append(doc_id)
            else:
                changed.append((doc_id, text))
        else:
            new.append((doc_id, text))
    return new, changed, skipped


def build_mixpr_corpus(docs, storage, manifest, method_options: dict, bar, removed=()) -> dict:
    """Remove the documents ``removed`` (ids the corpus holds), insert, update or skip every
    ``(doc_id, text)`` of ``docs`` in the corpus's one index and save it; returns ``{"built":
    [...], "skipped": [...], "removed": [...], "seconds": float}``."""
    from longctx.mixpr import MixPRIndex
    from longctx.tokens import count_tokens

    t0 = time.perf_counter()
    opts = dict(method_options)
    preset = opts.pop("preset", "default")
    chunk = opts.pop("chunk", True)
    mappable = opts.pop("mappable", True)  # format 3 (MixPRIndex.load(..., mmap=True) maps it)
    index = None
    if manifest.entries and storage.index_complete(MIXPR_INDEX):
        index = load_mixpr_index(storage)
        check_entries(index, manifest, storage.location(CORPUS_MANIFEST))
    held = set() if index is None else set(index.doc_ids)
    stale = stale_documents(held, manifest, docs, removed)
    drop = [d for d in removed if d in held] + stale
    if removed:  # the manifest first: it never names a document the saved index lacks
        for doc_id in removed:
            manifest.entries.pop(doc_id, None)
        storage.write_json(CORPUS_MANIFEST, manifest.to_json())
    if index is not None and drop and len(drop) == len(held):
        index, held = None, set()  # every document goes: the new ones make a fresh index
    elif drop:
        index.delete(drop)
        held -= set(drop)
    new, changed, skipped = sort_documents(docs, held, manifest)
    work = new + changed
    if index is None and work:
        index = MixPRIndex.from_texts(
            [t for _, t in work], ids=[d for d, _ in work], preset=preset, chunk=chunk, **opts
        )
    else:
        if new:
            index.insert([t for _, t in new], ids=[d for d, _ in new])
        if changed:
            index.update([t for _, t in changed], ids=[d for d, _ in changed])
    if work or drop:
        with tempfile.TemporaryDirectory(prefix="longctx-corpus-") as tmp:
            index.save(Path(tmp) / "mixpr", mappable=mappable)
            storage.put_index(Path(tmp) / "mixpr", MIXPR_INDEX)
    seconds = round(time.perf_counter() - t0, 3)
    for doc_id, text in work:
        manifest.entries[doc_id] = DocumentEntry(
            doc_id=doc_id,
            path=MIXPR_INDEX,
            status="done",
            seconds=seconds,
            tokens=count_tokens(text),
            error=None,
            text_sha256=text_sha256(text),
            extra={"one_index": True},
        )
        bar.update(1)
    return {
        "built": [d for d, _ in work],
        "skipped": skipped,
        "removed": [*removed, *stale],
        "seconds": seconds,
    }
