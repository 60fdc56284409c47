"""Reading the user's text files, with clear errors for what is not text.

Offsets everywhere in longctx are characters of the text *as decoded*, with its line endings kept
(``\\r\\n`` stays two characters, as Python's ``open(path, encoding=..., newline="")`` reads it) and
a byte-order mark removed. The encoding used is what :func:`read_text_file` returns with
``return_encoding=True``, so a file is sliced back with
``open(path, encoding=encoding, newline="").read()[start:end]``.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
import stat
import unicodedata
from pathlib import Path

from longctx.checks import check_int

logger = logging.getLogger(__name__)

#: Highest charset-normalizer "chaos" (mess ratio, 0 = clean text) accepted for a detected
#: encoding; above it the guess is treated as unsure and the file is refused.
MAX_CHAOS = 0.1
#: Largest file :func:`read_text_file` reads by default (bytes; the CLI's ``--max-bytes``):
#: 200 MiB, about 35 million English words. Text is held in memory several times over while
#: indexing, so a larger input is refused up front instead of exhausting memory.
MAX_FILE_BYTES = 200 * 2**20
#: A file that is not valid UTF-8 is still read as UTF-8 (the invalid bytes replaced by U+FFFD,
#: with a warning giving their byte offsets) when its valid multi-byte UTF-8 sequences carry at
#: least this many times as many continuation bytes as there are invalid bytes: one stray Latin-1
#: byte in a UTF-8 file, not a Latin-1 file.
UTF8_EVIDENCE_RATIO = 10
_ESCAPED_RE = re.compile("[\udc80-\udcff]")

# Byte-order marks that name their encoding (longest first: UTF-32 LE starts with UTF-16 LE's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class InputError(ValueError):
    """The user's input cannot be used (missing, empty or binary file, bad argument)."""


#: Western (Latin-script) single-byte code pages tried before any other legacy encoding, in
#: order of preference: cp1252 (Windows Western, a superset of Latin-1's printable characters),
#: then the Windows code pages of Central Europe, Turkey and the Baltic states.
LATIN_CODE_PAGES = ("cp1252", "cp1250", "cp1254", "cp1257")
#: Coherence (charset-normalizer's language fit, 0-1) by which another Latin code page must beat
#: cp1252 when both decode every letter as a letter (Turkish in cp1254).
LATIN_COHERENCE_MARGIN = 0.05
# Bytes cp1252 leaves undefined (Latin-1 reads them as C1 control characters).
_CP1252_UNDEFINED = frozenset(b"\x81\x8d\x8f\x90\x9d")
_HIGH_RUN_RE = re.compile(rb"[\x80-\xff]+")
_NON_ASCII_RE = re.compile("[^\x00-\x7f]")
_CONTROL_RE = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
# Western text is refused when more than 1% of it is control characters, or its best Latin
# decoding has a symbol inside a word for more than 1 in this many runs of non-ASCII bytes
# (random bytes: 10% control characters, a symbol for 1 run in 5 or more).
MAX_MISFIT_SHARE_INV = 5
_NORMAL_NAMES = {"latin_1": "cp1252", "iso8859_15": "cp1252", "iso8859_2": "cp1250"}
_NORMAL_NAMES |= {"iso8859_9": "cp1254", "iso8859_13": "cp1257"}


def _looks_western(data: bytes) -> bool:
    """True when the non-ASCII bytes sit mostly alone or in pairs inside ASCII words, as the
    accented letters of a Latin-script language do ("garçon", "ação"). Cyrillic, Greek, Hebrew,
    Arabic, Thai and CJK text in a legacy encoding spells whole words in non-ASCII bytes: runs
    of 3 or more hold most of them."""
    runs = _HIGH_RUN_RE.findall(data)
    total = sum(map(len, runs))
    in_long_runs = sum(len(r) for r in runs if len(r) >= 3)
    return in_long_runs * 2 < total


def _misfits(text: str) -> int:
    """Characters a wrong Latin code page produces: U+FFFD, control characters, and symbols
    (not letters, marks, punctuation or spaces: ``³ ¹ £ ¤ ¦``) with a letter on both sides
    ("g³¹b" for Polish "głąb" read as cp1252)."""
    bad = 0
    for m in _NON_ASCII_RE.finditer(text):
        i, c = m.start(), m.group()
        cat = unicodedata.category(c)
        if c == "\ufffd" or cat == "Cc":
            bad += 1
        elif cat[0] in "SN" and 0 < i < len(text) - 1:
            if (text[i - 1].isalpha() or text[i - 1] > "\x7f") and (
                text[i + 1].isalpha() or text[i + 1] > "\x7f"
            ):
                bad += 1
    return bad


def _decode_cp1252(data: bytes, name: str) -> str:
    """``data`` as cp1252; its 5 undefined bytes (a stray byte in an ASCII file) become U+FFFD
    with a warning giving their byte offsets."""
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        pass
    offsets = [i for i, b in enumerate(data) if b in _CP1252_UNDEFINED]
    logger.warning(
        "PATH %s is read as cp1252 except for %d byte(s) it does not define (first at byte "
        "offset(s) %s), read as U+FFFD: offsets refer to open(path, encoding='cp1252', "
        "errors='replace', newline='')",
        name,
        len(offsets),
        ", ".join(map(str, offsets[:5])),
    )
    return data.decode("cp1252", "replace")


def _detect_latin(data: bytes, name: str, matches) -> tuple[str, str]:
    """Western text: cp1252 unless another Latin code page decodes it with fewer misfits
    (Polish "g³¹b" -> "głąb" in cp1250), or as few and charset-normalizer finds its language
    clearly more coherent (Turkish in cp1254). Rare code pages (cp775, cp437, mac_iceland,
    hp_roman8, Big5) are never chosen for Western text."""
    decoded = {enc: data.decode(enc, "replace") for enc in LATIN_CODE_PAGES}
    misfits = {enc: _misfits(text) for enc, text in decoded.items()}
    for enc in LATIN_CODE_PAGES[1:]:
        if "\ufffd" in decoded[enc]:  # a byte this code page does not define: not it
            misfits[enc] = len(data) + 1
    best = min(LATIN_CODE_PAGES, key=lambda enc: misfits[enc])  # cp1252 first on ties
    text = decoded[best]
    symbols = misfits[best] - text.count("\ufffd")
    if len(_CONTROL_RE.findall(text)) * 100 > len(text) or symbols * MAX_MISFIT_SHARE_INV > len(
        _HIGH_RUN_RE.findall(data)
    ):
        raise InputError(
            f"PATH {name} is not UTF-8 text and its encoding cannot be detected with "
            "confidence: convert it to UTF-8 first"
        )
    if best == "cp1252" and matches:
        coherence = {}
        for m in matches:
            for enc in m.could_be_from_charset:
                coherence.setdefault(_NORMAL_NAMES.get(enc, enc), m.coherence)
        rivals = [
            enc
            for enc in LATIN_CODE_PAGES[1:]
            if misfits[enc] == misfits["cp1252"]
            and decoded[enc] != decoded["cp1252"]
            and "cp1252" in coherence  # both measured by charset-normalizer
            and coherence.get(enc, 0.0) > coherence["cp1252"] + LATIN_COHERENCE_MARGIN
        ]
        if rivals:
            best = max(rivals, key=lambda enc: coherence[enc])
    if best == "cp1252":
        return _decode_cp1252(data, name), "cp1252"
    return data.decode(best), best


def _script_letters(text: str) -> float:
    """Share of the non-ASCII characters of ``text`` (its first million characters) that are
    letters, marks, punctuation or spaces (a right legacy decoding of Cyrillic or Japanese
    gives ~1.0; a wrong one symbols and control characters)."""
    chars = _NON_ASCII_RE.findall(text, 0, 1_000_000)
    if not chars:
        return 1.0
    ok = sum(unicodedata.category(c)[0] in "LMPZ" for c in chars)
    return ok / len(chars)


def _detect(data: bytes, name: str) -> tuple[str, str]:
    """Decode bytes that are not UTF-8, or refuse.

    Western text (non-ASCII bytes alone or in pairs within words) is read with a Latin code
    page: cp1252 unless another decodes it clearly better (:func:`_detect_latin`). Other text
    takes charset-normalizer's best guess (cp1251, Shift-JIS, GB18030...) only when it is
    confident (chaos at most :data:`MAX_CHAOS`) and the decoded non-ASCII characters are
    letters of a script; UTF-16/32 guesses without a byte-order mark are ignored (text without
    NUL bytes is not UTF-16).
    """
    from charset_normalizer import from_bytes

    matches = [m for m in from_bytes(data) if not m.encoding.startswith(("utf_16", "utf_32"))]
    if _looks_western(data):
        return _detect_latin(data, name, matches)
    if matches and matches[0].chaos <= MAX_CHAOS:
        encoding = matches[0].encoding
        text = data.decode(encoding)
        if _script_letters(text) >= 0.9:
            return text, encoding
    raise InputError(
        f"PATH {name} is not UTF-8 text and its encoding cannot be detected with confidence: "
        "convert it to UTF-8 first"
    )


def _mostly_utf8(data: bytes, name: str) -> str | None:
    """``data`` decoded as UTF-8 with its few invalid bytes replaced by U+FFFD (a warning gives
    their byte offsets), or None when the bytes do not look like UTF-8 (see
    :data:`UTF8_EVIDENCE_RATIO`)."""
    escaped = data.decode("utf-8", "surrogateescape")
    bad = _ESCAPED_RE.findall(escaped)
    evidence = len(data) - len(escaped)  # continuation bytes of valid multi-byte sequences
    if not bad or evidence < UTF8_EVIDENCE_RATIO * len(bad):
        return None
    first = []
    for m in _ESCAPED_RE.finditer(escaped):
        first.append(len(escaped[: m.start()].encode("utf-8", "surrogateescape")))
        if len(first) == 5:
            break
    logger.warning(
        "PATH %s is UTF-8 except for %d invalid byte(s) (first at byte offset(s) %s), read as "
        "U+FFFD: offsets refer to open(path, encoding='utf-8', errors='replace', newline='')",
        name,
        len(bad),
        ", ".join(map(str, first)),
    )
    return data.decode("utf-8", "replace")


def open_regular_file(path: str | os.PathLike, *, max_bytes: int | None = None):
    """``(binary file, size in bytes)`` of the regular file ``path``, opened first, without
    blocking, and its descriptor's own file checked (``fstat``): a check of the path before the
    open let a FIFO put there meanwhile block the open for ever (session 20).

    Raises
    ------
    InputError
        Missing, a directory, not a regular file (a device, a FIFO, a socket), unreadable, or
        larger than ``max_bytes`` (when given); the message names ``path``.
    """
    name = repr(str(path))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise InputError(f"PATH {name} does not exist") from None
    except IsADirectoryError:
        raise InputError(f"PATH {name} is a directory, not a text file") from None
    except OSError as exc:
        raise InputError(f"PATH {name} cannot be read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"PATH {name} is a directory, not a text file")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                f"PATH {name} is not a regular file (a device, FIFO or socket): give a text file"
            )
        if max_bytes is not None and st.st_size > max_bytes:
            raise InputError(
                f"PATH {name} is {st.st_size:,} bytes, over the limit of {max_bytes:,} bytes "
                "(max_bytes, --max-bytes)"
            )
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb"), st.st_size


def read_text_file(
    path: str | os.PathLike, *, return_encoding: bool = False, max_bytes: int = MAX_FILE_BYTES
):
    """Read a text file, keeping its line endings exactly.

    In this order of preference:

    1. a byte-order mark: UTF-8 (``"utf-8-sig"``), UTF-16 or UTF-32;
    2. UTF-8; a file that is UTF-8 except for a few invalid bytes (a stray Latin-1 byte) stays
       UTF-8: those bytes become U+FFFD and a warning (logging) gives their byte offsets;
    3. Western text (its non-ASCII bytes alone or in pairs inside words, as accented Latin
       letters are): cp1252, the superset of Latin-1's printable characters, unless cp1250,
       cp1254 or cp1257 decodes it clearly better (Polish, Czech, Turkish); a byte cp1252 does
       not define (0x81 in an ASCII file) becomes U+FFFD with a warning. Rare code pages (cp775,
       cp437, mac_iceland, Big5...) are never used for Western text;
    4. other legacy encodings (cp1251, Shift-JIS, GB18030, EUC-KR...) as ``charset-normalizer``
       detects them, only when it is confident and the decoded text is letters of a script;
       otherwise the file is refused.

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int >= 1, default :data:`MAX_FILE_BYTES` (200 MiB)
        Larger files are refused before anything is read.
    return_encoding : bool, default False
        Also return the Python codec name used (``"utf-8"``, ``"utf-8-sig"`` when the file starts
        with a BOM, ``"cp1252"``...).

    Returns
    -------
    str, or (str, str) with ``return_encoding=True``
        The decoded text (BOM removed, ``\\r\\n`` kept). Character offsets reported by longctx
        refer to this string: ``open(path, encoding=encoding, newline="").read()`` is equal to it
        (with ``errors="replace"`` where a warning said bytes were replaced).

    Raises
    ------
    InputError
        If the path does not exist, is a directory or another non-regular file (a device such
        as ``/dev/zero``, a FIFO, a socket), is larger than ``max_bytes``, is empty (or only
        whitespace), is binary (holds NUL bytes without a UTF-16/32 byte-order mark), or is not
        UTF-8 and its encoding cannot be detected with confidence.
    TypeError, ValueError
        If ``max_bytes`` is not an int >= 1.
    """
    max_bytes = check_int(max_bytes, "max_bytes", minimum=1)
    p = Path(path)
    name = repr(str(p))
    f, size = open_regular_file(p, max_bytes=max_bytes)
    with f:
        data = f.read(size + 1)  # what it holds (+1 to see it grow), never max_bytes
        if len(data) > size:  # it grew (or is a /proc file of size 0): the rest, bounded
            data += f.read(max_bytes + 1 - len(data))
    if len(data) > max_bytes:
        raise InputError(f"PATH {name} grew over the limit of {max_bytes:,} bytes while read")
    if not data.strip():
        raise InputError(f"PATH {name} is empty")
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    if encoding is not None:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            raise InputError(
                f"PATH {name} starts with a {encoding.upper()} byte-order mark but does not decode "
                "as such: convert it to UTF-8 first"
            ) from None
    elif b"\x00" in data:
        raise InputError(f"PATH {name} looks binary (it holds NUL bytes); give a text file")
    else:
        try:
            text, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            mostly = _mostly_utf8(data, name)
            if mostly is not None:
                text, encoding = mostly, "utf-8"
            else:
                text, encoding = _detect(data, name)
                logger.info("read %s as %s (detected: not UTF-8)", p, encoding)
    if not text.strip():
        raise InputError(f"PATH {name} is empty")
    return (text, encoding) if return_encoding else text


def sample_text(name: str = "alice") -> str:
    """The public-domain text bundled with the package (``"alice"``: Alice's Adventures in
    Wonderland, Project Gutenberg eBook #11, header and footer kept; read as ``"utf-8-sig"``)."""
    files = {"alice": "alice_in_wonderland.txt"}
    if name not in files:
        raise InputError(f"sample must be one of {sorted(files)}, got {name!r}")
    return read_text_file(Path(__file__).parent / "data" / files[name])
