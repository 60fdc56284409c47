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

import numpy as np

from longctx.index import check_texts
from longctx.mixpr.config import MixPRConfig
from longctx.persist import (
    PersistError,
    check_dict,
    check_float_array,
    check_int_array,
    check_spans,
    check_str_list,
    write_dir,
)
from longctx.persist_reader import open_index_dir, retry_on_concurrent_save

__all__ = ["LOADABLE_VECTORIZER_KWARGS", "load_index", "save_index"]


def save_index(index, path) -> None:
    """Write ``index`` (a :class:`~longctx.mixpr.index.MixPRIndex`) to directory ``path``
    (the files are listed in :meth:`MixPRIndex.save <longctx.mixpr.index.MixPRIndex.save>`)."""
    vocab = index._vectorizer.get_feature_names_out().tolist()
    arrays = {
        "arrays": {
            "idf": index._vectorizer.idf_,
            "unit_source": index.unit_source,
            "unit_index": index.unit_index,
            "starts": index.starts,
            "ends": index.ends,
            "token_counts": index.token_counts,
        }
    }
    extra = {}
    if index._unit_vectors is not None:
        arrays["vectors"] = {"unit_vectors": index._unit_vectors}
        extra["encoder"] = index._encoder_identity
    write_dir(
        path,
        kind="mixpr",
        version=index.FORMAT_VERSION,
        json_files={
            "config": {
                **index.config.to_dict(),
                "token_counter": index.token_counter_name,
                **extra,
            },
            "texts": list(index._texts),
            "vocabulary": vocab,
        },
        arrays=arrays,
        sparse={"graph": index._S, "embeddings": index._E_by_term.tocsr()},
    )


@retry_on_concurrent_save("path")
def load_index(cls, path, *, router=None, encoder=None):
    """Read the index at directory ``path`` as an instance of ``cls`` (errors: see
    :meth:`MixPRIndex.load <longctx.mixpr.index.MixPRIndex.load>`)."""
    r = open_index_dir(path, kind="mixpr", versions=(cls.FORMAT_VERSION,))
    d = r.path
    cfg_path, arr_path = d / "config.json", d / "arrays.npz"
    cfg = check_dict(r.json("config.json"), cfg_path, "config")
    texts = check_str_list(r.json("texts.json"), d / "texts.json", "texts")
    vocab = check_str_list(r.json("vocabulary.json"), d / "vocabulary.json", "terms")
    keys = ("idf", "unit_source", "unit_index", "starts", "ends", "token_counts")
    arrs = r.arrays("arrays.npz", keys)
    S = r.sparse("graph.npz")
    E = r.sparse("embeddings.npz")
    cfg = dict(cfg)
    vectors = ident = None
    if "encoder" in cfg:
        ident = cfg.pop("encoder")
        if not isinstance(ident, dict) or not isinstance(ident.get("name"), (str, type(None))):
            raise PersistError(f"{str(cfg_path)!r}: field 'encoder' must be an object")
        vectors = r.arrays("vectors.npz", ("unit_vectors",))["unit_vectors"]
    counter = cfg.pop("token_counter", None)
    if not isinstance(counter, str) or len(counter) > 200:
        raise PersistError(f"{str(cfg_path)!r}: field 'token_counter' must be a short str")
    # indexes saved before these fields existed were built without them
    cfg.setdefault("stemmer", None)
    cfg.setdefault("split_lines", True)
    cfg.setdefault("min_words", None)
    cfg.setdefault("coverage_power", 0.0)
    cfg.setdefault("literal_query_weights", False)
    unknown = sorted(set(cfg) - set(MixPRConfig.__dataclass_fields__))
    if unknown:
        raise PersistError(f"{str(cfg_path)!r}: unknown field(s) {unknown[:5]}")
    cfg["vectorizer_kwargs"] = _loadable_vectorizer_kwargs(
        cfg.get("vectorizer_kwargs", {}), cfg_path
    )
    if isinstance(cfg.get("stop_words"), list):
        cfg["stop_words"] = tuple(cfg["stop_words"])
    try:
        config = MixPRConfig(**cfg)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(cfg_path)!r}: {str(exc)[:300]}") from None
    try:
        texts = check_texts(texts, "texts.json")
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(d / 'texts.json')!r}: {str(exc)[:300]}") from None
    starts = check_int_array(arrs["starts"], arr_path, "starts", minimum=0)
    n = len(starts)
    source = check_int_array(arrs["unit_source"], arr_path, "unit_source", n=n, minimum=0)
    ends = check_int_array(arrs["ends"], arr_path, "ends", n=n, minimum=0)
    unit_index = check_int_array(arrs["unit_index"], arr_path, "unit_index", n=n, minimum=0)
    counts = check_int_array(arrs["token_counts"], arr_path, "token_counts", n=n, minimum=0)
    check_spans(texts, source, starts, ends, arr_path)
    idf = check_float_array(arrs["idf"], arr_path, "idf", shape=(len(vocab),))
    if len(set(vocab)) != len(vocab):
        raise PersistError(f"{str(d / 'vocabulary.json')!r}: field 'terms' has duplicates")
    if len(idf) and idf.min() <= 0:
        raise PersistError(f"{str(arr_path)!r}: field 'idf' must be > 0")
    if S.shape != (n, n) or (S.nnz and S.data.min() < 0):
        raise PersistError(
            f"{str(d / 'graph.npz')!r}: graph of shape {S.shape} for {n} units (or negative "
            "weights)"
        )
    if E.shape != (n, len(vocab)):
        raise PersistError(
            f"{str(d / 'embeddings.npz')!r}: shape {E.shape}, expected ({n}, {len(vocab)})"
        )
    if vectors is not None:
        vpath = str(d / "vectors.npz")
        if ident.get("dim") != (vectors.shape[1] if vectors.ndim == 2 else None):
            raise PersistError(f"{vpath!r} does not match the encoder in config.json")
        try:
            vectors = _check_unit_vectors(vectors, n)
        except (TypeError, ValueError) as exc:
            raise PersistError(f"{vpath!r}: field 'unit_vectors': {exc}") from None
    try:
        vec = config.vectorizer(vocabulary={t: i for i, t in enumerate(vocab)})
        vec.idf_ = idf.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise PersistError(f"{str(d)!r} holds an inconsistent MixPR index: {exc}") from None
    arrs = {
        "unit_source": source,
        "unit_index": unit_index,
        "starts": starts,
        "ends": ends,
        "token_counts": counts,
    }
    return cls(
        texts,
        config,
        vectorizer=vec,
        unit_source=arrs["unit_source"],
        unit_index=arrs["unit_index"],
        starts=arrs["starts"],
        ends=arrs["ends"],
        token_counts=arrs["token_counts"],
        graph=S,
        embeddings=E,
        router=router,
        token_counter_name=counter,
        unit_vectors=vectors,
        encoder=_load_encoder(encoder, ident, vectors, d),
        encoder_identity=ident,
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
