"""Checkpoints of a GARLIC HWDAG build: the build's settings and inputs as one comparable dict
(:func:`_config`: model, tokenizer, layers, batching, prompt version, a SHA-256 of the texts),
writing the records of the finished batches to ``out_dir`` (``checkpoint.json`` beside the
manifest) and reading them back to resume an interrupted build. A checkpoint on disk is untrusted
input: every record is typed and bounded (:func:`_check_records`), a damaged file raises
:class:`~longctx.persist.PersistError`, and one written with other inputs or settings is refused
with a ``ValueError`` naming the fields that differ.

Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.1 (the HWDAG is built level by level,
one batch of nodes summarized into information points at a time: a record is one such batch).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from longctx.garlic.graph import FORMAT_KIND, FORMAT_VERSION
from longctx.garlic.prompts import PROMPT_VERSION
from longctx.persist import PersistError, write_dir
from longctx.persist.reader import open_index_dir, retry_on_concurrent_save

# Records keyed by (source, level, position in the level) with per-document node ids (2); the
# first checkpoints listed records in build order with global node ids (1).
CHECKPOINT_VERSION = 2


def _config(
    model,
    tokenizer,
    texts,
    layers,
    chunk_tokens,
    batch_tokens,
    max_new_tokens,
    max_levels,
    force_bullets,
):
    cfg = model.config
    digest = hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode("utf-8")).hexdigest()
    return {
        "model": str(getattr(cfg, "name_or_path", "") or getattr(cfg, "_name_or_path", "")),
        "model_type": str(getattr(cfg, "model_type", "")),
        "vocab_size": int(getattr(cfg, "vocab_size", 0) or 0),
        "n_layers": int(getattr(cfg.get_text_config(), "num_hidden_layers", 0) or 0),
        "tokenizer": str(getattr(tokenizer, "name_or_path", "")),
        "layers": list(layers),
        "chunk_tokens": chunk_tokens,
        "batch_tokens": batch_tokens,
        "max_new_tokens": max_new_tokens,
        "max_levels": max_levels,
        "prompt_version": PROMPT_VERSION,
        "force_bullets": bool(force_bullets),
        "checkpoint_version": CHECKPOINT_VERSION,
        "texts_sha256": digest,
    }


@retry_on_concurrent_save("out_dir")
def _read_checkpoint(out_dir: Path, config: dict) -> tuple[list[dict], bool]:
    """Records of the finished batches in ``out_dir`` and whether the graph there is complete."""
    if not out_dir.exists() or (out_dir.is_dir() and not any(out_dir.iterdir())):
        return [], False
    r = open_index_dir(out_dir, kind=FORMAT_KIND, versions=(FORMAT_VERSION,))
    manifest = r.manifest
    path = out_dir / "checkpoint.json"
    data = r.json("checkpoint.json")
    if not isinstance(data, dict) or "config" not in data or "records" not in data:
        raise PersistError(f"{str(path)!r} is damaged: no config/records")
    if data["config"] != config:
        diff = sorted(
            k for k in set(config) | set(data["config"]) if config.get(k) != data["config"].get(k)
        )
        raise ValueError(
            f"out_dir {str(out_dir)!r} holds a GARLIC graph built with other inputs or settings "
            f"({', '.join(diff)} differ): choose another out_dir or delete it"
        )
    return _check_records(data["records"], path), bool(manifest.get("complete", False))


def _check_same_texts(graph, texts: list[str], out: Path) -> None:
    """A finished graph found in ``out`` is returned for ``texts`` only when it holds exactly
    them (its checkpoint's digest of the texts is in another file than its ``texts``).

    Raises
    ------
    PersistError
        Naming ``graph.json`` and its field ``texts``.
    """
    if graph.texts != list(texts):
        raise PersistError(
            f"{str(Path(out) / 'graph.json')!r}: field 'texts' is not the documents given to "
            "this build (damaged or forged); delete the folder or choose another out_dir"
        )


def _check_records(records, path: Path) -> list[dict]:
    """The batch records of a checkpoint, every value typed and bounded (the inputs are
    compared with the build's own batches as they are replayed).

    Raises
    ------
    PersistError
        Naming the file and the record's field.
    """
    from longctx.persist import check_dict, check_int_value

    if not isinstance(records, list):
        raise PersistError(f"{str(path)!r}: field 'records' must be a list")
    keys = (
        "source",
        "level",
        "pos",
        "n_generated",
        "text",
        "ips",
        "ip_tokens",
        "weights",
        "inputs",
    )
    seen = set()
    for j, rec in enumerate(records):
        f = f"records[{j}]"
        rec = check_dict(rec, path, f)
        missing = [k for k in keys if k not in rec]
        if missing:
            raise PersistError(f"{str(path)!r}: field {f!r} lacks {missing}")
        key = (
            check_int_value(rec["source"], path, f"{f}.source", minimum=0),
            check_int_value(rec["level"], path, f"{f}.level", minimum=1),
            check_int_value(rec["pos"], path, f"{f}.pos", minimum=0),
        )
        if key in seen:
            raise PersistError(
                f"{str(path)!r}: field {f!r} repeats the batch (source, level, pos) = {key}"
            )
        seen.add(key)
        check_int_value(rec["n_generated"], path, f"{f}.n_generated", minimum=0)
        ips, toks, weights, inputs = rec["ips"], rec["ip_tokens"], rec["weights"], rec["inputs"]
        ok = (
            isinstance(rec["text"], str)
            and isinstance(inputs, list)
            and all(isinstance(x, int) and not isinstance(x, bool) for x in inputs)
            and isinstance(ips, list)
            and all(isinstance(x, str) for x in ips)
            and isinstance(toks, list)
            and len(toks) == len(ips)
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in toks)
            and isinstance(weights, list)
            and len(weights) == len(ips)
            and all(
                isinstance(row, list)
                and len(row) == len(inputs)
                and all(
                    isinstance(w, (int, float)) and not isinstance(w, bool) and 0 <= w <= 1.000001
                    for w in row
                )
                for row in weights
            )
        )
        if not ok:
            raise PersistError(
                f"{str(path)!r}: field {f!r} is damaged (text, ips, ip_tokens, weights or "
                "inputs of the wrong type or length)"
            )
    return list(records)


def _write_checkpoint(out: Path, config: dict, records: list[dict]) -> None:
    write_dir(
        out,
        kind=FORMAT_KIND,
        version=FORMAT_VERSION,
        json_files={"checkpoint": {"config": config, "records": records}},
        extra={"complete": False},
    )
