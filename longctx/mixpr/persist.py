"""Saving and loading a :class:`~longctx.mixpr.index.MixPRIndex`: the directory layout written by
:meth:`MixPRIndex.save`, and the validation of every file read back by :meth:`MixPRIndex.load`
(untrusted input: bounded, checked against each other, a damaged file raises
:class:`~longctx.persist.PersistError`), including the ``TfidfVectorizer`` arguments a saved
config may set and the dense unit vectors of hybrid indexes.

Source of the index: Alonso and Millidge, "Mixture-of-PageRanks: Replacing Long-Context with
Real-Time, Sparse GraphRAG", 2024, arXiv:2412.06078, sec. 4 (the similarity graph ``S``, the TF-IDF
embeddings ``E`` and the chunk offsets saved here are the query-independent part of its pipeline).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from longctx.index import check_texts
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.unit_filter import document_starts
from longctx.persist import (
    PersistError,
    check_dict,
    check_int_array,
    check_spans,
    check_str_list,
    check_token_counts,
    write_dir,
)

__all__ = ["LOADABLE_VECTORIZER_KWARGS", "check_units", "load_format2", "save_index"]


def save_index(index, path) -> None:
    """Write ``index`` (a :class:`~longctx.mixpr.index.MixPRIndex`) to directory ``path``
    (the files are listed in :meth:`MixPRIndex.save <longctx.mixpr.index.MixPRIndex.save>`).
    Metadata and the unit arrays get the checks :func:`load_format2` makes before anything is
    written (a ``TypeError`` / ``ValueError`` then, and the index at ``path`` stays)."""
    st = index._state
    json_files, unit_arrays = index_json(index, Path(path) / "arrays.npz", st)
    arrays = {"arrays": unit_arrays}
    if st.unit_vectors is not None:
        arrays["vectors"] = {"unit_vectors": st.unit_vectors}
    sparse = {"terms": st.table.counts.astype(np.float64)}  # held as uint16: same file
    if st.config.graph == "threshold":
        sparse["graph"] = st.graph.S
    write_dir(
        path,
        kind="mixpr",
        version=index.FORMAT_VERSION,
        json_files={
            **json_files,
            "texts": list(st.texts),
            "vocabulary": st.table.terms(),
        },
        arrays=arrays,
        sparse=sparse,
    )


def index_json(index, where, st) -> tuple[dict, dict]:
    """``(json_files, unit_arrays)``: ``config.json`` and ``documents.json`` of ``index`` and
    its unit arrays (as :func:`check_units` reads them: ``where`` names them in an error),
    after the checks a load makes (formats 2 and 3): a save never replaces an index with one
    that cannot be loaded. ``st``: the state the caller saves (read once by it: a write swaps
    the index's state meanwhile, and ids of one version beside texts of another made a folder
    that no load accepts)."""
    from longctx.persist import check_json_metadata

    for doc_id, md in zip(st.doc_ids, st.metadata):  # before anything is written
        check_json_metadata(md, f"document {doc_id!r}")
    counts = st.token_counts
    if counts is None and index._token_counter is not None:
        # a counter of the caller's cannot be found again by its name at load (which counts
        # with the default): count now, so the loaded index budgets as this one does
        counts = index._counts(st)
    units = {  # saved as int64 whatever the dtype held (int32 where it fits)
        "unit_source": st.unit_source.astype(np.int64, copy=False),
        "unit_index": st.unit_index,
        "starts": st.starts.astype(np.int64, copy=False),
        "ends": st.ends.astype(np.int64, copy=False),
        "token_counts": counts if counts is not None else np.zeros(0, np.int64),
    }
    try:
        check_units(st.texts, units, where, lengths=st.text_lengths())
    except PersistError as exc:
        raise ValueError(f"this index cannot be saved as it is: {exc}") from None
    extra = {}
    if st.unit_vectors is not None:
        extra["encoder"] = index._encoder_identity
    config = {
        **st.config.to_dict(),
        "token_counter": index.token_counter_name,
        "chunk": index.chunk,
        **extra,
    }
    documents = {"ids": list(st.doc_ids), "metadata": [dict(m) for m in st.metadata]}
    return {"config": config, "documents": documents}, units


#: Largest term count of one term in one unit accepted from a file.
MAX_TERM_COUNT = 1 << 31


def load_format2(cls, r, *, router=None, encoder=None):
    """The format-2 index of the open folder ``r`` (an :class:`~longctx.persist.IndexDir`)."""
    from longctx.mixpr.tfidf import TermTable, TfidfSettings

    d = r.path
    # every member read at once: the checks below then run on bytes of one save (a concurrent
    # save replacing the folder meanwhile no longer fails the load)
    r.prefetch(
        ("config.json", "texts.json", "vocabulary.json", "documents.json", "arrays.npz")
        + ("terms.npz", "vectors.npz", "graph.npz")
    )
    arr_path, terms_path = d / "arrays.npz", d / "terms.npz"
    texts = check_str_list(r.json("texts.json"), d / "texts.json", "texts")
    vocab = check_str_list(r.json("vocabulary.json"), d / "vocabulary.json", "terms")
    config, counter, chunk, ident = read_config(r)
    keys = ("unit_source", "unit_index", "starts", "ends", "token_counts")
    arrs = r.arrays("arrays.npz", keys)
    vectors = None
    if texts:  # an index whose documents were all deleted holds none (and no unit)
        try:
            texts = check_texts(texts, "texts.json")
        except (TypeError, ValueError) as exc:
            raise PersistError(f"{str(d / 'texts.json')!r}: {str(exc)[:300]}") from None
    texts = tuple(texts)
    ids, metadata = read_documents(r, len(texts))
    source, unit_index, starts, ends, counts = check_units(texts, arrs, arr_path)
    n = len(starts)
    if len(set(vocab)) != len(vocab):
        raise PersistError(f"{str(d / 'vocabulary.json')!r}: field 'terms' has duplicates")
    counts_m = r.sparse("terms.npz", shape=(n, len(vocab)))
    data = counts_m.data
    if data.size and (
        data.min() < 1 or data.max() > MAX_TERM_COUNT or not np.all(data == np.round(data))
    ):
        raise PersistError(f"{str(terms_path)!r}: term counts must be whole numbers >= 1")
    counts_m = sp.csr_array(counts_m, dtype=np.float64)
    counts_m.sum_duplicates()
    counts_m.sort_indices()
    if ident is not None:
        vectors = r.arrays("vectors.npz", ("unit_vectors",))["unit_vectors"]
        vectors = checked_vectors(vectors, ident, n, d / "vectors.npz")
    graph = None
    if config.graph == "threshold":
        from longctx.mixpr.graph import ThresholdGraph

        S = r.sparse("graph.npz", shape=(n, n))
        if S.nnz and S.data.min() < 0:
            raise PersistError(f"{str(d / 'graph.npz')!r}: field 'data': negative weights")
        graph = ThresholdGraph(S)
    try:
        settings = TfidfSettings(config)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(d)!r} holds an inconsistent MixPR index: {exc}") from None
    V = len(vocab)
    df = np.bincount(counts_m.indices, minlength=V).astype(np.int64)
    tfc = np.ones_like(counts_m.data) if settings.binary else counts_m.data
    cf = np.bincount(counts_m.indices, weights=tfc, minlength=V)
    table = TermTable(settings, {t: i for i, t in enumerate(vocab)}, counts_m, df, cf)
    loaded = {"router": router, "encoder": encoder, "counter": counter, "ident": ident}
    return index_of(
        cls, d, loaded, config=config, doc_ids=ids, texts=texts, metadata=metadata,
        unit_source=source, unit_index=unit_index, starts=starts, ends=ends, table=table,
        graph=graph, unit_vectors=vectors, token_counts=counts, chunk=chunk,
        doc_starts=document_starts(source, len(texts), ordered=True),
    )  # fmt: skip


def index_of(cls, d, loaded: dict, *, chunk: bool, **state):
    """An instance of ``cls`` over a :class:`~longctx.mixpr.state._State` of ``state`` (formats
    2 and 3); ``loaded``: the ``router``, ``encoder`` (given to ``load``), token ``counter``
    name and encoder ``ident`` (read from ``config.json``)."""
    from longctx.mixpr.state import _State

    ident = loaded["ident"]
    return cls(
        _State(**state),
        router=loaded["router"],
        token_counter_name=loaded["counter"],
        encoder=_load_encoder(loaded["encoder"], ident, state["unit_vectors"], d),
        encoder_identity=ident,
        chunk=chunk,
    )


#: Settings added after format 2 was fixed, with the value that gives an index saved without
#: them the ranking it was saved with (``push_df_power``: the push rule before issue 46;
#: ``fold_decomposed``: the accent folding its vocabulary was built with, before issue 46's
#: fix of a decomposed accent folded apart in the build and in a query).
ADDED_FIELDS = {"push_df_power": 1.0, "fold_decomposed": False}


def read_config(r):
    """``(config, token_counter_name, chunk, encoder_identity)`` from ``config.json`` of the
    open folder ``r``, checked (formats 2 and 3)."""
    return parse_config(r.json("config.json"), r.path / "config.json")


def parse_config(data, cfg_path):
    """:func:`read_config` of the JSON value ``data`` of the file ``cfg_path`` (what errors
    name; a config read elsewhere: a sibling shard's in a corpus location): every field
    checked, the settings saved before a field existed given their former values
    (:data:`ADDED_FIELDS`).

    Raises
    ------
    PersistError
        Not an object, an unknown or missing field, a value of the wrong type.
    """
    cfg = dict(check_dict(data, cfg_path, "config"))
    ident = None
    if "encoder" in cfg:
        ident = cfg.pop("encoder")
        if not isinstance(ident, dict) or not isinstance(ident.get("name"), (str, type(None))):
            raise PersistError(f"{str(cfg_path)!r}: field 'encoder' must be an object")
    counter = cfg.pop("token_counter", None)
    if not isinstance(counter, str) or len(counter) > 200:
        raise PersistError(f"{str(cfg_path)!r}: field 'token_counter' must be a short str")
    chunk = cfg.pop("chunk", True)
    if not isinstance(chunk, bool):
        raise PersistError(f"{str(cfg_path)!r}: field 'chunk' must be true or false")
    unknown = sorted(set(cfg) - set(MixPRConfig.__dataclass_fields__))
    if unknown:
        raise PersistError(f"{str(cfg_path)!r}: unknown field(s) {unknown[:5]}")
    for name, value in ADDED_FIELDS.items():  # saved before the field: the rule it ranked by
        cfg.setdefault(name, value)
    missing = sorted(set(MixPRConfig.__dataclass_fields__) - set(cfg))
    if missing:  # a default would silently change how the saved index ranks
        raise PersistError(f"{str(cfg_path)!r}: missing field(s) {missing[:5]}")
    cfg["vectorizer_kwargs"] = _loadable_vectorizer_kwargs(
        cfg.get("vectorizer_kwargs", {}), cfg_path
    )
    if isinstance(cfg.get("stop_words"), list):
        cfg["stop_words"] = tuple(cfg["stop_words"])
    try:
        config = MixPRConfig(**cfg)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(cfg_path)!r}: {str(exc)[:300]}") from None
    return config, counter, chunk, ident


def read_documents(r, n_texts: int) -> tuple[tuple, tuple]:
    """``(ids, metadata)`` from ``documents.json`` of the open folder ``r``, checked against
    the number of texts (formats 2 and 3)."""
    from longctx.mixpr.validation import _check_ids, _check_metadatas

    doc_path = r.path / "documents.json"
    docs = check_dict(r.json("documents.json"), doc_path, "documents")
    unknown = sorted(set(docs) - {"ids", "metadata"})
    if unknown:
        raise PersistError(f"{str(doc_path)!r}: unknown field(s) {unknown[:5]}")
    try:
        ids = _check_ids(docs.get("ids"), n_texts)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(doc_path)!r}: field 'ids': {str(exc)[:300]}") from None
    metadata = docs.get("metadata")
    if not isinstance(metadata, list) or not all(isinstance(m, dict) for m in metadata):
        raise PersistError(f"{str(doc_path)!r}: field 'metadata' must be a list of objects")
    try:
        metadata = _check_metadatas(metadata, n_texts, ids)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(doc_path)!r}: field 'metadata': {str(exc)[:300]}") from None
    return ids, metadata


def checked_vectors(vectors, ident: dict, n: int, vpath) -> np.ndarray:
    """The saved unit vectors checked against the encoder of ``config.json`` and ``n`` units
    (read-only)."""
    if ident.get("dim") != (vectors.shape[1] if vectors.ndim == 2 else None):
        raise PersistError(f"{str(vpath)!r} does not match the encoder in config.json")
    try:
        vectors = _check_unit_vectors(vectors, n)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(vpath)!r}: field 'unit_vectors': {exc}") from None
    vectors.setflags(write=False)
    return vectors


def check_units(texts, arrs: dict, path, *, lengths=None) -> tuple[np.ndarray, ...]:
    """The unit arrays of ``arrays.npz``, checked against each other and against ``texts``, in
    this order (the first failure is a :class:`~longctx.persist.PersistError` naming ``path``
    and the field):

    1. each a 1-D integer array, all of one length ``n`` (``token_counts``: ``n`` or empty);
    2. ``unit_source`` in ``[0, len(texts))`` and non-decreasing (document order), ``0 <= start
       < end <= len(texts[source])`` (no empty unit, none past its text);
    3. the units of one text sorted and non-overlapping (``start >= end`` of the unit before);
    4. ``unit_index`` the unit's position in its text (``0, 1, ...`` per text: what a build
       writes, and what a shard's corpus keys and ``unit_text`` rely on);
    5. ``token_counts`` in ``[1, MAX_TOKENS_PER_CHAR * (end - start) + TOKEN_SLACK]`` (so a
       budget counts every unit and a sum of counts cannot overflow).

    Returns
    -------
    tuple
        ``(unit_source, unit_index, starts, ends, token_counts)`` as int64 arrays
        (``token_counts`` ``None`` when the file holds none).
    """
    starts = check_int_array(arrs["starts"], path, "starts", minimum=0)
    n = len(starts)
    source = check_int_array(arrs["unit_source"], path, "unit_source", n=n, minimum=0)
    ends = check_int_array(arrs["ends"], path, "ends", n=n, minimum=0)
    unit_index = check_int_array(arrs["unit_index"], path, "unit_index", n=n, minimum=0)
    counts = check_int_array(arrs["token_counts"], path, "token_counts", minimum=0)
    if len(counts) not in (0, n):
        raise PersistError(
            f"{str(path)!r}: field 'token_counts' has {len(counts)} entries for {n} units"
        )
    check_spans(texts, source, starts, ends, path, lengths=lengths)
    if n and np.any(np.diff(source) < 0):
        raise PersistError(f"{str(path)!r}: field 'unit_source' is not in document order")
    empty = ends <= starts
    if empty.any():
        i = int(np.flatnonzero(empty)[0])
        raise PersistError(
            f"{str(path)!r}: field 'ends': unit {i} is empty (start={int(starts[i])}, "
            f"end={int(ends[i])})"
        )
    same = source[1:] == source[:-1]
    bad = same & (starts[1:] < ends[:-1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0]) + 1
        raise PersistError(
            f"{str(path)!r}: field 'starts': unit {i} starts at {int(starts[i])}, before the end "
            f"{int(ends[i - 1])} of unit {i - 1} of the same text (units out of order or "
            "overlapping)"
        )
    # 0 at a text's first unit, one more than the unit before otherwise (O(n), no search)
    ok = n == 0 or (
        int(unit_index[0]) == 0
        and np.array_equal(unit_index[1:], np.where(same, unit_index[:-1] + 1, 0))
    )
    if not ok:
        first = np.searchsorted(source, source, side="left")
        want = np.arange(n, dtype=np.int64) - first
        i = int(np.flatnonzero(unit_index != want)[0])
        raise PersistError(
            f"{str(path)!r}: field 'unit_index': unit {i} has index {int(unit_index[i])}, but "
            f"it is unit {int(want[i])} of text {int(source[i])}"
        )
    if len(counts):
        check_token_counts(counts, starts, ends, path)
    return source, unit_index, starts, ends, (counts if len(counts) == n and n else None)


def _refuse_old_format(path, version: int) -> None:
    """An index saved by longctx 0.1 (format version 1) is a clear error that says to rebuild."""
    from longctx.persist import read_json

    d = getattr(path, "path", None) or Path(path)
    m = d / "manifest.json"
    try:
        raw = read_json(m, max_bytes=1 << 20)
    except (PersistError, OSError):
        return  # open_index_dir names the problem
    if isinstance(raw, dict) and raw.get("format") == "longctx.mixpr":
        fv = raw.get("format_version")
        if fv == 1 and not isinstance(fv, bool):
            raise PersistError(
                f"{str(m)!r} holds a MixPR index saved by longctx "
                f"{str(raw.get('longctx_version', '0.1'))[:20]} (format version 1, with the "
                f"quadratic similarity graph); this longctx reads format version {version}: "
                "rebuild the index (MixPRIndex.from_texts, or longctx index) and save it again"
            )


#: ``TfidfVectorizer`` arguments a saved config may set (checked on load): arguments such as
#: ``input="filename"`` (the query read as a file name), ``token_pattern`` (a regular expression
#: run on every query) or ``dtype`` are refused from a file; pass them to ``from_texts``.
LOADABLE_VECTORIZER_KWARGS = {
    "ngram_range": "pair",
    "min_df": "number",
    "max_df": "number",
    "max_features": "int",
    "lowercase": "bool",
    "binary": "bool",
    "smooth_idf": "bool",
    "use_idf": "bool",
}


def _loadable_vectorizer_kwargs(kw, path) -> dict:
    if not isinstance(kw, dict):
        raise PersistError(f"{str(path)!r}: field 'vectorizer_kwargs' must be an object")
    out = {}
    for key, v in kw.items():
        kind = LOADABLE_VECTORIZER_KWARGS.get(key)
        ok = {
            "pair": isinstance(v, list)
            and len(v) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and 1 <= x <= 8 for x in v),
            "number": isinstance(v, (int, float)) and not isinstance(v, bool),
            "int": v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1),
            "bool": isinstance(v, bool),
        }.get(kind, False)
        if not ok:
            raise PersistError(
                f"{str(path)!r}: field 'vectorizer_kwargs.{str(key)[:40]}' is not allowed in a "
                "saved index or has a bad value"
            )
        out[key] = tuple(v) if kind == "pair" else v
    return out


def _check_unit_vectors(unit_vectors, n_units: int) -> np.ndarray:
    """``unit_vectors`` as ``(n_units, dim)`` float32 with L2-normalized rows (a copy: the index
    marks it read-only), or a ``ValueError`` / ``TypeError`` naming the argument."""
    from longctx.diversity.inputs import as_embeddings

    v = as_embeddings(unit_vectors, name="unit_vectors")
    if v.shape[0] != n_units:
        raise ValueError(
            f"unit_vectors must have one row per unit: {n_units} units, got {v.shape[0]} rows"
        )
    return v.copy() if np.may_share_memory(v, unit_vectors) else v


def _load_encoder(encoder, ident, vectors, d):
    if vectors is None:
        return None
    from longctx.embeddings import DEFAULT_MODEL_NAME, SentenceTransformerEncoder, get_encoder

    name = ident.get("name")
    if encoder is None:
        if name == DEFAULT_MODEL_NAME:
            return SentenceTransformerEncoder(None)
        return None
    enc = get_encoder(encoder)
    dim = enc.dim
    if dim is None:
        dim = int(np.asarray(enc.embed_query("dimension check")).shape[0])
    if dim != vectors.shape[1]:
        raise ValueError(
            f"encoder {enc.name!r} embeds in {dim} dimensions but the index at {str(d)!r} was "
            f"built with {name!r} in {vectors.shape[1]}: pass the encoder that built it"
        )
    return enc
