"""What changes a :class:`~longctx.mixpr.index.MixPRIndex` or writes it to disk: the bodies of its
:meth:`~longctx.mixpr.index.MixPRIndex.insert`, :meth:`~longctx.mixpr.index.MixPRIndex.update`
and :meth:`~longctx.mixpr.index.MixPRIndex.delete` (a new state built beside the old one and
swapped in whole under the index's write lock, :func:`longctx.mixpr.build.spliced` /
:func:`~longctx.mixpr.build.without`) and of its
:meth:`~longctx.mixpr.index.MixPRIndex.save` / :meth:`~longctx.mixpr.index.MixPRIndex.load`
(the file formats: :mod:`longctx.mixpr.persist_mapped`, :mod:`longctx.mixpr.persist`).

A save into a MixPR corpus's one index (``<corpus>/indexes/mixpr``, or any folder of a corpus's
index root) is a write of that corpus: it holds the corpus's build lock, marks the index root
and goes on only over the corpus the index read or last saved there
(:func:`longctx.persist.marks.saving_into_corpus`), and only with the documents the corpus's
``corpus.json`` lists for that folder (an index changed since its load is refused: a corpus
changes with ``longctx index`` / ``build_indexes``); a load from there records the corpus's mark
first (:func:`longctx.persist.marks.record_of`). A folder deeper inside a corpus's index root is
refused (inside one of its index folders a build replaces it whole; an index is saved only
directly in ``indexes/``, under the corpus's lock), and so is the index root itself, each with
its own wording (:func:`longctx.persist.marks.outside_corpus_message`); an index never loaded
from the corpus is told so. Any other folder is saved as before.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from longctx.index import check_texts
from longctx.mixpr.build import spliced, without
from longctx.mixpr.persist import save_index
from longctx.mixpr.persist_mapped import load_index, save_mapped
from longctx.mixpr.validation import check_change, check_held
from longctx.persist import MANIFEST, check_save_target, marks
from longctx.persist.corpus_manifest import check_saved_documents, text_sha256
from longctx.word_pieces import shared_chars

logger = logging.getLogger(__name__)

__all__ = ["delete", "insert", "load", "save", "update"]


def insert(index, texts, ids, metadatas, unit_vectors) -> None:
    """:meth:`MixPRIndex.insert <longctx.mixpr.index.MixPRIndex.insert>`: ``texts`` after the
    index's documents. Each long text's characters are found once (its check, then its chunks:
    :func:`longctx.word_pieces.shared_chars`)."""
    with shared_chars(texts):
        texts = check_texts(texts)
        with index._write_lock:
            st = index._state
            ids, metadatas = check_change(ids, metadatas, len(texts), st.positions, replace=False)
            n = len(st.doc_ids)
            index._state = _splice(index, st, n, 0, texts, ids, metadatas, unit_vectors)


def update(index, texts, ids, metadatas, unit_vectors) -> None:
    """:meth:`MixPRIndex.update <longctx.mixpr.index.MixPRIndex.update>`: documents replaced by
    id, each at its position (characters found once, as :func:`insert`).

    Raises
    ------
    ValueError
        ``unit_vectors`` with more than one document (and as :func:`insert`).
    KeyError
        An id the index does not hold (nothing changes).
    """
    with shared_chars(texts):
        texts = check_texts(texts)
        with index._write_lock:
            st = index._state
            ids, metadatas = check_change(ids, metadatas, len(texts), st.positions, replace=True)
            if unit_vectors is not None and len(ids) > 1:
                raise ValueError("unit_vectors with update() takes one document at a time")
            for t, i, md in zip(texts, ids, metadatas):
                st = _splice(index, st, st.positions[i], 1, (t,), (i,), (md,), unit_vectors)
            index._state = st


def delete(index, ids) -> None:
    """:meth:`MixPRIndex.delete <longctx.mixpr.index.MixPRIndex.delete>`: documents removed by
    id (``KeyError`` for one the index does not hold; nothing changes then)."""
    if isinstance(ids, str):
        ids = [ids]
    ids = list(ids)
    with index._write_lock:
        st = index._state
        check_held(ids, st.positions)
        index._state = without(st, ids)


def _splice(index, st, at: int, n_old: int, texts, ids, metadatas, unit_vectors):
    """A new state with documents ``at .. at + n_old`` of ``st`` replaced by ``texts``."""
    return spliced(
        st,
        at,
        n_old,
        texts,
        ids,
        metadatas,
        unit_vectors,
        chunk=index.chunk,
        encoder=index._encoder,
        token_counter=index._token_counter,
    )


def _corpus_root(path) -> Path | None:
    """The real path of the corpus index root that holds folder ``path`` (links and ``..``
    resolved), or ``None``."""
    return marks.corpus_index_root(Path(os.path.realpath(path)).parent)


def save(index, path, mappable: bool) -> None:
    """:meth:`MixPRIndex.save <longctx.mixpr.index.MixPRIndex.save>`: format 3 (``mappable``)
    or 2 at ``path``; into a corpus's index root, as a write of that corpus (module docstring).

    Into a corpus, with the corpus's build lock held and the mark check passed, and before the
    mark is written: the target folder is checked (:func:`longctx.persist.check_save_target`)
    and so are the index's documents (ids and text digests) against ``corpus.json``'s entries
    for that folder (:func:`longctx.persist.corpus_manifest.check_saved_documents`). The
    index's writes wait for the save from the checks to the last file (its write lock is
    held, taken after the corpus's lock: they do not wait for a build the save waits for): the
    documents checked are the ones written. A save that fails before replacing the folder
    leaves the corpus's mark as it was. Deeper inside a corpus's index root (inside its
    ``indexes/mixpr``), or the index root itself, is refused
    (:func:`longctx.persist.marks.check_outside_corpus`): a build replaces those folders whole.

    Raises
    ------
    longctx.persist.PersistError
        ``path`` is in a corpus's index root that a build (or another save) changed since this
        index read it, or that another writer was writing when it read it (load the corpus
        again); or this index was not loaded from that corpus (a corpus's indexes are written
        by ``longctx index`` / ``build_indexes``: save elsewhere); or it is the corpus's index
        and this index's documents differ from ``corpus.json``'s (inserted, changed or deleted
        since the load: a corpus changes with ``longctx index`` / ``build_indexes``); nothing
        is written.
    longctx.persist.SaveTargetError
        ``path`` is a link, a file, or a folder of other files (nothing is written, the mark
        stays as it was); or it is a corpus's index root, or inside a folder of it
        (``indexes/mixpr/sub``, ``indexes/backup/sub``: nothing is written).
    """
    write = save_mapped if mappable else save_index
    real = Path(os.path.realpath(path))  # resolved once: the checks below are given it
    # the corpus index root holding the folder (its corpus.json tested once, passed down)
    root = marks.check_outside_corpus(path, "path", own_depth=1, real=real)
    if root is None:
        write(index, path)
        return
    logger.debug("%s is in the corpus at %s: saved under its build lock", path, root.parent)
    mark = lambda m: marks.write_json_atomic(  # noqa: E731
        root / marks.WRITER_FILE, m, limit=marks.MAX_MARK_BYTES
    )
    folder = real.name
    stamp = lambda: marks.file_stamp(Path(path) / MANIFEST)  # noqa: E731

    def check() -> None:  # the index's write lock held: the state checked is the state written
        check_save_target(path, "mixpr")
        st = index._state
        digests = {d: text_sha256(t) for d, t in zip(st.doc_ids, st.texts)}
        check_saved_documents(root, digests, folder, str(path))

    what = "a save of this MixPR index"
    with marks.saving_into_corpus(
        root,
        index._read_from,
        what,
        mark,
        str(path),  # as given, in messages (with the corpus's resolved folder)
        check=check,
        stamp=stamp,
        hold=index._write_lock,
        in_corpus=True,
    ):
        write(index, path)


def load(cls, path, *, router, encoder, mmap):
    """:meth:`MixPRIndex.load <longctx.mixpr.index.MixPRIndex.load>`; from a corpus's index
    root, the index records the corpus's mark first (for :func:`save`)."""
    read_from = marks.record_of(_corpus_root(path))  # before the files: a write changes it
    index = load_index(cls, path, router=router, encoder=encoder, mmap=mmap)
    index._read_from = read_from
    index._state.prepare_queries()  # what the first query would make once (issue 46)
    return index
