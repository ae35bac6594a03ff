"""Part names (POSIX absolute paths) and content types (media-type essences).

The MessageBody naming rules (docs/body.md), made exact: a name starts with ``/``, uses only
``A-Z a-z 0-9 . - _ /``, has no ``//``, no trailing ``/``, and no ``.`` or ``..``
segment (they would make two spellings name one file). Checks are full matches,
so ``"/a\\n"`` is not a name.
"""

from __future__ import annotations

import functools
import re

NAME_CHARS = "A-Za-z0-9._\\-"
#: One character of a name segment, as a regex character class.
SEGMENT_CHAR = f"[{NAME_CHARS}]"
_SEGMENT = (
    f"(?:[A-Za-z0-9_\\-]{SEGMENT_CHAR}*"
    f"|\\.[A-Za-z0-9_\\-]{SEGMENT_CHAR}*"
    f"|\\.\\.{SEGMENT_CHAR}+)"
)
#: Every valid name, as a regex (also fed to the automata in compat.py).
NAME_REGEX = f"/{_SEGMENT}(?:/{_SEGMENT})*"
_NAME_RE = re.compile(NAME_REGEX)
_ALLOWED_RE = re.compile(f"[/{NAME_CHARS}]*")

#: RFC 6838 restricted-name characters, lower-cased (we compare essences lower-cased).
CT_CHARS = "a-z0-9!#$&^_.+\\-"
CT_CHAR = f"[{CT_CHARS}]"
_CT_TOKEN = f"[a-z0-9]{CT_CHAR}*"
#: Every content-type essence we accept, as a regex.
CONTENT_TYPE_REGEX = f"{_CT_TOKEN}/{_CT_TOKEN}"
_CT_RE = re.compile(CONTENT_TYPE_REGEX)


def name_problem(name: str) -> str | None:
    """Why ``name`` is not a valid part name, or None if it is."""
    if not isinstance(name, str):
        return f"name must be a string, not {type(name).__name__}"
    if _NAME_RE.fullmatch(name):
        return None
    if not name.startswith("/"):
        return f"name {name!r} must start with '/' (a body's names are paths: write '/{name}')"
    bad = _ALLOWED_RE.match(name)
    assert bad is not None
    if bad.end() < len(name):
        char = name[bad.end()]
        return (
            f"name {name!r} contains {char!r} at position {bad.end()}; "
            "only A-Z a-z 0-9 . - _ / are allowed"
        )
    if name == "/":
        return "name '/' has no segment; a name must not end with '/'"
    if "//" in name:
        return f"name {name!r} contains '//'"
    if name.endswith("/"):
        return f"name {name!r} must not end with '/'"
    return f"name {name!r} contains a '.' or '..' segment"


def check_name(name: str) -> str:
    """Return ``name`` if valid, else raise ValueError saying which rule it broke."""
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


def is_valid_name(name: object) -> bool:
    return isinstance(name, str) and _NAME_RE.fullmatch(name) is not None


# Cached: a long body or history names the same few content types on every part (a
# malformed one raises each time, and is not cached).
@functools.lru_cache(maxsize=1024)
def content_type_essence(content_type: str) -> str:
    """``"Text/Plain; charset=utf-8"`` -> ``"text/plain"``; raise ValueError if malformed."""
    essence = content_type.split(";", 1)[0].strip().lower()
    if not _CT_RE.fullmatch(essence):
        raise ValueError(
            f"content type {content_type!r} is not a media type like 'text/plain' "
            "(type/subtype, RFC 6838 characters)"
        )
    return essence


def content_type_param(content_type: str, key: str) -> str | None:
    """The value of parameter ``key`` (e.g. ``charset``), unquoted, or None."""
    for piece in content_type.split(";")[1:]:
        k, sep, v = piece.partition("=")
        if sep and k.strip().lower() == key:
            return v.strip().strip('"')
    return None
