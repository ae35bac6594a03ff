"""Full matches whose time is linear in the text, whatever the glob.

Python's ``re`` backtracks: a glob with several wildcards becomes a regex such as
``/[seg]*a[seg]*a…`` that takes time exponential in the number of ``*`` on a name that
almost matches (a 20-star glob ran for minutes on a 60-character name). RE2 (the
``google-re2`` package) runs the same regexes with automata, in time linear in the text.

RE2 costs a few microseconds more per call through its Python binding, so a glob that
cannot make ``re`` backtrack badly — at most one unbounded wildcard (``*`` or ``**``)
and little brace branching — stays on ``re``; every other one goes to RE2.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import re2

from .errors import GlobError

Fullmatch = Callable[[str], object]
#: Memory RE2 may use for one compiled union of globs (its DFA cache lives within it).
RE2_MAX_MEM = 64 << 20
#: A glob is safe on ``re`` with at most this many unbounded wildcards...
SAFE_WILDCARDS = 1
#: ...and at most this many brace alternatives (``{a,b}{c,d}`` has 4).
SAFE_EXPANSIONS = 16


def never(_: str) -> None:
    return None


def backtracking_safe(wildcards: int, expansions: int) -> bool:
    return wildcards <= SAFE_WILDCARDS and expansions <= SAFE_EXPANSIONS


def linear_fullmatch(regex: str) -> Fullmatch:
    """A full-match function for ``regex`` run by RE2 (truthy on a match, ``None`` if not)."""
    options = re2.Options()
    options.never_capture = True
    options.max_mem = RE2_MAX_MEM
    try:
        compiled = re2.compile(regex, options)
    except re2.error as error:
        raise GlobError(f"the globs are too complex to match ({error})") from None
    raw = getattr(compiled, "_regexp", None)
    if raw is None or not hasattr(raw, "Match"):
        return compiled.fullmatch  # type: ignore[no-any-return]
    # The binding's public fullmatch builds a match object and maps offsets back to
    # characters; we only need yes or no, which the underlying RE2::Match gives directly.
    anchor = type(raw).Anchor.ANCHOR_BOTH

    def fullmatch(text: str) -> bool | None:
        data = text.encode("utf-8")
        return True if raw.Match(anchor, data, 0, len(data))[0][0] >= 0 else None

    return fullmatch


def union_fullmatch(safe: Sequence[str], unsafe: Sequence[str]) -> Fullmatch:
    """A full match of any of the regexes: ``safe`` ones on ``re``, the others on RE2."""
    fast = re.compile("|".join(f"(?:{r})" for r in safe)).fullmatch if safe else None
    slow = linear_fullmatch("|".join(f"(?:{r})" for r in unsafe)) if unsafe else None
    if fast is None:
        return slow or never
    if slow is None:
        return fast

    def either(text: str) -> object:
        return fast(text) or slow(text)

    return either
