"""YOURA over a fixed corpus: :class:`YouraIndex` (build once, query many; save and load)."""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from longctx.checks import check_choice, check_int, check_query
from longctx.explain import check_explain
from longctx.index import RetrievalIndex, check_texts
from longctx.persist.reader import retry_on_concurrent_save
from longctx.selection import check_budget_fits, check_size
from longctx.types import Passage, SearchResult
from longctx.youra.config import DEFAULT_K, DEFAULT_MAX_UNIT_TOKENS, SCORE_SCALES
from longctx.youra.explain import explain_sentence
from longctx.youra.scorer import ReactionScorer, scorer_from
from longctx.youra.spans import _check_sentences, _select, check_max_fraction

logger = logging.getLogger(__name__)


class YouraIndex(RetrievalIndex):
    """YOURA over a fixed corpus: build once, query many.

    :meth:`from_texts` does the query-independent work once (sentence split with
    :func:`longctx.text.split_sentences`, sentence to token alignment, window layout). The model
    work that does not depend on the query (each window's KV cache and baseline column sums) is
    kept in the scorer's window cache under its memory budget (``cache_bytes``): computed on the
    first query that needs it, or now with :meth:`warm`, and recomputed after an eviction.
    :meth:`search` scores every sentence of every text for the query and selects in one global
    greedy pass (module docstring, "Several texts").

    Parameters
    ----------
    texts : str or sequence of str
        The corpus (``Passage.source`` indexes it).
    scorer : ReactionScorer, optional
        The scorer (and model) to use; shared scorers share their window cache. Otherwise one is
        built from ``scorer_kwargs`` (see :class:`ReactionScorer`: ``model``, ``tokenizer``,
        ``baseline`` (default ``"instruction"``), ``layers``, ``max_window``, ``cache_bytes``...).
    max_fraction : float in (0, 1], default 0.8
        With ``token_budget``, at most this fraction of all sentences is selected (sec. 3.3).
    score_scale : {"window", "none"}, optional
        How scores of different texts are put on one scale (module docstring); default
        ``"window"`` with ``normalize="none"`` (raw reactions) and ``"none"`` with
        ``normalize="ratio"`` (ratios are on one scale already).
    sentences : sequence of sequences of (start, end), optional
        Character spans to score, per text, instead of ``split_sentences``'s.
    max_unit_tokens : int >= 1 or None, default ``DEFAULT_MAX_UNIT_TOKENS`` (256)
        ``split_sentences``'s sentences longer than this many model tokens are cut on word
        boundaries into near-equal pieces (:func:`longctx.text.split_long_spans`), so no unit is
        a whole unpunctuated file; ``None`` keeps them whole (they are still cut at window
        edges for scoring). Given ``sentences`` are never cut.

    Raises
    ------
    TypeError, ValueError
        Bad arguments, each named, before any model pass.

    Notes
    -----
    ``search`` changes nothing on the index; the scorer runs model passes one at a time under its
    lock, so concurrent searches (threads, or asyncio tasks through a worker thread) give the
    sequential results.
    """

    method = "youra"
    FORMAT_VERSION = 1

    def __init__(self, texts, scorer: ReactionScorer, layouts, *, max_fraction, score_scale):
        self._texts = tuple(texts)
        self.scorer = scorer
        self._layouts = tuple(layouts)
        self.max_fraction = max_fraction
        self.score_scale = score_scale
        counts = [lay.token_counts for lay in self._layouts]
        self._counts = np.concatenate(counts)
        self._offsets = np.cumsum([0] + [len(c) for c in counts])
        self._scale = np.concatenate(
            [
                np.full(len(c), len(lay.ids) / len(lay.windows) if score_scale == "window" else 1.0)
                for c, lay in zip(counts, self._layouts)
            ]
        )

    @property
    def texts(self) -> tuple[str, ...]:
        return self._texts

    @property
    def n_sentences(self) -> int:
        """Sentences of all texts together."""
        return int(self._offsets[-1])

    @classmethod
    def from_texts(
        cls,
        texts,
        scorer: ReactionScorer | None = None,
        *,
        max_fraction: float = 0.8,
        score_scale: str | None = None,
        sentences=None,
        max_unit_tokens: int | None = DEFAULT_MAX_UNIT_TOKENS,
        **scorer_kwargs,
    ) -> YouraIndex:
        """Build the index (tokenizer work only; see the class docstring)."""
        texts = check_texts(texts)
        max_fraction = check_max_fraction(max_fraction)
        max_unit_tokens = check_int(max_unit_tokens, "max_unit_tokens", minimum=1, allow_none=True)
        if score_scale is not None:
            check_choice(score_scale, "score_scale", SCORE_SCALES)
        if sentences is not None:
            if isinstance(sentences, (str, bytes)) or len(sentences) != len(texts):
                raise ValueError("sentences must hold one list of (start, end) spans per text")
            sentences = [_check_sentences(s, len(t)) for s, t in zip(sentences, texts)]
        if scorer is not None and scorer_kwargs:
            raise ValueError(
                f"give either scorer or scorer options, not both (got {sorted(scorer_kwargs)})"
            )
        scorer = scorer_from(scorer, **scorer_kwargs)
        if score_scale is None:  # ratios are on one scale already; raw reactions are not
            score_scale = "window" if scorer.normalize == "none" else "none"
        layouts = [
            scorer._make_layout(t, None if sentences is None else sentences[i], max_unit_tokens)
            for i, t in enumerate(texts)
        ]
        return cls(texts, scorer, layouts, max_fraction=max_fraction, score_scale=score_scale)

    def warm(self) -> int:
        """Run the context passes of the corpus now, as far as the cache budget allows (the rest
        runs on queries). Returns the number of windows computed."""
        return self.scorer._warm(self._layouts)

    def score_units(self, query: str, *, keep: dict | None = None):
        """Every sentence of every text with its score for ``query``.

        Returns
        -------
        scores : (n_sentences,) float64
            Reaction scores of all texts' sentences, text after text, multiplied by the text's
            mean window length with ``score_scale="window"``.
        info : dict
            Windows, cache hits/misses and seconds of this query (see ``search``'s ``info``).

        ``keep`` (a dict) receives the reaction vectors (``"vectors"``) and the attention before
        and after the query (``"before"``, ``"after"``), per text, for explanations.
        """
        check_query(query, "query")
        self.scorer._query_ids(query)  # a too long query fails before any pass
        vecs, info = self.scorer._vectors(self._layouts, query, keep)
        if keep is not None:
            keep["vectors"] = vecs
        raw = np.concatenate([self.scorer._scores(lay, v) for lay, v in zip(self._layouts, vecs)])
        return raw * self._scale, info

    def units(self, source: int = 0):
        """``(spans, token_counts)`` of one text's sentences: ``[(start, end), ...]`` characters
        and ``(n,) int64`` model tokens (at least 1)."""
        lay = self._layouts[source]
        return list(lay.sentences), lay.token_counts

    def search(
        self,
        query: str,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        max_fraction: float | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """The most reactive sentences of the corpus for ``query`` (sec. 3.3).

        Parameters
        ----------
        query : str
        k : int >= 1, optional
            Sentences to return (default ``DEFAULT_K`` = 10 when no size is given).
        token_budget : int >= 1, optional
            Instead of ``k``: model tokens for all returned sentences together, greedy by score
            (a sentence that does not fit is skipped), at most ``max_fraction`` of the sentences.
        max_fraction : float in (0, 1], optional
            Overrides the index's ``max_fraction`` for this query.
        explain : bool, default False
            Give each hit an ``explanation`` (:func:`longctx.youra.explain.explain_sentence`):
            the window it was read in, the attention its tokens got before and after the
            question, and the parts of its score.

        Returns
        -------
        SearchResult
            ``hits`` in document order (by ``source`` then ``start``), each a sentence with its
            (scaled) score, sentence ``index`` in its text and ``source``; ``mode`` = the
            baseline; ``timings``: ``score`` (all model work), ``context`` / ``query`` (its
            context and query passes), ``select``; ``info``: ``windows``, ``cache_hits``,
            ``cache_misses`` of this query, ``baseline``, ``score_scale``.

        Raises
        ------
        TypeError, ValueError
            Bad ``query`` or size (named), a query longer than ``max_query_tokens``, before any
            model pass.
        """
        check_query(query, "query")
        keep = {} if check_explain(explain) else None
        k, token_budget = check_size(k, token_budget, default_k=DEFAULT_K)
        frac = self.max_fraction if max_fraction is None else check_max_fraction(max_fraction)
        if token_budget is not None:  # before any model pass: no sentence would fit
            check_budget_fits(token_budget, np.maximum(self._counts, 1))
        t = time.perf_counter()
        scores, info = self.score_units(query, keep=keep)
        t_score = time.perf_counter() - t
        t = time.perf_counter()
        chosen = _select(scores, self._counts, k, token_budget, frac)
        hits = []
        for g in chosen.tolist():
            src = int(np.searchsorted(self._offsets, g, side="right")) - 1
            i = g - int(self._offsets[src])
            lay = self._layouts[src]
            a, b = lay.sentences[i]
            why = None
            if keep is not None:  # explain=True: the returned sentences only
                why = explain_sentence(
                    self.scorer, lay, keep["vectors"][src], keep["before"][src],
                    keep["after"][src], i, float(scores[g]), float(self._scale[g]),
                )  # fmt: skip
            hits.append(Passage(a, b, self._texts[src][a:b], float(scores[g]), i, src, why))
        t_select = time.perf_counter() - t
        budget = {"k": k} if k is not None else {"token_budget": token_budget, "unit": "model"}
        return SearchResult(
            hits=tuple(hits),
            method=self.method,
            mode=self.scorer.baseline,
            timings={
                "score": t_score,
                "context": info["context_s"],
                "query": info["query_s"],
                "select": t_select,
            },
            budget=budget,
            info={
                "windows": info["windows"],
                "cache_hits": info["cache_hits"],
                "cache_misses": info["cache_misses"],
                "baseline": self.scorer.baseline,
                "score_scale": self.score_scale,
                "max_fraction": frac,
            },
        )

    # -- persistence ----------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write ``path/``: ``manifest.json``, ``config.json`` (index and scorer options),
        ``texts.json`` and ``sentences.npz`` (``spans (n, 2) int64`` characters, ``offsets
        (n_texts + 1,) int64``, ``token_counts (n,) int64``). The model and the caches are not
        saved."""
        from longctx.persist import write_dir

        spans = np.asarray(
            [s for lay in self._layouts for s in lay.sentences], dtype=np.int64
        ).reshape(-1, 2)
        write_dir(
            path,
            kind="youra",
            version=self.FORMAT_VERSION,
            json_files={
                "config": {
                    "max_fraction": self.max_fraction,
                    "score_scale": self.score_scale,
                    "scorer": self.scorer.config(),
                },
                "texts": list(self._texts),
            },
            arrays={
                "sentences": {
                    "spans": spans,
                    "offsets": self._offsets.astype(np.int64),
                    "token_counts": self._counts,
                }
            },
        )

    @classmethod
    @retry_on_concurrent_save("path")
    def load(
        cls, path: str | os.PathLike, scorer: ReactionScorer | None = None, **scorer_kwargs
    ) -> YouraIndex:
        """Read an index written by :meth:`save`. The model is given as to :meth:`from_texts`
        (``scorer``, or scorer options that override the saved ones); the tokens and windows are
        recomputed with its tokenizer and the caches on the first queries.

        Raises
        ------
        PersistError
            A file is missing, truncated or damaged, written by another format version, or its
            contents do not fit together (the message names the file).
        """
        from longctx.persist import (
            PersistError,
            check_int_array,
            check_token_counts,
            open_index_dir,
        )

        r = open_index_dir(path, kind="youra", versions=(cls.FORMAT_VERSION,))
        d = r.path
        config = r.json("config.json")
        texts = r.json("texts.json")
        arrs = r.arrays("sentences.npz", ["spans", "offsets", "token_counts"])
        if (
            not isinstance(config, dict)
            or not isinstance(config.get("scorer"), dict)
            or "max_fraction" not in config
            or "score_scale" not in config
        ):
            raise PersistError(f"{str(d / 'config.json')!r} lacks the index options")
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise PersistError(f"{str(d / 'texts.json')!r} does not hold a list of texts")
        spans, offsets = arrs["spans"], arrs["offsets"]
        if (
            spans.ndim != 2
            or spans.dtype.kind not in "iu"
            or offsets.dtype.kind not in "iu"
            or spans.shape[1:] != (2,)
            or offsets.shape != (len(texts) + 1,)
            or offsets[0] != 0
            or offsets[-1] != len(spans)
            or np.any(np.diff(offsets) < 1)
        ):
            raise PersistError(
                f"{str(d / 'sentences.npz')!r} does not fit {len(texts)} texts: spans "
                f"{spans.shape}, offsets {offsets.shape}"
            )
        sentences = [
            [tuple(map(int, s)) for s in spans[offsets[i] : offsets[i + 1]]]
            for i in range(len(texts))
        ]
        try:
            sentences = [_check_sentences(s, len(t)) for s, t in zip(sentences, texts)]
        except (TypeError, ValueError) as exc:
            raise PersistError(f"{str(d / 'sentences.npz')!r}: {exc}") from None
        cpath = d / "config.json"
        try:
            check_max_fraction(config["max_fraction"])
            if config["score_scale"] is not None:
                check_choice(config["score_scale"], "score_scale", SCORE_SCALES)
        except (TypeError, ValueError) as exc:
            raise PersistError(f"{str(cpath)!r}: {exc}") from None
        counts = check_int_array(
            arrs["token_counts"], d / "sentences.npz", "token_counts", n=len(spans), minimum=0
        )
        check_token_counts(counts, spans[:, 0], spans[:, 1], d / "sentences.npz")
        saved = _check_scorer_options(config["scorer"], cpath)
        if scorer is None:
            kwargs = {**saved, **scorer_kwargs}
            model = kwargs.pop("model", None)
            try:
                scorer = ReactionScorer(model, **kwargs)
            except (TypeError, ValueError) as exc:
                if set(scorer_kwargs) & set(kwargs):
                    raise
                raise PersistError(f"{str(cpath)!r}: field 'scorer': {exc}") from None
        elif scorer_kwargs:
            raise ValueError("give either scorer or scorer options, not both")
        index = cls.from_texts(
            texts,
            scorer,
            max_fraction=config["max_fraction"],
            score_scale=config["score_scale"],
            sentences=sentences,
        )
        if index._counts.shape != arrs["token_counts"].shape or not np.array_equal(
            index._counts, arrs["token_counts"]
        ):
            logger.warning(
                "the tokenizer given to load %s counts other sentence lengths than the one it "
                "was saved with: token budgets will differ",
                d,
            )
        return index


#: ``ReactionScorer`` options that a saved config may not set (objects, not settings).
_UNSAVED_SCORER_OPTIONS = frozenset({"tokenizer", "device", "dtype", "self"})


def _check_scorer_options(options: dict, path) -> dict:
    """The scorer options of a saved config, checked: known names only (an unknown one is a
    :class:`~longctx.persist.PersistError`, not a ``TypeError``), a model name that is a str."""
    import inspect

    from longctx.persist import PersistError

    known = set(inspect.signature(ReactionScorer.__init__).parameters) - _UNSAVED_SCORER_OPTIONS
    unknown = sorted(set(options) - known)
    if unknown:
        raise PersistError(
            f"{str(path)!r}: field 'scorer' holds unknown option(s) "
            f"{[str(u)[:40] for u in unknown[:5]]}"
        )
    model = options.get("model")
    if model is not None and (not isinstance(model, str) or len(model) > 4096):
        raise PersistError(f"{str(path)!r}: field 'scorer.model' must be a model name or path")
    for key, value in options.items():
        if not (value is None or isinstance(value, (str, int, float, bool, list))):
            raise PersistError(f"{str(path)!r}: field 'scorer.{key}' has a bad type")
    return dict(options)
