"""The work of one document of a corpus build (:func:`run_one`), run in a Ray worker
(:mod:`longctx.corpus.ray_backend`) or in this process (:mod:`longctx.corpus.build`)."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from longctx._rss import peak_rss_mib
from longctx.corpus.manifest import text_sha256
from longctx.corpus.storage import Storage

logger = logging.getLogger(__name__)

__all__ = ["run_one"]


def run_one(builder, storage: Storage, doc_id: str, rel: str, text: str, return_files: bool):
    """Build ``text``'s index with ``builder`` and store it at ``rel`` (or, when
    ``return_files``, return its files for the driver to store). Never raises for a document
    error: the record says ``"failed"`` with the error."""
    t0, c0 = time.perf_counter(), time.process_time()
    rec = {"doc_id": doc_id, "status": "done", "tokens": None, "error": None, "extra": {}}
    tmp = None
    try:
        scratch = storage.scratch_dir(rel, text_sha256(text))
        if scratch is None or return_files:
            tmp = Path(tempfile.mkdtemp(prefix="longctx-corpus-"))
            scratch = tmp / Path(rel).name
        scratch.parent.mkdir(parents=True, exist_ok=True)
        info = builder.build(text, scratch)
        rec["tokens"] = info.pop("tokens", None)
        rec["extra"] = info
        if return_files:
            rec["files"] = {f.name: f.read_bytes() for f in scratch.iterdir() if f.is_file()}
        else:
            storage.put_index(scratch, rel)
    except Exception as exc:  # noqa: BLE001 - recorded, the corpus goes on
        rec["status"] = "failed"
        rec["error"] = f"{type(exc).__name__}: {exc}"
        logger.warning("document %r failed: %s", doc_id, rec["error"])
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    rec["extra"]["cpu_seconds"] = round(time.process_time() - c0, 3)
    rec["worker"] = (os.getpid(), peak_rss_mib())
    return rec
