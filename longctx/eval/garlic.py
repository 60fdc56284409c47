"""``garlic`` in ``longctx bench``: :class:`GarlicMethod`, GARLIC's HWDAG search filling the token
budget (a module of its own: it builds on :mod:`longctx.eval.methods`)."""

from __future__ import annotations

import hashlib
import time

import numpy as np

from longctx.eval.methods import GLOBAL_QUERY, Context, Doc, Method


class GarlicMethod(Method):
    """GARLIC (Wang, Xiang, Gui, He, "GARLIC: LLM-Guided Dynamic Progress Control with
    Hierarchical Weighted Graph for Long Document QA", 2024, arXiv:2410.04790): the HWDAG is
    built once per document (sec. 3.1, :func:`longctx.garlic.build_hwdag`) and every question
    runs Dynamic Graph Search over it (sec. 3.2, :class:`longctx.garlic.GarlicSearcher`, no
    second-turn answer).

    Selection under the token budget: the level-1 chunks reached from the visited nodes, in
    visit order (a visited chunk itself; for a visited IP, its level-1 descendants through the
    graph's edges, heavier edges first), are cut into the run's sentences, which are taken in
    that order (document order inside a chunk) while they fit the budget; the result is in
    document order. A question-free task asks :data:`GLOBAL_QUERY`.

    The build runs the LLM over the whole document, so documents above ``max_doc_tokens`` are
    skipped, with the reason in the results. The documents of a task are built together in
    :meth:`prepare` (:func:`longctx.garlic.build_hwdags`: their summarization prompts share
    decoding passes, ``batch_size`` rows each), which is several times faster on a CPU than one
    after another. Graphs are kept under
    ``<cache_dir>/garlic/<sha256 of document and settings>`` (reruns load them).

    Options (``Context.options["garlic"]``): ``model`` and ``tokenizer`` (default the packaged
    SmolLM2-135M-Instruct), ``encoder`` (default the run's sentence encoder), ``max_doc_tokens``
    (default 20000), ``build`` (keyword arguments of ``build_hwdag``; default
    ``max_new_tokens=160``; ``force_bullets`` and ``batch_size`` too), ``search`` (keyword
    arguments of ``GarlicSearcher``).
    """

    name = "garlic"
    needs_encoder = True
    corpus_skip = "builds one document's graph with the LLM: no corpus index"
    MAX_DOC_TOKENS = 20_000
    _shared: dict = {}

    def __init__(self):
        self._prepared: dict = {}  # document text -> graph built by prepare()

    def _opts(self, ctx: Context) -> dict:
        return ctx.options.get("garlic", {})

    def skip_reason(self, ctx, n_tokens):
        limit = int(self._opts(ctx).get("max_doc_tokens", self.MAX_DOC_TOKENS))
        if n_tokens > limit:
            return (
                f"document of {n_tokens} tokens > max_doc_tokens={limit}: the HWDAG build "
                "(LLM summaries of every chunk) is impractical on this hardware"
            )
        return None

    def _model(self, ctx: Context):
        opts = self._opts(ctx)
        if opts.get("model") is not None:
            return opts["model"], opts["tokenizer"]
        if "model" not in GarlicMethod._shared:
            from longctx.models import load_causal_lm

            GarlicMethod._shared["model"] = load_causal_lm(None)
        return GarlicMethod._shared["model"]

    def _build_settings(self, ctx: Context):
        opts = self._opts(ctx)
        model, tok = self._model(ctx)
        encoder = opts.get("encoder") or ctx.encoder
        build_kw = {"max_new_tokens": 160, **opts.get("build", {})}
        return model, tok, encoder, build_kw

    def _out_dir(self, ctx: Context, text: str, model, encoder, build_kw):
        import json
        from pathlib import Path

        if ctx.cache_dir is None:
            return None
        cfg = getattr(model, "config", None)
        ident = {
            "model": [
                type(model).__name__,
                getattr(cfg, "_name_or_path", ""),
                getattr(cfg, "vocab_size", None),
                getattr(cfg, "num_hidden_layers", None),
                getattr(cfg, "hidden_size", None),
            ],
            "encoder": type(encoder).__name__ + str(getattr(encoder, "name", "")),
            "build": {k: v for k, v in build_kw.items() if not callable(v) and k != "batch_size"},
        }
        key = hashlib.sha256(
            (json.dumps(ident, sort_keys=True, default=str) + "\0" + text).encode()
        ).hexdigest()[:20]
        return Path(ctx.cache_dir) / "garlic" / key

    def prepare(self, ctx: Context, texts: list[str]) -> None:
        """Build every document's graph in shared decoding passes
        (:func:`longctx.garlic.build_hwdags`, ``batch_size`` rows per pass), cached like
        :meth:`build`'s (a cached graph is loaded, not rebuilt)."""
        from longctx.garlic import build_hwdags

        texts = [t for t in dict.fromkeys(texts) if t not in self._prepared]
        if len(texts) < 2:
            return
        model, tok, encoder, build_kw = self._build_settings(ctx)
        dirs = [self._out_dir(ctx, t, model, encoder, build_kw) for t in texts]
        graphs = build_hwdags(
            texts,
            model,
            tok,
            out_dirs=dirs if ctx.cache_dir is not None else None,
            encoder=encoder,
            **build_kw,
        )
        for t, g in zip(texts, graphs):
            self._prepared[t] = g

    def build(self, doc: Doc):
        from longctx.garlic import build_hwdag
        from longctx.garlic.search import GarlicSearcher

        opts = self._opts(doc.ctx)
        model, tok, encoder, build_kw = self._build_settings(doc.ctx)
        if doc.text in self._prepared:
            graph = self._prepared.pop(doc.text)
        else:
            out_dir = self._out_dir(doc.ctx, doc.text, model, encoder, build_kw)
            graph = build_hwdag(doc.text, model, tok, out_dir=out_dir, encoder=encoder, **build_kw)
        searcher = GarlicSearcher(graph, model, tok, encoder=encoder, **opts.get("search", {}))
        return doc, searcher

    def _chunk_order(self, searcher, query) -> list[int]:
        """Graph positions of the level-1 chunks reached from the visited nodes, in visit order
        (:meth:`longctx.garlic.search.GarlicSearcher.reached_chunks`)."""
        r = searcher.search(query or GLOBAL_QUERY, answer=False)
        return searcher.reached_chunks(r.info["visited"])

    def _cut(self, doc: Doc, g, chunks: list[int], token_budget: int) -> list[tuple[int, int]]:
        starts = np.asarray([a for a, _ in doc.sentences])
        picked: set[int] = set()
        used = 0
        for p in chunks:
            a, b = int(g.starts[p]), int(g.ends[p])
            lo = max(0, int(np.searchsorted(starts, a, side="right")) - 1)
            for i in range(lo, len(starts)):
                sa, sb = doc.sentences[i]
                if sa >= b:
                    break
                if sb <= a or i in picked:
                    continue
                c = int(doc.counts[i])
                if used + c <= token_budget:
                    picked.add(i)
                    used += c
        return doc.spans(sorted(picked))

    def select(self, state, query, token_budget):
        doc, searcher = state
        return self._cut(doc, searcher.graph, self._chunk_order(searcher, query), token_budget)

    def select_budgets(self, state, query, budgets):
        """One graph search per question (it does not depend on the budget), cut per budget;
        every budget's seconds include the search's."""
        doc, searcher = state
        t0 = time.perf_counter()
        chunks = self._chunk_order(searcher, query)
        search_s = time.perf_counter() - t0
        out = []
        for b in budgets:
            t0 = time.perf_counter()
            spans = self._cut(doc, searcher.graph, chunks, b)
            out.append((spans, search_s + time.perf_counter() - t0))
        return out
