"""The files of a saved LlamaIndex :class:`~llamaindex_longctx.MixPRRetriever`
(``persist_dir/longctx_mixpr/``: ``retriever.json``, ``nodes.json`` and the MixPR index in
``index/``; JSON and ``.npy``, no pickle), written by :func:`write_saved` and read back, every
file checked as untrusted input, by :func:`read_saved`. The retriever's ``persist`` /
``from_persist_dir`` hold its settings and locking; this module holds the format."""

from __future__ import annotations

import os
from pathlib import Path

from llama_index.core.schema import BaseNode, MetadataMode

from llamaindex_longctx._embed import app_embed_model
from llamaindex_longctx._nodes import node_keys
from longctx.embeddings import require_query_encoder
from longctx.filters_persist import filter_from_json
from longctx.mixpr import MixPRIndex
from longctx.persist import PersistError, check_json_metadata, write_dir
from longctx.persist.fs import MANIFEST
from longctx.persist.marks import check_outside_corpus, is_url
from longctx.persist.reader import open_index_dir

#: Sub-folder of a persist folder that holds the retriever (the framework's files stay beside it).
PERSIST_SUBDIR = "longctx_mixpr"
_PERSIST_KIND = "llamaindex.mixpr_retriever"
#: the retriever's settings saved in ``retriever.json`` (besides ``filters``) and their types
SETTING_TYPES = {
    "similarity_top_k": int,
    "token_budget": (int, type(None)),
    "mode": str,
    "chunk_nodes": bool,
    "order": str,
}


def check_persist_dir(persist_dir: str | os.PathLike) -> None:
    """Refuse a ``persist_dir`` whose retriever folder (``persist_dir/longctx_mixpr``, its real
    path: symbolic links and ``..`` resolved) is inside a corpus's index root, at any depth
    (:func:`longctx.persist.marks.check_outside_corpus`: a folder ``indexes`` beside a corpus's
    ``corpus.json``). A ``longctx index`` run that changes the corpus's documents replaces its
    index folders whole (``indexes/mixpr``, a shard, a document's index), and a retriever saved
    inside one would be lost without a word; another folder there (``indexes/backup``), which a
    rebuild leaves alone, is written only by the corpus's builds and the saves of an index
    loaded from it, under its build lock, which a retriever's persist does not take. The
    message says which case applies.

    A URL (``memory://...``) is refused: the retriever is written to a local folder (inside a
    corpus at that URL, with the message of a local corpus).

    Raises
    ------
    longctx.persist.SaveTargetError
        Naming ``persist_dir``, the corpus and what to do instead; nothing is written.
    """
    if is_url(persist_dir):  # a URL: checked as one
        folder = f"{persist_dir.rstrip('/')}/{PERSIST_SUBDIR}"
    else:
        folder = Path(persist_dir) / PERSIST_SUBDIR
    check_outside_corpus(folder, "persist_dir", name=persist_dir)


def write_saved(persist_dir: str | os.PathLike, settings: dict, nodes: list, index) -> None:
    """Write ``nodes`` (LlamaIndex nodes, in the retriever's order), the retriever's
    ``settings`` (JSON-ready: ``similarity_top_k``, ``token_budget``, ``mode``,
    ``chunk_nodes``, ``order``, ``filters``) and ``index`` (a snapshot of its
    :class:`~longctx.mixpr.MixPRIndex`, or ``None``) into ``persist_dir/longctx_mixpr/``, with
    the nodes' ids and text digests that :func:`read_saved` checks.

    Raises
    ------
    TypeError, ValueError
        A node's metadata would not come back from JSON as it is: the message names the node
        (position and id) and the key. Nothing is written then.
    longctx.persist.SaveTargetError
        As :func:`longctx.persist.write_dir`.
    """
    from llama_index.core.storage.docstore.utils import doc_to_json

    from longctx.persist import text_digest

    for j, n in enumerate(nodes):
        check_json_metadata(n.metadata, f"nodes[{j}] (id {n.node_id!r})")
    texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
    write_dir(
        Path(persist_dir) / PERSIST_SUBDIR,
        kind=_PERSIST_KIND,
        version=1,
        json_files={
            "retriever": {
                **settings,
                "node_ids": [n.node_id for n in nodes],
                "text_sha256": [text_digest(t) for t in texts],
            },
            "nodes": [doc_to_json(n) for n in nodes],
        },
        subdirs={"index": index.save} if index is not None else {},
    )


def read_saved(
    persist_dir: str | os.PathLike, *, router=None, embed_model=None
) -> tuple[dict, list[BaseNode], MixPRIndex | None, Path]:
    """``(settings, nodes, index, retriever_json_path)`` of a retriever saved by
    :func:`write_saved` (``persist_dir/longctx_mixpr/``, or ``persist_dir`` itself: the layout
    of longctx 0.1), each file checked: the settings' fields and types, the nodes against the
    saved ids and text digests and against the index's texts, ``chunk_nodes`` against the
    index's units; a hybrid index gets ``embed_model`` (or ``Settings.embed_model``).

    Raises
    ------
    PersistError
        A missing, damaged, foreign or inconsistent file, named; a ``longctx_mixpr`` sub-folder
        that is a symbolic link.
    ValueError
        A hybrid index and no model to embed queries, or a model of another dimension.
    """
    from llama_index.core.storage.docstore.utils import json_to_doc

    from longctx.persist import text_digest

    d = Path(persist_dir)
    inside = not (d / MANIFEST).is_file()  # a persist_dir (the usual case): the index is
    if inside:  # in its subfolder, absent only while a save swaps it (retried)
        d = d / PERSIST_SUBDIR
    # the subfolder never through a link (followed before session 20; persist refuses),
    # refused in its one open: a check before it let a link put there in between through
    r = open_index_dir(d, kind=_PERSIST_KIND, versions=(1,), follow=not inside)
    rpath, npath = d / "retriever.json", d / "nodes.json"
    settings = r.json("retriever.json")
    if not isinstance(settings, dict):
        raise PersistError(f"{str(rpath)!r} must hold an object")
    settings = dict(settings)
    ids, digests = settings.pop("node_ids", None), settings.pop("text_sha256", None)
    saved_filters = filter_from_json(settings.pop("filters", None), str(rpath))
    if saved_filters is not None:
        settings["filters"] = saved_filters
    unknown = set(settings) - {*SETTING_TYPES, "filters"}
    if unknown:
        raise PersistError(f"{str(rpath)!r}: unknown field(s) {sorted(unknown)[:5]}")
    for key, kind in SETTING_TYPES.items():
        v = settings.get(key)
        bad = not isinstance(v, kind) or (isinstance(v, bool) and kind is not bool)
        if key in settings and bad:
            raise PersistError(f"{str(rpath)!r}: field {key!r} has a bad type")
    raw = r.json("nodes.json")
    if not isinstance(raw, list):
        raise PersistError(f"{str(npath)!r} must hold a list of nodes")
    try:
        nodes = [json_to_doc(x) for x in raw]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise PersistError(f"{str(npath)!r} is damaged: {str(exc)[:200]}") from None
    texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
    if ids is not None or digests is not None:
        if ids != [n.node_id for n in nodes]:
            raise PersistError(
                f"{str(npath)!r}: field 'id_': the node ids differ from those saved in "
                "retriever.json (reordered or edited)"
            )
        if digests != [text_digest(t) for t in texts]:
            raise PersistError(
                f"{str(npath)!r}: field 'text': a node text differs from the one saved "
                "(edited or forged)"
            )
    mixpr_index = None
    if r.has("index") or r.has_unlisted_subdir("index"):  # unlisted: longctx 0.1
        model = app_embed_model(embed_model)
        mixpr_index = MixPRIndex.load(
            r.subdir("index", unlisted=True), router=router, encoder=model
        )
        require_query_encoder(
            mixpr_index.encoder_identity,
            model,
            where=str(d),
            argument="embed_model (or set Settings.embed_model)",
        )
    keys = node_keys(nodes)
    want = [(k, t) for k, t in zip(keys, texts) if k is not None and t.strip()]
    have = list(zip(mixpr_index.doc_ids, mixpr_index.texts)) if mixpr_index is not None else []
    if have != want:
        raise PersistError(
            f"{str(npath)!r}: the nodes' texts are not the texts of the saved index "
            f"{str(d / 'index')!r} (reordered or edited)"
        )
    if mixpr_index is not None and not settings.get("chunk_nodes", True):
        whole = (
            mixpr_index.n_units == len(want)
            and not mixpr_index.starts.any()
            and [int(e) for e in mixpr_index.ends] == [len(t) for _, t in want]
        )
        if not whole:
            raise PersistError(
                f"{str(rpath)!r}: field 'chunk_nodes' is false but the saved index is chunked"
            )
    return settings, nodes, mixpr_index, rpath
