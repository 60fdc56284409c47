"""Prompt-lookup decoding's draft tokens, for GARLIC's batched summarization decoding.

A summary copies phrases of the text it summarizes, and a small model repeats its own lines, so
the tokens that followed the latest occurrence of the last few generated tokens are good guesses
for the next ones. :func:`longctx.garlic.decode.generate_batch_with_capture` feeds them as draft
tokens and keeps those the model's greedy choice agrees with: the output does not change, the
number of forward passes falls.

Saxena, "Prompt Lookup Decoding", 2023, https://github.com/apoorvumang/prompt-lookup-decoding
(the n-gram lookup); Leviathan, Kalman & Matias, "Fast Inference from Transformers via
Speculative Decoding", 2023, arXiv:2211.17192 (checking drafts in one pass, greedy case).
"""

from __future__ import annotations

from collections.abc import Sequence

from longctx.checks import check_int

__all__ = ["DEFAULT_PROMPT_LOOKUP", "MAX_PROMPT_LOOKUP", "PromptLookup", "check_prompt_lookup"]

# Most prompt-lookup draft tokens per row and decoding pass (measured: docs/notes/garlic-speed.md),
# and the largest value allowed (a pass of 1 + 63 tokens is the most the attention recorder fuses,
# longctx.attention.FUSED_MAX_QUERY).
DEFAULT_PROMPT_LOOKUP = 32
MAX_PROMPT_LOOKUP = 63


def check_prompt_lookup(prompt_lookup_num_tokens) -> int:
    """Validate ``prompt_lookup_num_tokens`` (draft tokens per row and pass, 0 = off, at most
    :data:`MAX_PROMPT_LOOKUP`); ``None`` -> :data:`DEFAULT_PROMPT_LOOKUP`.

    Raises
    ------
    TypeError, ValueError
        Not an int in ``[0, MAX_PROMPT_LOOKUP]`` (the message names ``prompt_lookup_num_tokens``).
    """
    if prompt_lookup_num_tokens is None:
        return DEFAULT_PROMPT_LOOKUP
    k = check_int(prompt_lookup_num_tokens, "prompt_lookup_num_tokens", minimum=0)
    if k > MAX_PROMPT_LOOKUP:
        raise ValueError(f"prompt_lookup_num_tokens must be at most {MAX_PROMPT_LOOKUP}, got {k}")
    return k


# Prompt lookup: a row's first draft length and least one; tokens (rows x (1 + draft)) one pass
# may feed (beyond ~64 a CPU pass costs more than the tokens it saves; measured in
# docs/notes/garlic-speed.md).
START_K, MIN_K, PASS_TOKENS = 4, 2, 64


class PromptLookup:
    """Draft tokens for prompt-lookup decoding: the tokens that followed the most recent earlier
    occurrence of the context's last ``n`` tokens (``n`` = 8, 7, ..., 1: the longest match wins) in the prompt or the
    tokens generated so far (Saxena, "Prompt Lookup Decoding", 2023,
    https://github.com/apoorvumang/prompt-lookup-decoding).

    Parameters
    ----------
    prompt : sequence of int
        The row's prompt token ids (indexed once: a dict per n-gram size, ``O(len(prompt))``).
    max_k : int
        Most draft tokens :meth:`draft` is asked for (``prompt_lookup_num_tokens``).

    Attributes
    ----------
    k : int
        The next draft's length: starts at ``min(max_k, 4)``, set by :meth:`adapt`.
    """

    # 8, not 3: in a line that repeats a phrase twice ("he is told to talk hard again, and he is
    # told to talk hard again") only a long match tells its two halves apart (23 -> 10 s for a
    # NarrativeQA summary at 1,024 new tokens; no change on summaries that do not repeat).
    MAX_NGRAM = 8

    def __init__(self, prompt: Sequence[int], max_k: int):
        self.max_k = max_k
        self.k = min(max_k, START_K)
        self.ctx = [int(t) for t in prompt]
        self.prompt_len = len(self.ctx)
        self.seen = 0
        self.index: list[dict] = [{} for _ in range(self.MAX_NGRAM + 1)]
        self._extend_index()

    def _extend_index(self) -> None:
        ctx = self.ctx
        for t in range(max(1, self.seen), len(ctx)):
            for n in range(1, self.MAX_NGRAM + 1):
                if t - n >= 0:  # the n-gram ending before t is followed by ctx[t]
                    self.index[n][tuple(ctx[t - n : t])] = t
        self.seen = len(ctx)

    def adapt(self, accepted: int, offered: int) -> None:
        """The next draft's length: twice as long after a fully accepted draft (up to
        ``max_k``), else one more than the tokens accepted (at least 2)."""
        if accepted == offered:
            self.k = min(self.max_k, 2 * self.k)
        else:
            self.k = min(self.max_k, max(MIN_K, accepted + 1))

    def draft(self, generated: list[int], k: int) -> list[int]:
        """Up to ``k`` draft tokens after the prompt + ``generated`` (``generated`` only grows)."""
        self.ctx.extend(generated[len(self.ctx) - self.prompt_len :])
        self._extend_index()
        ctx = self.ctx
        for n in range(min(self.MAX_NGRAM, len(ctx)), 0, -1):
            start = self.index[n].get(tuple(ctx[-n:]))
            if start is not None:
                out = ctx[start : start + k]
                # a match in the recent text may run into the end of the context: the copy then
                # goes on with itself (a repeated phrase repeats again)
                while len(out) < k:
                    out.append(out[start + len(out) - len(ctx)])
                return out
        return []
