"""Scores of a selection (character spans of the document) against a task's gold.

- answer in selection (SQuAD; the diversity paper's pre-LLM recall): a reference answer,
  normalized as SQuAD's evaluation script does, is a substring of the normalized selected text;
- answer-token recall >= 0.6 (NarrativeQA): the share of the normalized answer tokens found
  among the selection's tokens, best reference;
- gold spans (bAbI facts, HotpotQA supporting sentences): a gold span counts as selected when at
  least half of its characters are; ``all`` (every gold span) and ``share`` (mean share);
- ROUGE-L F1 of the selection against the reference summary (Multi-LexSum), with Google's
  ``rouge-score`` (Lin, 2004);
- QA F1 (LongBench / SQuAD token F1) of a generated answer.
"""

from __future__ import annotations

import re
import string
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize(s: str) -> str:
    """SQuAD normalization: lower case, no punctuation, no articles, single spaces."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def selected_text(text: str, spans) -> str:
    """The selected spans joined in document order (a space between them)."""
    return " ".join(text[a:b] for a, b in sorted(spans))


def answer_in_selection(answers, selection: str) -> bool:
    sel = f" {normalize(selection)} "
    return any(f" {normalize(a)} " in sel for a in answers if normalize(a))


def answer_token_recall(answers, selection: str) -> float:
    toks = Counter(normalize(selection).split())
    best = 0.0
    for a in answers:
        gold = normalize(a).split()
        if gold:
            best = max(best, sum(1 for t in gold if toks[t] > 0) / len(gold))
    return best


def gold_coverage(gold_spans, spans) -> list[float]:
    """Per gold span: 1.0 when at least half of its characters are inside the selected spans."""
    sel = sorted(spans)
    out = []
    for g0, g1 in gold_spans:
        covered = sum(max(0, min(b, g1) - max(a, g0)) for a, b in sel)
        out.append(1.0 if covered * 2 >= (g1 - g0) else 0.0)
    return out


def rouge_l(reference: str, selection: str) -> float:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return float(scorer.score(reference, selection)["rougeL"].fmeasure)


def qa_f1(prediction: str, answers) -> float:
    """LongBench's QA F1: token-level F1 of the normalized prediction, best reference."""
    pred = normalize(prediction).split()
    best = 0.0
    for a in answers:
        gold = normalize(a).split()
        common = Counter(pred) & Counter(gold)
        same = sum(common.values())
        if same:
            p, r = same / len(pred), same / len(gold)
            best = max(best, 2 * p * r / (p + r))
    return best


def score(example, text: str, spans) -> dict:
    """The task's figures for one selection: ``{"recall": float, ...}``."""
    sel = selected_text(text, spans)
    if example.reference is not None:
        return {"recall": rouge_l(example.reference, sel)}
    if example.gold_spans:
        cov = gold_coverage(example.gold_spans, spans)
        return {"recall": float(all(cov)), "share": sum(cov) / len(cov)}
    if example.task == "narrativeqa":
        return {"recall": float(answer_token_recall(example.answers, sel) >= 0.6)}
    return {"recall": float(answer_in_selection(example.answers, sel))}
