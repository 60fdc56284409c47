"""Corpus inputs: ``(doc_id, text)`` pairs from an iterable, a folder, a glob or a JSONL file.

Every document id is checked (a non-empty ``str`` of at most :data:`MAX_ID_CHARS` characters,
no control characters, no absolute path, no ``.``/``..`` segment, no backslash) and must be
unique in the corpus; :func:`safe_component` turns it into the name of the document's index
folder (a readable slug plus a hash of the id, so distinct ids never share a folder, even on a
case-insensitive file system).
"""

from __future__ import annotations

import glob
import hashlib
import io
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from longctx.corpus.manifest import _CONTROL, MAX_SOURCE_CHARS
from longctx.io import MAX_FILE_BYTES, InputError, open_regular_file, read_text_file
from longctx.persist import JSONTextError, loads_strict

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_ID_CHARS",
    "CorpusInput",
    "SkippedInFolder",
    "check_doc_id",
    "read_corpus_input",
    "read_documents",
    "safe_component",
]

#: Longest document id accepted (characters).
MAX_ID_CHARS = 512
#: Largest JSONL line read (bytes of UTF-8), as large as a text file may be
#: (:data:`longctx.io.MAX_FILE_BYTES`, 200 MiB): one record is one document. A longer line is an
#: error naming the line, after at most this many bytes were read.
MAX_JSONL_LINE_BYTES = MAX_FILE_BYTES

_UNSAFE_SLUG = re.compile(r"[^A-Za-z0-9._-]+")
_GLOB_CHARS = set("*?[")
#: The path separators of this system (``/``; ``\\`` too on Windows).
_SEPS = tuple({"/", os.sep, os.altsep or "/"})
_SEP_RE = re.compile("|".join(re.escape(c) for c in _SEPS))


def check_doc_id(doc_id, where: str = "documents") -> str:
    """Return ``doc_id`` when it is a safe document id, else raise ``ValueError``/``TypeError``
    naming ``where`` and the id (see the module docstring for the rules)."""
    if not isinstance(doc_id, str):
        raise TypeError(f"{where}: a document id must be a str, got {type(doc_id).__name__}")
    if not doc_id.strip():
        raise ValueError(f"{where}: a document id is empty")
    if len(doc_id) > MAX_ID_CHARS:
        raise ValueError(
            f"{where}: document id {doc_id[:40]!r}... has {len(doc_id)} characters "
            f"(at most {MAX_ID_CHARS})"
        )
    if _CONTROL.search(doc_id):
        raise ValueError(f"{where}: document id {doc_id!r} holds a control character")
    if "\\" in doc_id or doc_id.startswith("/") or re.match(r"^[A-Za-z]:", doc_id):
        raise ValueError(
            f"{where}: document id {doc_id!r} is an absolute path or holds a backslash"
        )
    if any(part in (".", "..") for part in doc_id.split("/")):
        raise ValueError(f"{where}: document id {doc_id!r} holds a '.' or '..' path segment")
    return doc_id


def safe_component(doc_id: str) -> str:
    """The index folder name of ``doc_id``: ``<slug>-<10 hex digits of sha256(doc_id)>``, where
    the slug keeps ``[A-Za-z0-9._-]`` (other runs become ``_``, at most 60 characters)."""
    slug = _UNSAFE_SLUG.sub("_", doc_id).strip("._")[:60] or "doc"
    return f"{slug}-{hashlib.sha256(doc_id.encode('utf-8')).hexdigest()[:10]}"


def _is_glob(s: str) -> bool:
    return any(c in _GLOB_CHARS for c in s)


def _jsonl_lines(path: Path, where: str) -> Iterator[tuple[int, str]]:
    """``(number, line)`` of each line of the file ``path``, as text mode numbers them (a line
    ends at ``\\n``, ``\\r\\n`` or ``\\r``), each read as bytes (at most
    :data:`MAX_JSONL_LINE_BYTES` up to its ``\\n``) and decoded on its own; a byte order mark
    opening the file (``EF BB BF``, written by Notepad and PowerShell) is dropped (json refused
    it with advice for Python programmers)."""
    n = 0
    with open_regular_file(path)[0] as f:  # a FIFO put there since the check: refused
        for raw in iter(lambda: f.readline(MAX_JSONL_LINE_BYTES + 1), b""):
            if len(raw) > MAX_JSONL_LINE_BYTES:
                raise InputError(
                    f"{where} line {n + 1}: longer than the limit of {MAX_JSONL_LINE_BYTES:,} bytes"
                )
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{where} line {n + 1}: not UTF-8 (byte {exc.start} of the line: "
                    f"{raw[exc.start : exc.start + 1]!r}): a JSONL file is UTF-8"
                ) from None
            raw = b""  # not held while the line is parsed (a 100 MB line: 244 MB peak, not 336)
            if n == 0 and text.startswith("\ufeff"):  # a UTF-8 byte order mark (Notepad,
                text = text[1:]  # PowerShell): not JSON, and not the user's text
            for line in io.StringIO(text, newline=None) if "\r" in text else (text,):
                n += 1
                yield n, line


def _read_jsonl(path: Path, id_field: str, text_field: str) -> Iterator[tuple[str, str]]:
    """The ``(id, text)`` records of a JSONL file (:func:`_jsonl_lines`), a bad line named by
    its number, every error in one form, ``'<file>' line <n>: <what is wrong>``: longer than
    :data:`MAX_JSONL_LINE_BYTES`, not UTF-8 (the text codec said only "can't decode byte 0xff
    in position 42", naming neither the file nor the line), not a JSON object, a key twice, a
    text that is not a ``str`` or is empty, an id that is neither a ``str`` nor an ``int``
    (an :class:`InputError`), an id that is unsafe (:func:`check_doc_id`: ``ValueError`` /
    ``TypeError``) or given on an earlier line (an :class:`InputError`)."""
    where = repr(str(path))
    first_line: dict[str, int] = {}
    for n, line in _jsonl_lines(path, where):
        if not line.strip():
            continue
        try:  # without its line ending: an error's column is the line's own (the newline
            # was reported as "Invalid control character" past the end of an open string)
            rec = loads_strict(line.rstrip("\r\n"))
        except JSONTextError as exc:  # not JSON, nested too deeply, a key twice
            raise InputError(f"{where} line {n}: {exc}") from None
        if not isinstance(rec, dict) or id_field not in rec or text_field not in rec:
            raise InputError(
                f"{where} line {n}: expected an object with {id_field!r} and {text_field!r} fields"
            )
        doc_id, text = rec[id_field], rec[text_field]
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str):
            raise InputError(
                f"{where} line {n}: field {id_field!r} must be a string or an integer, got "
                f"{type(doc_id).__name__}"
            )
        if not isinstance(text, str):
            raise InputError(
                f"{where} line {n}: field {text_field!r} must be a string, got "
                f"{type(text).__name__}"
            )
        check_doc_id(doc_id, f"{where} line {n}")
        if doc_id in first_line:
            raise InputError(
                f"{where} line {n}: document id {doc_id!r} is given twice (first on line "
                f"{first_line[doc_id]})"
            )
        first_line[doc_id] = n
        if not text.strip():
            raise InputError(f"{where} line {n}: field {text_field!r} is empty")
        yield doc_id, text


def _glob_files(pattern: str) -> list[str]:
    """The files ``pattern`` matches, sorted, as ``glob.glob(pattern, recursive=True)`` finds
    them, except that ``**`` never enters a link to a folder, as a folder input never does:
    ``glob.glob`` follows them, so a folder holding two links to itself made ``DIR/**/*.txt``
    walk 2**40 paths (session 20: it never finished; one such link read each file 41 times).

    As ``glob.glob``: a part that does not start with "." matches no name starting with one,
    and the folders ``**`` matches never do; a ``**`` inside a name is a ``*`` (``a**``); a
    pattern ending in a separator matches folders only, so no file. Each stretch of the pattern
    between ``**`` parts is matched by ``glob.glob`` itself (no recursion there), below each
    folder :func:`_dirs_below` gives for the ``**`` before it.

    Session 20 review: the pathlib version let every part match hidden names once any part
    started with "." (``d/*/.hid/*.txt`` read ``d/.h/.hid/w.txt`` and ``.secret.txt``,
    ``d/*/../x.txt`` read ``x.txt`` twice), refused ``a**`` and read files for ``d/*/``."""
    if pattern.endswith(_SEPS):
        return []
    comps = _SEP_RE.split(pattern)
    comps = [c for n, c in enumerate(comps) if c != "**" or not n or comps[n - 1] != "**"]
    if "**" not in comps:
        return sorted({f for f in glob.glob(pattern) if os.path.isfile(f)})
    i = comps.index("**")
    dirs = [""]  # prefixes: "" (the working folder) or a path ending in a separator
    if i:
        found = glob.glob("/".join(comps[:i]) or "/")
        dirs = [d if d.endswith(_SEPS) else d + "/" for d in found if os.path.isdir(d)]
    rest = comps[i:]  # starts with "**"
    while True:
        dirs = [sub for d in dirs for sub in _dirs_below(d)]
        j = rest.index("**", 1) if "**" in rest[1:] else len(rest)
        stretch, rest = "/".join(rest[1:j]) or "*", rest[j:]  # a last ``**``: files too
        found = [d + f for d in dirs for f in glob.glob(stretch, root_dir=d or None)]
        if not rest:
            return sorted({f for f in found if os.path.isfile(f)})
        dirs = [f + "/" for f in found if os.path.isdir(f)]


def _dirs_below(top: str) -> Iterator[str]:
    """``top`` (``""`` or a path ending in a separator) and every folder below it that ``**``
    matches: none whose name starts with ".", none reached through a link to a folder (a walk
    of its own, not :func:`os.walk`, which recurses on Python 3.11: a deep tree would overflow)."""
    stack = [top]
    while stack:
        d = stack.pop()
        yield d
        try:
            with os.scandir(d or ".") as entries:
                subs = [
                    d + e.name + "/"
                    for e in entries
                    if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
                ]
        except OSError:  # unreadable or gone: glob.glob skips it too
            continue
        stack.extend(reversed(subs))


def _source_key(path: str) -> str | None:
    """The key a corpus records for a folder, glob or JSONL file named on the command line (its
    absolute path, or the absolute pattern), so that the next build over the same source knows
    which of its documents are gone."""
    key = os.path.abspath(path)
    if len(key) > MAX_SOURCE_CHARS or _CONTROL.search(key):
        return None  # not recorded: its documents are never removed by a later build
    return key


def _read_files(files, ids, where: str, skipped: list) -> Iterator[tuple[str, str]]:
    """Each of ``files`` read as text, id from ``ids``; a file that cannot be read as text
    (binary, unreadable, empty, too large) is skipped with one warning line and its id put in
    ``skipped``, the others go on. ``InputError`` when none is left."""
    n_read = 0
    for f, doc_id in zip(files, ids):
        try:
            text = read_text_file(f)
        except (InputError, OSError) as exc:
            logger.warning("skipped, not indexed: %s", _first_line(exc))
            skipped.append(doc_id)
            continue
        n_read += 1
        yield doc_id, text
    if not n_read:
        raise InputError(f"{where} holds no file readable as text")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _from_path(
    path: str | os.PathLike, id_field: str, text_field: str, seen: _Sources | None = None
) -> Iterator[tuple[str, str]]:
    s = os.fspath(path)
    p = Path(s)
    seen = _Sources() if seen is None else seen
    if p.is_dir():
        files, passed = _folder_files(p, s)
        if passed.total:
            logger.debug("%s", passed)
            seen.passed_over.append(passed)
        if not files:
            extra = f" (skipped: {passed.counts()})" if passed.total else ""
            raise InputError(f"folder {s!r} holds no file{extra}")
        ids = [f.relative_to(p).as_posix() for f in files]
        yield from seen.track(
            _source_key(s), _read_files(files, ids, f"folder {s!r}", seen.skipped)
        )
    elif p.is_file():
        if p.suffix.lower() == ".jsonl":
            yield from seen.track(_source_key(s), _read_jsonl(p, id_field, text_field))
        else:
            yield p.name, read_text_file(p)
    elif _is_glob(s):
        files = _glob_files(s)
        if not files:
            raise InputError(f"glob {s!r} matches no file")
        ids = [Path(f).name for f in files]
        yield from seen.track(_source_key(s), _read_files(files, ids, f"glob {s!r}", seen.skipped))
    else:
        raise InputError(f"{s!r} is not a file, a folder or a glob that matches files")


class _Sources:
    """What reading the paths of a corpus found: the source (folder, glob, JSONL file) of each
    document read from one, the sources named, and the ids of the files skipped."""

    def __init__(self):
        self.of: dict[str, str] = {}
        self.named: set[str] = set()
        self.skipped: list[str] = []
        self.passed_over: list[SkippedInFolder] = []

    def track(self, source: str | None, pairs) -> Iterator[tuple[str, str]]:
        if source is not None:
            self.named.add(source)
        for doc_id, text in pairs:
            if source is not None and isinstance(doc_id, str):
                self.of.setdefault(doc_id, source)
            yield doc_id, text


@dataclass(frozen=True)
class SkippedInFolder:
    """What the walk of a folder input passed over on purpose (never read, never an error).

    Attributes
    ----------
    folder : str
        The folder as it was named (a path given to :func:`read_corpus_input`).
    hidden_files : int
        Files (or links to files) whose name starts with ".", anywhere under the folder outside
        hidden folders.
    hidden_folders : int
        Folders whose name starts with "." (each counted once; nothing under it is walked).
    folder_links : int
        Links to a folder (never walked into: a link to a parent would loop).
    """

    folder: str
    hidden_files: int = 0
    hidden_folders: int = 0
    folder_links: int = 0

    @property
    def total(self) -> int:
        """Entries passed over (hidden files and folders, links to folders)."""
        return self.hidden_files + self.hidden_folders + self.folder_links

    def counts(self) -> str:
        """``3 hidden files, 1 hidden folder and 1 link to a folder`` (counts of zero left
        out; ``""`` when nothing was passed over)."""
        parts = [
            _plural(n, one, many)
            for n, one, many in (
                (self.hidden_files, "hidden file", "hidden files"),
                (self.hidden_folders, "hidden folder", "hidden folders"),
                (self.folder_links, "link to a folder", "links to folders"),
            )
            if n
        ]
        return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)

    def __str__(self) -> str:
        under = self.folder if self.folder.endswith(_SEPS) else self.folder + "/"
        return f"skipped {self.counts()} under {under}"


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _folder_files(top: Path, name: str) -> tuple[list[Path], SkippedInFolder]:
    """The files under the folder ``top`` (named ``name`` by the caller), sorted by path, and
    what was passed over: hidden entries (a name starting with "."; a hidden folder is not
    walked) and links to folders (not walked). A link to a file is a file; anything else that
    is not a file (a FIFO, a device, a broken link) is left out, uncounted; a folder that
    cannot be listed is left out. A walk of its own (a stack, no recursion: a deep tree cannot
    overflow), which :class:`pathlib.Path.rglob` would do without the counts."""
    files: list[Path] = []
    hidden_files = hidden_folders = links = 0
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:  # unreadable or gone: rglob skipped it too
            continue
        for e in entries:
            is_dir = e.is_dir()  # through a link too
            if e.name.startswith("."):
                if is_dir:
                    hidden_folders += 1
                elif e.is_file():
                    hidden_files += 1
            elif is_dir and e.is_symlink():
                links += 1
            elif is_dir:
                stack.append(Path(e.path))
            elif e.is_file():
                files.append(Path(e.path))
    return sorted(files), SkippedInFolder(name, hidden_files, hidden_folders, links)


@dataclass(frozen=True)
class CorpusInput:
    """The documents of a corpus build, and where they came from.

    Attributes
    ----------
    docs : list of (str, str)
        ``(doc_id, text)`` in input order, as :func:`read_documents` returns them.
    sources : dict str -> str
        For each document read from a folder, a glob or a JSONL file: that source (its absolute
        path or pattern). Documents given as pairs or as single files have none.
    named : frozenset of str
        The sources this call read (a document recorded under one of them and not read now has
        been removed from it).
    skipped : tuple of str
        Ids of files of a folder or glob skipped because they cannot be read as text (binary,
        unreadable, empty, too large), each logged as one warning.
    passed_over : tuple of SkippedInFolder
        For each folder whose walk passed over hidden files or folders or links to folders:
        their counts (a folder with none has no entry).
    """

    docs: list
    sources: dict = field(default_factory=dict)
    named: frozenset = frozenset()
    skipped: tuple = ()
    passed_over: tuple = ()


def read_documents(
    documents, *, id_field: str = "id", text_field: str = "text"
) -> list[tuple[str, str]]:
    """The corpus as a list of ``(doc_id, text)``, checked before any index is built.

    Parameters
    ----------
    documents :
        An iterable of ``(doc_id, text)`` pairs; a folder (every non-hidden file under it,
        recursively, read by :func:`longctx.io.read_text_file`; id = the path relative to the
        folder, ``/``-separated; a file that cannot be read as text is skipped with one
        warning; hidden files and folders and links to folders are passed over, counted in
        :attr:`CorpusInput.passed_over`); a ``.jsonl`` file (one JSON object per line with
        ``id_field`` and ``text_field``); any other file (one document, id = its file name); a
        glob pattern (each matching file, id = its file name, skipped as in a folder); or a list
        of such paths (the CLI's ``PATH...``).
    id_field, text_field : str
        JSONL field names.

    Returns
    -------
    list of (str, str)
        In input order (files sorted by path).

    Raises
    ------
    InputError
        A path that is missing, a single file (named on its own) that is unreadable, binary or
        empty, a folder or glob with no file readable as text, a bad JSONL line.
    ValueError, TypeError
        A document id that is unsafe (see :func:`check_doc_id`) or given twice, a text that is
        not a ``str`` or is empty, no document at all.
    """
    return read_corpus_input(documents, id_field=id_field, text_field=text_field).docs


def read_corpus_input(documents, *, id_field: str = "id", text_field: str = "text") -> CorpusInput:
    """:func:`read_documents`, with the source of each document and the files skipped.

    Returns
    -------
    CorpusInput

    Raises
    ------
    InputError, ValueError, TypeError
        As :func:`read_documents`.
    """
    found = _Sources()
    if isinstance(documents, (str, os.PathLike)):
        pairs: Iterable = _from_path(documents, id_field, text_field, found)
    elif isinstance(documents, (bytes, dict)):
        raise TypeError(
            f"documents must be (doc_id, text) pairs, a folder, a glob or a JSONL file, got "
            f"{type(documents).__name__}"
        )
    else:
        items = list(documents)
        if items and all(isinstance(x, (str, os.PathLike)) for x in items):
            pairs = (pair for x in items for pair in _from_path(x, id_field, text_field, found))
        else:
            pairs = items
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for n, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(
                f"documents[{n}] must be a (doc_id, text) pair, got {type(pair).__name__}"
            )
        doc_id, text = pair
        check_doc_id(doc_id, f"documents[{n}]")
        if doc_id in seen:
            raise ValueError(f"documents: document id {doc_id!r} is given twice")
        seen.add(doc_id)
        if not isinstance(text, str):
            raise TypeError(
                f"documents[{n}] ({doc_id!r}): text must be a str, got {type(text).__name__}"
            )
        if not text.strip():
            raise ValueError(f"documents[{n}] ({doc_id!r}): text is empty")
        out.append((doc_id, text))
    if not out:
        raise ValueError("documents holds no document")
    return CorpusInput(
        docs=out,
        sources={d: found.of[d] for d, _ in out if d in found.of},
        named=frozenset(found.named),
        skipped=tuple(found.skipped),
        passed_over=tuple(found.passed_over),
    )
