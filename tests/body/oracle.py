"""A deliberately naive, independent model of the proposal's definitions.

Globs are matched by expanding braces and comparing '/'-separated segments with
``fnmatch`` (no regexes of ours involved); bodies are checked against schemas by
the two rules read literally. Property tests compare the real implementation
against this.
"""

from __future__ import annotations

import itertools
import re
from fnmatch import fnmatchcase

_SEGMENT_OK = re.compile(r"[A-Za-z0-9._-]+")


def oracle_name_ok(name: str) -> bool:
    if not name.startswith("/") or name == "/":
        return False
    segments = name[1:].split("/")
    return all(_SEGMENT_OK.fullmatch(s) and s not in (".", "..") for s in segments)


def expand_braces(pattern: str) -> list[str]:
    depth = 0
    start = None
    for i, c in enumerate(pattern):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                inner = pattern[start + 1 : i]
                options, d, last = [], 0, 0
                for j, cc in enumerate(inner):
                    if cc == "{":
                        d += 1
                    elif cc == "}":
                        d -= 1
                    elif cc == "," and d == 0:
                        options.append(inner[last:j])
                        last = j + 1
                options.append(inner[last:])
                head, tail = pattern[:start], pattern[i + 1 :]
                return [x for o in options for x in expand_braces(head + o + tail)]
    return [pattern]


def _segments_match(pat: list[str], text: list[str]) -> bool:
    if not pat:
        return not text
    if pat[0] == "**":
        return any(_segments_match(pat[1:], text[k:]) for k in range(len(text) + 1))
    return bool(text) and fnmatchcase(text[0], pat[0]) and _segments_match(pat[1:], text[1:])


def oracle_glob(pattern: str, text: str) -> bool:
    return any(_segments_match(p.split("/"), text.split("/")) for p in expand_braces(pattern))


def part_matches(sp: dict, name: str | None, ct: str) -> bool:
    if sp.get("name") is None:
        if name is not None:
            return False
    elif name is None or not oracle_glob(sp["name"], name):
        return False
    return sp.get("content_type") is None or oracle_glob(sp["content_type"].lower(), ct)


def oracle_valid(schema: dict, keys: list[tuple[str | None, str]]) -> bool:
    """The definition: unique valid names, every part matches some schema part,
    every required schema part is matched by some part."""
    names = [n for n, _ in keys if n is not None]
    if len(names) != len(set(names)) or not all(oracle_name_ok(n) for n in names):
        return False
    parts = schema["parts"]
    if not all(any(part_matches(sp, n, c) for sp in parts) for n, c in keys):
        return False
    return all(
        any(part_matches(sp, n, c) for n, c in keys) for sp in parts if sp.get("required")
    )


def brute_force_counterexample(out: dict, inp: dict, names: list[str | None], cts: list[str],
                               max_parts: int) -> list[tuple[str | None, str]] | None:
    """Some body over ``names`` x ``cts`` with at most ``max_parts`` parts that ``out``
    accepts and ``inp`` rejects, or None. Uses bitmasks of the oracle's matches."""
    outs, ins = out["parts"], inp["parts"]
    keys = []
    for n in names:
        for c in cts:
            om = sum(1 << i for i, sp in enumerate(outs) if part_matches(sp, n, c))
            if om:
                im = sum(1 << i for i, sp in enumerate(ins) if part_matches(sp, n, c))
                keys.append((n, c, om, im))
    req_o = sum(1 << i for i, sp in enumerate(outs) if sp.get("required"))
    req_i = sum(1 << i for i, sp in enumerate(ins) if sp.get("required"))
    for size in range(max_parts + 1):
        for combo in itertools.combinations(keys, size):
            named = [k[0] for k in combo if k[0] is not None]
            if len(named) != len(set(named)):
                continue
            om = im = 0
            all_in = True
            for _, _, o, i in combo:
                om |= o
                im |= i
                all_in = all_in and i != 0
            if om & req_o != req_o:
                continue
            if not all_in or im & req_i != req_i:
                return [(k[0], k[1]) for k in combo]
    return None
