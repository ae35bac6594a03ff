"""Presentation rules shared by every renderer (terminal now, HTML later).

What belongs together, what is folded, what is summed: decided once here, from the
canonical model, so the terminal and the web viewer never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentfolio.model import FunctionCallContent, FunctionResultContent, ResponseEntry, Session, Usage, UsageContent

ROLE_STYLES: dict[str, str] = {
    "user": "bold cyan",
    "assistant": "bold green",
    "system": "bold magenta",
    "developer": "bold magenta",
    "tool": "bold yellow",
}
UNKNOWN_ROLE_STYLE = "bold white"


@dataclass(slots=True)
class ToolPairs:
    """Function calls matched to their results by call id, across the whole session."""

    result_for_call: dict[int, FunctionResultContent] = field(default_factory=dict)
    # Results shown beside their call: where they stand, a renderer only points back.
    paired_results: set[int] = field(default_factory=set)
    call_names: dict[str, str] = field(default_factory=dict)

    def result_of(self, call: FunctionCallContent) -> FunctionResultContent | None:
        return self.result_for_call.get(id(call))

    def is_paired(self, result: FunctionResultContent) -> bool:
        return id(result) in self.paired_results


def pair_tool_calls(session: Session) -> ToolPairs:
    """Match each call with the first later result carrying its call id."""
    pairs = ToolPairs()
    waiting: dict[str, FunctionCallContent] = {}
    for _, message in session.messages():
        for content in message.items:
            if isinstance(content, FunctionCallContent) and content.call_id is not None:
                waiting.setdefault(content.call_id, content)
                if content.name:
                    pairs.call_names[content.call_id] = content.name
            elif isinstance(content, FunctionResultContent) and content.call_id in waiting:
                call = waiting.pop(content.call_id)
                pairs.result_for_call[id(call)] = content
                pairs.paired_results.add(id(content))
    return pairs


@dataclass(slots=True)
class TokenTotals:
    input: int = 0
    output: int = 0
    total: int = 0
    responses: int = 0

    def add(self, usage: Usage | None) -> None:
        if usage is None:
            return
        self.responses += 1
        self.input += usage.input_token_count or 0
        self.output += usage.output_token_count or 0
        self.total += usage.total_token_count or 0


def entry_usage(entry: object) -> Usage | None:
    """A response's usage: its own, or else the sum of usage contents in its messages."""
    usage = getattr(entry, "usage", None)
    if usage is not None:
        return usage
    found = [c.usage for message in getattr(entry, "items", []) for c in message.items
             if isinstance(c, UsageContent) and c.usage is not None]
    if not found:
        return None
    return Usage(
        input_token_count=sum(u.input_token_count or 0 for u in found),
        output_token_count=sum(u.output_token_count or 0 for u in found),
        total_token_count=sum(u.total_token_count or 0 for u in found),
    )


def token_totals(session: Session) -> TokenTotals:
    totals = TokenTotals()
    for entry in session.entries:
        if isinstance(entry, ResponseEntry) or getattr(entry, "kind", None) == "errorResponse":
            totals.add(entry_usage(entry))
    return totals


def format_usage(usage: Usage) -> str:
    parts = []
    for label, value in (("in", usage.input_token_count), ("out", usage.output_token_count),
                         ("total", usage.total_token_count)):
        if value is not None:
            parts.append(f"{label} {value:,}")
    return "tokens: " + " · ".join(parts) if parts else "tokens: not reported"
