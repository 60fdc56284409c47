"""One shard of a :class:`~longctx.corpus.shards.index.ShardedMixPRIndex` (:class:`MixPRShard`: its
documents as a :class:`~longctx.mixpr.index.MixPRIndex`, and its block of the scoring pipeline
weighed with the corpus's statistics) and the rule that assigns new documents to shards
(:func:`assign_shards`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from longctx._rss import give_back_free_memory
from longctx.corpus.shards.fused import BLOCK_CALLS
from longctx.corpus.shards.terms import TermBlob
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.explain import described, walk_hit_facts, walk_inflow
from longctx.mixpr.hits import text_slice
from longctx.mixpr.scoring import UnitBlock
from longctx.mixpr.seeds import seed_units
from longctx.mixpr.tfidf import TermStats, tfidf_rows
from longctx.persist import PersistError

__all__ = ["ASSIGNMENT", "MixPRShard", "assign_shards", "shard_dir"]

#: The name of the assignment rule (stored in ``shards.json``).
ASSIGNMENT = "fewest-characters"


def shard_dir(i: int) -> str:
    return f"shard-{i}"


def assign_shards(chars: Sequence[int], n_shards: int, sizes: Sequence[int]) -> list[int]:
    """The shard of each new document: the one holding the fewest characters so far (ties: the
    lowest number), documents taken in order.

    Parameters
    ----------
    chars : sequence of int
        The new documents' lengths in characters, in the order given.
    n_shards : int
    sizes : sequence of int
        Characters each shard holds now.
    """
    sizes = list(sizes)
    out = []
    for c in chars:
        i = min(range(n_shards), key=lambda j: (sizes[j], j))
        out.append(i)
        sizes[i] += int(c)
    return out


def _config_kwargs(config: MixPRConfig) -> dict:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}


def shard_walk(config: MixPRConfig) -> MixPRConfig:
    """``config`` as a shard runs it: ``walk="auto"`` is the PageRank walk (the multi-hop walk's
    phrase graph is not split into shards)."""
    return dataclasses.replace(config, walk="pagerank") if config.walk == "auto" else config


class MixPRShard:
    """One shard: its documents as a :class:`~longctx.mixpr.index.MixPRIndex` (their own term
    counts, never searched on their own), and its block of the scoring pipeline weighed with the
    corpus's statistics (:meth:`set_global`).

    Parameters
    ----------
    index : MixPRIndex
        The shard's documents.
    """

    def __init__(self, index):
        self.index = index
        self.block: UnitBlock | None = None

    # -- building, saving, loading ----------------------------------------------------------------
    @classmethod
    def from_texts(cls, texts, *, ids, metadatas, config, chunk=True, encoder=None, **kw):
        from longctx.mixpr.index import MixPRIndex

        if config.graph != "factored":
            raise ValueError(
                "a sharded MixPR index needs graph='factored' (the thresholded graph of "
                "graph='threshold' links units across shards through a product that is never "
                "split)"
            )
        config = shard_walk(config)  # nor is the multi-hop walk's phrase graph
        index = MixPRIndex.from_texts(
            texts, ids=ids, metadatas=metadatas, chunk=chunk, encoder=encoder,
            require_terms=False, **kw, **_config_kwargs(config),
        )  # fmt: skip
        return cls(index)

    @classmethod
    def load(cls, path, *, encoder=None) -> MixPRShard:
        """Read a shard saved by :meth:`save` (a :class:`MixPRIndex` folder): memory-mapped
        when it was saved in format 3 (the default; the process holding it keeps in
        memory what its queries read, the corpus-wide weights of :meth:`set_global` and its
        term statistics), else read whole (format 2), as ``MixPRIndex.load(path, mmap=None)``,
        which loads again when a save replaced the folder meanwhile.

        Raises
        ------
        PersistError
            As :meth:`MixPRIndex.load <longctx.mixpr.index.MixPRIndex.load>`, or a shard of
            ``graph='threshold'``.
        """
        from longctx.mixpr.index import MixPRIndex
        from longctx.mixpr.persist_mapped import load_index

        # load_index with mmap=None (format 3 mapped, format 2 read), not MixPRIndex.load: a
        # shard's queries run on the block set_global makes, never on the scorer
        # MixPRIndex.load prepares
        index = load_index(MixPRIndex, path, encoder=encoder, mmap=None)
        if index.config.graph != "factored":
            raise PersistError(f"{str(path)!r} holds a MixPR index with graph='threshold'")
        return cls(index)

    def save(self, path, *, mappable: bool = True) -> None:
        """Save the shard's documents (format 3 by default, which :meth:`load` maps;
        ``mappable=False``: format 2, read whole)."""
        self.index.save(path, mappable=mappable)

    def files(self, mappable: bool = True) -> dict:
        """The saved shard as ``{file name: bytes}`` (for a driver that writes it)."""
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="longctx-shard-") as tmp:
            d = Path(tmp) / "shard"
            self.save(d, mappable=mappable)
            return {f.name: f.read_bytes() for f in d.iterdir() if f.is_file()}

    def save_to(self, storage, rel: str, mappable: bool = True) -> None:
        """Save into a corpus location (:class:`longctx.corpus.storage.Storage`)."""
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="longctx-shard-") as tmp:
            d = Path(tmp) / "shard"
            self.save(d, mappable=mappable)
            storage.put_index(d, rel)

    # -- statistics ---------------------------------------------------------------------------
    def term_stats(self) -> dict:
        """What the driver gathers: the shard's terms, their document frequencies and total
        counts, its units, and its documents (ids in order, units and characters of each)."""
        ix = self.index
        st = ix._state
        table = st.table
        return {
            "terms": TermBlob.of(table),
            "df": table.df,
            "cf": table.cf,
            "n_units": st.n_units,
            "doc_ids": tuple(st.doc_ids),
            "units": np.bincount(st.unit_source, minlength=len(st.doc_ids)),
            "chars": st.text_lengths().tolist(),
            "dim": None if st.unit_vectors is None else int(st.unit_vectors.shape[1]),
            "encoder_name": ix.encoder_identity.get("name"),
            "config": ix.config,
            "chunk": ix.chunk,
        }

    def set_global(self, colmap, idf, df, n_units: int, doc_offsets) -> None:
        """Weigh the shard's units with the corpus's statistics.

        Parameters
        ----------
        colmap : (n_terms of the shard,) int64
            The corpus column of each of the shard's terms (increasing: both are sorted).
        idf, df : (n_terms,) float64 / int64
            The corpus's IDF and document frequencies.
        n_units : int
            Units of the corpus.
        doc_offsets : (n_docs of the shard,) int64
            Position in the corpus of each of the shard's documents' first unit.
        """
        st = self.index._state
        table = st.table
        c = table.counts
        counts = sp.csr_array((c.data, colmap[c.indices], c.indptr), shape=(c.shape[0], len(idf)))
        stats = TermStats(table.settings, None, df, None, n_units, idf=idf)
        keys = np.asarray(doc_offsets, dtype=np.int64)[st.unit_source] + st.unit_index
        ix = self.index
        self.block = UnitBlock(
            config=st.config,
            stats=stats,
            E=tfidf_rows(table.settings, counts, idf),
            unit_doc=st.unit_source,
            metadata=st.metadata,
            keys=keys,
            unit_vectors=st.unit_vectors,
            counts=lambda: ix._counts(st),
        )
        give_back_free_memory()  # the temporaries of the rows (a shard's actor lives long)

    def block_call(self, method: str, *args):
        """Method ``method`` of the shard's block (a :class:`~longctx.mixpr.scoring.UnitBlock`),
        or the function of that name of :data:`~longctx.corpus.shards.fused.BLOCK_CALLS` on it
        (``keep_firsts``)."""
        call = BLOCK_CALLS.get(method)
        if call is not None:
            return call(self.block, *args)
        return getattr(self.block, method)(*args)

    # -- changes ------------------------------------------------------------------------------
    def insert(self, texts, ids, metadatas, unit_vectors=None) -> dict:
        self.index.insert(texts, ids=ids, metadatas=metadatas, unit_vectors=unit_vectors)
        self.block = None
        return self.term_stats()

    def update(self, texts, ids, metadatas, unit_vectors=None) -> dict:
        self.index.update(texts, ids=ids, metadatas=metadatas, unit_vectors=unit_vectors)
        self.block = None
        return self.term_stats()

    def delete(self, ids) -> dict:
        self.index.delete(ids)
        self.block = None
        return self.term_stats()

    # -- reading ------------------------------------------------------------------------------
    def hits(self, local) -> list:
        """``(doc id, start, end, text, unit index)`` of the shard's units ``local``."""
        st = self.index._state
        out = []
        local = np.asarray(local, dtype=np.int64)
        for i, j in zip(local.tolist(), st.unit_positions(local).tolist()):
            d, a, b = int(st.unit_source[i]), int(st.starts[i]), int(st.ends[i])
            out.append((st.doc_ids[d], a, b, text_slice(st.texts, d, a, b), j))
        return out

    def seed_units(self, seeds) -> tuple[np.ndarray, np.ndarray]:
        """``(keys (m,) int64 ascending, weights (m,) float64)``: the corpus-wide keys (the
        block's, :meth:`set_global`) of the shard's units the ``seeds`` overlap
        (:func:`longctx.mixpr.seeds.seed_units`), as the scorer's blocks take them: what
        :meth:`MixPRIndex.search(seeds=) <longctx.mixpr.index.MixPRIndex.search>` maps them
        to within one index, numbered as the corpus numbers its units."""
        st = self.index._state
        units, w = seed_units(seeds, st.positions, st.texts, st.unit_source, st.starts, st.ends)
        if not len(units):
            return units, w
        if self.block is None:
            raise RuntimeError("shard has no corpus statistics yet (set_global)")
        return np.asarray(self.block.keys[units], dtype=np.int64), w

    def explain_facts(self, sid, local) -> dict:
        """What the shard's units ``local`` (hits of session ``sid``) hold for their
        explanations (:func:`longctx.mixpr.explain.walk_hit_facts`)."""
        return walk_hit_facts(self.block, self.block._s(sid), np.asarray(local, np.int64))

    def explain_inflow(self, sid, terms, rows, keys) -> tuple:
        """The shard's part of the walk's inflow into the hits of session ``sid``
        (:func:`longctx.mixpr.explain.walk_inflow`), its seeds described as one index
        describes its units, ``unit`` their corpus-wide number."""
        u, d, found = walk_inflow(self.block, self.block._s(sid), terms, rows, keys)
        return u, d, described(self.index._state, found, keys=True)

    def unit_text(self, doc_id: str, unit_index: int) -> str:
        st = self.index._state
        return st.unit_text(int(st.doc_first()[st.positions[doc_id]]) + int(unit_index))

    def has_terms(self) -> bool:
        """Whether some unit holds a term the vocabulary keeps (among this shard's units)."""
        return bool(self.index._state.table.kept_terms().any())

    def digests(self) -> dict:
        """``{doc id: sha256 of its text}`` (:func:`longctx.corpus.manifest.text_sha256`)."""
        import hashlib

        st = self.index._state
        return {
            d: hashlib.sha256(t.encode("utf-8")).hexdigest() for d, t in zip(st.doc_ids, st.texts)
        }

    def identity(self) -> dict:
        """``{"digests": digests(), "metadata": sha256 of the documents' metadata as JSON}``:
        what a restart from the stored copy must find again."""
        import hashlib
        import json

        md = json.dumps([dict(m) for m in self.index._state.metadata], sort_keys=True, default=repr)
        sha = hashlib.sha256(md.encode("utf-8", "surrogatepass")).hexdigest()
        return {"digests": self.digests(), "metadata": sha}

    def document(self, doc_id: str) -> tuple[str, dict]:
        """``(text, metadata)`` of document ``doc_id`` (``KeyError`` when the shard lacks it)."""
        st = self.index._state
        d = st.positions[doc_id]
        return st.texts[d], dict(st.metadata[d])
