"""GARLIC Dynamic Graph Search: LLM-guided Dynamic Progress Control over an HWDAG.

Xinyu Wang, Yanzheng Xiang, Lin Gui, Yulan He, "GARLIC: LLM-Guided Dynamic Progress Control with
Hierarchical Weighted Graph for Long Document QA", 2024, arXiv:2410.04790 (published as PECAN,
Findings of ACL 2025), sec. 3.2 (Dynamic Progress Control 3.2.1, Graph Search 3.2.2), Table 5
(the two-turn prompt) and the authors' answers on attention averaging and KV caching.

The search, for one question:

1. The visited set ``S`` starts as every top-level node. The first-turn prompt (Table 5,
   verbatim) holds the question, then ``S`` as ``* node`` lines, inside the model's chat template.
2. Each visited node's tokens are appended to a KV cache in one forward pass of their own; during
   that pass the attention of the node's tokens to the question's tokens is reduced on the fly by
   :func:`longctx.attention.record_attention_stats` (no attention map is kept, no
   ``output_attentions``): ``a_i`` = mean over heads, recorded layers, node tokens and question
   tokens. It is computed once, when node ``i`` is appended, and multiplied by the node's position
   (the question is position 1, the first visited node position 2, ...: the paper's empirical
   normalization, sec. 3.2.2).
3. The decision: the assistant header is appended and the next-token log-probabilities of "Yes" and
   "No" are read (``margin = log P(Yes) - log P(No)``; "Yes" when ``margin > 0``). Small models do
   not reliably *write* the word, so the decision never parses generated text. The header is cropped
   off the cache again before the next node is appended.
4. Next node: ``z = E^T a`` (``E``: parent rows -> child columns, rows summing to 1) and the
   query-node embedding similarity (negatives clamped to 0) are each normalized to sum 1 over the
   unvisited nodes and mixed as ``(1 - alpha) * z + alpha * sim`` (``alpha = 0.5``: the paper's equal
   weights). The best unvisited node with a positive score is appended.
5. Stops: ``stop_patience`` "Yes" decisions (default 1, sec. 4.3), the prompt would exceed
   ``max_context_tokens``, or no unvisited node has a positive score ("empty frontier"). The
   second-turn prompt ("Given the above information and question, answer the question as concisely
   as you can.") is then appended to the same cache and the answer generated greedily.

Tokens the model runs during the search: the prompt once plus one assistant header per decision
(a few tokens), instead of the whole prompt at every step.

Hits
----
:class:`~longctx.types.Passage` needs exact character offsets into a source text, which only
level-1 nodes (chunks) have. ``SearchResult.hits`` are therefore the *visited level-1 nodes*
(score: the combined search score they were chosen with), in document order. Visited information
points (IPs, levels >= 2) have no span: they are listed with every visited node, in visit order,
in ``info["visited"]`` / ``info["visited_nodes"]`` (id, level, text, score, position) and in
``trace``. Adapters turn IPs into their own node objects linked to their children.

The graph as the search reads it (:class:`SearchGraph`, :func:`as_search_graph`,
:func:`merge_graphs`) is in :mod:`longctx.garlic.search_graph`, re-exported here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from longctx.checks import check_int, check_query
from longctx.explain import check_explain
from longctx.garlic.explain import explain_nodes, explain_reached, explain_visits
from longctx.garlic.options import check_search_settings

# The graph view lives in ``longctx.garlic.search_graph``; re-exported here (public names).
from longctx.garlic.search_graph import (
    SearchGraph,
    as_search_graph,
    check_chunk_texts,
    merge_graphs,
)
from longctx.types import Passage, SearchResult

logger = logging.getLogger(__name__)

__all__ = [
    "FIRST_TURN_INSTRUCTION",
    "SECOND_TURN_INSTRUCTION",
    "SearchGraph",
    "GarlicSearcher",
    "as_search_graph",
    "check_chunk_texts",
    "merge_graphs",
]

#: Table 5 of the paper, verbatim (curly quotes included).
FIRST_TURN_INSTRUCTION = (
    "Can this question be answered by the following information? Response \u201cYes\u201d or "
    "\u201cNo\u201d in one word. Do not provide any explanation."
)
SECOND_TURN_INSTRUCTION = (
    "Given the above information and question, answer the question as concisely as you can."
)

_SPLIT = "@@LONGCTX_GARLIC_SPLIT@@"

STOP_YES = "yes"
STOP_MAX_TOKENS = "max_context_tokens"
STOP_EMPTY = "empty_frontier"


# ---------------------------------------------------------------------------------------------
# searcher
# ---------------------------------------------------------------------------------------------


class GarlicSearcher:
    """GARLIC Dynamic Graph Search (sec. 3.2 of Wang et al. 2024, arXiv:2410.04790) over one HWDAG.

    Holds the graph, the causal LM, its tokenizer and the sentence encoder; :meth:`search` answers
    one question and returns a :class:`~longctx.types.SearchResult` (nothing about a query is kept
    on the searcher; a lock serializes the model's use). The settings' defaults are
    :data:`longctx.garlic.options.SEARCH_DEFAULTS` and their caps
    :data:`longctx.garlic.options.SEARCH_SETTINGS_MAX`, shared with LlamaIndex's ``GarlicIndex``
    and LangChain's ``GarlicRetriever``; :meth:`search` checks its overrides the same way.

    Parameters
    ----------
    graph : HWDAG or SearchGraph
        The graph (``longctx.garlic.HWDAG``, see :func:`as_search_graph`).
    model, tokenizer : optional
        A transformers causal LM built on ``AttentionInterface`` (Llama, Qwen2, ...) and its
        tokenizer, which must have a chat template. Default: SmolLM2-135M-Instruct
        (:func:`longctx.models.load_causal_lm`), loaded on first use. Must be the model the graph
        was built with (checked on token counts).
    encoder : optional
        Embeds the question for the similarity term; anything :func:`longctx.embeddings.get_encoder`
        takes. Must be the encoder that produced ``graph.embeddings``. Default all-MiniLM-L6-v2.
    alpha : float, default 0.5
        Weight of the embedding similarity (``1 - alpha`` for the attention score ``z``), in
        ``[0, 1]``.
    stop_patience : int, default 1
        Number of "Yes" decisions before the search stops (sec. 4.3, ``p``), 1 to 1,000,000.
    max_context_tokens : int, optional
        Largest first-turn prompt, in model tokens, 1 to 2**31 - 1 (default: the model window
        minus ``max_new_tokens`` minus the second-turn tokens).
    max_new_tokens : int, default 64
        Answer length cap (tokens), 1 to 2**20.
    layers : {"all", "last"} or ints, default "all"
        Layers whose attention gives ``a_i`` (the paper averages over all layers).
    device : str, optional
        Where to put a default-loaded model.

    Raises
    ------
    TypeError
        ``model`` without ``tokenizer`` or the reverse; a setting of the wrong type (``True``,
        ``"3"``), named; ``graph`` that is not a graph; ``layers`` of another type.
    ValueError
        A setting out of its range (``"stop_patience must be <= 1000000, got ..."``, NaN
        ``alpha``), named; a graph without a top level; a bad ``layers`` spec. Raised before
        any model is loaded, except ``layers`` out of the model's range (``layers=[99]``),
        found when the model is loaded.
    """

    method = "garlic"

    def __init__(
        self,
        graph,
        model=None,
        tokenizer=None,
        *,
        encoder=None,
        alpha: float = 0.5,
        stop_patience: int = 1,
        max_context_tokens: int | None = None,
        max_new_tokens: int = 64,
        layers="all",
        device=None,
    ):
        from longctx.attention import check_layers_spec

        self.graph = as_search_graph(graph)
        if (model is None) != (tokenizer is None):
            raise TypeError("give both model and tokenizer, or neither (default SmolLM2)")
        settings = check_search_settings(
            {"alpha": alpha, "stop_patience": stop_patience,
             "max_context_tokens": max_context_tokens, "max_new_tokens": max_new_tokens}
        )  # fmt: skip
        self.alpha = settings["alpha"]
        self.stop_patience = settings["stop_patience"]
        self.max_context_tokens = settings["max_context_tokens"]
        self.max_new_tokens = settings["max_new_tokens"]
        check_layers_spec(layers)
        self.layers = layers
        self.model = model
        self.tokenizer = tokenizer
        self._encoder_arg = encoder
        self._encoder = None
        self._device_arg = device
        self._lock = threading.RLock()
        self._ready = False
        self._node_ids: dict[int, list[int]] = {}

    # -- set-up ---------------------------------------------------------------------------------
    def _setup(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            import torch

            from longctx._hf import cache_keyword
            from longctx.attention import num_hidden_layers, resolve_layers

            if self.model is None:
                from longctx.models import load_causal_lm

                self.model, self.tokenizer = load_causal_lm(device=self._device_arg)
            self.model.eval()
            self._torch = torch
            self._cache_kw = cache_keyword(self.model)
            self.device = next(self.model.parameters()).device
            self._layers = resolve_layers(self.layers, num_hidden_layers(self.model))
            tok = self.tokenizer
            if not getattr(tok, "chat_template", None):
                raise ValueError(
                    "tokenizer has no chat template: the GARLIC prompt (Table 5) needs a chat model"
                )
            cfg = self.model.config.get_text_config()
            self._window = int(getattr(cfg, "max_position_embeddings", 0) or 0) or None
            pre, post = self._render([{"role": "user", "content": _SPLIT}], True)
            self._pre_text, self._post_text = pre, post
            self._suffix = self._encode(post)
            yes = self._encode("Yes")
            no = self._encode("No")
            if not yes or not no or yes[0] == no[0]:
                raise ValueError("tokenizer cannot tell 'Yes' from 'No' by their first token")
            self._yes_id, self._no_id = yes[0], no[0]
            stop = {tok.eos_token_id}
            for t in ("<|im_end|>", "<|eot_id|>", "<|end|>"):
                i = tok.convert_tokens_to_ids(t) if t in tok.get_vocab() else None
                if i is not None:
                    stop.add(i)
            self._stop_ids = {i for i in stop if i is not None}
            self._check_graph_tokenizer()
            self._ready = True

    def _render(self, messages, generation: bool) -> tuple[str, str]:
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=generation
        )
        if text.count(_SPLIT) != 1:
            raise ValueError("the chat template does not keep the user message verbatim")
        pre, post = text.split(_SPLIT)
        return pre, post

    def _second_turn_ids(self, decision: str) -> list[int]:
        _, tail = self._render(
            [
                {"role": "user", "content": _SPLIT},
                {"role": "assistant", "content": decision},
                {"role": "user", "content": SECOND_TURN_INSTRUCTION},
            ],
            True,
        )
        return self._encode(tail)

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def _check_graph_tokenizer(self) -> None:
        """A graph built with another model: compare the recorded model facts, then the token
        counts of a few nodes (another tokenizer gives other counts)."""
        g = self.graph
        cfg = self.model.config.get_text_config()
        ours = {
            "model_type": str(getattr(self.model.config, "model_type", "")),
            "vocab_size": int(getattr(self.model.config, "vocab_size", 0) or 0),
            "n_layers": int(getattr(cfg, "num_hidden_layers", 0) or 0),
        }
        for k, v in g.model_info.items():
            if v and ours.get(k) and v != ours[k]:
                raise ValueError(
                    f"graph was built with another model than the one given: {k} {v!r} in the "
                    f"graph, {ours[k]!r} for this model"
                )
        known = np.flatnonzero(g.n_tokens > 0)[:8]
        if len(known) == 0:
            return
        stored = int(g.n_tokens[known].sum())
        ours = sum(len(self._encode(g.texts[p])) for p in known)
        if abs(ours - stored) > max(2 * len(known), 0.1 * stored):
            raise ValueError(
                f"graph was built with another tokenizer than the one given: {stored} tokens "
                f"stored for {len(known)} nodes, {ours} with this tokenizer"
            )

    @property
    def encoder(self):
        if self._encoder is None:
            from longctx.embeddings import get_encoder

            self._encoder = get_encoder(self._encoder_arg)
        return self._encoder

    def node_token_ids(self, p: int) -> list[int]:
        """Token ids of node ``p``'s prompt line, ``"* {text}\\n"`` (cached per searcher)."""
        ids = self._node_ids.get(p)
        if ids is None:
            ids = self._encode(f"* {self.graph.texts[p]}\n")
            self._node_ids[p] = ids
        return ids

    def prompt_pieces(self, question: str) -> tuple[list[int], tuple[int, int], list[int]]:
        """Token ids of the first-turn prompt around the nodes.

        Returns
        -------
        prefix : list of int
            Chat header, instruction, ``"Question:\\n"``, the question, ``"\\n\\nInformation:\\n"``.
        question_span : (start, end)
            Token positions of the question inside ``prefix``.
        suffix : list of int
            End of the user turn and the assistant header (appended for each decision).
        """
        self._setup()
        head = self._encode(f"{self._pre_text}{FIRST_TURN_INSTRUCTION}\n\nQuestion:\n")
        q = self._encode(question)
        tail = self._encode("\n\nInformation:\n")
        return head + q + tail, (len(head), len(head) + len(q)), list(self._suffix)

    # -- model steps ----------------------------------------------------------------------------
    def _forward(self, ids, cache):
        torch = self._torch
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        out = self.model(input_ids=x, use_cache=True, logits_to_keep=1, **{self._cache_kw: cache})
        new_cache = out["cache"] if "cache" in out else out.past_key_values
        return new_cache, out.logits[0, -1]

    def _margin(self, logits) -> float:
        lp = self._torch.log_softmax(logits.float(), dim=-1)
        return float(lp[self._yes_id] - lp[self._no_id])

    def _generate(self, cache, ids, max_new: int) -> list[int]:
        out: list[int] = []
        for _ in range(max_new):
            cache, logits = self._forward(ids, cache)
            nxt = int(logits.argmax())
            if nxt in self._stop_ids:
                break
            out.append(nxt)
            ids = [nxt]
        return out

    # -- search ---------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        stop_patience: int | None = None,
        max_context_tokens: int | None = None,
        alpha: float | None = None,
        answer: bool = True,
        max_new_tokens: int | None = None,
        reencode: bool = False,
        explain: bool = False,
    ) -> SearchResult:
        """Run Dynamic Graph Search for ``query``.

        Parameters
        ----------
        query : str
            The question.
        stop_patience, max_context_tokens, alpha, max_new_tokens : optional
            Override the searcher's settings for this query.
        answer : bool, default True
            Generate the second-turn answer (``info["answer"]``; ``None`` when False).
        reencode : bool, default False
            Baseline for benchmarks: no KV cache reuse, the whole prompt is run again at every
            step (same decisions and scores, many more tokens run).
        explain : bool, default False
            Give each hit an ``explanation`` (:func:`longctx.garlic.explain.explain_visits`):
            the path of nodes from the top level that led to it, the parts of the score that
            chose it, and where the search stopped; ``info["explanations"]`` holds the same for
            every visited node, information points included (node id -> explanation,
            :func:`longctx.garlic.explain.explain_nodes`), which :meth:`reached_passages` reads.

        Returns
        -------
        SearchResult
            ``hits``: visited level-1 nodes (exact spans) in document order; ``trace``: one entry
            per decision step (``step``, ``node``, ``level``, ``score``, ``z``, ``similarity``,
            ``attention``, ``weighted_attention``, ``margin``, ``decision``, ``prompt_tokens``,
            ``tokens_run``); ``info``: ``answer``, ``stop_reason`` (``"yes"``,
            ``"max_context_tokens"``, ``"empty_frontier"``), ``visited`` (node ids in visit
            order), ``visited_nodes`` (id, level, text, score, position), ``tokens_run``
            (tokens the model processed during the search, answer excluded),
            ``final_prompt_tokens``, ``answer_tokens``, ``steps``.

        Raises
        ------
        TypeError, ValueError
            Empty question; the question, or the top level, does not fit ``max_context_tokens``;
            bad overrides. Raised before any forward pass.
        """
        check_query(query, "query")
        check_explain(explain)
        given = {"stop_patience": stop_patience, "alpha": alpha,
                 "max_context_tokens": max_context_tokens, "max_new_tokens": max_new_tokens}  # fmt: skip
        given = check_search_settings({k: v for k, v in given.items() if v is not None})
        patience = given.get("stop_patience", self.stop_patience)
        alpha = given.get("alpha", self.alpha)
        max_new = given.get("max_new_tokens", self.max_new_tokens)
        self._setup()
        t0 = time.perf_counter()
        g = self.graph
        prefix, (qs, qe), suffix = self.prompt_pieces(query)
        second = self._second_turn_ids("Yes")
        limit = given.get("max_context_tokens", self.max_context_tokens)
        if limit is None:
            if self._window is None:
                raise ValueError("max_context_tokens is required: the model config has no window")
            limit = self._window - max_new - len(second) - 2
        limit = check_int(limit, "max_context_tokens", minimum=1)
        if self._window is not None and limit + len(second) + max_new > self._window + 2:
            logger.info("max_context_tokens %d leaves little room for the answer", limit)
        if len(prefix) + len(suffix) > limit:
            raise ValueError(
                f"query is {qe - qs} tokens; with the prompt ({len(prefix) + len(suffix)} tokens) "
                f"it exceeds max_context_tokens={limit}"
            )
        top_tokens = sum(len(self.node_token_ids(int(p))) for p in g.top)
        if len(prefix) + top_tokens + len(suffix) > limit:
            raise ValueError(
                f"the graph's top level ({top_tokens} tokens) does not fit max_context_tokens="
                f"{limit} with the prompt ({len(prefix) + len(suffix)} tokens)"
            )
        q_emb = np.asarray(self.encoder.embed_query(query), dtype=np.float32).reshape(-1)
        if q_emb.shape[0] != g.embeddings.shape[1]:
            raise ValueError(
                f"encoder gives {q_emb.shape[0]}-dim embeddings, the graph holds "
                f"{g.embeddings.shape[1]}-dim ones: use the encoder the graph was built with"
            )
        norm = float(np.linalg.norm(q_emb))
        sim = g.embeddings @ (q_emb / norm if norm > 0 else q_emb)
        sim = np.clip(sim.astype(np.float64), 0.0, None)
        timings = {"prepare": time.perf_counter() - t0}
        with self._lock:
            result = self._search_locked(
                query, prefix, qs, qe, suffix, sim, patience, alpha, limit, answer, max_new,
                reencode, timings, t0,
            )  # fmt: skip
        if not explain:
            return result
        nodes = explain_nodes(self, result, alpha)
        why = explain_visits(self, result, nodes)
        hits = tuple(replace(h, explanation=why.get((h.source, h.start, h.end))) for h in result)
        return replace(result, hits=hits, info={**result.info, "explanations": nodes})

    def _search_locked(
        self, query, prefix, qs, qe, suffix, sim, patience, alpha, limit, answer, max_new,
        reencode, timings, t0,
    ):  # fmt: skip
        from longctx.attention import record_attention_stats

        torch = self._torch
        g = self.graph
        n = len(g)
        n_q = qe - qs
        visited: list[int] = []
        visited_mask = np.zeros(n, bool)
        a = np.zeros(n, np.float64)
        raw_att: dict[int, float] = {}
        scores: dict[int, float] = {}
        trace = []
        tokens_run = 0
        yes_count = 0
        stop_reason = None
        decision = "No"
        t_model = 0.0

        with (
            torch.inference_mode(),
            record_attention_stats(self.model, self._layers) as rec,
        ):

            def append(p, cache):
                nonlocal tokens_run
                ids = self.node_token_ids(p)
                cache, _ = self._forward(ids, cache)
                sums = rec.pop()[0]
                tokens_run += len(ids)
                att = float(sums[qs:qe].double().sum()) / (len(ids) * n_q)
                raw_att[p] = att
                visited.append(p)
                visited_mask[p] = True
                a[p] = att * (len(visited) + 1)  # question = position 1
                return cache

            def decide(cache):
                nonlocal tokens_run
                with rec.paused():
                    base = cache.get_seq_length()
                    cache, logits = self._forward(suffix, cache)
                    tokens_run += len(suffix)
                    m = self._margin(logits)
                    _crop(cache, base)
                return m

            def rebuild():
                # reencode baseline: the whole prompt so far, from scratch, without recording
                nonlocal tokens_run
                ids = list(prefix)
                for p in visited:
                    ids += self.node_token_ids(p)
                with rec.paused():
                    cache, _ = self._forward(ids, None)
                tokens_run += len(ids)
                return cache

            tm = time.perf_counter()
            with rec.paused():
                cache, _ = self._forward(prefix, None)
            tokens_run += len(prefix)
            prompt_tokens = len(prefix)
            for p in g.top:
                cache = append(int(p), cache)
                prompt_tokens += len(self.node_token_ids(int(p)))
            step = 0
            node_entry = {"node": None, "nodes": [g.ids[p] for p in visited], "level": None}
            for p in visited:
                scores[p] = 1.0
            while True:
                margin = decide(cache)
                decision = "Yes" if margin > 0 else "No"
                entry = {"step": step, **node_entry}
                if step == 0:
                    entry["attention"] = [raw_att[p] for p in visited]
                entry.update(
                    margin=margin,
                    decision=decision,
                    prompt_tokens=prompt_tokens + len(suffix),
                    tokens_run=tokens_run,
                )
                trace.append(entry)
                if decision == "Yes":
                    yes_count += 1
                    if yes_count >= patience:
                        stop_reason = STOP_YES
                        break
                # next node: z = E^T a and the similarity, each normalized over unvisited nodes
                z = np.asarray(g.edges.T @ a, dtype=np.float64).reshape(-1)
                free = ~visited_mask
                if not free.any():
                    stop_reason = STOP_EMPTY
                    break
                zf = np.where(free, np.clip(z, 0.0, None), 0.0)
                sf = np.where(free, sim, 0.0)
                zs, ss = zf.sum(), sf.sum()
                zn = zf / zs if zs > 0 else zf
                sn = sf / ss if ss > 0 else sf
                total = (1.0 - alpha) * zn + alpha * sn
                total[~free] = -1.0
                best = int(np.argmax(total))
                if total[best] <= 0:
                    stop_reason = STOP_EMPTY
                    break
                n_new = len(self.node_token_ids(best))
                if prompt_tokens + n_new + len(suffix) > limit:
                    stop_reason = STOP_MAX_TOKENS
                    break
                step += 1
                if reencode:
                    cache = rebuild()
                cache = append(best, cache)
                prompt_tokens += n_new
                scores[best] = float(total[best])
                node_entry = {
                    "node": g.ids[best],
                    "level": int(g.levels[best]),
                    "score": float(total[best]),
                    "z": float(zn[best]),
                    "similarity": float(sn[best]),
                    "attention": raw_att[best],
                    "weighted_attention": float(a[best]),
                }
            timings["search"] = time.perf_counter() - tm
            t_model = time.perf_counter()
            answer_text = None
            answer_ids: list[int] = []
            if answer:
                ids2 = self._second_turn_ids(decision)
                with rec.paused():
                    answer_ids = self._generate(cache, ids2, max_new)
                answer_text = self.tokenizer.decode(answer_ids, skip_special_tokens=True).strip()
            timings["answer"] = time.perf_counter() - t_model
        timings["total"] = time.perf_counter() - t0

        hits = self._hits(visited, scores)
        visited_nodes = [
            {
                "id": g.ids[p],
                "level": int(g.levels[p]),
                "text": g.texts[p],
                "score": scores[p],
                "position": i + 2,
                "attention": raw_att[p],
            }
            for i, p in enumerate(visited)
        ]
        info = {
            "answer": answer_text,
            "stop_reason": stop_reason,
            "visited": [g.ids[p] for p in visited],
            "visited_nodes": visited_nodes,
            "tokens_run": tokens_run,
            "final_prompt_tokens": prompt_tokens + len(suffix),
            "answer_tokens": len(answer_ids),
            "steps": len(trace),
            "reencode": bool(reencode),
        }
        return SearchResult(
            hits=hits,
            method=self.method,
            mode="reencode" if reencode else "cached",
            timings=timings,
            budget={"max_context_tokens": limit, "stop_patience": patience},
            trace=tuple(trace),
            info=info,
        )

    def source_positions(self) -> dict:
        """Source document -> int position (ints kept as they are; ids in order of appearance)."""
        out: dict = {}
        for s in self.graph.sources:
            if s not in out:
                out[s] = s if isinstance(s, (int, np.integer)) else len(out)
        return out

    def reached_chunks(self, visited_ids: Sequence) -> list[int]:
        """Graph positions of the level-1 chunks reached from the visited nodes, in visit order.

        A visited chunk counts itself; a visited information point counts its level-1
        descendants through the HWDAG's edges, depth first, heavier edges first. The search
        often stops on information points (the LLM says it has enough after reading the top
        level), so this is how its result maps back to source text.

        Parameters
        ----------
        visited_ids : sequence
            Node ids in visit order (``result.info["visited"]``).

        Returns
        -------
        list of int
            Positions into the graph's arrays; each chunk once, chunks with no source span
            (``start < 0``) left out.
        """
        return self._reach(visited_ids)[0]

    def _reach(self, visited_ids: Sequence) -> tuple[list[int], dict[int, int | None]]:
        """:meth:`reached_chunks` and, for every node the depth-first walk took, the node it
        came from (``None`` for a visited node it started from)."""
        g = self.graph
        pos = {nid: p for p, nid in enumerate(g.ids)}
        chunks: list[int] = []
        came_from: dict[int, int | None] = {}
        for nid in visited_ids:
            if nid not in pos:
                raise ValueError(f"visited_ids: {nid!r} is not a node of this graph")
            stack: list[tuple[int, int | None]] = [(pos[nid], None)]
            while stack:
                p, pred = stack.pop()
                if p in came_from:
                    continue
                came_from[p] = pred
                if g.levels[p] == 1:
                    if g.starts[p] >= 0:
                        chunks.append(p)
                    continue
                lo, hi = g.edges.indptr[p], g.edges.indptr[p + 1]
                kids, w = g.edges.indices[lo:hi], g.edges.data[lo:hi]
                stack.extend((int(kids[i]), p) for i in np.argsort(w, kind="stable"))
        return chunks, came_from

    def reached_passages(self, result: SearchResult) -> tuple[Passage, ...]:
        """The level-1 chunks reached from ``result``'s visited nodes (:meth:`reached_chunks`)
        as passages of the source text, in document order; ``score`` is ``1 - rank / n`` by
        reach order (the first reached chunk scores 1).

        When ``result`` was searched with ``explain=True`` (``info["explanations"]``), each
        passage gets an ``explanation`` (:func:`longctx.garlic.explain.explain_reached`): the
        visited node it was reached from, that node's path from the top level and the edges
        down to the chunk, and where the search stopped."""
        g = self.graph
        src_pos = self.source_positions()
        chunk_index = self._chunk_index()
        order, came_from = self._reach(result.info.get("visited", ()))
        nodes = result.info.get("explanations")
        n = max(1, len(order))
        out = []
        for rank, p in enumerate(order):
            why = None
            if nodes is not None:
                down, via = [], p
                while came_from[via] is not None:
                    down.append(via)
                    via = came_from[via]
                why = explain_reached(self, 1.0 - rank / n, via, down[::-1], nodes)
            out.append(
                Passage(
                    start=int(g.starts[p]),
                    end=int(g.ends[p]),
                    text=g.texts[p],
                    score=1.0 - rank / n,
                    index=chunk_index[p],
                    source=int(src_pos[g.sources[p]]),
                    explanation=why,
                )
            )
        out.sort(key=lambda h: (h.source, h.start))
        return tuple(out)

    def _hits(self, visited: Sequence[int], scores: Mapping[int, float]) -> tuple[Passage, ...]:
        g = self.graph
        src_pos = self.source_positions()
        chunk_index = self._chunk_index()
        out = []
        for p in visited:
            if g.levels[p] != 1 or g.starts[p] < 0:
                continue
            out.append(
                Passage(
                    start=int(g.starts[p]),
                    end=int(g.ends[p]),
                    text=g.texts[p],
                    score=float(scores[p]),
                    index=chunk_index[p],
                    source=int(src_pos[g.sources[p]]),
                )
            )
        out.sort(key=lambda h: (h.source, h.start))
        return tuple(out)

    def _chunk_index(self) -> dict[int, int]:
        ci = getattr(self, "_chunk_index_cache", None)
        if ci is None:
            g = self.graph
            by_src: dict = {}
            for p in np.flatnonzero(g.levels == 1):
                by_src.setdefault(g.sources[p], []).append(int(p))
            ci = {}
            for ps in by_src.values():
                for i, p in enumerate(sorted(ps, key=lambda p: g.starts[p])):
                    ci[p] = i
            self._chunk_index_cache = ci
        return ci


def _crop(cache, length: int) -> None:
    extra = cache.get_seq_length() - length
    if extra > 0:
        cache.crop(-extra)
    if cache.get_seq_length() != length:
        raise RuntimeError("could not crop the KV cache back")
