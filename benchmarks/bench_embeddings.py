"""Chunks embedded per second by the packaged all-MiniLM-L6-v2, directly and through the app
frameworks' wrappers, as a hybrid MixPR index embeds them (issue 32: 11,233 chunks took 627 s
through a LlamaIndex ``HuggingFaceEmbedding`` left at ``embed_batch_size=10``, 166 s through
LangChain).

The units are MixPR's chunks (up to 64 words, cut at sentence ends) of a Gutenberg novel; each
path embeds the same ``--units`` chunks through :func:`longctx.embeddings.embed_texts`:

- ``longctx``: :class:`longctx.embeddings.SentenceTransformerEncoder` (64 texts per forward pass);
- ``llamaindex batch 10``: a LlamaIndex ``BaseEmbedding`` over the same model, requests of 10
  texts (what LlamaIndex's default ``embed_batch_size`` gave before);
- ``llamaindex``: the same model object through ``embed_texts`` now (10 raised to 64 for the call);
- ``langchain``: ``langchain_huggingface.HuggingFaceEmbeddings`` over the packaged model folder
  (skipped when langchain-huggingface is not installed).

Prints units/s and the seconds per 10,000 units for each. Timings on a shared machine are noisy.
Run: ``PYTHONPATH=. python benchmarks/bench_embeddings.py [--units 2000] [--threads N]``.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _units(n: int) -> list[str]:
    from pathlib import Path

    from longctx import MixPRIndex, sample_text

    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "gutenberg" / "pg1342.txt"
    text = data.read_text(encoding="utf-8") if data.is_file() else sample_text("alice")
    index = MixPRIndex.from_texts(text)
    units = [text[a:b] for a, b in zip(index.starts.tolist(), index.ends.tolist())]
    while len(units) < n:
        units = units + units
    return units[:n]


class _PlainLlamaIndex:
    """A LlamaIndex ``BaseEmbedding`` over the packaged model that longctx does not unwrap, run
    as ``llama-index-embeddings-huggingface``'s ``HuggingFaceEmbedding`` runs it: one
    ``encode(texts, batch_size=embed_batch_size)`` per request."""

    def __new__(cls, embed_batch_size: int):
        from llama_index.core.base.embeddings.base import BaseEmbedding

        from longctx.embeddings import SentenceTransformerEncoder

        model = SentenceTransformerEncoder().model

        class Plain(BaseEmbedding):
            def _encode(self, texts):
                return model.encode(
                    texts,
                    batch_size=self.embed_batch_size,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                ).tolist()

            def _get_query_embedding(self, query):
                return self._encode([query])[0]

            async def _aget_query_embedding(self, query):
                return self._get_query_embedding(query)

            def _get_text_embedding(self, text):
                return self._encode([text])[0]

            def _get_text_embeddings(self, texts):
                return self._encode(texts)

        return Plain(model_name="packaged-minilm", embed_batch_size=embed_batch_size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--units", type=int, default=2000)
    ap.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    args = ap.parse_args()
    import torch

    from longctx.embeddings import (
        LlamaIndexEncoder,
        SentenceTransformerEncoder,
        default_model_path,
        embed_texts,
    )

    if args.threads:
        torch.set_num_threads(args.threads)
    units = _units(args.units)
    words = sum(len(u.split()) for u in units) / len(units)
    print(f"{len(units)} MixPR units, {words:.1f} words on average, torch threads "
          f"{torch.get_num_threads()}")  # fmt: skip
    SentenceTransformerEncoder().embed_documents(units[:64])  # load the model, warm up
    paths = {"longctx": SentenceTransformerEncoder()}
    try:
        old = _PlainLlamaIndex(10)
        paths["llamaindex batch 10"] = LlamaIndexEncoder(old, batch_size=10)
        paths["llamaindex"] = old  # longctx now raises LlamaIndex's default 10 to 64
    except ImportError as exc:
        print(f"llamaindex: skipped ({exc})")
    try:
        from langchain_huggingface import HuggingFaceEmbeddings

        paths["langchain"] = HuggingFaceEmbeddings(
            model_name=default_model_path(), model_kwargs={"local_files_only": True}
        )
    except ImportError as exc:
        print(f"langchain: skipped ({exc})")
    print(f"{'path':22} {'units/s':>8} {'s per 10k units':>16}")
    for name, model in paths.items():
        t0 = time.perf_counter()
        embed_texts(model, units)
        dt = time.perf_counter() - t0
        print(f"{name:22} {len(units) / dt:8.1f} {1e4 * dt / len(units):16.1f}")


if __name__ == "__main__":
    main()
