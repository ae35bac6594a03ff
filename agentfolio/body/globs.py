"""Name and content-type globs, compiled once to regular expressions.

Syntax (the same for names and content types):

* ``*``  any run of characters within one segment (never ``/``), possibly empty;
* ``?``  exactly one character within a segment;
* ``**`` zero or more whole segments; it must be a whole segment itself
  (``/a/**/b``, ``/a/**``, or for content types a leading ``**/`` or bare ``**``);
* ``{a,b}`` alternation, nestable; alternatives may contain ``/`` and wildcards.

We translate to a regex ourselves instead of calling a glob library per part
because the same regex serves two masters: Python's ``re`` for validating millions
of parts, and interegular's automata for deciding schema compatibility exactly. One
translation means the fast path and the proof talk about the same language.

Braces become regex alternation, never expansion, so the regex grows linearly with
the pattern. We still refuse patterns whose expansion *would* exceed
``MAX_EXPANSIONS``, and very long, deeply nested or wildcard-heavy ones
(``MAX_GLOB_LENGTH``, ``MAX_BRACE_DEPTH``, ``MAX_GLOB_WILDCARDS``): such a pattern is
almost certainly a mistake, and the bounds keep the automata built from it small.

Matching never backtracks badly: a glob with several wildcards is matched by RE2 in
time linear in the name (:mod:`agentfolio.body.linear`); only globs that cannot make
Python's ``re`` backtrack stay on it, because it is faster per call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from .errors import GlobError
from .linear import Fullmatch, backtracking_safe, linear_fullmatch
from .names import CT_CHAR, CT_CHARS, NAME_CHARS, SEGMENT_CHAR

MAX_GLOB_LENGTH = 512
MAX_BRACE_DEPTH = 8
MAX_EXPANSIONS = 4096
#: Unbounded wildcards (``*`` and ``**``) in one glob, braces included.
MAX_GLOB_WILDCARDS = 32

GlobKind = Literal["name", "content_type"]

_META = set("*?{},")


@dataclass(frozen=True, slots=True)
class _Star:
    pass


@dataclass(frozen=True, slots=True)
class _QMark:
    pass


@dataclass(frozen=True, slots=True)
class _Globstar:
    pass


@dataclass(frozen=True, slots=True)
class _Lit:
    char: str


@dataclass(frozen=True, slots=True)
class _Alt:
    options: tuple[tuple[object, ...], ...]


@dataclass(frozen=True)
class Glob:
    """A compiled glob: ``regex`` (source, usable by ``re``, RE2 and interegular) and
    ``fullmatch`` (linear-time whatever the pattern)."""

    pattern: str
    kind: GlobKind
    regex: str
    wildcards: int = 0
    expansions: int = 1

    def __post_init__(self) -> None:
        matcher: Fullmatch = (re.compile(self.regex).fullmatch if self.backtracking_safe
                              else linear_fullmatch(self.regex))
        object.__setattr__(self, "_fullmatch", matcher)

    @property
    def backtracking_safe(self) -> bool:
        """Whether Python's ``re`` matches this glob's regex without runaway backtracking."""
        return backtracking_safe(self.wildcards, self.expansions)

    @property
    def fullmatch(self) -> Fullmatch:
        """Truthy when ``text`` matches in full, else ``None``."""
        return self._fullmatch  # type: ignore[attr-defined, no-any-return]

    def matches(self, text: str) -> bool:
        """Full match of ``text`` (a name, or a lower-cased content-type essence)."""
        return bool(self.fullmatch(text))


class _Parser:
    def __init__(self, pattern: str, kind: GlobKind) -> None:
        self.s = pattern
        self.kind = kind
        self.i = 0
        allowed = NAME_CHARS if kind == "name" else CT_CHARS
        self.literal_re = re.compile(f"[/{allowed}]")

    def fail(self, message: str) -> GlobError:
        what = "name glob" if self.kind == "name" else "content-type glob"
        return GlobError(f"{what} {self.s!r}: {message}")

    def parse(self) -> tuple[object, ...]:
        items = self.seq(depth=0)
        if self.i < len(self.s):
            # seq() only stops early at a stray ',' or '}'.
            raise self.fail(f"unmatched {self.s[self.i]!r} at position {self.i}")
        return items

    def seq(self, depth: int) -> tuple[object, ...]:
        s = self.s
        items: list[object] = []
        while self.i < len(s):
            c = s[self.i]
            if c == "{":
                if depth + 1 > MAX_BRACE_DEPTH:
                    raise self.fail(f"braces nested deeper than {MAX_BRACE_DEPTH}")
                start = self.i
                self.i += 1
                options = [self.seq(depth + 1)]
                while self.i < len(s) and s[self.i] == ",":
                    self.i += 1
                    options.append(self.seq(depth + 1))
                if self.i >= len(s) or s[self.i] != "}":
                    raise self.fail(f"'{{' at position {start} is never closed")
                self.i += 1
                items.append(_Alt(tuple(options)))
            elif c in ",}":
                if depth == 0:
                    if c == "}":
                        raise self.fail(f"unmatched '}}' at position {self.i}")
                    raise self.fail(f"',' at position {self.i} is only allowed inside braces")
                return tuple(items)
            elif c == "*":
                if s.startswith("**", self.i):
                    star = self.globstar(depth)
                    if len(items) >= 2 and items[-1] == _Lit("/") and isinstance(items[-2], _Globstar):
                        # '**/**' means '**'; keeping both would make the second one
                        # demand the separator the first one already consumed.
                        items.pop()
                    else:
                        items.append(star)
                else:
                    items.append(_Star())
                    self.i += 1
            elif c == "?":
                items.append(_QMark())
                self.i += 1
            elif self.literal_re.fullmatch(c):
                items.append(_Lit(c))
                self.i += 1
            else:
                allowed = (
                    "A-Z a-z 0-9 . - _ /"
                    if self.kind == "name"
                    else "a-z 0-9 ! # $ & ^ _ . + - /"
                )
                raise self.fail(
                    f"{c!r} at position {self.i} is not a glob operator (* ** ? {{a,b}}) "
                    f"and cannot occur in a {self.kind.replace('_', ' ')} (allowed: {allowed})"
                )
        return tuple(items)

    def globstar(self, depth: int) -> _Globstar:
        s, i = self.s, self.i
        before_ok = i == 0 or s[i - 1] == "/"
        after_ok = i + 2 == len(s) or s[i + 2] == "/"
        if depth > 0 or not before_ok or not after_ok:
            raise self.fail(
                f"'**' at position {i} must be a whole path segment outside braces "
                "(like '/a/**/b' or '/a/**'); use '*' to match within a segment"
            )
        self.i += 2
        return _Globstar()


def _wildcards(items: tuple[object, ...]) -> int:
    total = 0
    for item in items:
        if isinstance(item, (_Star, _Globstar)):
            total += 1
        elif isinstance(item, _Alt):
            total += sum(_wildcards(option) for option in item.options)
    return total


def _expansions(items: tuple[object, ...]) -> int:
    total = 1
    for item in items:
        if isinstance(item, _Alt):
            total *= sum(_expansions(option) for option in item.options)
            if total > MAX_EXPANSIONS:
                return total
    return total


def _emit(items: tuple[object, ...], seg: str) -> str:
    out: list[str] = []
    n = len(items)
    k = 0
    while k < n:
        item = items[k]
        nxt = items[k + 1] if k + 1 < n else None
        if isinstance(item, _Lit) and item.char == "/" and isinstance(nxt, _Globstar) and k + 2 == n:
            # Trailing '/**': the directory itself or anything below it.
            out.append(f"(?:/{seg}+)*")
            k += 2
            continue
        if isinstance(item, _Globstar):
            if isinstance(nxt, _Lit) and nxt.char == "/":
                out.append(f"(?:{seg}+/)*")
                k += 2
                continue
            # A bare '**' (only possible as the whole pattern): anything at all;
            # the caller's universe (valid names / content types) trims it.
            out.append(f"(?:{seg}|/)*")
        elif isinstance(item, _Star):
            out.append(f"{seg}*")
        elif isinstance(item, _QMark):
            out.append(seg)
        elif isinstance(item, _Lit):
            c = item.char
            out.append(c if c.isalnum() else "\\" + c)
        else:
            assert isinstance(item, _Alt)
            out.append("(?:" + "|".join(_emit(o, seg) for o in item.options) + ")")
        k += 1
    return "".join(out)


@lru_cache(maxsize=4096)
def compile_glob(pattern: str, kind: GlobKind) -> Glob:
    """Compile ``pattern``; raise :class:`GlobError` with the rule it broke."""
    if not isinstance(pattern, str):
        raise GlobError(f"glob must be a string, not {type(pattern).__name__}")
    what = "name glob" if kind == "name" else "content-type glob"
    if len(pattern) > MAX_GLOB_LENGTH:
        raise GlobError(f"{what} is {len(pattern)} characters long; the limit is {MAX_GLOB_LENGTH}")
    if kind == "content_type":
        # Content types are case-insensitive; we compare lower-cased essences.
        pattern = pattern.lower()
    if pattern == "":
        raise GlobError(f"{what} is empty")
    if kind == "name":
        if not pattern.startswith("/"):
            raise GlobError(f"{what} {pattern!r} must start with '/' (names are absolute paths)")
        if "//" in pattern:
            raise GlobError(f"{what} {pattern!r} contains '//', which no name contains")
        if pattern.endswith("/"):
            raise GlobError(f"{what} {pattern!r} ends with '/', which no name does")
    items = _Parser(pattern, kind).parse()
    count = _expansions(items)
    if count > MAX_EXPANSIONS:
        raise GlobError(
            f"{what} {pattern!r} expands to more than {MAX_EXPANSIONS} alternatives; "
            "simplify the braces"
        )
    wildcards = _wildcards(items)
    if wildcards > MAX_GLOB_WILDCARDS:
        raise GlobError(
            f"{what} {pattern!r} is too complex: it has {wildcards} '*'/'**' wildcards; "
            f"the limit is {MAX_GLOB_WILDCARDS}"
        )
    if kind == "content_type" and "/" not in pattern and pattern != "**":
        raise GlobError(
            f"{what} {pattern!r} has no '/', so it matches no content type (they are "
            "type/subtype); use '*/*', '**' or leave content_type out to match any"
        )
    seg = SEGMENT_CHAR if kind == "name" else CT_CHAR
    return Glob(pattern=pattern, kind=kind, regex=_emit(items, seg), wildcards=wildcards, expansions=count)


def name_glob(pattern: str) -> Glob:
    return compile_glob(pattern, "name")


def content_type_glob(pattern: str) -> Glob:
    return compile_glob(pattern, "content_type")
