"""The hierarchical weighted directed acyclic graph (HWDAG) of GARLIC, and its persistence.

Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.1: level-1 nodes are ~300-token
chunks of the documents, each higher level holds the information points (IPs) an LLM wrote when
summarizing batches of the level below, and the edge weights come from the summarization's
attention (see :mod:`longctx.garlic.build`).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np
import scipy.sparse as sp

from longctx.persist import (
    PersistError,
    check_dict,
    check_float_array,
    check_int_value,
    check_str_list,
)
from longctx.persist.reader import open_index_dir, retry_on_concurrent_save

__all__ = ["Node", "HWDAG", "FORMAT_KIND", "FORMAT_VERSION", "assemble_graph"]

FORMAT_KIND = "garlic"
FORMAT_VERSION = 1

#: Highest node level a loaded graph may hold (a build stops at ``max_levels``, default 10).
MAX_LEVEL = 1000

_NODE_FIELDS = ("id", "text", "level", "n_tokens", "source", "batch", "start", "end")
_BATCH_FIELDS = ("source", "level", "inputs", "outputs", "n_generated", "text")


@dataclass(frozen=True)
class Node:
    """One HWDAG node.

    Attributes
    ----------
    id : int
        Position of the node in :attr:`HWDAG.nodes` and in the rows/columns of :attr:`HWDAG.edges`.
    text : str
        A level-1 chunk (exactly ``texts[source][start:end]``) or an information point.
    level : int
        1 for chunks, ``l + 1`` for the IPs written from level-``l`` nodes.
    n_tokens : int
        Length of ``text`` in tokens of the summarizing model's tokenizer.
    source : int
        Index of the document (in the ``texts`` given to the build) the node comes from.
    batch : int
        For ``level >= 2``: index of the summarization batch that wrote it (see
        :attr:`HWDAG.batches`); -1 for level-1 chunks.
    start, end : int or None
        Character span in ``texts[source]`` (end exclusive) for level-1 chunks; None above.
    """

    id: int
    text: str
    level: int
    n_tokens: int
    source: int
    batch: int = -1
    start: int | None = None
    end: int | None = None


class HWDAG:
    """Hierarchical weighted DAG: nodes per level, attention-weighted parent -> child edges.

    Attributes
    ----------
    nodes : list of Node
        ``nodes[i]`` is node id ``i``.
    levels : list of list of int
        Node ids per level, level 1 first, in document order. A document whose graph stops at a
        lower level than another's has its top below ``levels[-1]``; :meth:`top` gives every
        document's top nodes.
    edges : scipy.sparse.csr_array, (n_nodes, n_nodes) float64
        ``edges[p, c]``: weight of the edge from parent ``p`` to child ``c`` (``p`` one level above
        ``c``, both in one batch); every row with a child sums to 1, level-1 rows are empty.
    embeddings : (n_nodes, dim) float32 ndarray or None
        Node text embeddings (rows follow node ids).
    texts : list of str
        The source documents.
    batches : list of dict
        One record per summarization batch: ``source``, ``level`` (of its inputs), ``inputs`` (child
        ids), ``outputs`` (IP ids), ``n_generated`` (tokens), ``text`` (the generated answer).
    info : dict
        Build settings and figures (``tokens_generated``, ``seconds``, model, ...).
    """

    def __init__(self, nodes, edges, embeddings=None, *, texts=(), batches=(), info=None):
        self.nodes: list[Node] = list(nodes)
        n = len(self.nodes)
        for i, node in enumerate(self.nodes):
            if node.id != i:
                raise ValueError(f"nodes[{i}] has id {node.id}; ids must be positions 0..n-1")
        edges = sp.csr_array(edges, dtype=np.float64)
        if edges.shape != (n, n):
            raise ValueError(f"edges must be ({n}, {n}), got {edges.shape}")
        self.edges = edges
        if embeddings is not None:
            embeddings = np.asarray(embeddings, dtype=np.float32)
            if embeddings.ndim != 2 or embeddings.shape[0] != n:
                raise ValueError(f"embeddings must be ({n}, dim), got {embeddings.shape}")
        self.embeddings = embeddings
        self.texts: list[str] = list(texts)
        self.batches: list[dict] = [dict(b) for b in batches]
        self.info: dict = dict(info or {})
        n_levels = max((node.level for node in self.nodes), default=0)
        self.levels: list[list[int]] = [[] for _ in range(n_levels)]
        for node in self.nodes:
            self.levels[node.level - 1].append(node.id)

    def __len__(self) -> int:
        return len(self.nodes)

    def __repr__(self) -> str:
        per_level = [len(x) for x in self.levels]
        return f"HWDAG(nodes per level={per_level}, edges={self.edges.nnz})"

    # -- navigation ----------------------------------------------------------------------------
    def children(self, node_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Child ids ``(k,) int64`` and edge weights ``(k,) float64`` of one node."""
        a, b = self.edges.indptr[node_id], self.edges.indptr[node_id + 1]
        return self.edges.indices[a:b].astype(np.int64), self.edges.data[a:b].copy()

    def parents(self, node_id: int) -> tuple[np.ndarray, np.ndarray]:
        """Parent ids ``(k,) int64`` and edge weights ``(k,) float64`` of one node."""
        col = self.edges[:, [node_id]].tocoo()
        return col.coords[0].astype(np.int64), col.data.astype(np.float64)

    def top(self, source: int | None = None) -> list[int]:
        """Ids of the top-level nodes (those without a parent), of one document or of all."""
        has_parent = np.zeros(len(self.nodes), dtype=bool)
        has_parent[self.edges.indices] = True
        return [
            n.id
            for n in self.nodes
            if not has_parent[n.id] and (source is None or n.source == source)
        ]

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the graph into directory ``path`` (replaced): ``manifest.json``, ``graph.json``
        (nodes, texts, batches, info), ``edges.npz`` (CSR) and ``embeddings.npz``."""
        from longctx.persist import write_dir

        write_dir(path, **self._payload(), extra={"complete": True})

    def _payload(self) -> dict:
        arrays = {}
        if self.embeddings is not None:
            arrays["embeddings"] = {"embeddings": self.embeddings}
        return {
            "kind": FORMAT_KIND,
            "version": FORMAT_VERSION,
            "json_files": {
                "graph": {
                    "nodes": [asdict(n) for n in self.nodes],
                    "texts": self.texts,
                    "batches": self.batches,
                    "info": self.info,
                }
            },
            "arrays": arrays,
            "sparse": {"edges": self.edges},
        }

    @classmethod
    @retry_on_concurrent_save("path")
    def load(cls, path: str | os.PathLike) -> HWDAG:
        """Read a graph written by :meth:`save` (or by ``build_hwdag(out_dir=...)``).

        Raises
        ------
        PersistError
            Naming the file: not a GARLIC graph, another format version, half-written (an
            interrupted build's checkpoint), missing or damaged files.
        """
        r = open_index_dir(path, kind=FORMAT_KIND, versions=(FORMAT_VERSION,))
        manifest = r.manifest
        mpath = os.path.join(os.fspath(path), "manifest.json")
        if not manifest.get("complete", False):
            raise PersistError(
                f"{mpath!r} belongs to an interrupted build (a checkpoint, not a finished "
                "graph): run build_hwdag / 'longctx index' with the same out dir to finish it"
            )
        return cls._from_dir(r, manifest)

    @classmethod
    def _from_dir(cls, path, manifest) -> HWDAG:
        r = open_index_dir(path, kind=FORMAT_KIND, versions=(FORMAT_VERSION,))
        d = os.fspath(path)
        gpath = os.path.join(d, "graph.json")
        data = r.json("graph.json")
        nodes, texts, batches, info = _check_graph_json(data, gpath)
        epath = os.path.join(d, "edges.npz")
        n = len(nodes)
        edges = r.sparse("edges.npz", shape=(n, n))  # shape checked before the matrix is built
        if edges.nnz:
            if edges.data.min() < 0:
                raise PersistError(f"{epath!r}: negative edge weights")
            levels = np.fromiter((x.level for x in nodes), np.int64, n)
            coo = edges.tocoo()
            if (levels[coo.row] != levels[coo.col] + 1).any():
                raise PersistError(
                    f"{epath!r}: an edge does not go from a node to one of the level below"
                )
        emb = None
        if r.has("embeddings.npz"):
            npath = os.path.join(d, "embeddings.npz")
            emb = r.arrays("embeddings.npz", ["embeddings"])["embeddings"]
            check_float_array(emb, npath, "embeddings", shape=(n, None))
        try:
            return cls(nodes, edges, emb, texts=texts, batches=batches, info=info)
        except ValueError as exc:
            raise PersistError(f"{d!r} holds an inconsistent graph: {exc}") from None

    def __eq__(self, other) -> bool:
        if not isinstance(other, HWDAG):
            return NotImplemented
        same_emb = (self.embeddings is None and other.embeddings is None) or (
            self.embeddings is not None
            and other.embeddings is not None
            and np.array_equal(self.embeddings, other.embeddings)
        )
        return (
            self.nodes == other.nodes
            and self.texts == other.texts
            and self.batches == other.batches
            and self.edges.shape == other.edges.shape
            and (self.edges != other.edges).nnz == 0
            and same_emb
        )

    __hash__ = None


def _check_graph_json(data, gpath: str):
    """Nodes, texts, batches and info of a ``graph.json``, every value typed and bounded, every
    level-1 text equal to ``texts[source][start:end]``.

    Raises
    ------
    PersistError
        Naming ``gpath`` and the field.
    """
    data = check_dict(data, gpath, "graph")
    for key in ("nodes", "texts", "batches", "info"):
        if key not in data:
            raise PersistError(f"{gpath!r} lacks field {key!r}")
    texts = check_str_list(data["texts"], gpath, "texts")
    raw_nodes, batches = data["nodes"], data["batches"]
    info = check_dict(data["info"], gpath, "info")
    if "config" in info:
        check_dict(info["config"], gpath, "info.config")
    if not isinstance(raw_nodes, list):
        raise PersistError(f"{gpath!r}: field 'nodes' must be a list")
    if not isinstance(batches, list):
        raise PersistError(f"{gpath!r}: field 'batches' must be a list")
    n, n_batches = len(raw_nodes), len(batches)
    max_level = min(MAX_LEVEL, n)
    nodes = []
    for i, raw in enumerate(raw_nodes):
        f = f"nodes[{i}]"
        raw = check_dict(raw, gpath, f)
        extra = set(raw) - set(_NODE_FIELDS)
        if extra or not {"id", "text", "level", "n_tokens", "source"} <= set(raw):
            raise PersistError(f"{gpath!r}: field {f!r} has missing or unknown keys")
        check_int_value(raw["id"], gpath, f"{f}.id", minimum=i, maximum=i)
        if not isinstance(raw["text"], str):
            raise PersistError(f"{gpath!r}: field '{f}.text' must be a str")
        level = check_int_value(raw["level"], gpath, f"{f}.level", minimum=1, maximum=max_level)
        n_tok = check_int_value(raw["n_tokens"], gpath, f"{f}.n_tokens", minimum=0)
        src = check_int_value(
            raw["source"], gpath, f"{f}.source", minimum=0, maximum=len(texts) - 1
        )
        batch = check_int_value(
            raw.get("batch", -1), gpath, f"{f}.batch", minimum=-1, maximum=n_batches - 1
        )
        start, end = raw.get("start"), raw.get("end")
        if level == 1:
            a = check_int_value(start, gpath, f"{f}.start", minimum=0, maximum=len(texts[src]))
            b = check_int_value(end, gpath, f"{f}.end", minimum=a, maximum=len(texts[src]))
            if texts[src][a:b] != raw["text"]:
                raise PersistError(
                    f"{gpath!r}: field '{f}.text' differs from its source text {src} at "
                    f"[{a}:{b}] (damaged or forged)"
                )
        elif start is not None or end is not None or batch < 0:
            raise PersistError(
                f"{gpath!r}: field {f!r}: an information point has no span and has a batch"
            )
        nodes.append(Node(i, raw["text"], level, n_tok, src, batch, start, end))
    for j, b in enumerate(batches):
        f = f"batches[{j}]"
        b = check_dict(b, gpath, f)
        if not set(_BATCH_FIELDS) <= set(b):
            raise PersistError(f"{gpath!r}: field {f!r} lacks keys")
        check_int_value(b["source"], gpath, f"{f}.source", minimum=0, maximum=len(texts) - 1)
        check_int_value(b["level"], gpath, f"{f}.level", minimum=1, maximum=max_level)
        check_int_value(b["n_generated"], gpath, f"{f}.n_generated", minimum=0)
        if not isinstance(b["text"], str):
            raise PersistError(f"{gpath!r}: field '{f}.text' must be a str")
        for key in ("inputs", "outputs"):
            ids = b[key]
            if not isinstance(ids, list):
                raise PersistError(f"{gpath!r}: field '{f}.{key}' must be a list of node ids")
            for x in ids:
                check_int_value(x, gpath, f"{f}.{key}", minimum=0, maximum=n - 1)
    return nodes, texts, batches, info


def assemble_graph(texts, doc_nodes, records, encoder) -> HWDAG:
    """One graph from the per-document nodes: documents in order, each document's nodes level by
    level and its summarization batches in (level, position) order, as a one-at-a-time build
    numbers them."""
    nodes: list[Node] = []
    batches_out: list[dict] = []
    rows, cols, vals = [], [], []
    for src, local in enumerate(doc_nodes):
        offset = len(nodes)
        keys = sorted(k for k in records if k[0] == src)
        batch_index = {(lv, pos): len(batches_out) + j for j, (_, lv, pos) in enumerate(keys)}
        outputs: dict[tuple, list[int]] = {k: [] for k in keys}
        for x in local:
            b = -1 if x.level == 1 else batch_index[(x.level - 1, x.batch)]
            nodes.append(Node(offset + x.id, x.text, x.level, x.n_tokens, src, b, x.start, x.end))
            if x.level > 1:
                outputs[(src, x.level - 1, x.batch)].append(offset + x.id)
        for key in keys:
            rec = records[key]
            inputs = [offset + i for i in rec["inputs"]]
            outs = outputs[key]
            for pid, w in zip(outs, rec["weights"]):
                rows.extend([pid] * len(inputs))
                cols.extend(inputs)
                vals.extend(w)
            batches_out.append(
                {
                    "source": src,
                    "level": rec["level"],
                    "inputs": inputs,
                    "outputs": outs,
                    "n_generated": rec["n_generated"],
                    "text": rec["text"],
                }
            )
    n = len(nodes)
    edges = sp.csr_array(
        (np.asarray(vals, dtype=np.float64), (np.asarray(rows, int), np.asarray(cols, int))),
        shape=(n, n),
    )
    embeddings = None
    if encoder is not False:
        from longctx.embeddings import get_encoder

        enc = encoder if encoder is not None else get_encoder(None)
        embeddings = np.asarray(enc.embed_documents([x.text for x in nodes]), dtype=np.float32)
    return HWDAG(nodes, edges, embeddings, texts=texts, batches=batches_out, info={})
