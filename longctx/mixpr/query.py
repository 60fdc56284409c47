"""The query side of a built MixPR index: the query's TF-IDF rows, its edges to the units
(thresholded, weighted by coverage) and the restart over the query nodes (Alonso and Millidge,
"Mixture-of-PageRanks: Replacing Long-Context with Real-Time, Sparse GraphRAG", 2024,
arXiv:2412.06078, sec. 4 eq. 2 and "Personalization vector"). The power iteration that uses
them is :class:`longctx.mixpr.scoring.Scorer`.

Every function here reads an immutable snapshot of the index and returns new arrays: nothing a
query computes is kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order

from longctx.mixpr.push import gather, spans, unique_positions

#: The most query chunks a query's edges are computed for: a query is split like the text, and
#: its last chunks are the query nodes (the paper's personalization restarts at the last one or
#: two). A longer query's earlier chunks are not used, so the work of a query stays linear in
#: its length (a 16,000-character query of 8,000 one-character sentences made an
#: 8,000 x 8,000 query-query matrix before).
MAX_QUERY_CHUNKS = 64


def personalization(n_query: int, query_chunks: Sequence[str]) -> np.ndarray:
    """Restart weights over the query nodes (sec. 4 "Personalization vector"): one-hot on the last
    query chunk, or .5 / .5 on the last two when the last one has fewer than 3 words."""
    p = np.zeros(n_query)
    if n_query >= 2 and len(query_chunks[-1].split()) < 3:
        p[-2:] = 0.5
    else:
        p[-1] = 1.0
    return p


def restart_reaching_units(
    p_query: np.ndarray, Q: np.ndarray, bcol: np.ndarray, thr: float
) -> np.ndarray:
    """The restart over the query nodes of the bordered walk (``personalization="query"``).

    The paper restarts on the last query chunk (or the last two, sec. 4 "Personalization
    vector": "the last sentence or two consist of all or most of the query", so "the p vector
    treats the query node(s) as the start nodes ... biasing it toward items related to the
    query"; Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with Real-Time,
    Sparse GraphRAG", 2024, arXiv:2412.06078).
    When no unit can be reached from those nodes (no edge of theirs to a unit, nor through
    query-query edges to a query node with one: a last sentence whose words the text does not
    hold), the walk's mass stays on them and the units' masses only decay from the uniform
    start: scores of no meaning. The query is then its other sentences: the restart is spread
    evenly over the query nodes with an edge to a unit (as ``personalization="similarity"``
    restarts over every query chunk's edges when its restart chunk has none).

    Parameters
    ----------
    p_query : (m,) float64
        The paper's restart (:func:`~longctx.mixpr.query.personalization`), summing to 1.
    Q : (m, m) float64, dense or scipy sparse
        The query-query cosines (:func:`query_weights`; the paper-literal pipeline of
        :class:`~longctx.mixpr.pipeline.MixPR` gives its graph's thresholded, sparse block:
        its query may hold more than :data:`MAX_QUERY_CHUNKS` chunks); ``thr``: the threshold
        of an edge (a cosine ``>= thr`` and ``> 0``).
    bcol : (m,) float64
        Each query node's summed edge weight to the units.

    Returns
    -------
    (m,) float64
        ``p_query`` itself when its nodes reach a unit (or when no query node has an edge to
        one), else the even restart over the query nodes with an edge (summing to 1).
    """
    linked = np.asarray(bcol) > 0
    start = np.asarray(p_query) > 0
    if (start & linked).any() or not linked.any():  # the common cases: no graph to walk
        return p_query
    # the query nodes joined to the restart nodes through the query-query edges the walk keeps
    Q = sp.coo_array(Q)  # new arrays: the caller's Q is left as it is
    on = (Q.data >= thr) & (Q.data > 0)
    joined = sp.csr_array((np.ones(np.count_nonzero(on)), (Q.row[on], Q.col[on])), shape=Q.shape)
    reach = start.copy()
    for node in np.flatnonzero(start).tolist():  # one or two restart nodes (the paper's)
        reach[breadth_first_order(joined, node, directed=True, return_predecessors=False)] = True
    if (reach & linked).any():
        return p_query
    return linked / np.count_nonzero(linked)


def by_max(x: np.ndarray) -> np.ndarray:
    """``x / max(x)`` (``x`` unchanged when its maximum is not positive)."""
    return divide_by_top(x, float(x.max()) if len(x) else 0.0)


def divide_by_top(x: np.ndarray, top: float) -> np.ndarray:
    """``x / top`` (a float64 copy of ``x`` when ``top`` is not positive): :func:`by_max` with
    the maximum taken elsewhere (over every block of a sharded index)."""
    return x / top if top > 0 else x.astype(np.float64, copy=True)


def query_weights(table, qchunks: list[str], *, with_q: bool) -> tuple[sp.csr_array, np.ndarray]:
    """TF-IDF rows of the query chunks as the paper-literal pipeline weighs them, had the query
    been one more document of the corpus: IDF with ``n + 1`` documents and the query counted in
    its own terms' document frequency, and terms unseen in the text (or pruned from its
    vocabulary) kept in the L2 norm (they match no chunk, but a query full of them is less
    similar to every chunk).

    Parameters
    ----------
    table : longctx.mixpr.tfidf.TermTable
    qchunks : list of str
    with_q : bool
        Also compute the query-query cosines (the bordered graph of ``personalization="query"``).

    Returns
    -------
    Eq : (m, n_terms) float64 CSR over the table's vocabulary
    Q : (m, m) float64 query-query cosines, or an empty array without ``with_q``
    """
    s = table.settings
    vocab = table.vocabulary
    n = table.n_units
    keep = _query_term_filter(table)
    df = table.df
    weights = []
    indptr, cols, vals = [0], [], []
    for chunk in qchunks:
        tf = Counter(s.analyzer(chunk))
        w = {}
        seen = []  # (column, term) of the chunk's terms the vocabulary keeps
        for term, count in tf.items():
            j = vocab.get(term)
            known = j is not None and (keep is None or keep(j))
            if known and df[j] > 0:
                seen.append((j, term))
            c = 1.0 if s.binary else float(count)
            if s.sublinear_tf:
                c = 1.0 + np.log(c)
            if s.use_idf:
                d = float(df[j]) if known else 0.0
                d += 1.0  # the query is a document too
                c *= (np.log((2 + n) / (1 + d)) if s.smooth_idf else np.log((n + 1) / d)) + 1.0
            w[term] = c
        norm = np.sqrt(sum(v * v for v in w.values())) or 1.0
        weights.append({t: v / norm for t, v in w.items()})
        seen.sort()  # a row's columns ascending, as scipy's COO -> CSR conversion sorts them
        cols.extend(j for j, _ in seen)
        vals.extend(weights[-1][t] for _, t in seen)
        indptr.append(len(cols))
    m = len(qchunks)
    Eq = sp.csr_array(
        (np.array(vals, np.float64), np.array(cols, np.int64), np.array(indptr, np.int64)),
        shape=(m, len(vocab)),
    )
    if not with_q:
        return Eq, np.zeros((0, 0))
    # query-query cosines over all the query's terms (seen or not); m <= MAX_QUERY_CHUNKS
    qterms: dict[str, int] = {}
    qr, qc, qv = [], [], []
    for i, w in enumerate(weights):
        for term, v in w.items():
            qr.append(i)
            qc.append(qterms.setdefault(term, len(qterms)))
            qv.append(v)
    W = sp.csr_array((qv, (qr, qc)), shape=(m, len(qterms)), dtype=np.float64)
    return Eq, (W @ W.T).toarray()


def _query_term_filter(table):
    """``j -> bool``: whether the vocabulary keeps term ``j`` (``TermTable.kept_terms``), read
    for the query's terms alone (``min_df`` / ``max_df``: its own count; only ``max_features``
    ranks every term); ``None`` when every term with a count is kept."""
    s = table.settings
    if s.max_features:
        keep = table.kept_terms()
        return keep.__getitem__
    if s.min_df == 1 and s.max_df == 1.0:
        return None
    lo, hi = s.count_limits(table.n_units)
    df = table.df
    return lambda j: bool(df[j] > 0 and lo <= df[j] <= hi)


def reweight_query_terms(table, Et: sp.csc_array, terms: np.ndarray) -> sp.csc_array:
    """The units' weights of the query's terms as the paper-literal pipeline has them.

    There the query is one more document, so each query term's document frequency is one
    higher and its IDF lower; every unit holding it gets that column scaled by ``idf' / idf``
    and its row re-normalized (the other terms' IDF shift, ``~1/n``, is negligible). Only the
    query terms' columns (``Et``, ``(n, t)``) are touched; the unit graph keeps the text's own
    IDF.
    """
    s = table.settings
    if not s.use_idf or Et.nnz == 0:
        return Et
    n = table.n_units
    idf = table.idf()[terms]
    df = table.df[terms].astype(np.float64)
    if s.smooth_idf:
        new = np.log((2 + n) / (2 + df)) + 1.0
    else:
        new = np.log((n + 1) / (df + 1)) + 1.0
    ratio = np.divide(new, idf, out=np.ones_like(idf), where=idf > 0)
    Et = Et.copy()
    rows = Et.indices
    cols = np.repeat(np.arange(len(terms)), np.diff(Et.indptr))
    old = Et.data
    # squared row norms change by sum over the query terms of w^2 (r^2 - 1)
    delta = np.bincount(rows, weights=old * old * (ratio[cols] ** 2 - 1.0), minlength=n)
    norm = np.sqrt(np.maximum(1.0 + delta, 1e-12))
    Et.data = old * ratio[cols] / norm[rows]
    return Et


def query_edge_rows(
    E: sp.csc_array, terms, Eqt: sp.csr_array, p_query, thr: float, coverage_power: float, *,
    keep=None, reweight=None, lexical: bool = True,
):  # fmt: skip
    """The query's edges ``B`` over the units holding a query term: the units' TF-IDF cosines
    to the query chunks (sec. 4 eq. 3), those below ``thr`` dropped, weighted by coverage
    (each unit's share of the query chunk's TF-IDF weight) and kept by the filter; and the lexical cosines (``B`` before
    the threshold, times ``p_query``). Costs the query terms' columns of ``E``.

    Each value is computed with the operations, in the order, of the sparse products it
    replaces (``Et @ Eqt.T`` sums each unit's products over the query terms in ascending order,
    from 0; the coverage, the threshold and the filter act entry by entry), so the edges are
    those of the scipy pipeline bit for bit (``tests/test_mixpr_query_edges.py``), without its
    dozen sparse matrices a query.

    Parameters
    ----------
    E : (n, n_terms) float64 CSC
        The units' TF-IDF rows by columns.
    terms : (t,) int64 ascending
        The query's term columns.
    Eqt : (m, t) float64 CSR, sorted indices
        The query chunks' TF-IDF weights over ``terms``.
    p_query : (m,) float64
        The restart over the query chunks (:func:`personalization`).
    thr : float
        ``query_threshold``: a cosine below it is no edge.
    coverage_power : float
        0: no coverage weight.
    keep : callable ``(k,) int64 units -> (k,) bool``, optional
        The filter: the edges of the units it leaves out are dropped.
    reweight : callable ``(Et (r, t) CSC, terms) -> CSC``, optional
        :func:`reweight_query_terms` with its table (``literal_query_weights``).
    lexical : bool
        Also return the lexical cosines.

    Returns
    -------
    rows : (r,) int64 ascending
        The units holding a query term.
    B : (r, m) float64 CSR, sorted indices, no stored zeros
    lex : (r,) float64 or None
    w : (r,) float64
        ``B @ p_query``: the restart weights (as scipy's product adds each row's entries).
    """
    m, t = Eqt.shape
    where = spans(E.indptr, terms)
    lens = where[1]
    units, vals = gather(E.indptr, E.indices, E.data, terms, None, where)
    rows, local = unique_positions(units)
    R = len(rows)
    if reweight is not None:
        indptr = np.concatenate([[0], np.cumsum(lens)])
        vals = reweight(sp.csc_array((vals, local, indptr), shape=(R, t)), terms).data
    Q = Eqt.toarray()
    # the chunks' L1 weights as scipy's row sums add them (coverage's denominators)
    total = np.zeros(m)
    major = np.flatnonzero(np.diff(Eqt.indptr))
    total[major] = np.add.reduceat(Eqt.data, Eqt.indptr[major])
    recip = 1.0 / np.where(total > 0, total, 1.0)
    lex = np.zeros(R) if lexical else None
    w = np.zeros(R)
    at_r, at_c, at_v = [], [], []
    for c in range(m):
        qc = np.repeat(Q[c], lens)  # each entry's query term's weight
        # (Et @ Eqt.T)[:, c]; float64 also for no entries (numpy's bincount then gives int64)
        b = np.bincount(local, weights=qc * vals, minlength=R).astype(np.float64, copy=False)
        if lex is not None:
            lex += b * p_query[c]
        on = np.flatnonzero((b >= thr) & (b != 0))
        v = b[on]
        if coverage_power and len(on):
            matched = np.bincount(local, weights=qc, minlength=R)[on]
            v = v * np.clip(matched * recip[c], 0.0, 1.0) ** coverage_power
            nz = v != 0
            on, v = on[nz], v[nz]
        if keep is not None and len(on):
            kept = keep(rows[on])
            on, v = on[kept], v[kept]
        w[on] += v * p_query[c]
        at_r.append(on)
        at_c.append(np.full(len(on), c, np.int32))
        at_v.append(v)
    r_all = np.concatenate(at_r) if m > 1 else at_r[0]
    if m > 1:  # row by row, the chunks of a row ascending
        order = np.argsort(r_all, kind="stable")
        at_c, at_v = [np.concatenate(at_c)[order]], [np.concatenate(at_v)[order]]
        r_all = r_all[order]
    # int32 below 2**31 edges, as the chunk indices are: scipy then keeps both as given (an
    # int64 indptr made it copy the chunk indices to int64; issue 46, the first query's peak)
    indptr = np.zeros(R + 1, np.int32 if len(r_all) < 2**31 else np.int64)
    np.cumsum(np.bincount(r_all, minlength=R), out=indptr[1:])
    B = sp.csr_array((at_v[0], at_c[0], indptr), shape=(R, m))
    return rows, B, lex, w


def lexical_cosines(table, chunk, query: str) -> np.ndarray:
    """Each unit's direct TF-IDF cosine to ``query`` (a study helper, no walk): ``(n_units,)``
    float64, the query cut by ``chunk`` (``str -> [(start, end), ...]``) into at most
    :data:`MAX_QUERY_CHUNKS` chunks weighted by :func:`personalization`. Reads every unit."""
    qchunks = [query[a:b] for a, b in chunk(query)] or [query]
    qchunks = qchunks[-MAX_QUERY_CHUNKS:]
    Eq, _ = query_weights(table, qchunks, with_q=False)
    terms = np.unique(Eq.indices)
    Et = sp.csc_array(table.embeddings()[:, terms])
    B = sp.csr_array(Et @ sp.csr_array(Eq[:, terms]).T)
    return np.asarray(B @ personalization(len(qchunks), qchunks)).ravel()
