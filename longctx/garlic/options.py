"""The settings of a GARLIC HWDAG build, checked without a model or a text
(:func:`check_build_options`): what :func:`longctx.garlic.build_hwdag` checks first, and what a
corpus build (:func:`longctx.corpus.build_indexes`) checks before it records its options; and the
settings of its Dynamic Graph Search (:func:`check_search_settings`, sec. 3.2), the one place
their bounds live: :class:`longctx.garlic.search.GarlicSearcher`, LlamaIndex's ``GarlicIndex``
(given or loaded from a store) and LangChain's ``GarlicRetriever`` all check them here.

Wang, Xiang, Gui & He, "GARLIC: LLM-Guided Dynamic Progress Control with Hierarchical Weighted
Graph for Long Document QA", 2024, arXiv:2410.04790, sec. 3.1.
"""

from __future__ import annotations

from collections.abc import Callable

from longctx.checks import check_float, check_int

__all__ = ["SEARCH_DEFAULTS", "SEARCH_SETTINGS_MAX", "check_build_options",
           "check_search_settings"]  # fmt: skip

#: The search settings of a GARLIC Dynamic Graph Search with their defaults
#: (:class:`longctx.garlic.search.GarlicSearcher`'s).
SEARCH_DEFAULTS = {"alpha": 0.5, "stop_patience": 1, "max_context_tokens": None,
                   "max_new_tokens": 64}  # fmt: skip
#: Largest integer search settings accepted (a setting may come from a saved store, untrusted:
#: no search of a billion tokens; what a constructor takes, a load takes back).
SEARCH_SETTINGS_MAX = {
    "stop_patience": 1_000_000,
    "max_context_tokens": 2**31 - 1,
    "max_new_tokens": 2**20,
}


def check_search_settings(settings: dict) -> dict:
    """``settings`` (any of :data:`SEARCH_DEFAULTS`' keys) checked: ``alpha`` a float in
    ``[0, 1]``, the integers (``stop_patience``, ``max_context_tokens`` (or ``None``),
    ``max_new_tokens``, in tokens) within ``[1, SEARCH_SETTINGS_MAX[name]]``.

    Returns
    -------
    dict
        The settings checked (``alpha`` a float); keys not given stay absent.

    Raises
    ------
    TypeError, ValueError
        A bad value, naming the setting (``"stop_patience must be <= 1000000, got ..."``); an
        unknown key (a ``TypeError`` naming it).
    """
    unknown = sorted(str(k)[:40] for k in set(settings) - set(SEARCH_DEFAULTS))
    if unknown:
        raise TypeError(
            f"unknown GARLIC search settings {unknown[:5]}; known: {list(SEARCH_DEFAULTS)}"
        )
    out = dict(settings)
    if "alpha" in out:
        out["alpha"] = check_float(out["alpha"], "alpha", low=0.0, high=1.0)
    for name, top in SEARCH_SETTINGS_MAX.items():
        if name in out:
            out[name] = check_int(out[name], name, minimum=1, maximum=top,
                                  allow_none=name == "max_context_tokens")  # fmt: skip
    return out


def check_build_options(
    *,
    chunk_tokens: int = 300,
    batch_tokens: int = 6000,
    max_new_tokens: int = 1024,
    max_levels: int = 10,
    layers="all",
    batch_size: int | None = None,
    force_bullets: bool = True,
    prompt_lookup_num_tokens: int | None = None,
    logits_processor: Callable | None = None,
    on_batch: Callable | None = None,
) -> dict:
    """The settings of :func:`build_hwdag` checked without a model or a text (what a corpus
    build checks before it records its options): every value typed and in range.

    Returns
    -------
    dict
        The settings, ``prompt_lookup_num_tokens`` resolved (``None`` -> its default).

    Raises
    ------
    TypeError, ValueError
        A bad value, naming the argument (``chunk_tokens`` > ``batch_tokens`` included). The
        model's window (``batch_tokens + max_new_tokens`` must fit) is checked by the build.
    """
    from longctx.attention import check_layers_spec
    from longctx.garlic.decode import check_batch_size, check_prompt_lookup

    chunk_tokens = check_int(chunk_tokens, "chunk_tokens", minimum=1)
    batch_tokens = check_int(batch_tokens, "batch_tokens", minimum=1)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", minimum=1)
    max_levels = check_int(max_levels, "max_levels", minimum=2)
    if batch_size is not None:
        check_batch_size(batch_size)
    prompt_lookup_num_tokens = check_prompt_lookup(prompt_lookup_num_tokens)
    if not isinstance(force_bullets, bool):
        raise TypeError(f"force_bullets must be True or False, got {force_bullets!r}")
    check_layers_spec(layers)
    if chunk_tokens > batch_tokens:
        raise ValueError(f"chunk_tokens ({chunk_tokens}) must be <= batch_tokens ({batch_tokens})")
    for name, f in (("logits_processor", logits_processor), ("on_batch", on_batch)):
        if f is not None and not callable(f):
            raise TypeError(f"{name} must be callable, got {type(f).__name__}")
    return {
        "chunk_tokens": chunk_tokens,
        "batch_tokens": batch_tokens,
        "max_new_tokens": max_new_tokens,
        "max_levels": max_levels,
        "layers": layers,
        "batch_size": batch_size,
        "force_bullets": force_bullets,
        "prompt_lookup_num_tokens": prompt_lookup_num_tokens,
        "logits_processor": logits_processor,
        "on_batch": on_batch,
    }
