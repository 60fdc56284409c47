"""MkDocs hook: Sphinx roles of the docstrings (``:class:`X```, ``:meth:`~a.b.C.m```, ...) as
links on the API pages, or as code where no page documents the target.

mkdocstrings renders a docstring's ``:class:`X``` as the text ``:class:`` followed by
``<code>X</code>``. Once every page is rendered (``on_env``, before mkdocs-autorefs resolves the
cross-references), each such role becomes an optional autorefs cross-reference to the first
documented object it names: the name as written, else (for a short or re-exported name such as
``SearchResult`` or ``longctx.MixPRIndex``) the one documented object whose path ends with it
(found with griffe, statically, as mkdocstrings does). A name that no page documents, or that
several do (``search``), is left as code. ``~a.b.C`` shows ``C``; ``title <target>`` shows
``title``. Enabled in mkdocs.yml (``hooks:``); ``tests/test_docs.py`` checks that no role is left
in the built site.
"""

from __future__ import annotations

import html
import logging
import re
from collections import defaultdict

log = logging.getLogger("mkdocs.hooks.sphinx_roles")

ROLES = ("class", "meth", "func", "data", "mod", "attr", "obj", "exc")
ROLE_RE = re.compile(r":(?:py:)?(?P<role>" + "|".join(ROLES) + r"):<code>(?P<body>[^<]*)</code>")
# a role kept verbatim inside code, as in a numpy docstring's type ("list of :class:`Passage`")
ROLE_IN_CODE_RE = re.compile(r":(?:py:)?(?:" + "|".join(ROLES) + r"):`(?P<body>[^`<]*)`")
_TITLED = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")
PACKAGES = ("longctx", "llamaindex_longctx", "langchain_longctx")

_paths: dict[str, list[tuple[str, str]]] = {}  # suffix -> [(path, canonical path)]


def _load_paths(search_path: str) -> None:
    """Every object path of the packages, indexed by each dotted suffix (static: griffe)."""
    _paths.clear()
    try:
        import griffe

        loader = griffe.GriffeLoader(search_paths=[search_path])
        modules = [loader.load(name) for name in PACKAGES]
    except Exception as exc:  # the roles then stay code; the build goes on
        log.warning("sphinx_roles: cannot load the packages with griffe (%s)", exc)
        return
    found = defaultdict(list)

    def walk(obj) -> None:
        for member in obj.members.values():
            if member.is_alias:
                canonical = member.target_path
            else:
                canonical = member.path
                walk(member)
            parts = member.path.split(".")
            for i in range(len(parts)):
                found[".".join(parts[i:])].append((member.path, canonical))

    for module in modules:
        found[module.path].append((module.path, module.path))
        walk(module)
    _paths.update(found)


def on_config(config):
    _load_paths(config["config_file_path"].rsplit("/", 1)[0] or ".")
    return config


def _documented(autorefs, identifier: str) -> bool:
    try:
        autorefs.get_item_url(identifier)
    except Exception:  # KeyError: no page documents it
        return False
    return True


def _resolve(autorefs, target: str) -> str | None:
    """The documented identifier ``target`` names, or ``None`` (none, or ambiguous)."""
    if autorefs is None:
        return None
    if _documented(autorefs, target):
        return target
    by_canonical = defaultdict(list)
    parts = target.split(".")
    for i in range(len(parts)):  # "longctx.MixPRIndex": try "MixPRIndex" too
        for path, canonical in _paths.get(".".join(parts[i:]), ()):
            if _documented(autorefs, path):
                by_canonical[canonical].append(path)
        if by_canonical:
            break
    if len(by_canonical) != 1:
        return None
    return sorted(next(iter(by_canonical.values())), key=len)[0]


def rewrite_roles(content: str, autorefs) -> str:
    """``content`` (a page's HTML) with every Sphinx role replaced by a link or code."""

    def repl(m: re.Match) -> str:
        title, target = _split(m["body"])
        code = f"<code>{html.escape(title, quote=False)}</code>"
        identifier = _resolve(autorefs, target) if target else None
        if identifier is None:
            return code
        return f'<autoref identifier="{html.escape(identifier)}" optional>{code}</autoref>'

    content = ROLE_RE.sub(repl, content)
    # already inside <code>: the title alone (a link cannot sit in the middle of code)
    return ROLE_IN_CODE_RE.sub(lambda m: html.escape(_split(m["body"])[0], quote=False), content)


def _split(body: str) -> tuple[str, str]:
    """``(title, target)`` of a role's text: ``~a.b.C`` -> ``("C", "a.b.C")``, ``t <x.y>`` ->
    ``("t", "x.y")``, ``a.b`` -> ``("a.b", "a.b")``."""
    body = html.unescape(body).strip()
    titled = _TITLED.match(body)
    if titled:
        return titled["title"], titled["target"].lstrip("~.").strip()
    title = body.lstrip("~").rsplit(".", 1)[-1] if body.startswith("~") else body
    return title, body.lstrip("~.").strip()


def on_env(env, config, files):
    autorefs = config["plugins"].get("autorefs")
    for file in files:
        page = file.page
        if page is not None and page.content and ":" in page.content:
            page.content = rewrite_roles(page.content, autorefs)
    return env
