"""Small saved indexes of every kind (no model needed) and helpers to damage their files."""

from __future__ import annotations

import io
import json
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


def edit_json(path: Path, fn) -> None:
    data = json.loads(Path(path).read_text("utf-8"))
    out = fn(data)
    Path(path).write_text(json.dumps(data if out is None else out), "utf-8")


def edit_npz(path: Path, **arrays) -> None:
    """Rewrite some arrays of an ``.npz`` (the others kept)."""
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data.update(arrays)
    np.savez(path, **data)


def forged_npy_header_npz(path: Path, key: str, shape, dtype="<f8") -> None:
    """An ``.npz`` whose array ``key`` has a header claiming ``shape`` over 8 bytes of data."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)}
    )
    buf.write(b"\0" * 8)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr(f"{key}.npy", buf.getvalue())
