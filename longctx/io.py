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
from pathlib import Path

logger = logging.getLogger(__name__)

#: Highest charset-normalizer "chaos" (mess ratio, 0 = clean text) accepted for a detected
#: encoding; above it the guess is treated as unsure and the file is refused.
MAX_CHAOS = 0.1
#: Chaos margin within which cp1252 is preferred to another single-byte guess (see _detect).
CP1252_MARGIN = 0.02

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


def read_text_file(path: str | os.PathLike, *, return_encoding: bool = False):
    """Read a text file, keeping its line endings exactly.

    UTF-8 (with or without BOM) and files that start with a UTF-16/32 byte-order mark are decoded
    directly; any other bytes are decoded with the encoding that ``charset-normalizer`` detects
    (cp1252, Latin-1, Shift-JIS...), refused when the detection is unsure.

    Parameters
    ----------
    path : str or os.PathLike
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
        If the path does not exist, is a directory, is empty (or only whitespace), is binary
        (holds NUL bytes without a UTF-16/32 byte-order mark), or is not UTF-8 and its encoding
        cannot be detected with confidence.
    """
    p = Path(path)
    name = repr(str(p))
    if not p.exists():
        raise InputError(f"PATH {name} does not exist")
    if p.is_dir():
        raise InputError(f"PATH {name} is a directory, not a text file")
    data = p.read_bytes()
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
    elif b"\x00" in data[:65536]:
        raise InputError(f"PATH {name} looks binary (it holds NUL bytes); give a text file")
    else:
        try:
            text, encoding = data.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
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
