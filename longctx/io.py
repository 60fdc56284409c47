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
from pathlib import Path

from longctx.checks import check_int

logger = logging.getLogger(__name__)

#: Highest charset-normalizer "chaos" (mess ratio, 0 = clean text) accepted for a detected
#: encoding; above it the guess is treated as unsure and the file is refused.
MAX_CHAOS = 0.1
#: Chaos margin within which cp1252 is preferred to another single-byte guess (see _detect).
CP1252_MARGIN = 0.02
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


def _detect(data: bytes, name: str) -> tuple[str, str]:
    """Decode bytes that are not UTF-8 with charset-normalizer's best guess, or refuse.

    UTF-16/32 guesses without a byte-order mark are ignored (text without NUL bytes is not
    UTF-16). Western single-byte text is ambiguous between code pages (cp1250 and cp1252 decode
    "café" alike); cp1252, the most common legacy encoding, is preferred whenever it decodes the
    bytes about as cleanly (chaos within ``CP1252_MARGIN``) as the best guess.
    """
    from charset_normalizer import from_bytes

    matches = [m for m in from_bytes(data) if not m.encoding.startswith(("utf_16", "utf_32"))]
    if not matches or matches[0].chaos > MAX_CHAOS:
        raise InputError(
            f"PATH {name} is not UTF-8 text and its encoding cannot be detected with confidence: "
            "convert it to UTF-8 first"
        )
    best = matches[0]
    encoding = best.encoding
    for m in matches:
        if "cp1252" in m.could_be_from_charset and m.chaos <= best.chaos + CP1252_MARGIN:
            encoding = "cp1252"
            break
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError:  # pragma: no cover - charset-normalizer decoded it already
        return data.decode(best.encoding), best.encoding


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


def read_text_file(
    path: str | os.PathLike, *, return_encoding: bool = False, max_bytes: int = MAX_FILE_BYTES
):
    """Read a text file, keeping its line endings exactly.

    UTF-8 (with or without BOM) and files that start with a UTF-16/32 byte-order mark are decoded
    directly. A file that is UTF-8 except for a few invalid bytes (a stray Latin-1 byte) stays
    UTF-8: those bytes become U+FFFD and a warning (logging) gives their byte offsets. Any other
    bytes are decoded with the encoding that ``charset-normalizer`` detects (cp1252, Latin-1,
    Shift-JIS...), refused when the detection is unsure.

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
        refer to this string: ``open(path, encoding=encoding, newline="").read()`` is equal to it.

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
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise InputError(f"PATH {name} does not exist") from None
    except OSError as exc:
        raise InputError(f"PATH {name} cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"PATH {name} is a directory, not a text file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            f"PATH {name} is not a regular file (a device, FIFO or socket): give a text file"
        )
    if st.st_size > max_bytes:
        raise InputError(
            f"PATH {name} is {st.st_size:,} bytes, over the limit of {max_bytes:,} bytes "
            "(max_bytes, --max-bytes)"
        )
    with open(p, "rb") as f:
        data = f.read(max_bytes + 1)
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
                logger.info("read %s as %s (detected by charset-normalizer)", p, encoding)
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
