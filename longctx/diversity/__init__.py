"""Diversity-aware selection: MMR and FPS with a recent-selection window.

Source: Wang, Bi, Luo, Asur and Cheng, "Diversity Enhances an LLM's Performance in RAG and
Long-context Task", 2025, arXiv:2502.09017 (https://arxiv.org/abs/2502.09017): sec. 2.1 eq. 1
(MMR), eq. 2 (FPS), sec. 2.2 (summarization mode: the mean chunk embedding stands in for the
query) and sec. 3.1 (compression ratio, ordering of the selected sentences: "index sort", "sort"
and "m:n").

Where things are
----------------
* :mod:`~longctx.diversity.objective`: the rules (rewards, eq. 1 and eq. 2), written once and used
  by every path below.
* :mod:`~longctx.diversity.greedy`: :func:`mmr_select` / :func:`fps_select`, which run the
  :mod:`~longctx.diversity.lazy` exact lazy greedy (``window=None``) or the
  :mod:`~longctx.diversity.dense` loop (finite windows).
* :mod:`~longctx.diversity.reference`: :func:`reference_select`, a naive loop (tests, benchmarks).
* :mod:`~longctx.diversity.ordering`: :func:`order_selection`.
* :mod:`~longctx.diversity.index`: :class:`DiversityIndex` (sentence embeddings of a corpus
  computed once, saved with the index; MMR / FPS per query), saved and loaded by
  :mod:`~longctx.diversity.persist`; :mod:`~longctx.diversity.oneoff`: :func:`diversify` (one-off).
* :mod:`~longctx.diversity.rerank`: :func:`rerank`, MMR / FPS over another method's best-scored
  units (its scores as rewards; ``--diversify``).
* :mod:`~longctx.diversity.prepare`: :func:`~longctx.diversity.prepare.prepare`, the checks of a
  selection's arguments and its rewards; :mod:`~longctx.diversity.inputs` (the lowest module: array
  checks), :mod:`~longctx.diversity.blas`: BLAS threads.

Selection rules shared by every path
------------------------------------
* Budget: an item that does not fit in the tokens left is skipped and never reconsidered (the
  budget only shrinks); selection goes on while some remaining item fits, so the budget is never
  exceeded. Selection also stops after ``k`` items when ``k`` is given.
* Ties: the lowest index wins (``numpy.argmax``), so results are deterministic. Only values equal
  in floating point tie: two copies of one sentence get float32 cosines that can differ in the
  last bit depending on the code path, so which copy is picked first is not guaranteed.
* Similarities are float32: candidates whose objectives differ by less than ~1e-7 may be ordered
  differently by the code paths (the result is the same within float32 precision). FPS distances
  of near-duplicates (cosine near 1) magnify that rounding through ``sqrt(2 - 2 cos)``, to ~1e-5
  for distances ~1e-3.

Cost: ``window=None`` runs the exact lazy greedy (100k MiniLM sentences, 5% token budget: 1.6 s at
lambda 0.5 on this project's 2-core CPU); finite windows one matrix-vector product per pick
(see the two modules).
"""

from __future__ import annotations

from longctx.diversity.greedy import fps_select, mmr_select
from longctx.diversity.index import DiversityIndex
from longctx.diversity.objective import METHODS, compute_rewards
from longctx.diversity.oneoff import diversify
from longctx.diversity.ordering import order_selection
from longctx.diversity.reference import reference_select
from longctx.diversity.rerank import rerank

__all__ = [
    "mmr_select",
    "fps_select",
    "reference_select",
    "compute_rewards",
    "order_selection",
    "diversify",
    "rerank",
    "DiversityIndex",
    "METHODS",
]
