"""MMR and FPS selection: the public entry points, dispatching to the dense or the lazy greedy.

Source: Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an LLM's Performance in RAG and
Long-context Task", 2025, arXiv:2502.09017 (https://arxiv.org/abs/2502.09017), sec. 2.1 eq. 1 (MMR)
and eq. 2 (FPS); the rules are in :mod:`longctx.diversity.objective`.
"""

from __future__ import annotations

from longctx.diversity.blas import blas_thread_count, one_blas_thread
from longctx.diversity.dense import dense_greedy
from longctx.diversity.inputs import max_picks
from longctx.diversity.lazy import lazy_greedy
from longctx.diversity.prepare import prepare

__all__ = ["mmr_select", "fps_select", "greedy", "select"]


def greedy(e, r, counts, budget, k, lambda_, window, metric, projection=None) -> list[int]:
    """Run the selection on prepared inputs (:func:`longctx.diversity.prepare.prepare`).

    ``window=None`` (or a window at least as long as the most items that can be picked): the exact
    lazy greedy (:mod:`longctx.diversity.lazy`); otherwise the dense loop
    (:mod:`longctx.diversity.dense`). Both pick what eq. 1 / eq. 2 pick (up to float32 rounding).
    ``projection``: the lazy greedy's probe projection of ``e``, when the caller keeps one.
    """
    n_max = max_picks(counts, budget, k, e.shape[0])
    if window is not None and window < n_max:
        with one_blas_thread(e.shape[0]):
            return dense_greedy(e, r, counts, budget, k, lambda_, window, metric)
    threads = blas_thread_count() if e.shape[0] >= 512 else None
    with one_blas_thread(e.shape[0]):
        return lazy_greedy(e, r, counts, budget, k, lambda_, metric, n_max, threads, projection)


def select(metric, embeddings, rewards, token_counts, token_budget, **kw) -> list[int]:
    """Check the arguments (:func:`~longctx.diversity.prepare.prepare`), then :func:`greedy`."""
    e, r, counts, budget, k, lambda_, window = prepare(
        embeddings, rewards, token_counts, token_budget, **kw
    )
    return greedy(e, r, counts, budget, k, lambda_, window, metric)


_PARAMS_DOC = """
    Parameters
    ----------
    embeddings : (n, d) array of float
        One embedding per item (sentence or chunk), any encoder; rows are L2-normalized here.
    rewards : (n,) array of float, optional
        The relevance of each item (``r_i``). ``None``: cosine similarity to ``query_embedding``,
        or, without a query, to the mean embedding (summarization mode, sec. 2.2). Given rewards
        are min-max rescaled to ``[0, 1]`` unless ``rescale_rewards=False``.
    token_counts : (n,) array of int >= 0, optional
        Tokens of each item; required with ``token_budget`` or ``ratio``.
    token_budget : int >= 0, optional
        Most tokens the selection may hold (never exceeded).
    query_embedding : (d,) array, optional
        The query, when ``rewards`` is ``None``.
    ratio : float in [0, 1], optional
        Compression ratio ``c_r`` (sec. 3.1): the budget is ``floor(ratio * sum(token_counts))``.
        Alternative to ``token_budget``.
    k : int >= 1, optional
        Most items to select (alone or together with a budget).
    lambda_ : float in [0, 1], default 0.5
        The paper's alpha: weight of the reward against diversity. ``1`` is plain top-by-reward
        selection; ``0`` is pure diversity after a first pick by reward.
    window : int >= 1, optional
        ``w``: diversity is measured against the last ``window`` selected items only; ``None``
        means all selected items.
    rescale_rewards : bool, default True
        Min-max rescale user ``rewards`` to ``[0, 1]`` (cosine rewards are never rescaled).

    Returns
    -------
    list of int
        Indices of the selected items **in selection order** (best first); see
        :func:`order_selection` to reorder them (e.g. back to document order).

    Raises
    ------
    TypeError, ValueError
        On bad shapes or values, naming the argument (``embeddings``, ``rewards``,
        ``token_counts``, ``query_embedding``, ``lambda_``, ``window``, ...), before any work; when
        none of ``token_budget``, ``ratio``, ``k`` is given, or both ``token_budget`` and ``ratio``.
"""


def mmr_select(
    embeddings,
    rewards=None,
    token_counts=None,
    token_budget: int | None = None,
    *,
    query_embedding=None,
    ratio: float | None = None,
    k: int | None = None,
    lambda_: float = 0.5,
    window: int | None = None,
    rescale_rewards: bool = True,
) -> list[int]:
    return select(
        "mmr",
        embeddings,
        rewards,
        token_counts,
        token_budget,
        query_embedding=query_embedding,
        ratio=ratio,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=rescale_rewards,
    )


def fps_select(
    embeddings,
    rewards=None,
    token_counts=None,
    token_budget: int | None = None,
    *,
    query_embedding=None,
    ratio: float | None = None,
    k: int | None = None,
    lambda_: float = 0.5,
    window: int | None = None,
    rescale_rewards: bool = True,
) -> list[int]:
    return select(
        "fps",
        embeddings,
        rewards,
        token_counts,
        token_budget,
        query_embedding=query_embedding,
        ratio=ratio,
        k=k,
        lambda_=lambda_,
        window=window,
        rescale_rewards=rescale_rewards,
    )


mmr_select.__doc__ = (
    "Maximal Marginal Relevance selection with a recent-selection window (paper eq. 1).\n\n"
    "    Picks ``argmax_i lambda_ * r_i - (1 - lambda_) * max_{j in W} cos(i, j)`` until the budget\n"
    "    or ``k`` is reached (module docstring: budget, ties and window rules).\n" + _PARAMS_DOC
)
fps_select.__doc__ = (
    "Farthest Point Sampling with reward and window (paper eq. 2, sec. 2.1).\n\n"
    "    Picks ``argmax_i lambda_ * r_i + (1 - lambda_) * min_{j in W} ||e_i - e_j||`` (normalized\n"
    "    embeddings, distances in [0, 2]); same budget, reward, tie and window rules as\n"
    "    :func:`mmr_select`.\n" + _PARAMS_DOC
)
