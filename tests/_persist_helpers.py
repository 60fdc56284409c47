"""Small saved indexes of every kind (no model needed) and helpers to damage their files."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

TEXTS = [
    "The cat sat on the mat. The dog barked at the cat. Paris is the capital of France. "
    "The cat likes fish and milk.",
    "Rome is the capital of Italy. Cats and dogs play in the garden. The weather in Paris is "
    "mild. Fish swim in the river.",
]


def mixpr_index():
    from longctx.mixpr import MixPRIndex

    index = MixPRIndex.from_texts(TEXTS, max_words=8)
    assert len(index.token_counts)  # counted, so the saved index holds them
    index._state.text_ids()  # made, so that a format-3 save holds text_ids.npy (never made there)
    return index


def diversity_index():
    from longctx.diversity import DiversityIndex
    from longctx.embeddings import get_encoder
    from tests.test_diversity import HashEncoder

    return DiversityIndex.from_texts(TEXTS, get_encoder(HashEncoder()))


def hash_encoder():
    from longctx.embeddings import get_encoder
    from tests.test_diversity import HashEncoder

    return get_encoder(HashEncoder())


def garlic_graph():
    """A hand-made two-level HWDAG over ``TEXTS[0]``: three sentence chunks, two IPs."""
    from longctx.garlic import HWDAG
    from longctx.garlic.graph import Node

    text = TEXTS[0]
    spans, start = [], 0
    for i, ch in enumerate(text):
        if ch == "." and (i + 1 == len(text) or text[i + 1] == " "):
            spans.append((start, i + 1))
            start = i + 2
    nodes = [Node(i, text[a:b], 1, 5 + i, 0, -1, a, b) for i, (a, b) in enumerate(spans)]
    k = len(nodes)
    nodes.append(Node(k, "A cat sits on a mat.", 2, 6, 0, 0))
    nodes.append(Node(k + 1, "Paris is France's capital.", 2, 5, 0, 0))
    n = len(nodes)
    w = np.zeros((n, n))
    w[k, :k] = 1.0 / k
    w[k + 1, :k] = 1.0 / k
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(n, 8)).astype(np.float32)
    batches = [
        {
            "source": 0,
            "level": 1,
            "inputs": list(range(k)),
            "outputs": [k, k + 1],
            "n_generated": 12,
            "text": "* A cat sits on a mat.\n* Paris is France's capital.",
        }
    ]
    return HWDAG(nodes, sp.csr_array(w), emb, texts=[text], batches=batches, info={"x": 1})


def _digest(p: Path) -> dict:
    raw = p.read_bytes()
    return {"sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}


def restamp(folder: Path) -> None:
    """Make the digests in ``folder``'s manifest (and in the manifests of the index folders it
    is nested in) match the files now there: what a forger who edits a file and the manifest
    does, so the checks of the values themselves are tested, not only the digests."""
    d = Path(folder)
    while (d / "manifest.json").is_file():
        m = json.loads((d / "manifest.json").read_text("utf-8"))
        if isinstance(m, dict) and isinstance(m.get("digests"), dict):
            digests = {}
            for f in m.get("files", []):
                if isinstance(f, str) and (d / f).is_file():
                    digests[f] = _digest(d / f)
            for sub in m.get("dirs", []):
                if isinstance(sub, str) and (d / sub / "manifest.json").is_file():
                    digests[sub] = _digest(d / sub / "manifest.json")
            m["digests"] = digests
            (d / "manifest.json").write_text(json.dumps(m, indent=1), "utf-8")
        parent = d.parent / "manifest.json"
        if not parent.is_file():
            return
        listed = json.loads(parent.read_text("utf-8"))
        if not isinstance(listed, dict) or d.name not in listed.get("dirs", []):
            return
        d = d.parent


def edit_json(path: Path, fn, *, stamp: bool = True) -> None:
    """Rewrite the JSON file ``path`` with ``fn(data)`` (or ``data`` edited in place); with
    ``stamp`` the manifest's digests are updated too (:func:`restamp`)."""
    data = json.loads(Path(path).read_text("utf-8"))
    out = fn(data)
    Path(path).write_text(json.dumps(data if out is None else out), "utf-8")
    if stamp:
        restamp(Path(path).parent)


def edit_npz(path: Path, *, stamp: bool = True, **arrays) -> None:
    """Rewrite some arrays of an ``.npz`` (the others kept; digests updated with ``stamp``)."""
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data.update(arrays)
    np.savez(path, **data)
    if stamp:
        restamp(Path(path).parent)


def forged_npy_header_npz(path: Path, key: str, shape, dtype="<f8") -> None:
    """An ``.npz`` whose array ``key`` has a header claiming ``shape`` over 8 bytes of data."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)}
    )
    buf.write(b"\0" * 8)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{key}.npy", buf.getvalue())


def assert_units_consistent(ix) -> None:
    """The units of the loaded MixPR index ``ix`` are what a load guarantees: non-empty, in
    document order, sorted and non-overlapping within their text, ``unit_index`` their position,
    token counts in ``[1, 4 * characters + 1024]``, and every hit a slice of its text."""
    src, s, e = ix.unit_source, ix.starts, ix.ends
    assert (s < e).all() and (np.diff(src) >= 0).all()
    same = src[1:] == src[:-1]
    assert (s[1:][same] >= e[:-1][same]).all()
    first = np.searchsorted(src, src, side="left")
    assert np.array_equal(ix.unit_index, np.arange(len(src)) - first)
    assert ((ix.token_counts >= 1) & (ix.token_counts <= 4 * (e - s) + 1024)).all()
    texts = list(ix.texts)
    for h in ix.search("cat", k=5).hits:
        assert h.text == texts[h.source][h.start : h.end] and h.text


def traced_peak(fn) -> tuple[int, BaseException | None]:
    """Peak bytes traced (``tracemalloc``) while ``fn()`` runs, and what it raised."""
    import tracemalloc

    tracemalloc.start()
    err = None
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - returned to the test
        err = exc
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak, err


def copied(src: Path, dst: Path) -> Path:
    """``dst``, a copy of the folder ``src``."""
    import shutil

    shutil.copytree(src, dst)
    return dst


def raw_npy(header: str, payload: bytes = b"", version: tuple[int, int] = (1, 0)) -> bytes:
    """An ``.npy`` file whose header dict is the literal text ``header`` (padded as numpy does)."""
    h = header.encode("latin1")
    fmt, pre = ("<H", 10) if version == (1, 0) else ("<I", 12)
    pad = (-(pre + len(h) + 1)) % 64
    hb = h + b" " * pad + b"\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, len(hb)) + hb + payload


def npy_header(descr: str, shape: str, fortran: str = "False") -> str:
    """The text of an ``.npy`` header dict (each value as literal text, forged at will)."""
    return f"{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}"
