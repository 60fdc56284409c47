"""Saving and loading indexes: JSON for configuration and text, ``.npz`` for arrays. Never pickle.

The public names of ``longctx.persist`` (unchanged by the move into a package); the layout of an
index folder and the guarantees are in :mod:`longctx.persist.format`.

Modules: :mod:`~longctx.persist.format` (errors, limits, parsing of untrusted bytes, value
checks), :mod:`~longctx.persist.reader` (:func:`open_index_dir`: a folder read as one save),
:mod:`~longctx.persist.writer` (:func:`write_dir`: atomic saves), :mod:`~longctx.persist.fs`
(names, removal, leftovers, modes: the file-system steps that never leave the target).
"""

from __future__ import annotations

# also served here (not in __all__, as before): MANIFEST, SPARSE_ROW_SLACK, the private helpers
# tests take, and the reader's names
from longctx.persist.format import (  # noqa: F401
    MANIFEST,
    MAX_ARRAY_BYTES,
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    SPARSE_ROW_SLACK,
    ConcurrentSaveError,
    PersistError,
    SaveTargetError,
    _check_sparse_arrays,
    _dir,
    _remove_index,
    check_dict,
    check_float_array,
    check_float_value,
    check_int_array,
    check_int_value,
    check_json_metadata,
    check_local_model_name,
    check_save_target,
    check_span_texts,
    check_spans,
    check_str_list,
    parse_json,
    read_arrays,
    read_json,
    read_manifest,
    read_sparse,
    text_digest,
    write_dir,
)
from longctx.persist.reader import (  # noqa: F401
    LOAD_ATTEMPTS,
    MAX_NPZ_BYTES,
    IndexDir,
    open_index_dir,
    retry_on_concurrent_save,
)

__all__ = [
    "PersistError",
    "SaveTargetError",
    "ConcurrentSaveError",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_ARRAY_BYTES",
    "write_dir",
    "check_save_target",
    "read_manifest",
    "read_json",
    "parse_json",
    "read_arrays",
    "read_sparse",
    "check_int_value",
    "check_float_value",
    "check_str_list",
    "check_dict",
    "check_int_array",
    "check_float_array",
    "check_spans",
    "check_span_texts",
    "text_digest",
    "check_json_metadata",
    "check_local_model_name",
]
