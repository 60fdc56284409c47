"""Saving and loading indexes: JSON for configuration and text, ``.npz`` for arrays. Never pickle.

The public names of ``longctx.persist`` (unchanged by the move into a package); the layout of an
index folder and the guarantees are in :mod:`longctx.persist.format`.

Modules, each importing only the ones after it (no module imports one that imports it back):

- :mod:`~longctx.persist.reader`: :func:`open_index_dir` (a folder read as one save),
  ``read_json`` / ``read_arrays`` / ``read_sparse`` / ``read_manifest``;
- :mod:`~longctx.persist.writer`: :func:`write_dir` (atomic saves), ``check_save_target``;
- :mod:`~longctx.persist.checks`: checks of loaded values (``check_int_value``, ...);
- :mod:`~longctx.persist.format`: the layout, the errors, the limits, the parsing of untrusted
  bytes (JSON, ``.npz``, scipy.sparse) that the reader and the writer share;
- :mod:`~longctx.persist.fs`: names, removal, leftovers, modes (the file-system steps that never
  leave the target).
"""

from __future__ import annotations

from longctx.persist.checks import (
    check_dict,
    check_float_array,
    check_float_value,
    check_format,
    check_int_array,
    check_int_value,
    check_json_metadata,
    check_local_model_name,
    check_span_texts,
    check_spans,
    check_str_list,
    check_token_counts,
    text_digest,
)

# also served here (not in __all__, as before): MANIFEST, SPARSE_ROW_SLACK, the reader's names
# and the private helpers tests take
from longctx.persist.format import (  # noqa: F401
    MANIFEST,
    MAX_ARRAY_BYTES,
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    MAX_METADATA_DEPTH,
    SPARSE_ROW_SLACK,
    ConcurrentSaveError,
    JSONTextError,
    PersistError,
    _check_sparse_arrays,
    _dir,
    loads_strict,
    parse_json,
)
from longctx.persist.reader import (  # noqa: F401
    LOAD_ATTEMPTS,
    MAX_NPZ_BYTES,
    IndexDir,
    open_index_dir,
    read_arrays,
    read_json,
    read_manifest,
    read_sparse,
    retry_on_concurrent_save,
)
from longctx.persist.writer import (  # noqa: F401
    SaveTargetError,
    _remove_index,
    check_save_target,
    write_dir,
)

__all__ = [
    "PersistError",
    "SaveTargetError",
    "ConcurrentSaveError",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_VALUES",
    "MAX_ARRAY_BYTES",
    "write_dir",
    "check_save_target",
    "read_manifest",
    "read_json",
    "parse_json",
    "loads_strict",
    "JSONTextError",
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
    "check_token_counts",
    "check_format",
]
