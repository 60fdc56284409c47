"""The shards' vocabularies as UTF-8 bytes (:class:`TermBlob`) and their merge into the corpus's
(:func:`merge_shard_terms`) with numpy: no Python string, int or dict entry per term.

A sharded index gathers every shard's terms at its driver and merges them into the corpus's sorted
vocabulary (``docs/notes/mixpr-shards.md``); Hash-Hop's 500M tokens hold 18.3M distinct hashes.
As lists of ``str`` merged through dicts (:func:`longctx.mixpr.tfidf.merge_term_stats`) the
driver held ~195 bytes a term (the lists received and the merged dict; 2.3M terms of 16
characters in 8 parts: 449 MB, merged in 4-6 s, peak 641 MB), and every shard decoded its terms
into a list to send them. Here a shard sends its terms as one byte array and offsets (a
memory-mapped shard the arrays it maps), the driver sorts them as fixed-width byte strings
(``np.unique``; UTF-8 byte order is code-point order, that of Python's ``sorted``) and keeps the
union as a :class:`~longctx.mixpr.persist_mapped.MappedVocabulary` (binary search): ~98 bytes a
term (225 MB, 0.7-1.6 s, peak 471 MB, the same terms). The result equals ``merge_term_stats``'s
(the tests check the terms, frequencies and maps); terms longer than :data:`MAX_WIDTH` bytes or
holding a NUL byte take that path.
"""

from __future__ import annotations

import logging
import os

import numpy as np

from longctx._rss import give_back_free_memory
from longctx.mixpr.persist_mapped import MappedVocabulary, utf8_blob
from longctx.mixpr.tfidf import TermStats, merge_term_stats
from longctx.persist import PersistError

logger = logging.getLogger(__name__)

__all__ = ["MAX_WIDTH", "TermBlob", "merge_shard_terms"]

#: Longest term (UTF-8 bytes) the fixed-width merge takes; a longer one merges through dicts.
MAX_WIDTH = 64
#: Terms copied into the fixed-width array at a time (bounds the index arrays of the copy).
_BLOCK = 1 << 18


class TermBlob:
    """A shard's terms by column: ``blob`` ``(n_bytes,) uint8`` their UTF-8 bytes one after
    another, ``offsets`` ``(n_terms + 1,) int64``. Iterating decodes them (as ``terms()``);
    bytes that are not UTF-8 (a forged shard's ``term_bytes.npy``) raise
    :class:`~longctx.persist.PersistError` naming ``where``, the file they came from."""

    __slots__ = ("blob", "offsets", "where")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, where: str = "a shard's terms"):
        self.blob = np.asarray(blob, dtype=np.uint8)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.where = where

    @classmethod
    def of(cls, table) -> TermBlob:
        """The terms of a :class:`~longctx.mixpr.tfidf.TermTable` (the arrays a mapped
        vocabulary reads, else its terms encoded)."""
        vocab = table.vocabulary
        if isinstance(vocab, MappedVocabulary):
            blob, offsets, where = vocab.term_arrays()
            return cls(blob, offsets, repr(os.path.join(where, "term_bytes.npy")))
        return cls(*utf8_blob(table.terms(), "a term", errors="surrogatepass"))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __iter__(self):
        mv, o = memoryview(self.blob), self.offsets.tolist()
        for j, (a, b) in enumerate(zip(o, o[1:])):
            try:
                yield bytes(mv[a:b]).decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                raise PersistError(f"{self.where}: term {j} is not valid UTF-8") from None

    def __eq__(self, other) -> bool:
        if not isinstance(other, TermBlob):
            return NotImplemented
        return np.array_equal(self.offsets, other.offsets) and np.array_equal(self.blob, other.blob)

    __hash__ = None


def merge_shard_terms(settings, parts) -> tuple[TermStats, list[np.ndarray]]:
    """The corpus's term statistics from each shard's (as
    :func:`~longctx.mixpr.tfidf.merge_term_stats`, whose result this equals).

    Parameters
    ----------
    settings : TfidfSettings
    parts : sequence of ``(terms, df, cf, n_units)``
        Each shard's terms (a :class:`TermBlob`, or a list of str), their ``(n_terms_i,)``
        document frequencies and total counts, and its number of units.

    Returns
    -------
    stats : TermStats
        Over the sorted union of the terms some unit holds; its vocabulary a
        :class:`~longctx.mixpr.persist_mapped.MappedVocabulary` when merged here.
    maps : list of (n_terms_i,) int64
        Each shard's column of each of its terms in ``stats`` (-1: a term no unit holds).
    """
    blobs = [p[0] for p in parts]
    lives = [np.flatnonzero(np.asarray(df, dtype=np.int64) > 0) for _, df, _, _ in parts]
    width, nul = 0, False
    if all(isinstance(b, TermBlob) for b in blobs):
        lens = [np.diff(b.offsets)[lv] for b, lv in zip(blobs, lives)]
        width = max((int(x.max()) for x in lens if len(x)), default=0)
        nul = any(b.blob.size and not b.blob.all() for b in blobs)
    if width == 0 or width > MAX_WIDTH or nul:
        logger.debug("term merge through dicts (longest term %d bytes)", width)
        return merge_term_stats(settings, [(list(p[0]), *p[1:]) for p in parts])
    n_live = sum(len(lv) for lv in lives)
    fixed = np.zeros((n_live, width), dtype=np.uint8)
    row = 0
    for b, lv, ln in zip(blobs, lives, lens):
        starts = b.offsets[:-1][lv]
        for k in range(0, len(lv), _BLOCK):
            s, n = starts[k : k + _BLOCK], ln[k : k + _BLOCK]
            r = np.repeat(np.arange(row + k, row + k + len(s)), n)
            c = np.arange(len(r)) - np.repeat(np.cumsum(n) - n, n)
            fixed[r, c] = b.blob[np.repeat(s, n) + c]
        row += len(lv)
    union, inv = np.unique(fixed.view(f"S{width}").ravel(), return_inverse=True)
    del fixed
    u8 = union.view(np.uint8).reshape(len(union), width)
    ulen = np.count_nonzero(u8, axis=1)  # no NUL inside a term: the padding is the rest
    offsets = np.zeros(len(union) + 1, dtype=np.int64)
    np.cumsum(ulen, out=offsets[1:])
    blob = u8[np.arange(width) < ulen[:, None]]
    del union, u8
    V = len(offsets) - 1
    inv = inv.ravel()
    dfs = np.concatenate([np.asarray(p[1], dtype=np.int64)[lv] for p, lv in zip(parts, lives)])
    cfs = np.concatenate([np.asarray(p[2], dtype=np.float64)[lv] for p, lv in zip(parts, lives)])
    df_all = np.zeros(V, np.int64)
    np.add.at(df_all, inv, dfs)
    cf_all = np.bincount(inv, weights=cfs, minlength=V)
    maps, at = [], 0
    for b, lv in zip(blobs, lives):
        m = np.full(len(b), -1, dtype=np.int64)
        m[lv] = inv[at : at + len(lv)]
        at += len(lv)
        maps.append(m)
    vocab = MappedVocabulary(blob, offsets, "the shards' merged terms")
    del dfs, cfs, inv
    give_back_free_memory()  # the sort's temporaries (the driver lives long)
    logger.info("merged the shards' terms: %d terms, %d bytes", V, blob.nbytes)
    return TermStats(settings, vocab, df_all, cf_all, sum(int(p[3]) for p in parts)), maps
