"""Reading the user's text files, with clear errors for what is not text."""

from __future__ import annotations

import os
from pathlib import Path


class InputError(ValueError):
    """The user's input cannot be used (missing, empty or binary file, bad argument)."""


def read_text_file(path: str | os.PathLike) -> str:
    """Read a UTF-8 (or UTF-8 with BOM) text file, keeping its newlines exactly.

    Character offsets reported by longctx refer to the returned string (BOM removed).

    Raises
    ------
    InputError
        If the path does not exist, is a directory, is empty (or only whitespace), or is binary
        (holds NUL bytes or is not valid UTF-8).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"PATH {str(p)!r} does not exist")
    if p.is_dir():
        raise InputError(f"PATH {str(p)!r} is a directory, not a text file")
    data = p.read_bytes()
    if not data.strip():
        raise InputError(f"PATH {str(p)!r} is empty")
    if b"\x00" in data[:65536]:
        raise InputError(f"PATH {str(p)!r} looks binary (it holds NUL bytes); give a text file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"PATH {str(p)!r} is not UTF-8 text (byte {exc.start}): convert it to UTF-8 first"
        ) from None
    if not text.strip():
        raise InputError(f"PATH {str(p)!r} is empty")
    return text


def sample_text(name: str = "alice") -> str:
    """The public-domain text bundled with the package (``"alice"``: Alice's Adventures in
    Wonderland, Project Gutenberg eBook #11, header and footer kept)."""
    files = {"alice": "alice_in_wonderland.txt"}
    if name not in files:
        raise InputError(f"sample must be one of {sorted(files)}, got {name!r}")
    return read_text_file(Path(__file__).parent / "data" / files[name])
