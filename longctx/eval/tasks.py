"""Benchmark tasks built from real data (the project's ``shared/data`` folder or ``--data PATH``).

Each task yields :class:`Example` objects grouped by document, so that a method builds its index
once per document and answers every question of that document from it.

- ``babilong``: bAbI qa1/qa2/qa3 facts put at random sentence boundaries of Gutenberg text
  (BABILong, Kuratov et al., 2024, arXiv:2406.10149), seeded; gold = the supporting facts. One
  task per haystack size: ``babilong-qa2@16k``, ``babilong-qa2@128k``.
- ``squad``: one SQuAD v2.0 dev article (paragraphs joined by blank lines) as the document;
  answerable questions; gold = the answer strings (Rajpurkar et al., 2018, arXiv:1806.03822).
- ``hotpotqa``: HotpotQA distractor, the ten paragraphs ("title" line, then its sentences);
  gold = the supporting sentences' character spans (Yang et al., 2018, arXiv:1809.09600).
- ``narrativeqa``: NarrativeQA summaries; gold = the two reference answers (Kočiský et al., 2018,
  arXiv:1712.07040).
- ``multilexsum``: Multi-LexSum legal documents, no question (a global task); gold = the expert
  summary (Shen et al., 2022, arXiv:2206.10883).
- ``hotpotqa-corpus`` (a *corpus* task, :class:`Corpus`): the paragraphs of the HotpotQA
  examples pooled into one corpus of passages (duplicates by title merged), each passage
  ``title\ntext``; every question ranks the whole pool and its gold is its supporting
  paragraphs, scored as passage recall@k (the setting of HippoRAG: Gutierrez et al., 2024,
  arXiv:2405.14831; HippoRAG 2: Gutierrez et al., 2025, arXiv:2502.14802).
- ``hotpotqa-corpus-untitled``: the same pool and questions with each passage's title line
  removed (its text alone): multi-hop retrieval without Wikipedia's title convention, where a
  passage's head is no longer given (``docs/notes/multihop-default.md``).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from longctx.io import InputError
from longctx.persist import JSONTextError, loads_strict, read_json

TASKS = (
    "babilong",
    "squad",
    "hotpotqa",
    "narrativeqa",
    "multilexsum",
    "hotpotqa-corpus",
    "hotpotqa-corpus-untitled",
)
#: tasks over one pool of passages ranked as a whole (:class:`Corpus`), scored at ``k`` passages
CORPUS_TASKS = ("hotpotqa-corpus", "hotpotqa-corpus-untitled")


@dataclass(frozen=True)
class Example:
    """One question (or global request) on one document.

    Attributes
    ----------
    task, doc_id : str
    text : str
        The document.
    query : str or None
        The question; ``None`` for a global task (summarize the document).
    answers : tuple of str
        Reference answers (every task with a question; scored with QA F1 by ``--answer``).
    gold_spans : tuple of (start, end)
        Character spans that must be selected (bAbI facts, HotpotQA supporting sentences).
    reference : str or None
        Reference summary (Multi-LexSum).
    """

    task: str
    doc_id: str
    text: str
    query: str | None
    answers: tuple[str, ...] = ()
    gold_spans: tuple[tuple[int, int], ...] = ()
    reference: str | None = None
    meta: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class CorpusQuestion:
    """One question over a :class:`Corpus`.

    Attributes
    ----------
    qid : str
        The source example's id.
    query : str
    gold : tuple of int
        Positions in :attr:`Corpus.passages` of the passages the answer needs (HotpotQA: the
        supporting paragraphs).
    answers : tuple of str
    kind : str
        The source's question type (HotpotQA: ``"bridge"`` or ``"comparison"``).
    """

    qid: str
    query: str
    gold: tuple[int, ...]
    answers: tuple[str, ...] = ()
    kind: str = ""


@dataclass(frozen=True)
class Corpus:
    """A pool of passages and the questions that rank all of it (a corpus task).

    Attributes
    ----------
    task : str
    titles : tuple of str
        One per passage, unique.
    passages : tuple of str
        ``title + "\n" + text`` per passage: the unit every method ranks, whole.
    questions : tuple of CorpusQuestion
    """

    task: str
    titles: tuple[str, ...]
    passages: tuple[str, ...]
    questions: tuple[CorpusQuestion, ...]


def passage_recall(ranked, gold) -> float:
    """``|ranked ∩ gold| / |gold|``: passage recall of the top ``len(ranked)`` passages
    (HippoRAG's retrieval metric); ``gold`` non-empty."""
    gold = set(gold)
    return len(gold.intersection(ranked)) / len(gold)


def check_data(data: Path) -> Path:
    """``data`` as a Path, or ``FileNotFoundError`` naming it when it is not a data folder."""
    data = Path(data)
    if not data.is_dir():
        raise FileNotFoundError(f"benchmark data folder {str(data)!r} does not exist (--data PATH)")
    return data


def _read_jsonl(path: Path) -> list:
    """The JSON value of every non-blank line, each depth-bounded; a bad line is an
    ``InputError`` in the one form of JSONL input errors, ``'<file>' line <n>: <what is
    wrong>`` (as a corpus's JSONL, :mod:`longctx.corpus.documents`)."""
    where, out = repr(str(path)), []
    for i, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(loads_strict(line))
            except JSONTextError as exc:
                raise InputError(f"{where} line {i}: {exc}") from None
    return out


def _need(path: Path) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"benchmark data {str(path)!r} is missing (--data PATH)")
    return path


def squad(data: Path, n_questions: int, seed: int = 0) -> Iterator[list[Example]]:
    """SQuAD v2.0 dev, first five articles; each article one document, answerable questions."""
    raw = read_json(_need(data / "squad" / "dev-v2.0-first5.json"))
    per_doc = max(1, -(-n_questions // len(raw["data"])))
    for art in raw["data"]:
        text = "\n\n".join(p["context"] for p in art["paragraphs"])
        qas = [q for p in art["paragraphs"] for q in p["qas"] if not q.get("is_impossible", False)]
        qas = random.Random(seed).sample(qas, min(per_doc, len(qas)))
        yield [
            Example(
                "squad",
                art["title"],
                text,
                q["question"],
                answers=tuple(sorted({a["text"] for a in q["answers"]})),
            )
            for q in qas
        ]


def narrativeqa(data: Path, n_questions: int, seed: int = 0) -> Iterator[list[Example]]:
    """NarrativeQA summaries: ``n_questions`` questions, grouped by summary."""
    path = _need(data / "narrativeqa_summaries" / "test.jsonl")
    rows = _read_jsonl(path)
    rows = random.Random(seed).sample(rows, min(n_questions, len(rows)))
    by_doc: dict[str, list[dict]] = {}
    for r in rows:
        by_doc.setdefault(r["passage"], []).append(r)
    for i, (passage, rs) in enumerate(by_doc.items()):
        yield [
            Example("narrativeqa", f"nqa{i}", passage, r["question"], answers=tuple(r["answer"]))
            for r in rs
        ]


def hotpotqa(
    data: Path, n_questions: int, seed: int = 0, *, offset: int = 0
) -> Iterator[list[Example]]:
    """HotpotQA distractor: ten paragraphs per question; gold = supporting sentences. The
    examples from ``offset`` on (0: the first; a study's development half skips those of the
    table), ``n_questions`` of them."""
    rows = read_json(_need(data / "hotpotqa" / "dev-distractor-first100.json"))
    for r in rows[_first(offset) : _first(offset) + n_questions]:
        parts, spans, pos = [], {}, 0
        for title, sents in r["context"]:
            head = title + "\n"
            parts.append(head)
            pos += len(head)
            for j, s in enumerate(sents):
                lead = len(s) - len(s.lstrip())
                if s.strip():
                    spans[(title, j)] = (pos + lead, pos + len(s.rstrip()))
                piece = s if s.endswith(" ") else s + " "
                parts.append(piece)
                pos += len(piece)
            parts.append("\n\n")
            pos += 2
        text = "".join(parts)
        gold = tuple(spans[(t, j)] for t, j in r["supporting_facts"] if (t, j) in spans)
        yield [
            Example(
                "hotpotqa", r["_id"], text, r["question"], answers=(r["answer"],), gold_spans=gold
            )
        ]


def _paragraph_text(sents: list[str]) -> str:
    """A HotpotQA paragraph's sentences joined as :func:`hotpotqa` joins them (a space after a
    sentence that lacks one), stripped."""
    return "".join(s if s.endswith(" ") else s + " " for s in sents).strip()


def _first(offset: int) -> int:
    """``offset`` checked: the first HotpotQA example asked (``ValueError`` below 0)."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an int >= 0, got {offset!r}")
    return offset


def hotpotqa_corpus(
    data: Path,
    n_questions: int,
    seed: int = 0,
    *,
    pool: int | None = None,
    titles: bool = True,
    offset: int = 0,
) -> Corpus:
    """HotpotQA distractor's paragraphs pooled into one corpus, questions over all of it.

    The pool holds the ten paragraphs of each of the first ``pool`` examples (default: every
    example of the file, 100), duplicates by title merged (991 passages from the shared file),
    each passage ``title\ntext`` (``titles=False``: the text alone); the questions are the
    first ``n_questions`` examples' (from ``offset`` on: a study's development half), gold =
    their supporting paragraphs (two each). So ``n_questions`` changes how many questions are
    asked, never the pool the methods search.

    Raises
    ------
    FileNotFoundError
        The data file is missing (named).
    ValueError
        ``n_questions`` or ``pool`` below 1, ``offset`` below 0, or a supporting title that
        no paragraph of its example holds.
    """
    rows = read_json(_need(data / "hotpotqa" / "dev-distractor-first100.json"))
    start = _first(offset)
    if n_questions < 1:
        raise ValueError(f"n_questions must be >= 1, got {n_questions}")
    if pool is not None and pool < 1:
        raise ValueError(f"pool must be >= 1, got {pool}")
    pool_rows = rows if pool is None else rows[: max(pool, min(start + n_questions, len(rows)))]
    position: dict[str, int] = {}
    names: list[str] = []
    passages: list[str] = []
    for r in pool_rows:
        for title, sents in r["context"]:
            if title not in position:
                position[title] = len(names)
                names.append(title)
                text = _paragraph_text(sents)
                passages.append(f"{title}\n{text}" if titles else text)
    questions = []
    for r in rows[start : start + n_questions]:
        sup = list(dict.fromkeys(t for t, _ in r["supporting_facts"]))
        missing = [t for t in sup if t not in position]
        if missing:
            raise ValueError(f"example {r['_id']}: supporting titles {missing} hold no paragraph")
        questions.append(
            CorpusQuestion(
                r["_id"],
                r["question"],
                tuple(position[t] for t in sup),
                answers=(r["answer"],),
                kind=r.get("type", ""),
            )
        )
    name = "hotpotqa-corpus" if titles else "hotpotqa-corpus-untitled"
    return Corpus(name, tuple(names), tuple(passages), tuple(questions))


def multilexsum(data: Path, n_questions: int, seed: int = 0) -> Iterator[list[Example]]:
    """Multi-LexSum: documents with their expert summaries; no question (global task)."""
    path = _need(data / "multilexsum" / "test.jsonl")
    rows = _read_jsonl(path)
    rows = [r for r in rows if r["document"].strip() and r["summary"].strip()]
    for i, r in enumerate(random.Random(seed).sample(rows, min(n_questions, len(rows)))):
        yield [Example("multilexsum", f"mls{i}", r["document"], None, reference=r["summary"])]


def babi_questions(path: Path) -> Iterator[tuple[list[str], str, list[int], str]]:
    """``(facts, question, supporting fact indices into facts, answer)`` per bAbI question of one
    ``*_test.txt`` file (the facts of its story so far, in order)."""
    facts: list[str] = []
    ids: dict[int, int] = {}
    for line in _need(path).read_text("utf-8").splitlines():
        num, _, rest = line.partition(" ")
        if int(num) == 1:
            facts, ids = [], {}
        if "\t" in rest:
            q, answer, sup = rest.split("\t")
            yield list(facts), q.strip(), [ids[int(s)] for s in sup.split()], answer.strip()
        else:
            ids[int(num)] = len(facts)
            facts.append(rest.strip())


#: Gutenberg books used first for haystacks (none has the bAbI names Mary, John, Sandra, Daniel
#: early on); the folder's other ``*.txt`` follow in name order.
GUTENBERG_BOOKS = ("2701-0.txt", "pg1342.txt", "2600-0.txt", "145-0.txt", "pg1184.txt", "766-0.txt")


def gutenberg_haystack(data: Path, n_chars: int) -> str:
    """Gutenberg text (Moby Dick, then Pride and Prejudice, War and Peace, Middlemarch, ...; see
    :data:`GUTENBERG_BOOKS`) joined by blank lines and cut to ``n_chars`` characters."""
    folder = _need(Path(data) / "gutenberg")
    names = list(GUTENBERG_BOOKS) + sorted(
        p.name for p in folder.glob("*.txt") if p.name not in GUTENBERG_BOOKS
    )
    out, total = [], 0
    for name in names:
        t = (folder / name).read_text(encoding="utf-8-sig")
        out.append(t)
        total += len(t) + 2
        if total >= n_chars:
            break
    return "\n\n".join(out)[:n_chars]


def insert_facts(
    hay: str, hay_sents: list[tuple[int, int]], facts: list[str], rng: random.Random
) -> tuple[str, list[tuple[int, int]]]:
    """Put ``facts`` in order at random sentence boundaries of ``hay`` (BABILong's construction).

    Parameters
    ----------
    hay : str
        The haystack.
    hay_sents : list of (start, end)
        Its sentence spans (:func:`longctx.text.split_sentences`), characters.
    facts : list of str
    rng : random.Random
        Draws the boundaries (``len(facts)`` distinct ones, sorted).

    Returns
    -------
    text : str
    spans : list of (start, end)
        Character span of each fact in ``text``, in the order of ``facts``.
    """
    bounds = sorted(rng.sample(range(len(hay_sents) + 1), len(facts))) if facts else []
    pieces, spans, pos, prev = [], [], 0, 0
    for f, b in zip(facts, bounds):
        cut = hay_sents[b][0] if b < len(hay_sents) else len(hay)
        pieces.append(hay[prev:cut])
        pos += cut - prev
        pieces.append(f + " ")
        spans.append((pos, pos + len(f)))
        pos += len(f) + 1
        prev = cut
    pieces.append(hay[prev:])
    return "".join(pieces), spans


def size_label(n_tokens: int) -> str:
    """``16000 -> "16k"``, ``128000 -> "128k"``, ``1500 -> "1.5k"``: the BABILong size in task
    names (``babilong-qa2@16k``)."""
    return f"{n_tokens / 1000:g}k"


def babilong(
    data: Path,
    n_questions: int,
    seed: int = 0,
    *,
    n_tokens: int = 16_000,
    subtasks: tuple[str, ...] = ("qa1", "qa2", "qa3"),
    token_counter=None,
) -> Iterator[list[Example]]:
    """bAbI facts (``subtasks``) in a Gutenberg haystack of about ``n_tokens`` tokens,
    ``n_questions`` per subtask; each question its own document, task ``babilong-qa1@16k``.

    The haystack is cut at ``4.5 * n_tokens`` characters, then, when ``token_counter`` (``str ->
    int``) is given, shortened in proportion so that it holds about ``n_tokens`` of its tokens
    (SmolLM2 reads English prose at about 3.8 characters a token).
    """
    from longctx.text import split_sentences

    names = {
        "qa1": "qa1_single-supporting-fact",
        "qa2": "qa2_two-supporting-facts",
        "qa3": "qa3_three-supporting-facts",
    }
    bad = [s for s in subtasks if s not in names]
    if bad:
        raise ValueError(f"subtasks must be among {sorted(names)}, got {bad}")
    hay = gutenberg_haystack(data, int(n_tokens * 4.5))
    if token_counter is not None:
        n = int(token_counter(hay))
        if n > n_tokens:
            hay = hay[: int(len(hay) * n_tokens / n)]
    hay_sents = split_sentences(hay)
    label = size_label(n_tokens)
    for sub in subtasks:
        rng = random.Random(seed)
        qs = list(babi_questions(data / "babi" / "en" / f"{names[sub]}_test.txt"))
        for k, (facts, q, sup, answer) in enumerate(rng.sample(qs, min(n_questions, len(qs)))):
            text, spans = insert_facts(hay, hay_sents, facts, rng)
            yield [
                Example(
                    f"babilong-{sub}@{label}",
                    f"{sub}-{k}",
                    text,
                    q,
                    answers=(answer,),
                    gold_spans=tuple(spans[s] for s in sup),
                    meta={"subtask": sub, "n_tokens": n_tokens},
                )
            ]


def load_task(name: str, data: Path, n_questions: int, seed: int = 0, **kw):
    """Documents (lists of examples) of one task; a :class:`Corpus` for a corpus task
    (:data:`CORPUS_TASKS`)."""
    data = check_data(data)
    if name in CORPUS_TASKS:
        return hotpotqa_corpus(data, n_questions, seed, titles=name == "hotpotqa-corpus", **kw)
    funcs = {
        "babilong": babilong,
        "squad": squad,
        "hotpotqa": hotpotqa,
        "narrativeqa": narrativeqa,
        "multilexsum": multilexsum,
    }
    if name not in funcs:
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {name!r}")
    return funcs[name](data, n_questions, seed, **kw)
