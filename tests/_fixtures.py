"""Small corpora and helpers shared by the tests: the adapter tests' texts
(``tests/llamaindex_longctx``, ``tests/langchain_longctx``; each framework's own objects built
from them in its ``_fixtures.py``), and :func:`load_script` for the scripts outside the
packages."""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]

#: Four one-sentence books (id, text, metadata) and three questions on them: the corpus the
#: MixPRRetriever update / filter / newcomer tests build, added to and deleted from.
BOOK_DOCS = [
    ("hound", "Sir Henry lost a boot at the Northumberland Hotel in London.", {"author": "Doyle"}),
    ("pride", "Elizabeth walked to Netherfield through the mud.", {"author": "Austen"}),
    ("whale", "The whale rose from the sea and the captain watched.", {"author": "Melville"}),
    ("gem", "Holmes found the stolen gem in the goose.", {"author": "Doyle", "year": 1892}),
]
BOOK_QUERIES = ["What did Sir Henry lose?", "Who walked through the mud?", "Where was the gem?"]

#: Five short texts, three near-duplicates: what the diversity adapters must thin out.
DIVERSITY_TEXTS = [
    "The cat sat on the mat.",
    "The cat sat on the mat again.",
    "The cat sat on a mat.",
    "Paris is the capital of France.",
    "Dogs bark at night.",
]

#: Two three-sentence documents, given one id in the source-id tests.
SOURCE_A = "The cat sat on the mat. The dog ate the bone. The bird sang a song."
SOURCE_B = "The cat chased a mouse. The dog slept all day. The fish swam around."

#: How many documents the concurrency tests replace while searching.
VERSIONED_N_DOCS = 12


def hash_vector(text: str) -> list[float]:
    """``tests.test_diversity.HashEncoder``'s vector of ``text`` (64 floats; texts sharing words
    are similar), the embedding of the adapters' hash embedding models."""
    from tests.test_diversity import HashEncoder

    return HashEncoder()([text])[0].tolist()


def book_rows(which: Iterable[int] | None = None) -> list[tuple[str, str, dict]]:
    """``BOOK_DOCS`` rows ``which`` (default all), each with a fresh metadata dict."""
    which = range(len(BOOK_DOCS)) if which is None else which
    return [(BOOK_DOCS[i][0], BOOK_DOCS[i][1], dict(BOOK_DOCS[i][2])) for i in which]


def versioned_text(i: int, v: int) -> str:
    """Document ``i``'s text at version ``v`` (its metadata: ``{"v": v, "doc": i}``)."""
    return f"The castle knight fought the dragon in story d{i} at version v{v} today."


def search_while_updating(
    update: Callable[[int, int], None],
    search: Callable[[], Iterable[tuple[str, dict]]],
    *,
    n_docs: int = VERSIONED_N_DOCS,
    seconds: float = 4.0,
) -> tuple[int, list]:
    """Two threads replace the documents (``update(i, v)``, each thread half of them, ``v``
    counting up) while two threads search (``search()`` gives each hit's text and metadata),
    for ``seconds``. Returns the number of hits seen and those that mix versions: a text, doc
    and version in the metadata, and offsets into ``versioned_text(doc, v)`` that disagree."""
    stop = threading.Event()
    errors: list = []
    seen = [0]

    def updater(which):
        v = 0
        while not stop.is_set():
            v += 1
            for i in which:
                update(i, v)

    def searcher():
        while not stop.is_set():
            for text, md in search():
                m = re.search(r"d(\d+) at version v(\d+)", text)
                full = versioned_text(md["doc"], md["v"])
                a, b = md["longctx_start_char_idx"], md["longctx_end_char_idx"]
                if m is None or (int(m[1]), int(m[2])) != (md["doc"], md["v"]) or full[a:b] != text:
                    errors.append((text, md))
                seen[0] += 1

    threads = [threading.Thread(target=updater, args=(range(k, n_docs, 2),)) for k in range(2)]
    threads += [threading.Thread(target=searcher) for _ in range(2)]
    from tests._concurrency import run_for

    run_for(threads, stop, seconds)
    return seen[0], errors


@lru_cache(maxsize=1)
def shared_tiny_scorer():
    """One ``tests._youra_helpers.tiny_scorer()`` per process (seeded: every build is the same
    model), for the adapter tests that only read it."""
    from tests._youra_helpers import tiny_scorer

    return tiny_scorer()


def garlic_parts(model, tokenizer, *, check: bool = False) -> dict:
    """What a GARLIC adapter needs besides its documents: the model and tokenizer given, the
    hashing encoder of ``tests.garlic._graphs`` and its hand-made graph builder (``check``: the
    builder asserts it is handed this very model and tokenizer)."""
    from longctx.embeddings import CallableEncoder
    from tests.garlic._graphs import hash_embed, make_graph

    def builder(texts, model=None, tokenizer=None, **kw):
        if check:
            assert model is parts["model"] and tokenizer is parts["tokenizer"]
        return make_graph(texts, tokenizer=tokenizer)

    parts = {
        "model": model,
        "tokenizer": tokenizer,
        "encoder": CallableEncoder(hash_embed),
        "graph_builder": builder,
    }
    return parts


def load_script(rel: str) -> ModuleType:
    """The script ``rel`` (a path from the repository root, e.g. ``"benchmarks/bench_gpu.py"``)
    imported as a module of its file's name, freshly each call."""
    path = REPO / rel
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Two texts for the seeded hybrid (issue 45): a book of three scenes, and a classroom that shares
#: no content word with the first scene's questions.
SEED_BOOK = (
    "The harbour master counted the ships at dawn. The gulls circled above the grey pier. "
    "A lantern swung from the mast of the oldest boat. Fishermen mended their nets in silence. "
    "Deep in the forest the owl watched the clearing. The fox crossed the frozen stream. "
    "Snow covered the path to the woodcutter's hut. Smoke rose from its crooked chimney. "
)
SEED_OTHER = (
    "The professor wrote equations on the blackboard. His students copied every symbol. "
    "Chalk dust drifted through the afternoon light. The bell rang and nobody moved. "
)
