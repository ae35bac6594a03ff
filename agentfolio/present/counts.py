"""What a history entry's JSON counts: an answer's usage, the tokens of a history and of
its outcomes, a text's first line.

Read from the JSON alone, never from the records (``agentfolio.model``), so storing or
counting a durable state does not load the model; the presentation rules
(:mod:`agentfolio.present.rules`) give these as their own, and count records through the
JSON they were read from (:func:`entry_json`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ANSWER_KINDS", "SUMMARY_CHARS", "TokenTotals", "UsageCounts", "entry_json", "entry_usage_counts",
           "history_tokens", "map_members", "one_line", "outcome_tokens", "usage_counts", "usage_total"]

#: What a folded segment's one-line summary may run to.
SUMMARY_CHARS = 120

#: Entry kinds that answer a request: their usage counts towards a session's tokens, and
#: their latency runs from the latest request before them.
ANSWER_KINDS = frozenset({"response", "errorResponse"})
#: A usage object's counts as :class:`Usage` reads them: input, output, total (None: not said).
UsageCounts = tuple[int | None, int | None, int | None]


@dataclass(slots=True)
class TokenTotals:
    input: int = 0
    output: int = 0
    total: int = 0
    responses: int = 0

    def add(self, usage: UsageCounts | None) -> None:
        if usage is None:
            return
        self.responses += 1
        self.input += usage[0] or 0
        self.output += usage[1] or 0
        self.total += usage_total(usage)


def usage_total(usage: UsageCounts) -> int:
    """A usage's total: the one it reports, else what went in and came out together."""
    if usage[2] is not None:
        return usage[2]
    return (usage[0] or 0) + (usage[1] or 0)


def usage_counts(value: Any) -> UsageCounts | None:
    """The counts of a usage object (JSON), or None when :class:`Usage` would not read it
    (not an object, or a count that is not a whole number)."""
    if not isinstance(value, dict):
        return None
    given = value.get("inputTokenCount"), value.get("outputTokenCount"), value.get("totalTokenCount")
    for count in given:
        if count is not None and type(count) is not int:
            return None
    return given


def entry_json(entry: object) -> Any:
    """The JSON of a history entry: the entry itself when it is JSON, the JSON a record was
    read from, or else the JSON it writes.  What the counts read, so an entry counts the
    same stored, appended, or held in memory."""
    if isinstance(entry, dict):
        return entry
    source = getattr(entry, "source", None)
    if source is not None:
        return source
    return entry.to_json_value() if hasattr(entry, "to_json_value") else entry


def entry_usage_counts(entry: dict[str, Any]) -> UsageCounts | None:
    """An answer's usage (its JSON): its own, or else the sum of the usage contents in its
    messages."""
    own = usage_counts(entry.get("usage"))
    if own is not None:
        return own
    found = [counts for message in _objects(entry.get("messages")) for content in _objects(message.get("contents"))
             if content.get("$type") == "usage" and (counts := usage_counts(content.get("usage"))) is not None]
    if not found:
        return None
    return (sum(counts[0] or 0 for counts in found), sum(counts[1] or 0 for counts in found),
            sum(counts[2] or 0 for counts in found))


def _objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a JSON array (nothing when it is not one)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def history_tokens(history: Sequence[Any], data: Mapping[str, Any]) -> TokenTotals:
    """Usage summed over the answers of a history (its entries' JSON), and over the
    outcomes in ``data`` (the state's data object: 2.0 ``terminalResults``) of requests
    whose answer the history does not hold."""
    totals = outcome_tokens(history, data)
    for entry in history:
        if isinstance(entry, dict) and entry.get("$type") in ANSWER_KINDS:
            totals.add(entry_usage_counts(entry))
    return totals


def outcome_tokens(history: Sequence[Any], data: Mapping[str, Any]) -> TokenTotals:
    """Usage summed over the outcomes in ``data`` of the requests ``history`` holds no
    answer to (the part of :func:`history_tokens` that is not the answers' own)."""
    totals = TokenTotals()
    maps = map_members(data, "terminalResults", "responseMailbox")
    if not maps:
        return totals
    answered = {entry.get("correlationId") for entry in history
                if isinstance(entry, dict) and entry.get("$type") in ANSWER_KINDS
                and isinstance(entry.get("correlationId"), str)}
    counted: set[str] = set()
    for key, result in maps:
        if key in counted:
            continue  # the first map naming a request holds its outcome (see outcomes)
        counted.add(key)
        response = result.get("response")
        if key not in answered and isinstance(response, dict):
            totals.add(usage_counts(response.get("usage")))
    return totals


def map_members(extra: Mapping[str, Any], *names: str) -> list[tuple[str, dict[str, Any]]]:
    """The object members of each map named, in the order named."""
    found: list[tuple[str, dict[str, Any]]] = []
    for name in names:
        value = extra.get(name)
        if isinstance(value, dict):
            found.extend((str(key), item) for key, item in value.items() if isinstance(item, dict))
    return found


def one_line(text: str | None, limit: int = SUMMARY_CHARS) -> str:
    """The first non-blank line of a text, cut to ``limit`` characters."""
    line = next((part.strip() for part in (text or "").splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
