"""The keywords :class:`llamaindex_longctx.GarlicIndex` takes (its constructor, ``from_documents``,
``as_retriever`` and ``as_query_engine``): an unknown one (a misspelt setting such as
``stop_patiance``) is refused with a ``TypeError`` naming it, before any model loads, as
LangChain's pydantic retrievers do; LlamaIndex's own ``BaseIndex`` keywords stay accepted."""

from __future__ import annotations

import inspect

from llama_index.core.indices.base import BaseIndex

from longctx.explain import check_explain
from longctx.garlic.options import SEARCH_DEFAULTS, check_search_settings


def _framework_keywords() -> frozenset:
    """The keywords LlamaIndex's ``BaseIndex.__init__`` and ``BaseIndex.from_documents`` take,
    and those ``from_documents`` passes on to its ``run_transformations`` (then to the
    constructor): read from the installed llama-index-core, so a version that adds one keeps
    working (the very ``run_transformations`` ``BaseIndex``'s module calls; a version without
    one there falls back to the keywords of llama-index-core 0.14, and the adapter still
    imports)."""
    from llama_index.core.indices import base

    fns = [BaseIndex.__init__, BaseIndex.from_documents.__func__]
    run = getattr(base, "run_transformations", None)
    names = {"in_place", "cache", "cache_collection"} if run is None else set()
    fns += [run] if run is not None else []
    for fn in fns:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):  # a signature that cannot be read
            continue
        names |= {p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    return frozenset(names - {"self", "cls", "documents", "nodes", "index_struct"})


#: keywords a GarlicIndex takes besides its own: LlamaIndex's (``storage_context``,
#: ``show_progress``, ``callback_manager``, ``transformations``, ``objects``, ``in_place``...)
FRAMEWORK_KEYWORDS = _framework_keywords()
#: the per-query keywords of :meth:`GarlicIndex.as_retriever` and :meth:`GarlicIndex.as_query_engine`
SEARCH_KEYWORDS = (*SEARCH_DEFAULTS, "reencode", "explain")


def refuse_unknown(kwargs, accepted, where: str) -> None:
    """Raise ``TypeError`` naming the first keyword of ``kwargs`` not in ``accepted`` and listing
    the accepted ones (before anything is built or loaded: a misspelt setting was ignored)."""
    unknown = [k for k in kwargs if k not in accepted]
    if unknown:
        raise TypeError(
            f"{where} got an unexpected keyword argument {str(unknown[0])[:80]!r}; it takes: "
            f"{', '.join(sorted(accepted))}"
        )


def checked_search_kwargs(kwargs: dict, where: str, also=()) -> dict:
    """``kwargs`` of :meth:`GarlicIndex.as_retriever` / ``as_query_engine``: known keywords
    only (:data:`SEARCH_KEYWORDS`, and ``also`` in the message), the search settings within
    their bounds."""
    refuse_unknown(kwargs, {*SEARCH_KEYWORDS, *also}, where)
    check_search_settings({k: v for k, v in kwargs.items() if k in SEARCH_DEFAULTS})
    if "explain" in kwargs:
        check_explain(kwargs["explain"])
    return kwargs
