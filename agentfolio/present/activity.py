"""What a history did, counted: tokens, latency, tool calls, failures, who spoke.

The sessions list, the per-agent charts and a session's own summary all show these
figures; they are worked out here once, from each entry's durable-state JSON (what the
store keeps, and what every record was read from or writes), so every place agrees.
The store keeps each entry's :class:`EntryFacts` beside it when the entry is written, so
a list of sessions or a chart over many of them never reads a history again.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentfolio import model
from agentfolio._time import parse_epoch
from agentfolio.formats.durable_state import ENTRY_TYPES as ENTRY_KINDS
from agentfolio.model.analysis import call_failed, result_failed
from agentfolio.present.counts import (
    ANSWER_KINDS,
    entry_json,
    entry_usage_counts,
    one_line,
    outcome_tokens,
    usage_total,
)

if TYPE_CHECKING:
    from agentfolio.model import Session
    from agentfolio.present.rules import ToolPairs

__all__ = [
    "FIRST_TEXT_CHARS",
    "SHOW_CHOICES",
    "SHOW_LABELS",
    "Activity",
    "ActivityPoint",
    "Bucket",
    "Counts",
    "EntryFacts",
    "LatencyStats",
    "SessionFacts",
    "activity_over_time",
    "entry_facts",
    "entry_shows",
    "history_facts",
    "message_shows",
    "percentile",
    "response_latencies",
    "segment_shows",
    "session_facts",
    "tool_latencies",
    "valid_show",
]

#: How much of a session's first user message the sessions list keeps.
FIRST_TEXT_CHARS = 200


@dataclass(slots=True)
class EntryFacts:
    """One history entry, counted."""

    kind: str
    #: The entry's own time (epoch seconds), when it says one.
    at: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    #: Whether the entry reports usage at all (an answer without usage is not "0 tokens").
    has_usage: bool = False
    tool_calls: int = 0
    failed_tools: int = 0
    errors: int = 0
    #: The roles that speak in it, in order of first appearance.
    roles: tuple[str, ...] = ()
    #: The first line of its first user message's text, cut to FIRST_TEXT_CHARS.
    first_user_text: str | None = None

    @property
    def roles_text(self) -> str:
        """The roles as one comma-separated string (how the store keeps them)."""
        return ",".join(self.roles)


def entry_facts(entry: object) -> EntryFacts:
    """The facts of one entry of a session (any kind; an unknown one counts only its kind).

    Counted from the entry's durable-state JSON (a record: the JSON it was read from, or
    else writes; see ``rules.entry_json``), so an entry stored whole, appended, or held in
    memory counts the same, and storing a file never builds its records.  A kind or a
    content this release does not know counts for nothing, as the records keep it whole
    without reading it.
    """
    value = entry if type(entry) is dict else entry_json(entry)
    if not isinstance(value, dict):
        return EntryFacts(kind="?")
    # Counted into locals and built once: this runs for every entry of every file stored.
    kind = value.get("$type")
    if not isinstance(kind, str):
        kind = "?"
    at = parse_epoch(value.get("createdAt"))
    if kind not in ENTRY_KINDS:
        return EntryFacts(kind, at)
    usage = entry_usage_counts(value) if kind in ANSWER_KINDS else None
    roles: list[str] = []
    tool_calls = failed_tools = errors = 0
    first_user_text = None
    messages = value.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if not isinstance(role, str) or not role:
            role = "?"
        if role not in roles:
            roles.append(role)
        contents = message.get("contents")
        for content in contents if isinstance(contents, list) else ():
            tag = content.get("$type") if isinstance(content, dict) else None
            if tag == "functionCall":
                tool_calls += 1
            elif tag == "functionResult":
                failed_tools += result_failed(content, content.get("result"))
            elif tag == "error":
                errors += 1
            elif tag == "text" and first_user_text is None and role == "user":
                text = content.get("text")
                if isinstance(text, str) and text.strip():
                    first_user_text = one_line(text, FIRST_TEXT_CHARS).replace("\x00", "\ufffd")
    if kind == "errorResponse" and not errors:
        errors = 1  # a failed turn is one error even when it carries no error content
    input_tokens, output_tokens, total_tokens = (None, None, None) if usage is None else \
        (usage[0], usage[1], usage_total(usage))
    return EntryFacts(kind, at, input_tokens, output_tokens, total_tokens, usage is not None, tool_calls,
                      failed_tools, errors, tuple(roles), first_user_text)


def response_latencies(facts: Iterable[EntryFacts], last_request_at: float | None = None) -> list[float | None]:
    """Seconds each answer took: from the latest request before it to the answer's own time.

    ``last_request_at`` is the time of the latest request before the first entry given
    (when appending to a stored history).  Entries that are not answers, and answers
    with no time or no request before them, get None.  A clock that went backwards gives
    None too, never a negative latency.
    """
    found: list[float | None] = []
    for entry in facts:
        latency = None
        if entry.kind == "request":
            last_request_at = entry.at if entry.at is not None else last_request_at
        elif entry.kind in ANSWER_KINDS and entry.at is not None and last_request_at is not None \
                and entry.at >= last_request_at:
            latency = entry.at - last_request_at
        found.append(latency)
    return found


def tool_latencies(session: Session, pairs: ToolPairs) -> dict[int, float]:
    """Seconds from each tool call to its result, keyed by ``id(call)``, where both
    messages carry a time of their own (a call and its result in one message, or at one
    moment, say nothing about how long the tool took)."""
    call_times: dict[int, float] = {}
    found: dict[int, float] = {}
    call_of_result = {id(result): call_key for call_key, result in pairs.result_for_call.items()}
    for entry, message in session.messages():
        moment = parse_epoch(message.created_at or getattr(entry, "created_at", None))
        if moment is None:
            continue
        for content in message.items:
            if isinstance(content, model.FunctionCallContent):
                call_times[id(content)] = moment
            elif isinstance(content, model.FunctionResultContent):
                call_key = call_of_result.get(id(content))
                started = call_times.get(call_key) if call_key is not None else None
                if started is not None and call_key is not None and moment > started:
                    found[call_key] = moment - started
    return found


def percentile(values: Sequence[float], share: float) -> float | None:
    """The ``share`` (0..1) percentile of ``values`` by linear interpolation; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = share * (len(ordered) - 1)
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(slots=True)
class LatencyStats:
    count: int
    p50: float | None
    p90: float | None
    p99: float | None
    longest: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> LatencyStats:
        return cls(len(values), percentile(values, 0.5), percentile(values, 0.9), percentile(values, 0.99),
                   max(values) if values else None)


@dataclass(slots=True)
class Counts:
    """Tokens, tool calls and failures of one entry, or summed over a span of time."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    tool_calls: int = 0
    failed_tools: int = 0
    errors: int = 0

    def add(self, other: Counts) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens
        self.tool_calls += other.tool_calls
        self.failed_tools += other.failed_tools
        self.errors += other.errors


@dataclass(slots=True)
class SessionFacts(Counts):
    """A whole session, counted: what the sessions list shows of it."""

    first_user_text: str | None = None
    #: Answers that reported usage; 0 means "no usage recorded", not "0 tokens".
    usage_responses: int = 0
    latencies: list[float] = field(default_factory=list)

    def count(self, facts: EntryFacts, latency: float | None = None) -> None:
        if self.first_user_text is None:
            self.first_user_text = facts.first_user_text
        if facts.has_usage:
            self.usage_responses += 1
            self.input_tokens += facts.input_tokens or 0
            self.output_tokens += facts.output_tokens or 0
            self.total_tokens += facts.total_tokens or 0
        self.tool_calls += facts.tool_calls
        self.failed_tools += facts.failed_tools
        self.errors += facts.errors
        if latency is not None:
            self.latencies.append(latency)


def session_facts(session: Session) -> tuple[SessionFacts, list[EntryFacts], list[float | None]]:
    """The session counted, each entry's facts and each entry's latency (None where none)."""
    return history_facts([entry_json(entry) for entry in session.entries],
                         session.data.extra if session.data is not None else {})


def history_facts(history: Sequence[Any], data: Mapping[str, Any]) -> tuple[SessionFacts, list[EntryFacts],
                                                                           list[float | None]]:
    """A history (its entries' JSON) counted, each entry's facts and each entry's latency;
    ``data`` is the state's data object, whose outcomes of requests count towards tokens."""
    per_entry = [entry_facts(entry) for entry in history]
    latencies = response_latencies(per_entry)
    total = SessionFacts()
    for facts, latency in zip(per_entry, latencies, strict=True):
        total.count(facts, latency)
    # Tokens as the session's own totals count them (``rules.history_tokens``): the
    # answers' usage, just summed, and the outcomes of requests not answered in the history.
    outcomes = outcome_tokens(history, data)
    total.input_tokens += outcomes.input
    total.output_tokens += outcomes.output
    total.total_tokens += outcomes.total
    total.usage_responses += outcomes.responses
    return total, per_entry, latencies


# -- showing only part of a session ---------------------------------------------------------

#: What a session page can be narrowed to: tool calls and results, errors (failed tool
#: results included), or the messages of one role (``role:<name>``).
SHOW_CHOICES = ("tools", "errors", "role:user", "role:assistant", "role:system", "role:tool")
SHOW_LABELS = {"": "everything", "tools": "tool calls", "errors": "errors", "role:user": "user messages",
               "role:assistant": "assistant messages", "role:system": "system messages",
               "role:tool": "tool messages"}


def valid_show(show: str | None) -> str | None:
    """``show`` when it names a way to narrow a session (any ``role:<name>`` of 1-50
    characters), else None (everything)."""
    if not show:
        return None
    if show in ("tools", "errors"):
        return show
    role = show[5:] if show.startswith("role:") else ""
    return show if 0 < len(role) <= 50 and "," not in role and "\x00" not in role else None


def entry_shows(facts: EntryFacts, show: str) -> bool:
    """Whether an entry has anything to show when the page shows only ``show``."""
    if show == "tools":
        return bool(facts.tool_calls or facts.failed_tools or "tool" in facts.roles)
    if show == "errors":
        return bool(facts.errors or facts.failed_tools)
    return show.startswith("role:") and show[5:] in facts.roles


def message_shows(message: object, show: str) -> bool:
    """Whether a message is shown when the page shows only ``show``."""
    if show.startswith("role:"):
        return (getattr(message, "role", None) or "?") == show[5:]
    return any(segment_shows(content, show) for content in getattr(message, "items", ()))


def segment_shows(content: object, show: str) -> bool:
    """Whether one content of a shown message is itself shown."""
    if show == "tools":
        return isinstance(content, (model.FunctionCallContent, model.FunctionResultContent))
    if show == "errors":
        return isinstance(content, model.ErrorContent) or (isinstance(content, model.FunctionResultContent)
                                                           and call_failed(content))
    return True


# -- activity over time ---------------------------------------------------------------------

DAY = 86_400.0
#: Most buckets a chart draws: a longer span is counted by week, then by 30 days.
MAX_BUCKETS = 92


@dataclass(slots=True)
class ActivityPoint(Counts):
    """One timed entry of some session, counted (what the store keeps beside it)."""

    at: float = 0.0
    kind: str = "?"
    latency: float | None = None


@dataclass(slots=True)
class Bucket(Counts):
    """A span of time (a day, a week or 30 days) of an agent's activity."""

    start: float = 0.0
    answers: int = 0
    latency: LatencyStats = field(default_factory=lambda: LatencyStats.of([]))


@dataclass(slots=True)
class Activity:
    """Buckets of equal length from the first point's to the last point's, and their sum."""

    width: float
    buckets: list[Bucket]
    latency: LatencyStats
    points: int

    @property
    def unit(self) -> str:
        return {DAY: "day", 7 * DAY: "week"}.get(self.width, "30 days")


def activity_over_time(points: Sequence[ActivityPoint]) -> Activity:
    """Latency percentiles, tokens and failures per day (per week or per 30 days when the
    points span more than MAX_BUCKETS days), every bucket from the first to the last kept,
    empty ones too, so a chart's gaps are real."""
    if not points:
        return Activity(DAY, [], LatencyStats.of([]), 0)
    first = min(point.at for point in points)
    last = max(point.at for point in points)
    first_day = math.floor(first / DAY) * DAY
    width = next(size for size in (DAY, 7 * DAY, 30 * DAY, 365 * DAY)
                 if (last - first_day) / size < MAX_BUCKETS or size == 365 * DAY)
    count = int((last - first_day) // width) + 1
    buckets = [Bucket(start=first_day + index * width) for index in range(count)]
    latencies: list[list[float]] = [[] for _ in range(count)]
    for point in points:
        index = min(count - 1, int((point.at - first_day) // width))
        bucket = buckets[index]
        if point.kind in ANSWER_KINDS:
            bucket.answers += 1
        if point.latency is not None:
            latencies[index].append(point.latency)
        bucket.add(point)
    for bucket, values in zip(buckets, latencies, strict=True):
        bucket.latency = LatencyStats.of(values)
    return Activity(width, buckets, LatencyStats.of([value for values in latencies for value in values]), len(points))
