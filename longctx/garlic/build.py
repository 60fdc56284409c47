"""Building GARLIC's HWDAG: chunking, batching, summarizing with attention capture, checkpoints.

Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.1 and the authors' OpenReview answers
(A1: edge weights, A4: sequential batching by token count, no clustering).

Edge weights (answer A1). For a batch with input nodes ``v_1..v_m`` (token ranges ``R_k`` in the
prompt) and a generated information point (IP) ``c`` with tokens ``T_c``::

    e(c -> v_k) = mean_{t in T_c} mean_{j in R_k} mean_{layers, heads} a[t, j]
    w(c -> v_k) = e(c -> v_k) / sum_k' e(c -> v_k')

Attention to the prompt template and between generated tokens is left out. ``a[t, :]`` is the
attention row of generated token ``t`` when it is fed back during greedy decoding with a KV
cache: a one-token forward pass, whose column sums (:func:`longctx.attention.record_attention_stats`,
the layer YOURA uses) are exactly that row. Each step reduces the row at once to ``m`` per-node
means (one ``(prompt_len, m)`` matrix product); no attention map is kept and the model is never
asked for ``output_attentions``.

Checkpoints (writing finished batches to ``out_dir``, validating and resuming them) are in
:mod:`longctx.garlic.checkpoint`.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from longctx.checks import check_int

# Checkpoints (settings dict, records, resume) live in ``longctx.garlic.checkpoint``;
# ``CHECKPOINT_VERSION`` and ``_check_records`` stay importable from here.
from longctx.garlic.checkpoint import CHECKPOINT_VERSION as CHECKPOINT_VERSION
from longctx.garlic.checkpoint import _check_records as _check_records
from longctx.garlic.checkpoint import (
    _check_same_texts,
    _config,
    _read_checkpoint,
    _write_checkpoint,
)
from longctx.garlic.decode import generate_with_capture, ip_edge_weights
from longctx.garlic.graph import FORMAT_KIND as FORMAT_KIND
from longctx.garlic.graph import FORMAT_VERSION as FORMAT_VERSION
from longctx.garlic.graph import HWDAG, Node, assemble_graph
from longctx.garlic.options import check_build_options
from longctx.garlic.prompts import (
    BULLET,
    PROMPT_HEAD,
    PROMPT_TAIL,
    SEPARATOR,
    segment_text,
)
from longctx.garlic.prompts import PROMPT_VERSION as PROMPT_VERSION
from longctx.index import check_texts
from longctx.persist import PersistError, write_dir

logger = logging.getLogger(__name__)

__all__ = [
    "build_hwdag",
    "chunk_text",
    "build_prompt",
    "generate_with_capture",
    "ip_edge_weights",
    "check_documents",
]

_WORD_RE = re.compile(r"\S+")


# -- input checks ------------------------------------------------------------------------------
def check_documents(texts) -> list[str]:
    """Return ``texts`` as a list of documents; a single ``str`` is one document.

    Raises
    ------
    TypeError
        ``texts`` is not a str or a sequence of str.
    ValueError
        No document, an empty (whitespace-only) document, or a binary one (NUL bytes or mostly
        control characters); the message names ``texts[i]``.
    """
    texts = list(check_texts(texts))
    for i, t in enumerate(texts):
        head = t[:65536]
        control = sum(1 for ch in head if ord(ch) < 32 and ch not in "\t\n\r\f\v")
        if "\x00" in head or control > 0.1 * len(head):
            raise ValueError(f"texts[{i}] looks binary (NUL or control characters): give text")
    return texts


def _model_window(model) -> int | None:
    config = model.config
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    n = getattr(config, "max_position_embeddings", None)
    return int(n) if isinstance(n, int) and n > 0 else None


def _eos_ids(model, tokenizer) -> tuple[int, ...]:
    ids = set()
    for src in (getattr(model, "generation_config", None), tokenizer):
        e = getattr(src, "eos_token_id", None) if src is not None else None
        if isinstance(e, int):
            ids.add(e)
        elif isinstance(e, (list, tuple)):
            ids.update(int(x) for x in e)
    return tuple(sorted(ids))


# -- level 1: chunks ---------------------------------------------------------------------------
def _strip(text: str, a: int, b: int) -> tuple[int, int] | None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return (a, b) if b > a else None


def _split_long(text: str, a: int, b: int, n_tok: int, tokenizer, chunk_tokens: int):
    """Cut one over-long sentence ``text[a:b]`` into pieces of at most ``chunk_tokens`` tokens
    (token offsets of a fast tokenizer; a slow one: equal word groups)."""
    piece = text[a:b]
    out = []
    if getattr(tokenizer, "is_fast", False):
        offs = tokenizer(piece, add_special_tokens=False, return_offsets_mapping=True)[
            "offset_mapping"
        ]
        for k in range(0, len(offs), chunk_tokens):
            s = _strip(text, a + offs[k][0], a + offs[min(k + chunk_tokens, len(offs)) - 1][1])
            if s is not None:
                out.append(s)
    else:
        words = [(a + m.start(), a + m.end()) for m in _WORD_RE.finditer(piece)]
        n = math.ceil(n_tok / chunk_tokens)
        for g in np.array_split(np.arange(len(words)), n):
            if len(g):
                out.append((words[g[0]][0], words[g[-1]][1]))
    return out


def _count(tokenizer, texts: list[str]) -> list[int]:
    if not texts:
        return []
    return [len(x) for x in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def chunk_text(text: str, tokenizer, chunk_tokens: int = 300) -> list[tuple[int, int, int]]:
    """Level-1 chunks of one document: about ``chunk_tokens`` tokens, on sentence boundaries.

    Sentences (:func:`longctx.text.split_sentences`) are packed in order while the chunk stays
    within ``chunk_tokens`` tokens of ``tokenizer``; a sentence longer than that is cut on token
    boundaries.

    Returns
    -------
    list of (start, end, n_tokens)
        Character span (end exclusive, ``text[start:end]`` is the chunk) and its token count.
    """
    from longctx.text import split_sentences

    chunk_tokens = check_int(chunk_tokens, "chunk_tokens", minimum=1)
    sents = split_sentences(text)
    counts = _count(tokenizer, [text[a:b] for a, b in sents])
    pieces: list[tuple[int, int, int]] = []
    for (a, b), c in zip(sents, counts):
        if c <= chunk_tokens:
            pieces.append((a, b, c))
        else:
            sub = _split_long(text, a, b, c, tokenizer, chunk_tokens)
            for (s, e), n in zip(sub, _count(tokenizer, [text[s:e] for s, e in sub])):
                pieces.append((s, e, n))
    spans: list[tuple[int, int]] = []
    cur, total = None, 0
    for a, b, c in pieces:
        if cur is not None and total + c > chunk_tokens:
            spans.append(cur)
            cur, total = None, 0
        cur = (a, b) if cur is None else (cur[0], b)
        total += c
    if cur is not None:
        spans.append(cur)
    counts = _count(tokenizer, [text[a:b] for a, b in spans])
    return [(a, b, n) for (a, b), n in zip(spans, counts)]


# -- prompt ------------------------------------------------------------------------------------
def build_prompt(tokenizer, node_texts: Sequence[str], bullets: bool) -> tuple[list, list]:
    """Token ids of the Table 4 prompt (through the chat template) over ``node_texts``.

    Each node is one line (:func:`~longctx.garlic.prompts.segment_text`), preceded by ``"* "``
    when ``bullets`` (IPs as inputs). Template, instructions, separators and bullets are
    tokenized apart from the node texts, so each node's tokens are known exactly.

    Returns
    -------
    ids : list of int
        The prompt, ending with the assistant turn's opening.
    ranges : list of (start, end)
        Token range of each node in ``ids`` (end exclusive).

    Raises
    ------
    ValueError
        The tokenizer has no chat template, or the template rewrites the user message.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "the tokenizer has no chat template: GARLIC summarizes with an instruction-tuned "
            "(chat) model; pass model/tokenizer of one"
        )
    segs = [segment_text(t) for t in node_texts]
    prefix = BULLET if bullets else ""
    content = PROMPT_HEAD + SEPARATOR.join(prefix + s for s in segs) + PROMPT_TAIL
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": content}], tokenize=False, add_generation_prompt=True
    )
    at = rendered.find(content)
    if at < 0:
        raise ValueError("the tokenizer's chat template changes the user message; cannot use it")
    pieces: list[tuple[str, bool]] = [(rendered[: at + len(PROMPT_HEAD)], False)]
    for k, s in enumerate(segs):
        glue = (SEPARATOR if k else "") + prefix
        if glue:
            pieces.append((glue, False))
        pieces.append((s, True))
    pieces.append((rendered[at + len(content) - len(PROMPT_TAIL) :], False))
    enc = tokenizer([p for p, _ in pieces], add_special_tokens=False)["input_ids"]
    ids: list[int] = []
    ranges = []
    for (_, is_node), toks in zip(pieces, enc):
        if is_node:
            ranges.append((len(ids), len(ids) + len(toks)))
        ids.extend(int(t) for t in toks)
    return ids, ranges


# -- the build ---------------------------------------------------------------------------------
def _batches(ids: list[int], n_tokens: list[int], batch_tokens: int) -> list[list[int]]:
    """Sequential batching (answer A4): add nodes in order while the node tokens fit."""
    out: list[list[int]] = []
    cur: list[int] = []
    total = 0
    for i, n in zip(ids, n_tokens):
        if cur and total + n > batch_tokens:
            out.append(cur)
            cur, total = [], 0
        cur.append(i)
        total += n
    if cur:
        out.append(cur)
    return out


def build_hwdag(
    texts,
    model=None,
    tokenizer=None,
    *,
    out_dir: str | os.PathLike | None = None,
    encoder=None,
    chunk_tokens: int = 300,
    batch_tokens: int = 6000,
    max_new_tokens: int = 1024,
    max_levels: int = 10,
    layers="all",
    batch_size: int | None = None,
    force_bullets: bool = True,
    progress: bool = False,
    logits_processor: Callable | None = None,
    on_batch: Callable | None = None,
    prompt_lookup_num_tokens: int | None = None,
) -> HWDAG:
    """Build GARLIC's hierarchical weighted DAG over one or more documents (sec. 3.1).

    Level 1 are ~``chunk_tokens``-token chunks (:func:`chunk_text`). Each next level: the nodes of
    one document, in order, are batched while their tokens fit in ``batch_tokens`` (answer A4),
    each batch summarized greedily with the Table 4 prompt; every generated ``*`` line is one IP
    (a node one level up) with attention edge weights to the batch's nodes (module docstring).
    A document's levels stop when a level fits in one batch: that batch's IPs are its top (or at
    ``max_levels``). Documents are never mixed in a summarization batch.

    Decoding is batched (:func:`~longctx.garlic.decode.generate_batch_with_capture`): the
    summarization batches of one level of every document still growing are decoded together,
    ``batch_size`` prompts per forward pass (left-padded, longest prompts first), each row
    stopping at its own end of sequence. The graph equals the one decoded one prompt at a time
    (float32: same tokens, edge weights to ~1e-6).

    Parameters
    ----------
    texts : str or list of str
        The documents.
    model, tokenizer : optional
        A chat-tuned causal LM on ``transformers.AttentionInterface`` and its tokenizer (with a
        chat template). Default: :func:`longctx.models.load_causal_lm` (SmolLM2-135M-Instruct).
    out_dir : path, optional
        Checkpoint directory, rewritten after every summarization batch; finally holds the graph
        (:meth:`HWDAG.load`). If it holds an interrupted build of the same inputs and settings,
        the build resumes from it (any ``batch_size``); a finished one is loaded and returned.
    encoder : optional
        Node embeddings: anything :func:`longctx.embeddings.get_encoder` takes (default the
        packaged MiniLM); ``False`` for none.
    chunk_tokens : int, default 300
        Level-1 chunk size (tokens of ``tokenizer``).
    batch_tokens : int, default 6000
        Node tokens per summarization batch (prompt and summary excluded, answer A4).
    max_new_tokens : int, default 1024
        Generation limit per batch. ``batch_tokens + max_new_tokens +`` prompt must fit the
        model's window (``n_s``).
    max_levels : int, default 10
        Most levels a document's graph gets (level 1 included), >= 2.
    layers : {"all", "last"} or list of int, default "all"
        Attention layers averaged for the edge weights.
    batch_size : int, optional
        Summarization prompts decoded together per forward pass (rows of the padded batch).
        Default by the model's device (:data:`~longctx.garlic.decode.DEFAULT_BATCH_SIZE`): 8 on
        CPU, 32 on CUDA. Memory: about ``batch_size * n_s`` tokens of KV cache (SmolLM2-135M,
        float32: 46 kB a token, so 8 rows of 7,200 tokens take 2.6 GB); lower it if that is too
        much. 1 decodes one prompt at a time.
    force_bullets : bool, default True
        Constrain decoding with :class:`~longctx.garlic.decode.BulletLogitsProcessor` so every
        line of a summary is ``* <text>`` (Table 4's format) whatever the model. False: the model
        writes freely and a summary without ``*`` lines falls back to list items or plain lines
        (:func:`ip_edge_weights`).
    progress : bool, default False
        A tqdm bar over summarization batches on stderr.
    prompt_lookup_num_tokens : int, optional
        Most draft tokens per summary and decoding pass for prompt-lookup decoding; 0 turns it
        off; default :data:`~longctx.garlic.decode.DEFAULT_PROMPT_LOOKUP` (32), at most 63. A
        summary copies phrases of its batch (and a small model repeats its own lines), so each
        pass also checks the tokens that followed the summary's last 1-8 tokens earlier in the
        prompt or the summary, and keeps those the model writes anyway: the same summaries
        (greedy), in fewer passes (:func:`~longctx.garlic.decode.generate_batch_with_capture`).
    logits_processor : callable, optional
        Applied before the bullet constraint; see :func:`generate_with_capture`.
    on_batch : callable, optional
        ``f(index, record)`` called after each summarization batch is checkpointed; ``index``
        counts batches in the order they finished (resumed ones first).

    Returns
    -------
    HWDAG
        ``info`` holds ``tokens_generated``, ``tokens_generated_this_run``, ``seconds``,
        ``resumed_batches`` and ``batch_size``.

    Raises
    ------
    TypeError, ValueError
        Bad documents (empty, binary), bad sizes (``batch_size`` < 1 included), a tokenizer
        without chat template, a model window smaller than ``n_s``, an ``out_dir`` built from
        other inputs: all before any model call.
    PersistError
        ``out_dir`` is half-written, of another format version, or not a GARLIC graph.
    """
    return _build(
        texts,
        model,
        tokenizer,
        out_dir=out_dir,
        out_dirs=None,
        encoder=encoder,
        chunk_tokens=chunk_tokens,
        batch_tokens=batch_tokens,
        max_new_tokens=max_new_tokens,
        max_levels=max_levels,
        layers=layers,
        batch_size=batch_size,
        force_bullets=force_bullets,
        progress=progress,
        logits_processor=logits_processor,
        on_batch=on_batch,
        prompt_lookup_num_tokens=prompt_lookup_num_tokens,
    )


def _batchable_across_documents(build_kwargs) -> bool:
    """Whether keyword arguments meant for :func:`build_hwdag` (one document at a time) can go to
    :func:`build_hwdags` instead: they name only parameters both take (not ``out_dir`` or
    ``on_batch``, which are per document)."""
    import inspect

    both = set(inspect.signature(build_hwdags).parameters) & set(
        inspect.signature(build_hwdag).parameters
    )
    return set(build_kwargs) <= both - {"texts", "text", "model", "tokenizer"}


def build_each(texts, model=None, tokenizer=None, *, builder=None, **build_kwargs) -> list:
    """One graph per text, as the framework adapters need them.

    With ``builder=None`` and several texts whose keywords :func:`build_hwdags` takes, the texts
    are built together (their summarization prompts share decoding passes; each graph equals
    the one built alone); otherwise ``builder([text], model=model, tokenizer=tokenizer,
    **build_kwargs)`` runs per text (``builder`` defaults to :func:`build_hwdag`).
    """
    texts = list(texts)
    if builder is None and len(texts) > 1 and _batchable_across_documents(build_kwargs):
        return build_hwdags(texts, model, tokenizer, **build_kwargs)
    builder = builder or build_hwdag
    return [builder([t], model=model, tokenizer=tokenizer, **build_kwargs) for t in texts]


def build_hwdags(
    texts,
    model=None,
    tokenizer=None,
    *,
    out_dirs=None,
    encoder=None,
    chunk_tokens: int = 300,
    batch_tokens: int = 6000,
    max_new_tokens: int = 1024,
    max_levels: int = 10,
    layers="all",
    batch_size: int | None = None,
    force_bullets: bool = True,
    progress: bool = False,
    logits_processor: Callable | None = None,
    prompt_lookup_num_tokens: int | None = None,
) -> list[HWDAG]:
    """One HWDAG per document, built together: every document's summarization batches of a level
    share the decoding passes (``batch_size`` prompts each), so many short documents build about
    ``batch_size`` times faster than one after another on a CPU.

    Each returned graph equals ``build_hwdag(texts[i], ...)`` with the same settings (float32:
    same tokens, edge weights to ~1e-6). Parameters as :func:`build_hwdag`, except:

    Parameters
    ----------
    out_dirs : list of path (one per document), optional
        Where each finished graph is written (loadable by :meth:`HWDAG.load`, and by
        :func:`build_hwdag` with that ``out_dir`` and the same settings). A folder that already
        holds the finished graph of its document and settings is loaded instead of rebuilt; an
        interrupted build is not resumed here (there is no checkpoint per batch).

    Returns
    -------
    list of HWDAG
        In the order of ``texts``.

    Raises
    ------
    TypeError, ValueError, PersistError
        As :func:`build_hwdag`; ``out_dirs`` of another length than ``texts``.
    """
    return _build(
        texts,
        model,
        tokenizer,
        out_dir=None,
        out_dirs=out_dirs,
        separate=True,
        encoder=encoder,
        chunk_tokens=chunk_tokens,
        batch_tokens=batch_tokens,
        max_new_tokens=max_new_tokens,
        max_levels=max_levels,
        layers=layers,
        batch_size=batch_size,
        force_bullets=force_bullets,
        progress=progress,
        logits_processor=logits_processor,
        on_batch=None,
        prompt_lookup_num_tokens=prompt_lookup_num_tokens,
    )


def _build(
    texts,
    model,
    tokenizer,
    *,
    out_dir,
    out_dirs,
    encoder,
    chunk_tokens,
    batch_tokens,
    max_new_tokens,
    max_levels,
    layers,
    batch_size,
    force_bullets,
    progress,
    logits_processor,
    on_batch,
    prompt_lookup_num_tokens=None,
    separate: bool = False,
):
    from longctx.attention import num_hidden_layers, resolve_layers
    from longctx.garlic.decode import BulletLogitsProcessor, check_batch_size

    t0 = time.perf_counter()
    texts = check_documents(texts)
    opts = check_build_options(
        chunk_tokens=chunk_tokens,
        batch_tokens=batch_tokens,
        max_new_tokens=max_new_tokens,
        max_levels=max_levels,
        layers=layers,
        batch_size=batch_size,
        force_bullets=force_bullets,
        prompt_lookup_num_tokens=prompt_lookup_num_tokens,
        logits_processor=logits_processor,
        on_batch=on_batch,
    )
    chunk_tokens, batch_tokens = opts["chunk_tokens"], opts["batch_tokens"]
    max_new_tokens, max_levels = opts["max_new_tokens"], opts["max_levels"]
    prompt_lookup_num_tokens = opts["prompt_lookup_num_tokens"]
    if encoder is not None and encoder is not False:
        from longctx.embeddings import get_encoder

        encoder = get_encoder(encoder)
    if (model is None) != (tokenizer is None):
        raise ValueError("give both model and tokenizer, or neither (default SmolLM2)")
    if model is None:
        from longctx.models import load_causal_lm

        model, tokenizer = load_causal_lm()
    batch_size = check_batch_size(batch_size, model)
    sel_layers = resolve_layers(layers, num_hidden_layers(model))
    overhead = len(build_prompt(tokenizer, ["x"], bullets=True)[0])
    window = _model_window(model)
    n_s = batch_tokens + max_new_tokens + overhead
    if window is not None and n_s > window:
        raise ValueError(
            f"n_s = batch_tokens ({batch_tokens}) + max_new_tokens ({max_new_tokens}) + prompt "
            f"({overhead}) = {n_s} tokens exceeds the model's window of {window}: lower "
            "batch_tokens or max_new_tokens"
        )
    config = _config(
        model,
        tokenizer,
        texts,
        sel_layers,
        chunk_tokens,
        batch_tokens,
        max_new_tokens,
        max_levels,
        force_bullets,
    )
    out = Path(out_dir) if out_dir is not None else None
    done: list[dict] = []
    if out is not None:
        if out.exists() and not out.is_dir():
            raise ValueError(f"out_dir {str(out)!r} exists and is not a directory")
        done, complete = _read_checkpoint(out, config)
        if complete:
            logger.info("%s holds a finished graph of these inputs: loading it", out)
            graph = HWDAG.load(out)
            _check_same_texts(graph, texts, out)
            graph.info.update(tokens_generated_this_run=0, resumed_batches=len(done))
            return graph
    loaded: dict[int, HWDAG] = {}
    doc_configs = []
    if separate:
        if out_dirs is not None:
            out_dirs = [Path(d) for d in out_dirs]
            if len(out_dirs) != len(texts):
                raise ValueError(
                    f"out_dirs has {len(out_dirs)} folders for {len(texts)} documents (texts)"
                )
        for src, text in enumerate(texts):
            cfg = _config(
                model,
                tokenizer,
                [text],
                sel_layers,
                chunk_tokens,
                batch_tokens,
                max_new_tokens,
                max_levels,
                force_bullets,
            )
            doc_configs.append(cfg)
            if out_dirs is not None:
                d = out_dirs[src]
                if d.exists() and not d.is_dir():
                    raise ValueError(f"out_dirs[{src}] {str(d)!r} is not a directory")
                if _read_checkpoint(d, cfg)[1]:
                    loaded[src] = HWDAG.load(d)
                    _check_same_texts(loaded[src], [text], d)
                    loaded[src].info.update(tokens_generated_this_run=0)
    eos = _eos_ids(model, tokenizer)
    processors: list = [logits_processor] if logits_processor is not None else []
    if force_bullets:
        processors.append(BulletLogitsProcessor(tokenizer, eos, _vocab_size(model, tokenizer)))
    done_by_key = {}
    for r in done:
        if not isinstance(r, dict) or not {"source", "level", "pos", "inputs"} <= set(r):
            raise PersistError(f"{str(out / 'checkpoint.json')!r} is damaged: a bad record")
        done_by_key[(r["source"], r["level"], r["pos"])] = r

    # per document: its nodes (ids local to the document) and the level being summarized
    doc_nodes: list[list[Node]] = []
    for src, text in enumerate(texts):
        doc_nodes.append(
            [
                Node(j, text[a:b], 1, n, src, -1, a, b)
                for j, (a, b, n) in enumerate(chunk_text(text, tokenizer, chunk_tokens))
            ]
        )
    level_ids = {src: [x.id for x in doc_nodes[src]] for src in range(len(texts))}
    for src in loaded:
        del level_ids[src]
    level = 1
    records: dict[tuple, dict] = {}
    order: list[dict] = list(done)  # checkpoint records, in the order they finished
    n_generated_now = 0
    from tqdm.auto import tqdm

    bar = tqdm(total=None, unit="batch", disable=not progress, file=sys.stderr, leave=False)
    try:
        while level_ids:
            # every summarization batch of this level, all growing documents
            level_batches = {}
            todo = []
            for src, ids in level_ids.items():
                nodes = doc_nodes[src]
                level_batches[src] = _batches(ids, [nodes[i].n_tokens for i in ids], batch_tokens)
                for pos, batch in enumerate(level_batches[src]):
                    key = (src, level, pos)
                    if key in done_by_key:
                        if done_by_key[key]["inputs"] != batch:
                            raise PersistError(
                                f"{str(out / 'checkpoint.json')!r} does not match this build "
                                f"(document {src}, level {level}, batch {pos}); delete the "
                                "directory"
                            )
                        records[key] = done_by_key[key]
                    else:
                        todo.append((key, [nodes[i] for i in batch], batch))
            bar.set_description(f"level {level}")
            for key, rec in _summarize_level(
                model,
                tokenizer,
                todo,
                sel_layers,
                max_new_tokens,
                eos,
                processors,
                batch_size,
                prompt_lookup_num_tokens,
            ):
                records[key] = rec
                order.append(rec)
                n_generated_now += rec["n_generated"]
                if out is not None:
                    _write_checkpoint(out, config, order)
                bar.update(1)
                if on_batch is not None:
                    on_batch(len(order) - 1, rec)
            # the IPs of each document become its next level
            next_level = {}
            for src, batches in level_batches.items():
                nodes = doc_nodes[src]
                next_ids: list[int] = []
                for pos in range(len(batches)):
                    rec = records[(src, level, pos)]
                    for ip_text, n_tok in zip(rec["ips"], rec["ip_tokens"]):
                        next_ids.append(len(nodes))
                        nodes.append(Node(len(nodes), ip_text, level + 1, n_tok, src, pos))
                if len(batches) == 1 or level + 1 >= max_levels or not next_ids:
                    if len(batches) > 1:
                        logger.warning(
                            "document %d: max_levels=%d reached; its top level comes from %d "
                            "batches",
                            src,
                            max_levels,
                            len(batches),
                        )
                    continue
                total_now = sum(nodes[i].n_tokens for i in next_ids)
                if total_now >= sum(nodes[i].n_tokens for i in level_ids[src]):
                    logger.warning(
                        "document %d: level %d is not shorter than level %d; stopping there",
                        src,
                        level + 1,
                        level,
                    )
                    continue
                next_level[src] = next_ids
            level_ids = next_level
            level += 1
    finally:
        bar.close()
    if separate:
        graphs = []
        for src, text in enumerate(texts):
            if src in loaded:
                graphs.append(loaded[src])
                continue
            recs = {(0, k[1], k[2]): r for k, r in records.items() if k[0] == src}
            graph = assemble_graph([text], [doc_nodes[src]], recs, encoder)
            graph.info.update(
                config=doc_configs[src],
                tokens_generated=int(sum(r["n_generated"] for r in recs.values())),
                tokens_generated_this_run=int(sum(r["n_generated"] for r in recs.values())),
                seconds_all_documents=round(time.perf_counter() - t0, 3),
                resumed_batches=0,
                batch_size=batch_size,
                prompt_lookup_num_tokens=prompt_lookup_num_tokens,
            )
            if out_dirs is not None:
                payload = graph._payload()
                saved = [{**r, "source": 0} for r in recs.values()]
                payload["json_files"]["checkpoint"] = {"config": doc_configs[src], "records": saved}
                write_dir(out_dirs[src], **payload, extra={"complete": True})
            graphs.append(graph)
        return graphs
    graph = assemble_graph(texts, doc_nodes, records, encoder)
    graph.info.update(
        config=config,
        tokens_generated=int(sum(r["n_generated"] for r in records.values())),
        tokens_generated_this_run=int(n_generated_now),
        seconds=round(time.perf_counter() - t0, 3),
        resumed_batches=len(done),
        batch_size=batch_size,
        prompt_lookup_num_tokens=prompt_lookup_num_tokens,
    )
    if out is not None:
        payload = graph._payload()
        payload["json_files"]["checkpoint"] = {"config": config, "records": order}
        write_dir(out, **payload, extra={"complete": True})
    return graph


def _vocab_size(model, tokenizer) -> int:
    try:
        return int(model.get_output_embeddings().weight.shape[0])
    except (AttributeError, TypeError):
        return len(tokenizer)


def _summarize_level(
    model, tokenizer, todo, layers, max_new_tokens, eos, processors, batch_size, prompt_lookup=0
):
    """Summarize the batches ``todo`` (``(key, input nodes, input ids)``), ``batch_size`` prompts
    per decoding pass, longest prompts first; yields ``(key, record)`` as groups finish (in
    ``todo`` order within a group)."""
    from longctx.garlic.decode import generate_batch_with_capture

    window = _model_window(model)
    prompts = []
    for key, inputs, _ in todo:
        ids, ranges = build_prompt(tokenizer, [x.text for x in inputs], bullets=key[1] > 1)
        if window is not None and len(ids) + max_new_tokens > window:
            raise RuntimeError(
                f"a batch prompt of {len(ids)} tokens + max_new_tokens ({max_new_tokens}) exceeds "
                f"the model window of {window}: lower batch_tokens"
            )
        prompts.append((ids, ranges))
    by_length = sorted(range(len(todo)), key=lambda j: -len(prompts[j][0]))
    for g in range(0, len(by_length), batch_size):
        group = sorted(by_length[g : g + batch_size])
        results = generate_batch_with_capture(
            model,
            [prompts[j] for j in group],
            max_new_tokens=max_new_tokens,
            eos_token_ids=eos,
            layers=layers,
            logits_processors=processors,
            prompt_lookup_num_tokens=prompt_lookup,
        )
        for j, (gen, node_att) in zip(group, results):
            (src, level, pos), inputs, batch = todo[j]
            text, spans, weights = ip_edge_weights(tokenizer, gen, node_att)
            if not spans:
                raise RuntimeError(
                    f"document {src}, level {level}: the model wrote nothing for a batch of "
                    f"{len(inputs)} nodes"
                )
            ip_texts = [text[a:b] for a, b in spans]
            yield (
                (src, level, pos),
                {
                    "source": src,
                    "level": level,
                    "pos": pos,
                    "inputs": list(batch),
                    "n_generated": len(gen),
                    "text": text,
                    "ips": ip_texts,
                    "ip_tokens": _count(tokenizer, ip_texts),
                    "weights": [[float(x) for x in row] for row in weights],
                },
            )
