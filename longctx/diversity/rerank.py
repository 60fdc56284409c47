"""MMR / FPS over another method's scored units (``longctx retrieve --diversify``).

Source: Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an LLM's Performance in RAG and
Long-context Task", 2025, arXiv:2502.09017 (https://arxiv.org/abs/2502.09017), sec. 2.1 (MMR
eq. 1, FPS eq. 2), with the method's scores as rewards. Re-ranking only a pool of the best-scored
candidates is the usual way to apply MMR (Carbonell and Goldstein, "The Use of MMR,
Diversity-Based Reranking for Reordering Documents and Producing Summaries", SIGIR 1998,
https://doi.org/10.1145/290941.291025): a unit far down the method's ranking has a reward near 0
and is never worth its diversity, and embedding every unit of a book (50,000 MixPR chunks of War
and Peace) would cost minutes of MiniLM on a CPU.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from longctx.checks import check_int
from longctx.diversity.index import DiversityIndex
from longctx.diversity.inputs import as_token_counts, as_vector
from longctx.selection import check_budget_fits, check_size
from longctx.types import Passage, SearchResult

logger = logging.getLogger(__name__)

DEFAULT_POOL = 10
#: Share of the selection (units for ``k``, tokens for ``token_budget``) taken from the method's
#: own best units before MMR / FPS re-selects the rest (:func:`rerank_select`).
DEFAULT_KEEP = 0.5


def candidate_pool(scores, token_counts, *, k=None, token_budget=None, pool=DEFAULT_POOL):
    """Indices of the best-scored units that MMR / FPS re-rank.

    Parameters
    ----------
    scores : (n,) float
        The method's scores (higher is better).
    token_counts : (n,) int
        Tokens per unit (for ``token_budget``).
    k, token_budget : int >= 1, exactly one of them
        The final selection's size (units or tokens).
    pool : int >= 1, default 10
        How much larger than the selection the pool is: the ``pool * k`` best units, or the best
        units until they hold ``pool * token_budget`` tokens.

    Returns
    -------
    (m,) int64
        Unit indices, best score first (ties: the earlier unit); all units when they are fewer.
    """
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    if k is not None:
        return order[: pool * k]
    counts = np.asarray(token_counts, dtype=np.int64)[order]
    m = int(np.searchsorted(np.cumsum(counts), pool * token_budget, side="left")) + 1
    return order[:m]


def kept_units(scores, token_counts, *, k=None, token_budget=None, keep=DEFAULT_KEEP):
    """The method's best units that the diversity step keeps as they are: the best
    ``ceil(keep * k)`` units, or the best units in score order while they fit in
    ``floor(keep * token_budget)`` tokens (a unit that does not fit is skipped, as in
    :func:`longctx.selection.select_top`).

    Returns
    -------
    (m,) int64 unit indices, best score first.
    """
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    if keep <= 0 or not len(order):
        return order[:0]
    if k is not None:
        return order[: int(np.ceil(keep * k))]
    counts = np.asarray(token_counts, dtype=np.int64)
    room = int(keep * token_budget)
    out = []
    for i in order.tolist():
        if room <= 0:
            break
        if counts[i] <= room:
            out.append(i)
            room -= int(counts[i])
    return np.asarray(out, dtype=np.int64)


def rerank_select(
    embeddings,
    scores,
    token_counts=None,
    *,
    k: int | None = None,
    token_budget: int | None = None,
    method: str = "mmr",
    lambda_: float = 0.5,
    window: int | None = None,
    keep: float = DEFAULT_KEEP,
) -> list[int]:
    """MMR / FPS over a method's scored units that keeps what the method found first.

    The method's best units filling ``keep`` of the selection (:func:`kept_units`) are selected
    as they are; MMR (eq. 1) or FPS (eq. 2) then fills the rest, its diversity term measured
    against every selected unit, kept ones included, with the method's scores min-max rescaled
    to [0, 1] as rewards. Plain MMR over PageRank rewards (``keep=0``) drops the second
    supporting fact of a two-hop question when it resembles the first (bAbI qa2 1.00 -> 0.00 in
    ``longctx bench``) and SQuAD answers for near-duplicate context (0.92 -> 0.77 at 5%); the
    kept half holds them (``docs/notes/mixpr-recall.md``). Implemented with the existing
    greedy: kept units get rewards above what any other unit's objective can reach, so they
    are picked first and then count in the diversity term.

    Parameters
    ----------
    embeddings : (n_units, dim) float array
    scores : (n_units,) float
        The method's scores (higher is better).
    token_counts : (n_units,) int, required with ``token_budget``
    k, token_budget : int >= 1, exactly one
    method : {"mmr", "fps"}
    lambda_ : float in (0, 1] when ``keep > 0``, else [0, 1]
    window : int >= 1, optional
    keep : float in [0, 1], default 0.5
        ``0`` is plain MMR / FPS with the scores as rewards; ``1`` is the method's own top-k.

    Returns
    -------
    list of int: unit indices in selection order (kept units first).

    Raises
    ------
    TypeError, ValueError
        Bad arguments, named (``keep``, ``lambda_``, ``scores``...).
    """
    from longctx.checks import check_float
    from longctx.diversity.greedy import fps_select, mmr_select
    from longctx.diversity.objective import rescale

    keep = check_float(keep, "keep", low=0.0, high=1.0)
    lambda_ = check_float(lambda_, "lambda_", low=0.0, high=1.0)
    if method not in ("mmr", "fps"):
        raise ValueError(f"method must be 'mmr' or 'fps', got {method!r}")
    if keep > 0 and lambda_ == 0:
        raise ValueError("keep > 0 needs lambda_ > 0 (lambda_=0 ignores the rewards)")
    emb = np.asarray(embeddings)
    scores = as_vector(scores, "scores", emb.shape[0] if emb.ndim == 2 else -1)
    if token_budget is not None:
        token_counts = as_token_counts(token_counts, len(scores))
    kept = kept_units(scores, token_counts, k=k, token_budget=token_budget, keep=keep)
    rewards = rescale(scores) if len(scores) else scores
    if len(kept):
        # above anything another unit can reach: MMR <= lambda_, FPS <= lambda_ + 2 (1 - lambda_)
        rewards = rewards.copy()
        rewards[kept] = 1.0 + 3.0 / lambda_ + rewards[kept]
    fn = mmr_select if method == "mmr" else fps_select
    return fn(
        emb,
        rewards,
        token_counts,
        token_budget,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=False,
    )


def rerank(
    text: str,
    spans,
    scores,
    token_counts,
    *,
    encoder=None,
    k: int | None = None,
    token_budget: int | None = None,
    method: str = "mmr",
    lambda_: float = 0.5,
    window: int | None = None,
    pool: int = DEFAULT_POOL,
    progress: bool = False,
    method_name: str = "diversify",
    keep: float = DEFAULT_KEEP,
) -> SearchResult:
    """Select diverse units among another method's best-scored ones, its scores as rewards.

    Parameters
    ----------
    text : str
        The document.
    spans : sequence of (start, end)
        The method's units: character offsets into ``text``.
    scores : (n_units,) float
        The method's scores (PageRank probabilities, reaction scores...): min-max rescaled to
        [0, 1] over the pool as rewards.
    token_counts : (n_units,) int
        Tokens per unit, in the unit of ``token_budget``.
    encoder : optional
        Anything :func:`longctx.embeddings.get_encoder` accepts (default all-MiniLM-L6-v2).
    k, token_budget : int >= 1, at most one (default ``k=10``)
    method : {"mmr", "fps"}
    lambda_ : float in [0, 1]
        Weight of the reward against diversity (eq. 1).
    window : int >= 1, optional
        Compare only with the last ``window`` selected units.
    pool : int >= 1, default 10
        Only the best-scored units re-ranked (:func:`candidate_pool`) are embedded.
    progress : bool
        A tqdm bar while the pool is embedded.
    method_name : str
        ``SearchResult.method``.
    keep : float in [0, 1], default 0.5
        Share of the selection taken from the method's best units as they are before the
        diversity step fills the rest (:func:`rerank_select`); ``0``: plain MMR / FPS.

    Returns
    -------
    SearchResult
        Hits in document order; ``score`` the method's original score, ``index`` the unit's
        position in ``spans``; ``timings`` ``pool``, ``embed`` and ``select``; ``info``
        ``{"pool": m, "units": n}``.

    Raises
    ------
    TypeError, ValueError
        Bad sizes, ``pool``, or ``scores`` / ``token_counts`` not matching ``spans`` (named).
    longctx.selection.BudgetTooSmallError
        If ``token_budget`` is smaller than every unit.
    """
    spans = [(int(a), int(b)) for a, b in spans]
    n = len(spans)
    scores = as_vector(scores, "scores", n)
    counts = as_token_counts(token_counts, n)
    pool = check_int(pool, "pool", minimum=1)
    k, token_budget = check_size(k, token_budget, default_k=10)
    if token_budget is not None:
        check_budget_fits(token_budget, counts)
    if not n:
        return SearchResult((), method_name, "rewards", {}, {})
    t0 = time.perf_counter()
    idx = candidate_pool(scores, counts, k=k, token_budget=token_budget, pool=pool)
    t_pool = time.perf_counter() - t0
    logger.info("diversify: re-ranking the best %d of %d units", len(idx), n)
    t0 = time.perf_counter()
    index = DiversityIndex.from_units(
        [text],
        [[spans[i] for i in idx.tolist()]],
        encoder,
        token_counts=counts[idx],
        progress=progress,
    )
    t_embed = time.perf_counter() - t0
    size = {"k": k} if token_budget is None else {"token_budget": token_budget}
    t0 = time.perf_counter()
    picked = rerank_select(
        index.embeddings,
        scores[idx],
        counts[idx],
        method=method,
        lambda_=lambda_,
        window=window,
        keep=keep,
        **size,
    )
    t_select = time.perf_counter() - t0
    hits = tuple(
        sorted(
            (
                Passage(
                    spans[idx[j]][0],
                    spans[idx[j]][1],
                    text[spans[idx[j]][0] : spans[idx[j]][1]],
                    float(scores[idx[j]]),
                    int(idx[j]),
                    0,
                )
                for j in picked
            ),
            key=lambda p: p.start,
        )
    )
    timings = {"pool": t_pool, "embed": t_embed, "select": t_select}
    budget = dict(size)
    if token_budget is not None:
        budget["unit"] = "tokens"
    return SearchResult(
        hits, method_name, "rewards", timings, budget, info={"pool": len(idx), "units": n}
    )
