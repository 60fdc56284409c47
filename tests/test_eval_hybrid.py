"""``mixpr-seeded`` in the harness: MixPR seeded by the ``minilm`` baseline's own retrieval (its
vectors shared), no unit embedded; ``mixpr-hybrid`` is the hybrid that embeds units (issue 45)."""

from __future__ import annotations

from longctx.embeddings import CallableEncoder
from tests.garlic._graphs import hash_embed


class Counting(CallableEncoder):
    texts = 0

    def _embed_documents(self, texts):
        Counting.texts += len(texts)
        return super()._embed_documents(texts)

    def _embed_query(self, query):  # a question: not counted
        return self.fn([query])[0]


def test_seeded_hybrid_embeds_only_what_minilm_embeds(shared_data, tmp_path):
    from longctx.eval import run

    def go(methods):
        Counting.texts = 0
        result = run(
            shared_data, tasks=["squad"], methods=methods, n_questions=3,
            token_counter=lambda s: len(s.split()), isolate=False, cache_dir=tmp_path,
            encoder_factory=lambda: Counting(hash_embed),
        )  # fmt: skip
        return result["results"], Counting.texts

    _, minilm = go(["minilm"])  # the app's vectors: embedded once, kept in the cache
    rows, hybrid = go(["mixpr-seeded"])
    assert minilm > 0 and hybrid == 0  # the hybrid embedded nothing of its own
    assert len(rows) == 3 and all(r["n"] >= 3 and r["over_budget"] == 0 for r in rows)
    _, units = go(["mixpr-hybrid"])
    assert units > 0  # the former hybrid embeds MixPR's units


def test_seeded_hybrid_ranks_a_passage_pool(shared_data):
    from longctx.eval import run

    result = run(
        shared_data, tasks=["hotpotqa-corpus"], methods=["mixpr-seeded", "random"],
        n_questions=5, token_counter=len, isolate=False,
        encoder_factory=lambda: CallableEncoder(hash_embed),
    )  # fmt: skip
    cell = {(r["method"], r["budget"]): r for r in result["results"]}
    assert cell[("mixpr-seeded", 5)]["n"] == 5
    assert cell[("mixpr-seeded", 5)]["recall"] > cell[("random", 5)]["recall"]
