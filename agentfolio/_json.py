"""Small facts about parsed JSON values that every layer states the same way."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dumps", "json_type", "loads", "too_deep"]

# orjson reads an integer beyond 64 bits (below -2**63 or above 2**64 - 1) as a float and
# refuses to write one.  Any such integer is a number of at least 19 digits, which starts
# a document or follows a ``:``, ``[`` or ``,`` (and whitespace): a document with no such
# run parses with orjson alone; one with it (a big integer, a long number, or by chance
# a string holding such text) is parsed again by the standard library, which keeps
# integers exact.  Digits inside strings (hex ids, hashes) mostly do not follow those
# characters, so real documents seldom pay for the second parse.  Looking for such a run
# costs a twentieth of the parse: the bytes are translated a megabyte at a time, every
# digit to "0" (so a run is a plain substring search), and what precedes each run found
# is checked by hand.  A regular expression over the whole text costs several times more.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_RUN = b"0" * 19
_CHUNK = 1 << 20
_BEFORE_NUMBER = frozenset(b":[,")
_BLANKS = frozenset(b" \t\r\n")
# Past this many runs (inside strings: ids, hashes), the pattern searched once is cheaper.
_RUNS_LOOKED_BEHIND = 64
_LONG_NUMBER = re.compile(rb"[:\[,][ \t\r\n]*-?[0-9]{19}")
_LONG_FIRST_NUMBER = re.compile(rb"[ \t\r\n]*-?[0-9]{19}")
# Python's own limit on turning digits into an int (CVE-2020-10735): a longer integer is
# refused, with a message, rather than raising that process-wide limit.
_MAX_INTEGER_DIGITS = 4300
# orjson nests 1,024 levels; the standard library recurses once per level.
_NESTING_HEADROOM = 1024 + 200


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON exactly: orjson's speed, and integers of any size kept as ints.

    Raises ``orjson.JSONDecodeError`` for malformed JSON: orjson decides what is valid
    (no NaN, no lone surrogates, at most 1,024 levels), and no number beyond a double's
    range is read except an integer of at most 4,300 digits, kept exact.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        if "infinity" not in error.msg:
            raise
        # An integer past a double's range stops orjson at once: the standard library
        # reads the document, then checks what orjson would have (see _checked_stdlib).
        return _checked_stdlib(data, error)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if not _has_long_number(raw):
        return value
    return _stdlib_loads(raw)


def _has_long_number(raw: bytes | bytearray | memoryview) -> bool:
    """Whether the JSON text may hold a number of 19 digits or more: a run of 19 digits
    that starts a value (the document, or after ``:``, ``[`` or ``,``, blanks and a minus)."""
    raw = bytes(raw) if isinstance(raw, memoryview) else raw
    runs = 0
    for chunk_start in range(0, len(raw), _CHUNK):
        # Overlapping the next chunk by a run's length: a run is found in the chunk it starts in.
        chunk = raw[chunk_start:chunk_start + _CHUNK + len(_RUN)].translate(_DIGITS_AS_ZERO)
        found = chunk.find(_RUN)
        while 0 <= found < _CHUNK:
            runs += 1
            if runs > _RUNS_LOOKED_BEHIND:
                return _LONG_FIRST_NUMBER.match(raw) is not None or _LONG_NUMBER.search(raw) is not None
            at = chunk_start + found - 1
            if at >= 0 and raw[at] == 0x2D:  # "-"
                at -= 1
            while at >= 0 and raw[at] in _BLANKS:
                at -= 1
            if at < 0 or raw[at] in _BEFORE_NUMBER:
                return True
            found = chunk.find(_RUN, found + len(_RUN))
    return False


def _stdlib_loads(raw: bytes | bytearray | memoryview, **hooks: Any) -> Any:
    text = bytes(raw) if isinstance(raw, memoryview) else raw
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        _allow_nesting()
        return json.loads(text, **hooks)


def _checked_stdlib(data: bytes | bytearray | memoryview | str, first: orjson.JSONDecodeError) -> Any:
    def refuse(message: str) -> orjson.JSONDecodeError:
        return orjson.JSONDecodeError(message, first.doc, first.pos)

    def finite(text: str) -> float:
        number = float(text)
        if math.isinf(number):
            raise refuse("number is infinity when parsed as double")
        return number

    def no_constants(name: str) -> Any:
        raise refuse(f"{name} is not JSON")

    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        value = _stdlib_loads(raw, parse_float=finite, parse_constant=no_constants)
    except orjson.JSONDecodeError:
        raise
    except json.JSONDecodeError as error:
        raise orjson.JSONDecodeError(error.msg, error.doc, error.pos) from None
    except RecursionError:
        raise refuse("recursion limit reached") from None
    except ValueError as error:  # Python's own limit on integer length
        message = (f"an integer has more than {_MAX_INTEGER_DIGITS:,} digits" if "digits" in str(error)
                   else "not UTF-8 text")
        raise refuse(message) from None
    if too_deep(value, 1024):
        raise refuse("recursion limit reached")
    if _has_lone_surrogate(value):
        raise refuse("lone surrogate in a string escape")
    return value


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is str:
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif kind is dict:
            stack.extend(node)
            stack.extend(node.values())
        elif kind is list:
            stack.extend(node)
    return False


def dumps(value: Any, *, indent: bool = False, option: int = 0,
          default: Callable[[Any], Any] | None = None) -> bytes:
    """Serialize like ``orjson.dumps`` (``default`` turns what JSON cannot hold into what it
    can); a value holding an integer beyond 64 bits, which orjson refuses, is written by the
    standard library with the integer exact."""
    try:
        return orjson.dumps(value, default=default, option=option | (orjson.OPT_INDENT_2 if indent else 0))
    except orjson.JSONEncodeError as error:
        if "64-bit" not in str(error):
            raise
    indent = indent or bool(option & orjson.OPT_INDENT_2)
    encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=2 if indent else None,
                               sort_keys=bool(option & orjson.OPT_SORT_KEYS),
                               separators=(",", ": ") if indent else (",", ":"), default=default)
    try:
        return encoder.encode(value).encode("utf-8")
    except RecursionError:
        _allow_nesting()
        return encoder.encode(value).encode("utf-8")


def _allow_nesting() -> None:
    """Let the standard library recurse as deep as orjson nests: raised only when a
    document needs it, never lowered (other threads may be deep in their own work)."""
    if sys.getrecursionlimit() < _NESTING_HEADROOM + 1000:
        sys.setrecursionlimit(_NESTING_HEADROOM + 1000)


def json_type(value: object) -> str:
    """A JSON value's type as messages say it: ``null``, ``a boolean``, ``a number``,
    ``a string``, ``an array``, ``an object``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    return "an object"


def too_deep(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` levels (the root is level 1).

    Visits containers only, and iteratively, so a wide document of thousands of
    objects costs little and a deep one cannot exhaust the stack.
    """
    if type(value) not in (dict, list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if type(node) is dict else node
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
    return False
