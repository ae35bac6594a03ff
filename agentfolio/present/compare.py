"""Two sessions or two traces side by side: their turns or spans aligned, and what changed
between aligned ones.

Turns (history entries) are aligned by what they say, the way ``diff`` aligns lines: an
entry of the same kind, with the same roles speaking and the same text, is the same turn
on both sides; between such anchors, entries are paired in order and marked changed, and
what is left over is only on one side.  What changed in a paired turn is a word diff of
its text (messages, tool calls and their results).

Spans (in tree order) are aligned the same way by where they sit and what they are: the
same depth, span type and title anchor; between anchors, spans of the same depth and type
are paired.  An anchored pair whose status, params or result differ is changed too, with
a word diff of those.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentfolio import _json
from agentfolio.model import FunctionCallContent, FunctionResultContent

__all__ = ["MAX_DIFF_WORDS", "Aligned", "TextChange", "align_spans", "align_turns", "span_text", "turn_text",
           "word_diff"]

Status = Literal["same", "changed", "left", "right"]
#: Longest text (in words) a paired turn's diff is worked out for; longer ones are only marked changed.
MAX_DIFF_WORDS = 5_000


@dataclass(frozen=True, slots=True)
class Aligned:
    """One row of the comparison: an entry of each side (None: the side has none here)."""

    left: int | None
    right: int | None
    status: Status


@dataclass(frozen=True, slots=True)
class TextChange:
    """A run of words: kept on both sides, or only on the left (removed) or right (added)."""

    op: Literal["same", "removed", "added"]
    text: str


def turn_text(entry: object) -> str:
    """What a turn says, as one text: each message's role, its texts, its tool calls with
    their arguments and its tool results."""
    parts: list[str] = []
    for message in getattr(entry, "items", ()):
        parts.append(f"[{message.role or '?'}]")
        for content in message.items:
            if isinstance(content, FunctionCallContent):
                parts.append(f"call {content.name or '?'}({_plain(content.arguments)})")
            elif isinstance(content, FunctionResultContent):
                parts.append(f"result {_plain(content.result)}")
            else:
                text = getattr(content, "text", None)
                if isinstance(text, str):
                    parts.append(text)
    return "\n".join(parts)


def _plain(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return _json.dumps(value).decode()
    except TypeError:
        return repr(value)


def _key(entry: object) -> tuple[str, str]:
    kind = getattr(entry, "kind", "?")
    return (kind if isinstance(kind, str) else "?", " ".join(turn_text(entry).split()))


def align_turns(left: Sequence[object], right: Sequence[object]) -> list[Aligned]:
    """The rows of a comparison of two histories, in order."""
    return _align([_key(entry) for entry in left], [_key(entry) for entry in right])


def span_text(span: object) -> str:
    """What a span did, as one text: its status, its params and its result."""
    return "\n".join((f"status {getattr(span, 'status', '?')}", f"params {_plain(getattr(span, 'payload', None))}",
                      f"result {_plain(getattr(span, 'result_payload', None))}"))


def align_spans(left: Sequence[object], right: Sequence[object]) -> list[Aligned]:
    """The rows of a comparison of two traces' spans (each in tree order, with ``depth``,
    ``schema_name``, ``title`` and perhaps a rendered ``summary``, ``status``, ``payload``
    and ``result_payload``), in order.  A span is known by its summary when it has one (the
    title is often its type's, the same for every span of that type)."""
    def key(span: object) -> tuple[str, str]:
        shown = getattr(span, "summary", None) or getattr(span, "title", "")
        return (f"{getattr(span, 'depth', 0)} {getattr(span, 'schema_name', '?')}", str(shown))

    rows = _align([key(span) for span in left], [key(span) for span in right])
    return [Aligned(row.left, row.right, "changed") if row.status == "same" and row.left is not None
            and row.right is not None and span_text(left[row.left]) != span_text(right[row.right]) else row
            for row in rows]


def _align(left_keys: list[tuple[str, str]], right_keys: list[tuple[str, str]]) -> list[Aligned]:
    """Items keyed (kind, text): equal keys anchor, pairs of a kind in order between."""
    rows: list[Aligned] = []
    matcher = difflib.SequenceMatcher(a=left_keys, b=right_keys, autojunk=False)
    for op, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if op == "equal":
            rows.extend(Aligned(a_start + offset, b_start + offset, "same") for offset in range(a_end - a_start))
            continue
        rows.extend(_pair_in_order(left_keys, right_keys, range(a_start, a_end), range(b_start, b_end)))
    return rows


def _pair_in_order(left_keys: list[tuple[str, str]], right_keys: list[tuple[str, str]], lefts: range,
                   rights: range) -> list[Aligned]:
    """Entries between two anchors: paired in order when of the same kind (changed), else
    one side only."""
    rows: list[Aligned] = []
    a, b = lefts.start, rights.start
    while a < lefts.stop or b < rights.stop:
        if a < lefts.stop and b < rights.stop and left_keys[a][0] == right_keys[b][0]:
            rows.append(Aligned(a, b, "changed"))
            a, b = a + 1, b + 1
        elif a < lefts.stop and (b >= rights.stop or _kind_ahead(right_keys, b, rights.stop, left_keys[a][0])):
            rows.append(Aligned(a, None, "left"))
            a += 1
        else:
            rows.append(Aligned(None, b, "right"))
            b += 1
    return rows


def _kind_ahead(keys: list[tuple[str, str]], start: int, stop: int, kind: str) -> bool:
    """Whether the other side has an entry of ``kind`` further on (so this one is extra here)."""
    return not any(keys[index][0] == kind for index in range(start, stop))


_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(before: str, after: str) -> list[TextChange] | None:
    """The words of ``before`` and ``after`` as runs kept, removed and added; None when the
    texts are too long to compare word by word (MAX_DIFF_WORDS)."""
    old, new = _WORDS.findall(before), _WORDS.findall(after)
    if len(old) > 2 * MAX_DIFF_WORDS or len(new) > 2 * MAX_DIFF_WORDS:
        return None
    changes: list[TextChange] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if op == "equal":
            changes.append(TextChange("same", "".join(old[a_start:a_end])))
            continue
        if a_end > a_start:
            changes.append(TextChange("removed", "".join(old[a_start:a_end])))
        if b_end > b_start:
            changes.append(TextChange("added", "".join(new[b_start:b_end])))
    return changes
