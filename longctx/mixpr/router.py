"""MixPR routers: decide whether a query is local (personalized PageRank) or global (PageRank),
by keywords (:class:`KeywordRouter`) or by asking an LLM with the paper's zero-shot prompt
(:class:`LLMRouter`, appendix A.2 of arXiv:2412.06078)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence

import numpy as np

from longctx.checks import check_choice, check_int

logger = logging.getLogger(__name__)

MODES = ("auto", "local", "global")

#: The zero-shot router prompt of appendix A.2, verbatim (``[query]`` is replaced).
ROUTER_PROMPT = (
    "If the query asks for summarization, most frequent words, or descriptions of an entire "
    "document, answer \u2019y\u2019 with no other text. If the query does not and only asks a "
    "specific question, answer \u2019n\u2019 with no other text.\n"
    "QUERY: [query]\n"
    "If the query asks for summarization, most frequent words, or descriptions of an entire "
    "document, answer \u2019y\u2019 with no other text. If the query does not and only asks a "
    "specific question, answer \u2019n\u2019 with no other text.\n"
    "Answer:"
)

# Words marking a global (query-independent) task: summaries, overviews, word frequencies.
_GLOBAL_RE = re.compile(
    r"\b(summar\w*|overview|synopsis|gist|recap|outline|tl;?dr|abstract of"
    r"|(most|least) (frequent|common|used|repeated)\w*( \w+)? words?"
    r"|word frequenc\w*|frequent words|common words"
    r"|main (themes?|ideas?|points?|events?|characters?|topics?|arguments?|plot)"
    r"|key (themes?|ideas?|points?|events?|takeaways?)"
    r"|(whole|entire|full) (book|document|text|story|novel|article|report|paper|chapter)"
    r"|(what is|what's) (this|the) (book|document|text|story|novel|article|report|paper) about"
    r"|describe (this|the) (book|document|text|story|novel|article|report|paper)"
    r"|describe (this|the) (whole|entire|full) \w+|sum (it |this |that )?up|\w+ in a nutshell"
    r"|words? (are|is) (the )?(most|least) (frequent|common|used))\b",
    re.IGNORECASE,
)


class KeywordRouter:
    """Default router: ``"global"`` when the query asks for a summary, an overview, the main
    themes or events, word frequencies or a description of the whole text; else ``"local"``.

    A cheap stand-in for the paper's LLM router (sec. 4 "Dynamic alpha"). Callable as
    ``router(query, chunks) -> "local" | "global"``.
    """

    def __call__(self, query: str, chunks: Sequence[str] = ()) -> str:
        return "global" if _GLOBAL_RE.search(query) else "local"


class LLMRouter:
    """The paper's router: ask an LLM with the zero-shot prompt of appendix A.2 (:data:`ROUTER_PROMPT`).

    The ``[query]`` variable holds the first ``n_context`` chunks of the text and the last
    ``n_context`` chunks of text-plus-query (so the query itself comes last), as in the paper. An
    answer starting with "y" means global (PageRank), "n" local (personalized PageRank); any
    other answer falls back to :class:`KeywordRouter`.

    Parameters
    ----------
    llm : LlamaIndex ``LLM``, LangChain chat model or LLM, or callable ``str -> str``
        An object with ``.complete(prompt)`` returning ``.text`` (LlamaIndex), an object with
        ``.invoke(prompt)`` returning a message with ``.content`` or a ``str`` (LangChain chat
        models and LLMs), or any completion function.
    n_context : int >= 0, default 2
        Chunks taken from each end of the input (0: the query alone).

    Raises
    ------
    TypeError
        ``llm`` is none of these.

    Examples
    --------
    >>> LLMRouter(OpenAI(model="gpt-4o-mini"))  # LlamaIndex  # doctest: +SKIP
    >>> LLMRouter(ChatOpenAI(model="gpt-4o-mini"))  # LangChain  # doctest: +SKIP
    >>> LLMRouter(lambda prompt: "n")  # doctest: +SKIP
    """

    def __init__(self, llm, n_context: int = 2):
        self.llm = _as_completion(llm)
        self.n_context = check_int(n_context, "n_context", minimum=0)
        self.fallback = KeywordRouter()

    def prompt(self, query: str, chunks: Sequence[str] = ()) -> str:
        """The exact prompt sent to the LLM."""
        k = self.n_context
        n = len(chunks)
        if k == 0:
            parts = [query]
        elif n + 1 <= 2 * k:
            parts = list(chunks[:n]) + [query]
        else:  # the first k items and the last k of chunks + [query]: only those are read
            parts = list(chunks[:k]) + list(chunks[n - k + 1 :]) + [query]
        return ROUTER_PROMPT.replace("[query]", "\n".join(parts))

    def __call__(self, query: str, chunks: Sequence[str] = ()) -> str:
        answer = _answer_text(self.llm(self.prompt(query, chunks)))
        answer = answer.strip().strip("'\"\u2018\u2019`").lower()
        if answer.startswith("y"):
            return "global"
        if answer.startswith("n"):
            return "local"
        return self.fallback(query, chunks)


def _answer_text(answer) -> str:
    """The text of an LLM answer: a str, a LangChain message (``.content``, a str or a list of
    content blocks) or a LlamaIndex response (``.text``)."""
    if isinstance(answer, str):
        return answer
    for attr in ("content", "text"):
        value = getattr(answer, attr, None)
        if isinstance(value, str):
            return value
        if isinstance(value, list):  # LangChain content blocks
            return "".join(
                b if isinstance(b, str) else str(b.get("text", "")) if isinstance(b, dict) else ""
                for b in value
            )
    return str(answer)


def _as_completion(llm) -> Callable[[str], object]:
    """``prompt -> answer`` for a LlamaIndex LLM, a LangChain model or a plain callable."""
    complete = getattr(llm, "complete", None)
    if callable(complete):  # LlamaIndex LLM: .complete(prompt).text
        return lambda prompt: complete(prompt)
    invoke = getattr(llm, "invoke", None)
    if callable(invoke):  # LangChain chat model (message .content) or LLM (str)
        return lambda prompt: invoke(prompt)
    if callable(llm):
        return llm
    raise TypeError(
        "llm must be a LlamaIndex LLM (.complete), a LangChain chat model or LLM (.invoke) or a "
        f"callable str -> str, got {type(llm).__name__}"
    )


# -- the walk: PageRank or the multi-hop walk, per index and per query ---------------------------
#: ``walk="auto"``: an index whose documents average at most this many units is a corpus of
#: passages and gets the phrase graph of the multi-hop walk. A ratio, so its meaning does not
#: change with the corpus's size: HotpotQA's paragraphs are 1 unit each whole (``chunk=False``)
#: and 1 to 3 chunked; a book, a SQuAD article or a bAbI haystack is one document of hundreds.
PASSAGE_UNITS_PER_DOCUMENT = 8.0

WALKS_AUTO = ("auto", "pagerank", "multihop")


def plan_walk(walk: str, n_documents: int, n_units: int) -> dict:
    """The per-index half of the walk's choice: ``{"walk": ..., "phrases": bool, "corpus":
    ..., "units_per_document": float}``, where ``phrases`` says whether the index builds the
    phrase graph of the multi-hop walk (:mod:`longctx.mixpr.multihop`).

    ``walk="pagerank"`` never builds it, ``"multihop"`` always does; ``"auto"`` (the default)
    builds it for a corpus of passages: at least two documents averaging at most
    :data:`PASSAGE_UNITS_PER_DOCUMENT` units (``chunk=False`` passages, short files). One
    document, or documents of many chunks each (books, articles), keep the PageRank walk and
    today's build cost: on one chunked document the multi-hop walk lost a little (``longctx
    bench`` SQuAD at 5% .88 against .93, NarrativeQA at 20% .73 against .78), on passages it
    gained 14 to 20 points of recall (``docs/notes/multihop-default.md``).
    """
    check_choice(walk, "walk", WALKS_AUTO)
    per_doc = n_units / n_documents if n_documents else 0.0
    if n_documents < 2:
        corpus = "one document"
    elif per_doc <= PASSAGE_UNITS_PER_DOCUMENT:
        corpus = "passages"
    else:
        corpus = "long documents"
    phrases = walk == "multihop" or (walk == "auto" and corpus == "passages")
    return {
        "walk": walk,
        "phrases": phrases,
        "corpus": corpus,
        "units_per_document": round(per_doc, 2),
    }


def choose_walk(plan: dict, mode: str, named: Sequence[str] = (), heads: int = 0) -> dict:
    """The per-query half: ``{"stage": "route", "walk": "pagerank" | "multihop", "reason": str,
    ...}`` for a query routed to ``mode`` (``"local"``, ``"global"``...), given what it names.

    Parameters
    ----------
    plan : dict
        :func:`plan_walk`'s answer for the index.
    mode : str
        The mode used: ``"global"`` keeps PageRank; ``"local"`` and ``"global-fallback"`` (a
        local query that reached no unit lexically) may walk the phrase graph.
    named : sequence of str
        The phrase nodes the query names (longest matches, :meth:`MultiHopRanker.query_phrases`).
    heads : int
        How many of them head a passage (a title or heading line names it).

    With ``walk="auto"`` a local query on a corpus of passages takes the multi-hop walk when it
    names a phrase of the graph (its seeds; a head is the best seed there is) and the PageRank
    walk when it names nothing, such as "Where is the football?": the multi-hop walk would only
    re-rank the first hop's passages by how they link.
    """
    out = {"stage": "route", "corpus": plan["corpus"]}
    if not plan["phrases"]:
        why = "walk='pagerank'" if plan["walk"] == "pagerank" else f"{plan['corpus']}"
        return {**out, "walk": "pagerank", "reason": why}
    if mode == "global":  # "global-fallback" (no unit reached lexically) may still be seeded
        return {**out, "walk": "pagerank", "reason": "global query"}
    if plan["walk"] == "multihop":
        return {**out, "walk": "multihop", "reason": "walk='multihop'", "named": list(named)[:8]}
    if named:
        why = "the query names a passage's head" if heads else "the query names a phrase"
        return {**out, "walk": "multihop", "reason": why, "named": list(named)[:8]}
    return {**out, "walk": "pagerank", "reason": "the query names no phrase of the corpus"}


def query_walk(st, query: str, used: str, timings: dict):
    """The walk of ``query`` over the index state ``st`` (:func:`choose_walk` with the
    phrases the query names) and the restart weights of its phrases (``None`` without a phrase
    graph); ``timings["route_walk"]``: seconds spent."""
    if st.phrases is None or used == "global":
        return choose_walk(st.walk_plan, used), None
    t0 = time.perf_counter()
    weights = st.ranker().query_phrases(query)
    cols = np.flatnonzero(weights)
    named = [st.phrases.vocabulary[c] for c in cols.tolist()]
    walk = choose_walk(st.walk_plan, used, named, int(st.is_head()[cols].sum()))
    timings["route_walk"] = time.perf_counter() - t0
    if walk["walk"] != "multihop":
        logger.info("MixPR walk: pagerank for query %.80r (%s)", query, walk["reason"])
    return walk, weights
