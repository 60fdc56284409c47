"""Shared by the adapters' explanation tests: what the core gives for the same query, keyed the
way the adapters' metadata names a hit (source id, start offset)."""

from __future__ import annotations

import json

from longctx.types import META_EXPLANATION

#: Two short documents for a per-document diversity corpus.
CORPUS_DOCS = [
    ("kitchen", "Mary went to the kitchen. She got the milk there. The milk was cold."),
    ("garden", "John walked in the garden. The roses were red. He picked a rose for Mary."),
]
CORPUS_QUERY = "Where is the milk?"


def youra_setup(tokenizer, prefix: str):
    """A scorer on a tiny random Llama, the three texts, their ids and the question."""
    from longctx.youra import ReactionScorer
    from tests._youra_helpers import QUERY, TEXTS, tiny_llama

    scorer = ReactionScorer(tiny_llama(len(tokenizer)), tokenizer)
    return scorer, TEXTS, [f"{prefix}{j}" for j in range(len(TEXTS))], QUERY


def youra_core(texts, ids, scorer, query, k):
    """``YouraIndex.from_texts(texts, scorer).search(query, k=k, explain=True)``'s explanations,
    ``(id, start) -> explanation``."""
    from longctx.youra import YouraIndex

    r = YouraIndex.from_texts(list(texts), scorer).search(query, k=k, explain=True)
    return {(ids[h.source], h.start): h.explanation for h in r.hits}


def diversity_corpus(tmp_path):
    """A per-document diversity corpus of :data:`CORPUS_DOCS` (hashing encoder), loaded."""
    from longctx.corpus import CorpusIndex, build_indexes, load_corpus
    from tests.corpus._helpers import hash_embed

    out = tmp_path / "corpus"
    assert not build_indexes(CORPUS_DOCS, "diversity", out, use_ray=False, progress=False,
                             encoder=hash_embed).failed  # fmt: skip
    return CorpusIndex(load_corpus(out, encoder=hash_embed))


def sharded_corpus(tmp_path):
    """A MixPR corpus of :data:`CORPUS_DOCS` built with two shards (one document each),
    loaded in this process."""
    from longctx.corpus import CorpusIndex, build_indexes, load_corpus

    out = tmp_path / "sharded"
    assert not build_indexes(CORPUS_DOCS, "mixpr", out, use_ray=False, progress=False,
                             shards=2).failed  # fmt: skip
    corpus = CorpusIndex(load_corpus(out))
    assert corpus.sharded
    return corpus


def corpus_core(corpus, k):
    """The corpus's own explanations for :data:`CORPUS_QUERY`, ``(doc_id, start) -> ...``."""
    r = corpus.search(CORPUS_QUERY, k=k, explain=True)
    return {(corpus.doc_ids[h.source], h.start): h.explanation for h in r.hits}


def check_same(metas, core) -> None:
    """Every metadata dict carries a JSON-ready explanation equal to the core's for its hit, and
    each core hit is returned."""
    assert metas and len(metas) == len(core)
    for m in metas:
        e = m[META_EXPLANATION]
        assert json.loads(json.dumps(e)) == e
        assert e == core[(m["longctx_source_id"], m["longctx_start_char_idx"])]
