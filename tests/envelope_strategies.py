"""Hypothesis strategies for Prompt Envelope documents, and the loss-report oracle.

``apply_losses`` turns a source document into what a round trip through a lossy format
is allowed to give back: each dropped array element removed, every other reported field
a wildcard (it may come back changed, missing, or added).  Everything not reported must
come back exactly, so a loss missing from a report fails the comparison.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

from agentfolio.formats.envelope import MAX_MS
from tests.strategies import json_values, unknown_keys, with_unknowns

text = st.text(max_size=30)
tool_names = st.sampled_from(["get_weather", "search", "book"])
flags = st.booleans()
numbers = st.one_of(st.integers(0, 10**9), st.floats(0, 1e9, allow_nan=False, allow_infinity=False))


def _optional(base: dict[str, Any], **optional: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return with_unknowns(st.fixed_dictionaries(base, optional=optional))


segments = st.one_of(
    _optional({"kind": st.just("text"), "content": text}),
    _optional({"kind": st.just("system_prompt"), "content": text, "collapsed": flags}),
    _optional({"kind": st.just("long_text"), "content": text, "charCount": numbers, "collapsed": flags}),
    _optional({"kind": st.just("static_var"), "name": text, "value": text}, description=text),
    _optional({"kind": st.just("memory"), "collapsed": flags, "items": st.lists(
        with_unknowns(st.fixed_dictionaries({"title": text, "content": text})), min_size=1, max_size=3)},
        description=text),
    _optional({"kind": st.just("skills"), "collapsed": flags, "items": st.lists(
        with_unknowns(st.fixed_dictionaries({"name": text, "description": text})), min_size=1, max_size=3)},
        description=text),
    _optional({"kind": st.just("tool_overview"), "collapsed": flags, "items": st.lists(
        with_unknowns(st.fixed_dictionaries({"name": tool_names, "description": text, "parameters": text},
                                            optional={"schema": st.dictionaries(text, json_values, max_size=2)})),
        min_size=1, max_size=3)}),
    _optional({"kind": st.just("tool_call_request"), "toolName": tool_names, "collapsed": flags,
               "arguments": st.dictionaries(text, json_values, max_size=3)}),
    _optional({"kind": st.just("tool_call_result"), "toolName": tool_names, "result": text, "success": flags,
               "collapsed": flags}),
    _optional({"kind": st.just("document"), "fileName": text, "mimeType": st.sampled_from(
        ["application/pdf", "text/plain"]), "snippet": text, "sizeBytes": numbers}, parsedContent=text),
    _optional({"kind": st.just("media"), "mediaType": st.sampled_from(["image", "audio", "video"]),
               "url": st.sampled_from(["https://example.com/a.png", "data:image/png;base64,iVBORw0KGgo=",
                                       "data:audio/wav;base64,UklGRg==", "data:,hello", "ftp://x/y.mp4"])},
              altText=text),
)
timestamps = st.one_of(st.integers(0, MAX_MS),
                       st.floats(0, MAX_MS, allow_nan=False, allow_infinity=False).filter(lambda f: f == f))
messages = with_unknowns(st.fixed_dictionaries({
    "id": st.text(min_size=1, max_size=8),
    "role": st.sampled_from(["system", "user", "assistant", "tool"]),
    "segments": st.lists(segments, min_size=1, max_size=4),
    "timestamp": timestamps,
}))
envelopes = with_unknowns(st.fixed_dictionaries(
    {"version": st.just("1.0"), "messages": st.lists(messages, min_size=1, max_size=5)},
    optional={"model": st.sampled_from(["gpt-4o", "claude-sonnet-4", "llama3"])}))


# -- The oracle ----------------------------------------------------------------------

class _Wild:
    def __repr__(self) -> str:
        return "<any>"


WILD = _Wild()


def parse_pointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    assert pointer.startswith("/"), pointer
    return [step.replace("~1", "/").replace("~0", "~") for step in pointer[1:].split("/")]


def _parent(document: Any, steps: list[str]) -> Any:
    node = document
    for step in steps[:-1]:
        if isinstance(node, list):
            node = node[int(step)]
        elif isinstance(node, dict):
            node = node[step]
        else:
            raise KeyError(step)
    return node


def points_into(document: Any, pointer: str) -> bool:
    """The pointer names a value in the document, or a key its parent object lacks."""
    steps = parse_pointer(pointer)
    if not steps:
        return True
    try:
        parent = _parent(document, steps)
    except (KeyError, IndexError, ValueError):
        return False
    if isinstance(parent, list):
        return steps[-1].isdigit() and int(steps[-1]) < len(parent)
    return isinstance(parent, dict)


def apply_losses(original: Any, losses: list[Any]) -> Any:
    expected = copy.deepcopy(original)
    removals = []
    for loss in losses:
        steps = parse_pointer(loss.pointer)
        try:
            parent = _parent(expected, steps)
        except (KeyError, IndexError, TypeError):
            continue  # inside something already a wildcard
        if parent is WILD:
            continue
        if isinstance(parent, list):
            if loss.approximated:
                parent[int(steps[-1])] = WILD
            else:
                removals.append([int(s) if s.isdigit() else s for s in steps])
        else:
            parent[steps[-1]] = WILD
    for steps in sorted(removals, key=lambda path: [(0, p) if isinstance(p, int) else (1, p) for p in path],
                        reverse=True):
        try:
            parent = _parent(expected, [str(s) for s in steps])
        except (KeyError, IndexError, TypeError):
            continue  # inside something already removed or made a wildcard
        if isinstance(parent, list) and steps[-1] < len(parent):
            del parent[steps[-1]]
    return expected


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (wildcards match anything or nothing)."""
    if expected is WILD:
        return []
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        for key in dict.fromkeys([*expected, *actual]):
            where = f"{path}/{key}"
            if key in expected and expected[key] is WILD:
                continue
            if key not in expected or key not in actual:
                found.append(where + (" missing" if key not in actual else " added"))
            else:
                found.extend(differences(expected[key], actual[key], where))
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: {len(actual)} items, expected {len(expected)}"]
        return [d for i, (e, a) in enumerate(zip(expected, actual, strict=False)) for d in differences(e, a, f"{path}/{i}")]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{path}: {actual!r} != {expected!r}"]
    return []


__all__ = ["WILD", "apply_losses", "differences", "envelopes", "messages", "points_into", "segments", "unknown_keys"]
