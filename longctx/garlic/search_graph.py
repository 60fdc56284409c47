"""The graph as GARLIC's search reads it: :class:`SearchGraph` (an HWDAG as arrays over node
positions: texts, levels, spans, token counts, the parent -> child edge matrix, node embeddings,
the top level), its JSON form checked field by field on the way back (:meth:`SearchGraph.from_dict`:
a persisted graph is untrusted input), :func:`as_search_graph` (any HWDAG-like object viewed as a
:class:`SearchGraph`) and :func:`merge_graphs` (several documents' graphs as one).

Xinyu Wang, Yanzheng Xiang, Lin Gui, Yulan He, "GARLIC: LLM-Guided Dynamic Progress Control with
Hierarchical Weighted Graph for Long Document QA", 2024, arXiv:2410.04790 (published as PECAN,
Findings of ACL 2025), sec. 3.1 (the HWDAG: information points in levels, weighted edges from
parents to children) and sec. 3.2.2 (Graph Search: ``z = E^T a`` over these edges).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from longctx.persist.format import is_saved_version

__all__ = ["SearchGraph", "as_search_graph", "check_chunk_texts", "merge_graphs"]


def _field(node, *names, default=None):
    for name in names:
        if isinstance(node, Mapping):
            if name in node:
                return node[name]
        elif hasattr(node, name):
            return getattr(node, name)
    return default


@dataclass(frozen=True)
class SearchGraph:
    """What the search needs of an HWDAG, as arrays over node positions.

    Attributes
    ----------
    ids : tuple of str
        Node ids; position ``p`` is row/column ``p`` of ``edges`` and ``embeddings``.
    texts : tuple of str
        Node texts (level 1: the chunk exactly as in its source; levels >= 2: one IP).
    levels : (n,) int64
        1 for chunks, 2... for IPs.
    sources : tuple
        Source document of each node (an int position or a document id).
    starts, ends : (n,) int64
        Character span of level-1 nodes in their source (end exclusive); -1 for IPs.
    n_tokens : (n,) int64
        Token counts stored in the graph (-1 when unknown).
    edges : scipy.sparse.csr_array (n, n) float64
        Parent rows -> child columns, each parent row summing to 1.
    embeddings : (n, d) float32
        Node embeddings, L2-normalized rows.
    top : (t,) int64
        Positions of the top-level nodes (every document's), in graph order.
    model_info : mapping
        ``model_type``, ``vocab_size``, ``n_layers`` of the model the graph was built with, when
        the graph records them (checked against the search model).
    """

    ids: tuple
    texts: tuple
    levels: np.ndarray
    sources: tuple
    starts: np.ndarray
    ends: np.ndarray
    n_tokens: np.ndarray
    edges: sp.csr_array
    embeddings: np.ndarray
    top: np.ndarray
    model_info: Mapping = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def to_dict(self) -> dict:
        """JSON-ready dict (lists only; float32 embeddings round-trip exactly)."""
        e = self.edges.tocsr()
        return {
            "format_version": 1,
            "ids": [str(i) for i in self.ids],
            "texts": list(self.texts),
            "levels": self.levels.tolist(),
            "sources": [s if isinstance(s, (str, int)) else int(s) for s in self.sources],
            "starts": self.starts.tolist(),
            "ends": self.ends.tolist(),
            "n_tokens": self.n_tokens.tolist(),
            "edges": {
                "indptr": e.indptr.tolist(),
                "indices": e.indices.tolist(),
                "data": e.data.tolist(),
            },
            "embeddings": self.embeddings.astype(np.float32).tolist(),
            "top": self.top.tolist(),
            "model_info": dict(self.model_info),
        }

    @classmethod
    def from_dict(
        cls,
        d: Mapping,
        *,
        source_text: str | None = None,
        source_texts: Sequence[str] | None = None,
    ) -> SearchGraph:
        """Inverse of :meth:`to_dict`, every field checked (the dict may come from a persisted
        store, which is untrusted): lengths, levels, spans, edges between adjacent levels,
        finite embeddings, top positions.

        With ``source_text`` (the one document the graph was built from) or ``source_texts``
        (the documents, indexed by each node's int ``sources`` entry) every level-1 node must
        have a span and its text must equal the document's text there
        (:func:`check_chunk_texts`): a load path passes the document, so a graph whose chunk
        texts were replaced is refused instead of being returned as the document's text.

        Raises
        ------
        ValueError
            Unknown ``format_version``, missing fields, a field of the wrong type, length or
            range, or a level-1 text that is not its document's (named by field and node).
        """
        if not isinstance(d, Mapping):
            raise ValueError("a GARLIC graph dict must be a mapping")
        fv = d.get("format_version")
        if not is_saved_version(fv, (1,)):
            raise ValueError(
                f"unknown GARLIC graph format_version {str(d.get('format_version'))[:40]!r}"
            )
        if source_text is not None and source_texts is not None:
            raise ValueError("give source_text or source_texts, not both")
        try:
            graph = _graph_from_dict(cls, d)
        except KeyError as exc:
            raise ValueError(f"GARLIC graph dict lacks {exc}") from None
        except (TypeError, OverflowError) as exc:
            raise ValueError(f"GARLIC graph dict has a field of the wrong type: {exc}") from None
        if source_text is not None or source_texts is not None:
            check_chunk_texts(graph, source_text if source_text is not None else source_texts)
        return graph


def check_chunk_texts(graph: SearchGraph, texts: str | Sequence[str]) -> None:
    """Check that every level-1 node of ``graph`` is the text of its document at its span.

    Parameters
    ----------
    graph : SearchGraph
    texts : str or sequence of str
        One str: the document of every node (a one-document graph). A sequence: the documents,
        node ``p``'s being ``texts[graph.sources[p]]`` (an int position).

    Raises
    ------
    ValueError
        A level-1 node without a span (its text could not be checked), a ``sources`` entry that
        is not a position in ``texts``, a span outside its document, or a text that differs from
        the document there (field and node named).
    """
    one = isinstance(texts, str)
    if not one and (not isinstance(texts, Sequence) or not all(isinstance(t, str) for t in texts)):
        raise TypeError("texts must be a str or a sequence of str")
    for p in np.flatnonzero(graph.levels == 1).tolist():
        a, b = int(graph.starts[p]), int(graph.ends[p])
        if a < 0 or b < 0:
            raise ValueError(
                f"GARLIC graph field 'starts'/'ends': level-1 node {p} has no span, so its text "
                "cannot be checked against its document"
            )
        if one:
            doc = texts
        else:
            src = graph.sources[p]
            if isinstance(src, bool) or not isinstance(src, (int, np.integer)):
                raise ValueError(f"GARLIC graph field 'sources[{p}]' must be a document position")
            if not 0 <= src < len(texts):
                raise ValueError(
                    f"GARLIC graph field 'sources[{p}]' = {src} is not one of the "
                    f"{len(texts)} documents"
                )
            doc = texts[src]
        if not a <= b <= len(doc):
            raise ValueError(
                f"GARLIC graph field 'starts'/'ends': node {p}'s span [{a}:{b}] is outside its "
                f"document of {len(doc)} characters"
            )
        if doc[a:b] != graph.texts[p]:
            raise ValueError(
                f"GARLIC graph field 'texts[{p}]': the text of level-1 node {p} differs from its "
                f"document at [{a}:{b}] (damaged or forged)"
            )


def _int_list(d, key, n=None, low=None, high=None) -> np.ndarray:
    v = d[key]
    if not isinstance(v, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in v
    ):
        raise ValueError(f"GARLIC graph field {key!r} must be a list of integers")
    a = np.asarray(v, dtype=np.int64) if v else np.zeros(0, np.int64)
    if n is not None and len(a) != n:
        raise ValueError(f"GARLIC graph field {key!r} has {len(a)} entries, expected {n}")
    if a.size and ((low is not None and a.min() < low) or (high is not None and a.max() > high)):
        raise ValueError(f"GARLIC graph field {key!r} holds values outside [{low}, {high}]")
    return a


def _graph_from_dict(cls, d):
    ids, texts = d["ids"], d["texts"]
    if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
        raise ValueError("GARLIC graph field 'ids' must be a list of str")
    n = len(ids)
    if not isinstance(texts, list) or len(texts) != n or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"GARLIC graph field 'texts' must be a list of {n} str")
    levels = _int_list(d, "levels", n, 1, max(n, 1))
    starts = _int_list(d, "starts", n, -1)
    ends = _int_list(d, "ends", n, -1)
    n_tokens = _int_list(d, "n_tokens", n, -1)
    top = _int_list(d, "top", None, 0, n - 1)
    sources = d["sources"]
    if not isinstance(sources, list) or len(sources) != n:
        raise ValueError(f"GARLIC graph field 'sources' must be a list of {n}")
    if not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in sources):
        raise ValueError("GARLIC graph field 'sources' must hold str or int")
    for p in range(n):
        a, b = int(starts[p]), int(ends[p])
        if levels[p] == 1 and (a >= 0 or b >= 0):
            if not 0 <= a <= b:
                raise ValueError(f"GARLIC graph node {p}: span [{a}:{b}] out of range")
        elif a != -1 or b != -1:
            raise ValueError(f"GARLIC graph node {p}: an information point has a span")
    ed = d["edges"]
    if not isinstance(ed, Mapping):
        raise ValueError("GARLIC graph field 'edges' must be a mapping")
    indptr = _int_list(ed, "indptr", n + 1, 0)
    indices = _int_list(ed, "indices", None, 0, n - 1)
    data = ed["data"]
    if not isinstance(data, list) or not all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in data
    ):
        raise ValueError("GARLIC graph field 'edges.data' must be a list of numbers")
    data = np.asarray(data, np.float64) if data else np.zeros(0)
    if len(data) != len(indices) or not np.isfinite(data).all() or (data < 0).any():
        raise ValueError("GARLIC graph field 'edges' is malformed")
    edges = sp.csr_array((data, indices, indptr), shape=(n, n))
    edges.check_format(full_check=True)
    coo = edges.tocoo()
    if (levels[coo.row] != levels[coo.col] + 1).any():
        raise ValueError("GARLIC graph field 'edges': an edge skips or climbs a level")
    emb_raw = d["embeddings"]
    if not isinstance(emb_raw, list) or len(emb_raw) != n:
        raise ValueError(f"GARLIC graph field 'embeddings' must be a list of {n} rows")
    emb = np.asarray(emb_raw, np.float32)
    if emb.ndim != 2 or (n and not np.isfinite(emb).all()):
        raise ValueError("GARLIC graph field 'embeddings' must be finite rows of one length")
    model_info = d.get("model_info", {})
    if not isinstance(model_info, Mapping):
        raise ValueError("GARLIC graph field 'model_info' must be a mapping")
    return cls(
        tuple(ids),
        tuple(texts),
        levels,
        tuple(sources),
        starts,
        ends,
        n_tokens,
        edges,
        emb,
        top,
        dict(model_info),
    )


def merge_graphs(graphs: Sequence[SearchGraph], prefixes: Sequence[str]) -> SearchGraph:
    """One graph over several documents' graphs: ids become ``f"{prefix}/{id}"``, sources the
    graph's position, edges block-diagonal, top = every graph's top level (documents never share
    a batch, so their graphs are disjoint)."""
    if not graphs:
        raise ValueError("graphs must not be empty")
    offs = np.cumsum([0] + [len(g) for g in graphs])
    return SearchGraph(
        tuple(f"{pre}/{i}" for g, pre in zip(graphs, prefixes) for i in g.ids),
        tuple(t for g in graphs for t in g.texts),
        np.concatenate([g.levels for g in graphs]),
        tuple(k for k, g in enumerate(graphs) for _ in range(len(g))),
        np.concatenate([g.starts for g in graphs]),
        np.concatenate([g.ends for g in graphs]),
        np.concatenate([g.n_tokens for g in graphs]),
        sp.csr_array(sp.block_diag([g.edges for g in graphs], format="csr")),
        np.concatenate([g.embeddings for g in graphs]),
        np.concatenate([g.top + o for g, o in zip(graphs, offs[:-1])]),
        dict(graphs[0].model_info),
    )


def as_search_graph(graph) -> SearchGraph:
    """View an HWDAG (``longctx.garlic.HWDAG`` or any object with ``levels``, ``nodes``, ``edges``,
    ``embeddings``) as a :class:`SearchGraph`.

    Node positions follow ``graph.node_ids`` / ``graph.ids`` when the graph has them, else the
    order of ``graph.nodes``. A node is a mapping or an object with ``text``, ``level``,
    ``source`` (or ``doc``/``document``), and for level 1 ``start``/``end`` (or ``span``).

    Raises
    ------
    TypeError, ValueError
        ``graph`` lacks a field, or its shapes disagree (the message names ``graph``).
    """
    if isinstance(graph, SearchGraph):
        return graph
    for name in ("levels", "nodes", "edges", "embeddings"):
        if not hasattr(graph, name):
            raise TypeError(f"graph must be an HWDAG with .{name}, got {type(graph).__name__}")
    nodes = graph.nodes
    ids = None
    for name in ("node_ids", "ids"):
        v = getattr(graph, name, None)
        if v is not None and not callable(v):
            ids = list(v)
            break
    if ids is None:
        ids = list(nodes.keys()) if isinstance(nodes, Mapping) else list(range(len(nodes)))
    levels_lists = [list(level) for level in graph.levels]
    if not levels_lists or not levels_lists[-1]:
        raise ValueError("graph has no top level")
    pos = {nid: p for p, nid in enumerate(ids)}
    level_of = {}
    for li, level in enumerate(levels_lists, start=1):
        for nid in level:
            if nid not in pos:
                raise ValueError(f"graph.levels names node {nid!r}, which graph.nodes lacks")
            level_of[nid] = li
    n = len(ids)
    texts, sources = [], []
    lv = np.empty(n, np.int64)
    starts = np.full(n, -1, np.int64)
    ends = np.full(n, -1, np.int64)
    ntok = np.full(n, -1, np.int64)
    for p, nid in enumerate(ids):
        node = nodes[nid]
        text = node if isinstance(node, str) else _field(node, "text")
        if not isinstance(text, str):
            raise TypeError(f"graph node {nid!r} has no text")
        texts.append(text)
        lv[p] = int(_field(node, "level", default=level_of.get(nid, 1)))
        sources.append(_field(node, "source", "doc", "document", "source_id", default=0))
        span = _field(node, "span", "char_span")
        start = _field(node, "start", "start_char", default=None if span is None else span[0])
        end = _field(node, "end", "end_char", default=None if span is None else span[1])
        if lv[p] == 1 and start is not None and end is not None:
            starts[p], ends[p] = int(start), int(end)
        t = _field(node, "n_tokens", "token_count", "tokens")
        if isinstance(t, (int, np.integer)):
            ntok[p] = int(t)
    edges = sp.csr_array(graph.edges, dtype=np.float64)
    if edges.shape != (n, n):
        raise ValueError(f"graph.edges is {edges.shape}, expected ({n}, {n}) for {n} nodes")
    if graph.embeddings is None:
        raise ValueError("graph has no node embeddings: build it with an encoder")
    emb = np.asarray(graph.embeddings, dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != n:
        raise ValueError(f"graph.embeddings is {emb.shape}, expected ({n}, dim)")
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = emb / np.where(norms > 0, norms, 1.0)
    top_fn = getattr(graph, "top", None)
    top_ids = top_fn() if callable(top_fn) else levels_lists[-1]
    top = np.asarray([pos[nid] for nid in top_ids], np.int64)
    info = getattr(graph, "info", None)
    config = info.get("config", {}) if isinstance(info, Mapping) else {}
    model_info = {k: config[k] for k in ("model_type", "vocab_size", "n_layers") if k in config}
    return SearchGraph(
        tuple(ids),
        tuple(texts),
        lv,
        tuple(sources),
        starts,
        ends,
        ntok,
        edges,
        emb.astype(np.float32),
        top,
        model_info,
    )
