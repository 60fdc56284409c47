"""LangChain MixPRRetriever searched while other threads replace its documents (delete, then
add_documents with the same id): every returned document's text, offsets and metadata come
from one version of its source."""

from __future__ import annotations

import re
import threading

from langchain_core.documents import Document

from langchain_longctx import MixPRRetriever

N_DOCS = 12


def _doc(i: int, v: int) -> Document:
    return Document(
        page_content=f"The castle knight fought the dragon in story d{i} at version v{v} today.",
        id=f"d{i}",
        metadata={"v": v, "doc": i},
    )


def test_hits_under_concurrent_updates_are_each_from_one_version():
    r = MixPRRetriever.from_documents([_doc(i, 0) for i in range(N_DOCS)], k=50)
    stop = threading.Event()
    errors: list = []
    seen = [0]

    def updater(which):
        v = 0
        while not stop.is_set():
            v += 1
            for i in which:
                r.delete([f"d{i}"])
                r.add_documents([_doc(i, v)])

    def searcher():
        while not stop.is_set():
            for d in r.invoke("castle knight dragon"):
                md = d.metadata
                m = re.search(r"d(\d+) at version v(\d+)", d.page_content)
                full = _doc(md["doc"], md["v"]).page_content
                a, b = md["longctx_start_char_idx"], md["longctx_end_char_idx"]
                bad = m is None or (int(m[1]), int(m[2])) != (md["doc"], md["v"])
                if bad or full[a:b] != d.page_content:
                    errors.append((d.page_content, md))
                seen[0] += 1

    threads = [threading.Thread(target=updater, args=(range(k, N_DOCS, 2),)) for k in range(2)]
    threads += [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    stop.wait(4.0)
    stop.set()
    for t in threads:
        t.join()
    assert seen[0] > 500
    assert not errors, f"{len(errors)} of {seen[0]} hits mix versions, e.g. {errors[0]}"
