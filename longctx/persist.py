"""Saving and loading indexes: JSON for configuration and text, ``.npz`` for arrays. Never pickle.

Layout of an index directory::

    DIR/manifest.json   {"format": "longctx.<kind>", "format_version": N, "longctx_version": ...,
                         "files": [...], ...}   written last, so a half-written directory has none
    DIR/<name>.json     JSON documents (configuration, vocabularies, node texts)
    DIR/<name>.npz      numpy arrays (``allow_pickle=False``) or one scipy.sparse matrix

Every loading error is a :class:`PersistError` (a ``ValueError``) naming the file and saying what
is wrong: missing, truncated or damaged, written for another kind of index, or by another format
version.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

MANIFEST = "manifest.json"


class PersistError(ValueError):
    """A saved index cannot be read: the message names the file and the problem."""


def _dir(path: str | os.PathLike) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    return Path(path)


def write_dir(
    path: str | os.PathLike,
    *,
    kind: str,
    version: int,
    json_files: Mapping[str, Any] = (),
    arrays: Mapping[str, Mapping[str, np.ndarray]] = (),
    sparse: Mapping[str, sp.sparray | sp.spmatrix] = (),
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write an index directory atomically (into a temporary sibling, then renamed over ``path``).

    Parameters
    ----------
    path : str or PathLike
        The directory; replaced if it exists.
    kind : str
        Index kind, stored as ``"longctx.<kind>"`` and checked on load.
    version : int
        Format version of that kind, checked on load.
    json_files : mapping name -> JSON-serializable object
        Written as ``<name>.json`` (UTF-8).
    arrays : mapping name -> mapping of arrays
        Written as ``<name>.npz`` (``np.savez``; object arrays are refused).
    sparse : mapping name -> scipy sparse matrix
        Written as ``<name>.npz`` with ``scipy.sparse.save_npz``.
    extra : mapping, optional
        More manifest entries.
    """
    from longctx import __version__

    final = _dir(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        files = []
        for name, obj in dict(json_files).items():
            (tmp / f"{name}.json").write_text(json.dumps(obj, ensure_ascii=False), "utf-8")
            files.append(f"{name}.json")
        for name, arrs in dict(arrays).items():
            for key, a in arrs.items():
                if np.asarray(a).dtype == object:
                    raise TypeError(f"{name}.npz: array {key!r} has dtype object (not saved)")
            np.savez(tmp / f"{name}.npz", **{k: np.asarray(v) for k, v in arrs.items()})
            files.append(f"{name}.npz")
        for name, m in dict(sparse).items():
            sp.save_npz(tmp / f"{name}.npz", sp.csr_matrix(m), compressed=False)
            files.append(f"{name}.npz")
        manifest = {
            "format": f"longctx.{kind}",
            "format_version": int(version),
            "longctx_version": __version__,
            "files": sorted(files),
            **dict(extra or {}),
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), "utf-8")
        if final.exists():
            old = final.with_name(f".{final.name}.old")
            if old.exists():
                shutil.rmtree(old)
            final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old)
        else:
            tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def read_manifest(path: str | os.PathLike, *, kind: str, versions: Iterable[int]) -> dict:
    """Read and check ``DIR/manifest.json``; returns it as a dict.

    Raises
    ------
    PersistError
        The directory or manifest is missing or damaged, or was written for another ``kind`` or
        another format version than ``versions``.
    """
    d = _dir(path)
    if not d.is_dir():
        raise PersistError(f"{str(d)!r} is not a directory holding a saved longctx index")
    f = d / MANIFEST
    if not f.is_file():
        raise PersistError(
            f"{str(f)!r} is missing: {str(d)!r} is not a saved longctx index, or its save "
            "was interrupted"
        )
    manifest = read_json(f)
    if not isinstance(manifest, dict) or "format" not in manifest:
        raise PersistError(f"{str(f)!r} is not a longctx manifest")
    if manifest["format"] != f"longctx.{kind}":
        raise PersistError(
            f"{str(f)!r} holds a {manifest['format']!r} index, not a 'longctx.{kind}' one"
        )
    versions = tuple(versions)
    if manifest.get("format_version") not in versions:
        raise PersistError(
            f"{str(f)!r} was written with format version {manifest.get('format_version')!r} "
            f"(longctx {manifest.get('longctx_version', '?')}); this longctx reads version(s) "
            f"{', '.join(map(str, versions))}: rebuild the index"
        )
    for name in manifest.get("files", []):
        if not (d / name).is_file():
            raise PersistError(f"{str(d / name)!r} is missing (listed in {MANIFEST})")
    return manifest


def read_json(path: str | os.PathLike) -> Any:
    """``json.load`` of one file, with a :class:`PersistError` naming it when it is unreadable."""
    p = Path(path)
    try:
        return json.loads(p.read_text("utf-8"))
    except FileNotFoundError:
        raise PersistError(f"{str(p)!r} is missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PersistError(f"{str(p)!r} is damaged or truncated: {exc}") from None


def read_arrays(path: str | os.PathLike, keys: Iterable[str]) -> dict[str, np.ndarray]:
    """Load the named arrays of one ``.npz`` file (no pickle), checking that each is there.

    Raises
    ------
    PersistError
        The file is missing, truncated, damaged or lacks one of ``keys``.
    """
    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            missing = [k for k in keys if k not in z.files]
            if missing:
                raise PersistError(f"{str(p)!r} lacks array(s) {missing}")
            return {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise PersistError(f"{str(p)!r} is missing") from None
    except PersistError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise PersistError(f"{str(p)!r} is damaged or truncated: {exc}") from None


def read_sparse(path: str | os.PathLike) -> sp.csr_array:
    """Load one scipy.sparse ``.npz`` as a CSR array (no pickle).

    Raises
    ------
    PersistError
        The file is missing, truncated or damaged.
    """
    p = Path(path)
    try:
        return sp.csr_array(sp.load_npz(p))
    except FileNotFoundError:
        raise PersistError(f"{str(p)!r} is missing") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise PersistError(f"{str(p)!r} is damaged or truncated: {exc}") from None


__all__ = ["PersistError", "write_dir", "read_manifest", "read_json", "read_arrays", "read_sparse"]
