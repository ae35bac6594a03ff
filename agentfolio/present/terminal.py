"""A conversation in the terminal, with Rich: roles styled, calls beside their results."""

from __future__ import annotations

from typing import Any, Iterable

import orjson
from rich.console import Console, Group, RenderableType
from rich.json import JSON
from rich.padding import Padding
from rich.rule import Rule
from rich.text import Text

from agentfolio.model import (
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    HostedFileContent,
    HostedVectorStoreContent,
    Message,
    OpaqueContent,
    OpaqueEntry,
    ReasoningContent,
    Session,
    TextContent,
    UnknownContent,
    UriContent,
    UsageContent,
)
from agentfolio.present.rules import (
    ROLE_STYLES,
    UNKNOWN_ROLE_STYLE,
    ToolPairs,
    entry_usage,
    format_usage,
    pair_tool_calls,
    token_totals,
)

_RESULT_PREVIEW = 2000


def render_session(session: Session, *, title: str | None = None) -> Group:
    pairs = pair_tool_calls(session)
    parts: list[RenderableType] = []
    header = Text(title or "session", style="bold")
    if session.schema_version:
        header.append(f"  durable state {session.schema_version}", style="dim")
    header.append(f"  {len(session.entries)} entries", style="dim")
    parts.append(header)
    for index, entry in enumerate(session.entries):
        parts.append(_entry_rule(index, entry))
        if isinstance(entry, OpaqueEntry):
            parts.append(_raw(f"entry of unknown kind {entry.kind!r}, kept as read", entry.to_json_value()))
            continue
        for message in entry.items:
            parts.append(_message(message, pairs))
        usage = entry_usage(entry)
        if usage is not None:
            parts.append(Padding(Text(format_usage(usage), style="dim"), (0, 0, 0, 2)))
    totals = token_totals(session)
    parts.append(Rule(style="dim"))
    parts.append(Text(f"{totals.responses} response(s) with usage · total tokens: in {totals.input:,} · "
                      f"out {totals.output:,} · total {totals.total:,}", style="bold"))
    return Group(*parts)


def print_session(session: Session, *, console: Console | None = None, title: str | None = None) -> None:
    (console or Console()).print(render_session(session, title=title))


def _entry_rule(index: int, entry: Any) -> Rule:
    label = f"#{index} {entry.kind}"
    created = getattr(entry, "created_at", None)
    if created:
        label += f" · {created}"
    correlation = getattr(entry, "correlation_id", None)
    if correlation:
        label += f" · {correlation[:12]}"
    return Rule(Text(label, style="dim"), align="left", style="dim")


def _message(message: Message, pairs: ToolPairs) -> RenderableType:
    role = message.role or "?"
    head = Text(role, style=ROLE_STYLES.get(role, UNKNOWN_ROLE_STYLE))
    if message.author_name:
        head.append(f" ({message.author_name})", style="italic")
    if message.created_at:
        head.append(f"  {message.created_at}", style="dim")
    body = [Padding(block, (0, 0, 0, 2)) for block in _contents(message.items, pairs)]
    return Group(head, *body)


def _contents(contents: Iterable[Any], pairs: ToolPairs) -> Iterable[RenderableType]:
    for content in contents:
        if isinstance(content, TextContent):
            yield Text(content.text or "")
        elif isinstance(content, ReasoningContent):
            yield Text("thinking: " + (content.text or ""), style="dim italic")
        elif isinstance(content, FunctionCallContent):
            yield _call(content, pairs.result_of(content))
        elif isinstance(content, FunctionResultContent):
            if pairs.is_paired(content):
                yield Text(f"↳ result of {content.call_id} (shown with its call)", style="dim")
            else:
                name = pairs.call_names.get(content.call_id or "", "unmatched call")
                yield Group(Text(f"← result of {name} [{content.call_id}]", style="yellow"), _value(content.result))
        elif isinstance(content, ErrorContent):
            code = f" [{content.error_code}]" if content.error_code else ""
            yield Text(f"error{code}: {content.message or ''}", style="bold red")
        elif isinstance(content, (DataContent, UriContent)):
            uri = content.uri or ""
            shown = uri if len(uri) <= 80 else uri[:77] + "…"
            yield Text(f"[{content.media_type or 'file'}] {shown}", style="blue")
        elif isinstance(content, HostedFileContent):
            yield Text(f"[hosted file] {content.file_id}", style="blue")
        elif isinstance(content, HostedVectorStoreContent):
            yield Text(f"[vector store] {content.vector_store_id}", style="blue")
        elif isinstance(content, UsageContent):
            if content.usage is not None:
                yield Text(format_usage(content.usage), style="dim")
        elif isinstance(content, UnknownContent):
            yield _raw("framework content durable state has no type for", content.content)
        elif isinstance(content, OpaqueContent):
            yield _raw(f"content of unknown kind {content.kind!r}, kept as read", content.to_json_value())
        else:
            yield _raw(f"{content.kind}", content.to_json_value())


def _call(call: FunctionCallContent, result: FunctionResultContent | None) -> RenderableType:
    head = Text("→ call ", style="bold yellow")
    head.append(call.name or "?", style="bold")
    head.append(f" [{call.call_id}]", style="dim")
    parts: list[RenderableType] = [head]
    if call.arguments not in (None, {}):
        parts.append(Padding(_value(call.arguments), (0, 0, 0, 2)))
    if result is None:
        parts.append(Padding(Text("no result recorded", style="dim red"), (0, 0, 0, 2)))
    else:
        parts.append(Padding(Group(Text("← result", style="yellow"), _value(result.result)), (0, 0, 0, 2)))
    return Group(*parts)


def _value(value: Any) -> RenderableType:
    if isinstance(value, str):
        return Text(value if len(value) <= _RESULT_PREVIEW else value[:_RESULT_PREVIEW] + "…")
    return JSON(orjson.dumps(value).decode())


def _raw(label: str, value: Any) -> RenderableType:
    return Group(Text(label, style="dim magenta"), JSON(orjson.dumps(value).decode()))
