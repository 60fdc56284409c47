"""How a :class:`~longctx.diversity.index.DiversityIndex` is saved and loaded (format
``longctx.diversity`` version 1: JSON + ``.npz``, no pickle; every field read back is checked).

Files of the index directory: ``manifest.json``, ``config.json`` (encoder name and dimension, unit
kind, token counter, ``max_unit_tokens``), ``texts.json``, ``units.json`` (``source``, ``start``,
``end``, ``index``, ``token_counts`` per unit) and ``embeddings.npz`` (``embeddings``:
``(n_units, dim) float32``). Written and read through :mod:`longctx.persist`.
"""

from __future__ import annotations

import logging
import os
import warnings

import numpy as np

__all__ = ["save_index", "load_index", "CONFIG_FILES"]

logger = logging.getLogger(__name__)

_KIND = "diversity"
_FORMAT_VERSION = 1


def save_index(index, path: str | os.PathLike) -> None:
    """Write ``index`` (a :class:`~longctx.diversity.index.DiversityIndex`) to directory ``path``,
    replaced if it exists (:meth:`~longctx.diversity.index.DiversityIndex.save`)."""
    from longctx.persist import write_dir

    write_dir(
        path,
        kind=_KIND,
        version=_FORMAT_VERSION,
        json_files={
            "config": {**index._config, "encoder": index._identity},
            "texts": list(index._texts),
            "units": {
                "source": index._source.tolist(),
                "start": index._start.tolist(),
                "end": index._end.tolist(),
                "index": index._unit.tolist(),
                "token_counts": index._counts.tolist(),
            },
        },
        arrays={"embeddings": {"embeddings": index._emb}},
    )


def load_index(cls, path: str | os.PathLike, encoder=None):
    """An instance of ``cls`` (:class:`~longctx.diversity.index.DiversityIndex`) read from
    ``path``; arguments and errors as in :meth:`~longctx.diversity.index.DiversityIndex.load`."""
    from longctx.embeddings import SentenceTransformerEncoder, get_encoder
    from longctx.persist import (
        PersistError,
        check_dict,
        check_float_array,
        check_int_array,
        check_int_value,
        check_spans,
        check_str_list,
        check_token_counts,
        open_index_dir,
    )

    r = open_index_dir(path, kind=_KIND, versions=(_FORMAT_VERSION,))
    d = r.path
    cpath, tpath, upath, epath = (d / f for f in CONFIG_FILES)
    config = check_dict(r.json(cpath.name), cpath, "config")
    texts = check_str_list(r.json(tpath.name), tpath, "texts")
    units = check_dict(r.json(upath.name), upath, "units")
    emb = r.arrays(epath.name, ["embeddings"])["embeddings"]
    ident = check_dict(config.get("encoder"), cpath, "encoder")
    for key, value in config.items():
        if key != "encoder" and not (value is None or isinstance(value, (str, int, bool))):
            raise PersistError(f"{str(cpath)!r}: field {key!r} must be a str, int or null")
    check_int_value(
        config.get("max_unit_tokens"), cpath, "max_unit_tokens", minimum=1, allow_none=True
    )
    keys = ("source", "start", "end", "index", "token_counts")
    missing = [k for k in keys if k not in units]
    if missing:
        raise PersistError(f"{str(upath)!r} lacks field(s) {missing}")
    n = len(units["source"]) if isinstance(units["source"], list) else -1
    source, start, end, index, counts = (
        check_int_array(units[k], upath, k, n=None if k == "source" else n, minimum=0) for k in keys
    )
    check_spans(texts, source, start, end, upath)
    check_token_counts(counts, start, end, upath)
    if emb.dtype != np.float32 or emb.ndim != 2 or emb.shape[0] != n:
        raise PersistError(
            f"{str(epath)!r}: embeddings of shape {emb.shape} and dtype "
            f"{emb.dtype}, expected ({n}, dim) float32"
        )
    check_float_array(emb, epath, "embeddings", shape=(n, None))
    dim = check_int_value(ident.get("dim"), cpath, "encoder.dim", minimum=1, allow_none=True)
    if dim is not None and dim != emb.shape[1]:
        raise PersistError(
            f"{str(epath)!r}: embeddings of dimension {emb.shape[1]}, config.json says {dim}"
        )
    if not (ident.get("name") is None or isinstance(ident.get("name"), str)):
        raise PersistError(f"{str(cpath)!r}: field 'encoder.name' must be a str or null")
    name = ident.get("name")
    enc = None
    if encoder is not None:
        enc = get_encoder(encoder)
        dim = enc.dim
        if dim is None:
            dim = int(enc.embed_query("dimension check").shape[0])
        if dim != emb.shape[1]:
            raise ValueError(
                f"encoder {enc.name!r} embeds in {dim} dimensions but the index at "
                f"{str(d)!r} was built with {name!r} in {emb.shape[1]}: pass the encoder "
                "that built it, or rebuild the index"
            )
        if name is not None and enc.name != name:
            warnings.warn(
                f"the index at {str(d)!r} was built with encoder {name!r}, queries will be "
                f"embedded with {enc.name!r} (same dimension): results may be poor",
                stacklevel=4,  # the caller of DiversityIndex.load (through retry_on_concurrent_save)
            )
    elif name == _default_name():
        enc = SentenceTransformerEncoder(None)  # the packaged model
    elif isinstance(name, str) and "/" in name and ":" not in name:
        if os.path.isdir(name):
            enc = SentenceTransformerEncoder(name)  # a local model folder
        else:
            # a saved file never makes longctx download a model: queries need encoder=
            logger.info(
                "%s names encoder %r, which is not a local folder: not loaded (pass "
                "encoder= to load, or query_embedding= to search)",
                cpath,
                name[:200],
            )
    return cls(
        tuple(texts),
        source,
        start,
        end,
        index,
        emb,
        counts,
        encoder=enc,
        encoder_identity={"name": name},
        config={k: v for k, v in config.items() if k != "encoder"},
    )


CONFIG_FILES = ("config.json", "texts.json", "units.json", "embeddings.npz")


def _default_name() -> str:
    from longctx.embeddings import DEFAULT_MODEL_NAME

    return DEFAULT_MODEL_NAME
