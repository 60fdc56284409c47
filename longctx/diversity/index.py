"""Build once, query many: sentence embeddings of a corpus kept (and saved) with an index.

:class:`DiversityIndex` splits the texts into sentences and embeds every sentence once; each
:meth:`~DiversityIndex.search` embeds only the query and runs MMR or FPS over the stored
embeddings (Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an LLM's Performance in RAG and
Long-context Task", 2025, arXiv:2502.09017, https://arxiv.org/abs/2502.09017, sec. 2.1 eq. 1-2,
sec. 2.2 summarization mode, sec. 3.1 ordering). Saved and loaded by
:mod:`~longctx.diversity.persist`; :func:`~longctx.diversity.oneoff.diversify` is the one-off form
of the same code.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

import numpy as np

from longctx.checks import check_choice, check_float, check_int, check_query
from longctx.diversity.blas import one_blas_thread
from longctx.diversity.build import build_units
from longctx.diversity.explain import explain_picks
from longctx.diversity.greedy import greedy
from longctx.diversity.inputs import as_vector
from longctx.diversity.lazy import probe_projection
from longctx.diversity.objective import METHODS, rescale, rewards_from
from longctx.diversity.ordering import check_order, order_selection
from longctx.diversity.persist import load_index, save_index
from longctx.explain import check_explain
from longctx.index import RetrievalIndex, check_texts
from longctx.persist.reader import retry_on_concurrent_save
from longctx.selection import check_budget_fits
from longctx.types import Passage, SearchResult

__all__ = ["DiversityIndex", "UNITS"]

logger = logging.getLogger(__name__)

#: what a unit is: a sentence of a text, or the whole text (a node or document given by the user)
UNITS = ("sentence", "text")


def _frozen(a, dtype) -> np.ndarray:
    view = np.ascontiguousarray(a, dtype=dtype).view()
    view.flags.writeable = False
    return view


class DiversityIndex(RetrievalIndex):
    """Sentence (or text) embeddings of a corpus, computed once; MMR / FPS per query.

    Build with :meth:`from_texts` (sentences of each text, or each text as one unit) or
    :meth:`from_units` (your own spans); :meth:`search` embeds the query only (or nothing, in
    summarization mode) and selects over the stored embeddings. :meth:`save` / :meth:`load`
    persist the embeddings (``.npz``, float32), the units, texts and configuration (JSON) and the
    encoder's identity (name and dimension, checked on load).

    A search never modifies the index: one index can serve many threads or asyncio tasks.

    Attributes
    ----------
    method : str
        ``"diversity"``; each :class:`~longctx.types.SearchResult` says ``"mmr"`` or ``"fps"``.
    embeddings : (n_units, dim) float32, read-only
        L2-normalized rows, in unit order (texts in the order given, units in span order).
    token_counts : (n_units,) int64, read-only
        Tokens per unit, each in ``[1, 4 * characters + 1024]`` (counted or given counts are
        clamped to it, the range a load accepts).
    encoder_identity : dict
        ``{"name": str or None, "dim": int}``.

    Examples
    --------
    >>> index = DiversityIndex.from_texts(book)  # doctest: +SKIP
    >>> index.search("Who did Natasha marry?", token_budget=2000).hits  # doctest: +SKIP
    >>> index.search(k=20)  # summary mode: no query  # doctest: +SKIP
    >>> index.save("war_and_peace.idx"); DiversityIndex.load("war_and_peace.idx")  # doctest: +SKIP
    """

    method = "diversity"

    def __init__(
        self,
        texts: tuple[str, ...],
        source: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        unit_index: np.ndarray,
        embeddings: np.ndarray,
        token_counts: np.ndarray,
        *,
        encoder=None,
        encoder_identity: dict | None = None,
        config: dict | None = None,
    ):
        """Low level: use :meth:`from_texts`, :meth:`from_units` or :meth:`load`."""
        self._texts = tuple(texts)
        # read-only views: the caller's arrays keep their own flags
        self._source, self._start, self._end, self._unit = (
            _frozen(a, np.int64) for a in (source, start, end, unit_index)
        )
        emb = self._emb = _frozen(embeddings, np.float32)
        self._counts = _frozen(token_counts, np.int64)
        self._encoder = encoder
        ident = dict(encoder_identity or {})
        ident["dim"] = int(emb.shape[1])
        self._identity = ident
        self._config = dict(config or {})
        # the lazy greedy's probe projection (query-independent): made once, here, so that a
        # search never writes to the index; the picks do not depend on it
        self._proj = None
        if emb.shape[0] > 2048 and emb.shape[1] > 64:
            with one_blas_thread(emb.shape[0]):  # a busy BLAS pool is far slower
                proj = probe_projection(emb)
            proj.flags.writeable = False
            self._proj = proj

    # -- build -----------------------------------------------------------------------------
    @classmethod
    def from_texts(
        cls,
        texts,
        encoder=None,
        *,
        token_counter: Callable[[str], int] | None = None,
        unit: str = "sentence",
        sentence_backend: str = "auto",
        embeddings=None,
        cache=None,
        batch_size: int = 256,
        progress: bool | None = None,
        max_unit_tokens: int | None = 128,
    ) -> DiversityIndex:
        """Split every text into sentences and embed each sentence once.

        Parameters
        ----------
        texts : str or sequence of str
            The corpus (``Passage.source`` indexes it).
        encoder : optional
            Anything :func:`longctx.embeddings.get_encoder` accepts (default all-MiniLM-L6-v2).
        token_counter : callable str -> int, optional
            Counts the tokens of each unit for ``token_budget`` (default
            :func:`longctx.tokens.count_tokens`); counted once, at build time.
        unit : {"sentence", "text"}
            ``"sentence"``: :func:`longctx.text.split_sentences` of each text; ``"text"``: each
            text is one unit (nodes or documents that are already chunks).
        sentence_backend : str
            Backend of :func:`longctx.text.split_sentences`.
        embeddings : (n_units, dim) array, optional
            Precomputed unit embeddings (then nothing is embedded at build time).
        cache : EmbeddingCache or True, optional
            Reuse vectors of texts embedded before (``True``: the process-wide
            :func:`longctx.embeddings.default_cache`).
        batch_size : int, default 256
            Sentences per encoder call (the progress bar advances per batch).
        progress : bool or None
            tqdm progress bar of the embedding on stderr (``None``: shown on a terminal).
        max_unit_tokens : int >= 1 or None, default 128
            With ``unit="sentence"``, sentences longer than this many tokens (counted with
            ``token_counter``) are cut on word boundaries into near-equal pieces with
            :func:`longctx.text.split_long_spans`, so that a text without punctuation is not one
            huge unit that no budget fits. all-MiniLM-L6-v2 truncates its inputs at 256 word
            pieces anyway, so 128 tokens loses nothing the model would see. ``None`` keeps
            sentences whole. Ignored with ``unit="text"``. Saved with the index.

        Raises
        ------
        TypeError, ValueError
            On bad texts or arguments, before any embedding work.
        """
        from longctx.text import split_long_spans, split_sentences

        texts = check_texts(texts)
        check_choice(unit, "unit", UNITS)
        max_unit_tokens = check_int(max_unit_tokens, "max_unit_tokens", minimum=1, allow_none=True)
        if unit == "text":
            spans = [[(0, len(t))] for t in texts]
            max_unit_tokens = None
        else:
            spans = [split_sentences(t, backend=sentence_backend) for t in texts]
            if max_unit_tokens is not None:
                spans = [
                    split_long_spans(t, row, max_unit_tokens, token_counter)
                    for t, row in zip(texts, spans)
                ]
        return cls.from_units(
            texts,
            spans,
            encoder,
            token_counter=token_counter,
            embeddings=embeddings,
            cache=cache,
            batch_size=batch_size,
            progress=progress,
            _unit=unit,
            _max_unit_tokens=max_unit_tokens,
        )

    @classmethod
    def from_units(
        cls,
        texts,
        spans,
        encoder=None,
        *,
        token_counter: Callable[[str], int] | None = None,
        token_counts=None,
        embeddings=None,
        cache=None,
        batch_size: int = 256,
        progress: bool | None = None,
        _unit: str = "span",
        _max_unit_tokens: int | None = None,
    ) -> DiversityIndex:
        """Like :meth:`from_texts` with your own units: ``spans[s]`` lists the ``(start, end)``
        character spans of the units of ``texts[s]`` (e.g. another method's chunks).

        Parameters
        ----------
        token_counts : (n_units,) array of int >= 0, optional
            Tokens per unit, instead of counting them with ``token_counter``; clamped to
            ``[1, 4 * characters + 1024]`` (a unit costs at least one token of a budget).

        Other parameters as in :meth:`from_texts` (units are used as given: none is cut).
        """
        return build_units(
            cls,
            texts,
            spans,
            encoder,
            token_counter=token_counter,
            token_counts=token_counts,
            embeddings=embeddings,
            cache=cache,
            batch_size=batch_size,
            progress=progress,
            unit=_unit,
            max_unit_tokens=_max_unit_tokens,
        )

    # -- accessors -------------------------------------------------------------------------
    @property
    def texts(self) -> tuple[str, ...]:
        return self._texts

    @property
    def embeddings(self) -> np.ndarray:
        return self._emb

    @property
    def token_counts(self) -> np.ndarray:
        return self._counts

    @property
    def encoder_identity(self) -> dict:
        return dict(self._identity)

    @property
    def max_unit_tokens(self) -> int | None:
        """Most tokens of a sentence before it was cut at build time (``None``: not cut)."""
        return self._config.get("max_unit_tokens")

    def __len__(self) -> int:
        """Number of units (sentences)."""
        return int(self._emb.shape[0])

    def spans(self) -> list[tuple[int, int, int]]:
        """``(source, start, end)`` of every unit, in unit order."""
        return list(zip(self._source.tolist(), self._start.tolist(), self._end.tolist()))

    # -- query -----------------------------------------------------------------------------
    def rewards(self, query: str | None = None, *, query_embedding=None) -> np.ndarray:
        """Every unit's cosine similarity to the query (to the mean unit without one).

        Returns
        -------
        (n_units,) float64 in ``[-1, 1]``, in unit order (the rewards :meth:`search` uses).
        """
        from longctx.diversity.objective import rewards_from

        if query is not None and query_embedding is not None:
            raise ValueError("give query or query_embedding, not both")
        q = None
        if query_embedding is not None:
            q = self._check_query_dim(query_embedding)
        elif query is not None:
            q = self._embed_query(check_query(query, "query"))
        return rewards_from(self._emb, q)

    def _embed_query(self, query: str) -> np.ndarray:
        if self._encoder is None:
            raise ValueError(
                "this index has no encoder to embed the query (built from precomputed "
                f"embeddings or loaded without one; encoder {self._identity.get('name')!r}): "
                "pass encoder= to from_texts / load, or query_embedding= to search"
            )
        return self._check_query_dim(self._encoder.embed_query(query))

    def search(
        self,
        query: str | None = None,
        *,
        k: int | None = None,
        token_budget: int | None = None,
        ratio: float | None = None,
        method: str = "mmr",
        lambda_: float = 0.5,
        window: int | None = None,
        order: str = "document",
        query_embedding=None,
        rewards=None,
        rescale_rewards: bool = True,
        explain: bool = False,
    ) -> SearchResult:
        """Select relevant, diverse units for ``query`` (or for a summary without one).

        Parameters
        ----------
        query : str, optional
            Embedded with the index's encoder (the only model work of a search). ``None`` and no
            ``query_embedding``: summarization mode (reward = similarity to the mean unit,
            paper sec. 2.2).
        k : int >= 1, optional
            Most units to select.
        token_budget : int >= 1, optional
            Most tokens (as counted at build time); never exceeded. With ``k`` too, selection
            stops at whichever limit comes first.
        ratio : float in [0, 1], optional
            Budget as a share of all tokens (paper sec. 3.1), instead of ``token_budget``.
        method : {"mmr", "fps"}
        lambda_ : float in [0, 1], default 0.5
            Weight of relevance against diversity (``1``: plain top-by-similarity).
        window : int >= 1, optional
            Diversity against the last ``window`` picks only (``None``: all picks).
        order : str, default "document"
            :func:`~longctx.diversity.order_selection` strategy of the hits (``"document"``: by
            source then position; ``"score"``: selection order; ``"m:n"``).
        query_embedding : (dim,) array, optional
            The query already embedded (instead of ``query``).
        rewards : (n_units,) array, optional
            Relevance of each unit from elsewhere (a retriever's scores...), instead of the query
            similarity; min-max rescaled unless ``rescale_rewards=False``.
        explain : bool, default False
            Give each hit an ``explanation`` (:mod:`longctx.diversity.explain`): its relevance,
            the redundancy penalty (MMR) or diversity bonus (FPS) it had when picked, and the
            earlier pick that penalty was measured against.

        Returns
        -------
        SearchResult
            ``method`` ``"mmr"`` / ``"fps"``; ``mode`` ``"query"``, ``"summary"`` or
            ``"rewards"``; each hit's ``score`` is its cosine similarity to the query (or the
            mean unit), or its given reward before rescaling; ``index`` the unit's position
            among the units of its source text; ``timings`` ``embed_query`` and ``select``.

        Raises
        ------
        TypeError, ValueError
            On bad arguments (named), before any work; when a query needs embedding and the
            index has no encoder, or the query's dimension differs from the index's.
        longctx.selection.BudgetTooSmallError
            (a ``ValueError``) If the token budget (or ``ratio`` of all tokens) is smaller than
            the shortest unit, before any work.
        """
        t_start = time.perf_counter()
        check_choice(method, "method", METHODS)
        check_order(order)
        check_explain(explain)
        lambda_ = check_float(lambda_, "lambda_", low=0.0, high=1.0)
        window = check_int(window, "window", minimum=1, allow_none=True)
        k = check_int(k, "k", minimum=1, allow_none=True)
        token_budget = check_int(token_budget, "token_budget", minimum=1, allow_none=True)
        ratio = check_float(ratio, "ratio", low=0.0, high=1.0, allow_none=True)
        if k is None and token_budget is None and ratio is None:
            raise ValueError("give k, token_budget or ratio (when to stop selecting)")
        if token_budget is not None and ratio is not None:
            raise ValueError("give at most one of token_budget and ratio")
        if query is not None:
            check_query(query, "query")
        n = len(self)
        if ratio is not None:
            token_budget_eff = int(np.floor(ratio * float(self._counts.sum()) + 1e-9))
        else:
            token_budget_eff = token_budget
        if token_budget_eff is not None and n:  # before embedding the query
            check_budget_fits(max(1, token_budget_eff), self._counts)
        if rewards is not None:
            if query is not None or query_embedding is not None:
                raise ValueError("give rewards or a query (query / query_embedding), not both")
            rewards = as_vector(rewards, "rewards", n)
            if not np.isfinite(rewards).all():
                raise ValueError("rewards must be finite (no NaN or inf)")
        if query is not None and query_embedding is not None:
            raise ValueError("give query or query_embedding, not both")
        mode = "rewards" if rewards is not None else "summary"
        t0 = time.perf_counter()
        q = None
        if query_embedding is not None:
            q = self._check_query_dim(query_embedding)
            mode = "query"
        elif query is not None:
            q = self._embed_query(query)
            mode = "query"
        t_embed = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits: list[Passage] = []
        if n:
            # the stored rows are unit rows and the arguments were checked above: no `prepare`
            if rewards is None:
                r = rewards_from(self._emb, q)
            else:
                r = rescale(rewards) if rescale_rewards else rewards
            picks = greedy(
                self._emb,
                r,
                self._counts,
                token_budget_eff,
                k,
                lambda_,
                window,
                method,
                projection=self._proj,
            )
            shown = rewards if rewards is not None else r
            why = {}
            if explain:  # after the selection, for the picks only
                why = explain_picks(
                    self._emb, r, shown, picks, lambda_, window, method, self._unit_of
                )
            for i in order_selection(picks, None, order):
                s, a, b = int(self._source[i]), int(self._start[i]), int(self._end[i])
                hits.append(
                    Passage(
                        a,
                        b,
                        self._texts[s][a:b],
                        float(shown[i]),
                        int(self._unit[i]),
                        s,
                        why.get(i),
                    )  # fmt: skip
                )
        t_select = time.perf_counter() - t0
        size: dict = {}
        if k is not None:
            size["k"] = k
        if token_budget_eff is not None:
            size["token_budget"] = token_budget_eff
            size["unit"] = self._config.get("token_counter", "tokens")
        if ratio is not None:
            size["ratio"] = ratio
        return SearchResult(
            hits=tuple(hits),
            method=method,
            mode=mode,
            timings={
                "embed_query": t_embed,
                "select": t_select,
                "total": time.perf_counter() - t_start,
            },
            budget=size,
            info={
                "lambda_": lambda_,
                "window": window,
                "order": order,
                "n_units": n,
                "tokens_selected": int(sum(self._counts[self._index_of(h)] for h in hits)),
            },
        )

    def _unit_of(self, i: int) -> dict:
        """Unit ``i`` named for an explanation: source text, position, character offsets."""
        return {
            "unit": i,
            "source": int(self._source[i]),
            "index": int(self._unit[i]),
            "start": int(self._start[i]),
            "end": int(self._end[i]),
        }

    def _index_of(self, hit: Passage) -> int:
        # units of one source are contiguous: position of the source's first unit + unit index
        first = int(np.searchsorted(self._source, hit.source, side="left"))
        return first + hit.index

    def _check_query_dim(self, q) -> np.ndarray:
        try:
            q = np.asarray(q, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"query_embedding must be a 1-D array of numbers: {exc}") from None
        if q.ndim != 1:
            raise ValueError(f"query_embedding must be 1-D, got shape {q.shape}")
        if not np.isfinite(q).all():
            raise ValueError("query_embedding must be finite")
        dim = self._emb.shape[1]
        if q.shape[0] != dim:
            raise ValueError(
                f"the query embedding has dimension {q.shape[0]} but the index's embeddings have "
                f"{dim} (encoder {self._identity.get('name')!r}): embed the query with the "
                "encoder that built the index"
            )
        return q

    # -- persistence -----------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the index to directory ``path`` (replaced if it exists).

        Files: ``manifest.json`` (format ``longctx.diversity`` version 1), ``config.json``
        (encoder name and dimension, unit kind, token counter, ``max_unit_tokens``; an index
        saved without the latter loads as ``None``, as it was built), ``texts.json``, ``units.json``
        (``source``, ``start``, ``end``, ``index``, ``token_counts`` per unit) and
        ``embeddings.npz`` (``embeddings``: ``(n_units, dim) float32``). No pickle.
        """
        save_index(self, path)

    @classmethod
    @retry_on_concurrent_save("path")
    def load(cls, path: str | os.PathLike, encoder=None) -> DiversityIndex:
        """Read an index written by :meth:`save`.

        Parameters
        ----------
        path : str or PathLike
        encoder : optional
            The encoder for queries. ``None``: the saved default encoder (all-MiniLM-L6-v2) or
            sentence-transformers model is used when the index was built with one (loaded on
            the first query); otherwise queries need ``query_embedding``. A given encoder is
            checked now: a different dimension raises, a different name warns.

        Raises
        ------
        PersistError
            A file is missing, truncated, damaged or inconsistent (named), or was written by
            another format version.
        ValueError
            ``encoder`` embeds with another dimension than the saved embeddings.
        """
        return load_index(cls, path, encoder)
