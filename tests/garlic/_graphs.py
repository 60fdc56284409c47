"""Small hand-written HWDAGs for the GARLIC search tests (no model needed to build them)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

STORY = (
    "Tabitha Twitchit was expecting friends to tea. She washed her three kittens before the "
    "party. Moppet, Mittens and Tom Kitten played in the dusty garden. The puddle-ducks walked "
    "down the road in a row. Tom Kitten lost his clothes on the garden wall. The ducks put on "
    "the clothes and marched away. Tabitha sent the kittens upstairs in disgrace."
)


def hash_embed(texts, dim: int = 64) -> np.ndarray:
    """Bag-of-words hashing embedding: deterministic, and similar for texts sharing words."""
    out = np.zeros((len(texts), dim), np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().replace(".", " ").replace(",", " ").split():
            h = int(hashlib.md5(w.encode()).hexdigest(), 16)
            out[i, h % dim] += 1.0
    n = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.where(n > 0, n, 1)


@dataclass
class FakeHWDAG:
    """Duck-typed HWDAG: ``levels``, ``nodes``, ``edges``, ``embeddings``."""

    levels: list
    nodes: dict
    edges: sp.csr_array
    embeddings: np.ndarray
    meta: dict = field(default_factory=dict)


def sentence_spans(text: str):
    spans, start = [], 0
    for i, ch in enumerate(text):
        if ch == "." and (i + 1 == len(text) or text[i + 1] == " "):
            spans.append((start, i + 1))
            start = i + 2
    return spans


def make_graph(texts=(STORY,), tokenizer=None, n_ips: int = 3, seed: int = 0) -> FakeHWDAG:
    """Level 1: sentence chunks of each text; level 2: ``n_ips`` IPs per text (each a copy of one
    chunk's words), edges random but rows summing to 1 within the text; top = level 2."""
    rng = np.random.default_rng(seed)
    nodes, l1, l2, rows = {}, [], [], []
    for s, text in enumerate(texts):
        ids = []
        for c, (a, b) in enumerate(sentence_spans(text)):
            nid = f"d{s}-c{c}"
            t = text[a:b]
            n_tok = len(tokenizer(t, add_special_tokens=False)["input_ids"]) if tokenizer else -1
            nodes[nid] = {
                "text": t,
                "level": 1,
                "source": s,
                "start": a,
                "end": b,
                "n_tokens": n_tok,
            }
            ids.append(nid)
        l1 += ids
        for k in range(n_ips):
            nid = f"d{s}-ip{k}"
            base = nodes[ids[(k * 2) % len(ids)]]["text"]
            nodes[nid] = {"text": "Summary: " + base.lower(), "level": 2, "source": s}
            l2.append(nid)
            w = rng.random(len(ids)) ** 3
            rows.append((nid, dict(zip(ids, w / w.sum()))))
    order = l1 + l2
    pos = {n: i for i, n in enumerate(order)}
    e = sp.lil_array((len(order), len(order)))
    for nid, children in rows:
        for c, w in children.items():
            e[pos[nid], pos[c]] = w
    emb = hash_embed([nodes[n]["text"] for n in order])
    return FakeHWDAG([l1, l2], {n: nodes[n] for n in order}, sp.csr_array(e), emb)
