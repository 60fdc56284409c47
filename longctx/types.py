"""Small value types shared by every method and adapter."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Passage:
    """One selected piece of the user's text.

    Attributes
    ----------
    start, end : int
        Character offsets into the original text (``text[start:end] == passage.text``),
        end exclusive. Units are characters, never tokens.
    text : str
        The passage, exactly as it appears in the original text.
    score : float
        The method's score for this passage (PageRank probability, reaction score, MMR reward...).
        Higher is more relevant.
    index : int
        Position of the unit (chunk or sentence) among all units of the document, 0-based.
    """

    start: int
    end: int
    text: str
    score: float
    index: int

    def to_dict(self) -> dict:
        return {
            "index": self.index,
            "start": self.start,
            "end": self.end,
            "score": self.score,
            "text": self.text,
        }
