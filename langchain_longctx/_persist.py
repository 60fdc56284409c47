"""Save and load of the LangChain retrievers: the same folders as the core's ``save`` / ``load``
(``manifest.json`` with a format version, JSON, ``.npz``; never pickle)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from langchain_longctx._documents import document_keys
from longctx.index import free_key
from longctx.persist import PersistError, check_json_metadata, write_dir
from longctx.persist.marks import check_outside_corpus
from longctx.persist.reader import IndexDir, open_index_dir


def documents_to_json(documents: Sequence[Document]) -> list[dict]:
    """``[{"page_content", "metadata", "id"}, ...]``.

    Raises
    ------
    TypeError, ValueError
        A document's metadata would not come back from JSON as it is (a ``datetime``, ``set``,
        ``bytes``, ``NaN``, a key that is not a ``str``...): the message names the document
        (position and id) and the key. Raised before anything is written.
    """
    for j, d in enumerate(documents):
        check_json_metadata(d.metadata, f"documents[{j}] (id {d.id!r})")
    return [{"page_content": d.page_content, "metadata": d.metadata, "id": d.id} for d in documents]


def documents_from_json(obj: Any, where: str) -> list[Document]:
    """The documents written by :func:`documents_to_json`, checked.

    Raises
    ------
    PersistError
        Not a list of ``{"page_content": str, "metadata": dict, "id": str | None}``.
    """
    if not isinstance(obj, list):
        raise PersistError(f"{where!r} must hold a list of documents")
    out = []
    for j, d in enumerate(obj):
        ok = (
            isinstance(d, dict)
            and isinstance(d.get("page_content"), str)
            and isinstance(d.get("metadata", {}), dict)
            and (d.get("id") is None or isinstance(d.get("id"), str))
        )
        if not ok:
            raise PersistError(f"{where!r}: document {j} is damaged")
        out.append(
            Document(page_content=d["page_content"], metadata=d.get("metadata", {}), id=d.get("id"))
        )
    return out


def check_saved_keys(obj: Any, n_documents: int, where: str) -> list[str | None]:
    """The documents' keys saved beside them (``keys.json``: one ``str`` or ``null`` per
    document, the ``str`` ones unique), checked: a document without id is named by its position
    when it is added, and a delete moves the positions, so the names are saved, not recomputed.

    Raises
    ------
    PersistError
        Not a list of ``n_documents`` entries, an entry neither a str nor null, or a key twice.
    """
    ok = isinstance(obj, list) and len(obj) == n_documents
    if not ok or not all(k is None or isinstance(k, str) for k in obj):
        raise PersistError(
            f"{where!r} must hold one str or null per saved document ({n_documents})"
        )
    named = [k for k in obj if k is not None]
    if len(set(named)) != len(named):
        raise PersistError(f"{where!r} holds a key twice")
    return list(obj)


def keys_from_index(documents: Sequence[Document], doc_ids: Sequence[str], where: str) -> list:
    """The documents' keys of a folder saved before ``keys.json`` existed (longctx 0.1): those
    the saved index holds (``doc_ids``, in the documents' order: inserts append, deletes keep
    the order), matched in order against the documents it indexes, not recomputed from their
    positions (a delete moved them: a save after deleting a document without id named the
    next one by its old position, ``"source2"`` at position 1). A document with its own id
    must be held under it (or under ``"{id}@{n}"`` when it repeats an earlier document's id),
    one without id under a ``"source{n}"`` name that is no document's own id; the rest keep
    the names of :func:`~langchain_longctx._documents.document_keys` (primed where the index
    took them). The caller checks the texts against the index.

    Raises
    ------
    PersistError
        The index holds another number of documents, or a key a document cannot have (named,
        with ``where``).
    """
    keys = document_keys(documents)  # the layout's own rule, right until a delete
    indexed = [j for j, k in enumerate(keys) if k is not None and documents[j].page_content.strip()]
    if len(indexed) != len(doc_ids):
        raise PersistError(
            f"{where!r} holds {len(doc_ids)} documents for {len(indexed)} saved documents with "
            "text: the folder is damaged or mixes two saves"
        )
    own = {d.id for d in documents if d.id is not None}
    for j, key in zip(indexed, doc_ids):
        mine = documents[j].id
        ok = (
            key == mine
            or (mine is not None and re.fullmatch(re.escape(mine) + r"@\d+'*", key) is not None)
            or (mine is None and re.fullmatch(r"source\d+'*", key) is not None)
        )
        if not ok or (key != mine and key in own):
            raise PersistError(
                f"{where!r} holds document {key!r} where saved document {j} (id {mine!r}) is: "
                "the folder is damaged or mixes two saves"
            )
        keys[j] = key
    used = set(doc_ids) | own
    taken = set(indexed)
    for j, key in enumerate(keys):
        if j in taken or key is None or key == documents[j].id:
            continue
        # a document without text, its position's name taken meanwhile
        keys[j] = free_key(key, used)
    return keys


def save_retriever(
    path: str | os.PathLike,
    kind: str,
    settings: dict,
    documents: Sequence[Document],
    *,
    json_files: dict[str, Any] | None = None,
    subdirs: dict[str, Any] | None = None,
) -> Path:
    """Write ``manifest.json`` (``longctx.<kind>``, version 1), ``retriever.json`` (settings),
    ``documents.json``, any more ``json_files`` and the core index folders ``subdirs``
    (``{"index": index.save}``), all in one atomic :func:`~longctx.persist.write_dir` that
    never replaces anything but a retriever of the same kind.

    Raises
    ------
    longctx.persist.SaveTargetError
        ``path`` is a file or a folder holding anything else; or it is inside a corpus's
        ``indexes/`` folder, at any depth (:func:`longctx.persist.marks.check_outside_corpus`:
        inside one of its index folders the next ``longctx index`` of the corpus would delete
        it; elsewhere there only the corpus's builds and the saves of an index loaded from it
        write, under its build lock), checked before anything is written.
    """
    check_outside_corpus(path, "path")
    d = Path(path)
    write_dir(
        d,
        kind=kind,
        version=1,
        json_files={
            "retriever": settings,
            "documents": documents_to_json(documents),
            **(json_files or {}),
        },
        subdirs=subdirs or {},
    )
    return d


def load_retriever(path: str | os.PathLike, kind: str) -> tuple[IndexDir, dict, list[Document]]:
    """Read what :func:`save_retriever` wrote: ``(folder, settings, documents)``; the folder is
    the open :class:`~longctx.persist.reader.IndexDir` to read the rest from (``.json(name)``,
    ``.subdir("index")`` for the core index), so every file comes from one save. Callers
    decorate their ``load`` with :func:`~longctx.persist.reader.retry_on_concurrent_save`.

    Raises
    ------
    PersistError
        A missing, damaged or foreign file, named.
    """
    d = open_index_dir(path, kind=kind, versions=(1,))
    settings = d.json("retriever.json")
    if not isinstance(settings, dict):
        raise PersistError(f"{str(d.file('retriever.json'))!r} must hold a JSON object")
    docs = documents_from_json(d.json("documents.json"), str(d.file("documents.json")))
    return d, settings, docs


def check_index_texts(index_texts: Sequence[str], documents: Sequence[Document], sources, where):
    """The saved index must hold exactly the saved documents' texts (in order).

    Raises
    ------
    PersistError
        They differ (files from two different saves, or edited).
    """
    want = [documents[i].page_content for i in sources]
    if list(index_texts) != want:
        raise PersistError(
            f"{where!r} does not hold the texts of the saved documents: the folder is damaged "
            "or mixes two saves"
        )


_LOADED: ContextVar[dict | None] = ContextVar("longctx_loaded", default=None)


@contextmanager
def loading(**parts: Any) -> Iterator[None]:
    """While a retriever is constructed in :meth:`load`, hand its ``model_post_init`` the parts
    read from disk (so nothing is rebuilt); pydantic's validation context does not reach
    ``model_post_init`` through LangChain's ``Serializable.__init__``."""
    token = _LOADED.set(parts)
    try:
        yield
    finally:
        _LOADED.reset(token)


def loaded_parts() -> dict:
    """The parts :func:`loading` holds for the retriever being constructed (``{}`` otherwise)."""
    return _LOADED.get() or {}
