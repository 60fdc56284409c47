"""Making the state of a MixPR index (:class:`~longctx.mixpr.state._State`): built from texts
(:func:`build_state`), then after an insert or an update (:func:`spliced`) and after a delete
(:func:`without`). A change builds a new state and the index swaps it in whole, so searches
running meanwhile keep the old one."""

from __future__ import annotations

import numpy as np

from longctx._rss import give_back_free_memory
from longctx.mixpr.config import MixPRConfig
from longctx.mixpr.persist import _check_unit_vectors
from longctx.mixpr.state import _chunk, _LazyTexts, _State
from longctx.mixpr.text_ids import kept_ids, spliced_ids
from longctx.mixpr.tfidf import TermTable, TfidfSettings
from longctx.tokens import count_units


def spliced(
    st: _State,
    at: int,
    n_old: int,
    texts,
    ids,
    metadatas,
    unit_vectors,
    *,
    chunk: bool,
    encoder,
    token_counter,
) -> _State:
    """A new state with documents ``at .. at + n_old`` replaced by ``texts``."""
    cfg = st.config
    src, idx, starts, ends = _chunk(cfg, texts, chunk)
    src = src + at
    unit_texts = [texts[d - at][a:b] for d, a, b in zip(src.tolist(), starts, ends)]
    vectors = None
    if st.unit_vectors is not None:
        if unit_vectors is not None:
            vectors = _check_unit_vectors(unit_vectors, len(starts))
        elif encoder is not None:
            from longctx.embeddings import embed_texts

            # at insert, with a bar on a terminal (never inside a search)
            vectors = embed_texts(encoder, unit_texts, progress=None, desc="mixpr units")
            vectors = _check_unit_vectors(vectors, len(starts))
        else:
            raise ValueError(
                "this MixPR index holds unit vectors but no encoder to embed new documents: "
                "pass unit_vectors=, or encoder= to from_texts / load"
            )
        if vectors.shape[1] != st.unit_vectors.shape[1]:
            raise ValueError(
                f"unit_vectors have {vectors.shape[1]} dimensions, the index "
                f"{st.unit_vectors.shape[1]}"
            )
    elif unit_vectors is not None:
        raise ValueError("unit_vectors needs an index built with encoder= or unit_vectors=")
    # units before, new, after (the replaced documents' units dropped)
    old_src = st.unit_source  # keys of its dtype: an int against int32 would copy the array
    lo = int(np.searchsorted(old_src, old_src.dtype.type(at), side="left"))
    hi = int(np.searchsorted(old_src, old_src.dtype.type(at + n_old), side="left"))
    keep = np.ones(st.n_units, dtype=bool)
    keep[lo:hi] = False
    table = st.table.remove(keep) if hi > lo else st.table
    vocab, rows = table.rows_for(unit_texts)
    table = table.insert_rows(vocab, rows, at=lo)
    shift = len(texts) - n_old
    after = st.unit_source[hi:] + shift
    cat = np.concatenate
    counts = None
    if st.token_counts is not None:
        new_counts = count_units(unit_texts, token_counter)
        counts = cat([st.token_counts[:lo], new_counts, st.token_counts[hi:]])
    if vectors is not None:
        vectors = cat([st.unit_vectors[:lo], vectors, st.unit_vectors[hi:]])
        vectors.setflags(write=False)
    phrases = None
    if st.phrases is not None:
        from longctx.mixpr.phrases import _unit_heads

        heads = _unit_heads(texts, src - at, starts, ends, ids, metadatas)
        phrases = st.phrases.splice(lo, hi, unit_texts, heads=heads)
    # made from the old ids and the new units' texts when the old state made its ids here
    # (it holds their hashes: never a load's, which the new state makes again when asked)
    text_ids = hashes = None
    held = st.hashed_text_ids()
    if held is not None:
        text_ids, hashes = spliced_ids(st, held, lo, hi, unit_texts)
    positions = None
    if n_old == 0 and at == len(st.doc_ids):  # an append: the old ids keep their places
        positions = dict(st.positions)
        positions.update((d, at + j) for j, d in enumerate(ids))
    return _State(
        config=cfg,
        doc_ids=st.doc_ids[:at] + tuple(ids) + st.doc_ids[at + n_old :],
        texts=st.texts[:at] + tuple(texts) + st.texts[at + n_old :],
        metadata=st.metadata[:at] + tuple(metadatas) + st.metadata[at + n_old :],
        unit_source=cat([st.unit_source[:lo], src, after]),
        starts=cat([st.starts[:lo], starts, st.starts[hi:]]),
        ends=cat([st.ends[:lo], ends, st.ends[hi:]]),
        table=table,
        unit_vectors=vectors,
        token_counts=counts,
        phrases=phrases,
        positions=positions,
        text_ids=text_ids,
        text_hashes=hashes,
    )


def without(st: _State, ids) -> _State:
    """A new state without the documents ``ids`` (all held: the caller checked)."""
    gone = {st.positions[i] for i in ids}
    keep_docs = np.array([d not in gone for d in range(len(st.doc_ids))], dtype=bool)
    keep = keep_docs[st.unit_source]
    new_pos = np.cumsum(keep_docs) - 1
    table = st.table.remove(keep)
    vectors = st.unit_vectors
    if vectors is not None:
        vectors = vectors[keep]
        vectors.setflags(write=False)
    counts = st.token_counts[keep] if st.token_counts is not None else None
    phrases = None
    if st.phrases is not None:
        phrases = st.phrases.without(np.flatnonzero(~keep))
    text_ids = hashes = None
    held = st.checked_text_ids()  # renumbered, no text read (a mapped load's unchecked ids:
    # dropped, as an insert drops them; the new state makes its own when asked)
    if held is not None:
        text_ids, hashes = kept_ids(held[0], keep), held[1]
        hashes = None if hashes is None else hashes[keep]
    return _State(
        config=st.config,
        doc_ids=tuple(d for j, d in enumerate(st.doc_ids) if keep_docs[j]),
        texts=tuple(t for j, t in enumerate(st.texts) if keep_docs[j]),
        metadata=tuple(m for j, m in enumerate(st.metadata) if keep_docs[j]),
        unit_source=new_pos[st.unit_source[keep]],
        starts=st.starts[keep],
        ends=st.ends[keep],
        table=table,
        unit_vectors=vectors,
        token_counts=counts,
        phrases=phrases,
        text_ids=text_ids,
        text_hashes=hashes,
    )


def build_state(
    config: MixPRConfig,
    texts,
    ids,
    metadatas,
    *,
    chunk: bool,
    encoder,
    unit_vectors,
    progress,
    require_terms: bool,
) -> _State:
    """The state of a new index over ``texts`` (checked by the caller): units, unit vectors (given,
    or embedded with ``encoder``), term counts, and the thresholded graph when ``config`` asks
    for it (built now: its memory is checked at build time)."""
    bar = _stage_bar(progress, 3, "mixpr chunk")
    try:
        src, idx, starts, ends = _chunk(config, texts, chunk)
        if not len(starts):
            raise ValueError("texts hold no words to retrieve from")
        # sliced a block at a time by the counts (a list of every unit's text doubled the
        # texts' memory at the build's peak)
        unit_texts = _LazyTexts(texts, src, starts, ends)
        if unit_vectors is not None:
            unit_vectors = _check_unit_vectors(unit_vectors, len(starts))
        elif encoder is not None:
            from longctx.embeddings import embed_texts

            unit_vectors = embed_texts(encoder, unit_texts, progress=progress, desc="mixpr units")
            unit_vectors = _check_unit_vectors(unit_vectors, len(starts))
        if unit_vectors is not None:
            unit_vectors.setflags(write=False)
        _stage(bar, "mixpr terms")
        table = TermTable.build(TfidfSettings(config), unit_texts)
        if require_terms:
            _check_vocabulary(table, config)
        _stage(bar, "mixpr graph")
        state = _State(
            config=config,
            doc_ids=ids,
            texts=texts,
            metadata=metadatas,
            unit_source=src,
            starts=starts,
            ends=ends,
            table=table,
            unit_vectors=unit_vectors,
        )
        if config.graph == "threshold":  # built now: its memory is checked at build time
            state.graph  # noqa: B018
        del unit_texts
        give_back_free_memory()  # the temporaries of the counts, not kept by the index
        _stage(bar, "mixpr done")
    finally:
        if bar is not None:
            bar.close()
    return state


def _check_vocabulary(table: TermTable, config: MixPRConfig) -> None:
    if not table.kept_terms().any():
        raise ValueError(
            "texts hold no term to index once stop words are removed "
            f"(stop_words={config.stop_words!r})"
        )


def _stage_bar(progress: bool, total: int, desc: str):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="stage", leave=False)


def _stage(bar, desc: str) -> None:
    if bar is not None:
        bar.update(1)
        bar.set_description(desc)
