"""Token counting for token budgets.

A token budget is always counted by a *token counter*: any callable ``str -> int``. Methods that run a
model (YOURA, GARLIC) count with that model's tokenizer; model-free methods (MixPR, diversity) use
:func:`count_tokens` unless the user passes their own counter (for example
``lambda s: len(tiktoken_enc.encode(s))`` or ``hf_token_counter(tokenizer)``).

:func:`count_tokens` needs no model and no tokenizer library: it runs SmolLM2's byte-level BPE
(Allal et al., "SmolLM2: When Smol Goes Big", 2025, arXiv:2502.02737) from the merge table shipped in
``longctx/data/smollm2_merges.txt.gz`` (Apache-2.0, from ``HuggingFaceTB/SmolLM2-135M-Instruct``), so
it gives SmolLM2's own count; see its docstring for exactly what is guaranteed.
"""

from __future__ import annotations

import gzip
import heapq
import itertools
import re
import unicodedata
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources

import numpy as np

TokenCounter = Callable[[str], int]

# -- SmolLM2's pre-tokenizer: GPT-2's ByteLevel pattern --------------------------------------------
#   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
# written for the standard library's ``re`` (3x faster here than the ``regex`` module's \p{L}):
# letters are ``[^\W\d_]`` (word characters that are neither decimal digits nor "_"), and \s is
# Unicode's White_Space list, as the tokenizer's Oniguruma reads it (Python's \s also holds
# U+001C-U+001F, which the tokenizer treats as punctuation). ``[^\W\d_]`` also matches the
# numbers of categories No and Nl (², ½, Ⅻ); a piece holding one is re-cut in _split_numbers.
_WS = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_PRETOKEN_RE = re.compile(
    rf"'(?:[stmd]|re|ve|ll)| ?[^\W\d_]+| ?\d+| ?(?:[^\w{_WS}]|_)+|[{_WS}]+(?![^{_WS}])|[{_WS}]+"
)
#: Pieces longer than this many UTF-8 bytes are counted as their byte length (the most tokens a
#: byte-level BPE can give), so no piece costs more than O(this) work.
MAX_BPE_BYTES = 4096
# Pieces up to this many characters are remembered (at most _CACHE_SIZE of them).
_CACHE_CHARS = 64
_CACHE_SIZE = 1 << 16


@lru_cache(maxsize=1)
def _merges() -> dict[int, tuple[int, int]]:
    """SmolLM2's merge table: ``(left << 20) | right`` -> ``(rank, merged id)``; ids 0-255 are
    the bytes."""
    # GPT-2's byte <-> printable-character map, in which merges.txt files are written.
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    others = [b for b in range(256) if b not in printable]
    char_of_byte = {b: chr(b) for b in printable} | {b: chr(256 + i) for i, b in enumerate(others)}
    ids = {char_of_byte[b]: b for b in range(256)}
    table: dict[int, tuple[int, int]] = {}
    path = resources.files("longctx") / "data" / "smollm2_merges.txt.gz"
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    rank = 0
    for line in lines[1:]:  # line 0: "#version: 0.2"
        if not line:
            continue
        left, right = line.split(" ")
        merged = ids.setdefault(left + right, len(ids))
        table[(ids[left] << 20) | ids[right]] = (rank, merged)
        rank += 1
    return table


def _bpe_count(data: bytes) -> int:
    """Number of tokens SmolLM2's BPE makes of one pre-token's bytes: merges applied lowest rank
    first, leftmost first among equal ranks (as Hugging Face ``tokenizers`` does),
    O(n log n)."""
    n = len(data)
    if n < 2:
        return n
    if n > MAX_BPE_BYTES:
        return n
    merges = _merges()
    get = merges.get
    sym = list(data)
    nxt = list(range(1, n + 1))
    prv = list(range(-1, n - 1))
    heap = []
    for i in range(n - 1):
        m = get((sym[i] << 20) | sym[i + 1])
        if m is not None:
            heap.append((m[0], i, sym[i], sym[i + 1], m[1]))
    heapq.heapify(heap)
    count = n
    pop, push = heapq.heappop, heapq.heappush
    while heap:
        _, i, a, b, new = pop(heap)
        j = nxt[i]
        if sym[i] != a or j >= n or sym[j] != b:
            continue  # stale: one side was merged since this pair was queued
        sym[i] = new
        sym[j] = -1
        k = nxt[j]
        nxt[i] = k
        if k < n:
            prv[k] = i
        count -= 1
        p = prv[i]
        if p >= 0:
            m = get((sym[p] << 20) | new)
            if m is not None:
                push(heap, (m[0], p, sym[p], new, m[1]))
        if k < n:
            m = get((new << 20) | sym[k])
            if m is not None:
                push(heap, (m[0], i, new, sym[k], m[1]))
    return count


def _is_number_char(c: str) -> bool:
    return c.isnumeric() and unicodedata.category(c) in ("No", "Nl")


def _split_numbers(piece: str) -> list[str]:
    """A letter piece that holds numbers of categories No/Nl (², ½, Ⅻ), cut as the tokenizer
    cuts it: runs of letters and runs of numbers, a leading space kept on the first run."""
    lead, body = (" ", piece[1:]) if piece.startswith(" ") else ("", piece)
    runs = ["".join(g) for _, g in itertools.groupby(body, key=_is_number_char)]
    runs[0] = lead + runs[0]
    return runs


def _count_piece(piece: str) -> int:
    if not piece.isascii() and any(map(_is_number_char, piece)):
        parts = _split_numbers(piece)
        if len(parts) > 1:
            return sum(_bpe_count(p.encode("utf-8", "surrogatepass")) for p in parts)
    return _bpe_count(piece.encode("utf-8", "surrogatepass"))


class _PieceCounts(dict):
    """Token counts of pre-tokens already seen (short ones, at most _CACHE_SIZE)."""

    def __missing__(self, piece: str) -> int:
        n = _count_piece(piece)
        if len(piece) <= _CACHE_CHARS:
            if len(self) >= _CACHE_SIZE:
                self.clear()
            self[piece] = n
        return n


_PIECE_COUNTS = _PieceCounts()


def count_tokens(text: str) -> int:
    """Token count of ``text`` under SmolLM2's tokenizer, without a model or tokenizer library.

    The text is cut into pre-tokens with SmolLM2's (GPT-2's) pre-tokenizer pattern and each
    pre-token is merged with SmolLM2-135M's byte-level BPE merge table (shipped with longctx,
    Apache-2.0; Allal et al., "SmolLM2: When Smol Goes Big", 2025, arXiv:2502.02737), so the
    result is ``len(tokenizer(text, add_special_tokens=False).input_ids)`` of SmolLM2's own
    tokenizer. The tests check equality on Gutenberg books, 20+ languages and
    random strings of many scripts, whitespace, punctuation, digits and emoji (hypothesis).

    Guarantee: ``count_tokens(text) >= SmolLM2's count`` for every string, with equality except
    in three cases, where this count is the larger one:

    - a pre-token longer than :data:`MAX_BPE_BYTES` (4,096) UTF-8 bytes (a 5 MB word, a page of
      Chinese without punctuation) counts its byte length, the most a byte-level BPE can give;
    - special-token strings in the text (``<|im_start|>``) count as plain text, and the 21 byte
      values missing from SmolLM2's vocabulary (control characters U+0004, U+0006, U+0013,
      U+0014, U+0016, U+001D; lead bytes of unassigned planes), which its tokenizer drops,
      count one each;
    - characters unassigned in Python's Unicode database (newer than it) and a number of
      category No/Nl next to a digit ("1²") may be cut differently (untested to be larger).

    For another model's tokenizer it is an estimate: SmolLM2's 49k vocabulary gives as many or
    more tokens than most larger vocabularies (Llama 3, Qwen, GPT-4o) on English, code and
    most scripts, but nothing is guaranteed. To enforce a budget in a specific model's tokens,
    pass ``token_counter=hf_token_counter(tokenizer)`` (or any ``str -> int``) to the index.

    Parameters
    ----------
    text : str

    Returns
    -------
    int
        >= 0; 0 for empty text, never more than the UTF-8 length of ``text``.

    Notes
    -----
    Linear time: about 2-3 million characters per second of English on one core (pre-tokens
    are remembered), 0.3-1 million on Chinese or Thai (``benchmarks/bench_tokens.py``). The
    merge table is read once, on the first call (~0.1 s). Memory: a text longer than
    :data:`COUNT_BLOCK_CHARS` (256k characters) is read by blocks cut where a non-space
    character meets a space, so at most one block's pre-tokens are held at once (20 MB of
    ``"a "`` adds about 2 MB; in one pass it added 680 MB).
    """
    if not text:
        return 0
    get = _PIECE_COUNTS.__getitem__
    n = len(text)
    if n <= COUNT_BLOCK_CHARS:
        return sum(map(get, _PRETOKEN_RE.findall(text)))
    # Long texts go by blocks cut where a non-space character meets a space (always a boundary
    # between two pre-tokens), so the list of pre-tokens held at once is bounded: findall of
    # 20 MB of "a " made a list of 10M strings (450 MB).
    total, pos = 0, 0
    while pos < n:
        end = pos + COUNT_BLOCK_CHARS
        cut = n
        if end < n:
            m = _CUT_RE.search(text, end)
            cut = m.start() if m is not None else n
        if cut - pos <= 2 * COUNT_BLOCK_CHARS:
            total += sum(map(get, _PRETOKEN_RE.findall(text, pos, cut)))
        else:  # no space for a long stretch: one pre-token at a time
            total += sum(get(m.group()) for m in _PRETOKEN_RE.finditer(text, pos, cut))
        pos = cut
    return total


#: :func:`count_tokens` cuts texts longer than this many characters into blocks.
COUNT_BLOCK_CHARS = 1 << 18
# A space that follows a non-space character: a boundary of the pre-tokenizer's pieces.
_CUT_RE = re.compile(rf"(?<=[^{_WS}])[{_WS}]")

#: Most tokens of one unit a MixPR index stores or loads per character of the unit, plus
#: :data:`TOKEN_SLACK`: a byte-level tokenizer gives at most one token per UTF-8 byte (at most 4
#: per character); the slack leaves room for a counter that adds tokens of its own.
MAX_TOKENS_PER_CHAR = 4
TOKEN_SLACK = 1024


def count_units(texts: Sequence[str], token_counter: TokenCounter | None = None) -> np.ndarray:
    """Token counts of units (non-empty texts) as a token budget uses them, ``(len(texts),)
    int64``: :func:`count_many`, each clamped to ``[1, MAX_TOKENS_PER_CHAR * len(text) +
    TOKEN_SLACK]``, so every unit costs at least one token and a sum of counts cannot overflow
    (the range a saved index's counts are checked against when it is loaded)."""
    counts = count_many(texts, token_counter)
    if not len(counts):
        return counts
    most = MAX_TOKENS_PER_CHAR * np.fromiter(map(len, texts), np.int64, len(texts)) + TOKEN_SLACK
    return np.clip(counts, 1, most)


def hf_token_counter(tokenizer) -> TokenCounter:
    """Wrap a Hugging Face tokenizer as a token counter (special tokens not counted).

    Parameters
    ----------
    tokenizer : transformers.PreTrainedTokenizerBase
        Any tokenizer called as ``tokenizer(text, add_special_tokens=False)``.

    Returns
    -------
    callable str -> int
        ``len(tokenizer(text, add_special_tokens=False)["input_ids"])``: pass it as
        ``token_counter=`` to enforce a token budget in that model's tokens exactly.
    """

    def _count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return _count


def count_many(texts: Sequence[str], token_counter: TokenCounter | None = None) -> np.ndarray:
    """Token counts of many texts, ``(len(texts),) int64``."""
    counter = token_counter or count_tokens
    return np.fromiter((counter(t) for t in texts), dtype=np.int64, count=len(texts))
